"""MERGE INTO with the join run in Spark (``carbon_ds.sql(spark, "MERGE INTO ...")``, docs/dml.md).

The target is read with its row positions (``with_row_positions``) and joined with the source on the ON
condition (inner; right outer when a NOT MATCHED clause exists, so unmatched source rows survive, target
rows without a match never leave Spark). One Spark expression picks, per joined row, the first clause whose
condition is TRUE and computes the written columns; only the rows a clause acts on are collected: the
positions of the matched ones (their delete deltas) and the new values (one new segment). The commit is
carbon_ds.table.ops.dml.arrow_merge's: one tablestatus write under the update lock.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, from_arrow_type

from carbon_ds import faults
from carbon_ds.ddl.statement_parser import MergeClause, MergeInto
from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.names import ROW_POSITIONS_OPTION, SOURCE
from carbon_ds.table.meta.handle import TableHandle, resolve_columns
from carbon_ds.table.meta.schema.conform import conform
from carbon_ds.table.ops.dml.arrow_merge import MergeMetrics, TableMerger, commit_merge
from carbon_ds.table.ops.dml.delete_update import DEFAULT_DELTA_THRESHOLD
from carbon_ds.table.read.task_reader import POSITION_FIELDS, POSITION_NAMES

ACTION = "__merge_action"
CONF_DRIVER_ROWS = "carbon_ds.merge.driverJoinRows"
"""Spark conf: a MERGE whose ON is an equality of key columns and whose clauses are unconditional ``UPDATE SET
*`` / ``DELETE`` / ``INSERT *`` collects a source of at most this many rows and joins it in pyarrow beside
the target's key column (carbon_ds.table.ops.dml.arrow_merge), instead of reading the target's rows into Spark;
0 turns that off."""
DEFAULT_DRIVER_ROWS = 2_000_000
# key types whose equality is the same in Spark and in pyarrow's join (floats are not: Spark's join keys
# make -0.0 equal 0.0 and NaN equal NaN)
_DRIVER_KEY_TYPES = (pa.types.is_integer, pa.types.is_string, pa.types.is_large_string, pa.types.is_date,
                     pa.types.is_decimal, pa.types.is_timestamp, pa.types.is_boolean, pa.types.is_binary)
_EQUALITY = re.compile(r"\s*`?(\w+)`?\s*\.\s*`?(\w+)`?\s*=\s*`?(\w+)`?\s*\.\s*`?(\w+)`?\s*")


def _q(alias: str, name: str):
    return F.col(f"`{alias}`.`{name}`")


def _written(clause: MergeClause, name: str, ta: str, sa: str, source_cols: dict[str, str], where: str):
    """The value clause ``clause`` writes into target column ``name``."""
    if clause.sets is None:
        src = source_cols.get(name.lower())
        if src is None:
            raise CarbonOptionError(
                f"{where}: {'UPDATE SET *' if clause.matched else 'INSERT *'} needs source column {name!r}; "
                f"the source has {', '.join(source_cols.values())}")
        return _q(sa, src)
    for col, expr in clause.sets:
        if col.lower() == name.lower():
            return F.expr(expr)
    return _q(ta, name) if clause.matched else F.lit(None)


def _target_columns(schema: pa.Schema, on: str, clauses: list[MergeClause]) -> list[str]:
    """The target columns the statement can use: every column whose name appears in its texts (a superset:
    reading one too many costs little, one too few would fail), all when an UPDATE sets some columns only
    (the others keep their values) or a text holds a ``*``."""
    texts = [on] + [c.condition or "" for c in clauses] + [v for c in clauses for _k, v in (c.sets or ())]
    if any(c.action == "update" and c.sets is not None for c in clauses) or any("*" in t for t in texts):
        return list(schema.names)
    words = {w.lower() for t in texts for w in re.findall(r"\w+", t)}
    return [n for n in schema.names if n.lower() in words] or [schema.names[0]]


def _equi_keys(on: str, target_alias: str, source_alias: str) -> dict[str, str] | None:
    """``{target column: source column}`` when ``on`` is an AND of ``target.x = source.y`` equalities."""
    keys: dict[str, str] = {}
    for part in re.split(r"(?i)\s+AND\s+", on.strip()):
        m = _EQUALITY.fullmatch(part)
        if m is None:
            return None
        a1, c1, a2, c2 = m.groups()
        if (a1.lower(), a2.lower()) == (target_alias.lower(), source_alias.lower()):
            keys[c1] = c2
        elif (a1.lower(), a2.lower()) == (source_alias.lower(), target_alias.lower()):
            keys[c2] = c1
        else:
            return None
    return keys or None


def _driver_merge(spark: Any, table: TableHandle, source_df: Any, on: str, clauses: list[MergeClause],
                  target_alias: str, source_alias: str, threshold: int, lock_timeout: float) -> MergeMetrics | None:
    """The MERGE joined in pyarrow (CONF_DRIVER_ROWS), or None when it does not qualify: its source has more
    rows, its ON or clauses need Spark SQL, or a key or written column's type differs between source and
    target (Spark would cast it)."""
    text = str(spark.conf.get(CONF_DRIVER_ROWS, str(DEFAULT_DRIVER_ROWS))).strip()
    try:
        limit = int(text or 0)
    except ValueError:
        raise CarbonOptionError(f"spark conf {CONF_DRIVER_ROWS} must be a number of rows, found {text!r}") from None
    keys = _equi_keys(on, target_alias, source_alias)
    if limit <= 0 or keys is None or any(c.condition is not None or c.sets is not None for c in clauses):
        return None
    schema = table.schema
    by_lower = {n.lower(): n for n in schema.names}
    source_types = {f.name.lower(): f.dataType for f in source_df.schema.fields}
    if any(t.lower() not in by_lower or s.lower() not in source_types for t, s in keys.items()):
        return None  # the Spark path names what is missing
    for t, s in keys.items():
        f = schema.field(by_lower[t.lower()])
        if not any(kind(f.type) for kind in _DRIVER_KEY_TYPES) or source_types[s.lower()] != from_arrow_type(f.type):
            return None
    if any(c.action != "delete" for c in clauses) and any(
            source_types.get(f.name.lower()) != from_arrow_type(f.type) for f in schema):
        return None
    rows = source_df.limit(limit + 1).toArrow()
    if rows.num_rows > limit:
        return None
    merger = TableMerger(table, rows, on={by_lower[t.lower()]: s for t, s in keys.items()},
                         source_alias=source_alias, target_alias=target_alias, threshold=threshold,
                         lock_timeout=lock_timeout)
    for c in clauses:
        if c.matched:
            merger.when_matched_delete() if c.action == "delete" else merger.when_matched_update_all()
        else:
            merger.when_not_matched_insert_all()
    return merger.execute()


def spark_merge(spark: Any, table: TableHandle, source_df: Any, on: str, clauses: list[MergeClause],
                target_alias: str = "target", source_alias: str = "source",
                threshold: int = DEFAULT_DELTA_THRESHOLD, lock_timeout: float = 0.0) -> MergeMetrics:
    """MERGE ``source_df`` (a Spark DataFrame) into ``table``: ``on`` and the clauses' conditions and values
    are Spark SQL over ``target_alias.col`` / ``source_alias.col``."""
    where = f"MERGE into {table.uri}"
    if not clauses:
        raise CarbonOptionError(f"{where}: no WHEN clause")
    if target_alias.lower() == source_alias.lower():
        raise CarbonOptionError(f"{where}: the target and the source are both called {target_alias!r}; give one "
                                "an alias")
    schema = table.schema
    table.require_all_carbondata("MERGE")
    for c in clauses:
        if c.sets is not None:
            resolve_columns(schema, [col for col, _ in c.sets], f"{where}: SET / INSERT columns")
    driver = _driver_merge(spark, table, source_df, on, clauses, target_alias, source_alias, threshold,
                           lock_timeout)
    if driver is not None:
        return driver
    source_cols = {n.lower(): n for n in source_df.columns}
    matched = [c for c in clauses if c.matched]
    inserts = [c for c in clauses if not c.matched]
    ordered = matched + inserts
    key_cols = [k for k in dict.fromkeys(re.findall(rf"\b{re.escape(target_alias)}\.`?(\w+)`?", on))
                if k.lower() in {n.lower() for n in schema.names}]
    metrics = MergeMetrics()
    with table.update_lock("MERGE", lock_timeout):
        # only the target columns the statement uses are read (the data source reads the schema it is given)
        read_schema = pa.schema([*[schema.field(n) for n in _target_columns(schema, on, ordered)], *POSITION_FIELDS])
        tdf = (spark.read.format(SOURCE).schema(from_arrow_schema(read_schema, prefer_timestamp_ntz=False))
               .option(ROW_POSITIONS_OPTION, "true").load(table.uri).alias(target_alias))
        sdf = source_df.alias(source_alias)
        joined = tdf.join(sdf, F.expr(on), "right" if inserts else "inner")
        is_matched = _q(target_alias, POSITION_NAMES[0]).isNotNull()
        action = None
        for i, c in enumerate(ordered):
            cond = is_matched if c.matched else ~is_matched
            if c.condition:
                cond = cond & F.expr(c.condition)
            action = F.when(cond, F.lit(i)) if action is None else action.when(cond, F.lit(i))
        joined = joined.withColumn(ACTION, action)
        outs = []
        writers = [i for i, c in enumerate(ordered) if c.action != "delete"]
        for f in schema:
            val = None
            for i in writers:
                e = _written(ordered[i], f.name, target_alias, source_alias, source_cols,
                             f"{where}: WHEN {'' if ordered[i].matched else 'NOT '}MATCHED clause")
                val = F.when(F.col(ACTION) == i, e) if val is None else val.when(F.col(ACTION) == i, e)
            val = F.lit(None) if val is None else val
            outs.append(val.cast(from_arrow_type(f.type)).alias(f.name))
        got = (joined.where(F.col(ACTION).isNotNull())
               .select(*outs, *[_q(target_alias, n).alias(n) for n in POSITION_NAMES],
                       *[_q(target_alias, k).alias(f"__key_{k}") for k in key_cols], F.col(ACTION))
               .toArrow())
        faults.point("merge.joined")
        acts = got.column(ACTION).to_numpy(zero_copy_only=False).astype(np.int64)
        kinds = np.array([c.action for c in ordered] or ["none"])
        file_valid = pc.is_valid(got.column(POSITION_NAMES[0])).to_numpy(zero_copy_only=False)
        positions = got.filter(pa.array(file_valid)).select(list(POSITION_NAMES))
        _check_duplicates(positions, got.filter(pa.array(file_valid)), key_cols, where)
        kind = kinds[acts] if len(acts) else np.array([], dtype=str)
        metrics.rows_matched = int(file_valid.sum())
        metrics.rows_updated = int(((kind == "update") & file_valid).sum())
        metrics.rows_deleted = int(((kind == "delete") & file_valid).sum())
        metrics.rows_inserted = int((kind == "insert").sum())
        write = (kind == "update") | (kind == "insert")
        new = conform(got.filter(pa.array(write)).select(schema.names), schema, where) if write.any() else None
        return commit_merge(table, positions if positions.num_rows else None, new, threshold, metrics)


def _check_duplicates(positions: pa.Table, rows: pa.Table, key_cols: list[str], where: str) -> None:
    if positions.num_rows < 2:
        return
    file_ids = pc.dictionary_encode(positions.column(POSITION_NAMES[0])).combine_chunks().indices
    cols = [file_ids.to_numpy()] + [positions.column(n).to_numpy() for n in POSITION_NAMES[1:]]
    keys = np.stack([np.asarray(c, dtype=np.int64) for c in cols], axis=1)
    _u, first, counts = np.unique(keys, axis=0, return_index=True, return_counts=True)
    many = counts > 1
    if not many.any():
        return
    i = int(first[many][0])
    key = (", ".join(f"{k}={rows.column(f'__key_{k}')[i].as_py()!r}" for k in key_cols) or
        f"position {positions.column(POSITION_NAMES[0])[i].as_py()} row {positions.column(POSITION_NAMES[3])[i]}")
    raise CarbonTableError(
        f"{where}: the target row with {key} is matched by {int(counts[many][0])} source rows "
        f"({int(many.sum())} target row(s) in all); a MERGE may change each target row at most once (as in "
        "Spark): make the source keys unique. Nothing was changed")


def run_merge_statement(spark: Any, table: TableHandle, stmt: MergeInto) -> MergeMetrics:
    """Run a parsed ``MERGE INTO``: the source table or query is Spark's."""
    source = spark.sql(stmt.source) if stmt.source_is_query else spark.table(stmt.source)
    return spark_merge(spark, table, source, stmt.on, list(stmt.clauses), stmt.target_alias, stmt.source_alias)
