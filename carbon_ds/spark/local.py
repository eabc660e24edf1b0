"""Small reads on the driver.

Every relation read through the ``carbondata`` data source costs Python round trips before any row moves:
one to create the source, one to plan its partitions, then a Python task. For a read that touches little
(a dimension table, a point lookup on a sort column) that fixed cost is most of the query. Such a read is
done here, in the driver's process, and handed to Spark as a local relation: Spark then also knows its
size and can broadcast it. The limit is the Spark conf ``carbon_ds.sql.localRelationBytes``.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.types import StructType

from carbon_ds.errors import CarbonError, CarbonOptionError
from carbon_ds.names import CONF_LOCAL_BYTES
from carbon_ds.spark.arrow_schema import arrow_schema
from carbon_ds.table.read.planned_reads import scan_estimate
from carbon_ds.table.read.scan import Scan

__all__ = ["CONF_LOCAL_BYTES", "DEFAULT_LOCAL_BYTES", "arrow_frame", "local_frame", "local_limit", "row_width"]

# CONF_LOCAL_BYTES: a read touching at most this many stored bytes (scaled to its columns) runs on the driver
# into a local relation; 0 turns this off.
DEFAULT_LOCAL_BYTES = 4 << 20  # dimension tables; a point lookup on a sort column reads a blocklet or two
# Spark turns a local relation into rows on the driver and ships them inside tasks: past some rows that costs
# more than a Python task (TPC-H Q22's 150,000 customers took 8.6x Parquet's time read locally).
LOCAL_MAX_ROWS = 100_000


# Spark's DataType.defaultSize per type key; decimals are 8 bytes up to 18 digits, else 16.
_WIDTH = {"boolean": 1, "byte": 1, "short": 2, "integer": 4, "long": 8, "float": 4, "double": 8, "date": 4,
          "timestamp": 8, "timestamp_ntz": 8, "string": 20, "binary": 100}
_ROW_OVERHEAD = 8  # EstimationUtils.getSizePerRow adds 8 bytes per row


def _width(kind: Any) -> int:
    if not isinstance(kind, str):
        return 20  # nested: no estimate that matters here
    if kind.startswith("decimal"):
        precision = int(kind[len("decimal(") :].split(",")[0]) if "(" in kind else 10
        return 8 if precision <= 18 else 16
    return _WIDTH.get(kind.split(" ")[0], 20)


def row_width(fields: list[dict[str, Any]]) -> int:
    """Spark's estimated bytes per row of StructType JSON fields (what scales stored bytes to the columns read)."""
    return _ROW_OVERHEAD + sum(_width(f["type"]) for f in fields)


def local_limit(spark: Any) -> int:
    """The session's CONF_LOCAL_BYTES."""
    text = str(spark.conf.get(CONF_LOCAL_BYTES, str(DEFAULT_LOCAL_BYTES))).strip()
    try:
        return int(text or 0)
    except ValueError:
        raise CarbonOptionError(f"spark conf {CONF_LOCAL_BYTES} must be a number of bytes, found {text!r}") from None


def local_frame(spark: Any, path: str, fields: list[dict[str, Any]], columns: list[str], filter: str | None,
                segments: str | None, all_fields: list[dict[str, Any]],
                estimate: tuple[int, int | None] | None = None) -> Any:
    """A DataFrame of ``columns`` (declared as the StructType JSON ``fields``, same order) of the rows of
    ``path`` where ``filter`` holds, read here, when the read touches at most LOCAL_MAX_ROWS rows and the
    session's limit of stored bytes scaled by the share of ``fields`` in the width of ``all_fields`` (the
    table's); else None. ``estimate``: the read's ``scan_estimate`` when the caller has it."""
    limit = local_limit(spark)
    if limit <= 0 or not columns:
        return None
    stored, rows = estimate if estimate is not None else scan_estimate(path, filter, segments)
    if rows is None or rows > LOCAL_MAX_ROWS or stored * row_width(fields) // max(1, row_width(all_fields)) > limit:
        return None
    schema = StructType.fromJson({"type": "struct", "fields": fields})
    table = Scan(path, columns=list(columns), filter=filter, segments=segments).to_arrow()
    table = table.rename_columns([f["name"] for f in fields]).cast(arrow_schema(schema))
    return arrow_frame(spark, table, schema)


def arrow_frame(spark: Any, table: Any, schema: StructType) -> Any:
    """``spark.createDataFrame(table)`` that keeps every row: PySpark 4.1-4.3 silently drops every record batch
    after the first empty chunk of a chunked Arrow table (a filtered read over several segments makes such
    chunks), so the table is handed over as one chunk, and the rows Spark holds are counted against it. A
    table of no chunk at all (a filter that kept no row) becomes one empty chunk: PySpark's timestamp handling
    of nested columns cannot build a column of no chunks."""
    table = table.combine_chunks()
    if table.num_columns and table.column(0).num_chunks == 0:
        table = table.schema.empty_table()
    df = spark.createDataFrame(table, schema=schema)
    held = _local_rows(df)
    if held is not None and held != table.num_rows:
        raise CarbonError(f"Spark kept {held} of the {table.num_rows} rows handed to it as a local relation "
                          f"(columns {', '.join(schema.names)}); set {CONF_LOCAL_BYTES}=0 and report this")
    return df


def _local_rows(df: Any) -> int | None:
    """The rows of ``df``'s plan when it is a local relation (one JVM call), else None."""
    jdf = getattr(df, "_jdf", None)  # a Spark Connect DataFrame has no JVM side here
    if jdf is None:
        return None
    plan = jdf.queryExecution().analyzed()
    if plan.getClass().getSimpleName() != "LocalRelation":
        return None
    return int(plan.data().size())
