"""`carbon-ds` subcommands for segment management: show-segments, delete-segment, clean-files, add-segment,
unlock."""

from __future__ import annotations

import argparse

from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.fs import Storage
from carbon_ds.table.loads.protocol import end_dead_loads
from carbon_ds.table.meta.handle import TableHandle, not_a_table
from carbon_ds.table.meta.locks import remove_locks
from carbon_ds.table.table import CarbonTable


def _open(path: str, command: str) -> CarbonTable:
    storage, fs_path = Storage.for_path(path)
    if not TableHandle.exists(path):
        text, bare = not_a_table(storage, fs_path)
        raise CarbonTableError(f"{command}: {text}" + (
            f"; {command} needs a table, while 'carbon-ds inspect' and 'carbon-ds explain' read such a "
            "folder as it is" if bare else ""))
    return CarbonTable.open(path)


def _show(args: argparse.Namespace) -> int:
    print(_open(args.table, args.command).show_segments(limit=args.limit))
    return 0


def _delete(args: argparse.Namespace) -> int:
    table = _open(args.table, args.command)
    if args.ids is not None:
        ids = table.delete_segments([s for s in args.ids.split(",") if s.strip()])
    else:
        ids = table.delete_segments_before(args.before)
    print(f"marked for delete: {', '.join(ids)} (run clean-files to remove their files)")
    return 0


def _unlock(args: argparse.Namespace) -> int:
    table = _open(args.table, args.command)
    # loads first: a dead Spark overwrite's update lock names the same driver, and goes with the locks below
    failed = end_dead_loads(table, force=args.force)
    for line in failed:
        print(f"segment {line}: marked Failure, its files removed")
    removed = remove_locks(table.storage, table.path, force=args.force)
    for line in removed:
        print(f"removed {line}")
    if not removed and not failed:
        print("no lock or load of a crashed writer found" + ("" if args.force else
              " (a writer on another host cannot be judged from here: --force removes every lock and ends "
              "every load that cannot be checked)"))
    return 0


def _clean(args: argparse.Namespace) -> int:
    result = _open(args.table, args.command).clean_files(force=args.force, retention_days=args.retention_days)
    rows = result.rows()
    for what, action in rows:
        print(f"{what}: {action}")
    if result.trash_folder:
        print(f"trash: {result.trash_folder}")
    if not rows:
        print("nothing to clean")
    return 0


def _compact(args: argparse.Namespace) -> int:
    merged = _open(args.table, args.command).compact(args.kind, args.segments)
    for m in merged:
        print(f"{m.segment}: merged segments {', '.join(m.sources)} ({m.rows:,} rows)")
    if not merged:
        print("nothing to compact")
    return 0


def _add(args: argparse.Namespace) -> int:
    table = _open(args.table, args.command)
    add = getattr(table, "add_segment", None)
    if add is None:
        raise CarbonTableError("ADD SEGMENT is not available yet")
    options = {}
    for item in args.option or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CarbonOptionError(f"--option expects KEY=VALUE, found {item!r}")
        options[key.strip().lower()] = value
    added = add(args.path, format=args.format, partition=args.partition, options=options, dry_run=args.dry_run)
    if args.dry_run:
        print(added)  # the validation report: per segment and file, ok or why not
        return 0 if added.ok else 1
    else:
        ids = [added] if isinstance(added, str) else list(added or [])
        print(f"added segment(s): {', '.join(map(str, ids))}")
    return 0


def add_commands(sub) -> None:
    """Add the segment subcommands to the `carbon-ds` argument parser's subparsers."""
    show = sub.add_parser("show-segments", help="list a table's segments, newest first (like SHOW SEGMENTS)")
    show.add_argument("table", help="table folder or URI")
    show.add_argument("--limit", type=int, default=None, help="show only the N newest segments")
    show.set_defaults(func=_show)

    delete = sub.add_parser("delete-segment", help="mark segments 'Marked for Delete' by id or start time")
    delete.add_argument("table", help="table folder or URI")
    which = delete.add_mutually_exclusive_group(required=True)
    which.add_argument("--ids", help="comma-separated segment ids, e.g. 0,1")
    which.add_argument("--before", help="'yyyy-MM-dd HH:mm:ss' (local time): segments whose load started before")
    delete.set_defaults(func=_delete)

    clean = sub.add_parser("clean-files", help="move files of deleted/compacted segments to .Trash; expire old trash")
    clean.add_argument("table", help="table folder or URI")
    clean.add_argument("--force", action="store_true", help="delete at once and empty the trash (not recoverable)")
    clean.add_argument("--retention-days", type=float, default=None, help="trash retention in days (default 7)")
    clean.set_defaults(func=_clean)
    comp = sub.add_parser("compact", help="merge segments into one re-sorted segment (ALTER TABLE ... COMPACT)")
    comp.add_argument("table", help="the table folder")
    comp.add_argument("--kind", default="minor", choices=["minor", "major", "custom"],
                      help="minor: by count levels; major: by size; custom: the --segments given")
    comp.add_argument("--segments", default=None, help="comma-separated segment ids (with --kind custom)")
    comp.set_defaults(func=_compact)
    unlock = sub.add_parser("unlock", help="remove lock files left by crashed writers and end their loads "
                                           "(In Progress segments become Failure, their files removed)")
    unlock.add_argument("table", help="table folder or URI")
    unlock.add_argument("--force", action="store_true",
                        help="remove every lock file and end every load whose writer cannot be checked from "
                             "here, even one a live writer on another host may hold")
    unlock.set_defaults(func=_unlock)

    add = sub.add_parser("add-segment", help="register an existing folder of files as a new segment")
    add.add_argument("table", help="table folder or URI")
    add.add_argument("--path", required=True, help="folder holding the data files")
    add.add_argument("--format", default="carbondata", help="carbondata, parquet, orc, csv or json")
    add.add_argument("--partition", default=None, help="partition columns of a partitioned table, 'a:int, b:string'")
    add.add_argument("--option", action="append", help="extra segment option KEY=VALUE (repeatable)")
    add.add_argument("--dry-run", action="store_true", help="check the files against the table; change nothing")
    add.set_defaults(func=_add)
