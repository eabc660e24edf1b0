"""What PySpark's reused Python workers keep out of their garbage collector's way.

PySpark's daemon runs a full ``gc.collect()`` after every task and every planning call a reused worker
serves (``pyspark/daemon.py``). A full collection walks every container object the process holds: once a
worker has imported carbon-ds, pyarrow and numba and read a table, about 200,000 of them, 110-150 ms a
collection on this project's 2-core machine. Over one run of a materialized-view test (about 150 small
queries), those collections took 62 of the run's 199 CPU seconds (py-spy over the daemon's workers, at the
collection line of ``daemon.manager``). A query of a few small tables pays it for each of its
tasks and for each planning call.

``settle`` (run at the end of every data source entry point, ``carbon_ds.spark.messages.entry_point``) moves
what is alive after a call into the collector's permanent generation (``gc.freeze``) once enough has piled
up, so the daemon's collection walks only what later calls make. Garbage is collected before each freeze,
so only live objects are frozen; one of them that later becomes cyclic garbage (an evicted cache entry)
stays until the next full pass, which runs whenever the frozen set has doubled since the last one. It does
nothing outside a daemon-forked worker: the driver's own process is never touched.
"""

from __future__ import annotations

import gc
import sys

from carbon_ds.spark import worker_daemon

# objects the collector walks before a freeze pays off: a full collection of this many takes a few ms
UNFROZEN_LIMIT = 20_000

_full_pass_size = 0  # the frozen set's size after the last full pass


def in_daemon_worker() -> bool:
    """Whether this process is a worker PySpark's daemon forked (``python -m pyspark.daemon``, or the same
    daemon through carbon_ds.spark.worker_daemon)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return getattr(spec, "name", None) in ("pyspark.daemon", worker_daemon.NAME)


def unfrozen() -> int:
    """How many container objects a full collection walks now."""
    return sum(len(gc.get_objects(generation)) for generation in range(3))


def settle() -> None:
    """Freeze what is alive when the collector's walk has grown past UNFROZEN_LIMIT (in a daemon worker)."""
    if in_daemon_worker() and gc.isenabled() and unfrozen() > UNFROZEN_LIMIT:
        freeze_live()


def freeze_live() -> None:
    """Collect, then freeze the survivors; a full pass (unfreeze, collect, freeze) first and whenever the
    frozen set has doubled since the last one, so frozen objects that became garbage are freed."""
    global _full_pass_size
    full = _full_pass_size == 0 or gc.get_freeze_count() > 2 * _full_pass_size
    if full:
        gc.unfreeze()
    gc.collect()
    gc.freeze()
    if full:
        _full_pass_size = gc.get_freeze_count()
