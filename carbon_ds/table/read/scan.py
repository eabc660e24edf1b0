"""A scan of a table or a bare folder: one pruned plan, read as a stream of Arrow batches.

``Scan`` plans once (segments, files, blocklets pruned by min/max and partition values) and then reads
one unit at a time: a carbondata blocklet, a Parquet row group, an ORC stripe, or a whole CSV/JSON file.
So ``to_batches`` holds at most a few units in memory whatever the table's size. With ``use_threads`` the
units are decoded on a thread pool (decompression, the numba kernels and Arrow's kernels release the
GIL), and results still come out in plan order.
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, wait
from dataclasses import replace
from importlib import import_module
from typing import Any

import pyarrow as pa

from carbon_ds.errors import CarbonOptionError
from carbon_ds.expressions import AlwaysTrue, and_
from carbon_ds.readers.carbon_file import CarbonDataFile, read_folder
from carbon_ds.readers.external import open_reader
from carbon_ds.table.meta.handle import TableHandle, resolve_columns
from carbon_ds.table.read import planned_reads, pruning
from carbon_ds.table.read.pruning import Counts, Piece
from carbon_ds.table.read.snapshot import open_source
from carbon_ds.table.read.task_reader import Reading, TaskReader, reading_pool

THREADS = os.cpu_count() or 1
_SPLIT = ("parquet", "orc")  # external formats read one statistics unit (row group, stripe) at a time
# rows per batch when the caller names none: pyarrow.dataset's default, so consumers size buffers alike
DEFAULT_BATCH_SIZE = 131_072


class Scan:
    """What ``carbon_ds.scan(path, ...)`` and ``CarbonTable.scan(...)`` return. Nothing is read until asked.

    ``to_batches()`` streams; ``to_reader()`` / ``__arrow_c_stream__`` hand the stream to any Arrow
    consumer; ``to_arrow()`` / ``to_pandas()`` collect it; ``count()``, ``explain()`` and ``plan()`` read
    metadata (and, for ``count`` with a filter, the filter columns only).
    """

    def __init__(self, path: str | os.PathLike | TableHandle, columns: list[str] | None = None, filter: Any = None,
                 segments: str | list | None = None, limit: int | None = None, batch_size: int | None = None,
                 use_threads: bool = True, prune: Any = None):
        """``prune``: a further filter used only to skip what cannot match it (segments, files, blocklets,
        pages); rows it rules out may still come back. For engines that apply their own predicate to every
        batch anyway (Polars), so the rows are not filtered twice. ``count()`` ignores it."""
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
            raise CarbonOptionError(f"limit must be a whole number >= 0, found {limit!r}")
        if batch_size is not None and (not isinstance(batch_size, int) or isinstance(batch_size, bool)
                                       or batch_size < 1):
            raise CarbonOptionError(f"batch_size must be a whole number >= 1, found {batch_size!r}")
        self._path = path
        self.source = open_source(path, segments)
        self.expr = pruning.as_expr(filter, self.source.schema, self.source.uri)
        extra = pruning.as_expr(prune, self.source.schema, self.source.uri)
        # a prune-only filter narrows what is planned and read, never the rows: count() and the row filter
        # then go by the filter alone
        self._prune_only = not isinstance(extra, AlwaysTrue)
        # what planning and page pruning go by: the filter and, when given, the prune-only filter
        self._read_expr = self.expr if not self._prune_only else (
            extra if isinstance(self.expr, AlwaysTrue) else and_(self.expr, extra))
        where = self.source.uri
        if isinstance(self.expr, AlwaysTrue):  # as read_table has always named them
            where = f"table {where}" if self.source.table is not None else f"folder {os.fspath(path)}"
        self.columns = resolve_columns(self.source.schema, columns, where)
        self.segments = segments
        self.limit = limit
        self.batch_size = DEFAULT_BATCH_SIZE if batch_size is None else batch_size
        self.use_threads = use_threads
        names = self.columns if self.columns is not None else self.source.schema.names
        self.schema = pa.schema([self.source.schema.field(n) for n in names])
        self.counts = Counts()  # units planned and read so far (plan counts once planned, then pages/rows)
        self._plan: pruning.Plan | None = None

    def __repr__(self) -> str:
        extra = f", limit={self.limit}" if self.limit is not None else ""
        return f"Scan({self.source.uri!r}, columns={self.schema.names}, filter={str(self.expr)!r}{extra})"

    # ------------------------------------------------------------------ planning
    def _planned(self) -> pruning.Plan:
        if self._plan is None:
            self._plan = planned_reads.plan(self.source, self._read_expr)
            self.counts.add(self._plan.counts)
        return self._plan

    def plan(self) -> list[Piece]:
        """The file pieces left after pruning, in read order: each a path, its surviving blocklets (or
        row groups/stripes; None: all), segment id and row count when the index knows it. Other engines
        can split the work by these."""
        return list(self._planned().pieces)

    def explain(self) -> planned_reads.ExplainReport:
        """Segments, files, blocklets, pages and rows this scan's filter reads and skips (no page decoded)."""
        return planned_reads.explain(self.source, self._read_expr)  # the scan's own snapshot

    def count(self) -> int:
        """Matching rows (capped by ``limit``); without a filter from index row counts alone."""
        planned = None if self._prune_only else self._planned()  # the scan's one plan
        n = planned_reads.count(self.source, self.expr, planned=planned)
        return n if self.limit is None else min(n, self.limit)

    # ------------------------------------------------------------------ reading
    def _tasks(self, opened: list[CarbonDataFile]) -> Iterator[tuple[Callable[[], tuple[pa.Table | None, Counts]], CarbonDataFile | None]]:
        """(read one unit, the file to close once that unit is consumed), in plan order; every file opened
        is also appended to ``opened`` for the caller to close once no unit of it is in flight."""
        source = self.source
        storage = source.storage
        how = Reading(self._read_expr, self.columns, source.schema, self.expr if self._prune_only else True,
                      source.columns)
        def external(piece: Piece):
            def run():
                c = Counts()
                # the snapshot's deletes, resolved once when planned: a DELETE landing mid-scan is not seen
                return how.external(storage, piece, c, piece.deletes), c
            return run

        def blocklet(f: CarbonDataFile, b: int, fd, window: tuple[int, int] | None):
            def run():
                c = Counts()
                return how.blocklet(f, b, fd, c, window), c
            return run

        yield from self._units(self._planned().pieces, opened, external, blocklet)

    def _units(self, pieces, opened, external, blocklet):
        storage, source = self.source.storage, self.source
        reader = TaskReader(storage, source.columns, source.table.path if source.table else None)
        for piece, o in reader.tasks(pieces, keep_open=True):
            if o is None:
                units = piece.blocklets
                if units is None and piece.external.format in _SPLIT:
                    ref = piece.external
                    units = tuple(range(len(open_reader(storage, piece.path, ref.format, ref.options_dict,
                                                        source.schema).units))) or None
                if units is None:
                    yield external(piece), None
                else:
                    for u in units:
                        yield external(replace(piece, blocklets=(u,), rows=None, claim=None)), None
                continue
            f, fd, blocklets = o.file, o.deletes, o.blocklets
            opened.append(f)
            if not blocklets:
                f.close()
            for k, b in enumerate(blocklets):
                yield blocklet(f, b, fd, piece.pages), f if k == len(blocklets) - 1 else None

    def _tables(self) -> Iterator[pa.Table]:
        """Unit results in plan order; threaded reads keep a bounded number of units in flight."""
        opened: list[CarbonDataFile] = []
        gen = self._tasks(opened)
        threads = THREADS if self.use_threads else 1
        try:
            ahead = list(itertools.islice(gen, 2)) if threads >= 2 else []
        except BaseException:
            gen.close()
            for f in opened:
                f.close()
            raise
        if len(ahead) < 2:
            threads = 1  # one unit (a pruned lookup) runs in this thread: a pool would only add its start-up
        tasks = itertools.chain(ahead, gen)
        if threads < 2:
            try:
                for run, last_of in tasks:
                    table, c = run()
                    self.counts.add(c)
                    if last_of is not None:
                        last_of.close()
                    if table is not None:
                        yield table
            finally:  # a stream stopped early (limit, error) still closes every file it opened
                gen.close()
                for f in opened:
                    f.close()
            return
        pending: deque[tuple[Future, CarbonDataFile | None]] = deque()
        pool, own = reading_pool(threads)
        try:
            for run, last_of in tasks:
                pending.append((pool.submit(run), last_of))
                while len(pending) >= 2 * threads:
                    yield from self._take(pending)
            while pending:
                yield from self._take(pending)
        finally:
            for fut, _ in pending:
                fut.cancel()
            if own:  # no unit in flight any more: files may close
                pool.shutdown(wait=True)
            else:
                wait([fut for fut, _ in pending])
            gen.close()
            for f in opened:
                f.close()

    def _take(self, pending: deque) -> Iterator[pa.Table]:
        fut, last_of = pending.popleft()
        table, c = fut.result()
        self.counts.add(c)
        if last_of is not None:
            last_of.close()
        if table is not None:
            yield table

    def _limited(self) -> Iterator[pa.Table]:
        left = self.limit
        if left == 0:
            return
        tables = self._tables()
        try:
            for table in tables:
                if table.schema != self.schema:
                    table = table.cast(self.schema)
                if left is not None:
                    if table.num_rows >= left:
                        yield table.slice(0, left)
                        return
                    left -= table.num_rows
                yield table
        finally:
            tables.close()

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The matching rows as record batches, read one unit at a time (``batch_size`` caps their rows)."""
        for table in self._limited():
            yield from table.to_batches(max_chunksize=self.batch_size)

    def to_reader(self) -> pa.RecordBatchReader:
        """A ``pyarrow.RecordBatchReader`` over ``to_batches()``."""
        return pa.RecordBatchReader.from_batches(self.schema, self.to_batches())

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.to_reader().__arrow_c_stream__(requested_schema)

    def to_arrow(self) -> pa.Table:
        """Every matching row in one ``pyarrow.Table``."""
        if isinstance(self._read_expr, AlwaysTrue) and self.limit is None and self.use_threads:
            # a whole read: each file decodes its (blocklet, column) chunks in parallel, as read_table always did
            return self._whole()
        tables = list(self._limited())
        if not tables:
            return self.schema.empty_table()
        return pa.concat_tables(tables)

    def _whole(self) -> pa.Table:
        source = self.source
        if source.table is not None:
            return planned_reads.table_rows(source, self.columns)  # the planned snapshot's files and deletes
        return read_folder(os.fspath(self._path), columns=self.columns)

    def to_pandas(self, dtype_backend: str | None = None, **kwargs: Any):
        """``to_arrow().to_pandas(**kwargs)`` (needs pandas): the dtypes ``pandas.read_parquet`` gives for the
        same Arrow data, with its ``dtype_backend`` choices (see docs/dataframes.md, "pandas")."""
        return self.to_arrow().to_pandas(**_pandas_types(dtype_backend), **kwargs)


def open_scan(path: str | os.PathLike | TableHandle, columns: list[str] | None = None, filter: Any = None,
              segments: str | list | None = None, limit: int | None = None, batch_size: int | None = None,
              use_threads: bool = True) -> Scan:
    return Scan(path, columns, filter, segments, limit, batch_size, use_threads)


def _pandas_types(dtype_backend: str | None) -> dict[str, Any]:
    """``to_pandas`` arguments for pandas' ``dtype_backend`` (None: NumPy dtypes, nulls in ints as float NaN;
    "numpy_nullable": ``Int64``/``boolean``/``Float64``/``string`` with ``<NA>``; "pyarrow": ``ArrowDtype``)."""
    if dtype_backend is None:
        return {}
    pd = import_module("pandas")  # optional dependency, and pyarrow's to_pandas imports it anyway
    if dtype_backend == "pyarrow":
        return {"types_mapper": pd.ArrowDtype}
    if dtype_backend != "numpy_nullable":
        raise CarbonOptionError(f"dtype_backend must be None, 'numpy_nullable' or 'pyarrow', found {dtype_backend!r}")
    nullable = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
                pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype(), pa.float32(): pd.Float32Dtype(),
                pa.float64(): pd.Float64Dtype(), pa.string(): pd.StringDtype(), pa.large_string(): pd.StringDtype()}
    return {"types_mapper": nullable.get}
