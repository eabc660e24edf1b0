"""What the partitioned insert protocol leaves behind that nothing will ever read (CLEAN FILES sweeps it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from carbon_ds.fs import Storage, basename, is_inside, norm_path
from carbon_ds.table.meta.files import segment_file as segfiles
from carbon_ds.table.meta.files.naming import DATA_EXT, INDEX_EXT, LOAD_EXTS, owned_by_index
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.tablestatus import LoadDetail
from carbon_ds.table.partitions.hive_load import stale_tmp_dirs

_LIVE = (ts.IN_PROGRESS, ts.OVERWRITE_IN_PROGRESS)


def partition_dirs(table: TableHandle) -> list[str]:
    """Every ``col=value`` folder under the table, at any depth (``.tmp`` folders excluded)."""
    out, stack = [], [table.path]
    while stack:
        d = stack.pop()
        for sub in table.storage.list_dirs(d):
            name = basename(sub)
            if "=" in name and not name.endswith(".tmp"):
                out.append(sub)
                stack.append(sub)
    return out


def external_folders(table: TableHandle, entries: list[LoadDetail]) -> list[str]:
    """Absolute folders of ADD SEGMENT / ADD PARTITION LOCATION segments (whatever their status): their
    content is the user's, never ours to move, even where it lies inside the table folder."""
    out = []
    for e in entries:
        if e.path:
            out.extend(Storage.for_path(p.strip())[1] for p in e.path.split(",") if p.strip())
        if e.segment_file:
            try:
                seg = segfiles.read(table.storage, table.path, e.segment_file)
            except (OSError, ValueError):
                continue
            out.extend(folder for folder, d in seg.folders(table.path) if not d.is_relative)
    return out


@dataclass
class Leftovers:
    files: list[str] = field(default_factory=list)  # data/index files no live segment names
    tmp_dirs: list[str] = field(default_factory=list)  # <ts>.tmp folders of loads that are not In Progress
    folders: list[str] = field(default_factory=list)  # partition folders only dead segments list


def leftovers(table: TableHandle, entries: list[LoadDetail]) -> Leftovers | None:
    """What the insert protocol left in the partition folders that nothing will ever read (the caller
    holds the tablestatus lock, so no load can reserve or commit meanwhile):

    - ``<ts>.tmp`` folders whose load start is no In Progress load's (crashed, aborted, failed loads);
    - ``.carbondata``/``.carbonindex`` files that no readable segment's live folder names (or owns by
      index name) and that carry no In Progress load's ``-<segment>-<loadStart>.`` marker: files of
      Failure or never-committed loads, of failed task attempts, and of folders marked deleted by an
      overwrite or DROP PARTITION.
    Files of external folders are never listed. Returns None (sweep nothing) when a readable segment's
    file set cannot be told exactly (a segment file is unreadable, or a 1.x entry has none)."""
    storage = table.storage
    out = Leftovers()
    live_starts = {e.load_start_time for e in entries if e.status in _LIVE and e.load_start_time}
    # Any status that is neither readable nor already cleaned (Streaming, a status we do not know) is
    # treated like a running load: its files stay.
    protected = [f"-{e.name}-{e.load_start_time}." for e in entries
                 if e.status not in ts.READABLE and e.status not in (ts.MARKED_FOR_DELETE, ts.COMPACTED, ts.FAILURE)
                 and e.load_start_time]
    external = external_folders(table, entries)
    referenced: set[str] = set()
    live_folders: set[str] = set()
    for e in entries:
        if e.status not in ts.READABLE:
            continue
        if not e.segment_file:
            if e.path:
                continue  # external: its folder is protected as a whole
            return None
        try:
            seg = segfiles.read(table.storage, table.path, e.segment_file)
        except (OSError, ValueError):
            return None
        for folder, d in seg.folders(table.path):
            if not d.is_relative or d.status not in ("Success", "Marked for Update"):
                continue
            live_folders.add(norm_path(folder))
            names = set(d.files) | ({d.merge_file_name} if d.merge_file_name else set())
            idx = [x for x in d.files if x.endswith(INDEX_EXT)]
            for f in storage.list(folder):
                base = basename(f.path)
                if base in names or (base.endswith(DATA_EXT) and any(owned_by_index(base, i) for i in idx)):
                    referenced.add(norm_path(f.path))
    for d in stale_tmp_dirs(table):
        if norm_path(d).rsplit("/", 1)[-1][: -len(".tmp")] in live_starts:
            continue
        if any(is_inside(d, x) for x in external):
            continue
        out.tmp_dirs.append(d)
    touched: set[str] = set()
    for folder in partition_dirs(table):
        if any(is_inside(folder, x) for x in external):
            continue
        for f in storage.list(folder):
            base = basename(f.path)
            if not base.endswith(LOAD_EXTS) or norm_path(f.path) in referenced:
                continue
            if any(m in base for m in protected):
                continue
            out.files.append(f.path)
            touched.add(norm_path(folder))
    # A folder that only dead segments list (overwritten or dropped) goes once emptied, as Hive's drop does.
    out.folders = sorted(f for f in touched if f not in live_folders)
    return out
