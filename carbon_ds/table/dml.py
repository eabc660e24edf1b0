"""DELETE and UPDATE of rows through delete deltas (see carbon_ds.table.deltas and docs/dml.md).

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

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.expressions import AlwaysTrue, filter_table
from carbon_ds.fs import Storage
from carbon_ds.table import deltas as D
from carbon_ds.table import tablestatus as ts
from carbon_ds.table.locks import TableLock
from carbon_ds.table.table import CarbonTable

UPDATE_LOCK = "update"
# CarbonData's carbon.horizontal.delete.compaction.threshold: merge a block's deltas when more exist
DEFAULT_DELTA_THRESHOLD = 1


def _step(name: str) -> None:
    """Crash-injection point for tests (no-op)."""


def require_all_carbondata(table: CarbonTable, operation: str) -> None:
    table.require_all_carbondata(operation)


# A DELETE/UPDATE or overwrite can run for hours and does not refresh its lock, so only a lock this old is
# taken for a crashed writer's and broken (the tablestatus lock's 60 s would break live writers' locks).
UPDATE_LOCK_STALE_S = 6 * 3600.0


def update_lock(table: CarbonTable, operation: str, timeout: float = 0.0) -> TableLock:
    """Take ``LockFiles/update.lock`` or fail clearly: UPDATE, DELETE and overwrites (whole table or
    partitions, Python and Spark) never run concurrently on one table. The error names the lock file and
    the operation holding it."""
    lock = TableLock(table.storage, table.path, UPDATE_LOCK, timeout=timeout, stale_after=UPDATE_LOCK_STALE_S,
                     operation=operation)
    try:
        lock.acquire()
    except CarbonTableError as e:
        holder = lock.holder()
        raise CarbonTableError(
            f"{operation} on table {table.uri} refused: another UPDATE/DELETE/overwrite "
            f"({holder or 'operation not recorded'}) holds the update lock {table.storage.uri(lock.path)} ({e}); "
            "retry when it has finished"
        ) from None
    return lock


def release_update_lock(table: CarbonTable, token: str) -> None:
    """Release the update lock taken in another process (Spark: the driver-side writer() takes it, a
    different Python worker commits or aborts): only when the file still holds ``token``."""
    lock = TableLock(table.storage, table.path, UPDATE_LOCK, stale_after=UPDATE_LOCK_STALE_S)
    lock.token = token
    lock.held = True
    lock.release()


@dataclass
class Match:
    path: str
    segment: str
    total_rows: int
    rows: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)
    data: list[pa.Table] = field(default_factory=list)

    @property
    def count(self) -> int:
        return int(sum(len(v) for v in self.rows.values()))


def _matches(table: CarbonTable, expr, want_data: bool) -> list[Match]:
    """Rows matching ``expr`` per file, located by (blocklet, page, row in page); with ``want_data`` also
    the matching rows themselves (every column, file order)."""
    from carbon_ds.readers.carbondata import CarbonDataFile
    from carbon_ds.table import pruning, scan
    from carbon_ds.table.planning import conform

    source = scan.open_source(table.path if table.storage.is_local else table.uri)
    plan = scan.plan(source, expr)
    deletes = table.deletes()
    schema = table.schema
    prune = not isinstance(expr, AlwaysTrue)
    cols = list(schema.names) if want_data else (sorted(expr.columns()) or [schema.names[0]])
    need_schema = pa.schema([schema.field(n) for n in cols])
    out = []
    for piece in plan.pieces:
        fd = deletes.lookup(piece.path, piece.segment_id) if deletes is not None else None
        if fd is not None and fd.marked:
            continue
        f = CarbonDataFile(piece.path, storage=table.storage)
        try:
            m = Match(piece.path, piece.segment_id or "", sum(f.blocklet_rows(b) for b in range(f.num_blocklets)))
            for b in piece.blocklets if piece.blocklets is not None else range(f.num_blocklets):
                sizes = D.page_rows(f, b)
                keep = pruning.surviving_pages(f, b, expr)[0] if prune else list(range(len(sizes)))
                if not keep:
                    continue
                batch = f.read_blocklet(b, cols, pages=keep if len(keep) < len(sizes) else None)
                t = conform(pa.Table.from_batches([batch]), need_schema)
                ks = np.asarray([sizes[j] for j in keep], dtype=np.int64)
                page_idx = np.repeat(np.asarray(keep, dtype=np.int64), ks)
                starts = np.repeat(np.cumsum(ks) - ks, ks)
                row_idx = np.arange(len(page_idx), dtype=np.int64) - starts
                if t.num_rows != len(page_idx):
                    raise CarbonTableError(
                        f"{piece.path} blocklet {b}: pages hold {len(page_idx)} rows by the footer, "
                        f"but {t.num_rows} were decoded")
                hit = np.ones(t.num_rows, dtype=bool)
                if prune:
                    pos = filter_table(t.append_column("__pos", pa.array(np.arange(t.num_rows))), expr)
                    hit = np.zeros(t.num_rows, dtype=bool)
                    hit[pos.column("__pos").to_numpy()] = True
                alive = fd.keep_mask(b, keep, list(ks)) if fd is not None else None
                if alive is not None:
                    hit &= alive
                if not hit.any():
                    continue
                pages, rows = page_idx[hit], row_idx[hit]
                for p in np.unique(pages):
                    m.rows[(b, int(p))] = rows[pages == p]
                if want_data:
                    m.data.append(t.filter(pa.array(hit)))
            if m.rows:
                out.append(m)
        finally:
            f.close()
    return out


@dataclass
class Staged:
    status_name: str
    base_name: str | None
    stamp: int
    touched: set[str]
    written: list[str]
    deleted: int


def _stage(table: CarbonTable, matches: list[Match], threshold: int) -> Staged:
    """Write the delta files and the new update status file (nothing is visible yet)."""
    entries = table.load_details()
    base = D.committed_status_name(entries)
    statuses = D.read_status(table.storage, table.path, base) if base else {}
    prev = int(base.rsplit("-", 1)[-1]) if base and base.rsplit("-", 1)[-1].isdigit() else 0
    stamp = max(ts.now_ms(), prev + 1)
    written: list[str] = []
    staged = Staged(D.status_file_name(stamp), base, stamp, set(), written, 0)
    try:
        for m in matches:
            folder = Storage.join(*m.path.replace("\\", "/").rsplit("/", 1)[:1])
            block = D.block_name(m.path)
            actual = D.actual_block_name(table.path, m.path)
            old = statuses.get((m.segment, actual))
            st = D.BlockStatus(m.segment, block, actual, D.SUCCESS, list(old.stamps) if old else [],
                               old.deleted if old else 0)
            rows = m.rows
            if len(st.stamps) + 1 > threshold:
                # horizontal compaction: one file with every deleted row replaces the block's deltas
                rows = D.merge_rows(*[D.read_delta(table.storage, Storage.join(folder, D.delta_file_name(block, s)))
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
        _step("deltas_written")
        D.write_status(table.storage, table.path, staged.status_name, statuses)
        written.append(D.status_path(table.path, staged.status_name))
    except BaseException:
        _remove(table, written)
        raise
    return staged


def _remove(table: CarbonTable, paths: list[str]) -> None:
    for p in paths:
        try:
            table.storage.delete(p)
        except OSError:
            pass


def _apply(table: CarbonTable, staged: Staged, entries: list, operation: str) -> None:
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


def _expr(table: CarbonTable, where):
    from carbon_ds.table.pruning import as_expr

    return as_expr(where, table.schema)


def delete(table: CarbonTable, where=None, threshold: int = DEFAULT_DELTA_THRESHOLD,
           lock_timeout: float = 0.0) -> int:
    """Delete the rows where ``where`` (SQL text, expression, tuples; None: every row) is TRUE; returns
    how many rows were deleted."""
    require_all_carbondata(table, "DELETE")
    expr = _expr(table, where)
    lock = update_lock(table, "DELETE", lock_timeout)
    try:
        matches = _matches(table, expr, want_data=False)
        if not matches:
            return 0
        return _commit_delete(table, matches, threshold)
    finally:
        lock.release()


def update(table: CarbonTable, assignments: dict[str, Any], where=None,
           threshold: int = DEFAULT_DELTA_THRESHOLD, lock_timeout: float = 0.0) -> int:
    """Set columns of the rows where ``where`` is TRUE; returns the number of rows updated.

    ``assignments`` maps a column to a Python value, or to ``SqlExpr("price * 2")`` (literals, columns,
    + - * / and parentheses, evaluated on the old row). Old rows are deleted through deltas, new rows
    written as a new segment (into the right partitions), committed in one tablestatus write."""
    from carbon_ds.table.table import resolve_columns

    require_all_carbondata(table, "UPDATE")
    schema = table.schema
    names = resolve_columns(schema, list(assignments), f"table {table.uri}")
    sets = dict(zip(names, assignments.values(), strict=True))
    expr = _expr(table, where)
    lock = update_lock(table, "UPDATE", lock_timeout)
    try:
        matches = _matches(table, expr, want_data=True)
        if not matches:
            return 0
        old = pa.concat_tables([t for m in matches for t in m.data])
        new = apply_set(old, sets, schema)
        return _commit_update(table, matches, new, threshold)
    finally:
        lock.release()


def _commit_delete(table: CarbonTable, matches, threshold: int) -> int:
    """Delta files first, then one tablestatus write naming the new update status file (the commit point)."""
    staged = _stage(table, matches, threshold)
    try:
        _step("before_status")
        with table.lock():
            entries = table.load_details()
            _apply(table, staged, entries, "DELETE")
            ts.write(table.storage, table.tablestatus_path, entries)
    except BaseException:
        _remove(table, staged.written)
        raise
    return staged.deleted


def _commit_update(table: CarbonTable, matches, new: pa.Table, threshold: int) -> int:
    """Deltas for the old rows and a new segment for the new ones, made visible by one tablestatus write."""
    from carbon_ds.table import commit  # commit imports the table layer: import late, as the callers did
    from carbon_ds.table.options import LoadOptions

    staged = _stage(table, matches, threshold)
    reservation = None
    try:
        reservation = commit.reserve(table)
        result = commit.write_task(table, reservation, 0, [new], LoadOptions())
        _step("before_status")
        commit.commit(table, reservation, [result],
                      on_commit=lambda entries: _apply(table, staged, entries, "UPDATE"))
    except BaseException:
        _remove(table, staged.written)
        if reservation is not None:
            commit.abort(table, reservation)
        raise
    return staged.deleted


# ------------------------------------------------------------------------------------------ SET values
@dataclass(frozen=True)
class SqlExpr:
    """A SET right-hand side in SQL: literals, column names, + - * /, parentheses."""

    text: str


_TOKEN = re.compile(r"\s*(?:(\d+\.\d*|\.\d+|\d+)|('(?:[^']|'')*')|([A-Za-z_][A-Za-z0-9_]*|`[^`]+`)|(.))")


def _tokens(text: str) -> list[tuple[str, str]]:
    out = []
    for m in _TOKEN.finditer(text.strip()):
        num, string, name, other = m.groups()
        if num:
            out.append(("num", num))
        elif string:
            out.append(("str", string[1:-1].replace("''", "'")))
        elif name:
            out.append(("name", name.strip("`")))
        elif other and other.strip():
            out.append(("op", other))
    return out


def eval_sql(text: str, data: pa.Table):
    """Value of a SET expression on every row of ``data`` (an Arrow array or a scalar)."""
    toks = _tokens(text)
    pos = 0
    by_lower = {n.lower(): n for n in data.schema.names}

    def fail(what):
        return CarbonOptionError(f"SET expression {text!r}: expected {what} at token {pos + 1}; supported: "
                                 "literals, column names, + - * / and parentheses")

    def atom():
        nonlocal pos
        if pos >= len(toks):
            raise fail("a value")
        kind, v = toks[pos]
        pos += 1
        if kind == "num":
            return pa.scalar(float(v) if "." in v else int(v))
        if kind == "str":
            return pa.scalar(v)
        if kind == "op" and v == "(":
            val = add()
            if pos >= len(toks) or toks[pos] != ("op", ")"):
                raise fail("')'")
            pos += 1
            return val
        if kind == "op" and v == "-":
            return pc.negate(atom())
        if kind == "name":
            low = v.lower()
            if low == "null":
                return pa.scalar(None)
            if low in ("true", "false"):
                return pa.scalar(low == "true")
            if low not in by_lower:
                raise CarbonOptionError(f"SET expression {text!r}: no column {v!r}; columns: {', '.join(data.schema.names)}")
            return data.column(by_lower[low])
        raise fail("a value")

    def mul():
        nonlocal pos
        val = atom()
        while pos < len(toks) and toks[pos] in (("op", "*"), ("op", "/")):
            op = toks[pos][1]
            pos += 1
            val = pc.multiply(val, atom()) if op == "*" else pc.divide(val, atom())
        return val

    def add():
        nonlocal pos
        val = mul()
        while pos < len(toks) and toks[pos] in (("op", "+"), ("op", "-")):
            op = toks[pos][1]
            pos += 1
            val = pc.add(val, mul()) if op == "+" else pc.subtract(val, mul())
        return val

    val = add()
    if pos != len(toks):
        raise fail("the end")
    return val


def apply_set(old: pa.Table, sets: dict[str, Any], schema: pa.Schema) -> pa.Table:
    """``old`` with the assigned columns replaced (values cast to the column types)."""
    cols = []
    for name in schema.names:
        if name not in sets:
            cols.append(old.column(name))
            continue
        v = sets[name]
        t = schema.field(name).type
        val = eval_sql(v.text, old) if isinstance(v, SqlExpr) else pa.scalar(v)
        try:
            if isinstance(val, pa.Scalar):
                arr = pa.array([val.as_py()] * old.num_rows, type=t) if val.is_valid else pa.nulls(old.num_rows, t)
            else:
                arr = val.cast(t)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as e:
            raise CarbonOptionError(f"SET {name} = {v!r}: cannot make a {t} value: {e}") from None
        cols.append(arr)
    return pa.Table.from_arrays(cols, schema=schema)


# ------------------------------------------------------------------------------------------ SQL
@dataclass(frozen=True)
class DeleteRows:
    table: Any  # carbon_ds.sql.parser.TableName
    where: str | None


@dataclass(frozen=True)
class UpdateRows:
    table: Any
    sets: tuple[tuple[str, str], ...]  # (column, SQL expression text)
    where: str | None


_DELETE = re.compile(r"^\s*DELETE\s+FROM\s+(?P<name>[^\s;]+)\s*(?:WHERE\s+(?P<where>.+))?$", re.I | re.S)
_UPDATE = re.compile(r"^\s*UPDATE\s+(?P<name>[^\s;]+)\s+SET\s+(?P<sets>.+?)(?:\s+WHERE\s+(?P<where>.+))?$",
                     re.I | re.S)


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside quotes and parentheses."""
    out, depth, quote, cur = [], 0, None, []
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return [p.strip() for p in out]


def parse_sql(text: str):
    """``DELETE FROM t [WHERE p]`` / ``UPDATE t SET c = e [, ...] [WHERE p]`` (also ``SET (a, b) = (x, y)``)."""
    from carbon_ds.sql.parser import _table_name

    m = _DELETE.match(text)
    if text.lstrip()[:6].upper() == "DELETE":
        if m is None:
            raise CarbonOptionError(f"DELETE: expected DELETE FROM <table> [WHERE <predicate>], found {text!r}")
        return DeleteRows(_table_name(m.group("name")), m.group("where"))
    m = _UPDATE.match(text)
    if m is None:
        raise CarbonOptionError(f"UPDATE: expected UPDATE <table> SET col = expr [, ...] [WHERE <predicate>], "
                                f"found {text!r}")
    body = m.group("sets").strip()
    tuple_form = re.match(r"^\((?P<cols>[^)]*)\)\s*=\s*\((?P<vals>.*)\)$", body, re.S)
    if tuple_form:
        cols = _split_top(tuple_form.group("cols"))
        vals = _split_top(tuple_form.group("vals"))
        if len(cols) != len(vals):
            raise CarbonOptionError(f"UPDATE: SET lists {len(cols)} columns but {len(vals)} values in {body!r}")
        pairs = list(zip(cols, vals, strict=True))
    else:
        pairs = []
        for part in _split_top(body):
            col, eq, val = part.partition("=")
            if not eq or not col.strip() or not val.strip():
                raise CarbonOptionError(f"UPDATE: expected column = expression in SET, found {part!r}")
            pairs.append((col, val))
    return UpdateRows(_table_name(m.group("name")),
                      tuple((c.strip().strip("`"), v.strip()) for c, v in pairs), m.group("where"))


def run_sql(table: CarbonTable, stmt) -> int:
    if isinstance(stmt, DeleteRows):
        return delete(table, stmt.where)
    return update(table, {c: SqlExpr(v) for c, v in stmt.sets}, stmt.where)


# ------------------------------------------------------------------------------------------ on Spark
# Hidden columns the data source appends with option with_row_positions=true: where each row lives.
POSITION_FIELDS = (
    pa.field("__carbon_file", pa.string()),
    pa.field("__carbon_blocklet", pa.int32()),
    pa.field("__carbon_page", pa.int32()),
    pa.field("__carbon_row", pa.int32()),  # offset in the page, as delete deltas record it
)
POSITION_NAMES = tuple(f.name for f in POSITION_FIELDS)


def position_tables(storage: Storage, pieces, columns: list[str], schema: pa.Schema, deletes):
    """Every live row of ``pieces`` (``columns`` of ``schema``) plus the position columns, one table per
    blocklet. No row is filtered here: Spark evaluates the user's predicate on these rows."""
    from carbon_ds.readers.carbondata import CarbonDataFile
    from carbon_ds.table.planning import conform

    cols = list(columns) or [schema.names[0]]
    need = pa.schema([schema.field(n) for n in cols])
    for piece in pieces:
        if piece.external is not None:
            raise CarbonTableError(f"with_row_positions: {piece.path} is not a carbondata file; row positions "
                                   "exist only for carbondata segments")
        fd = deletes.lookup(piece.path, piece.segment_id) if deletes is not None else None
        if fd is not None and fd.marked:
            continue
        f = CarbonDataFile(piece.path, storage=storage)
        try:
            for b in piece.blocklets if piece.blocklets is not None else range(f.num_blocklets):
                sizes = D.page_rows(f, b)
                t = conform(pa.Table.from_batches([f.read_blocklet(b, cols)]), need)
                ks = np.asarray(sizes, dtype=np.int64)
                page_idx = np.repeat(np.arange(len(sizes), dtype=np.int64), ks)
                row_idx = np.arange(len(page_idx), dtype=np.int64) - np.repeat(np.cumsum(ks) - ks, ks)
                if t.num_rows != len(page_idx):
                    raise CarbonTableError(f"{piece.path} blocklet {b}: pages hold {len(page_idx)} rows by the "
                                           f"footer, but {t.num_rows} were decoded")
                mask = fd.keep_mask(b, list(range(len(sizes))), sizes) if fd is not None else None
                if mask is not None:
                    t, page_idx, row_idx = t.filter(pa.array(mask)), page_idx[mask], row_idx[mask]
                n = t.num_rows
                t = t.select(list(columns)) if columns else t.select([])
                for fld, arr in zip(POSITION_FIELDS, (pa.array([piece.path] * n, pa.string()),
                                                      pa.array(np.full(n, b, dtype=np.int32)),
                                                      pa.array(page_idx.astype(np.int32)),
                                                      pa.array(row_idx.astype(np.int32))), strict=True):
                    t = t.append_column(fld, arr)
                yield t
        finally:
            f.close()


def _matches_from_positions(table: CarbonTable, pos: pa.Table, data: pa.Table | None = None) -> list[Match]:
    """``Match`` objects (what ``_stage`` writes deltas from) of collected position rows; ``data`` (same
    row order) is kept for UPDATE's new rows."""
    from carbon_ds.readers.carbondata import CarbonDataFile
    from carbon_ds.table import scan

    source = scan.open_source(table.path if table.storage.is_local else table.uri)
    seg_of = {D._norm(p): s for p, s in source.files}
    files = pos.column("__carbon_file").to_numpy(zero_copy_only=False)
    b_ = pos.column("__carbon_blocklet").to_numpy()
    p_ = pos.column("__carbon_page").to_numpy()
    r_ = pos.column("__carbon_row").to_numpy()
    out = []
    for path in sorted(set(files)):
        seg = seg_of.get(D._norm(path))
        if seg is None:
            raise CarbonTableError(f"row positions name {path}, which is no longer a file of a readable segment "
                                   f"of {table.uri}; the table changed meanwhile, nothing was committed")
        f = CarbonDataFile(path, storage=table.storage)
        try:
            total = sum(f.blocklet_rows(b) for b in range(f.num_blocklets))
        finally:
            f.close()
        sel = files == path
        m = Match(path, seg, total)
        keys = np.stack([b_[sel], p_[sel]], axis=1)
        rows = r_[sel]
        for b, p in {(int(x), int(y)) for x, y in keys}:
            m.rows[(b, p)] = np.unique(rows[(keys[:, 0] == b) & (keys[:, 1] == p)])
        if data is not None:
            m.data.append(data.filter(pa.array(sel)))
        out.append(m)
    return out


def _spark_frame(spark, table: CarbonTable):
    return (spark.read.format("carbondata").option("with_row_positions", "true")
            .load(table.path if table.storage.is_local else table.uri))


def spark_delete(spark, table: CarbonTable, where: str | None, threshold: int = DEFAULT_DELTA_THRESHOLD,
                 lock_timeout: float = 0.0) -> int:
    """DELETE with the predicate evaluated by Spark (any Spark SQL predicate): Spark filters the rows read
    with their positions and collects only the positions; the driver writes the deltas and commits exactly
    as ``delete`` does. The update lock is held from before the read to the commit."""
    require_all_carbondata(table, "DELETE")
    lock = update_lock(table, "DELETE", lock_timeout)
    try:
        df = _spark_frame(spark, table)
        if where:
            df = df.where(where)
        pos = df.select(*POSITION_NAMES).toArrow()
        if pos.num_rows == 0:
            return 0
        return _commit_delete(table, _matches_from_positions(table, pos), threshold)
    finally:
        lock.release()


def spark_update(spark, table: CarbonTable, sets: dict[str, str], where: str | None,
                 threshold: int = DEFAULT_DELTA_THRESHOLD, lock_timeout: float = 0.0) -> int:
    """UPDATE with the predicate and the SET expressions (Spark SQL text) evaluated by Spark; the new rows
    and the old rows' positions are collected, then committed as ``update`` does (deltas + new segment in
    one tablestatus write)."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_type

    from carbon_ds.table.planning import conform
    from carbon_ds.table.table import resolve_columns

    require_all_carbondata(table, "UPDATE")
    schema = table.schema
    names = resolve_columns(schema, list(sets), f"table {table.uri}")
    by_col = dict(zip(names, sets.values(), strict=True))
    lock = update_lock(table, "UPDATE", lock_timeout)
    try:
        df = _spark_frame(spark, table)
        if where:
            df = df.where(where)
        out_cols = []
        for name in schema.names:
            col = F.col(f"`{name}`")
            if name in by_col:
                col = F.expr(by_col[name]).cast(from_arrow_type(schema.field(name).type))
            out_cols.append(col.alias(name))
        got = df.select(*out_cols, *[F.col(n) for n in POSITION_NAMES]).toArrow()
        if got.num_rows == 0:
            return 0
        new = conform(got.select(schema.names), schema)
        matches = _matches_from_positions(table, got.select(list(POSITION_NAMES)))
        return _commit_update(table, matches, new, threshold)
    finally:
        lock.release()


def run_spark_sql(spark, table: CarbonTable, stmt) -> int:
    if isinstance(stmt, DeleteRows):
        return spark_delete(spark, table, stmt.where)
    return spark_update(spark, table, dict(stmt.sets), stmt.where)
