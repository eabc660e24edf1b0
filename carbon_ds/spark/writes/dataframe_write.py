"""``carbon_ds.write``: a DataFrame into a table; HASH / RANGE / LIST partitioned tables one partition per task.

CarbonData's own load repartitions the rows by partition id before writing, so each partition's rows are
written by one task as one set of files. A Python data source cannot ask Spark for a distribution, so it
happens where the DataFrame is in hand: ``carbon_ds.write`` and ``carbon_ds.sql``'s INSERT. A Spark
expression (or, for types Spark compares differently, an Arrow UDF) applies the table's own mapping
(``id_spec.Layout``) and gives each row a key chosen so that Spark's hash repartitioning (Murmur3 of
the key, pmod the number of tasks) sends partition index ``i`` to task ``i``; every id therefore lands in
exactly one task, and no two ids share one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.functions import arrow_udf
from pyspark.sql.types import IntegerType

from carbon_ds.format.thrift.structs import PartitionType
from carbon_ds.names import SOURCE
from carbon_ds.spark.session import register
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.partitions.id_spec import Layout

KEY = "__carbon_partition_key"
CANDIDATES = 64  # keys tried per task when looking for one that hashes to each task
_SPREAD: dict[int, list[int]] = {}


def spread_keys(spark: Any, n: int) -> list[int]:
    """For each task ``i < n`` an int that ``repartition(n, key)`` sends to task ``i``, found by Spark's own
    ``pmod(hash(key), n)`` (the expression of its hash partitioning) over a few candidates; cached per n."""
    if n not in _SPREAD:
        rows = (spark.range(0, CANDIDATES * n)
                .select(F.col("id").cast("int").alias("k"), F.expr(f"pmod(hash(cast(id AS INT)), {n})").alias("b"))
                .collect())
        keys: dict[int, int] = {}
        for r in rows:
            keys.setdefault(int(r.b), int(r.k))
        # a task no candidate reached (never seen in practice) shares a task: still one task per id
        _SPREAD[n] = [keys.get(i, i) for i in range(n)]
    return _SPREAD[n]


def key_udf(layout: Layout, keys: list[int]) -> Callable:
    """An Arrow UDF: the partition column -> the repartition key of each row's partition index."""
    by_index = np.asarray(keys, dtype=np.int32)

    def partition_key(col: pa.Array) -> pa.Array:
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        if col.type != layout.type:
            # a value the table type cannot hold fails in the writer, with its message
            col = col.cast(layout.type, safe=False)
        return pa.array(by_index[layout.indexes(col)], pa.int32())

    return arrow_udf(partition_key, IntegerType())


def _is_plain(t: pa.DataType, kind: PartitionType) -> bool:
    """Whether Spark compares values of Arrow type ``t`` as the layout's pyarrow mapping does, so the key can
    be a Spark expression: integers, decimals, dates and strings (floats differ on NaN, timestamps on the
    session's time zone for a bound's literal)."""
    return (pa.types.is_integer(t) or pa.types.is_date32(t) or pa.types.is_string(t)
            or (pa.types.is_decimal(t) and kind != PartitionType.HASH))


def key_column(layout: Layout, keys: list[int], column: str) -> Column | None:
    """The repartition key of each row's partition index as a Spark expression, evaluated in the JVM, for
    RANGE and LIST partitions (and HASH of an integer) on the types of ``_is_plain``; None for the others,
    which take the Arrow UDF (``key_udf``). A key that differed from the writer's own mapping would only
    send a row to another task, which still writes it to its own partition."""
    c = F.col(f"`{column}`")
    if not _is_plain(layout.type, layout.kind):
        return None
    if layout.kind == PartitionType.RANGE:
        # index i (1-based) holds bounds[i-2] <= v < bounds[i-1]; past the last bound, and NULL: DEFAULT (0)
        index = F.when(c.isNull(), F.lit(0))
        for i, bound in enumerate(layout.bounds):
            index = index.when(c < F.lit(bound), F.lit(i + 1))
        index = index.otherwise(F.lit(0))
    elif layout.kind == PartitionType.LIST:
        index = F.when(c.isNull(), F.lit(0))
        for i, group in enumerate(layout.groups):
            index = index.when(c.isin(*group), F.lit(i + 1))
        index = index.otherwise(F.lit(0))
    elif pa.types.is_integer(layout.type) and layout.type.bit_width <= 32:
        # Java's Integer.hashCode is the value: (h & 0x7FFFFFFF) % num
        index = F.when(c.isNull(), F.lit(0)).otherwise(
            (c.cast("bigint").bitwiseAND(F.lit(0x7FFFFFFF)) % F.lit(layout.num)).cast("int"))
    elif pa.types.is_integer(layout.type):
        # Long.hashCode folds the halves: (v ^ v >>> 32), whose low 31 bits then pick the index
        v = c.cast("bigint")
        index = F.when(c.isNull(), F.lit(0)).otherwise(
            (v.bitwiseXOR(F.shiftrightunsigned(v, 32)).bitwiseAND(F.lit(0x7FFFFFFF)) % F.lit(layout.num))
            .cast("int"))
    else:
        return None
    return F.element_at(F.array(*[F.lit(k) for k in keys]), index + 1)


def by_partition(df: DataFrame, path: str | os.PathLike) -> DataFrame:
    """``df`` repartitioned so that each task holds the rows of one partition id when ``path`` is a HASH /
    RANGE / LIST partitioned table; otherwise ``df`` itself."""
    text = os.fspath(path)
    if not TableHandle.exists(text):
        return df
    layout = TableHandle.open(text).id_layout
    if layout is None:
        return df
    by_lower = {c.lower(): c for c in df.columns}
    column = by_lower.get(layout.column.lower())
    if column is None:
        return df  # the writer reports the missing column
    n = len(layout.ids)
    keys = spread_keys(df.sparkSession, n)
    key = key_column(layout, keys, column)
    if key is None:
        # a Python UDF: Spark evaluates it only in a projection, so the key travels as a column
        keyed = df.withColumn(KEY, key_udf(layout, keys)(F.col(f"`{column}`")))
        return keyed.repartition(n, KEY).drop(KEY)
    # an expression: hashed where the rows are repartitioned, without a column (one of 51 more to shuffle
    # and drop doubled the load's shuffle)
    return df.repartition(n, key)


def _option_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def write(df: DataFrame, path: str | os.PathLike, mode: str = "append", **options: Any) -> None:
    """``df.write.format("carbondata").mode(mode).options(**options).save(path)``; into a HASH / RANGE /
    LIST partitioned table the rows are first repartitioned by partition id, so each Spark task writes
    one partition's files (as CarbonData's load does) instead of every task writing every partition.

    Args:
        df: the rows to write.
        path: the table folder (created on the first write, as with ``df.write``).
        mode: "append" or "overwrite".
        **options: write options (sort_columns, partition_by, partition, ...); lists are joined with
            commas and dicts given as JSON.

    Example:
        >>> df = spark.read.format("carbondata").load(path)
        >>> carbon_ds.write(df, f"{tmp}/copy", sort_columns="vin")
        >>> carbon_ds.CarbonTable.open(f"{tmp}/copy").count() == df.count()
        True
    """
    register(df.sparkSession)
    text = os.fspath(path)
    writer = by_partition(df, text).write.format(SOURCE).mode(mode)
    for key, value in options.items():
        writer = writer.option(key, _option_text(value))
    writer.save(text)
