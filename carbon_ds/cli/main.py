"""The `carbon-ds` command line."""

from __future__ import annotations

import argparse
import sys

from carbon_ds import __version__
from carbon_ds.cli.inspect_files import describe
from carbon_ds.cli.segment_commands import add_commands
from carbon_ds.errors import CarbonError, CarbonOptionError
from carbon_ds.fs import resolve
from carbon_ds.table.read.planned_reads import explain, format_explain


def _inspect(args: argparse.Namespace) -> int:
    for path in args.files:
        for line in describe(path, pages=not args.no_pages):
            print(line)
    return 0


def _explain(args: argparse.Namespace) -> int:
    import json

    report = explain(args.path, args.filter, args.segments)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for line in format_explain(report):
            print(line)
    return 0


def _configure_storage(args: argparse.Namespace) -> None:
    """Hand ``--storage-option`` settings to the file-system layer for every path argument on a store."""
    if not args.storage_option:
        return
    options = {}
    for item in args.storage_option:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CarbonOptionError(f"--storage-option expects KEY=VALUE, found {item!r}")
        options[key.strip()] = value
    paths = [getattr(args, name, None) for name in ("table", "path")] + list(getattr(args, "files", None) or [])
    stores = [p for p in paths if isinstance(p, str) and "://" in p and not p.startswith("file://")]
    if not stores:
        raise CarbonOptionError("--storage-option given, but no path is on a store (s3://, hdfs://, ...)")
    for path in stores:
        resolve(path, options)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="carbon-ds", description="Apache CarbonData tables without a JVM.")
    p.add_argument("--version", action="version", version=f"carbon-ds {__version__}")
    p.add_argument("--storage-option", action="append", metavar="K=V", default=[],
                   help="a setting of the store the paths are on (repeatable): S3 access_key, secret_key, region, "
                        "endpoint_url, allow_http; HDFS host, port, user")
    sub = p.add_subparsers(dest="command", required=True)
    ins = sub.add_parser("inspect", help="print a table's schema, segments and files, or a file's header, schema, "
                                         "blocklets, pages, encodings and min/max")
    ins.add_argument("files", nargs="+", help="table folders, or .carbondata, .carbonindex or .carbonindexmerge files")
    ins.add_argument("--no-pages", action="store_true", help="omit the per-page lines")
    ins.set_defaults(func=_inspect)
    exp = sub.add_parser("explain", help="segments, files, blocklets and pages a filtered read reads and skips")
    exp.add_argument("path", help="a table folder or a folder of .carbondata files")
    exp.add_argument("--filter", default=None, help="SQL predicate, e.g. \"vin = 'X' AND ts >= '2021-11-20'\"")
    exp.add_argument("--segments", default=None, help="comma-separated segment ids (default: all readable)")
    exp.add_argument("--json", action="store_true", help="print the report as JSON")
    exp.set_defaults(func=_explain)
    add_commands(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        _configure_storage(args)
        return args.func(args)
    except CarbonError as e:
        print(f"carbon-ds: error: {e}", file=sys.stderr)
        return 2
    except FileNotFoundError as e:
        print(f"carbon-ds: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
