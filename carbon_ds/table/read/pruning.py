"""Min/max pruning at every level, before any data page is read, and the exact filtered read after it.

1. Segments and files: a table's committed ``.carbonindex`` / ``.carbonindexmerge`` files hold every
   blocklet's min/max and row count. A file's statistics are the merge of its blocklets', a segment's the
   merge of its files'. Parsed index files are cached by (path, size, mtime).
2. Blocklets: the same index entries (a bare folder, or a file no index names: its footer).
3. Pages: in the reader, only the filter columns' DataChunk3 headers are read first; their per-page
   ``DataChunk2.min_max`` decide the surviving pages, and only those pages of the needed columns are
   decoded. Every column of a blocklet shares its page boundaries, so rows stay aligned.
4. Exact filtering of the rows that survive (``read_pieces(..., exact=True)``): the bound predicate is
   evaluated on them with Arrow, so a result never depends on pruning having been tight.

The min/max visitor (``carbon_ds.expressions.minmax``) only ever answers "cannot match" when no row of a
unit can match, so pruning can cost a read but never a row.
"""

from __future__ import annotations

import posixpath
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa

from carbon_ds.errors import CarbonFormatError
from carbon_ds.expressions import AlwaysTrue, Expr, bind, filter_table, might_match, parse
from carbon_ds.expressions.minmax import ColumnStats
from carbon_ds.expressions.objects import to_expr
from carbon_ds.format.index import read_index, read_merge_index
from carbon_ds.format.structs import ColumnSchema
from carbon_ds.fs import Storage, basename, dirname
from carbon_ds.readers.carbondata import CarbonDataFile
from carbon_ds.readers.external import open_reader
from carbon_ds.readers.external.base import ExternalRef, partition_scalar
from carbon_ds.table.meta import column_map
from carbon_ds.table.meta.column_map import open_file
from carbon_ds.table.meta.conform import conform
from carbon_ds.table.meta.deltas import Deletes
from carbon_ds.table.meta.naming import INDEX_EXT, MERGE_INDEX_EXT
from carbon_ds.table.meta.trash import open_planned
from carbon_ds.table.read import stats as S
from carbon_ds.table.read.planning import read_external


# ------------------------------------------------------------------------------------------ the filter
def as_expr(filter, schema: pa.Schema) -> Expr:
    """A bound predicate from a SQL string, an expression tree, or (column, op, value) tuples (ANDed)."""

    if filter is None:
        return AlwaysTrue()
    if isinstance(filter, str):
        if not filter.strip():
            return AlwaysTrue()
        return bind(parse(filter), schema)
    return bind(to_expr(filter), schema)


# ------------------------------------------------------------------------------------------ counters
@dataclass
class Counts:
    """Units considered and units read at each level (what ``explain`` reports)."""

    segments_total: int = 0
    segments_read: int = 0
    files_total: int = 0
    files_read: int = 0
    blocklets_total: int = 0
    blocklets_read: int = 0
    pages_total: int = 0
    pages_read: int = 0
    rows_total: int = 0
    rows_read: int = 0  # rows in the pages that were decoded

    def add(self, other: Counts) -> None:
        for k in self.__dataclass_fields__:
            setattr(self, k, getattr(self, k) + getattr(other, k))

    def as_dict(self) -> dict:
        out = {}
        for level in ("segments", "files", "blocklets", "pages", "rows"):
            total, read = getattr(self, f"{level}_total"), getattr(self, f"{level}_read")
            out[level] = {"total": total, "read": read, "skipped": total - read}
        return out


@dataclass(frozen=True)
class IndexClaim:
    """What an index file said of one data file when it was planned, checked against the file's footer when
    the file is opened: a disagreement means pruning by the index may have skipped rows without a sign."""

    index: str  # the .carbonindex / .carbonindexmerge file
    rows: tuple[int, ...]  # rows of every blocklet
    min_max: tuple  # every blocklet's BlockletMinMaxIndex (None when the entry has none)


@dataclass(frozen=True)
class Piece:
    """One file to read and which of its blocklets (None: every one)."""

    path: str
    blocklets: tuple[int, ...] | None
    segment_id: str | None = None
    rows: int | None = None  # rows of those blocklets when the index says so
    external: ExternalRef | None = None  # a non-carbondata file; ``blocklets`` are then its units
    claim: IndexClaim | None = field(default=None, compare=False, repr=False)


@dataclass
class Plan:
    pieces: list[Piece] = field(default_factory=list)
    counts: Counts = field(default_factory=Counts)
    exact_rows: int | None = 0  # rows of all surviving blocklets, None when some count is unknown
    partitions: dict | None = None  # HASH/RANGE/LIST partition ids read / skipped (explain)


# ------------------------------------------------------------------------------------------ index files
@dataclass
class FileEntry:
    """What the index knows of one data file: per-blocklet statistics and row counts."""

    blocklets: list[S.Stats]
    rows: list[int | None]
    pages: list[int] = field(default_factory=list)
    external: ExternalRef | None = None  # set for a non-carbondata file (units: row groups / stripes)
    source: str | None = None  # the index file these entries come from (None: the data file's footer)
    min_max: list = field(default_factory=list)  # each blocklet's raw BlockletMinMaxIndex, as the index has it

    def claim(self) -> IndexClaim | None:
        """The index's word on the file, when it knows every blocklet's rows (entries written before
        CarbonData kept per-blocklet info describe a whole file and are not checked)."""
        if self.source is None or self.external is not None or any(r is None for r in self.rows):
            return None
        return IndexClaim(self.source, tuple(self.rows), tuple(self.min_max))  # type: ignore[arg-type]


_CACHE: dict[tuple[str, int, int | None], dict[str, FileEntry]] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_MAX = 4096


def _entries_of(header, entries, table_columns: list[ColumnSchema] | None = None,
                source: str | None = None) -> dict[str, FileEntry]:
    columns = list(header.table_columns or [])
    absent: list[ColumnSchema] = []
    if table_columns is not None and not column_map.is_identity(columns, table_columns):
        columns, absent = column_map.view(columns, table_columns)  # statistics under the table's names
    trusted = S.trusted_columns(columns)
    out: dict[str, FileEntry] = {}
    for e in entries:
        rows = e.blocklet_info.num_rows if e.blocklet_info is not None else None
        mm = e.block_index.min_max_index if e.block_index is not None else None
        fe = out.setdefault(basename(e.file_name), FileEntry([], [], source=source))
        fe.min_max.append(mm)
        fe.blocklets.append({**S.unit_stats(columns, trusted, mm, rows), **column_map.default_stats(absent, rows)})
        fe.rows.append(rows)
        fe.pages.append(int(e.blocklet_info.number_number_of_pages or 0) if e.blocklet_info is not None else 0)
    return out


def read_index_file(storage: Storage, path: str, size: int, mtime: int | None,
                    table_columns: list[ColumnSchema] | None = None) -> dict[str, FileEntry]:
    """Data file name -> its index entries, for one ``.carbonindex`` or ``.carbonindexmerge`` (cached);
    with ``table_columns`` the statistics are named by the table's current columns."""
    key = (storage.uri(path), size, mtime, column_map.table_key(table_columns))
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is not None:
        return hit
    out: dict[str, FileEntry] = {}
    if path.endswith(MERGE_INDEX_EXT):
        for _name, header, entries in read_merge_index(path, storage):
            for k, v in _entries_of(header, entries, table_columns, path).items():
                out.setdefault(k, v)
    else:
        header, entries = read_index(path, storage)
        out = _entries_of(header, entries, table_columns, path)
    with _CACHE_LOCK:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[key] = out
    return out


def folder_index(storage: Storage, folder: str, table_columns: list[ColumnSchema] | None = None
                 ) -> dict[str, FileEntry]:
    """Every data file named by the index files in ``folder`` (merge index files first)."""
    found: dict[str, FileEntry] = {}
    listing = [f for f in storage.list(folder) if f.path.endswith((INDEX_EXT, MERGE_INDEX_EXT))]
    listing.sort(key=lambda f: (not f.path.endswith(MERGE_INDEX_EXT), f.path))
    for f in listing:
        try:
            for name, entry in read_index_file(storage, f.path, f.size, f.mtime_ns, table_columns).items():
                found.setdefault(name, entry)
        except CarbonFormatError:
            continue  # an unreadable index only costs pruning: the file's footer is used instead
    return found


def _footer_entry(storage: Storage, path: str, table_columns: list[ColumnSchema] | None = None) -> FileEntry:
    f = open_file(path, storage, table_columns)
    try:
        columns = f.columns
        absent = f.absent if isinstance(f, column_map.MappedFile) else []
        trusted = S.trusted_columns(columns)
        blocks = list(f.footer.blocklet_index_list or [])
        stats, rows, pages = [], [], []
        for b in range(f.num_blocklets):
            mm = blocks[b].min_max_index if b < len(blocks) and blocks[b] is not None else None
            n = f.blocklet_rows(b)
            stats.append({**S.unit_stats(columns, trusted, mm, n), **column_map.default_stats(absent, n)})
            rows.append(n)
            pages.append(int(f.blocklet_info(b).number_number_of_pages or 0))
        return FileEntry(stats, rows, pages)
    finally:
        f.close()


# ------------------------------------------------------------------------------------------ planning
def _prune_file(path: str, entry: FileEntry, expr: Expr, segment_id: str | None, counts: Counts,
                plan: Plan) -> bool:
    _count_all(entry, counts)
    if not might_match(expr, S.lookup(S.merge(entry.blocklets))):
        return False
    keep = [i for i, st in enumerate(entry.blocklets) if might_match(expr, S.lookup(st))]
    if not keep:
        return False
    counts.files_read += 1
    counts.blocklets_read += len(keep)
    rows = [entry.rows[i] for i in keep]
    n = None if any(r is None for r in rows) else sum(rows)  # type: ignore[arg-type]
    if plan.exact_rows is not None:
        plan.exact_rows = None if n is None else plan.exact_rows + n
    blocklets = None if len(keep) == len(entry.blocklets) else tuple(keep)
    plan.pieces.append(Piece(path, blocklets, segment_id, n, entry.external, entry.claim()))
    return True


def _count_all(entry: FileEntry, counts: Counts) -> None:
    counts.files_total += 1
    counts.blocklets_total += len(entry.blocklets)
    counts.rows_total += sum(r or 0 for r in entry.rows)
    counts.pages_total += sum(entry.pages)


def _external_entry(storage: Storage, path: str, ref: ExternalRef, schema: pa.Schema | None,
                    table_columns: list[ColumnSchema] | None = None) -> FileEntry:
    """Statistics units of a non-carbondata file (Parquet row groups, ORC stripes; CSV/JSON: one unit
    without statistics, not even opened), each also knowing the segment's partition values."""

    part: S.Stats = {}
    by_lower = {n.lower(): n for n in (schema.names if schema is not None else [])}
    for k, v in ref.partitions:
        if k.lower() in by_lower:
            value = partition_scalar(v, schema.field(by_lower[k.lower()]).type).as_py()  # type: ignore[union-attr]
            part[k.lower()] = ColumnStats(min=value, max=value, null_count=0 if value is not None else None)
    if ref.format in ("csv", "json"):
        return FileEntry([dict(part)], [None], [], ref)
    f = open_reader(storage, path, ref.format, ref.options_dict, schema)
    renames, absent = column_map.external_names(f.schema.names, table_columns)
    names = {s.lower(): t.lower() for s, t in renames.items()}
    gone = {c.column_name.lower() for c in absent}
    units = [{**{names.get(k, k): v for k, v in u.stats.items() if k not in gone or k in names},
              **column_map.default_stats(absent, u.rows), **part} for u in f.units] or [dict(part)]
    rows = [u.rows for u in f.units] or [0]
    return FileEntry(units, rows, [], ref)


def plan_files(storage: Storage, files: list[tuple[str, str | None]], expr: Expr,
               use_index: bool = True, external: dict | None = None, schema: pa.Schema | None = None,
               table_columns: list[ColumnSchema] | None = None) -> Plan:
    """Prune (segment, file, blocklet) for ``files`` = [(path, segment id or None), ...]; files in
    ``external`` (path -> ExternalRef) are pruned by their own units' statistics (row groups, stripes)."""
    external = external or {}
    plan = Plan()
    counts = plan.counts
    by_segment: dict[str | None, list[str]] = {}
    for path, seg in files:
        by_segment.setdefault(seg, []).append(path)
    folders: dict[str, dict[str, FileEntry]] = {}
    for seg, paths in by_segment.items():
        entries = []
        for path in paths:
            entry = None
            if path in external:
                entries.append((path, _external_entry(storage, path, external[path], schema, table_columns)))
                continue
            if use_index:
                folder = dirname(path)
                if folder not in folders:
                    folders[folder] = folder_index(storage, folder, table_columns)
                entry = folders[folder].get(posixpath.basename(path))
            if entry is None:
                entry = _footer_entry(storage, path, table_columns)
            entries.append((path, entry))
        if seg is not None:
            counts.segments_total += 1
            seg_stats = S.merge(b for _p, e in entries for b in e.blocklets)
            if not might_match(expr, S.lookup(seg_stats)):
                for _p, e in entries:  # still count what the segment held
                    _count_all(e, counts)
                continue
        read_any = False
        for path, entry in entries:
            read_any |= _prune_file(path, entry, expr, seg, counts, plan)
        if seg is not None and read_any:
            counts.segments_read += 1
    return plan


def check_claim(piece: Piece, f: CarbonDataFile) -> None:
    """Refuse a data file whose footer disagrees with the index entry it was planned from (blocklet count,
    rows per blocklet, blocklet min/max): the plan may have skipped rows the file holds. Uses only what is
    already in memory: the planned entry and the footer read when ``f`` was opened."""
    claim = piece.claim
    if claim is None:
        return
    where = f"the index {claim.index} and the footer of {f.path}"
    if len(claim.rows) != f.num_blocklets:
        raise CarbonFormatError(f"{where} disagree: the index lists {len(claim.rows)} blocklets, the footer "
                                f"{f.num_blocklets}", f.path)
    footer_mm = list(f.footer.blocklet_index_list or [])
    for b, want in enumerate(claim.rows):
        found = f.blocklet_rows(b)
        if want != found:
            raise CarbonFormatError(f"{where} disagree on blocklet {b}: the index says {want} rows, the footer "
                                    f"{found}", f.path)
        mm = claim.min_max[b] if b < len(claim.min_max) else None
        got = footer_mm[b].min_max_index if b < len(footer_mm) and footer_mm[b] is not None else None
        if mm is not None and got is not None and mm != got:
            raise CarbonFormatError(f"{where} disagree on blocklet {b}: the index's min/max "
                                    f"{_mm_text(mm)} differ from the footer's {_mm_text(got)}", f.path)


def _mm_text(mm) -> str:
    return f"min {list(mm.min_values or [])[:4]!r} max {list(mm.max_values or [])[:4]!r}"


# ------------------------------------------------------------------------------------------ pages
def surviving_pages(f, blocklet: int, expr: Expr, hold: bool = False) -> tuple[list[int], int]:
    """(pages of ``blocklet`` that might match, page count), from the filter columns' page min/max; with
    ``hold`` the file keeps those columns' chunks for the decode that follows (``f.release`` drops them)."""
    names = {c.lower() for c in expr.columns()}
    columns = f.columns
    trusted = S.trusted_columns(columns)
    per_column: dict[str, list[S.Stats]] = {}
    n_pages = None
    for i, c in enumerate(columns):
        if c.column_name.lower() not in names or not trusted[i]:
            continue
        chunk = f.read_column_chunk(blocklet, i, hold)
        pages = chunk.data_chunk_list or []
        n_pages = len(pages)
        per_column[c.column_name.lower()] = [S.unit_stats([c], [True], dc2.min_max, None) for dc2 in pages]
    if n_pages is None:
        n = f.page_count(blocklet)
        return list(range(n)), n
    keep = []
    for j in range(n_pages):
        merged: S.Stats = {}
        for col_pages in per_column.values():
            if j < len(col_pages):
                merged.update(col_pages[j])
        if might_match(expr, S.lookup(merged)):
            keep.append(j)
    return keep, n_pages


def _page_rows(f, blocklet: int, n_pages: int) -> list[int] | None:
    rows = f.blocklet_info(blocklet).row_count_in_page
    return list(rows) if rows is not None and len(rows) == n_pages else None


# ------------------------------------------------------------------------------------------ reading
def read_pieces(
    storage: Storage,
    pieces: list[Piece],
    expr: Expr,
    columns: list[str] | None,
    schema: pa.Schema,
    exact: bool | Expr = True,
    counts: Counts | None = None,
    deletes: Deletes | None = None,
    table_columns: list[ColumnSchema] | None = None,
    table_path: str | None = None,
) -> Iterator[pa.Table]:
    """Tables of ``columns`` (all when None) in ``schema``'s spelling and types, pruned by ``expr``; with
    ``exact=True`` only rows where ``expr`` is TRUE, with an expression only rows where that one is TRUE
    (it must imply nothing beyond ``expr``'s columns). ``schema`` is the table schema. ``deletes``
    (carbon_ds.table.deltas.Deletes) drops rows removed by committed delete deltas. With the table's
    ``table_path`` a planned file CLEAN FILES has since moved is read from the trash."""
    how = Reading(expr, columns, schema, exact, table_columns)
    for piece in pieces:
        if piece.external is not None:
            yield how.external(storage, piece, counts)
            continue
        fd = deletes.lookup(piece.path, piece.segment_id) if deletes is not None else None
        if fd is not None and fd.marked:
            continue
        f = open_planned(piece.path, storage, table_columns, table_path)
        try:
            check_claim(piece, f)
            for b in piece.blocklets if piece.blocklets is not None else range(f.num_blocklets):
                table = how.blocklet(f, b, fd, counts)
                if table is not None:
                    yield table
        finally:
            f.close()


class Reading:
    """How to read one unit (a carbondata blocklet, an external file's chosen units) of a pruned read:
    the columns needed, the page pruning and the exact filter. Stateless once built, so threads share it."""

    def __init__(self, expr: Expr, columns: list[str] | None, schema: pa.Schema, exact: bool | Expr = True,
                 table_columns: list[ColumnSchema] | None = None):
        self.table_columns = table_columns  # schema-evolution mapping of file columns (column_map)
        keep_rows = expr if exact is True else exact if isinstance(exact, Expr) else None
        self.keep_rows = None if isinstance(keep_rows, AlwaysTrue) else keep_rows
        self.expr = expr
        self.out_names = list(columns) if columns is not None else list(schema.names)
        self.prune = not isinstance(expr, AlwaysTrue)
        filter_cols = expr.columns() | (self.keep_rows.columns() if self.keep_rows is not None else set())
        self.need = list(dict.fromkeys(self.out_names + sorted(filter_cols)))
        self.need_schema = pa.schema([schema.field(n) for n in self.need])

    def _finish(self, table: pa.Table) -> pa.Table:
        if self.keep_rows is not None:
            table = filter_table(table, self.keep_rows)
        return table.select(self.out_names) if self.need != self.out_names else table

    def external(self, storage: Storage, piece: Piece, counts: Counts | None = None) -> pa.Table:
        table = read_external(storage, piece.path, piece.external, self.need, self.need_schema, piece.blocklets,
                              self.table_columns)
        if counts is not None:
            counts.rows_read += table.num_rows
        return self._finish(table)

    def blocklet(self, f: CarbonDataFile, b: int, fd=None, counts: Counts | None = None) -> pa.Table | None:
        """Blocklet ``b`` of the open file ``f`` less the deleted rows of ``fd``; None when every page is pruned."""
        if not self.prune:
            if counts is not None:
                counts.pages_read += f.page_count(b)
            return self._pages(f, b, None, fd, counts)
        # the filter columns' chunks read for page pruning are decoded from the same bytes and headers
        keep, n = surviving_pages(f, b, self.expr, hold=True)
        try:
            if counts is not None:
                counts.pages_read += len(keep)
            if not keep:
                return None
            return self._pages(f, b, keep if len(keep) < n else None, fd, counts)
        finally:
            f.release(b)

    def _pages(self, f: CarbonDataFile, b: int, keep: list[int] | None, fd, counts: Counts | None) -> pa.Table:
        batch = f.read_blocklet(b, self.need, pages=keep) if keep is not None else f.read_blocklet(b, self.need)
        if counts is not None:
            counts.rows_read += batch.num_rows
        if fd is not None and fd.blocklet_has(b):
            sizes = f.page_rows(b)
            mask = fd.keep_mask(b, keep if keep is not None else list(range(len(sizes))),
                                [sizes[j] for j in keep] if keep is not None else sizes)
            if mask is not None:
                batch = batch.filter(pa.array(mask))
        return self._finish(conform(pa.Table.from_batches([batch]), self.need_schema, f.path))


def count_pages(storage: Storage, pieces: list[Piece], expr: Expr, counts: Counts,
                table_columns: list[ColumnSchema] | None = None) -> None:
    """Add page totals and survivors of ``pieces`` to ``counts`` (reads only DataChunk3 headers)."""

    for piece in pieces:
        if piece.external is not None:
            counts.rows_read += piece.rows or 0  # no pages: a unit is read whole
            continue
        f = open_file(piece.path, storage, table_columns)
        try:
            check_claim(piece, f)
            for b in piece.blocklets if piece.blocklets is not None else range(f.num_blocklets):
                if isinstance(expr, AlwaysTrue):
                    n = f.page_count(b)
                    keep = list(range(n))
                else:
                    keep, n = surviving_pages(f, b, expr)
                counts.pages_read += len(keep)
                rows = _page_rows(f, b, n)
                counts.rows_read += sum(rows[j] for j in keep) if rows is not None else (
                    f.blocklet_rows(b) if keep else 0)
        finally:
            f.close()
