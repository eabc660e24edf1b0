"""Starting a load: reserve a segment and pick the load for the table's layout (plain or partitioned)."""

from __future__ import annotations

from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.options import LoadOptions
from carbon_ds.table.write.carbon_partitioned import CarbonPartitionLoad
from carbon_ds.table.write.load import Load, Reservation, reserve
from carbon_ds.table.write.partitioned import PartitionedLoad
from carbon_ds.table.write.plain import PlainLoad


def load_for(table: TableHandle, reservation: Reservation, options: LoadOptions | None = None) -> Load:
    """The load of an existing reservation (Spark tasks and the driver's commit rebuild it from the
    pickled reservation)."""
    if table.carbon_partition is not None:
        return CarbonPartitionLoad(table, reservation, options)
    cls = PartitionedLoad if table.partition_columns else PlainLoad
    return cls(table, reservation, options)


def start_load(table: TableHandle, options: LoadOptions | None = None, overwrite: bool = False,
               partition: dict | None = None, dynamic: bool = False) -> Load:
    """Reserve segment N ("In Progress") and return its load: ``with start_load(t) as load: load.write(...)``.

    Args:
        overwrite: replace the table's rows (or, with ``partition`` / ``dynamic``, only some partitions).
        partition: a static partition spec {column: value} every row gets.
        dynamic: an overwrite replaces only the partitions this load writes.
    """
    return load_for(table, reserve(table, overwrite, partition, dynamic), options)
