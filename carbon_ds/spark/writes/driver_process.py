"""The process whose death ends a Spark write: the driver JVM, found from a Python worker on the driver.

A Spark write reserves its segment in ``writer()``, which Spark runs in a short-lived Python worker of the
driver; tasks run in other workers and ``commit()`` in yet another. None of their pids says whether the
write still runs, but the driver JVM's does: every one of those workers is its child (directly, or through
``pyspark.daemon``), so it is the nearest ancestor process named ``java`` (Linux ``/proc``). When it cannot
be found (no ``/proc``, another launcher) the load's record carries no pid and the age rule of
``carbon_ds.table.meta.status.load_records`` applies.
"""

from __future__ import annotations

import os

from carbon_ds.table.meta.status.load_records import LoadHolder

DRIVER = "Spark driver JVM"
_MAX_DEPTH = 32  # a process tree is never this deep; stops a loop on a damaged /proc


def _parent_and_name(pid: int) -> tuple[int, str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    name = stat[stat.find("(") + 1: stat.rfind(")")]
    try:
        return int(stat[stat.rfind(")") + 1:].split()[1]), name
    except (IndexError, ValueError):
        return None


def java_ancestor(pid: int | None = None) -> int | None:
    """The nearest ancestor of ``pid`` (default: this process) named ``java``, or None."""
    current = os.getpid() if pid is None else pid
    for _ in range(_MAX_DEPTH):
        found = _parent_and_name(current)
        if found is None:
            return None
        parent, _name = found
        if parent <= 1:
            return None
        up = _parent_and_name(parent)
        if up is None:
            return None
        if up[1] == "java":
            return parent
        current = parent
    return None


def driver_holder() -> LoadHolder:
    """The holder of a load reserved in this worker: the driver JVM (pid None when not found)."""
    return LoadHolder.of_pid(java_ancestor(), DRIVER)
