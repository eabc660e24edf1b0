"""Whole-file reads share one thread pool per process (readers/carbon_file.py): a process that forks after
reading (multiprocessing's fork start method, a worker pool, a fork server) must read in its children too."""

from __future__ import annotations

import multiprocessing

import pyarrow as pa

import carbon_ds
from carbon_ds.readers import carbon_file


def _count(path: str, out) -> None:
    out.put(carbon_ds.read_table(path).num_rows)


def test_a_forked_child_reads_with_its_own_pool(tmp_path):
    rows = 300_000  # above PARALLEL_MIN_VALUES: the read goes through the shared pool
    assert rows * 2 >= carbon_file.PARALLEL_MIN_VALUES
    path = str(tmp_path / "t")
    carbon_ds.write_table(pa.table({"a": pa.array(range(rows), pa.int64()), "b": pa.array(range(rows), pa.int64())}),
                          path)
    assert carbon_ds.read_table(path).num_rows == rows  # the parent's pool now has threads
    assert carbon_file._pool is not None
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_count, args=(path, out))
    child.start()
    child.join(120)  # a child waiting on its parent's threads never ends
    alive = child.is_alive()
    if alive:
        child.kill()
    assert not alive, "the forked child's read did not finish"
    assert child.exitcode == 0 and out.get(timeout=5) == rows
