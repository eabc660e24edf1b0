"""MERGE INTO with Arrow rows: ``CarbonTable.merge(source, on=...)`` (docs/dml.md).

A merge is one DELETE/UPDATE-style commit (carbon_ds.table.ops.dml.delete_update): the target rows that a WHEN MATCHED
clause updates or deletes get delete deltas, the updated and inserted rows go into ONE new segment (into
their partitions), and one tablestatus write makes both visible, under the update lock. Unchanged rows are
never rewritten.

The join runs in pyarrow: the target's key columns (every column only when a matched clause needs target
values) are read with their row positions, hash-joined with the source's keys; NULL keys never match.
Clauses are tried in order, the first whose condition is TRUE acts (Spark's semantics). A target row that
two source rows would change is an error naming its key, as in Spark and Delta.

Conditions and SET values see the matched row as ``<target_alias>.<col>`` and ``<source_alias>.<col>``
(default ``target`` / ``source``); NOT MATCHED clauses see the source row, also by bare column names.
A condition is SQL text of the filter model (``"source.op = 'D'"``), a ``pyarrow.compute.Expression`` over
those names (column-to-column comparisons), or a callable table -> boolean array. A SET / VALUES entry is a
Python literal, a ``SqlExpr`` (literals, columns, + - * /), or a ``pyarrow.compute.Expression``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from carbon_ds import faults
from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.expressions import AlwaysTrue, In, and_, filter_table
from carbon_ds.expressions.tree import Compare
from carbon_ds.expressions.values import SqlExpr, evaluate
from carbon_ds.table.loads.protocol import reserve_load
from carbon_ds.table.meta.handle import TableHandle, resolve_columns
from carbon_ds.table.meta.schema.conform import conform
from carbon_ds.table.ops.dml.delete_update import (
    DEFAULT_DELTA_THRESHOLD,
    commit_delete,
    commit_update,
    matches_from_positions,
)
from carbon_ds.table.read import planned_reads, pruning
from carbon_ds.table.read.snapshot import open_source
from carbon_ds.table.read.task_reader import POSITION_NAMES, position_tables

# Up to this many distinct source keys prune the target with IN (min/max per blocklet), above with a range.
IN_PRUNE_MAX = 4096


@dataclass(frozen=True)
class Clause:
    """One WHEN clause: ``kind`` "update" / "delete" (matched) or "insert" (not matched); ``values`` None
    means every column from the source (UPDATE SET * / INSERT *)."""

    kind: str
    condition: Any = None
    values: dict[str, Any] | None = None

    @property
    def matched(self) -> bool:
        return self.kind != "insert"


@dataclass
class MergeMetrics:
    """What one merge did. ``rows_copied`` counts unchanged target rows rewritten (always 0 here: replaced
    rows are deleted through deltas); ``rows_written`` the rows of the new segment."""

    source_rows: int | None = None  # None through Spark (counting would run the source once more)
    rows_matched: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    rows_inserted: int = 0
    rows_copied: int = 0
    files_with_deletes: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rows_written(self) -> int:
        return self.rows_updated + self.rows_inserted

    def as_dict(self) -> dict[str, Any]:
        return {"source_rows": self.source_rows, "rows_matched": self.rows_matched,
                "rows_updated": self.rows_updated, "rows_deleted": self.rows_deleted,
                "rows_inserted": self.rows_inserted, "rows_copied": self.rows_copied,
                "rows_written": self.rows_written, "files_with_deletes": self.files_with_deletes}


def as_arrow(source: Any, what: str = "MERGE source") -> pa.Table:
    """A pyarrow Table of an Arrow table / batch / reader, a pandas DataFrame, or a Spark DataFrame."""
    if isinstance(source, pa.Table):
        return source
    if isinstance(source, pa.RecordBatch):
        return pa.Table.from_batches([source])
    if isinstance(source, pa.RecordBatchReader):
        return source.read_all()
    if hasattr(source, "toArrow"):  # a Spark DataFrame (carbon_ds.spark.statements.merge_into joins in Spark instead)
        return source.toArrow()
    if type(source).__module__.split(".")[0] == "pandas":
        return pa.Table.from_pandas(source, preserve_index=False)
    raise CarbonOptionError(f"{what}: expected a pyarrow Table, RecordBatch(Reader), pandas or Spark DataFrame, "
                            f"found {type(source).__name__}")


class TableMerger:
    """``table.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all().execute()``."""

    def __init__(self, table: TableHandle, source: Any, on: str | list[str] | dict[str, str],
                 source_alias: str = "source", target_alias: str = "target",
                 threshold: int = DEFAULT_DELTA_THRESHOLD, lock_timeout: float = 0.0):
        self.table = table
        self.source = as_arrow(source)
        if isinstance(on, str):
            on = [on]
        pairs = list(on.items()) if isinstance(on, dict) else [(k, k) for k in on]
        if not pairs:
            raise CarbonOptionError("MERGE: on= needs at least one key column")
        where = f"MERGE into {table.uri}"
        tkeys = resolve_columns(table.schema, [t for t, _ in pairs], f"target table {table.uri}") or []
        skeys = resolve_columns(self.source.schema, [s for _, s in pairs], "the MERGE source") or []
        self.keys = list(zip(tkeys, skeys, strict=True))
        if source_alias.lower() == target_alias.lower():
            raise CarbonOptionError(f"{where}: source_alias and target_alias are both {source_alias!r}")
        self.source_alias, self.target_alias = source_alias, target_alias
        self.threshold, self.lock_timeout = threshold, lock_timeout
        self.clauses: list[Clause] = []

    # ------------------------------------------------------------------ builder
    def _add(self, clause: Clause) -> TableMerger:
        same = [c for c in self.clauses if c.matched == clause.matched]
        if same and same[-1].condition is None:
            raise CarbonOptionError(
                f"MERGE: a WHEN {'' if clause.matched else 'NOT '}MATCHED clause after an unconditional one "
                "can never act; only the last clause of its kind may omit its condition")
        self.clauses.append(clause)
        return self

    def when_matched_update(self, set: dict[str, Any], condition: Any = None) -> TableMerger:  # noqa: A002
        if not set:
            raise CarbonOptionError("when_matched_update: set= names no column; use when_matched_update_all()")
        return self._add(Clause("update", condition, dict(set)))

    def when_matched_update_all(self, condition: Any = None) -> TableMerger:
        return self._add(Clause("update", condition, None))

    def when_matched_delete(self, condition: Any = None) -> TableMerger:
        return self._add(Clause("delete", condition, None))

    def when_not_matched_insert(self, values: dict[str, Any], condition: Any = None) -> TableMerger:
        if not values:
            raise CarbonOptionError("when_not_matched_insert: values= names no column; use "
                                    "when_not_matched_insert_all()")
        return self._add(Clause("insert", condition, dict(values)))

    def when_not_matched_insert_all(self, condition: Any = None) -> TableMerger:
        return self._add(Clause("insert", condition, None))

    # ------------------------------------------------------------------ run
    def execute(self) -> MergeMetrics:
        if not self.clauses:
            raise CarbonOptionError("MERGE: no WHEN clause; add when_matched_* or when_not_matched_* clauses")
        return run_merge(self)


def _qualified(t: pa.Table, alias: str, bare: bool = False) -> pa.Table:
    names = [f"{alias}.{n}" for n in t.column_names]
    out = t.rename_columns(names)
    if bare:
        for n in t.column_names:
            out = out.append_column(n, t.column(n))
    return out


def _mask(cond: Any, data: pa.Table, where: str) -> np.ndarray:
    """TRUE rows of ``cond`` on ``data`` (NULL counts as not TRUE)."""
    n = data.num_rows
    if cond is None:
        return np.ones(n, dtype=bool)
    if callable(cond) and not isinstance(cond, pc.Expression):
        got = cond(data)
        arr = pc.fill_null(got if isinstance(got, pa.Array | pa.ChunkedArray) else pa.array(got, pa.bool_()), False)
        return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=bool)
    withpos = data.append_column("__merge_row", pa.array(np.arange(n, dtype=np.int64)))
    try:
        if isinstance(cond, pc.Expression):
            kept = withpos.filter(cond)
        else:
            kept = filter_table(withpos, pruning.as_expr(cond, withpos.schema))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, KeyError) as e:
        raise CarbonOptionError(f"{where}: cannot evaluate condition {cond!r}: {e}; columns: "
                                f"{', '.join(data.column_names)}") from None
    out = np.zeros(n, dtype=bool)
    out[kept.column("__merge_row").to_numpy()] = True
    return out


def _value(v: Any, data: pa.Table, t: pa.DataType, col: str, where: str):
    n = data.num_rows
    try:
        if isinstance(v, SqlExpr):
            val = evaluate(v.text, data)
        elif isinstance(v, pc.Expression):
            val = pads.dataset(data).to_table(columns={"__v": v}).column("__v")
        else:
            val = pa.scalar(v)
        if isinstance(val, pa.Scalar):
            return pa.array([val.as_py()] * n, type=t) if val.is_valid else pa.nulls(n, t)
        return val.cast(t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError) as e:
        raise CarbonOptionError(f"{where}: {col} = {v!r}: cannot make a {t} value: {e}") from None


def _rows_for(clause: Clause, data: pa.Table, schema: pa.Schema, target_alias: str | None, source_alias: str,
              source_names: dict[str, str], where: str) -> pa.Table:
    """The table rows a clause writes, from ``data`` (qualified columns of the matched / unmatched rows)."""
    cols = []
    sets = {}
    if clause.values is not None:
        names = resolve_columns(schema, list(clause.values), f"{where}: SET / VALUES") or []
        sets = dict(zip(names, clause.values.values(), strict=True))
    for f in schema:
        if clause.values is None:
            src = source_names.get(f.name.lower())
            if src is None:
                raise CarbonOptionError(
                    f"{where}: {'UPDATE SET *' if clause.matched else 'INSERT *'} needs source column {f.name!r}; "
                    f"the source has {', '.join(source_names.values())}")
            cols.append(data.column(f"{source_alias}.{src}").cast(f.type))
        elif f.name in sets:
            cols.append(_value(sets[f.name], data, f.type, f.name, where))
        elif clause.matched and target_alias is not None:
            cols.append(data.column(f"{target_alias}.{f.name}"))
        else:
            cols.append(pa.nulls(data.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=schema)


def _needs_target_values(clauses: list[Clause]) -> bool:
    return any(c.matched and (c.condition is not None or (c.kind == "update" and c.values is not None))
               for c in clauses)


def _prune_expr(keys: list[tuple[str, str]], src: pa.Table, schema: pa.Schema):
    tkey, skey = keys[0]
    vals = pc.unique(src.column(skey).cast(schema.field(tkey).type)).drop_null()
    if len(vals) == 0:
        return None  # nothing can match
    if len(vals) <= IN_PRUNE_MAX:
        return In(tkey, tuple(vals.to_pylist()))
    mm = pc.min_max(vals)
    return and_(Compare(tkey, ">=", mm["min"].as_py()), Compare(tkey, "<=", mm["max"].as_py()))


def _key_frame(t: pa.Table, names: list[str], idx: str) -> pa.Table:
    cols = [t.column(n) for n in names]
    valid = None
    for c in cols:
        v = pc.is_valid(c)
        valid = v if valid is None else pc.and_(valid, v)
    out = pa.table({**{f"__k{i}": c for i, c in enumerate(cols)},
                    idx: pa.array(np.arange(t.num_rows, dtype=np.int64))})
    return out.filter(valid)  # NULL keys never match


def run_merge(m: TableMerger) -> MergeMetrics:
    table, src = m.table, m.source
    where = f"MERGE into {table.uri}"
    schema = table.schema
    table.require_all_carbondata("MERGE")
    tkeys = [t for t, _ in m.keys]
    skeys = [s for _, s in m.keys]
    for t, s in m.keys:  # join on the target's key types
        if src.schema.field(s).type != schema.field(t).type:
            try:
                src = src.set_column(src.schema.get_field_index(s), s, src.column(s).cast(schema.field(t).type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise CarbonOptionError(f"{where}: source key {s!r} ({src.schema.field(s).type}) cannot be "
                                        f"compared with target key {t!r} ({schema.field(t).type}): {e}") from None
    metrics = MergeMetrics(source_rows=src.num_rows)
    matched_clauses = [c for c in m.clauses if c.matched]
    insert_clauses = [c for c in m.clauses if not c.matched]
    source_names = {n.lower(): n for n in src.column_names}
    with table.update_lock("MERGE", m.lock_timeout):
        # 1. target rows that can match: keys (+ every column when a matched clause needs them) and positions
        cols = list(schema.names) if _needs_target_values(m.clauses) else tkeys
        prune = _prune_expr(m.keys, src, schema) if len(m.keys) == 1 else AlwaysTrue()
        parts = []
        if prune is not None:
            source = open_source(table)
            plan = planned_reads.plan(source, prune)
            keyset = pc.unique(src.column(skeys[0])).drop_null() if len(m.keys) == 1 else None
            keyset = keyset.cast(schema.field(tkeys[0]).type) if keyset is not None else None
            # semi-join early (single key): only candidate rows get positions and stay in memory
            keep = (lambda t: pc.is_in(t.column(tkeys[0]), value_set=keyset)) if keyset is not None else None
            for part in position_tables(table.storage, plan.pieces, cols, schema, table.columns,
                                        keep, table_path=table.path):
                if part.num_rows:
                    parts.append(part)
        target = pa.concat_tables(parts) if parts else None
        # 2. the join, NULL keys excluded
        tidx = sidx = np.zeros(0, dtype=np.int64)
        if target is not None and target.num_rows:
            tk = _key_frame(target, tkeys, "__t")
            sk = _key_frame(src, skeys, "__s")
            kn = [f"__k{i}" for i in range(len(m.keys))]
            joined = tk.join(sk, keys=kn, join_type="inner", use_threads=True)
            tidx = joined.column("__t").to_numpy()
            sidx = joined.column("__s").to_numpy()
        metrics.rows_matched = int(len(np.unique(tidx)))
        faults.point("merge.joined")
        # 3. matched rows: first clause whose condition is TRUE acts
        new_parts: list[pa.Table] = []
        gone = np.zeros(0, dtype=np.int64)
        if matched_clauses and len(tidx):
            trows = target.take(pa.array(tidx))
            mdata = _qualified(trows.select(cols), m.target_alias)
            for n in src.column_names:
                mdata = mdata.append_column(f"{m.source_alias}.{n}", src.column(n).take(pa.array(sidx)))
            action = np.full(len(tidx), -1, dtype=np.int64)
            for i, c in enumerate(matched_clauses):
                free = action < 0
                if not free.any():
                    break
                hit = _mask(c.condition, mdata, f"{where}: WHEN MATCHED clause {i + 1}") & free
                action[hit] = i
            acted = action >= 0
            _check_duplicates(tidx[acted], target, tkeys, where)
            for i, c in enumerate(matched_clauses):
                sel = action == i
                if not sel.any():
                    continue
                if c.kind == "delete":
                    metrics.rows_deleted += int(sel.sum())
                else:
                    rows = _rows_for(c, mdata.filter(pa.array(sel)), schema, m.target_alias, m.source_alias,
                                     source_names, f"{where}: WHEN MATCHED clause {i + 1}")
                    new_parts.append(rows)
                    metrics.rows_updated += rows.num_rows
            gone = tidx[acted]
        # 4. source rows without a match
        if insert_clauses:
            unmatched = np.ones(src.num_rows, dtype=bool)
            unmatched[sidx] = False
            if unmatched.any():
                sdata = _qualified(src.filter(pa.array(unmatched)), m.source_alias, bare=True)
                action = np.full(sdata.num_rows, -1, dtype=np.int64)
                for i, c in enumerate(insert_clauses):
                    hit = _mask(c.condition, sdata, f"{where}: WHEN NOT MATCHED clause {i + 1}") & (action < 0)
                    action[hit] = i
                for i, c in enumerate(insert_clauses):
                    sel = action == i
                    if sel.any():
                        rows = _rows_for(c, sdata.filter(pa.array(sel)), schema, None, m.source_alias,
                                         source_names, f"{where}: WHEN NOT MATCHED clause {i + 1}")
                        new_parts.append(rows)
                        metrics.rows_inserted += rows.num_rows
        new = conform(pa.concat_tables(new_parts), schema, where) if new_parts else None
        positions = target.take(pa.array(gone)).select(list(POSITION_NAMES)) if len(gone) else None
        return commit_merge(table, positions, new, m.threshold, metrics)


def _check_duplicates(tidx: np.ndarray, target: pa.Table, tkeys: list[str], where: str) -> None:
    if len(tidx) < 2:
        return
    uniq, counts = np.unique(tidx, return_counts=True)
    many = counts > 1
    if not many.any():
        return
    first = int(uniq[many][0])
    key = ", ".join(f"{k}={target.column(k)[first].as_py()!r}" for k in tkeys)
    raise CarbonTableError(
        f"{where}: the target row with {key} is matched by {int(counts[many][0])} source rows "
        f"({int(many.sum())} target row(s) in all); a MERGE may change each target row at most once (as in "
        "Spark): make the source keys unique. Nothing was changed")


def commit_merge(table: TableHandle, positions: pa.Table | None, new: pa.Table | None, threshold: int,
                 metrics: MergeMetrics) -> MergeMetrics:
    """One commit: deltas for the rows at ``positions`` and one new segment of ``new``; the caller holds
    the update lock."""
    if positions is not None and positions.num_rows:
        matches = matches_from_positions(table, positions)
        metrics.files_with_deletes = len(matches)
        if new is not None and new.num_rows:
            commit_update(table, matches, new, threshold)
        else:
            commit_delete(table, matches, threshold)
    elif new is not None and new.num_rows:
        with reserve_load(table) as load:
            load.write([new])
            faults.point("dml.before_status")
    return metrics

