"""DELETE and UPDATE of rows through delete deltas (see carbon_ds.table.meta.files.deltas and docs/dml.md).

Protocol, under ``LockFiles/update.lock`` (one UPDATE/DELETE at a time; a second gets CarbonTableError):
1. Plan with min/max pruning; read only the filter columns of candidate pages; evaluate the predicate
   exactly; record (blocklet, page, row-in-page) of matching rows not already deleted.
2. Write one new ``<block>-<ts>.deletedelta`` per touched block (when a block would then have more than
   ``threshold`` delta files, one merged file replaces them all: horizontal compaction), then a new
   ``Metadata/tableupdatestatus-<ts>`` = previous status + these blocks.
3. UPDATE only: the new rows are written as a reserved ("In Progress") segment.
4. Commit: ONE tablestatus replace under the tablestatus lock names the new update status file (segment
   "0"'s ``updateStatusFileName``), sets the touched segments' update delta timestamps and, for UPDATE,
   flips the new segment to Success. Before it nothing written in 1-3 is visible (readers only find
   deltas through the named status file); after it both the deletions and the new rows are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from carbon_ds import faults
from carbon_ds.ddl.statement_parser import DeleteRows, UpdateRows
from carbon_ds.errors import CarbonTableError
from carbon_ds.expressions import AlwaysTrue, filter_table
from carbon_ds.expressions.values import SqlExpr, apply_set
from carbon_ds.fs import Storage, dirname, norm_path
from carbon_ds.progress import progress
from carbon_ds.readers.carbon_file import CarbonDataFile
from carbon_ds.readers.external import open_reader
from carbon_ds.table.loads.protocol import reserve_load
from carbon_ds.table.meta.files import deltas as D
from carbon_ds.table.meta.handle import TableHandle, resolve_columns
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.read import planned_reads, pruning
from carbon_ds.table.read.snapshot import open_source
from carbon_ds.table.read.task_reader import TaskReader, external_positioned

# CarbonData's carbon.horizontal.delete.compaction.threshold: merge a block's deltas when more exist
DEFAULT_DELTA_THRESHOLD = 1


@dataclass
class Match:
    path: str
    segment: str
    total_rows: int
    rows: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)
    data: list[pa.Table] = field(default_factory=list)
    external: dict | None = None  # an external file's identity (deltas.file_identity) when it was read

    @property
    def count(self) -> int:
        return int(sum(len(v) for v in self.rows.values()))


def _matches(table: TableHandle, expr, want_data: bool) -> list[Match]:
    """Rows matching ``expr`` per file, located by (blocklet, page, row in page); with ``want_data`` also
    the matching rows themselves (every column, file order)."""
    source = open_source(table)
    plan = planned_reads.plan(source, expr)  # each piece carries its file's committed deletes
    schema = table.schema
    prune = None if isinstance(expr, AlwaysTrue) else expr
    cols = list(schema.names) if want_data else (sorted(expr.columns()) or [schema.names[0]])
    reader = TaskReader(table.storage, table.columns, table.path)
    out = []
    pieces = progress(plan.pieces, "finding rows", unit=" files", min_items=8)
    for piece, o in reader.tasks(pieces):
        if o is None:
            m = _external_match(table, piece, cols, schema, expr, prune, want_data)
            if m is not None:
                out.append(m)
            continue
        f = o.file
        m = Match(piece.path, piece.segment_id or "", sum(f.blocklet_rows(b) for b in range(f.num_blocklets)))
        for b in o.blocklets:
            got = reader.positioned(o, b, cols, schema, prune)
            if got is None:
                continue
            t, page_idx, row_idx, hit = got
            if prune is not None:
                pos = filter_table(t.append_column("__pos", pa.array(np.arange(t.num_rows))), expr)
                matched = np.zeros(t.num_rows, dtype=bool)
                matched[pos.column("__pos").to_numpy()] = True
                hit &= matched
            if not hit.any():
                continue
            pages, rows = page_idx[hit], row_idx[hit]
            for p in np.unique(pages):
                m.rows[(b, int(p))] = rows[pages == p]
            if want_data:
                m.data.append(t.filter(pa.array(hit)))
        if m.rows:
            out.append(m)
    return out


def _positioned_external(storage: Storage, piece: pruning.Piece, cols: list[str], schema: pa.Schema,
                         table_columns):
    """(identity, rows, unit, row in unit, live mask) of an external piece's file, all its units."""
    ident = D.file_identity(storage, piece.path)
    t, units, rows, alive = external_positioned(storage, piece.path, piece.external, cols,
                                                pa.schema([schema.field(n) for n in cols]), None, table_columns,
                                                piece.deletes)
    return ident, t, units, rows, alive


def _external_match(table: TableHandle, piece: pruning.Piece, cols: list[str], schema: pa.Schema, expr, prune,
                    want_data: bool) -> Match | None:
    """The rows of an external file matching ``expr``, located by (unit, 0, row in unit)."""
    ident, t, units, rows, hit = _positioned_external(table.storage, piece, cols, schema, table.columns)
    if prune is not None:
        pos = filter_table(t.append_column("__pos", pa.array(np.arange(t.num_rows))), expr)
        matched = np.zeros(t.num_rows, dtype=bool)
        matched[pos.column("__pos").to_numpy()] = True
        hit = hit & matched
    if not hit.any():
        return None
    m = Match(piece.path, piece.segment_id or "", t.num_rows, external=ident)
    us, rs = units[hit], rows[hit]
    for u in np.unique(us):
        m.rows[(int(u), 0)] = rs[us == u]
    if want_data:
        m.data.append(t.filter(pa.array(hit)))
    return m


@dataclass
class Staged:
    status_name: str
    base_name: str | None
    stamp: int
    touched: set[str]
    written: list[str]
    deleted: int


def _stage(table: TableHandle, matches: list[Match], threshold: int) -> Staged:
    """Write the delta files and the new update status file (nothing is visible yet)."""
    entries = table.load_details()
    base = D.committed_status_name(entries)
    statuses = D.read_status(table.storage, table.path, base) if base else {}
    prev = int(base.rsplit("-", 1)[-1]) if base and base.rsplit("-", 1)[-1].isdigit() else 0
    stamp = max(ts.now_ms(), prev + 1)
    written: list[str] = []
    staged = Staged(D.status_file_name(stamp), base, stamp, set(), written, 0)
    shared: dict[str, set[str]] = {}  # folder -> CarbonData block names more than one of its data files has
    try:
        for m in matches:
            if m.external is not None:  # never next to the external file: in the table's Metadata
                folder = D.external_folder(table.path, m.segment)
                block, actual = D.external_block(m.path), norm_path(m.path)
            else:
                folder = dirname(m.path)
                block = D.block_name(m.path)
                if block in _shared_blocks(table, folder, shared):
                    block = D.legacy_block_name(m.path)  # CarbonData could not tell the files' deltas apart
                actual = D.actual_block_name(table.path, m.path)
            old = statuses.get((m.segment, actual))
            if m.external is not None and old is not None and old.external:
                for k in ("size", "mtimeNs"):
                    if old.external.get(k) is not None and old.external.get(k) != m.external.get(k):
                        raise CarbonTableError(
                            f"external file {table.storage.uri(m.path)} changed since rows of it were deleted "
                            f"({k}: {old.external.get(k)} then, {m.external.get(k)} now); nothing was committed")
            st = D.BlockStatus(m.segment, block, actual, D.SUCCESS, list(old.stamps) if old else [],
                               old.deleted if old else 0, m.external)
            rows = m.rows
            renamed = old is not None and old.block != block  # deltas under an earlier version's block name
            if renamed or len(st.stamps) + 1 > threshold:
                # horizontal compaction: one file with every deleted row replaces the block's deltas
                earlier = old.block if old is not None else block
                rows = D.merge_rows(*[D.read_delta(table.storage, Storage.join(folder, D.delta_file_name(earlier, s)))
                                      for s in st.stamps], rows)
                st.stamps = []
            written.append(D.write_delta(table.storage, folder, block, stamp, rows))
            st.stamps.append(str(stamp))
            st.deleted += m.count
            if st.deleted >= m.total_rows:
                st.status = D.MARKED_FOR_DELETE
            statuses[st.key] = st
            staged.touched.add(m.segment)
            staged.deleted += m.count
        faults.point("dml.deltas_written")
        D.write_status(table.storage, table.path, staged.status_name, statuses)
        written.append(D.status_path(table.path, staged.status_name))
    except BaseException:
        _remove(table, written)
        raise
    return staged


def _shared_blocks(table: TableHandle, folder: str, seen: dict[str, set[str]]) -> set[str]:
    """CarbonData block names (data file names without load timestamp) that several data files of ``folder``
    share, as a table updated by CarbonData 1.x can hold."""
    if folder not in seen:
        names = [D.block_name(f.path) for f in table.storage.list(folder) if f.path.endswith(".carbondata")]
        seen[folder] = {n for n in names if names.count(n) > 1}
    return seen[folder]


def _remove(table: TableHandle, paths: list[str]) -> None:
    for p in paths:
        try:
            table.storage.delete(p)
        except OSError:
            pass


def _apply(table: TableHandle, staged: Staged, entries: list, operation: str) -> None:
    """Point tablestatus (``entries``, inside the caller's lock) at the staged deltas, or refuse."""
    found = D.committed_status_name(entries)
    if found != staged.base_name:
        raise CarbonTableError(
            f"{operation} on table {table.uri}: expected update status {staged.base_name!r}, found {found!r}; "
            "another writer changed the table meanwhile, nothing was committed")
    for seg in sorted(staged.touched):
        e = ts.find(entries, seg)
        if e is None or not e.readable:
            raise CarbonTableError(
                f"{operation} on table {table.uri}: segment {seg} was "
                f"{'removed' if e is None else repr(e.status)} meanwhile (concurrent overwrite or segment "
                "delete); nothing was committed")
        e.update_delta_start = e.update_delta_start or str(staged.stamp)
        e.update_delta_end = str(staged.stamp)
    # CarbonData reads the name from segment "0"; every entry carries it so that CLEAN FILES dropping
    # segment 0's entry cannot orphan the deltas of the other segments.
    for e in entries:
        e.update_status_file = staged.status_name


def _expr(table: TableHandle, where: Any):
    if isinstance(where, str) and not where.strip():
        raise CarbonTableError("an empty WHERE would touch every row; pass where=None to mean every row")
    return pruning.as_expr(where, table.schema, table.uri)


def delete(table: TableHandle, where=None, threshold: int = DEFAULT_DELTA_THRESHOLD,
           lock_timeout: float = 0.0) -> int:
    """Delete the rows where ``where`` (SQL text, expression, tuples; None: every row) is TRUE; returns
    how many rows were deleted."""
    table.require_all_carbondata("DELETE")
    expr = _expr(table, where)
    with table.update_lock("DELETE", lock_timeout):
        matches = _matches(table, expr, want_data=False)
        if not matches:
            return 0
        return commit_delete(table, matches, threshold)


def update(table: TableHandle, assignments: dict[str, Any], where=None,
           threshold: int = DEFAULT_DELTA_THRESHOLD, lock_timeout: float = 0.0) -> int:
    """Set columns of the rows where ``where`` is TRUE; returns the number of rows updated.

    ``assignments`` maps a column to a Python value, or to ``SqlExpr("price * 2")`` (literals, columns,
    + - * / and parentheses, evaluated on the old row). Old rows are deleted through deltas, new rows
    written as a new segment (into the right partitions), committed in one tablestatus write."""
    table.require_all_carbondata("UPDATE")
    schema = table.schema
    names = resolve_columns(schema, list(assignments), f"table {table.uri}")
    sets = dict(zip(names, assignments.values(), strict=True))
    expr = _expr(table, where)
    apply_set(schema.empty_table(), sets, schema)  # a value the column cannot take is refused on no rows too
    with table.update_lock("UPDATE", lock_timeout):
        matches = _matches(table, expr, want_data=True)
        if not matches:
            return 0
        old = pa.concat_tables([t for m in matches for t in m.data])
        new = apply_set(old, sets, schema)
        return commit_update(table, matches, new, threshold)


def commit_delete(table: TableHandle, matches, threshold: int) -> int:
    """Delta files first, then one tablestatus write naming the new update status file (the commit point)."""
    staged = _stage(table, matches, threshold)
    try:
        faults.point("dml.before_status")
        with table.edit_status("DELETE") as edit:
            entries = edit.entries
            _apply(table, staged, entries, "DELETE")
    except BaseException:
        _remove(table, staged.written)
        raise
    return staged.deleted


def commit_update(table: TableHandle, matches, new: pa.Table, threshold: int) -> int:
    """Deltas for the old rows and a new segment for the new ones, made visible by one tablestatus write."""
    staged = _stage(table, matches, threshold)
    try:
        with reserve_load(table) as load:
            load.write([new])
            load.stage(lambda entries: _apply(table, staged, entries, "UPDATE"))
            faults.point("dml.before_status")
    except BaseException:
        _remove(table, staged.written)
        raise
    return staged.deleted


def run_row_dml(table: TableHandle, stmt: DeleteRows | UpdateRows) -> int:
    """Run a parsed DELETE / UPDATE statement with our predicate model; returns the rows affected."""
    if isinstance(stmt, DeleteRows):
        return delete(table, stmt.where)
    return update(table, {c: SqlExpr(v) for c, v in stmt.sets}, stmt.where)


def matches_from_positions(table: TableHandle, pos: pa.Table, data: pa.Table | None = None) -> list[Match]:
    """``Match`` objects (what ``_stage`` writes deltas from) of collected position rows; ``data`` (same
    row order) is kept for UPDATE's new rows."""
    source = open_source(table)
    seg_of = {norm_path(p): s for p, s in source.files}
    external = {norm_path(p): ref for p, ref in source.external.items()}
    files = pos.column("__carbon_file").to_numpy(zero_copy_only=False)
    b_ = pos.column("__carbon_blocklet").to_numpy()
    p_ = pos.column("__carbon_page").to_numpy()
    r_ = pos.column("__carbon_row").to_numpy()
    out = []
    for path in sorted(set(files)):
        seg = seg_of.get(norm_path(path))
        if seg is None:
            raise CarbonTableError(f"row positions name {path}, which is no longer a file of a readable segment "
                                   f"of {table.uri}; the table changed meanwhile, nothing was committed")
        ref = external.get(norm_path(path))
        ident = None
        if ref is not None:
            ident = D.file_identity(table.storage, path)
            total = open_reader(table.storage, path, ref.format, ref.options_dict, table.schema).num_rows
            total = total if total is not None else 1 << 62  # unknown: never marked deleted as a whole
        else:
            f = CarbonDataFile(path, storage=table.storage)
            try:
                total = sum(f.blocklet_rows(b) for b in range(f.num_blocklets))
            finally:
                f.close()
        sel = files == path
        m = Match(path, seg, total, external=ident)
        keys = np.stack([b_[sel], p_[sel]], axis=1)
        rows = r_[sel]
        for b, p in {(int(x), int(y)) for x, y in keys}:
            m.rows[(b, p)] = np.unique(rows[(keys[:, 0] == b) & (keys[:, 1] == p)])
        if data is not None:
            m.data.append(data.filter(pa.array(sel)))
        out.append(m)
    return out


