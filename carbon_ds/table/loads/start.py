"""The write policy of every load: ``start_load`` for a new one, ``resume_load`` for one Spark commits.

An overwrite (whole table, a static partition or a dynamic one) holds ``LockFiles/update.lock`` from its
reservation to its commit or abort, so UPDATE and DELETE never base their delete deltas on rows an overwrite
replaces; the lock's token travels in the reservation, so a commit in another process releases it. After
the commit the load runs its declared post-commit hooks: ``compact`` is the MINOR compaction that the table
property ``auto_load_merge`` asks for (it reports failures as warnings: the load is committed either way); the
streaming sink's ``merge_*`` run it in the background, on by default (PostCommit).
``write_table``, the Spark writer and ``CarbonTable.load`` are thin calls of this.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from carbon_ds.table.loads.load_base import Load, Reservation
from carbon_ds.table.loads.protocol import load_for, reserve_load
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.locks import release_update_lock
from carbon_ds.table.meta.options import LoadOptions
from carbon_ds.table.meta.status.load_records import LoadHolder
from carbon_ds.table.ops.compaction.compact import auto_compact, merge_in_background
from carbon_ds.table.ops.views import refresh_after_load

__all__ = ["PostCommit", "resume_load", "start_load"]


@dataclass(frozen=True)
class PostCommit:
    """What runs after a load commits. ``compact``: automatic MINOR compaction when the table asks for it
    (``auto_load_merge``; off by default, as in CarbonData), in the committing thread. ``stream_merge``: the
    streaming sink's merge, in the background: ``"default"`` merges unless the table (or the setting) says
    ``auto_load_merge`` false, ``"always"`` merges regardless, None: see ``compact``. ``deep``: the stream's
    merge also merges level-2 and later results again (ops/compaction/selection.py, "Deep MINOR"); False keeps
    CarbonData's two MINOR levels."""

    compact: bool = True
    stream_merge: str | None = None
    deep: bool = True

    def names(self) -> tuple[str, ...]:
        if self.stream_merge is not None:
            return (f"merge_{self.stream_merge}" + ("_deep" if self.deep else ""),)
        return ("compact",) if self.compact else ()


_HOOKS: dict[str, Callable[[TableHandle], object]] = {
    "compact": auto_compact,
    "merge_default": lambda t: merge_in_background(t, default=True),
    "merge_always": lambda t: merge_in_background(t, force=True),
    "merge_default_deep": lambda t: merge_in_background(t, default=True, deep=True),
    "merge_always_deep": lambda t: merge_in_background(t, force=True, deep=True),
}


def start_load(table: TableHandle, options: LoadOptions | None = None, overwrite: bool = False,
               partition: dict | None = None, dynamic: bool = False, *, operation: str | None = None,
               lock_timeout: float = 0.0, pid_bound: bool = True, post_commit: PostCommit | None = None,
               holder: LoadHolder | None = None) -> Load:
    """Reserve a segment and return its load (``with start_load(t) as load: load.write(batches)``).

    Args:
        overwrite: replace the table's rows (with ``partition`` / ``dynamic``, only some partitions); takes
            the update lock first (CarbonTableError naming its holder when another operation has it).
        partition: a static partition spec {column: value} every row gets.
        dynamic: an overwrite replaces only the partitions this load writes.
        operation: how the lock names this load to a refused writer (default "INSERT OVERWRITE").
        lock_timeout: seconds to wait for the update lock.
        pid_bound: False when another process commits (Spark): the lock then outlives this process's pid.
        post_commit: the hooks to run after the commit (default: automatic compaction).
        holder: the process whose death ends the load (default: this one; Spark: the driver JVM); recorded
            in the load's record and, with ``pid_bound=False``, in the update lock.
    """
    hooks = (post_commit or PostCommit()).names()
    token = None
    if overwrite:
        name = operation or "INSERT OVERWRITE" + (" PARTITION" if partition or dynamic else "")
        pid = holder.pid if holder is not None and not pid_bound else None
        token = table.update_lock(name, lock_timeout, pid_bound, pid).token
    try:
        load = reserve_load(table, options, overwrite=overwrite, partition=partition, dynamic=dynamic,
                            update_lock_token=token, post_commit=hooks, holder=holder,
                            operation=operation or ("INSERT OVERWRITE" if overwrite else "LOAD"))
    except BaseException:
        if token is not None:
            release_update_lock(table.storage, table.path, token)
        raise
    return _attach(load)


def resume_load(table: TableHandle, reservation: Reservation, options: LoadOptions | None = None) -> Load:
    """The load of a reservation made elsewhere (Spark tasks and the driver's commit), with its hooks."""
    return _attach(load_for(table, reservation, options))


def _attach(load: Load) -> Load:
    # the table's on_commit materialized views first: automatic compaction after it leaves them stale
    load.on_commit.append(lambda t=load.table: refresh_after_load(t))
    for name in load.reservation.post_commit:
        hook = _HOOKS[name]
        load.on_commit.append(lambda h=hook, t=load.table: h(t))
    return load
