"""Hive-style partitioned tables: layout, escaping, the .tmp index protocol, overwrite, pruning, SQL."""

from __future__ import annotations

import json
import os
import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import carbon_ds
from carbon_ds import faults
from carbon_ds.api import explain, read_table, write_table
from carbon_ds.errors import CarbonSchemaError, CarbonTableError
from carbon_ds.format import hive
from carbon_ds.table.loads.start import start_load
from carbon_ds.table.partitions import hive_ddl as P
from carbon_ds.table.partitions import hive_load as partitioned_write
from carbon_ds.table.table import CarbonTable

SCHEMA = pa.schema([("a", pa.int64()), ("s", pa.string()), ("day", pa.int32()), ("hour", pa.int32())])


def _rows(path, **kw):
    return sorted(read_table(path, **kw).to_pylist(), key=lambda r: (r["a"], str(r)))


def _data(a, day, hour, s=None):
    return pa.table({"a": a, "s": s or [f"v{x}" for x in a], "day": day, "hour": hour}, schema=SCHEMA)


def test_escaping_and_path_safety():
    assert hive.escape("a/b\\c=d:e%") == "a%2Fb%5Cc%3Dd%3Ae%25"
    assert hive.component("S", "../../etc") == "s=..%2F..%2Fetc"
    assert hive.component("s", None) == "s=__HIVE_DEFAULT_PARTITION__" == hive.component("s", "")
    assert hive.parse_component("s=..%2F..%2Fetc") == ("s", "../../etc")
    assert hive.escape("x\x01\ny") == "x%01%0Ay"
    with pytest.raises(CarbonSchemaError, match="supported"):
        CarbonTable.create("/tmp/never", pa.schema([("a", pa.int64()), ("f", pa.float64())]), partition_by=["f"])


def test_string_partition_values_stay_inside_the_table(tmp_path):
    path = str(tmp_path / "t")
    schema = pa.schema([("a", pa.int64()), ("p", pa.string())])
    CarbonTable.create(path, schema, partition_by=["p"])
    evil = ["../../escape", "/abs", "a=b", "..", None, "", "x\\y", "%41"]
    write_table(pa.table({"a": list(range(len(evil))), "p": evil}, schema=schema), path)
    for root, _dirs, files in os.walk(tmp_path):
        for f in files:
            assert os.path.realpath(os.path.join(root, f)).startswith(os.path.realpath(path) + os.sep)
    got = read_table(path).sort_by("a").column("p").to_pylist()
    assert got == evil  # files hold the column; null and "" share the default folder, as in Hive
    assert sorted(P.show_partitions(CarbonTable.open(path)))[0].startswith("p=%")


def test_layout_segment_file_schema_and_pruning(tmp_path):
    path = str(tmp_path / "t")
    t = CarbonTable.create(path, SCHEMA, partition_by=["day", "hour"])
    assert t.partition_columns == ["day", "hour"]
    assert CarbonTable.open(path).info.fact_table.partitionInfo.partition_type == 4  # NATIVE_HIVE
    write_table(_data([1, 2, 3, 4], [1, 1, 2, None], [0, 1, 0, 0]), path)
    assert sorted(os.listdir(path)) == ["LockFiles", "Metadata", "day=1", "day=2", "day=__HIVE_DEFAULT_PARTITION__"]
    files = sorted(os.listdir(os.path.join(path, "day=1", "hour=0")))
    assert len(files) == 2 and files[0].endswith(".carbonindex") and files[1].endswith(".carbondata")
    detail = CarbonTable.open(path).load_details()[0]
    doc = json.loads(open(os.path.join(path, "Metadata", "segments", detail.segment_file)).read())
    loc = doc["locationMap"]
    assert sorted(loc) == ["/day=1/hour=0", "/day=1/hour=1", "/day=2/hour=0", "/day=__HIVE_DEFAULT_PARTITION__/hour=0"]
    assert loc["/day=1/hour=1"]["partitions"] == ["day=1", "hour=1"] and loc["/day=1/hour=1"]["isRelative"]
    assert [r["a"] for r in _rows(path)] == [1, 2, 3, 4]
    assert [r["a"] for r in _rows(path, filter="day = 1 AND a > 1")] == [2]
    assert [r["a"] for r in _rows(path, filter="day IS NULL")] == [4]
    report = explain(path, "day = 2")
    assert report["files"]["total"] == 1  # the other folders were ruled out before any file opened
    assert CarbonTable.open(path).count() == 4 and CarbonTable.open(path).count("hour = 0") == 3


def test_overwrite_static_dynamic_whole_and_drop(tmp_path):
    path = str(tmp_path / "t")
    write_table(_data([1, 2, 3, 4, 5, 6], [1, 1, 2, 2, 3, 3], [0, 1, 0, 1, 0, 1]), path, partition_by="day,hour")
    write_table(pa.table({"a": [10], "s": ["x"]}), path, mode="overwrite", partition={"day": 2, "hour": 0})
    assert [r["a"] for r in _rows(path)] == [1, 2, 4, 5, 6, 10]
    write_table(_data([20, 21], [3, 4], [1, 1]), path, mode="overwrite", partition_overwrite_mode="dynamic")
    assert [r["a"] for r in _rows(path)] == [1, 2, 4, 5, 10, 20, 21]
    write_table(pa.table({"a": [30], "s": ["y"], "hour": pa.array([7], pa.int32())}), path, mode="overwrite",
                partition="day=1")
    assert [(r["a"], r["day"], r["hour"]) for r in _rows(path, filter="day = 1")] == [(30, 1, 7)]
    t = CarbonTable.open(path)
    assert P.drop_partitions(t, {"day": 3}) == ["day=3/hour=0", "day=3/hour=1"]
    assert "day=3/hour=0" not in P.show_partitions(t)
    with pytest.raises(CarbonTableError, match="no partition"):
        P.drop_partitions(t, {"day": 3})
    write_table(_data([40], [9], [9]), path, mode="overwrite")
    assert [r["a"] for r in _rows(path)] == [40] and P.show_partitions(t) == ["day=9/hour=9"]
    with pytest.raises(Exception, match="partition_by"):
        write_table(_data([1], [1], [1]), path, partition_by="hour")


@pytest.mark.parametrize("step", ["task", "segment_file", "index_moved", "before_status"])
def test_crash_at_each_insert_step_leaves_only_committed_data(tmp_path, monkeypatch, step):
    path = str(tmp_path / "t")
    write_table(_data([1, 2], [1, 2], [0, 0]), path, partition_by=["day", "hour"])
    before = _rows(path)

    class Crash(Exception):
        pass

    def hook(name):
        # "task": a task dies after writing its first partition's rows; the others: protocol steps
        if name == ("load.partition_rows" if step == "task" else f"load.{step}"):
            raise Crash(name)

    # A crash is simulated by skipping abort: call the load's pieces directly, as a dying driver would.
    t = CarbonTable.open(path)
    res = start_load(t)
    with faults.inject(hook), pytest.raises(Crash):
        r = res.write_task(0, [_data([7, 8, 9], [1, 3, 3], [0, 0, 5])])
        res.commit([r])
    assert _rows(path) == before  # readable, only committed rows
    tmp_index = [f for root, _d, fs in os.walk(path) for f in fs
                 if f.endswith(".carbonindex") and root.endswith(".tmp")]
    assert all(f"-{res.segment_id}-" in f for f in tmp_index)
    # the next load still works, then abort/cleanup removes every file of the dead load
    write_table(_data([5], [1], [0]), path)
    res.abort()
    leftovers = [f for root, _d, fs in os.walk(path) for f in fs if f"-{res.segment_id}-{res.reservation.load_start_ms}." in f]
    assert leftovers == []
    assert partitioned_write.stale_tmp_dirs(CarbonTable.open(path)) == []
    assert [r["a"] for r in _rows(path)] == [1, 2, 5]


def _oracle_overwrite(cur: pa.Table, new: pa.Table, mode: str, spec: dict | None) -> pa.Table:
    if mode == "whole":
        return new
    if mode == "static":
        mask = pc.equal(cur["day"], pa.scalar(spec["day"], pa.int32()))
        keep = cur.filter(pc.invert(pc.fill_null(mask, False)))
        return pa.concat_tables([keep, new])
    # dynamic: partitions present in new are replaced
    keys = {(d, h) for d, h in zip(new["day"].to_pylist(), new["hour"].to_pylist(), strict=True)}
    mask = pa.array([(d, h) not in keys for d, h in zip(cur["day"].to_pylist(), cur["hour"].to_pylist(), strict=True)])
    return pa.concat_tables([cur.filter(mask), new])


@pytest.mark.parametrize("partitioned", [True, False])
def test_random_sequence_matches_oracle(tmp_path, partitioned):
    rng = random.Random(20211123 + partitioned)
    path = str(tmp_path / "t")
    CarbonTable.create(path, SCHEMA, partition_by=["day", "hour"] if partitioned else None)
    cur = SCHEMA.empty_table()
    next_a = 0
    for _step in range(60):
        n = rng.randint(0, 6)
        a = list(range(next_a, next_a + n))
        next_a += n
        day = [rng.choice([1, 2, 3, None]) for _ in a]
        hour = [rng.choice([0, 1]) for _ in a]
        new = _data(a, day, hour)
        op = rng.random()
        if op < 0.6 or not partitioned and op < 0.9:
            write_table(new, path)
            cur = pa.concat_tables([cur, new])
        elif op < 0.7 or not partitioned:
            write_table(new, path, mode="overwrite")
            cur = new
        elif op < 0.8:
            d = rng.choice([1, 2, 3])
            static = new.drop_columns(["day"])
            write_table(static, path, mode="overwrite", partition={"day": d})
            new = partitioned_write.add_static_columns(static, {"day": str(d)}, SCHEMA).select(SCHEMA.names)
            cur = _oracle_overwrite(cur, new, "static", {"day": d})
        elif op < 0.9:
            write_table(new, path, mode="overwrite", partition_overwrite_mode="dynamic")
            cur = _oracle_overwrite(cur, new, "dynamic", None)
        else:
            d = rng.choice([1, 2, 3])
            try:
                P.drop_partitions(CarbonTable.open(path), {"day": d})
            except CarbonTableError:
                pass
            cur = cur.filter(pc.invert(pc.fill_null(pc.equal(cur["day"], pa.scalar(d, pa.int32())), False)))
        got = read_table(path).sort_by("a")
        assert got.equals(cur.sort_by("a")), f"step {_step}"
        assert CarbonTable.open(path).count() == cur.num_rows
    probe = "day = 2 AND hour = 1"
    assert read_table(path, filter=probe).sort_by("a").equals(
        cur.filter(pc.fill_null(pc.and_(pc.equal(cur["day"], 2), pc.equal(cur["hour"], 1)), False)).sort_by("a"))


def test_sql_partitioned_table(spark):
    from carbon_ds.spark.statements import catalog

    def sql(text):
        return carbon_ds.sql(spark, text)

    sql("DROP TABLE IF EXISTS ptab")
    sql("CREATE TABLE ptab (id BIGINT, name STRING) PARTITIONED BY (day INT, hour INT) STORED AS carbondata")
    path = catalog.default_location(spark, "default", "ptab")
    assert CarbonTable.open(path).partition_columns == ["day", "hour"]
    sql("INSERT INTO ptab VALUES (1, 'a', 20211122, 1), (2, 'b', 20211123, 2)")  # dynamic, via the view
    sql("INSERT INTO ptab PARTITION (day = 20211122, hour = 3) SELECT 3, 'c'")  # static
    sql("INSERT INTO ptab PARTITION (day = 20211124, hour) SELECT 4, 'd', 5")  # mixed
    assert [r.partition for r in sql("SHOW PARTITIONS ptab").collect()] == [
        "day=20211122/hour=1", "day=20211122/hour=3", "day=20211123/hour=2", "day=20211124/hour=5"]
    sql("INSERT OVERWRITE TABLE ptab PARTITION (day = 20211122) SELECT 9, 'z', 7")
    got = sorted(tuple(r) for r in spark.read.format("carbondata").load(path).collect())
    assert got == [(2, "b", 20211123, 2), (4, "d", 20211124, 5), (9, "z", 20211122, 7)]
    sql("ALTER TABLE ptab DROP PARTITION (day = 20211124)")
    got = sorted(r.id for r in carbon_ds.read(spark, path, filter="day >= 20211123").collect())
    assert got == [2]
    sql("DROP TABLE ptab")


def test_empty_and_default_marker_partition_values_match_filters_like_spark(tmp_path):
    path = str(tmp_path / "t")
    data = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()),
                     "p": pa.array(["", None, "__HIVE_DEFAULT_PARTITION__", "x"], pa.string())})
    write_table(data, path, partition_by="p")

    def ids(where):
        return sorted(read_table(path, filter=where).column("id").to_pylist())

    # Spark's three-valued logic on the stored values: '' and the literal are strings, None is null
    assert ids("p = ''") == [1]
    assert ids("p <> 'x'") == [1, 3]
    assert ids("p = '__HIVE_DEFAULT_PARTITION__'") == [3]
    assert ids("p IS NULL") == [2]
    assert CarbonTable.open(path).delete("p = ''") == 1
    assert sorted(read_table(path).column("id").to_pylist()) == [2, 3, 4]


def test_add_segment_refuses_folders_inside_or_around_the_table(tmp_path):
    path = tmp_path / "t"
    write_table(pa.table({"id": pa.array([1], pa.int64()), "p": ["a"]}), str(path))
    t = CarbonTable.open(path)
    with pytest.raises(CarbonTableError, match="lies inside table"):
        t.add_segment(str(path / "Fact" / "Part0" / "Segment_0"))
    with pytest.raises(CarbonTableError, match="contains table"):
        t.add_segment(str(tmp_path))
    assert read_table(str(path)).num_rows == 1


def test_an_empty_where_is_an_error_not_every_row(tmp_path):
    path = str(tmp_path / "t")
    write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), path)
    with pytest.raises(CarbonTableError, match="empty WHERE"):
        CarbonTable.open(path).delete("  ")
    assert read_table(path).num_rows == 2


def test_hostile_partition_values_give_clear_errors_or_round_trip(tmp_path):
    path = str(tmp_path / "t")
    write_table(pa.table({"id": pa.array([1], pa.int64()), "p": ["a\x00b"]}), path, partition_by="p")
    assert read_table(path, filter="p = 'a\x00b'").column("id").to_pylist() == [1]
    assert any("%00" in d for d in os.listdir(path))
    with pytest.raises(CarbonSchemaError, match="partition value of column 'p' is too long for a folder name"):
        write_table(pa.table({"id": pa.array([2], pa.int64()), "p": ["x" * 10_000]}), path)
    assert read_table(path).num_rows == 1


def test_decimal_wider_than_38_digits_is_refused_by_name(tmp_path):
    with pytest.raises(CarbonSchemaError, match="column 'd': decimal256.* at most 38 digits"):
        write_table(pa.table({"d": pa.array([1], pa.decimal256(40, 2))}), str(tmp_path / "t"))


def test_overwriting_a_partition_with_deleted_rows(tmp_path):
    """A partition whose rows were partly deleted, replaced by a dynamic overwrite: the segment file marks the
    old folder, the update status keeps its block's entry, and the table reads the new rows (the check that
    every partly deleted block is still listed must not count a replaced partition's block as lost)."""
    path = str(tmp_path / "t")
    carbon_ds.write_table(pa.table({"id": list(range(10)), "p": [1, 2] * 5}), path, partition_by="p")
    assert carbon_ds.CarbonTable.open(path).delete("id = 3") == 1
    carbon_ds.write_table(pa.table({"id": [100, 101], "p": [2, 2]}), path, mode="overwrite",
                          partition_overwrite_mode="dynamic")
    got = carbon_ds.read_table(path)
    assert sorted(got.column("id").to_pylist()) == [0, 2, 4, 6, 8, 100, 101]
    assert carbon_ds.CarbonTable.open(path).delete("id = 5") == 0  # the replaced block's rows are gone
