"""The write protocol of a partitioned table (the seed design, CarbonData's partition load).

1. ``reserve`` (commit.py): segment N "In Progress", as for any load.
2. ``write_task``: each task splits its rows by partition values (one ``group_by``) and writes one
   CarbonWriter per partition folder into ``<table>/<k=v>/.../<loadStart>.tmp/``; when a writer closes,
   its data files are moved up into the partition folder (their final place), its ``.carbonindex`` stays
   in the ``.tmp`` folder. Data files no committed index names are never read, so they are invisible.
3. ``commit``: (a) write ``Metadata/segments/N_<ts>.segment`` with one relative locationMap entry per
   partition folder (``partitions: ["day=1", "hour=2"]``, ``files``: this load's index files); (b) move
   the index files out of ``.tmp`` into their partition folders and drop empty ``.tmp`` folders; (c) under
   the tablestatus lock flip N to "Success" (an overwrite also rewrites the other segments' segment files
   with the replaced folders "Marked for Delete", or marks whole segments) in ONE atomic tablestatus
   replace: the commit point.
A crash before (c) leaves N "In Progress": readers use only readable segments' segment files, so no file
of N is read; ``abort`` / CLEAN FILES remove N's files by their names (they carry N and the load time).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa

from carbon_ds.fs import Storage
from carbon_ds.table import partitions as P
from carbon_ds.table import segments as segfiles
from carbon_ds.table import tablestatus as ts
from carbon_ds.table.commit import Reservation, TaskResult, mark_success, sort_for_load, writer_options
from carbon_ds.table.options import LoadOptions
from carbon_ds.table.planning import conform
from carbon_ds.table.table import CarbonTable
from carbon_ds.table.tablestatus import LoadDetail

# Test hook: called with a step name at each protocol step ("segment_file", "index_moved", ...).
_STEP_HOOK = None


def _step(name: str) -> None:
    if _STEP_HOOK is not None:
        _STEP_HOOK(name)


def tmp_name(load_start_ms: int) -> str:
    return f"{load_start_ms}.tmp"


def write_task(table: CarbonTable, reservation: Reservation, task_no: int,
               batches: Iterable[pa.RecordBatch | pa.Table], load: LoadOptions) -> TaskResult:
    from carbon_ds.writers.carbondata import CarbonWriter

    schema = table.schema
    pcols = table.partition_columns
    options = writer_options(table, load)
    spec = dict(reservation.partition_spec)
    tmp = tmp_name(reservation.load_start_ms)
    writers: dict[str, CarbonWriter] = {}
    gathered: dict[str, list[pa.Table]] = {}
    moved: list[str] = []
    result = TaskResult(reservation.segment_id, task_no)

    def writer_for(comps: list[str]) -> CarbonWriter:
        rel = "/".join(comps)
        w = writers.get(rel)
        if w is None:
            w = writers[rel] = CarbonWriter(
                P.table_folder(table.path, comps + [tmp]), schema, options, task_no=task_no,
                segment_no=reservation.segment_id, timestamp=reservation.load_start_ms,
                storage=table.storage, columns=table.columns)
        return w

    try:
        for b in batches:
            t = pa.Table.from_batches([b]) if isinstance(b, pa.RecordBatch) else b
            if spec:
                t = P.add_static_columns(t, spec, schema)
            t = conform(t, schema)
            for comps, rows in P.split(t, pcols, schema):
                if options.is_sort:
                    gathered.setdefault("/".join(comps), []).append(rows)
                else:
                    writer_for(comps).write(rows)
        for rel, parts in gathered.items():
            writer_for(rel.split("/")).write(sort_for_load(pa.concat_tables(parts).combine_chunks(),
                                                           options.sort_columns))
        for rel, w in sorted(writers.items()):
            written = w.close()
            final = P.table_folder(table.path, rel.split("/"))
            for f in written:
                dst = Storage.join(final, f.file_name)
                table.storage.move(f.path, dst)
                moved.append(dst)
                result.data_files.append((f"{rel}/{f.file_name}", int(f.file_size), int(f.num_rows)))
            if written and w.index_path:
                name = w.index_path.replace("\\", "/").rsplit("/", 1)[-1]
                result.index_files.append((f"{rel}/{name}", table.storage.size(w.index_path)))
    except BaseException:
        for w in writers.values():
            w.abort()
        for path in moved:
            table.storage.delete(path)
        raise
    return result


def commit(table: CarbonTable, reservation: Reservation, results: list[TaskResult], on_commit=None) -> LoadDetail:
    storage = table.storage
    seg = reservation.segment_id
    tmp = tmp_name(reservation.load_start_ms)
    by_folder: dict[str, list[str]] = {}
    for r in results:
        for rel, _size in r.index_files:
            folder, name = rel.rsplit("/", 1)
            by_folder.setdefault(folder, []).append(name)
    end = ts.now_ms()
    seg_name = segfiles.segment_file_name(seg, end)
    segment = segfiles.SegmentFile({
        "/" + folder: segfiles.FolderDetails(files=sorted(names), partitions=folder.split("/"))
        for folder, names in sorted(by_folder.items())
    })
    segfiles.write(storage, table.path, seg_name, segment)
    _step("segment_file")
    for folder, names in sorted(by_folder.items()):
        final = P.table_folder(table.path, folder.split("/"))
        for name in names:
            storage.move(Storage.join(final, tmp, name), Storage.join(final, name))
            _step("index_moved")
        if not storage.list(Storage.join(final, tmp), recursive=True):
            storage.delete_dir(Storage.join(final, tmp))
    _step("before_status")
    data_size = sum(s for r in results for _n, s, _r in r.data_files)
    index_size = sum(s for r in results for _n, s in r.index_files)
    with table.lock():
        entries = table.load_details()
        entry = mark_success(table, entries, reservation, end, seg_name, data_size, index_size)
        if reservation.overwrite:
            spec = dict(reservation.partition_spec)
            written = set(by_folder)
            if spec:
                def replaced(parts: list[str]) -> bool:
                    return P.spec_matches(parts, spec)
            elif reservation.dynamic:
                def replaced(parts: list[str]) -> bool:
                    return "/".join(parts) in written
            else:
                def replaced(parts: list[str]) -> bool:
                    return True
            for other in entries:
                if other is not entry and other.status in ts.READABLE:
                    drop_folders(table, other, replaced, end)
        if on_commit is not None:  # see commit.commit
            on_commit(entries)
        ts.write(storage, table.tablestatus_path, entries)
    _step("committed")
    return entry


def drop_folders(table: CarbonTable, detail: LoadDetail, replaced, now: int) -> bool:
    """Mark the folders of ``detail`` for which ``replaced(partitions)`` holds "Marked for Delete".

    Writes a NEW segment file for the segment (the old one stays until CLEAN FILES) and points ``detail``
    at it; a segment left with no live folder becomes "Marked for Delete". The caller holds the lock and
    writes tablestatus: until then nothing refers to the new segment file. True when ``detail`` changed.
    """
    if not detail.segment_file:
        if replaced([]):
            detail.status = ts.MARKED_FOR_DELETE
            detail.modification_time = str(now)
            return True
        return False
    seg = segfiles.read(table.storage, table.path, detail.segment_file)
    changed = False
    for d in seg.location_map.values():
        if d.status in ("Success", "Marked for Update") and replaced(list(d.partitions)):
            d.status = ts.MARKED_FOR_DELETE
            changed = True
    if not changed:
        return False
    detail.modification_time = str(now)
    if not any(d.status in ("Success", "Marked for Update") for d in seg.location_map.values()):
        detail.status = ts.MARKED_FOR_DELETE
        return True
    old_ts = detail.segment_file.rsplit("_", 1)[-1].split(".")[0]
    stamp = max(now, int(old_ts) + 1 if old_ts.isdigit() else now)
    name = segfiles.segment_file_name(detail.name, stamp)
    segfiles.write(table.storage, table.path, name, seg)
    detail.segment_file = name
    return True


def remove_load_files(table: CarbonTable, segment_id: str, load_start_ms: int) -> None:
    """Delete every file of one load in the partition folders (found by the segment id and load time in
    CarbonData's file names) and its empty ``.tmp`` folders."""
    storage = table.storage
    marker = f"-{segment_id}-{load_start_ms}."
    tmp = tmp_name(load_start_ms)
    tmp_dirs = set()
    for folder in storage.list_dirs(table.path):
        base = folder.replace("\\", "/").rsplit("/", 1)[-1]
        if "=" not in base:
            continue  # Metadata, Fact, LockFiles, .Trash: not partition folders
        for f in storage.list(folder, recursive=True):
            name = f.path.replace("\\", "/").rsplit("/", 1)[-1]
            parent = f.path.replace("\\", "/").rsplit("/", 2)[-2]
            if parent == tmp:
                tmp_dirs.add(f.path.replace("\\", "/").rsplit("/", 1)[0])
            if marker in name and name.endswith((".carbondata", ".carbonindex")):
                storage.delete(f.path)
    tmp_dirs.update(d for d in stale_tmp_dirs(table) if d.replace("\\", "/").rsplit("/", 1)[-1] == tmp)
    for d in tmp_dirs:
        if not storage.list(d, recursive=True):
            storage.delete_dir(d)


def stale_tmp_dirs(table: CarbonTable) -> list[str]:
    """``<ts>.tmp`` folders under partition folders (leftovers of loads that never committed)."""
    out = []
    storage = table.storage
    for folder in storage.list_dirs(table.path):
        base = folder.replace("\\", "/").rsplit("/", 1)[-1]
        if "=" not in base:
            continue
        stack = [folder]
        while stack:
            d = stack.pop()
            for sub in storage.list_dirs(d):
                name = sub.replace("\\", "/").rsplit("/", 1)[-1]
                if name.endswith(".tmp"):
                    out.append(sub)
                elif "=" in name:
                    stack.append(sub)
    return out


# ------------------------------------------------------------------------------------------ CLEAN FILES
_LOAD_EXTS = (".carbondata", ".carbonindex", ".carbonindexmerge")
_LIVE = (ts.IN_PROGRESS, ts.OVERWRITE_IN_PROGRESS)


def _n(path: str) -> str:
    return path.replace("\\", "/").rstrip("/")


def _inside(path: str, folder: str) -> bool:
    p, f = _n(path), _n(folder)
    return p == f or p.startswith(f + "/")


def partition_dirs(table: CarbonTable) -> list[str]:
    """Every ``col=value`` folder under the table, at any depth (``.tmp`` folders excluded)."""
    out, stack = [], [table.path]
    while stack:
        d = stack.pop()
        for sub in table.storage.list_dirs(d):
            name = _n(sub).rsplit("/", 1)[-1]
            if "=" in name and not name.endswith(".tmp"):
                out.append(sub)
                stack.append(sub)
    return out


def external_folders(table: CarbonTable, entries: list[LoadDetail]) -> list[str]:
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


def leftovers(table: CarbonTable, entries: list[LoadDetail]) -> Leftovers | None:
    """What the insert protocol left in the partition folders that nothing will ever read (the caller
    holds the tablestatus lock, so no load can reserve or commit meanwhile):

    - ``<ts>.tmp`` folders whose load start is no In Progress load's (crashed, aborted, failed loads);
    - ``.carbondata``/``.carbonindex`` files that no readable segment's live folder names (or owns by
      index name) and that carry no In Progress load's ``-<segment>-<loadStart>.`` marker: files of
      Failure or never-committed loads, of failed task attempts, and of folders marked deleted by an
      overwrite or DROP PARTITION.
    Files of external folders are never listed. Returns None (sweep nothing) when a readable segment's
    file set cannot be told exactly (a segment file is unreadable, or a 1.x entry has none)."""
    from carbon_ds.table.planning import _owned_by_index

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
            live_folders.add(_n(folder))
            names = set(d.files) | ({d.merge_file_name} if d.merge_file_name else set())
            idx = [x for x in d.files if x.endswith(".carbonindex")]
            for f in storage.list(folder):
                base = _n(f.path).rsplit("/", 1)[-1]
                if base in names or (base.endswith(".carbondata") and any(_owned_by_index(base, i) for i in idx)):
                    referenced.add(_n(f.path))
    for d in stale_tmp_dirs(table):
        if _n(d).rsplit("/", 1)[-1][: -len(".tmp")] in live_starts:
            continue
        if any(_inside(d, x) for x in external):
            continue
        out.tmp_dirs.append(d)
    touched: set[str] = set()
    for folder in partition_dirs(table):
        if any(_inside(folder, x) for x in external):
            continue
        for f in storage.list(folder):
            base = _n(f.path).rsplit("/", 1)[-1]
            if not base.endswith(_LOAD_EXTS) or _n(f.path) in referenced:
                continue
            if any(m in base for m in protected):
                continue
            out.files.append(f.path)
            touched.add(_n(folder))
    # A folder that only dead segments list (overwritten or dropped) goes once emptied, as Hive's drop does.
    out.folders = sorted(f for f in touched if f not in live_folders)
    return out
