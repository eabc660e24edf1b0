"""The load protocol's shared pieces: the reservation, a task's result, and the ``Load`` every write uses.

1. ``reserve``: under ``LockFiles/tablestatus.lock`` add an entry for segment N = max id + 1 with status
   "In Progress" ("Overwrite In Progress" for an overwrite). Readers skip it, so no partial data shows.
2. Tasks write data and index files for segment N (``Load.write_task``), each returning a ``TaskResult``
   naming its files.
3. ``Load.commit``: write ``Metadata/segments/N_<ts>.segment`` listing the committed index files, then
   under the lock flip N to "Success" with sizes, segment file and times; an overwrite marks the replaced
   segments (or partition folders) "Marked for Delete" in that same tablestatus write, and staged steps
   (UPDATE's delete deltas) apply there too. That one atomic replace is the commit point: before it readers
   see the old table, after it the new one.
4. ``Load.abort``: delete what the load wrote (the id is ours alone) and mark N "Failure".

A crash anywhere before step 3's replace leaves N "In Progress" (ignored by readers) and the previous
tablestatus intact, so every committed row stays readable. Step 1 also writes N's record
(``LockFiles/Segment_N.lock``, meta.status.load_records: the process whose death ends the load); the commit or
abort deletes it. A load left "In Progress" by a writer that is gone is marked "Failure" by the next
reservation (in its own tablestatus write), CLEAN FILES or ``carbon-ds unlock``, and its files removed.

``PlainLoad`` (carbon_ds.table.loads.plain) and ``PartitionedLoad`` (carbon_ds.table.partitions.hive_load)
differ in where tasks put files and what the commit records; ``carbon_ds.table.loads.protocol`` picks one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import TracebackType

import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonTableError
from carbon_ds.format.hive import normalize_spec
from carbon_ds.progress import phase
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.locks import release_update_lock
from carbon_ds.table.meta.options import LoadOptions
from carbon_ds.table.meta.schema.properties import TableProperties
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.load_records import IN_PROGRESS, LoadHolder, dead_load, remove_record, write_record
from carbon_ds.table.meta.status.tablestatus import LoadDetail
from carbon_ds.writers.carbon_file_writer import WriterOptions

# A staged step: changes other tablestatus entries inside the commit's locked write (UPDATE's deltas).
StagedStep = Callable[[list[LoadDetail]], None]


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
    # The update lock an overwrite holds from reservation to commit or abort (its owner token: the commit may
    # run in another process), and the post-commit hooks the load declared (names, see table.loads.start).
    update_lock_token: str | None = None
    post_commit: tuple[str, ...] = ()


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


def reserve(table: TableHandle, overwrite: bool = False, partition: dict | None = None,
            dynamic: bool = False, holder: LoadHolder | None = None, operation: str = "LOAD",
            dead: list[Reservation] | None = None) -> Reservation:
    """Step 1: segment N "In Progress" (or "Overwrite In Progress") in one locked tablestatus write, with
    N's record naming ``holder`` (default: this process; meta.status.load_records). Loads found dead in that
    same write are marked "Failure" and appended to ``dead`` (the caller removes their files).

    Raises:
        CarbonTableError: a partition spec or dynamic overwrite for an unpartitioned table.
    """
    table.check_writable("a load", data=True)
    pcols = table.partition_columns
    spec: tuple = ()
    if partition:
        if not pcols:
            raise CarbonTableError(f"partition={partition!r} given, but table {table.uri} is not partitioned")
        spec = tuple(normalize_spec(partition, table.schema, pcols).items())
    if dynamic and not pcols:
        raise CarbonTableError(f"dynamic partition overwrite asked, but table {table.uri} is not partitioned")
    start = ts.now_ms()
    with table.edit_status("LOAD (reserve)") as edit:
        entries = edit.entries
        found = fail_dead_loads(table, entries, start)
        seg = ts.next_segment_id(entries)
        write_record(table.storage, table.path, seg, holder or LoadHolder.this_process(), operation, start)
        entries.append(
            LoadDetail(
                name=seg,
                status=ts.OVERWRITE_IN_PROGRESS if overwrite else ts.IN_PROGRESS,
                load_start_time=str(start),
                visibility="true",
            )
        )
    if dead is not None:
        dead.extend(r for r, _why in found)
    return Reservation(table.uri, seg, start, overwrite, spec, dynamic)


def fail_dead_loads(table: TableHandle, entries: list[LoadDetail], now: int | None = None,
                    force: bool = False) -> list[tuple[Reservation, str]]:
    """Mark every "In Progress" load of ``entries`` whose writer is gone "Failure" (meta.status.load_records says
    when; the caller holds the tablestatus lock and writes ``entries``). Returns each one's reservation, to
    remove its files, and why it was judged dead."""
    now = ts.now_ms() if now is None else now
    out = []
    for e in ts.with_status(entries, IN_PROGRESS):
        why = dead_load(table.storage, table.path, e, now, force)
        if why is None:
            continue
        start = e.load_start_ms or 0
        out.append((Reservation(table.uri, e.name, start, e.status == ts.OVERWRITE_IN_PROGRESS), why))
        e.status = ts.FAILURE
        e.modification_time = str(now)
    return out


def writer_options(table: TableHandle, load: LoadOptions) -> WriterOptions:
    """The file writer's settings: this load's options over the table's properties over the defaults."""
    props = TableProperties(table.properties, table.uri)
    sort_cols = table.sort_columns
    return WriterOptions(
        compressor=load.compressor or props.compressor,
        blocklet_size_mb=load.blocklet_size_mb or props.blocklet_size_mb,
        block_size_mb=props.block_size_mb,
        sort_columns=sort_cols,
        long_string_columns=props.long_string_columns,
        local_dictionary_enable=props.local_dictionary_enable,
        local_dictionary_threshold=props.local_dictionary_threshold,
        is_sort=bool(sort_cols) and sort_scope(table, load) == "local_sort",
    )


def sort_scope(table: TableHandle, load: LoadOptions) -> str:
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
    with phase(f"sorting {data.num_rows:,} rows by {', '.join(sort_columns)}"):
        try:
            keys = [(by_lower[c.lower()], "ascending", "at_start") for c in sort_columns]
            order = pc.sort_indices(data, sort_keys=keys)
        except (TypeError, ValueError):  # pyarrow before per-key null placement
            keys2 = [(by_lower[c.lower()], "ascending") for c in sort_columns]
            order = pc.sort_indices(data, sort_keys=keys2, null_placement="at_start")
        return data.take(order)


def mark_success(table: TableHandle, entries: list[LoadDetail], reservation: Reservation, end: int,
                 seg_name: str, data_size: int, index_size: int) -> LoadDetail:
    """Flip the reserved entry to "Success" (caller holds the tablestatus lock and writes ``entries``).

    Raises:
        CarbonTableError: the entry is gone or no longer "In Progress" (cleaned or aborted meanwhile).
    """
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


def mark_failure(table: TableHandle, reservation: Reservation) -> None:
    """Mark a reserved entry "Failure" (nothing when it is no longer in progress)."""
    with table.edit_status("LOAD (abort)") as edit:
        entries = edit.entries
        entry = ts.find(entries, reservation.segment_id)
        if entry is None or entry.status not in (ts.IN_PROGRESS, ts.OVERWRITE_IN_PROGRESS):
            return
        entry.status = ts.FAILURE
        entry.modification_time = str(ts.now_ms())


class Load(ABC):
    """One load into one reserved segment, with one commit point.

    ``with start_load(table, ...) as load: load.write(batches)`` commits when the block ends and aborts when
    it raises. Spark drives the same object in pieces: ``write_task`` in each task (the object and its
    reservation are picklable), then ``commit(results)`` or ``abort()`` once.
    """

    def __init__(self, table: TableHandle, reservation: Reservation, options: LoadOptions | None = None):
        self.table = table
        self.reservation = reservation
        self.options = options or LoadOptions()
        self.results: list[TaskResult] = []
        self.staged: list[StagedStep] = []
        self.committed: LoadDetail | None = None
        # Rows arrive already in sort-column order (compaction's merge): written as they stream, not
        # gathered and sorted per task.
        self.presorted = False
        self.on_commit: list[Callable[[], object]] = []  # run after a successful commit (automatic compaction)

    @property
    def segment_id(self) -> str:
        return self.reservation.segment_id

    @abstractmethod
    def write_task(self, task_no: int, batches: Iterable[pa.RecordBatch | pa.Table]) -> TaskResult:
        """Write one task's rows as files of the reserved segment; on error the task's files are removed."""

    @abstractmethod
    def _commit(self, results: list[TaskResult]) -> LoadDetail:
        """Record ``results`` and flip the segment to Success (applying ``self.staged``) in one write."""

    @abstractmethod
    def _remove_files(self) -> None:
        """Delete every file this load wrote."""

    def write(self, batches: Iterable[pa.RecordBatch | pa.Table], task_no: int = 0) -> TaskResult:
        """Write rows in this process as one task; ``commit()`` (or leaving the ``with``) commits them."""
        result = self.write_task(task_no, batches)
        self.results.append(result)
        return result

    def stage(self, step: StagedStep) -> None:
        """Run ``step(entries)`` inside the commit's locked tablestatus write (UPDATE commits its delete
        deltas there, so old rows vanish and new rows appear in one step)."""
        self.staged.append(step)

    def apply_staged(self, entries: list[LoadDetail]) -> None:
        for step in self.staged:
            step(entries)

    def commit(self, results: Iterable[TaskResult | None] | None = None) -> LoadDetail:
        """The commit point. ``results``: what the tasks returned (failed tasks as None); default: what
        ``write`` wrote in this process."""
        found = self.results if results is None else [r for r in results if r is not None]
        try:
            self.committed = self._commit(found)
        finally:
            self._release_update_lock()
        self._remove_record()
        for hook in self.on_commit:
            hook()  # hooks never raise (automatic compaction reports its own failures as warnings)
        return self.committed

    def abort(self) -> None:
        """Remove everything the load wrote and mark it "Failure"; safe to call more than once, and a no-op
        once the load committed (its files are the table's now)."""
        if self.committed is not None:
            return
        try:
            self._remove_files()
            mark_failure(self.table, self.reservation)
            self._remove_record()
        finally:
            self._release_update_lock()

    def remove_files(self) -> None:
        """Delete every file this load wrote and its record (a load found dead, already marked "Failure")."""
        self._remove_files()
        self._remove_record()

    def _remove_record(self) -> None:
        try:
            remove_record(self.table.storage, self.table.path, self.reservation.segment_id)
        except OSError:
            pass  # the load has ended either way: a record of a segment not In Progress is swept later

    def _release_update_lock(self) -> None:
        token = self.reservation.update_lock_token
        if token is not None:  # only while the lock file still holds our token: releasing twice is harmless
            release_update_lock(self.table.storage, self.table.path, token)

    def __enter__(self) -> Load:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            try:
                self.commit()
            except BaseException:
                self.abort()
                raise
        else:
            self.abort()
