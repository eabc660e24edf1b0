"""``carbon_ds.write``: a DataFrame into a table; HASH / RANGE / LIST partitioned tables one partition per task.

CarbonData's own load repartitions the rows by partition id before writing, so each partition's rows are
written by one task as one set of files. A Python data source cannot ask Spark for a distribution, so it
happens where the DataFrame is in hand: ``carbon_ds.write`` and ``carbon_ds.sql``'s INSERT. An Arrow UDF
applies the table's own mapping (``partition_spec.Layout``) and gives each row a key chosen so that Spark's
hash repartitioning (Murmur3 of the key, pmod the number of tasks) sends partition index ``i`` to task
``i``; every id therefore lands in exactly one task, and no two ids share one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.functions import arrow_udf
from pyspark.sql.types import IntegerType

from carbon_ds.spark.session import register
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.partition_spec import Layout

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
    keyed = df.withColumn(KEY, key_udf(layout, keys)(F.col(f"`{column}`")))
    return keyed.repartition(n, KEY).drop(KEY)


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
    """
    register(df.sparkSession)
    text = os.fspath(path)
    writer = by_partition(df, text).write.format("carbondata").mode(mode)
    for key, value in options.items():
        writer = writer.option(key, _option_text(value))
    writer.save(text)
