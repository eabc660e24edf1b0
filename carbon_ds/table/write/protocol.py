"""Starting a load: reserve a segment and pick the load for the table's layout (plain or partitioned).

The write policy (the update lock of an overwrite, post-commit hooks) is table.ops.loads.start_load's; this
is the mechanism under it, also used as is by UPDATE (which holds its own lock) and compaction.
"""

from __future__ import annotations

from dataclasses import replace

from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.options import LoadOptions
from carbon_ds.table.meta.partitioning import HivePartitioning, IdPartitioning
from carbon_ds.table.write.hive_partitioned import PartitionedLoad
from carbon_ds.table.write.id_partitioned import CarbonPartitionLoad
from carbon_ds.table.write.load_base import Load, Reservation, reserve
from carbon_ds.table.write.plain import PlainLoad

_LOADS: dict[type, type[Load]] = {type(None): PlainLoad, HivePartitioning: PartitionedLoad,
                                  IdPartitioning: CarbonPartitionLoad}


def load_for(table: TableHandle, reservation: Reservation, options: LoadOptions | None = None) -> Load:
    """The load of an existing reservation (Spark tasks and the driver's commit rebuild it from the
    pickled reservation)."""
    return _LOADS[type(table.partitioning)](table, reservation, options)


def reserve_load(table: TableHandle, options: LoadOptions | None = None, overwrite: bool = False,
                 partition: dict | None = None, dynamic: bool = False, update_lock_token: str | None = None,
                 post_commit: tuple[str, ...] = ()) -> Load:
    """Reserve segment N ("In Progress") and return its load: ``with reserve_load(t) as load: load.write(...)``.

    Args:
        overwrite: replace the table's rows (or, with ``partition`` / ``dynamic``, only some partitions).
        partition: a static partition spec {column: value} every row gets.
        dynamic: an overwrite replaces only the partitions this load writes.
        update_lock_token: the update lock the load releases when it commits or aborts.
        post_commit: names of the hooks to run after the commit (recorded in the reservation).
    """
    reservation = reserve(table, overwrite, partition, dynamic)
    return load_for(table, replace(reservation, update_lock_token=update_lock_token, post_commit=post_commit),
                    options)
