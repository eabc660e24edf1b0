"""A table's partitioning: none, Hive-style folders, or CarbonData's HASH / RANGE / LIST partition ids.

Both flavours are one concept seen through the same few questions (which columns, whether files of one
partition share a folder, whether rows must be routed to their partition before a write). Code that acts
differently per flavour looks the flavour up in one table keyed by its type (pruning in table.read.planned_reads,
the load class in table.loads.protocol, partition DDL in table.table) instead of testing which kind a
table has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from carbon_ds.table.partitions.id_spec import Layout


@dataclass(frozen=True)
class HivePartitioning:
    """``PARTITIONED BY (c1, c2)``: each partition is a folder ``c1=v1/c2=v2`` (NATIVE_HIVE)."""

    columns: tuple[str, ...]
    flavour: ClassVar[str] = "hive"
    # files of one partition live in one folder, so work per partition is work per folder
    by_folder: ClassVar[bool] = True
    # rows reach their folder by value inside any task: no repartitioning before a write
    routed_by_id: ClassVar[bool] = False

    def describe(self) -> str:
        return f"partitioned by ({', '.join(self.columns)})"


@dataclass(frozen=True)
class IdPartitioning:
    """CarbonData 1.3-1.5 HASH / RANGE / LIST: a row's partition id is in its data file's name."""

    layout: Layout
    flavour: ClassVar[str] = "id"
    by_folder: ClassVar[bool] = False
    # each id is written by one task (CarbonData repartitions by id before its load)
    routed_by_id: ClassVar[bool] = True

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.layout.column,)

    def describe(self) -> str:
        return f"{self.layout.type_name} partitioned on {self.layout.column}"


Partitioning = HivePartitioning | IdPartitioning


def partitioning_of(hive_columns: list[str], layout: Layout | None) -> Partitioning | None:
    if layout is not None:
        return IdPartitioning(layout)
    return HivePartitioning(tuple(hive_columns)) if hive_columns else None
