"""A reused Python worker's heap is frozen after carbon-ds's work, so PySpark's daemon, which runs a full
``gc.collect()`` after every call a worker serves (pyspark/daemon.py), walks only what later calls make;
the driver's own process is never touched."""

from __future__ import annotations

import gc
import sys
import types
import weakref

import pyarrow as pa
import pytest

from carbon_ds import write_table
from carbon_ds.spark import worker_heap


@pytest.fixture
def as_daemon_worker(monkeypatch):
    """This process seen as a worker PySpark's daemon forked; the collector as it was afterwards."""
    main = types.ModuleType("__main__")
    main.__spec__ = types.SimpleNamespace(name="pyspark.daemon")
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.setattr(worker_heap, "_full_pass_size", 0)
    yield
    gc.unfreeze()


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def test_settle_freezes_what_is_alive_in_a_daemon_worker(as_daemon_worker):
    kept = [[i] for i in range(2 * worker_heap.UNFROZEN_LIMIT)]
    node = _Node()
    dead = weakref.ref(node)
    del node
    assert worker_heap.unfrozen() > worker_heap.UNFROZEN_LIMIT
    worker_heap.settle()
    assert worker_heap.unfrozen() < worker_heap.UNFROZEN_LIMIT
    assert gc.get_freeze_count() >= len(kept)
    assert dead() is None  # collected before the freeze, not frozen
    worker_heap.settle()  # below the limit: nothing to do
    assert gc.get_freeze_count() >= len(kept)


def test_settle_frees_frozen_garbage_once_the_frozen_set_doubles(as_daemon_worker):
    doomed = [_Node() for _ in range(1000)]
    dead = weakref.ref(doomed[0])
    worker_heap.freeze_live()  # the first: a full pass, the nodes frozen alive
    first = worker_heap._full_pass_size
    assert first > len(doomed)
    del doomed  # cycles now, frozen: no collection frees them
    worker_heap.freeze_live()  # the frozen set has not doubled: no full pass
    assert dead() is not None and worker_heap._full_pass_size == first
    # as if the last full pass had found a third of what is frozen now: the next is a full pass
    before = gc.get_freeze_count()
    worker_heap._full_pass_size = before // 3
    worker_heap.freeze_live()
    assert dead() is None  # the frozen cycles freed, not frozen again
    assert worker_heap._full_pass_size > before // 3  # the full pass recorded the new frozen size


def test_settle_leaves_other_processes_alone():
    assert not worker_heap.in_daemon_worker()
    before = gc.get_freeze_count()
    kept = [[i] for i in range(2 * worker_heap.UNFROZEN_LIMIT)]
    worker_heap.settle()
    assert gc.get_freeze_count() == before
    assert len(kept) == 2 * worker_heap.UNFROZEN_LIMIT


@pytest.mark.spark
def test_workers_that_read_a_table_walk_a_small_heap_after(spark, tmp_path):
    """After Spark's Python tasks read a carbondata table, the reused workers hold their heap frozen."""
    before = gc.get_freeze_count()
    path = str(tmp_path / "t")
    n = 100_000  # over the rows read at planning: Python tasks read it
    write_table(pa.table({"a": list(range(n)), "b": [str(i) for i in range(n)]}), path)
    df = spark.read.format("carbondata").load(path)
    assert len(df.collect()) == n
    # an Arrow map runs in the workers of Spark's SQL Python tasks, as the read's tasks do (a Python RDD's
    # tasks have workers of their own); a lambda is pickled by value (the test module is not importable there)
    heaps = spark.range(4).repartition(4).mapInArrow(
        lambda batches: [pa.RecordBatch.from_pylist(
            [{"frozen": gc.get_freeze_count(), "walked": worker_heap.unfrozen()} for _ in [list(batches)]])],
        "frozen long, walked long").collect()
    assert any(row.frozen > 50_000 for row in heaps), heaps
    assert all(row.walked < 10 * worker_heap.UNFROZEN_LIMIT for row in heaps if row.frozen), heaps
    assert gc.get_freeze_count() == before  # the driver's process: untouched
