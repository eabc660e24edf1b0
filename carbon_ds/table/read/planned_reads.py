"""Planned reads of a table or a bare folder, as functions: ``plan`` (the pieces a filter may match, kept for an
unchanged table), and ``read``, ``count``, ``explain``, ``table_rows`` and the size estimates over it. The ``Scan``
object (scan.py) is the same plan read as a stream."""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa

from carbon_ds.errors import CarbonError
from carbon_ds.expressions import AlwaysTrue, Expr
from carbon_ds.readers.carbon_file import PARALLEL_MIN_VALUES, READ_THREADS
from carbon_ds.table.meta.caches.committed_cache import CommittedCache
from carbon_ds.table.meta.handle import TableHandle, resolve_columns
from carbon_ds.table.meta.schema import column_map
from carbon_ds.table.partitions.hive_pruning import prune_files
from carbon_ds.table.partitions.id_pruning import prune_by_id
from carbon_ds.table.partitions.partitioning import HivePartitioning, IdPartitioning
from carbon_ds.table.read import pruning
from carbon_ds.table.read.snapshot import Snapshot, open_source
from carbon_ds.table.read.task_reader import OpenPiece, TaskReader, read_external, read_pieces, whole_rows_of

# A committed snapshot's unfiltered plan without deletes, its index entries and its whole-file pieces, by the
# snapshot's key (snapshot.py): a query of an unchanged table then plans nothing again.
_WHOLE_PLANS = CommittedCache(max_entries=64)
_RESOLVED = CommittedCache(max_entries=64)  # a snapshot's index entries by segment (pruning.resolve)
_WHOLE_PIECES = CommittedCache(max_entries=64)  # a snapshot's whole-file pieces, when it has no deletes


def table_rows(table: TableHandle | Snapshot, columns: list[str] | None = None, segments=None) -> pa.Table:
    """Every live row of a table (``columns`` of it), file by file, without a filter: of one snapshot
    (a ``Snapshot``, files and deletes as planned) or of the table as it is now."""
    source = open_source(table, segments)
    table = source.table
    schema = table.schema
    names = resolve_columns(schema, columns, f"table {table.uri}")
    target = pa.schema([schema.field(n) for n in names]) if names is not None else schema
    cols = table.columns
    # every file whole: each footer checked against its index entry, read from the trash when CLEAN FILES
    # has moved it since the snapshot was taken
    pieces = _whole_pieces(source)
    reader = TaskReader(table.storage, cols, table.path)

    def one(group: list[tuple[pruning.Piece, OpenPiece | None]]) -> pa.Table:
        parts, run = [], []
        for piece, o in group:
            if o is not None:
                run.append(o)
                continue
            if run:
                parts.append(whole_rows_of(run, target))
                run = []
            # deletes of an external file are applied by its reader (units, not pages)
            parts.append(read_external(table.storage, piece.path, piece.external, names, target, table_columns=cols,
                                       deletes=piece.deletes))
        if run:
            parts.append(whole_rows_of(run, target))
        return parts[0] if len(parts) == 1 else pa.concat_tables(parts)

    tables = list(reader.each_group(small_groups(pieces, len(target)), one, threads=READ_THREADS))
    if not tables:
        return target.empty_table()
    return pa.concat_tables(tables)


def _whole_pieces(source: Snapshot) -> list[pruning.Piece]:
    """A whole-file piece of each file of ``source`` (each carrying its index claim and deletes); kept by the
    snapshot's key when nothing is deleted, so a read of an unchanged table makes none of them again."""
    key = None
    if source.snapshot_key is not None and source.deletes is None:
        key = (source.snapshot_key, column_map.table_key(source.columns))
    return list(_WHOLE_PIECES.kept(key, lambda: tuple(pruning.file_pieces(
        source.table.storage, source.data_files, source.columns, source.deletes, committed=source.committed))))


# A whole-table read hands a worker consecutive small files together (``small_groups``) while their values
# (rows by the index x columns read) stay under PARALLEL_MIN_VALUES, the size from which one file's read
# decodes its chunks on threads, and at most GROUP_FILES files of GROUP_BYTES stored bytes (a group's files are
# open, and small ones held whole, while it is read): a file of a few hundred rows costs more in fixed
# per-file steps than in values, and a group pays the decode's steps once (readers.carbon_file.read_files).
GROUP_FILES = 128
GROUP_BYTES = 32 << 20


def small_groups(pieces: list[pruning.Piece], columns: int) -> list[list[pruning.Piece]]:
    """``pieces`` in order, cut into groups: runs of carbondata files whose index gives their rows and whose
    values and bytes fit the bounds above share a group; any other piece is a group of its own."""
    groups: list[list[pruning.Piece]] = []
    run: list[pruning.Piece] = []
    held = held_bytes = 0
    width = max(columns, 1)
    for piece in pieces:
        claim = piece.claim
        values = sum(claim.rows) * width if piece.external is None and claim is not None else None
        size = (claim.file_size or 0) if claim is not None else 0
        if values is None or values >= PARALLEL_MIN_VALUES:
            if run:
                groups.append(run)
                run, held, held_bytes = [], 0, 0
            groups.append([piece])
            continue
        if run and (held + values > PARALLEL_MIN_VALUES or len(run) >= GROUP_FILES
                    or held_bytes + size > GROUP_BYTES):
            groups.append(run)
            run, held, held_bytes = [], 0, 0
        run.append(piece)
        held += values
        held_bytes += size
    if run:
        groups.append(run)
    return groups


def plan(source: Snapshot, expr: Expr, with_deletes: bool = True) -> pruning.Plan:
    """The pieces of ``source`` that ``expr`` may match, each carrying its committed deletes (unless
    ``with_deletes`` is False: a plan only measured, never read, reads no delta file)."""
    whole = (source.snapshot_key is not None and isinstance(expr, AlwaysTrue) and source.table is not None
             and (source.deletes is None or not with_deletes) and source.table.partitioning is None)
    if whole:
        hit = _WHOLE_PLANS.get((source.snapshot_key, column_map.table_key(source.columns)))
        if hit is not None:
            return _copy_plan(hit)
    kept = partition_pruned(source, expr)
    deletes = source.deletes if with_deletes else None
    if source.snapshot_key is not None and source.partitions is None and len(kept) == len(source.files):
        # every file of a snapshot of committed segments: their entries as resolved by an earlier plan
        resolved = _RESOLVED.kept((source.snapshot_key, column_map.table_key(source.columns)), lambda: pruning.resolve(
            source.storage, kept, True, source.external, source.schema, source.columns, source.committed))
        p = pruning.plan_resolved(resolved, expr, deletes)
    else:
        p = pruning.plan_files(source.storage, kept, expr, use_index=source.table is not None,
                               external=source.external, schema=source.schema, table_columns=source.columns,
                               deletes=deletes, committed=source.committed)
    p.partitions = source.partitions
    if source.partitions is not None:  # files skipped by partition id still count as the table's files
        p.counts.files_total += len(source.files) - len(kept)
    if whole:
        _WHOLE_PLANS.put((source.snapshot_key, column_map.table_key(source.columns)), _copy_plan(p))
    return p


def _copy_plan(p: pruning.Plan) -> pruning.Plan:
    """A plan callers may change (the pieces and index entries themselves are never changed)."""
    return pruning.Plan(list(p.pieces), replace(p.counts), p.exact_rows, p.partitions, dict(p.entries))


def partition_pruned(source: Snapshot, expr: Expr) -> list[tuple[str, str | None]]:
    """The source's files less those whose Hive partition folder values, or HASH/RANGE/LIST partition id,
    rule ``expr`` out (none opened)."""
    part = source.table.partitioning if source.table is not None else None
    return source.files if part is None else _PRUNERS[type(part)](source, part, expr)


def _prune_by_folder(source: Snapshot, _part: HivePartitioning, expr: Expr) -> list[tuple[str, str | None]]:
    return prune_files(source.table.path, source.schema, source.files, expr)


def _prune_by_id(source: Snapshot, part: IdPartitioning, expr: Expr) -> list[tuple[str, str | None]]:
    kept, read_ids, skipped_ids = prune_by_id(part.layout, source.files, expr)
    source.partitions = {"total": len(part.layout.ids), "read": sorted(read_ids), "skipped": sorted(skipped_ids)}
    return kept


_PRUNERS = {HivePartitioning: _prune_by_folder, IdPartitioning: _prune_by_id}


def read(path, columns: list[str] | None = None, filter=None, segments=None,
         counts: pruning.Counts | None = None) -> pa.Table:
    """Projected rows where ``filter`` is TRUE, pruned at every level and then filtered exactly."""
    source = open_source(path, segments)
    names = resolve_columns(source.schema, columns, source.uri)
    expr = pruning.as_expr(filter, source.schema, source.uri)
    p = plan(source, expr)
    if counts is not None:
        counts.add(p.counts)
    target = pa.schema([source.schema.field(n) for n in (names if names is not None else source.schema.names)])
    tables = list(read_pieces(source.storage, p.pieces, expr, names, source.schema, True, counts,
                              table_columns=source.columns, table_path=_table_path(source)))
    if not tables:
        return target.empty_table()
    return pa.concat_tables(tables).cast(target) if tables[0].schema != target else pa.concat_tables(tables)


def count(path, filter=None, segments=None, planned: pruning.Plan | None = None) -> int:
    """Rows where ``filter`` is TRUE. Without a filter (or when every blocklet is pruned) the index row
    counts answer alone; otherwise only the filter columns of the surviving pages are read. ``planned``:
    the plan of ``path`` (a ``Snapshot``) for ``filter``, made earlier."""
    source = open_source(path, segments)
    expr = pruning.as_expr(filter, source.schema, source.uri)
    deletes = source.deletes
    recorded = {f.path: f.rows for f in source.data_files if f.rows is not None and f.external is not None
                and (deletes is None or deletes.status_of(f.path, f.segment_id) is None)} if source.external else {}
    if planned is None and recorded and isinstance(expr, AlwaysTrue):
        # external Parquet/ORC files without deleted rows count from the row counts ADD SEGMENT recorded
        # (checked against their size and mtime when listed): none is opened
        rest = replace(source, snapshot_key=None, files=[f for f in source.files if f[0] not in recorded],
                       external={k: v for k, v in source.external.items() if k not in recorded},
                       data_files=[f for f in source.data_files if f.path not in recorded])
        return sum(recorded.values()) + (count(rest) if rest.files else 0)
    p = planned if planned is not None else plan(source, expr)
    if isinstance(expr, AlwaysTrue) and p.exact_rows is not None:
        # metadata only: the index row counts less each block's committed deleted rows
        return p.exact_rows - (_deleted_by_index(p) if deletes is not None else 0)
    if not p.pieces:
        return 0
    cols = sorted(expr.columns())[:1] if not isinstance(expr, AlwaysTrue) else []
    if not cols:  # no filter column to read: count rows of every surviving blocklet from the footer
        cols = [source.schema.names[0]]
    return sum(t.num_rows for t in read_pieces(source.storage, p.pieces, expr, cols, source.schema, True,
                                               table_columns=source.columns, table_path=_table_path(source)))


def _deleted_by_index(p: pruning.Plan) -> int:
    """Rows the delete deltas remove from the planned pieces, each delta checked against the blocklets and
    pages the index gives its file (no data file is opened)."""
    total = 0
    for piece in p.pieces:
        fd = piece.deletes
        if fd is None:
            continue
        entry = p.entries.get(piece.path)
        if entry is not None:
            fd.check_shape(piece.path, entry.page_rows, entry.rows, entry.source)
        total += fd.count
    return total


def _table_path(source: Snapshot) -> str | None:
    return source.table.path if source.table is not None else None


class ExplainReport(dict):
    """What ``explain`` returns: a dict (``report["blocklets"]["skipped"]``) that prints as a table."""

    def __str__(self) -> str:
        return "\n".join(format_explain(self))


def explain(path, filter=None, segments=None) -> ExplainReport:
    """What a filtered read would touch: units read vs skipped at each level (no data page is decoded)."""
    source = open_source(path, segments)
    expr = pruning.as_expr(filter, source.schema, source.uri)
    p = plan(source, expr)
    TaskReader(source.storage, source.columns, _table_path(source)).page_counts(p.pieces, expr, p.counts)
    out = ExplainReport({"path": source.uri, "filter": str(expr), **p.counts.as_dict()})
    if source.partitions is not None:
        out["partitions"] = source.partitions
    if source.table is None:
        out["segments"] = None
    return out


def format_explain(report: dict) -> list[str]:
    lines = [f"table: {report['path']}", f"filter: {report['filter']}"]
    parts = report.get("partitions")
    if parts is not None:
        lines.append(f"partitions read {len(parts['read'])} of {parts['total']} (ids "
                     f"{', '.join(map(str, parts['read'])) or 'none'}), skipped {len(parts['skipped'])}")
    for level in ("segments", "files", "blocklets", "pages", "rows"):
        r = report.get(level)
        if r is None:
            continue
        pct = 100.0 * r["skipped"] / r["total"] if r["total"] else 0.0
        lines.append(f"{level:<10} read {r['read']:>10,} of {r['total']:>10,}  skipped {r['skipped']:>10,} ({pct:.1f}%)")
    return lines


def scan_bytes(path, filter=None, segments=None) -> int:
    """Stored bytes a filtered read would touch: each surviving file's size times the share of its rows
    in the surviving blocklets (the whole file when the index has no row counts). No data page is read."""
    return scan_estimate(path, filter, segments)[0]


def scan_estimate(path, filter=None, segments=None) -> tuple[int, int | None]:
    """(stored bytes as scan_bytes counts them, rows of the surviving blocklets or None when an index
    does not say) of a filtered read. No data page is read."""
    source = open_source(path, segments)
    expr = pruning.as_expr(filter, source.schema, source.uri)
    kept = plan(source, expr, with_deletes=False).pieces
    if not kept:
        return 0, 0
    every: dict[str, int] = {}
    for p in plan(source, AlwaysTrue(), with_deletes=False).pieces if filter else ():
        every[p.path] = every.get(p.path, 0) + (p.rows or 0)
    total, total_rows = 0, 0
    for piece in kept:
        try:
            size = source.storage.size(piece.path)
        except (OSError, CarbonError):
            continue  # gone since listing: its read reports it
        rows, all_rows = piece.rows, every.get(piece.path)
        if filter and rows is not None and all_rows:
            size = size * min(rows, all_rows) // all_rows
        total += size
        total_rows = None if total_rows is None or rows is None else total_rows + rows
    return total, total_rows

