"""What each carbondata relation of a query reads once the Spark extension has planned it (jvm/src
PlannedQueries.reads): one JVM call answering in JSON, so no test walks Spark's plans from Python."""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class Read:
    """One carbondata relation of an optimized plan (subqueries included), in plan order."""

    path: str | None
    columns: tuple[str, ...]  # the attributes it declares
    types: tuple[str, ...]  # their Spark types (a decimal read unscaled is a bigint)
    filter: str | None  # its filter option
    exact_filter: str | None  # the part of it that must hold exactly (the user's; "": none), None: all of it
    pruned: bool  # made by the extension's PruneCarbonRelations
    unscaled: tuple[str, ...]  # "name:precision:scale" of each decimal read as its unscaled bigint
    local: bool  # rows read at planning, run as a local table scan
    partitions: int | None  # input partitions planned by the extension's one call, None: Spark plans them


def reads(df) -> list[Read]:
    """The reads of DataFrame ``df`` as Spark will run them."""
    return _parse(df.sparkSession._jvm.carbonds.spark.PlannedQueries.reads(df._jdf))


def statement_reads(spark, text: str) -> list[Read]:
    """The reads of SQL ``text`` (an INSERT ... SELECT too), planned without running it."""
    return _parse(spark._jvm.carbonds.spark.PlannedQueries.reads(spark._jsparkSession, text))


def _parse(answer: str) -> list[Read]:
    return [Read(e["path"], tuple(e["columns"]), tuple(e["types"]), e["filter"], e.get("exact_filter"), e["pruned"],
                 tuple(e["unscaled"]), e["local"], e["partitions"]) for e in json.loads(answer)]
