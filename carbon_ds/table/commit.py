"""The write protocol: reserve a segment, let tasks write into it, then commit or abort it.

1. ``reserve``: under ``LockFiles/tablestatus.lock`` add an entry for segment N = max id + 1 with status
   "In Progress" ("Overwrite In Progress" for an overwrite). Readers skip it, so no partial data shows.
2. Tasks write data and index files into ``Fact/Part0/Segment_N/`` (``write_task``), each returning a
   ``TaskResult`` naming its files.
3. ``commit``: write ``Metadata/segments/N_<ts>.segment`` listing the committed index files, then under
   the lock flip N to "Success" with sizes, segment file and times; an overwrite marks every other
   readable segment "Marked for Delete" in that same tablestatus write. That one atomic replace is the
   commit point: before it readers see the old table, after it the new one.
4. ``abort``: delete the segment folder (the id is ours alone) and mark N "Failure".

A crash anywhere before step 3's replace leaves N "In Progress" (ignored by readers) and the previous
tablestatus intact, so every committed row stays readable.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonTableError
from carbon_ds.table import segments as segfiles
from carbon_ds.table import tablestatus as ts
from carbon_ds.table.options import LoadOptions
from carbon_ds.table.planning import conform
from carbon_ds.table.table import CarbonTable
from carbon_ds.table.tablestatus import LoadDetail


@dataclass(frozen=True)
class Reservation:
    """A reserved segment; picklable so Spark can ship it to tasks and to commit/abort."""

    table_uri: str
    segment_id: str
    load_start_ms: int
    overwrite: bool
    # Partitioned tables: a static partition spec ((column, value text or None), ...) whose values every
    # row gets; with ``overwrite`` only folders inside it are replaced. ``dynamic``: an overwrite replaces
    # only the partition folders this load writes.
    partition_spec: tuple[tuple[str, str | None], ...] = ()
    dynamic: bool = False


@dataclass
class TaskResult:
    """What one task wrote (a Spark WriterCommitMessage carries one)."""

    segment_id: str
    task_no: int
    data_files: list[tuple[str, int, int]] = field(default_factory=list)  # (file name, bytes, rows)
    index_files: list[tuple[str, int]] = field(default_factory=list)  # (file name, bytes)

    @property
    def rows(self) -> int:
        return sum(r for _n, _s, r in self.data_files)


def reserve(table: CarbonTable, overwrite: bool = False, partition: dict | None = None,
            dynamic: bool = False) -> Reservation:
    pcols = table.partition_columns
    spec: tuple = ()
    if partition:
        if not pcols:
            raise CarbonTableError(f"partition={partition!r} given, but table {table.uri} is not partitioned")
        from carbon_ds.table.partitions import normalize_spec

        spec = tuple(normalize_spec(partition, table.schema, pcols).items())
    if dynamic and not pcols:
        raise CarbonTableError(f"dynamic partition overwrite asked, but table {table.uri} is not partitioned")
    start = ts.now_ms()
    with table.lock():
        entries = table.load_details()
        seg = ts.next_segment_id(entries)
        entries.append(
            LoadDetail(
                name=seg,
                status=ts.OVERWRITE_IN_PROGRESS if overwrite else ts.IN_PROGRESS,
                load_start_time=str(start),
                visibility="true",
            )
        )
        ts.write(table.storage, table.tablestatus_path, entries)
    return Reservation(table.uri, seg, start, overwrite, spec, dynamic)


def writer_options(table: CarbonTable, load: LoadOptions):
    from carbon_ds.writers.carbondata import WriterOptions

    props = table.properties
    sort_cols = table.sort_columns
    return WriterOptions(
        compressor=load.compressor or props.get("carbon.column.compressor", "snappy"),
        blocklet_size_mb=load.blocklet_size_mb or int(props.get("table_blocklet_size", "64")),
        block_size_mb=int(props.get("table_blocksize", "1024")),
        sort_columns=sort_cols,
        long_string_columns=[c for c in props.get("long_string_columns", "").split(",") if c],
        local_dictionary_enable=props.get("local_dictionary_enable", "true").lower() == "true",
        local_dictionary_threshold=int(props.get("local_dictionary_threshold", "10000")),
        is_sort=bool(sort_cols) and sort_scope(table, load) == "local_sort",
    )


def sort_scope(table: CarbonTable, load: LoadOptions) -> str:
    """This load's sort scope: the write option, else the table property, else CarbonData's default."""
    scope = load.sort_scope or table.properties.get("sort_scope", "").strip().lower()
    if scope not in ("no_sort", "local_sort"):
        scope = "local_sort" if table.sort_columns else "no_sort"
    return scope


def sort_for_load(data: pa.Table, sort_columns: list[str]) -> pa.Table:
    """LOCAL_SORT: one task's rows ordered by the sort columns (nulls first, as CarbonData orders them)."""
    if not sort_columns or data.num_rows < 2:
        return data
    by_lower = {n.lower(): n for n in data.schema.names}
    try:
        keys = [(by_lower[c.lower()], "ascending", "at_start") for c in sort_columns]
        order = pc.sort_indices(data, sort_keys=keys)
    except (TypeError, ValueError):  # pyarrow before per-key null placement
        keys2 = [(by_lower[c.lower()], "ascending") for c in sort_columns]
        order = pc.sort_indices(data, sort_keys=keys2, null_placement="at_start")
    return data.take(order)


def write_task(
    table: CarbonTable,
    reservation: Reservation,
    task_no: int,
    batches: Iterable[pa.RecordBatch | pa.Table],
    load: LoadOptions,
) -> TaskResult:
    """Write one task's rows as files of the reserved segment. On error the task's files are removed.

    With sort columns the task's rows are gathered and sorted before writing (CarbonData's LOCAL_SORT
    sorts a whole task); without, batches stream straight to the writer.
    """
    from carbon_ds.writers.carbondata import CarbonWriter

    if table.partition_columns:
        from carbon_ds.table import partitioned_write

        return partitioned_write.write_task(table, reservation, task_no, batches, load)
    schema = table.schema
    options = writer_options(table, load)
    folder = segfiles.segment_dir(table.path, reservation.segment_id)
    writer = CarbonWriter(
        folder,
        schema,
        options,
        task_no=task_no,
        segment_no=reservation.segment_id,
        timestamp=reservation.load_start_ms,
        storage=table.storage,
        columns=table.columns,
    )
    try:
        if options.is_sort:
            parts = [conform(b, schema) for b in batches]
            parts = [pa.Table.from_batches([p]) if isinstance(p, pa.RecordBatch) else p for p in parts]
            if parts:
                writer.write(sort_for_load(pa.concat_tables(parts).combine_chunks(), options.sort_columns))
        else:
            for b in batches:
                writer.write(conform(b, schema))
        written = writer.close()
    except BaseException:
        writer.abort()
        raise
    result = TaskResult(reservation.segment_id, task_no)
    result.data_files = [(w.file_name, int(w.file_size), int(w.num_rows)) for w in written]
    index_path = getattr(writer, "index_path", None)
    if written and index_path:
        result.index_files = [(index_path.replace("\\", "/").rsplit("/", 1)[-1], table.storage.size(index_path))]
    return result


def mark_success(table: CarbonTable, entries: list[LoadDetail], reservation: Reservation, end: int,
                 seg_name: str, data_size: int, index_size: int) -> LoadDetail:
    """Flip the reserved entry to "Success" (caller holds the tablestatus lock and writes ``entries``)."""
    seg = reservation.segment_id
    entry = ts.find(entries, seg)
    if entry is None or entry.status not in (ts.IN_PROGRESS, ts.OVERWRITE_IN_PROGRESS):
        found = "no entry" if entry is None else f"status {entry.status!r}"
        raise CarbonTableError(
            f"cannot commit segment {seg} of {table.uri}: expected it 'In Progress', found {found} "
            "(was it cleaned or aborted meanwhile?)"
        )
    entry.status = ts.SUCCESS
    entry.timestamp = str(end)
    entry.data_size = str(data_size)
    entry.index_size = str(index_size)
    entry.segment_file = seg_name
    entry.load_start_time = entry.load_start_time or str(reservation.load_start_ms)
    return entry


def commit(table: CarbonTable, reservation: Reservation, results: Iterable[TaskResult | None],
           on_commit=None) -> LoadDetail:
    """``on_commit(entries)`` may change other entries inside the same locked tablestatus write (UPDATE
    commits its delete deltas there, so old rows vanish and new rows appear in one step)."""
    results = [r for r in results if r is not None]
    if table.partition_columns:
        from carbon_ds.table import partitioned_write

        return partitioned_write.commit(table, reservation, results, on_commit=on_commit)
    seg = reservation.segment_id
    index_names = [n for r in results for n, _s in r.index_files]
    data_size = sum(s for r in results for _n, s, _r in r.data_files)
    index_size = sum(s for r in results for _n, s in r.index_files)
    end = ts.now_ms()
    seg_name = segfiles.segment_file_name(seg, end)
    # Written before the status flip and under a fresh name: until the flip nothing refers to it.
    segfiles.write(table.storage, table.path, seg_name, segfiles.for_load(seg, index_names))
    with table.lock():
        entries = table.load_details()
        entry = mark_success(table, entries, reservation, end, seg_name, data_size, index_size)
        if reservation.overwrite:
            for other in entries:
                if other is not entry and other.status in ts.READABLE:
                    other.status = ts.MARKED_FOR_DELETE
                    other.modification_time = str(end)
        if on_commit is not None:
            on_commit(entries)
        ts.write(table.storage, table.tablestatus_path, entries)
    return entry


def abort(table: CarbonTable, reservation: Reservation) -> None:
    """Remove everything the load wrote and mark it "Failure"; safe to call more than once."""
    table.storage.delete_dir(segfiles.segment_dir(table.path, reservation.segment_id))
    if table.partition_columns:
        from carbon_ds.table import partitioned_write

        partitioned_write.remove_load_files(table, reservation.segment_id, reservation.load_start_ms)
    with table.lock():
        entries = table.load_details()
        entry = ts.find(entries, reservation.segment_id)
        if entry is None or entry.status not in (ts.IN_PROGRESS, ts.OVERWRITE_IN_PROGRESS):
            return
        entry.status = ts.FAILURE
        entry.modification_time = str(ts.now_ms())
        ts.write(table.storage, table.tablestatus_path, entries)
