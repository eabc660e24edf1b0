"""One compaction task (a merge group's files in one partition folder) into the new segment.

A task is a small picklable description (``CompactionTask``), so the same code runs in the calling process or
as a Spark task (carbon_ds.spark.statements.compaction_tasks); each returns the ``TaskResult`` naming the files it wrote and
the driver commits them all at once (carbon_ds.table.ops.compaction.compact).

Memory: every source file is a run read blocklet by blocklet. A file whose footer says it is sorted
(``is_sort``, every LOCAL_SORT load) is streamed; the k-way merge holds about one blocklet per run plus
``MERGE_BUDGET_ROWS`` merged rows, so a merge of k files of any size holds O(k x blocklet). A file written
without sorting (NO_SORT load of a table with sort columns) cannot be streamed in order: it is read and
sorted whole (bounded by the table's block size). A file that claims to be sorted but is not (another
writer's collation) is found at a blocklet boundary; the task then starts again treating it as unsorted.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonError
from carbon_ds.progress import row_progress
from carbon_ds.table.loads.load_base import Reservation, TaskResult, sort_for_load
from carbon_ds.table.loads.protocol import load_for
from carbon_ds.table.meta.files import deltas as D
from carbon_ds.table.meta.handle import DataFile, TableHandle
from carbon_ds.table.meta.options import LoadOptions
from carbon_ds.table.meta.schema.conform import conform
from carbon_ds.table.read.pruning import Piece, file_pieces
from carbon_ds.table.read.task_reader import TaskReader, read_external, whole_rows

# Merged rows held at once, shared among a task's runs (each run also holds its current blocklet)
MERGE_BUDGET_ROWS = 1_000_000
MIN_CHUNK_ROWS = 4096


@dataclass(frozen=True)
class CompactionTask:
    """One merge group's files in one partition folder (the whole group on an unpartitioned table)."""

    table_path: str  # the table's URI (a Spark task opens the table from it)
    reservation: Reservation  # the merged segment, reserved "In Progress" by the driver
    task_no: int
    # the files as whole-file pieces, each with its committed deletes under the update status the driver
    # planned with (resolved there once; a task never looks them up)
    pieces: tuple[Piece, ...]


class UnsortedRun(CarbonError):
    """A file whose footer says sorted holds a blocklet below its previous one (the task retries)."""

    def __init__(self, path: str):
        super().__init__(f"{path}: rows are not in sort-column order across blocklets")
        self.path = path


# ------------------------------------------------------------------------------------------ k-way merge
def _key(t: pa.Table, keys: list[str], i: int) -> tuple:
    return tuple(t.column(k)[i].as_py() for k in keys)


def _order(key: tuple) -> tuple:
    """A Python sort key matching Arrow's ascending order with nulls first."""
    return tuple((0,) if v is None else (1, v) for v in key)


def _at_most(t: pa.Table, keys: list[str], bound: tuple) -> pa.ChunkedArray | pa.Array:
    """Rows of ``t`` whose sort key is <= ``bound`` (lexicographic, nulls first), vectorised."""
    acc = None
    for k, v in reversed(list(zip(keys, bound, strict=True))):
        col = t.column(k)
        if v is None:
            lt = pa.array([False] * t.num_rows, pa.bool_())
            eq = pc.is_null(col)
        else:
            s = pa.scalar(v, type=col.type)
            lt = pc.or_(pc.is_null(col), pc.fill_null(pc.less(col, s), False))
            eq = pc.fill_null(pc.equal(col, s), False)
        acc = pc.or_(lt, eq) if acc is None else pc.or_(lt, pc.and_(eq, acc))
    return acc


def merge_sorted(runs: list[Iterator[pa.Table]], keys: list[str]) -> Iterator[pa.Table]:
    """One stream in ``keys`` order from runs each already in that order, holding about one chunk per run.

    Each round pulls the next chunk of the run whose last pulled key is smallest (the bound): every row
    <= bound can be emitted, since no run can still deliver a smaller one."""
    if not keys:
        for r in runs:
            yield from r
        return
    carry: pa.Table | None = None
    last: dict[int, tuple] = {}

    def pull(i: int) -> None:
        nonlocal carry
        t = next(runs[i], None)
        while t is not None and t.num_rows == 0:
            t = next(runs[i], None)
        if t is None:
            last.pop(i, None)
            return
        last[i] = _key(t, keys, t.num_rows - 1)
        carry = t if carry is None else pa.concat_tables([carry, t])

    for i in range(len(runs)):
        pull(i)
    while last:
        i = min(last, key=lambda j: _order(last[j]))
        assert carry is not None
        mask = _at_most(carry, keys, last[i])
        out = carry.filter(mask)
        carry = carry.filter(pc.invert(mask)).combine_chunks()
        yield sort_for_load(out.combine_chunks(), keys)
        pull(i)
    if carry is not None and carry.num_rows:
        yield sort_for_load(carry.combine_chunks(), keys)


# ------------------------------------------------------------------------------------------ runs
def _slices(t: pa.Table, chunk: int) -> Iterator[pa.Table]:
    for off in range(0, t.num_rows, chunk):
        yield t.slice(off, chunk)


def file_run(table: TableHandle, piece: Piece, keys: list[str], chunk: int,
             whole: bool = False) -> Iterator[pa.Table]:
    """One planned file's live rows in sort order, in chunks of at most ``chunk`` rows, read when the merge
    first asks. Blocklet by blocklet unless the file is not sorted (or ``whole``)."""
    target = table.schema
    with closing(TaskReader(table.storage, table.columns, table.path).tasks([piece])) as tasks:
        for _piece, o in tasks:
            if o is None:  # an external file (CUSTOM with include_external): read whole, sorted
                rows = read_external(table.storage, piece.path, piece.external, None, target,  # type: ignore[arg-type]
                                     table_columns=table.columns, deletes=piece.deletes)
                yield from _slices(sort_for_load(rows.combine_chunks(), keys) if keys else rows, chunk)
                return
            cf, fd = o.file, o.deletes
            if keys and (whole or not cf.footer.is_sort):
                yield from _slices(sort_for_load(whole_rows(o, target).combine_chunks(), keys), chunk)
                return
            previous: tuple | None = None
            for b in range(cf.num_blocklets):
                t = conform(pa.Table.from_batches([cf.read_blocklet(b, target.names)]), target, piece.path)
                if fd is not None and fd.rows:
                    sizes = cf.page_rows(b)
                    mask = fd.keep_mask(b, list(range(len(sizes))), sizes)
                    t = t if mask is None else t.filter(pa.array(mask))
                if not t.num_rows:
                    continue
                if keys:
                    t = sort_for_load(t.combine_chunks(), keys)  # cheap on sorted rows; guards the blocklet
                    if previous is not None and _order(_key(t, keys, 0)) < _order(previous):
                        raise UnsortedRun(piece.path)
                    previous = _key(t, keys, t.num_rows - 1)
                yield from _slices(t, chunk)
                del t


# ------------------------------------------------------------------------------------------ one task
def plan_pieces(table: TableHandle, files: list[DataFile], status_name: str | None) -> list[Piece]:
    """``files`` as whole-file pieces with their deletes under the committed update status ``status_name``
    (no index claim: a merge reads what the segment lists)."""
    deletes = (D.Deletes(table.storage, table.path, D.read_status(table.storage, table.path, status_name))
               if status_name is not None else None)
    return file_pieces(table.storage, files, table.columns, deletes, claims=False)


def run_task(task: CompactionTask, table: TableHandle | None = None, bar: bool = False) -> TaskResult:
    """Merge one task's files into the reserved segment; returns what it wrote (nothing is committed).

    ``table``: the open table (the calling process); a Spark task opens it from ``task.table_path``. On
    error the files this task wrote are removed (the driver then aborts the whole compaction)."""
    table = table if table is not None else TableHandle.open(task.table_path)
    load = load_for(table, task.reservation, LoadOptions())
    load.presorted = True  # the merge delivers rows in sort order: the writer streams them
    keys = table.sort_columns
    pieces = task.pieces
    chunk = max(MIN_CHUNK_ROWS, MERGE_BUDGET_ROWS // max(1, len(pieces)))
    whole: set[str] = set()
    while True:
        runs = [file_run(table, p, keys, chunk, p.path in whole) for p in pieces]
        rows = merge_sorted(runs, keys)
        if bar:
            rows = row_progress(rows, f"merging {len(pieces)} files into {task.reservation.segment_id}")
        try:
            return load.write_task(task.task_no, rows)
        except UnsortedRun as e:  # write_task removed its files: merge again reading that file whole
            whole.add(e.path)
