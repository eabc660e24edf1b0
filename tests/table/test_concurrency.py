"""Several writer processes at once, and a writer killed mid-load (no Spark)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa

import carbon_ds.api as api
from carbon_ds.table import CarbonTable

REPO = Path(__file__).resolve().parents[2]

APPEND = """
import sys, pyarrow as pa
from carbon_ds.api import write_table
start = int(sys.argv[2])
write_table(pa.table({"id": pa.array(range(start, start + 1000), pa.int64()),
                      "tag": pa.array([sys.argv[2]] * 1000)}), sys.argv[1])
"""

SLOW = """
import sys, time, pyarrow as pa
from carbon_ds.api import write_table
schema = pa.schema([("id", pa.int64()), ("tag", pa.string())])
def batches():
    for i in range(100000):
        yield pa.record_batch([pa.array(range(i * 1000, i * 1000 + 1000), pa.int64()), pa.array(["slow"] * 1000)],
                              schema=schema)
        time.sleep(0.01)
write_table(pa.RecordBatchReader.from_batches(schema, batches()), sys.argv[1], blocklet_size="1")
"""


def _run(script: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, "-c", script, *args], env=env, stderr=subprocess.PIPE)


def test_four_processes_append_at_once(tmp_path):
    path = str(tmp_path / "t")
    procs = [_run(APPEND, path, str(i * 1000)) for i in range(4)]
    for p in procs:
        _out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    t = CarbonTable.open(path)
    assert sorted((s.id, s.status) for s in t.segments()) == [(str(i), "Success") for i in range(4)]
    ids = api.read_table(path, columns=["id"]).column("id").to_pylist()
    assert sorted(ids) == list(range(4000))
    assert not (tmp_path / "t" / "LockFiles" / "tablestatus.lock").exists()


def test_writer_killed_mid_load_leaves_committed_data(tmp_path):
    path = tmp_path / "t"
    api.write_table(pa.table({"id": pa.array(range(100), pa.int64()), "tag": ["ok"] * 100}), path)
    proc = _run(SLOW, str(path))
    status = path / "Metadata" / "tablestatus"
    deadline = time.monotonic() + 60
    # wait until the load is reserved and has started writing files
    while time.monotonic() < deadline:
        seg1 = path / "Fact" / "Part0" / "Segment_1"
        if seg1.is_dir() and any(seg1.iterdir()):
            break
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.05)
    else:
        raise AssertionError("the slow writer never started writing")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert [(e["loadName"], e["loadStatus"]) for e in json.loads(status.read_text())] == [
        ("0", "Success"),
        ("1", "In Progress"),
    ]
    got = api.read_table(path)
    assert got.num_rows == 100 and set(got.column("tag").to_pylist()) == {"ok"}
    # its record names the killed process: the next load ends it (Failure, files removed) and gets a new id
    assert json.loads((path / "LockFiles" / "Segment_1.lock").read_text())["pid"] == proc.pid
    assert api.write_table(got, path) == "2"
    assert [(e["loadName"], e["loadStatus"]) for e in json.loads(status.read_text())] == [
        ("0", "Success"),
        ("1", "Failure"),
        ("2", "Success"),
    ]
    assert not (path / "Fact" / "Part0" / "Segment_1").exists()
    assert not (path / "LockFiles" / "Segment_1.lock").exists()
    assert api.read_table(path).num_rows == 200
