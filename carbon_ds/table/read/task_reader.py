"""Reading planned pieces: the one loop over files every read shares.

A plan (table.read.pruning) hands out ``Piece``s: a file, its segment, the blocklets that may match, what
the index said of the file and its committed deletes. ``TaskReader.tasks`` is the one loop over them that
every caller (scans, the Spark source, row positions, page counts, DELETE/UPDATE, whole-table reads,
compaction) goes through; it opens each carbondata file once, by ``open``, which

1. skips a file a delete marked whole (the piece's deletes, resolved when it was planned),
2. opens the file in the table's current columns (schema evolution), from the table's trash when CLEAN
   FILES moved it after the plan was made,
3. refuses a file whose footer disagrees with the index entry it was planned from,

and then hands each blocklet to the file reader's page pruning (readers.pages), drops deleted rows and
filters the survivors exactly.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonFormatError, CarbonTableError
from carbon_ds.expressions import AlwaysTrue, Expr, filter_table
from carbon_ds.format.thrift.structs import ColumnSchema
from carbon_ds.fs import Storage
from carbon_ds.readers.carbon_file import CarbonDataFile, read_files, shares_view
from carbon_ds.readers.external import open_reader
from carbon_ds.readers.external.base import ExternalRef, partition_scalar, to_table_schema
from carbon_ds.readers.pages import BlockletRows, planned_pages, read_pruned
from carbon_ds.table.meta.files.deltas import FileDeletes, unit_keep_mask
from carbon_ds.table.meta.files.trash import find_in_trash
from carbon_ds.table.meta.schema.column_map import external_names, fill_defaults
from carbon_ds.table.meta.schema.conform import conform
from carbon_ds.table.read.pruning import Counts, IndexClaim, Piece

__all__ = [
    "OpenPiece", "Reading", "TaskReader", "check_claim", "check_index_claim", "in_order", "read_pieces",
    "reading_pool", "whole_rows", "whole_rows_of",
]

T = TypeVar("T")
_SKIPPED = object()  # a piece ``each`` had no work for: its file deleted whole


@dataclass
class OpenPiece:
    """A planned carbondata file, open: the reader, its committed deletes and the blocklets to read."""

    file: CarbonDataFile
    deletes: FileDeletes | None
    blocklets: list[int]
    piece: Piece


class TaskReader:
    """Reads the pieces of one table version (each carries its file's deletes of that version):
    ``table_path`` finds a file CLEAN FILES moved to the trash since (None: a bare folder, no trash),
    ``table_columns`` name the file columns by the table's current schema."""

    def __init__(self, storage: Storage, table_columns: list[ColumnSchema] | None = None,
                 table_path: str | None = None):
        self.storage = storage
        self.table_columns = table_columns
        self.table_path = table_path

    def open(self, piece: Piece) -> OpenPiece | None:
        """The piece's file open and checked (close ``.file``), or None when a delete marked it whole."""
        fd = piece.deletes
        if fd is not None and fd.marked:
            return None
        f = open_planned(piece.path, self.storage, self.table_columns, self.table_path)
        try:
            check_claim(piece, f)
            if fd is not None:
                check_deletes(fd, f)
        except BaseException:
            f.close()
            raise
        blocklets = list(piece.blocklets) if piece.blocklets is not None else list(range(f.num_blocklets))
        return OpenPiece(f, fd, blocklets, piece)

    def tasks(self, pieces: Iterable[Piece], keep_open: bool = False) -> Iterator[tuple[Piece, OpenPiece | None]]:
        """The one loop over planned pieces: (piece, None) for a live external file (its reader applies the
        piece's deletes by unit), (piece, its file open and checked) for a carbondata one; a file a delete
        marked whole is skipped. Each file is closed when the next piece is asked for (or the loop is left),
        unless ``keep_open``: the caller then closes ``.file``."""
        for piece in pieces:
            if piece.external is not None:
                if piece.deletes is None or not piece.deletes.marked:
                    yield piece, None
                continue
            o = self.open(piece)
            if o is None:
                continue
            if keep_open:
                yield piece, o
                continue
            try:
                yield piece, o
            finally:
                o.file.close()

    def each(self, pieces: list[Piece], work: Callable[[Piece, OpenPiece | None], T],
             threads: int = 1) -> Iterator[T]:
        """``work(piece, open)`` for each (piece, open) ``tasks`` yields, in the pieces' order, with files
        read ``threads`` at a time (``in_order``): the loop of ``tasks``, run for one piece in a worker."""
        def one(piece: Piece):
            with contextlib.closing(self.tasks([piece])) as task:
                for p, o in task:
                    return work(p, o)
            return _SKIPPED

        return (r for r in in_order(one, pieces, threads) if r is not _SKIPPED)

    def each_group(self, groups: list[list[Piece]],
                   work: Callable[[list[tuple[Piece, OpenPiece | None]]], T], threads: int = 1) -> Iterator[T]:
        """``work`` of each group's (piece, open) pairs as ``tasks`` yields them (files a delete marked whole
        left out), in the groups' order, a group per worker (``in_order``): many small files then cost one
        task, not one each. Every file of a group is open while its work runs, and closed after."""
        def one(group: list[Piece]):
            opened: list[tuple[Piece, OpenPiece | None]] = []
            try:
                opened.extend(self.tasks(group, keep_open=True))
                return work(opened) if opened else _SKIPPED
            finally:
                for _p, o in opened:
                    if o is not None:
                        o.file.close()

        return (r for r in in_order(one, groups, threads) if r is not _SKIPPED)

    def read(self, pieces: list[Piece], how: Reading, counts: Counts | None = None) -> Iterator[pa.Table]:
        """Tables of ``how``'s columns, one per surviving blocklet (external files: one per piece)."""
        for piece, o in self.tasks(pieces):
            if o is None:
                yield how.external(self.storage, piece, counts, piece.deletes)
                continue
            for b in o.blocklets:
                table = how.blocklet(o.file, b, o.deletes, counts, piece.pages)
                if table is not None:
                    yield table

    def page_counts(self, pieces: list[Piece], expr: Expr, counts: Counts) -> None:
        """Add page totals and survivors of ``pieces`` to ``counts`` (reads only DataChunk3 headers)."""
        for piece, o in self.tasks(pieces):
            if o is None:
                counts.rows_read += piece.rows or 0  # no pages: a unit is read whole
                continue
            f = o.file
            for b in o.blocklets:
                keep, n = planned_pages(f, b, expr, piece.pages)
                counts.pages_read += len(keep)
                rows = f.page_row_counts[b]
                counts.rows_read += sum(rows[j] for j in keep) if len(rows) == n else (
                    f.blocklet_row_counts[b] if keep else 0)

    def positioned(self, o: OpenPiece, b: int, columns: list[str], schema: pa.Schema,
                   prune: Expr | None = None) -> tuple[pa.Table, np.ndarray, np.ndarray, np.ndarray] | None:
        """Blocklet ``b`` of ``o`` with where each row lives: (rows of ``columns`` in ``schema``'s types, page of
        each row, row in its page, live mask: False for rows committed deletes removed); pages ``prune`` rules
        out are not read (None when none is left)."""
        unit = read_unit(o.file, b, columns, pa.schema([schema.field(n) for n in columns]), prune, o.deletes,
                         o.piece.pages)
        if unit is None:
            return None
        t, got, mask = unit
        ks = np.asarray(got.page_rows, dtype=np.int64)
        page_idx = np.repeat(np.asarray(got.pages, dtype=np.int64), ks)
        row_idx = np.arange(len(page_idx), dtype=np.int64) - np.repeat(np.cumsum(ks) - ks, ks)
        if t.num_rows != len(page_idx):
            raise CarbonTableError(f"{o.file.path} blocklet {b}: pages hold {len(page_idx)} rows by the footer, "
                                   f"but {t.num_rows} were decoded")
        alive = np.ones(t.num_rows, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        return t, page_idx, row_idx, alive


def read_unit(f: CarbonDataFile, b: int, columns: list[str], target: pa.Schema, prune: Expr | None,
              deletes: FileDeletes | None, window: tuple[int, int] | None = None
              ) -> tuple[pa.Table, BlockletRows, np.ndarray | None] | None:
    """The one read of a blocklet: its pages ``prune`` leaves (None when none is left), of pages [first, end)
    only with a ``window`` (Piece.pages), decoded as ``target``, with the live mask of its committed deletes
    (None: every row lives)."""
    got = read_pruned(f, b, columns, prune, window)
    if got is None:
        return None
    t = conform(pa.Table.from_batches([got.batch]), target, f.path)
    mask = deletes.keep_mask(b, got.pages, got.page_rows) if deletes is not None and deletes.blocklet_has(b) else None
    return t, got, mask


def open_planned(path: str, storage: Storage, table_columns: list[ColumnSchema] | None,
                 table_path: str | None) -> CarbonDataFile:
    """A planned data file in the table's columns, from the trash when CLEAN FILES moved it since."""
    try:
        return CarbonDataFile(path, storage, table_columns)
    except FileNotFoundError:
        moved = find_in_trash(storage, table_path, path) if table_path is not None else None
        if moved is None:
            raise
        return CarbonDataFile(moved, storage, table_columns)


def check_deletes(fd: FileDeletes, f: CarbonDataFile) -> None:
    """Refuse deletes of rows the open data file ``f`` does not hold (``FileDeletes.check_shape`` against its
    footer)."""
    if fd.rows:
        fd.check_shape(f.path, f.page_row_counts, f.blocklet_row_counts)


def whole_rows(o: OpenPiece, target: pa.Schema) -> pa.Table:
    """Every live row of an open file, in file order, as exactly ``target`` (its columns read at once, so the
    file decodes its (blocklet, column) chunks in parallel)."""
    f = o.file
    t = conform(f.read(columns=target.names), target, f.path)
    keep = _live_rows(o)
    return t if keep is None else t.filter(pa.array(keep))


def whole_rows_of(opens: list[OpenPiece], target: pa.Schema) -> pa.Table:
    """``whole_rows`` of each of ``opens``, one after another, as one table: runs of files that share a column
    view decode together (``read_files``), their deleted rows dropped in one filter."""
    parts = []
    start = 0
    for i in range(1, len(opens) + 1):
        if i < len(opens) and shares_view(opens[start].file, opens[i].file):
            continue
        run = opens[start:i]
        first = run[0].file
        t = conform(read_files([o.file for o in run], target.names), target, first.path)
        keeps = [_live_rows(o) for o in run]
        if any(k is not None for k in keeps):
            t = t.filter(pa.array(np.concatenate([np.ones(o.file.num_rows, dtype=bool) if k is None else k
                                                  for o, k in zip(run, keeps, strict=True)])))
        parts.append(t)
        start = i
    return parts[0] if len(parts) == 1 else pa.concat_tables(parts)


def _live_rows(o: OpenPiece) -> np.ndarray | None:
    """Which rows of an open file its committed deletes leave, in file order (None: all of them)."""
    if o.deletes is None or not o.deletes.rows:
        return None
    f = o.file
    parts = []
    for b in range(f.num_blocklets):
        sizes = f.page_row_counts[b]
        m = o.deletes.keep_mask(b, list(range(len(sizes))), sizes)
        parts.append(np.ones(sum(sizes), dtype=bool) if m is None else np.asarray(m, dtype=bool))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)


def check_claim(piece: Piece, f: CarbonDataFile) -> None:
    """Refuse a data file whose footer disagrees with the index entry it was planned from (blocklet count,
    rows per blocklet, blocklet min/max): the plan may have skipped rows the file holds. Uses only what is
    already in memory: the planned entry and the footer read when ``f`` was opened."""
    check_index_claim(piece.claim, f)


def check_index_claim(claim: IndexClaim | None, f: CarbonDataFile) -> None:
    """``check_claim`` for a claim alone (reads of whole files, planned without pieces)."""
    if claim is None:
        return
    where = f"the index {claim.index} and the footer of {f.path}"
    if claim.file_size is not None and claim.file_size != f.size:
        raise CarbonFormatError(f"{where} disagree: the index records a file of {claim.file_size} bytes, the file "
                                f"has {f.size}", f.path)
    if claim.footer_offset is not None and claim.footer_offset != f.footer_offset:
        raise CarbonFormatError(f"{where} disagree: the index records the footer at offset {claim.footer_offset}, "
                                f"the file has it at {f.footer_offset}", f.path)
    if len(claim.rows) != f.num_blocklets:
        raise CarbonFormatError(f"{where} disagree: the index lists {len(claim.rows)} blocklets, the footer "
                                f"{f.num_blocklets}", f.path)
    footer_mm = list(f.footer.blocklet_index_list or [])
    for b, want in enumerate(claim.rows):
        found = f.blocklet_row_counts[b]
        if want != found:
            raise CarbonFormatError(f"{where} disagree on blocklet {b}: the index says {want} rows, the footer "
                                    f"{found}", f.path)
        mm = claim.min_max[b] if b < len(claim.min_max) else None
        got = footer_mm[b].min_max_index if b < len(footer_mm) and footer_mm[b] is not None else None
        if mm is not None and got is not None and mm != got:
            raise CarbonFormatError(f"{where} disagree on blocklet {b}: the index's min/max "
                                    f"{_mm_text(mm)} differ from the footer's {_mm_text(got)}", f.path)
    if claim.problem is not None:
        raise CarbonFormatError(f"the index {claim.index} is damaged for {f.path}: {claim.problem}", f.path)


def _mm_text(mm) -> str:
    return f"min {list(mm.min_values or [])[:4]!r} max {list(mm.max_values or [])[:4]!r}"


# A loose filter's rows are copied out of a unit only when it keeps fewer than this share of them: copying the
# kept rows then costs less than handing Spark the dropped ones (each crosses to the JVM and is filtered there).
LOOSE_COPY_BELOW = 0.75


class Reading:
    """How to read one unit (a carbondata blocklet, an external file's chosen units) of a pruned read:
    the columns needed, the page pruning and the exact filter. Stateless once built, so threads share it."""

    def __init__(self, expr: Expr, columns: list[str] | None, schema: pa.Schema, exact: bool | Expr = True,
                 table_columns: list[ColumnSchema] | None = None, loose: bool = False):
        self.table_columns = table_columns  # schema-evolution mapping of file columns (column_map)
        keep_rows = expr if exact is True else exact if isinstance(exact, Expr) else None
        self.keep_rows = None if isinstance(keep_rows, AlwaysTrue) else keep_rows
        # rows the kept predicate drops are filtered again downstream: copied out only when that pays
        self.copy_below = LOOSE_COPY_BELOW if loose else None
        self.expr = expr
        self.out_names = list(columns) if columns is not None else list(schema.names)
        self.prune = None if isinstance(expr, AlwaysTrue) else expr
        filter_cols = expr.columns() | (self.keep_rows.columns() if self.keep_rows is not None else set())
        self.need = list(dict.fromkeys(self.out_names + sorted(filter_cols)))
        self.need_schema = pa.schema([schema.field(n) for n in self.need])

    def _finish(self, table: pa.Table) -> pa.Table:
        if self.keep_rows is not None:
            table = filter_table(table, self.keep_rows, self.copy_below)
        return table.select(self.out_names) if self.need != self.out_names else table

    def external(self, storage: Storage, piece: Piece, counts: Counts | None = None,
                 fd: FileDeletes | None = None) -> pa.Table:
        table = read_external(storage, piece.path, piece.external, self.need, self.need_schema, piece.blocklets,
                              self.table_columns, fd)
        if counts is not None:
            counts.rows_read += table.num_rows
        return self._finish(table)

    def blocklet(self, f: CarbonDataFile, b: int, fd: FileDeletes | None = None,
                 counts: Counts | None = None, window: tuple[int, int] | None = None) -> pa.Table | None:
        """Blocklet ``b`` of the open file ``f`` (its pages in ``window`` only: Piece.pages) less the deleted
        rows of ``fd``; None when every page is pruned."""
        unit = read_unit(f, b, self.need, self.need_schema, self.prune, fd, window)
        if unit is None:
            return None
        table, got, mask = unit
        if counts is not None:
            counts.pages_read += len(got.pages)
            counts.rows_read += table.num_rows
        return self._finish(table if mask is None else table.filter(pa.array(mask)))


def read_pieces(storage: Storage, pieces: list[Piece], expr: Expr, columns: list[str] | None, schema: pa.Schema,
                exact: bool | Expr = True, counts: Counts | None = None,
                table_columns: list[ColumnSchema] | None = None, table_path: str | None = None,
                loose: bool = False) -> Iterator[pa.Table]:
    """Tables of ``columns`` (all when None) in ``schema``'s spelling and types, pruned by ``expr``; with
    ``exact=True`` only rows where ``expr`` is TRUE, with an expression only rows where that one is TRUE
    (it must imply nothing beyond ``expr``'s columns); ``loose``: those rows are a ceiling, not a promise
    (the caller filters again), so a unit whose rows nearly all pass comes whole. ``schema`` is the table
    schema (each piece carries its committed deletes); ``table_path``: a planned file CLEAN FILES has since
    moved is read from the trash."""
    reader = TaskReader(storage, table_columns, table_path)
    return reader.read(pieces, Reading(expr, columns, schema, exact, table_columns, loose), counts)


# ------------------------------------------------------------------------------------------ whole files
def read_external(storage: Storage, path: str, ref: ExternalRef, columns: list[str] | None, target: pa.Schema,
                  units=None, table_columns: list[ColumnSchema] | None = None,
                  deletes: FileDeletes | None = None) -> pa.Table:
    """Rows of one external file (chosen statistics units, None: all) as exactly ``target``, less the rows
    ``deletes`` (its committed delete deltas) removes. Its columns are matched by name; with
    ``table_columns`` also by a renamed column's earlier names, and a column added after the file reads as
    its default."""
    out, _units, _rows = _read_external(storage, path, ref, columns, target, units, table_columns)
    if deletes is None or not deletes.rows and not deletes.marked:
        return out
    return out.filter(pa.array(unit_keep_mask(deletes, _units, _unit_rows(path, out, _units, _rows))))


def external_positioned(storage: Storage, path: str, ref: ExternalRef, columns: list[str], target: pa.Schema,
                        units=None, table_columns: list[ColumnSchema] | None = None,
                        deletes: FileDeletes | None = None
                        ) -> tuple[pa.Table, np.ndarray, np.ndarray, np.ndarray]:
    """Rows of an external file with where each lives, as ``TaskReader.positioned`` gives them: (rows, unit
    of each row, row in its unit, live mask). Units are row groups / stripes (CSV, JSON: one, 0)."""
    out, us, maybe = _read_external(storage, path, ref, columns, target, units, table_columns)
    ns = _unit_rows(path, out, us, maybe)
    sizes = np.asarray(ns, dtype=np.int64)
    unit_idx = np.repeat(np.asarray(us, dtype=np.int64), sizes)
    row_idx = np.arange(len(unit_idx), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    alive = unit_keep_mask(deletes, us, ns) if deletes is not None else np.ones(out.num_rows, dtype=bool)
    return out, unit_idx, row_idx, alive


def _read_external(storage: Storage, path: str, ref: ExternalRef, columns: list[str] | None, target: pa.Schema,
                   units, table_columns: list[ColumnSchema] | None) -> tuple[pa.Table, list[int], list[int]]:
    f = open_reader(storage, path, ref.format, ref.options_dict, target)
    by_lower = {n.lower(): n for n in target.names}
    parts = {k: partition_scalar(v, target.field(by_lower[k.lower()]).type)
             for k, v in ref.partitions if k.lower() in by_lower}
    renames, absent = external_names(f.schema.names, table_columns)
    back = {t.lower(): s for s, t in renames.items()}
    wanted = columns if columns is not None else target.names
    data = f.read([back.get(c.lower(), c) for c in wanted], units)
    if renames:
        data = data.rename_columns([renames.get(n, n) for n in data.schema.names])
    out = to_table_schema(data, target, parts)
    out = fill_defaults(out, absent, {k.lower() for k in parts}) if absent else out
    chosen = list(units) if units is not None else list(range(max(len(f.units), 1)))
    return out, chosen, [f.units[u].rows if u < len(f.units) else None for u in chosen]  # type: ignore[misc]


def _unit_rows(path: str, out: pa.Table, chosen: list[int], rows: list[int | None]) -> list[int]:
    """Rows per chosen unit, checked against the rows read (deletes address rows by their place)."""
    if any(r is None for r in rows):
        if len(chosen) != 1:
            raise CarbonTableError(f"{path}: the reader gives no row count for units {chosen}, so deleted rows "
                                   "cannot be located in them")
        return [out.num_rows]
    if sum(rows) != out.num_rows:  # type: ignore[arg-type]
        raise CarbonTableError(f"{path}: units {chosen} hold {sum(rows)} rows by the file's metadata, but "  # type: ignore[arg-type]
                               f"{out.num_rows} were read")
    return rows  # type: ignore[return-value]


# ------------------------------------------------------------------------------------------ row positions
# Hidden columns the data source appends with option with_row_positions=true: where each row lives.
POSITION_FIELDS = (
    pa.field("__carbon_file", pa.string()),
    pa.field("__carbon_blocklet", pa.int32()),
    pa.field("__carbon_page", pa.int32()),
    pa.field("__carbon_row", pa.int32()),  # offset in the page, as delete deltas record it
)
POSITION_NAMES = tuple(f.name for f in POSITION_FIELDS)


def position_tables(storage: Storage, pieces: list[Piece], columns: list[str], schema: pa.Schema,
                    table_columns=None, keep=None, table_path: str | None = None):
    """Every live row of ``pieces`` (``columns`` of ``schema``) plus the position columns, one table per
    blocklet (external files: one per file, positions (unit, 0, row in unit)). No row is filtered here (Spark
    evaluates the user's predicate on these rows) unless ``keep`` (rows -> boolean array) says which rows
    are wanted. ``table_path``: a planned file CLEAN FILES has since moved is read from the trash, as rows are."""
    cols = list(columns) or [schema.names[0]]
    reader = TaskReader(storage, table_columns, table_path)
    for piece, o in reader.tasks(pieces):
        if o is None:
            t, units, rows, mask = external_positioned(storage, piece.path, piece.external, cols,
                                                       pa.schema([schema.field(n) for n in cols]), None,
                                                       table_columns, piece.deletes)
            mask = _kept(t, mask, keep)
            if not mask.all():
                t, units, rows = t.filter(pa.array(mask)), units[mask], rows[mask]
            yield _with_positions(t, columns, piece.path, units, np.zeros(len(units), dtype=np.int32), rows)
            continue
        for b in o.blocklets:
            t, page_idx, row_idx, mask = reader.positioned(o, b, cols, schema)  # type: ignore[misc]
            mask = _kept(t, mask, keep)
            if not mask.all():
                t, page_idx, row_idx = t.filter(pa.array(mask)), page_idx[mask], row_idx[mask]
            yield _with_positions(t, columns, piece.path, np.full(t.num_rows, b), page_idx, row_idx)


def _kept(t: pa.Table, alive: np.ndarray, keep) -> np.ndarray:
    if keep is None:
        return alive
    want = np.asarray(pc.fill_null(keep(t), False).to_numpy(zero_copy_only=False), dtype=bool)
    return alive & want


def _with_positions(t: pa.Table, columns: list[str], path: str, blocklets, pages, rows) -> pa.Table:
    n = t.num_rows
    t = t.select(list(columns)) if columns else t.select([])
    files = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([path])).cast(pa.string())
    for fld, arr in zip(POSITION_FIELDS, (files, pa.array(np.asarray(blocklets, dtype=np.int32)),
                                          pa.array(np.asarray(pages, dtype=np.int32)),
                                          pa.array(np.asarray(rows, dtype=np.int32))), strict=True):
        t = t.append_column(fld, arr)
    return t


# Threads that read files (``in_order``, a scan's units), one pool per thread count for the process: a read
# of a table of many small files, or a pruned read of two units, is over in a few milliseconds, and starting
# and joining a pool's threads per read cost about 1 ms of it (more on a busy machine).
_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()
_WORKER = threading.local()  # set in a reading thread: a read made within one gets a pool of its own


def _mark_worker() -> None:
    _WORKER.active = True


def reading_pool(threads: int) -> tuple[ThreadPoolExecutor, bool]:
    """(a pool of ``threads`` reading threads, whether it is the caller's own to shut down). The process's
    pool, except in a reading thread: a read within a read could otherwise wait for threads that wait for
    it. A caller of the shared pool waits for its own futures instead of shutting it down."""
    if getattr(_WORKER, "active", False):
        return ThreadPoolExecutor(threads, thread_name_prefix="carbon-table-read", initializer=_mark_worker), True
    with _POOLS_LOCK:
        pool = _POOLS.get(threads)
        if pool is None:
            pool = _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="carbon-table-read",
                                                        initializer=_mark_worker)
        return pool, False


def _forget_pools_after_fork() -> None:
    """A forked child has none of its parent's threads: it starts its own pools when it reads."""
    global _POOLS_LOCK
    _POOLS.clear()
    _POOLS_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_pools_after_fork)


def in_order(read_one: Callable, pieces: list, threads: int = 1) -> Iterator:
    """``read_one(piece)`` of each piece, in the pieces' order. Files are read ``threads`` at a time
    (``reading_pool``): a small file's fixed cost (opening, checks, the local dictionary) is Python, but its
    reads, decompression and kernels release the GIL, so another file's Python runs meanwhile. At most
    ``2 * threads`` results wait to be taken, so a large table's files are never all open (or decoded ahead)
    at once."""
    if threads < 2 or len(pieces) < 2:
        for piece in pieces:
            yield read_one(piece)
        return
    pool, own = reading_pool(threads)
    pending: deque[Future] = deque()
    try:
        for piece in pieces:
            pending.append(pool.submit(read_one, piece))
            if len(pending) >= 2 * threads:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for fut in pending:
            fut.cancel()
        if own:
            pool.shutdown(wait=True)
        else:
            wait(pending)  # none of this read's pieces is still being read when the caller goes on
