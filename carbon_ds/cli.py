"""The `carbon-ds` command line."""

from __future__ import annotations

import argparse
import sys

from carbon_ds.errors import CarbonError


def _inspect(args: argparse.Namespace) -> int:
    from carbon_ds.inspect import describe

    for path in args.files:
        for line in describe(path, pages=not args.no_pages):
            print(line)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="carbon-ds", description="Apache CarbonData tables without a JVM.")
    sub = p.add_subparsers(dest="command", required=True)
    ins = sub.add_parser("inspect", help="print header, schema, blocklets, pages, encodings and min/max of files")
    ins.add_argument("files", nargs="+", help=".carbondata, .carbonindex or .carbonindexmerge files")
    ins.add_argument("--no-pages", action="store_true", help="omit the per-page lines")
    ins.set_defaults(func=_inspect)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except CarbonError as e:
        print(f"carbon-ds: error: {e}", file=sys.stderr)
        return 2
    except FileNotFoundError as e:
        print(f"carbon-ds: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
