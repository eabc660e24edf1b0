"""The load of a partitioned table (CarbonData's partition load), and splitting rows by partition values.

1. ``reserve`` (carbon_ds.table.loads.load_base): segment N "In Progress", as for any load.
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

import pyarrow as pa

from carbon_ds import faults
from carbon_ds.format.hive import component, spec_matches, table_folder, typed_value, value_text
from carbon_ds.fs import Storage, basename, dirname
from carbon_ds.table.loads.load_base import Load, TaskResult, mark_success, sort_for_load, writer_options
from carbon_ds.table.meta.files import segment_file as segfiles
from carbon_ds.table.meta.files.naming import DATA_EXT, INDEX_EXT
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.schema.conform import conform
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.tablestatus import LoadDetail
from carbon_ds.writers.carbon_file_writer import CarbonWriter


def tmp_name(load_start_ms: int) -> str:
    return f"{load_start_ms}.tmp"


class PartitionedLoad(Load):
    """A load into a Hive-partitioned table: files land in their partition folders."""

    def write_task(self, task_no: int, batches: Iterable[pa.RecordBatch | pa.Table]) -> TaskResult:
        return write_partitioned_task(self.table, self, task_no, batches)

    def _commit(self, results: list[TaskResult]) -> LoadDetail:
        return commit_partitioned(self.table, self, results)

    def _remove_files(self) -> None:
        table, reservation = self.table, self.reservation
        table.storage.delete_dir(segfiles.segment_dir(table.path, reservation.segment_id))
        remove_load_files(table, reservation.segment_id, reservation.load_start_ms)


def write_partitioned_task(table: TableHandle, load: Load, task_no: int,
                           batches: Iterable[pa.RecordBatch | pa.Table]) -> TaskResult:
    reservation = load.reservation
    schema = table.schema
    pcols = table.partition_columns
    options = writer_options(table, load.options)
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
                table_folder(table.path, comps + [tmp]), schema, options, task_no=task_no,
                segment_no=reservation.segment_id, timestamp=reservation.load_start_ms,
                storage=table.storage, columns=table.columns)
        return w

    try:
        for b in batches:
            t = pa.Table.from_batches([b]) if isinstance(b, pa.RecordBatch) else b
            if spec:
                t = add_static_columns(t, spec, schema)
            t = conform(t, schema)
            for comps, rows in split(t, pcols, schema):
                if options.is_sort and not load.presorted:
                    gathered.setdefault("/".join(comps), []).append(rows)
                else:
                    writer_for(comps).write(rows)
                faults.point("load.partition_rows")
        for rel, parts in gathered.items():
            writer_for(rel.split("/")).write(sort_for_load(pa.concat_tables(parts).combine_chunks(),
                                                           options.sort_columns))
        for rel, w in sorted(writers.items()):
            written = w.close()
            final = table_folder(table.path, rel.split("/"))
            for f in written:
                dst = Storage.join(final, f.file_name)
                table.storage.move(f.path, dst)
                moved.append(dst)
                result.data_files.append((f"{rel}/{f.file_name}", int(f.file_size), int(f.num_rows)))
            if written and w.index_path:
                name = basename(w.index_path)
                result.index_files.append((f"{rel}/{name}", table.storage.size(w.index_path)))
    except BaseException:
        for w in writers.values():
            w.abort()
        for path in moved:
            table.storage.delete(path)
        raise
    return result


def commit_partitioned(table: TableHandle, load: Load, results: list[TaskResult]) -> LoadDetail:
    reservation = load.reservation
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
    faults.point("load.segment_file")
    for folder, names in sorted(by_folder.items()):
        final = table_folder(table.path, folder.split("/"))
        for name in names:
            storage.move(Storage.join(final, tmp, name), Storage.join(final, name))
            faults.point("load.index_moved")
        if not storage.list(Storage.join(final, tmp), recursive=True):
            storage.delete_dir(Storage.join(final, tmp))
    faults.point("load.before_status")
    data_size = sum(s for r in results for _n, s, _r in r.data_files)
    index_size = sum(s for r in results for _n, s in r.index_files)
    with table.edit_status("LOAD (commit)") as edit:
        entries = edit.entries
        entry = mark_success(table, entries, reservation, end, seg_name, data_size, index_size)
        if reservation.overwrite:
            spec = dict(reservation.partition_spec)
            written = set(by_folder)
            if spec:
                def replaced(parts: list[str]) -> bool:
                    return spec_matches(parts, spec)
            elif reservation.dynamic:
                def replaced(parts: list[str]) -> bool:
                    return "/".join(parts) in written
            else:
                def replaced(parts: list[str]) -> bool:
                    return True
            for other in entries:
                if other is not entry and other.status in ts.READABLE:
                    drop_folders(table, other, replaced, end)
        load.apply_staged(entries)
    faults.point("load.committed")
    return entry


def drop_folders(table: TableHandle, detail: LoadDetail, replaced, now: int) -> bool:
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


def remove_load_files(table: TableHandle, segment_id: str, load_start_ms: int) -> None:
    """Delete every file of one load in the partition folders (found by the segment id and load time in
    CarbonData's file names) and its empty ``.tmp`` folders."""
    storage = table.storage
    marker = f"-{segment_id}-{load_start_ms}."
    tmp = tmp_name(load_start_ms)
    tmp_dirs = set()
    for folder in storage.list_dirs(table.path):
        base = basename(folder)
        if "=" not in base:
            continue  # Metadata, Fact, LockFiles, .Trash: not partition folders
        # never through a link: a linked folder's files are not this load's (a link is removed as a link)
        for f in storage.list(folder, recursive=True, follow_links=False):
            name = basename(f.path)
            if basename(dirname(f.path)) == tmp:
                tmp_dirs.add(dirname(f.path))
            if marker in name and name.endswith((DATA_EXT, INDEX_EXT)) and storage.resolves_inside(f.path, table.path):
                storage.delete(f.path)
    tmp_dirs.update(d for d in stale_tmp_dirs(table) if basename(d) == tmp)
    for d in tmp_dirs:
        if not storage.list(d, recursive=True):
            storage.delete_dir(d)


def stale_tmp_dirs(table: TableHandle) -> list[str]:
    """``<ts>.tmp`` folders under partition folders (leftovers of loads that never committed)."""
    out = []
    storage = table.storage
    for folder in storage.list_dirs(table.path):
        base = basename(folder)
        if "=" not in base:
            continue
        stack = [folder]
        while stack:
            d = stack.pop()
            for sub in storage.list_dirs(d):
                name = basename(sub)
                if name.endswith(".tmp"):
                    out.append(sub)
                elif "=" in name:
                    stack.append(sub)
    return out




def add_static_columns(data: pa.Table, spec: dict[str, str | None], schema: pa.Schema) -> pa.Table:
    """Append the static partition values as constant columns (replacing same-named ones)."""
    lower = [n.lower() for n in data.schema.names]
    for col, text in spec.items():
        t = schema.field(col).type
        arr = pa.nulls(data.num_rows, t) if text is None else pa.array(
            [typed_value(text, t)] * data.num_rows, t) if data.num_rows else pa.array([], t)
        if col.lower() in lower:
            data = data.set_column(lower.index(col.lower()), col, arr)
        else:
            data = data.append_column(col, arr)
            lower.append(col.lower())
    return data


def split(data: pa.Table, partition_columns: list[str], schema: pa.Schema) -> list[tuple[list[str], pa.Table]]:
    """Rows of ``data`` grouped by partition values: [(folder components, rows)], vectorised (one
    group_by, one take per partition)."""
    if data.num_rows == 0:
        return []
    by_lower = {n.lower(): n for n in data.schema.names}
    keys = [by_lower[c.lower()] for c in partition_columns]
    idx = "__carbon_row__"
    keyed = data.select(keys).append_column(idx, pa.array(range(data.num_rows), pa.int64()))
    groups = keyed.group_by(keys, use_threads=False).aggregate([(idx, "list")])
    out = []
    key_values = [groups.column(k).to_pylist() for k in keys]
    rows = groups.column(f"{idx}_list")
    for g in range(groups.num_rows):
        comps = [component(c, value_text(key_values[i][g], schema.field(c).type))
                 for i, c in enumerate(partition_columns)]
        out.append((comps, data.take(rows[g].values)))
    out.sort(key=lambda x: x[0])
    return out

