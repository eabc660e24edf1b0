"""Partitioned tables, the rest: CLEAN FILES of protocol leftovers, ADD PARTITION, overwrite vs update.lock,
DELETE/UPDATE evaluated by Spark."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import carbon_ds
from carbon_ds.api import read_table, write_table
from carbon_ds.errors import CarbonSchemaError, CarbonTableError
from carbon_ds.table.meta.files import deltas
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.partitions import hive_ddl as P
from carbon_ds.table.partitions import hive_load as partitioned_write
from carbon_ds.table.table import CarbonTable

SCHEMA = pa.schema([("a", pa.int64()), ("s", pa.string()), ("day", pa.int32()), ("hour", pa.int32())])


def _data(a, day, hour):
    return pa.table({"a": a, "s": [f"v{x}" for x in a], "day": day, "hour": hour}, schema=SCHEMA)


def _rows(path):
    return sorted(read_table(path).to_pylist(), key=lambda r: r["a"])


def _files(root, trash=False):
    out = set()
    for d, _dirs, files in os.walk(root):
        for f in files:
            rel = os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/")
            if trash or not rel.startswith(".Trash/"):
                out.add(rel)
    return out


def _table(tmp_path, name="t"):
    path = str(tmp_path / name)
    CarbonTable.create(path, SCHEMA, partition_by=["day", "hour"])
    return path


# ------------------------------------------------------------------------------------------ CLEAN FILES
def test_clean_files_removes_protocol_leftovers_and_keeps_live_files(tmp_path):
    path = _table(tmp_path)
    write_table(_data([1, 2], [1, 1], [1, 2]), path)
    write_table(_data([3, 4], [2, 2], [1, 1]), path)
    t = CarbonTable.open(path)
    before_live = _files(path)
    # a crashed load (never committed: its entry says Failure) that moved data files up and left its .tmp
    from carbon_ds.table.loads.start import start_load

    crashed = start_load(t)
    crashed.write_task(0, [_data([90], [1], [1])])
    with t.edit_status("test") as edit:
        ts.find(edit.entries, crashed.segment_id).status = ts.FAILURE
    # an In Progress load: nothing of it may be touched
    live = start_load(t)
    live.write_task(0, [_data([91], [1], [2])])
    live_files = _files(path) - before_live - {f for f in _files(path) if f"-{crashed.segment_id}-" in f} - {
        f"LockFiles/Segment_{crashed.segment_id}.lock"}  # the crashed load's record: CLEAN FILES removes it
    # a stale .tmp of a load nobody knows, with a stray file, and a DROP PARTITION's folder
    os.makedirs(os.path.join(path, "day=1", "hour=1", "123.tmp"))
    with open(os.path.join(path, "day=1", "hour=1", "123.tmp", "x.carbonindex"), "w") as f:
        f.write("junk")
    P.drop_partitions(t, {"day": 2})
    # superseded deltas: two deletes in one block, merged by horizontal compaction
    t.delete("a = 1")
    t.delete("a = 2")
    deltas_before = {f for f in _files(path) if f.endswith(".deletedelta") or "tableupdatestatus-" in f}
    assert len(deltas_before) >= 4
    res = t.clean_files()
    after = _files(path)
    assert not os.path.exists(os.path.join(path, "day=1", "hour=1", "123.tmp"))
    assert not any(f"-{crashed.segment_id}-{crashed.reservation.load_start_ms}." in f for f in after)
    assert live_files <= after  # the In Progress load's .tmp index and data file stay
    assert not os.path.exists(os.path.join(path, "day=2"))  # dropped folder emptied and removed
    status = t.load_details()
    name = deltas.committed_status_name(status)
    assert [f for f in after if "tableupdatestatus-" in f] == [f"Metadata/{name}"]
    assert len([f for f in after if f.endswith(".deletedelta")]) == len(
        [s for st in deltas.read_status(t.storage, path, name).values() for s in st.stamps])
    assert res.leftovers and res.trash_folder
    trashed = {f for f in _files(os.path.join(path, ".Trash"))}
    assert any("day=2/hour=1/" in f for f in trashed)
    assert _rows(path) == []  # every committed row was deleted or dropped...
    live.commit([])  # ...and the live load can still commit (its files were kept)
    # force empties the trash too
    t.clean_files(force=True)
    assert not os.path.exists(os.path.join(path, ".Trash"))


def test_clean_files_never_touches_external_partition_folders(tmp_path):
    import shutil

    path = _table(tmp_path)
    ext = str(tmp_path / "ext")
    write_table(_data([5, 6], [7, 7], [1, 1]), ext, partition_by="day,hour")  # another table's files
    # the added folder lies inside our table, where the leftover sweep looks: it must still be left alone
    loc = os.path.join(path, "day=7", "hour=1")
    shutil.copytree(os.path.join(ext, "day=7", "hour=1"), loc)
    extra = os.path.join(loc, "stray-0-0-99-1.carbonindex")
    with open(extra, "w") as f:
        f.write("not ours")
    before = _files(loc)
    t = CarbonTable.open(path)
    seg = P.add_partition(t, {"day": 7, "hour": 1}, location=loc)
    assert seg is not None and _rows(path) == _rows(ext)
    t.clean_files(force=True)
    assert _files(loc) == before
    P.drop_partitions(t, {"day": 7})
    t.clean_files(force=True)
    assert _files(loc) == before and _rows(path) == []


# ------------------------------------------------------------------------------------------ ADD PARTITION
def test_add_partition_with_and_without_location(tmp_path):
    path = _table(tmp_path)
    write_table(_data([1], [1], [1]), path)
    t = CarbonTable.open(path)
    assert P.add_partition(t, {"day": 3, "hour": 4}) is None
    assert os.path.isdir(os.path.join(path, "day=3", "hour=4")) and len(_rows(path)) == 1
    other = str(tmp_path / "other")
    write_table(_data([8, 9], [5, 5], [6, 6]), other, partition_by="day,hour")
    loc = os.path.join(other, "day=5", "hour=6")
    seg = P.add_partition(t, {"day": 5, "hour": 6}, location=loc)
    assert [r["a"] for r in _rows(path)] == [1, 8, 9]
    assert "day=5/hour=6" in P.show_partitions(t)
    d = ts.find(t.load_details(), seg)
    assert d.path and d.status == ts.SUCCESS
    with pytest.raises(CarbonTableError, match="already exists"):
        P.add_partition(t, {"day": 5, "hour": 6}, location=loc)
    assert P.add_partition(t, {"day": 5, "hour": 6}, location=loc, if_not_exists=True) is None
    # files whose partition columns disagree with the spec are refused
    with pytest.raises(CarbonSchemaError, match="another day"):
        P.add_partition(t, {"day": 6, "hour": 6}, location=loc)
    with pytest.raises(Exception, match="every partition column"):
        P.add_partition(t, {"day": 9})
    assert read_table(path, filter="day = 5").num_rows == 2


# ------------------------------------------------------------------------------------------ update.lock
def test_held_update_lock_makes_overwrite_fail_fast(tmp_path):
    path = _table(tmp_path)
    write_table(_data([1, 2], [1, 2], [1, 1]), path)
    t = CarbonTable.open(path)
    lock = t.update_lock("DELETE")
    try:
        with pytest.raises(CarbonTableError, match=r"INSERT OVERWRITE.*refused: another UPDATE/DELETE/overwrite \(DELETE \(host .*\)\) holds the update lock .*update\.lock"):
            write_table(_data([3], [1], [1]), path, mode="overwrite")
        with pytest.raises(CarbonTableError, match="INSERT OVERWRITE PARTITION"):
            write_table(_data([3], [1], [1]), path, mode="overwrite", partition={"day": 1})
    finally:
        lock.release()
    assert [r["a"] for r in _rows(path)] == [1, 2]
    assert not any(e.status in (ts.IN_PROGRESS, ts.OVERWRITE_IN_PROGRESS) for e in t.load_details())
    write_table(_data([3], [1], [1]), path, mode="overwrite", partition={"day": 1})
    assert [r["a"] for r in _rows(path)] == [2, 3]
    assert not os.path.exists(os.path.join(path, "LockFiles", "update.lock"))


# ------------------------------------------------------------------------------------------ Spark
def test_spark_add_partition_delete_update_and_overwrite_lock(spark, tmp_path):
    from carbon_ds.spark.statements import catalog

    run = carbon_ds.sql
    run(spark, "DROP TABLE IF EXISTS pmore")
    run(spark, "CREATE TABLE pmore (id BIGINT, name STRING) PARTITIONED BY (day INT) STORED AS carbondata")
    path = catalog.default_location(spark, "default", "pmore")
    names = ["a", "bbbb", "cc", "ddddd", "e", "ffff", None, "gg"]
    data = pa.table({"id": list(range(8)), "name": names, "day": [i % 3 for i in range(8)]},
                    schema=pa.schema([("id", pa.int64()), ("name", pa.string()), ("day", pa.int32())]))
    write_table(data, path)
    # a predicate our parser does not support: evaluated by Spark
    n = run(spark, "DELETE FROM pmore WHERE length(name) > 3 OR id % 2 = 0").collect()[0][0]
    lens = pc.utf8_length(data.column("name"))
    gone = pc.or_kleene(pc.greater(lens, 3), pc.equal(pc.bit_wise_and(data.column("id"), 1), 0))
    oracle = data.filter(pc.invert(pc.fill_null(gone, False)))
    assert n == data.num_rows - oracle.num_rows
    assert read_table(path).sort_by("id").to_pylist() == oracle.sort_by("id").to_pylist()
    n = run(spark, "UPDATE pmore SET name = upper(coalesce(name, 'x')), day = 9 WHERE id IN (1, 6) "
                   "OR startswith(name, 'g')").collect()[0][0]
    assert n == 1  # only id 7 ('gg') is left of those
    got = sorted(tuple(r.values()) for r in read_table(path).to_pylist())
    assert got == [(7, "GG", 9)]
    # ADD PARTITION through SQL, with and without LOCATION
    other = str(tmp_path / "src")
    write_table(pa.table({"id": [100], "name": ["z"], "day": [4]}, schema=data.schema), other, partition_by="day")
    run(spark, f"ALTER TABLE pmore ADD PARTITION (day = 4) LOCATION '{os.path.join(other, 'day=4')}'")
    run(spark, "ALTER TABLE pmore ADD IF NOT EXISTS PARTITION (day = 5)")
    assert os.path.isdir(os.path.join(path, "day=5"))
    assert [r.partition for r in run(spark, "SHOW PARTITIONS pmore").collect()] == [
        "day=0", "day=1", "day=2", "day=4", "day=9"]  # rows deleted by deltas leave their folders live
    # the Spark overwrite path takes update.lock too, and releases it in commit()
    t = CarbonTable.open(path)
    lock = t.update_lock("UPDATE")
    try:
        with pytest.raises(Exception, match=r"refused: another UPDATE/DELETE/overwrite \(UPDATE \(host .*\)\) holds the update lock"):
            run(spark, "INSERT OVERWRITE TABLE pmore PARTITION (day = 9) SELECT 7, 'q'")
    finally:
        lock.release()
    run(spark, "INSERT OVERWRITE TABLE pmore PARTITION (day = 9) SELECT 7, 'q'")
    assert sorted(r.id for r in spark.read.format("carbondata").load(path).collect()) == [7, 100]
    assert not os.path.exists(os.path.join(path, "LockFiles", "update.lock"))
    run(spark, "DROP TABLE pmore")


def test_stale_tmp_dirs_helper_still_lists_tmp(tmp_path):
    path = _table(tmp_path)
    os.makedirs(os.path.join(path, "day=1", "hour=1", "5.tmp"))
    assert ([d.replace("\\", "/").rsplit("/", 1)[-1] for d in partitioned_write.stale_tmp_dirs(CarbonTable.open(path))]
        == ["5.tmp"])
