"""Min/max pruning at every level, before any data page is read, and the exact filtered read after it.

1. Segments and files: a table's committed ``.carbonindex`` / ``.carbonindexmerge`` files hold every
   blocklet's min/max and row count. A file's statistics are the merge of its blocklets', a segment's the
   merge of its files'. Parsed index files are cached by (path, size, mtime).
2. Blocklets: the same index entries (a bare folder, or a file no index names: its footer).
3. Pages: the file reader prunes its own pages by their min/max (readers.pages) when the pieces are read
   (table.read.task_reader), which also filters the surviving rows exactly with Arrow, so a result never
   depends on pruning having been tight.

The min/max visitor (``carbon_ds.expressions.might_match``) only ever answers "cannot match" when no row of a
unit can match, so pruning can cost a read but never a row.
"""

from __future__ import annotations

import posixpath
import threading
from dataclasses import dataclass, field

import pyarrow as pa

from carbon_ds.errors import CarbonFormatError
from carbon_ds.expressions import AlwaysTrue, Expr, bind, might_match, parse
from carbon_ds.expressions.might_match import ColumnStats
from carbon_ds.expressions.objects import to_expr
from carbon_ds.format.column_view import is_identity, view
from carbon_ds.format.index import read_index, read_merge_index
from carbon_ds.format.thrift.structs import ColumnSchema
from carbon_ds.fs import Storage, basename, dirname
from carbon_ds.readers import column_stats as S
from carbon_ds.readers.carbon_file import CarbonDataFile
from carbon_ds.readers.external import open_reader
from carbon_ds.readers.external.base import ExternalRef, partition_scalar
from carbon_ds.table.meta.caches.committed_cache import CommittedCache
from carbon_ds.table.meta.caches.signed_cache import SignedCache, sign
from carbon_ds.table.meta.files.deltas import Deletes, FileDeletes
from carbon_ds.table.meta.files.naming import COLUMNAR, INDEX_EXT, MERGE_INDEX_EXT
from carbon_ds.table.meta.handle import DataFile
from carbon_ds.table.meta.schema import column_map


# ------------------------------------------------------------------------------------------ the filter
def as_expr(filter, schema: pa.Schema, where: str | None = None) -> Expr:
    """A bound predicate from a SQL string, an expression tree, or (column, op, value) tuples (ANDed);
    ``where``: the table whose schema ``schema`` is, for errors."""

    if filter is None:
        return AlwaysTrue()
    if isinstance(filter, str):
        if not filter.strip():
            return AlwaysTrue()
        return bind(parse(filter), schema, where)
    return bind(to_expr(filter), schema, where)


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
    footer_offset: int | None = None  # where the file's footer starts, as the index records it
    file_size: int | None = None  # the file's size in bytes, when the index records it
    problem: str | None = None  # the index entries contradict themselves (FileEntry.problem)


@dataclass(frozen=True)
class Piece:
    """One file to read and which of its blocklets (None: every one), with what the plan knows of it: its
    committed deletes (resolved once when planned, None: nothing deleted) travel with it to the task that
    reads it, which never looks them up again."""

    path: str
    blocklets: tuple[int, ...] | None
    segment_id: str | None = None
    rows: int | None = None  # rows of those blocklets when the index says so
    external: ExternalRef | None = None  # a non-carbondata file; ``blocklets`` are then its units
    claim: IndexClaim | None = field(default=None, compare=False, repr=False)
    deletes: FileDeletes | None = field(default=None, compare=False, repr=False)
    # pages [first, end) of its one blocklet: a blocklet too large for one task is read by several
    pages: tuple[int, int] | None = None


@dataclass
class Plan:
    pieces: list[Piece] = field(default_factory=list)
    counts: Counts = field(default_factory=Counts)
    exact_rows: int | None = 0  # rows of all surviving blocklets, None when some count is unknown
    partitions: dict | None = None  # HASH/RANGE/LIST partition ids read / skipped (explain)
    # each piece's index entry by path (kept on the driver: pieces travel to tasks without their statistics)
    entries: dict[str, FileEntry] = field(default_factory=dict, repr=False)


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
    page_rows: list[list[int] | None] = field(default_factory=list)  # each blocklet's rows per page (None: unknown)
    file_rows: int | None = None  # the whole file's rows, which every entry of the file repeats
    footer_offset: int | None = None
    file_size: int | None = None
    # the entries contradict themselves: the file is refused when it is read (a file the index names but the
    # table does not list, a leftover of a failed task, is never opened, so the index is not refused whole)
    problem: str | None = None
    _merged: S.Stats | None = field(default=None, repr=False, compare=False)
    # made once per entry (entries are cached and shared): planning thousands of segments repeats them
    _claim: tuple[IndexClaim | None] | None = field(default=None, repr=False, compare=False)
    _totals: tuple[int, int, int] | None = field(default=None, repr=False, compare=False)

    def file_stats(self) -> S.Stats:
        """The whole file's statistics (its blocklets' merged), made once: index entries are cached."""
        if self._merged is None:
            self._merged = S.merge(self.blocklets)
        return self._merged

    def claim(self) -> IndexClaim | None:
        """The index's word on the file, when it knows every blocklet's rows (entries written before
        CarbonData kept per-blocklet info describe a whole file and are not checked)."""
        if self._claim is None:
            if self.source is None or self.external is not None or any(r is None for r in self.rows):
                self._claim = (None,)
            else:
                self._claim = (IndexClaim(self.source, tuple(self.rows), tuple(self.min_max),  # type: ignore[arg-type]
                                          self.footer_offset, self.file_size, self.problem),)
        return self._claim[0]

    def totals(self) -> tuple[int, int, int]:
        """(blocklets, rows, pages) of the file, as the counters of a plan add them."""
        if self._totals is None:
            self._totals = (len(self.blocklets), sum(r or 0 for r in self.rows), sum(self.pages))
        return self._totals


_CACHE: dict[tuple[str, int, int | None], dict[str, FileEntry]] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_MAX = 4096


def _entries_of(header, entries, table_columns: list[ColumnSchema] | None = None,
                source: str | None = None) -> dict[str, FileEntry]:
    columns = list(header.table_columns or [])
    absent: list[ColumnSchema] = []
    if table_columns is not None and not is_identity(columns, table_columns):
        columns, absent = view(columns, table_columns)  # statistics under the table's names
    trusted = S.trusted_columns(columns)
    out: dict[str, FileEntry] = {}
    for e in entries:
        rows = e.blocklet_info.num_rows if e.blocklet_info is not None else None
        mm = e.block_index.min_max_index if e.block_index is not None else None
        name = basename(e.file_name)
        fe = out.get(name)
        if fe is None:
            fe = out[name] = FileEntry([], [], source=source, file_rows=e.num_rows, footer_offset=e.offset,
                                       file_size=e.file_size)
        elif (fe.file_rows, fe.footer_offset, fe.file_size) != (e.num_rows, e.offset, e.file_size):
            fe.problem = fe.problem or (
                f"its entries disagree on the file: rows {fe.file_rows} and {e.num_rows}, footer offset "
                f"{fe.footer_offset} and {e.offset}, size {fe.file_size} and {e.file_size}")
        fe.min_max.append(mm)
        fe.blocklets.append({**S.unit_stats(columns, trusted, mm, rows), **column_map.default_stats(absent, rows)})
        fe.rows.append(rows)
        fe.pages.append(int(e.blocklet_info.number_number_of_pages or 0) if e.blocklet_info is not None else 0)
        per_page = e.blocklet_info.row_count_in_page if e.blocklet_info is not None else None
        fe.page_rows.append([int(r) for r in per_page] if per_page else None)
    for fe in out.values():
        # every entry repeats the file's row count: its blocklets must add up to it
        if all(r is not None for r in fe.rows) and sum(fe.rows) != fe.file_rows:  # type: ignore[arg-type]
            fe.problem = fe.problem or (f"its blocklets of {fe.rows[:8]} rows do not add up to the file's "
                                        f"{fe.file_rows} rows its entries record")
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


# What a folder's index files say, while the folder and those files are unchanged (meta.caches.signed_cache): a
# query over thousands of segments lists and reads none of them again.
_FOLDERS = SignedCache(max_entries=100_000)
# The same by the folder's segment's tablestatus entry (meta.caches.committed_cache), looked up without a stat.
_COMMITTED = CommittedCache(max_entries=100_000)


def folder_index(storage: Storage, folder: str, table_columns: list[ColumnSchema] | None = None,
                 columns_key: tuple | None = None, committed: tuple | None = None) -> dict[str, FileEntry]:
    """Every data file named by the index files in ``folder`` (merge index files first); the result is
    shared (cached): callers do not change it. ``columns_key``: ``column_map.table_key(table_columns)``,
    when the caller has it (a plan over thousands of folders makes it once). ``committed``: the
    ``committed_cache.segment_key`` of the committed segment whose own folder ``folder`` is."""
    key = (storage.uri(folder), column_map.table_key(table_columns) if columns_key is None else columns_key)
    if committed is not None:
        hit = _COMMITTED.get((committed, key))
        if hit is not None:
            return hit
    hit = _FOLDERS.get(storage, key)
    if hit is not None:
        if committed is not None:
            _COMMITTED.put((committed, key), hit)
        return hit
    before = sign(storage, [folder])
    found: dict[str, FileEntry] = {}
    listing = [f for f in storage.list(folder) if f.path.endswith((INDEX_EXT, MERGE_INDEX_EXT))]
    listing.sort(key=lambda f: (not f.path.endswith(MERGE_INDEX_EXT), f.path))
    for f in listing:
        try:
            for name, entry in read_index_file(storage, f.path, f.size, f.mtime_ns, table_columns).items():
                found.setdefault(name, entry)
        except CarbonFormatError:
            continue  # an unreadable index only costs pruning: the file's footer is used instead
    signed = sign(storage, [f.path for f in listing])
    if before is not None and signed is not None:
        _FOLDERS.put_signed(key, before + signed, found)
        if committed is not None:
            _COMMITTED.put((committed, key), found)
    return found


def index_claims(storage: Storage, files: list[tuple[str, str | None]],
                 table_columns: list[ColumnSchema] | None = None,
                 committed: dict[str, tuple] | None = None) -> dict[str, IndexClaim]:
    """What the index files in each file's folder say of it (path -> claim), for reads that take files
    whole and do not plan by the index: the footer is still checked against it when the file is opened.
    ``committed``: as ``plan_files`` takes it."""
    folders: dict[str, dict[str, FileEntry]] = {}
    out: dict[str, IndexClaim] = {}
    columns_key = column_map.table_key(table_columns)
    committed = committed or {}
    for path, seg in files:
        folder = dirname(path)
        if folder not in folders:
            folders[folder] = folder_index(storage, folder, table_columns, columns_key,
                                           committed.get(seg) if seg is not None else None)
        entry = folders[folder].get(posixpath.basename(path))
        claim = entry.claim() if entry is not None else None
        if claim is not None:
            out[path] = claim
    return out


def file_pieces(storage: Storage, files: list[DataFile], table_columns: list[ColumnSchema] | None = None,
                deletes: Deletes | None = None, claims: bool = True,
                committed: dict[str, tuple] | None = None) -> list[Piece]:
    """A whole-file piece of each of ``files``, for reads that take files whole without pruning (a table's
    every row, compaction): each carries its committed ``deletes`` and, with ``claims``, what the index
    says of a carbondata file (its footer is checked against it when it is opened). ``committed``: as
    ``plan_files`` takes it."""
    columnar = [(f.path, f.segment_id) for f in files if f.file_format == COLUMNAR]
    said = index_claims(storage, columnar, table_columns, committed) if claims else {}
    return [Piece(f.path, None, f.segment_id, None, f.external if f.file_format != COLUMNAR else None,
                  said.get(f.path), file_deletes(deletes, f.path, f.segment_id)) for f in files]


def _footer_entry(storage: Storage, path: str, table_columns: list[ColumnSchema] | None = None) -> FileEntry:
    f = CarbonDataFile(path, storage, table_columns)
    try:
        columns = f.columns
        absent = f.absent
        trusted = S.trusted_columns(columns)
        blocks = list(f.footer.blocklet_index_list or [])
        stats, rows, pages = [], [], []
        for b in range(f.num_blocklets):
            mm = blocks[b].min_max_index if b < len(blocks) and blocks[b] is not None else None
            n = f.blocklet_rows(b)
            stats.append({**S.unit_stats(columns, trusted, mm, n), **column_map.default_stats(absent, n)})
            rows.append(n)
            pages.append(int(f.blocklet_info(b).number_number_of_pages or 0))
        return FileEntry(stats, rows, pages, page_rows=[f.page_rows(b) for b in range(f.num_blocklets)])
    finally:
        f.close()


# ------------------------------------------------------------------------------------------ planning
def _prune_file(path: str, entry: FileEntry, expr: Expr, segment_id: str | None, counts: Counts,
                plan: Plan, deletes: Deletes | None) -> bool:
    _count_all(entry, counts)
    if isinstance(expr, AlwaysTrue):  # nothing to prune by (an unfiltered read or count): the whole file
        return _keep_whole(path, entry, segment_id, counts, plan, deletes)
    if not might_match(expr, S.lookup(entry.file_stats())):
        return False
    keep = [i for i, st in enumerate(entry.blocklets) if might_match(expr, S.lookup(st))]
    if not keep:
        return False
    counts.files_read += 1
    counts.blocklets_read += len(keep)
    rows = [entry.rows[i] for i in keep]
    # rows of entries that contradict themselves are not taken: a count then opens the file, which is refused
    n = None if entry.problem is not None or any(r is None for r in rows) else sum(rows)  # type: ignore[arg-type]
    if plan.exact_rows is not None:
        plan.exact_rows = None if n is None else plan.exact_rows + n
    blocklets = None if len(keep) == len(entry.blocklets) else tuple(keep)
    plan.pieces.append(Piece(path, blocklets, segment_id, n, entry.external, entry.claim(),
                             file_deletes(deletes, path, segment_id)))
    plan.entries[path] = entry
    return True


def _keep_whole(path: str, entry: FileEntry, segment_id: str | None, counts: Counts, plan: Plan,
                deletes: Deletes | None) -> bool:
    """``_prune_file`` of a file none of whose blocklets is pruned, from the entry's totals."""
    blocklets = len(entry.blocklets)
    if not blocklets:
        return False
    counts.files_read += 1
    counts.blocklets_read += blocklets
    n = None if entry.problem is not None or None in entry.rows else entry.totals()[1]
    if plan.exact_rows is not None:
        plan.exact_rows = None if n is None else plan.exact_rows + n
    plan.pieces.append(Piece(path, None, segment_id, n, entry.external, entry.claim(),
                             file_deletes(deletes, path, segment_id)))
    plan.entries[path] = entry
    return True


def file_deletes(deletes: Deletes | None, path: str, segment_id: str | None) -> FileDeletes | None:
    """The committed deletes of one planned file (None: nothing deleted). Only a file the update status
    names has its delta files read, and only once it survived pruning."""
    return deletes.lookup(path, segment_id) if deletes is not None else None


def _count_all(entry: FileEntry, counts: Counts) -> None:
    blocklets, rows, pages = entry.totals()
    counts.files_total += 1
    counts.blocklets_total += blocklets
    counts.rows_total += rows
    counts.pages_total += pages


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


def _segment_stats(entries: list[tuple[str, FileEntry]]) -> S.Stats:
    return entries[0][1].file_stats() if len(entries) == 1 else S.merge(e.file_stats() for _p, e in entries)


Resolved = list[tuple[str | None, list[tuple[str, FileEntry]]]]  # (segment id, [(path, its index entry)])


def plan_files(storage: Storage, files: list[tuple[str, str | None]], expr: Expr,
               use_index: bool = True, external: dict | None = None, schema: pa.Schema | None = None,
               table_columns: list[ColumnSchema] | None = None, deletes: Deletes | None = None,
               committed: dict[str, tuple] | None = None) -> Plan:
    """Prune (segment, file, blocklet) for ``files`` = [(path, segment id or None), ...]; files in
    ``external`` (path -> ExternalRef) are pruned by their own units' statistics (row groups, stripes).
    Each piece kept carries its file's committed ``deletes``. ``committed``: segment id ->
    ``committed_cache.segment_key``, for segments whose files all lie in their own folder."""
    resolved = resolve(storage, files, use_index, external, schema, table_columns, committed)
    return plan_resolved(resolved, expr, deletes)


def resolve(storage: Storage, files: list[tuple[str, str | None]], use_index: bool = True,
            external: dict | None = None, schema: pa.Schema | None = None,
            table_columns: list[ColumnSchema] | None = None, committed: dict[str, tuple] | None = None
            ) -> Resolved:
    """Each file's index entry (its footer's without one), by segment: what ``plan_resolved`` prunes."""
    committed = committed or {}
    external = external or {}
    by_segment: dict[str | None, list[str]] = {}
    for path, seg in files:
        by_segment.setdefault(seg, []).append(path)
    folders: dict[str, dict[str, FileEntry]] = {}
    columns_key = column_map.table_key(table_columns)
    out: Resolved = []
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
                    folders[folder] = folder_index(storage, folder, table_columns, columns_key,
                                                   committed.get(seg) if seg is not None else None)
                entry = folders[folder].get(posixpath.basename(path))
            if entry is None:
                entry = _footer_entry(storage, path, table_columns)
            entries.append((path, entry))
        out.append((seg, entries))
    return out


def plan_resolved(resolved: Resolved, expr: Expr, deletes: Deletes | None = None) -> Plan:
    """The plan of ``resolve``'s entries for ``expr``, each piece carrying its file's committed ``deletes``."""
    plan = Plan()
    counts = plan.counts
    pruned = not isinstance(expr, AlwaysTrue)
    for seg, entries in resolved:
        if seg is not None:
            counts.segments_total += 1
            if pruned and not might_match(expr, S.lookup(_segment_stats(entries))):
                for _p, e in entries:  # still count what the segment held
                    _count_all(e, counts)
                continue
        read_any = False
        for path, entry in entries:
            read_any |= _prune_file(path, entry, expr, seg, counts, plan, deletes)
        if seg is not None and read_any:
            counts.segments_read += 1
    return plan
