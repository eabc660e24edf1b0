"""A Spark write whose driver is gone is ended by the next write, CLEAN FILES and ``carbon-ds unlock``; a live
Spark write is not.

The first test runs a real Spark overwrite in its own process and stops it the way Ctrl-C at a terminal
does (SIGINT to the whole process group: the Python driver, its JVM and the Python workers), once some of
its tasks have written their files and others still run. Oracle: the rows committed before (pyarrow wrote
them) stay readable, the dead segment becomes Failure and no file of it is left."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

import carbon_ds
from carbon_ds.cli import main as cli_main
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.load_records import record_path

REPO = Path(__file__).resolve().parents[2]
WAIT = 180

# Tasks 0 and 1 write their rows and finish; tasks 2 and 3 hang, so the write is never committed.
STUCK_WRITE = """
import os, sys, time
from pyspark import TaskContext
from pyspark.sql import SparkSession
import carbon_ds

spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())
carbon_ds.register(spark)

def stuck(batches):
    if TaskContext.get().partitionId() >= 2:
        time.sleep(3600)
    yield from batches

df = spark.range(1000, 1400, numPartitions=4).selectExpr("id", "'spark' AS tag").mapInArrow(stuck, "id long, tag string")
df.write.format("carbondata").mode("overwrite").save(sys.argv[1])
"""


def rows(start: int, n: int = 50) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "tag": pa.array(["ok"] * n)})


def statuses(path) -> dict[str, str]:
    return {e.name: e.status for e in TableHandle.open(path).load_details()}


def ids(path) -> list[int]:
    return sorted(carbon_ds.read_table(path, columns=["id"]).column("id").to_pylist())


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def interrupted_spark_overwrite(path: Path) -> dict:
    """Run STUCK_WRITE on ``path`` and Ctrl-C it once two tasks wrote their files; returns its record."""
    env = dict(os.environ, PYTHONPATH=str(REPO), PYSPARK_PYTHON=sys.executable)
    proc = subprocess.Popen([sys.executable, "-c", STUCK_WRITE, str(path)], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    segment = path / "Fact" / "Part0" / "Segment_1"
    try:
        deadline = time.monotonic() + WAIT
        while len(list(segment.glob("*.carbonindex"))) < 2:
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline, "the Spark write never wrote its first tasks' files"
            time.sleep(0.2)
        record = json.loads(Path(record_path(str(path), "1")).read_text())
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C at a terminal sends
        proc.wait(WAIT)
        deadline = time.monotonic() + WAIT
        while alive(record["pid"]) and time.monotonic() < deadline:  # the JVM runs its shutdown hooks
            time.sleep(0.2)
        assert not alive(record["pid"]), "the driver JVM outlived Ctrl-C"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever of the group is left (Python workers)
        except ProcessLookupError:
            pass
        proc.wait()
    return record


@pytest.mark.slow
def test_a_spark_write_stopped_with_ctrl_c_is_ended_by_the_next_writer_clean_files_and_unlock(tmp_path, capsys):
    table = tmp_path / "t"
    carbon_ds.write_table(rows(0), table)
    record = interrupted_spark_overwrite(table)
    assert record["holder"] == "Spark driver JVM" and record["operation"] == "INSERT OVERWRITE (Spark)"
    assert statuses(table) == {"0": ts.SUCCESS, "1": ts.OVERWRITE_IN_PROGRESS}
    assert ids(table) == list(range(50))
    update_lock = table / "LockFiles" / "update.lock"
    assert json.loads(update_lock.read_text())["pid"] == record["pid"]  # the overwrite's lock names the driver
    copies = {how: tmp_path / how for how in ("append", "clean", "unlock")}
    for copy in copies.values():
        shutil.copytree(table, copy)

    def ended(path: Path) -> None:
        assert statuses(path)["1"] == ts.FAILURE or "1" not in statuses(path)  # CLEAN FILES drops the entry
        assert not (path / "Fact" / "Part0" / "Segment_1").exists()
        assert not Path(record_path(str(path), "1")).exists()

    assert carbon_ds.write_table(rows(100), copies["append"]) == "2"
    ended(copies["append"])
    assert ids(copies["append"]) == list(range(50)) + list(range(100, 150))

    result = carbon_ds.CarbonTable.open(copies["clean"]).clean_files()
    assert result.failed_loads == [f"1: its writer, Spark driver JVM pid {record['pid']} on {record['host']}, is gone"]
    assert any("update.lock" in u for u in result.unlocked)
    ended(copies["clean"])
    assert ids(copies["clean"]) == list(range(50))

    assert cli_main(["unlock", str(copies["unlock"])]) == 0
    out = capsys.readouterr().out
    assert "segment 1: its writer, Spark driver JVM" in out and "update.lock" in out
    ended(copies["unlock"])
    # the driver's update lock went too: DELETE runs at once instead of waiting out the lock's 6 h lease
    assert carbon_ds.CarbonTable.open(copies["unlock"]).delete("id < 10") == 10
    assert ids(copies["unlock"]) == list(range(10, 50))


def test_a_live_spark_write_is_left_alone(spark, tmp_path, capsys):
    """The same sweepers while a Spark write of this session is held mid-write: its segment stays In
    Progress with its files, and commits once released. (The sweepers run in a second thread; the write
    stays in the session's own thread.)"""
    table = tmp_path / "t"
    carbon_ds.write_table(rows(0), table)
    gate = str(tmp_path / "gate")
    record_file = Path(record_path(str(table), "1"))
    seen: dict = {}

    def held(batches):
        import os
        import time
        while not os.path.exists(gate):
            time.sleep(0.05)
        yield from batches

    def sweep() -> None:
        try:
            deadline = time.monotonic() + WAIT
            while not record_file.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            seen["record"] = json.loads(record_file.read_text())
            seen["append"] = carbon_ds.write_table(rows(100), table)
            seen["clean"] = carbon_ds.CarbonTable.open(table).clean_files().failed_loads
            seen["unlock"] = cli_main(["unlock", str(table)])
            seen["statuses"] = statuses(table)
            seen["record kept"] = record_file.exists()
        except BaseException as e:  # noqa: BLE001 - asserted below
            seen["error"] = e
        finally:
            Path(gate).touch()

    sweeper = threading.Thread(target=sweep)
    sweeper.start()
    try:
        df = spark.range(1000, 1100, numPartitions=2).selectExpr("id", "'spark' AS tag")
        df.mapInArrow(held, "id long, tag string").write.format("carbondata").mode("append").save(str(table))
    finally:
        Path(gate).touch()
        sweeper.join(WAIT)
    assert "error" not in seen, seen
    assert seen["record"]["pid"] == spark.sparkContext._jvm.ProcessHandle.current().pid()
    assert seen["record"]["holder"] == "Spark driver JVM"
    assert seen["append"] == "2" and seen["clean"] == [] and seen["unlock"] == 0
    assert "segment 1" not in capsys.readouterr().out
    assert seen["statuses"] == {"0": ts.SUCCESS, "1": ts.IN_PROGRESS, "2": ts.SUCCESS} and seen["record kept"]
    assert statuses(table) == {"0": ts.SUCCESS, "1": ts.SUCCESS, "2": ts.SUCCESS}
    assert not record_file.exists()
    assert ids(table) == list(range(50)) + list(range(100, 150)) + list(range(1000, 1100))
