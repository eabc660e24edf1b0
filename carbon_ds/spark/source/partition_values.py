"""Reads of a HASH / RANGE / LIST table's partition column alone, as rows Spark makes itself.

When every file read holds one value of the partition column (carbon_ds.table.partitions.id_partition_values), the read
needs no Python task: its rows are ``spark.range(n)`` with each id mapped to its value by the running row
counts, so ``SELECT hour, count(*) GROUP BY hour`` over a table partitioned by hour costs Spark's own row
generation, as a Parquet table partitioned by folders does. Like a local read, the rows are the table's when
the DataFrame is made.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from itertools import accumulate
from typing import Any

from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from carbon_ds.expressions import AlwaysTrue
from carbon_ds.names import CONF_PARTITION_VALUES
from carbon_ds.table.meta.options import parse_bool
from carbon_ds.table.partitions.id_partition_values import partition_value_rows
from carbon_ds.table.read import pruning
from carbon_ds.table.read.snapshot import Snapshot

__all__ = ["CONF_PARTITION_VALUES", "known_values", "values_frame"]


def known_values(spark: Any, source: Snapshot, names: list[str] | None, filter: str | None,
                 schema: StructType) -> list[tuple[Any, int]] | None:
    """(value, rows) of the one column ``schema`` declares (the partition column ``names[0]``) where
    ``filter`` holds, from metadata; None when the files must be read."""
    on = parse_bool(spark.conf.get(CONF_PARTITION_VALUES, "true"), f"spark conf {CONF_PARTITION_VALUES}", True)
    if not on or len(schema.fields) != 1:
        return None
    expr = pruning.as_expr(filter, source.schema, source.uri) if filter else AlwaysTrue()
    rows = partition_value_rows(source, names, expr)
    if rows is None or any(_literal(v) is None for v, _n in rows):
        return None
    return rows


def values_frame(spark: Any, rows: list[tuple[Any, int]], schema: StructType) -> Any:
    """A DataFrame of ``rows`` (from known_values) in the one column ``schema`` declares."""
    field = schema.fields[0]
    if not rows:
        return spark.range(0).select(F.lit(None).cast(field.dataType).alias(field.name))
    ends = list(accumulate(n for _v, n in rows))
    literals = [_literal(v) for v, _n in rows]
    # one expression parsed by Spark (a Column built call by call costs a JVM round trip per call), a
    # balanced tree of comparisons: log2(values) per row rather than one per value
    value = F.expr(f"CAST({_pick(ends, literals, 0, len(ends))} AS {field.dataType.simpleString()})")
    return spark.range(ends[-1]).select(value.alias(field.name))


def _pick(ends: list[int], literals: list[str | None], lo: int, hi: int) -> str:
    """The literal of the value whose rows hold ``id``, for ``id`` known to be in values lo..hi-1's rows."""
    if hi - lo == 1:
        return literals[lo]
    mid = (lo + hi) // 2
    return f"IF(id < {ends[mid - 1]}, {_pick(ends, literals, lo, mid)}, {_pick(ends, literals, mid, hi)})"


def _literal(v: Any) -> str | None:
    """``v`` as a Spark SQL literal; None for other values (a timestamp would pass through the session time
    zone, a string through SQL quoting): the column is then read."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return f"{v}L"
    if isinstance(v, Decimal):
        return f"{v}BD"
    if isinstance(v, dt.date) and not isinstance(v, dt.datetime):
        return f"DATE '{v.isoformat()}'"
    return None
