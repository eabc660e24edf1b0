"""Locks that heal: a lock records its holder; a holder that is gone is taken over at once; CLEAN FILES and
``carbon-ds unlock`` clear stale locks; a waiting writer is told whom it waits for."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pyarrow as pa
import pytest

import carbon_ds
from carbon_ds.cli import main as cli_main
from carbon_ds.errors import CarbonTableError
from carbon_ds.table.meta.locks import TableLock, update_lock
from carbon_ds.table.table import CarbonTable


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _plant(t: CarbonTable, name: str, pid: int, host: str | None = None, operation: str = "DELETE") -> str:
    path = f"{t.path}/LockFiles/{name}.lock"
    t.storage.write_bytes(path, json.dumps({"owner": f"x:{pid}:y", "time": int(time.time() * 1000),
                                            "host": host or socket.gethostname(), "pid": pid,
                                            "operation": operation}).encode())
    return path


@pytest.fixture
def table(tmp_path):
    carbon_ds.write_table(pa.table({"a": pa.array(range(10), pa.int64())}), tmp_path / "t")
    return CarbonTable.open(tmp_path / "t")


def test_lock_of_a_dead_process_is_taken_over_at_once(table):
    _plant(table, "update", _dead_pid())
    _plant(table, "tablestatus", _dead_pid())
    start = time.monotonic()
    assert table.delete("a = 1") == 1  # takes both locks without waiting for any lease
    assert time.monotonic() - start < 10


def test_live_holder_is_named_in_the_refusal(table):
    lock = update_lock(table.storage, table.path, "UPDATE (job 7)")
    try:
        with pytest.raises(CarbonTableError, match=rf"UPDATE \(job 7\) \(host {socket.gethostname()}, pid \d+, "
                                                   r"since .* UTC\)\) holds the update lock"):
            table.delete("a = 1")
    finally:
        lock.release()


def test_lock_of_another_host_is_not_judged_dead(table):
    _plant(table, "update", _dead_pid(), host="some-other-host")
    with pytest.raises(CarbonTableError, match="some-other-host"):
        table.delete("a = 1")


def test_clean_files_and_unlock_remove_stale_locks_only(table, capsys):
    dead = _plant(table, "update", _dead_pid())
    result = table.clean_files()
    assert any("update.lock" in u for u in result.unlocked) and not table.storage.exists(dead)
    live = TableLock(table.storage, table.path, "custom", operation="LOAD")
    live.acquire()
    _plant(table, "update", _dead_pid())
    assert cli_main(["unlock", table.path]) == 0
    out = capsys.readouterr().out
    assert "update.lock" in out and "custom.lock" not in out and table.storage.exists(live.path)
    assert cli_main(["unlock", table.path, "--force"]) == 0
    assert "custom.lock" in capsys.readouterr().out and not table.storage.exists(live.path)


def test_a_lock_handed_between_processes_is_not_broken_by_its_pid(table):
    lock = update_lock(table.storage, table.path, "INSERT OVERWRITE (Spark)", pid_bound=False)
    info = json.loads(table.storage.read_text(lock.path))
    assert "pid" not in info
    with pytest.raises(CarbonTableError, match="INSERT OVERWRITE"):
        table.delete("a = 1")
    lock.release()


def test_table_load_overwrite_is_serialised_with_update(table):
    """CarbonTable.load(overwrite=True) holds the update lock from its reservation to its commit: an UPDATE
    meanwhile is refused naming the overwrite, and succeeds once the overwrite committed. The rows after both
    are the overwrite's with the UPDATE applied (computed by hand)."""
    load = table.load(overwrite=True)
    with pytest.raises(CarbonTableError, match="INSERT OVERWRITE"):
        table.update({"a": 0}, "a >= 100")
    with load:
        load.write([pa.table({"a": pa.array([100, 101, 102], pa.int64())})])
    assert table.update({"a": 7}, "a = 101") == 1
    assert sorted(table.to_arrow().column("a").to_pylist()) == [7, 100, 102]


def test_overwrite_lock_released_when_the_load_aborts(table):
    with pytest.raises(RuntimeError), table.load(overwrite=True):
        raise RuntimeError("task failed")
    assert table.update({"a": 42}, "a = 3") == 1  # the lock went with the aborted load
    assert sorted(table.to_arrow().column("a").to_pylist()) == [0, 1, 2, 4, 5, 6, 7, 8, 9, 42]


def test_update_holding_the_lock_refuses_an_overwrite(table):
    held = update_lock(table.storage, table.path, "UPDATE (job 9)")
    try:
        with pytest.raises(CarbonTableError, match="UPDATE \\(job 9\\)"):
            table.load(overwrite=True)
        with pytest.raises(CarbonTableError, match="UPDATE \\(job 9\\)"):
            carbon_ds.write_table(pa.table({"a": pa.array([1], pa.int64())}), table.path, mode="overwrite")
    finally:
        held.release()
    assert [s.status for s in table.segments()] == ["Success"]  # nothing reserved by the refused loads
