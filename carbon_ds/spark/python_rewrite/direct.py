"""Relations planned here, read by Spark's Arrow map: no data source round trips.

Spark plans a Python data source in two Python round trips per relation (creating the source, then its
partitions), each 25-110 ms of worker start-up and pickling, while the planning itself takes a millisecond
or two (measured on TPC-H SF 1). A query of eight relations spends most of a second there. Here the
``carbondata`` reader (the same class, so the same pruning, snapshot and deletes) plans in the driver's own
process and its partitions travel inside a ``mapInArrow`` over one row per partition: each task reads its
partition and yields the reader's Arrow batches, exactly what the data source would hand Spark.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.types import StructType

from carbon_ds.spark.source.datasource import CarbonReader
from carbon_ds.table.meta.options import normalize

__all__ = ["CONF_DIRECT", "direct_enabled", "direct_frame"]

CONF_DIRECT = "carbon_ds.sql.directRead"
"""Spark conf: ``false`` makes rewritten relations ``carbondata`` data source loads again."""


# Every task receives the whole partition list inside the function: past this many partitions the data
# source's own planning (each task gets only its partition) is the better deal.
MAX_PARTITIONS = 256


def direct_enabled(spark: Any) -> bool:
    return str(spark.conf.get(CONF_DIRECT, "true")).strip().lower() == "true"


def direct_frame(spark: Any, path: str, schema: StructType, options: dict[str, str]) -> Any:
    """The DataFrame of ``schema``'s columns of the table at ``path`` under the read ``options``, planned
    now; None for a read that declares no column (the data source's row count serves it) or that plans
    more than MAX_PARTITIONS partitions."""
    if not schema.fields:
        return None
    reader = CarbonReader(path, schema, normalize(options))
    reader.pinned = True  # a fresh plan per statement: its tasks keep the snapshot planned here
    parts = reader.partitions()
    if len(parts) > MAX_PARTITIONS:
        return None
    task = _Task(reader, parts)
    return spark.range(0, len(parts), 1, len(parts)).mapInArrow(task, schema)


class _Task:
    """The function each task runs: the batches of its partitions (one id per Range row)."""

    def __init__(self, reader: CarbonReader, parts: list):
        self.reader, self.parts = reader, parts

    def __call__(self, ids: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in ids:
            for i in batch.column(0).to_pylist():
                yield from self.reader.read(self.parts[i])
