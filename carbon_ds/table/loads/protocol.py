"""Starting a load: reserve a segment and pick the load for the table's layout (plain or partitioned).

The write policy (the update lock of an overwrite, post-commit hooks) is table.loads.start.start_load's; this
is the mechanism under it, also used as is by UPDATE (which holds its own lock) and compaction.
"""

from __future__ import annotations

from dataclasses import replace

from carbon_ds.table.loads.load_base import Load, Reservation, fail_dead_loads, reserve
from carbon_ds.table.loads.plain import PlainLoad
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.options import LoadOptions
from carbon_ds.table.meta.status.load_records import IN_PROGRESS, LoadHolder
from carbon_ds.table.partitions.hive_load import PartitionedLoad
from carbon_ds.table.partitions.id_load import CarbonPartitionLoad
from carbon_ds.table.partitions.partitioning import HivePartitioning, IdPartitioning

_LOADS: dict[type, type[Load]] = {type(None): PlainLoad, HivePartitioning: PartitionedLoad,
                                  IdPartitioning: CarbonPartitionLoad}


def load_for(table: TableHandle, reservation: Reservation, options: LoadOptions | None = None) -> Load:
    """The load of an existing reservation (Spark tasks and the driver's commit rebuild it from the
    pickled reservation)."""
    return _LOADS[type(table.partitioning)](table, reservation, options)


def reserve_load(table: TableHandle, options: LoadOptions | None = None, overwrite: bool = False,
                 partition: dict | None = None, dynamic: bool = False, update_lock_token: str | None = None,
                 post_commit: tuple[str, ...] = (), holder: LoadHolder | None = None,
                 operation: str = "LOAD") -> Load:
    """Reserve segment N ("In Progress") and return its load: ``with reserve_load(t) as load: load.write(...)``.

    Args:
        overwrite: replace the table's rows (or, with ``partition`` / ``dynamic``, only some partitions).
        partition: a static partition spec {column: value} every row gets.
        dynamic: an overwrite replaces only the partitions this load writes.
        update_lock_token: the update lock the load releases when it commits or aborts.
        post_commit: names of the hooks to run after the commit (recorded in the reservation).
        holder: the process whose death ends the load (default: this one; a Spark write: the driver).
        operation: what the load's record calls it.

    Loads the reservation found dead (their writer gone) lose their files here.
    """
    dead: list[Reservation] = []
    reservation = reserve(table, overwrite, partition, dynamic, holder, operation, dead)
    remove_dead_files(table, dead)
    return load_for(table, replace(reservation, update_lock_token=update_lock_token, post_commit=post_commit),
                    options)


def remove_dead_files(table: TableHandle, dead: list[Reservation]) -> None:
    """Delete the files (and records) of loads already marked "Failure" as dead."""
    for r in dead:
        load_for(table, r).remove_files()


def end_dead_loads(table: TableHandle, force: bool = False) -> list[str]:
    """Mark the loads whose writer is gone "Failure" and remove their files (``carbon-ds unlock``); with
    ``force`` also those whose writer cannot be checked from here (meta.status.load_records). Returns
    ``"<segment>: <why>"`` for each."""
    if not any(e.status in IN_PROGRESS for e in table.load_details()):
        return []  # the common case: one read, no lock
    with table.edit_status("UNLOCK (loads of writers that are gone)") as edit:
        dead = fail_dead_loads(table, edit.entries, force=force)
    remove_dead_files(table, [r for r, _why in dead])
    return [f"{r.segment_id}: {why}" for r, why in dead]
