"""A load whose writer is gone is ended (marked Failure, its files removed) by the next write, CLEAN FILES and
``carbon-ds unlock``; a live load is never touched. No Spark here: tests/spark/test_dead_spark_loads.py
kills a real Spark driver, tests/table/test_concurrency.py a real Python writer."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

import carbon_ds
from carbon_ds.cli import main as cli_main
from carbon_ds.errors import CarbonTableError
from carbon_ds.table.loads.protocol import reserve_load
from carbon_ds.table.loads.start import start_load
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.load_records import STALE_LOAD_S, LoadHolder, dead_load, record_path
from carbon_ds.table.meta.status.tablestatus import LoadDetail


def rows(start: int, n: int = 50, tag: str = "ok") -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "tag": pa.array([tag] * n)})


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def statuses(path) -> dict[str, str]:
    return {e.name: e.status for e in TableHandle.open(path).load_details()}


def ids(path) -> list[int]:
    return sorted(carbon_ds.read_table(path, columns=["id"]).column("id").to_pylist())


@pytest.fixture
def table(tmp_path) -> Path:
    path = tmp_path / "t"
    carbon_ds.write_table(rows(0), path)
    carbon_ds.write_table(rows(50), path)
    return path


def half_written(path, holder: LoadHolder, **write_options):
    """A load that reserved segment 2 and wrote its files, then lost its writer (``holder``)."""
    load = reserve_load(TableHandle.open(path), holder=holder, **write_options)
    load.write([rows(1000, tag="dead")])
    return load


def segment_dir(path, seg: str) -> Path:
    return Path(path) / "Fact" / "Part0" / f"Segment_{seg}"


def test_the_next_write_ends_a_load_whose_writer_died(table):
    load = half_written(table, LoadHolder.of_pid(dead_pid()))
    record = Path(record_path(str(table), "2"))
    assert json.loads(record.read_text())["host"] == socket.gethostname()
    assert any(segment_dir(table, "2").iterdir()) and statuses(table)["2"] == ts.IN_PROGRESS
    assert carbon_ds.write_table(rows(100), table) == "3"
    assert statuses(table) == {"0": ts.SUCCESS, "1": ts.SUCCESS, "2": ts.FAILURE, "3": ts.SUCCESS}
    assert not segment_dir(table, "2").exists() and not record.exists()
    assert ids(table) == list(range(150))
    assert load.segment_id == "2"


def test_a_dead_load_of_a_partitioned_table_loses_the_files_in_its_partition_folders(tmp_path):
    path = tmp_path / "p"
    carbon_ds.write_table(rows(0), path, partition_by=["tag"])
    half_written(path, LoadHolder.of_pid(dead_pid()))
    dead_files = [p for p in (path / "tag=dead").rglob("*") if p.is_file()]
    assert dead_files  # the dead load's data in its <load start>.tmp folder
    carbon_ds.write_table(rows(100), path)
    assert statuses(path)["1"] == ts.FAILURE
    assert not any(p.exists() for p in dead_files)
    assert ids(path) == list(range(50)) + list(range(100, 150))


def test_clean_files_ends_a_dead_load_and_trashes_its_files(table):
    half_written(table, LoadHolder.of_pid(dead_pid()))
    result = carbon_ds.CarbonTable.open(table).clean_files()
    assert len(result.failed_loads) == 1 and result.failed_loads[0].startswith("2: its writer, Python process pid")
    assert "is gone" in result.failed_loads[0]
    assert "2" in result.trashed and not segment_dir(table, "2").exists()
    assert ("segment " + result.failed_loads[0], "load's writer is gone: marked Failure") in result.rows()
    assert not Path(record_path(str(table), "2")).exists()
    assert ids(table) == list(range(100))
    assert carbon_ds.write_table(rows(100), table) == "3"  # the dead id is never reused


def test_unlock_ends_a_dead_load(table, capsys):
    half_written(table, LoadHolder.of_pid(dead_pid()))
    assert cli_main(["unlock", str(table)]) == 0
    out = capsys.readouterr().out
    assert "segment 2: its writer, Python process pid" in out and "marked Failure, its files removed" in out
    assert statuses(table)["2"] == ts.FAILURE and not segment_dir(table, "2").exists()
    assert ids(table) == list(range(100))
    assert cli_main(["unlock", str(table)]) == 0
    assert "no lock or load of a crashed writer found" in capsys.readouterr().out


def test_a_live_load_is_left_alone_by_every_sweeper(table, capsys):
    load = half_written(table, LoadHolder.this_process())
    files = sorted(segment_dir(table, "2").iterdir())
    carbon_ds.write_table(rows(100), table)
    carbon_ds.CarbonTable.open(table).clean_files()
    assert cli_main(["unlock", str(table)]) == 0
    assert "segment 2" not in capsys.readouterr().out
    assert statuses(table)["2"] == ts.IN_PROGRESS and sorted(segment_dir(table, "2").iterdir()) == files
    load.commit()
    assert statuses(table)["2"] == ts.SUCCESS and not Path(record_path(str(table), "2")).exists()
    assert ids(table) == list(range(150)) + list(range(1000, 1050))


def test_an_overwrite_whose_driver_died_frees_the_update_lock_too(table):
    """A Spark overwrite's update lock outlives the worker that took it: it names the driver, whose death
    frees it, so DELETE and UPDATE need not wait for the lock's 6 h lease."""
    driver = LoadHolder.of_pid(dead_pid(), "Spark driver JVM")
    load = start_load(TableHandle.open(table), overwrite=True, pid_bound=False, holder=driver)
    load.write([rows(1000)])
    assert statuses(table)["2"] == ts.OVERWRITE_IN_PROGRESS
    assert json.loads((table / "LockFiles" / "update.lock").read_text())["pid"] == driver.pid
    start = time.monotonic()
    assert carbon_ds.CarbonTable.open(table).delete("id < 10") == 10
    assert time.monotonic() - start < 10
    carbon_ds.write_table(rows(100), table)
    assert statuses(table)["2"] == ts.FAILURE
    assert ids(table) == list(range(10, 150))


# ------------------------------------------------------------------------------------ the rule itself
def entry(name: str = "5", started_ago_s: float = 0.0) -> LoadDetail:
    return LoadDetail(name=name, status=ts.IN_PROGRESS, load_start_time=str(ts.now_ms() - int(started_ago_s * 1000)))


def plant(table, seg: str, **fields) -> None:
    info = {"segment": seg, "operation": "LOAD", "host": socket.gethostname(), "pid": os.getpid(),
            "started": None, "holder": "Python process", "time": ts.now_ms()} | fields
    (table / "LockFiles").mkdir(exist_ok=True)
    Path(record_path(str(table), seg)).write_text(json.dumps(info))


def judge(table, e: LoadDetail, **kw) -> str | None:
    t = TableHandle.open(table)
    return dead_load(t.storage, t.path, e, **kw)


def test_rule_this_host(table):
    plant(table, "5")
    assert judge(table, entry()) is None  # this process: alive
    plant(table, "5", pid=dead_pid())
    assert "is gone" in judge(table, entry())
    plant(table, "5", started="1")  # this pid, but a process that started at another time: the pid was reused
    assert "is gone" in judge(table, entry())
    plant(table, "5", started=LoadHolder.this_process().started)
    assert judge(table, entry(), force=True) is None  # force never ends a load known alive


def test_rule_another_host_waits_for_the_age_limit(table):
    now = ts.now_ms()
    plant(table, "5", host="other-host", pid=12, time=now - 3600_000)
    assert judge(table, entry()) is None
    assert "given up by force" in judge(table, entry(), force=True)
    later = now + int(STALE_LOAD_S * 1000)
    why = judge(table, entry(), now_ms=later)
    assert "pid 12 on other-host, cannot be checked from here" in why and "over the 6.0 h limit" in why


def test_rule_without_a_record_uses_the_load_start(table):
    assert judge(table, entry(started_ago_s=60)) is None
    assert "no writer is recorded" in judge(table, entry(started_ago_s=STALE_LOAD_S + 60))
    done = LoadDetail(name="5", status=ts.SUCCESS, load_start_time="0")
    assert judge(table, done, force=True) is None  # only In Progress loads are judged


def test_rule_carbondata_segment_lock_is_free_or_held(table):
    """Apache CarbonData holds an OS lock on LockFiles/Segment_<id>.lock while its load runs
    (LocalFileLock: FileChannel.tryLock); the load is stale once that lock can be taken."""
    lock = Path(record_path(str(table), "5"))
    lock.parent.mkdir(exist_ok=True)
    lock.write_bytes(b"")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time\nf = open(sys.argv[1], 'ab')\n"
         "fcntl.lockf(f, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(60)\n", str(lock)],
        stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline() == b"held\n"
        assert judge(table, entry(started_ago_s=STALE_LOAD_S * 2)) is None
    finally:
        holder.kill()
        holder.wait()
    assert "is free (CarbonData's rule" in judge(table, entry())


def test_clean_files_removes_records_of_loads_that_ended(table):
    plant(table, "1")  # segment 1 is Success: its record outlived its load
    carbon_ds.CarbonTable.open(table).clean_files()
    assert not Path(record_path(str(table), "1")).exists()


def test_delete_segment_accepts_a_dead_load_and_refuses_a_live_one(table):
    half_written(table, LoadHolder.of_pid(dead_pid()))
    t = carbon_ds.CarbonTable.open(table)
    assert t.delete_segments(["2"]) == ["2"]
    assert statuses(table)["2"] == ts.MARKED_FOR_DELETE
    live = half_written(table, LoadHolder.this_process())
    with pytest.raises(CarbonTableError, match=r"segment 3 cannot be deleted because its load is in progress \(its "
                                               r"writer is alive"):
        t.delete_segments(["3"])
    live.abort()
