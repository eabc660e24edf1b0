"""DELETE and UPDATE with the predicate (and SET values) evaluated by Spark: Spark filters the rows read with
their positions and collects only what the commit needs; the deltas and the new segment are committed
exactly as the pure-Python path does (carbon_ds.table.ops.dml.delete_update)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.logger import PySparkLogger
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, from_arrow_type

from carbon_ds.ddl.statement_parser import DeleteRows, UpdateRows
from carbon_ds.errors import CarbonOptionError
from carbon_ds.names import ROW_POSITIONS_OPTION, SOURCE
from carbon_ds.table.meta.handle import TableHandle, resolve_columns
from carbon_ds.table.meta.schema.conform import conform
from carbon_ds.table.ops.dml.delete_update import (
    DEFAULT_DELTA_THRESHOLD,
    commit_delete,
    commit_update,
    matches_from_positions,
)
from carbon_ds.table.read.task_reader import POSITION_NAMES


def _positions_frame(spark: Any, table: TableHandle):
    return spark.read.format(SOURCE).option(ROW_POSITIONS_OPTION, "true").load(table.uri)


@contextmanager
def _quiet_query_errors() -> Iterator[None]:
    """PySpark logs every analysis error with a query context (the JVM stack included) as it is raised; the
    ones ``_check_names`` turns into carbon-ds errors are not the user's to read twice. The logger is taken
    through PySpark's own class: PySpark logs to it with extra keywords, which a plain ``logging.Logger``
    created here first would refuse with a TypeError in place of every later analysis error."""
    logger = PySparkLogger.getLogger("SQLQueryContextLogger")
    before = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = before


def _check_names(spark: Any, table: TableHandle, op: str, where: str | None, sets: dict[str, str]) -> None:
    """Analyse WHERE and the SET expressions against the table's own columns, before the read that adds the
    row-position columns: a mistyped column is a CarbonOptionError naming it and the table's columns (Spark's
    error would list the internal position columns too)."""
    # an empty frame of the table's columns and types: analysed like the table, with no read of it
    plain = spark.createDataFrame([], from_arrow_schema(table.schema, prefer_timestamp_ntz=False))
    parts = ([("WHERE", where, lambda: plain.where(where))] if where else []) + [
        (f"SET {name} =", text, lambda text=text: plain.select(F.expr(text))) for name, text in sets.items()]
    for clause, text, analyse in parts:
        with _quiet_query_errors():
            try:
                analyse()
                continue
            except AnalysisException as e:
                params = e.getMessageParameters() or {}
                condition = e.getCondition() or ""
                first = (e.getMessage() or str(e)).split("\n")[0]
        if condition.startswith("UNRESOLVED_COLUMN") and "objectName" in params:
            raise CarbonOptionError(
                f"{op}: {clause} {text}: column {params['objectName']} is not a column of table {table.uri} "
                f"(columns: {', '.join(table.schema.names)})") from None
        raise CarbonOptionError(f"{op}: {clause} {text}: {first}") from None


def spark_delete(spark: Any, table: TableHandle, where: str | None, threshold: int = DEFAULT_DELTA_THRESHOLD,
                 lock_timeout: float = 0.0) -> int:
    """DELETE with the predicate evaluated by Spark (any Spark SQL predicate): Spark filters the rows read
    with their positions and collects only the positions; the driver writes the deltas and commits exactly
    as ``delete`` does. The update lock is held from before the read to the commit."""
    table.require_all_carbondata("DELETE")
    _check_names(spark, table, "DELETE", where, {})
    with table.update_lock("DELETE", lock_timeout):
        df = _positions_frame(spark, table)
        if where:
            df = df.where(where)
        pos = df.select(*POSITION_NAMES).toArrow()
        if pos.num_rows == 0:
            return 0
        return commit_delete(table, matches_from_positions(table, pos), threshold)


def spark_update(spark: Any, table: TableHandle, sets: dict[str, str], where: str | None,
                 threshold: int = DEFAULT_DELTA_THRESHOLD, lock_timeout: float = 0.0) -> int:
    """UPDATE with the predicate and the SET expressions (Spark SQL text) evaluated by Spark; the new rows
    and the old rows' positions are collected, then committed as ``update`` does (deltas + new segment in
    one tablestatus write)."""
    table.require_all_carbondata("UPDATE")
    schema = table.schema
    names = resolve_columns(schema, list(sets), f"table {table.uri}")
    by_col = dict(zip(names, sets.values(), strict=True))
    _check_names(spark, table, "UPDATE", where, by_col)
    with table.update_lock("UPDATE", lock_timeout):
        df = _positions_frame(spark, table)
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
        matches = matches_from_positions(table, got.select(list(POSITION_NAMES)))
        return commit_update(table, matches, new, threshold)


def run_row_dml(spark: Any, table: TableHandle, stmt: DeleteRows | UpdateRows) -> int:
    """Run a parsed DELETE / UPDATE statement on ``table``; returns the rows affected."""
    if isinstance(stmt, DeleteRows):
        return spark_delete(spark, table, stmt.where)
    return spark_update(spark, table, dict(stmt.sets), stmt.where)
