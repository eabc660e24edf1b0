"""A table on an S3 API served on 127.0.0.1 by moto, driven through pyarrow's S3FileSystem (endpoint from
AWS_ENDPOINT_URL): append, overwrite, DELETE, UPDATE and CLEAN FILES give the rows a local table gives;
with conditional PUTs two concurrent writers lose nothing; without them a second writer is detected and
refused, never silently dropped."""

from __future__ import annotations

import json
import os
import threading
import time

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from carbon_ds.api import read_table, write_table
from carbon_ds.errors import CarbonConcurrentError, CarbonTableError
from carbon_ds.fs import Storage
from carbon_ds.table.meta import locks
from carbon_ds.table.meta.locks import TableLock
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.table import CarbonTable


@pytest.fixture(scope="module")
def s3(moto_s3):
    """The shared local S3 API (tests/conftest.py) as the process's default endpoint, bucket carbon-test."""
    host = moto_s3.removeprefix("http://")
    env = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": moto_s3}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        pafs.S3FileSystem(endpoint_override=host, scheme="http", access_key="test", secret_key="test",
                          region="us-east-1", allow_bucket_creation=True).create_dir("carbon-test")
        yield "s3://carbon-test"
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _ids(path, **kw):
    return sorted(read_table(path, **kw).column("id").to_pylist())


def test_table_lifecycle_on_s3(s3):
    path = f"{s3}/life"
    write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": ["a", "b", "c"]}), path)
    write_table(pa.table({"id": pa.array([4, 5], pa.int64()), "s": ["d", "@NU#LL$!"]}), path)
    assert _ids(path) == [1, 2, 3, 4, 5]
    assert read_table(path, filter="id = 5").column("s").to_pylist() == ["@NU#LL$!"]
    t = CarbonTable.open(path)
    assert t.delete("id = 2") == 1
    assert _ids(path) == [1, 3, 4, 5]
    t.update({"s": "z"}, "id = 4")
    assert read_table(path, filter="id = 4").column("s").to_pylist() == ["z"]
    write_table(pa.table({"id": pa.array([10, 11], pa.int64()), "s": ["x", "y"]}), path, mode="overwrite")
    assert _ids(path) == [10, 11]
    CarbonTable.open(path).clean_files(force=True)
    assert _ids(path) == [10, 11] and CarbonTable.open(path).count() == 2


def _batch(lo: int, n: int = 50) -> pa.Table:
    return pa.table({"id": pa.array(range(lo, lo + n), pa.int64()), "s": pa.array(["w"] * n)})


def test_moto_honours_conditional_puts(s3):
    pytest.importorskip("carbon_ds.fs_s3", reason="botocore (the s3 extra) not installed")
    storage, path = Storage.for_path(f"{s3}/cond/object")
    assert storage.conditional_writes(path)
    assert storage.create_exclusive(path, b"a") and not storage.create_exclusive(path, b"b")
    data, version = storage.read_versioned(path)
    assert data == b"a"
    assert storage.replace_if(path, b"c", version) and not storage.replace_if(path, b"d", version)
    assert storage.read_bytes(path) == b"c"  # through pyarrow, not the conditional client


def test_a_store_that_ignores_if_none_match_is_treated_as_single_writer(s3, monkeypatch):
    # some S3-compatible servers accept the header and overwrite anyway: the probe must notice
    fs_s3 = pytest.importorskip("carbon_ds.fs_s3", reason="botocore (the s3 extra) not installed")
    monkeypatch.setattr(fs_s3.ConditionalS3, "create", lambda self, path, data: self._put(path, data))
    pafs.S3FileSystem(endpoint_override=os.environ["AWS_ENDPOINT_URL"], allow_bucket_creation=True,
                      region="us-east-1").create_dir("carbon-ignoring")
    storage, path = Storage.for_path("s3://carbon-ignoring/t/Metadata/tablestatus")
    assert not storage.conditional_writes(path)
    assert storage.create_exclusive(path, b"a") and not storage.create_exclusive(path, b"b")  # check, then PUT
    assert storage.read_bytes(path) == b"a"


def _appender(path: str, writer: int, n: int, committed: set, refused: list) -> None:
    for i in range(n):
        lo = writer * 1_000_000 + i * 50
        try:
            write_table(_batch(lo), path)
        except CarbonConcurrentError as e:  # refused, not applied: its rows must not appear
            refused.append((lo, e))
            continue
        committed.update(range(lo, lo + 50))


def test_two_concurrent_writers_lose_no_row(s3):
    path = f"{s3}/two-writers"
    committed: set[int] = set()
    refused: list = []
    threads = [threading.Thread(target=_appender, args=(path, w, 12, committed, refused)) for w in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ids = _ids(path)
    assert len(ids) == len(set(ids))
    # every append that returned is there, whole; nothing else is
    assert set(ids) == committed and len(committed) == 24 * 50 - 50 * len(refused)
    assert not refused, refused[:1]  # with an atomic lock no commit even needs refusing
    assert CarbonTable.open(path).count() == len(committed)


def test_appender_and_dml_at_once_lose_nothing(s3):
    path = f"{s3}/append-dml"
    write_table(_batch(0, 20), path)
    committed: set[int] = set(range(20))
    refused: list = []
    deleted: set[int] = set()

    def dml():
        t = CarbonTable.open(path)
        for victim in range(0, 10, 2):
            t.delete(f"id = {victim}")
            deleted.add(victim)
        t.update({"s": "u"}, "id = 11")

    threads = [threading.Thread(target=_appender, args=(path, 1, 8, committed, refused)),
               threading.Thread(target=dml)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = read_table(path)
    ids = final.column("id").to_pylist()
    assert sorted(ids) == sorted(committed - deleted) and deleted == {0, 2, 4, 6, 8}
    assert read_table(path, filter="id = 11").column("s").to_pylist() == ["u"]


def test_a_stale_lock_on_s3_is_taken_over_by_one_conditional_put(s3):
    path = f"{s3}/stale"
    write_table(_batch(0, 3), path)
    t = CarbonTable.open(path)
    lock_file = f"{t.path}/LockFiles/tablestatus.lock"
    t.storage.write_bytes(lock_file, json.dumps({"owner": "gone:1:x", "time": 0, "host": "elsewhere"}).encode())
    lock = TableLock(t.storage, t.path, timeout=5)
    lock.acquire()
    assert json.loads(t.storage.read_text(lock_file))["owner"] == lock.token
    lock.release()
    assert not t.storage.exists(lock_file)


# ------------------------------------------------------------------ stores without conditional writes
@pytest.fixture
def single_writer(monkeypatch):
    """The same moto store, declared one without conditional PUTs (check-then-write, as on HDFS)."""
    monkeypatch.setenv("CARBON_DS_S3_CONDITIONAL", "0")


@pytest.mark.slow
def test_without_conditional_writes_two_writers_still_lose_no_row(s3, single_writer):
    path = f"{s3}/single-two-writers"
    committed: set[int] = set()
    refused: list = []
    threads = [threading.Thread(target=_appender, args=(path, w, 8, committed, refused)) for w in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ids = _ids(path)
    assert len(ids) == len(set(ids)) and set(ids) == committed
    assert len(committed) == 16 * 50 - 50 * len(refused)


def test_without_conditional_writes_another_writers_intent_is_waited_for(s3, single_writer, monkeypatch):
    path = f"{s3}/single-intent"
    write_table(_batch(0, 3), path)
    t = CarbonTable.open(path)
    lock_file = f"{t.path}/LockFiles/tablestatus.lock"
    theirs = f"{lock_file}.0123.intent"
    t.storage.write_bytes(theirs, b"{}")  # a writer between announcing itself and taking the lock
    with pytest.raises(CarbonTableError, match="could not take lock"):
        TableLock(t.storage, t.path, timeout=0.3).acquire()
    assert not t.storage.exists(lock_file)
    monkeypatch.setattr(locks, "INTENT_STALE_S", 0.0)  # now it counts as a dead writer's: deleted, lock taken
    lock = TableLock(t.storage, t.path, timeout=5)
    lock.acquire()
    assert json.loads(t.storage.read_text(lock_file))["owner"] == lock.token
    assert not t.storage.exists(theirs)
    lock.release()


def test_without_conditional_writes_a_second_writer_is_refused_not_dropped(s3, single_writer):
    path = f"{s3}/single-refused"
    write_table(_batch(0, 3), path)
    t = CarbonTable.open(path)
    assert not t.storage.conditional_writes(t.tablestatus_path)
    with pytest.raises(CarbonConcurrentError, match="another writer committed") as err:
        with t.edit_status("test") as edit:
            # A second writer that raced past the check-then-write lock commits meanwhile (here it finds
            # the lock gone, as it would after a lost race).
            t.storage.delete(f"{t.path}/LockFiles/tablestatus.lock")
            write_table(_batch(100, 3), path)
            edit.entries[0].extra_info = "changed"
    assert "removed while this writer held it" in str(err.value)
    assert _ids(path) == [0, 1, 2, 100, 101, 102]


def test_without_conditional_writes_an_overwritten_commit_is_reported(s3, single_writer, monkeypatch):
    path = f"{s3}/single-overwritten"
    write_table(_batch(0, 3), path)
    t = CarbonTable.open(path)
    stale = t.storage.read_bytes(t.tablestatus_path)  # what a second writer read before our commit
    original = Storage.replace_if

    def other_writer_lands_right_after(self, p, data, version):
        done = original(self, p, data, version)
        if p.endswith("/tablestatus"):
            self.write_atomic(p, stale)
        return done

    monkeypatch.setattr(Storage, "replace_if", other_writer_lands_right_after)
    with pytest.raises(CarbonConcurrentError, match="overwritten by another writer.*only one writer per table"):
        write_table(_batch(10, 3), path)


def test_without_conditional_writes_a_lock_overwritten_by_a_racer_is_not_held(s3, single_writer, monkeypatch):
    path = f"{s3}/single-lock"
    write_table(_batch(0, 3), path)
    t = CarbonTable.open(path)
    original = Storage.create_exclusive
    racer = {"owner": "racer:7:x", "time": int(time.time() * 1000), "host": "racer-host", "pid": 7,
             "operation": "INSERT"}

    def racer_writes_too(self, p, data):
        created = original(self, p, data)
        self.write_bytes(p, json.dumps(racer).encode())  # its check also found no lock; its PUT came second
        return created

    monkeypatch.setattr(Storage, "create_exclusive", racer_writes_too)
    with pytest.raises(CarbonTableError, match="held by INSERT \\(host racer-host"):
        TableLock(t.storage, t.path, timeout=0.5).acquire()


def test_local_commit_refused_when_tablestatus_changed_under_the_lock(tmp_path):
    path = tmp_path / "t"
    write_table(_batch(0, 3), path)
    t = CarbonTable.open(path)
    with pytest.raises(CarbonConcurrentError, match="this writer still held the table lock"):
        with t.edit_status("test") as edit:
            other = [e.copy() for e in CarbonTable.open(path).load_details()]  # a writer outside the lock protocol
            other[0].extra_info = "theirs"
            t.storage.write_atomic(t.tablestatus_path, ts.dumps(other).encode())
            edit.entries[0].extra_info = "ours"
    assert CarbonTable.open(path).load_details()[0].extra_info == "theirs"
