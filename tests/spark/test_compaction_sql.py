"""ALTER TABLE ... COMPACT through carbon_ds.sql: the merged segment in SHOW SEGMENTS, rows unchanged; the
merge runs as Spark tasks (one per partition folder), equal to the pure-Python path; a failed task commits
nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import carbon_ds
from carbon_ds.errors import CarbonError
from carbon_ds.readers.carbon_file import CarbonDataFile
from carbon_ds.spark.statements.compaction_tasks import JOB_GROUP
from carbon_ds.table import CarbonTable
from carbon_ds.table.meta.status import tablestatus as ts


def test_sql_compact_minor_major_custom(spark, tmp_path):
    def sql(text):
        return carbon_ds.sql(spark, text)

    sql("DROP TABLE IF EXISTS compact_t")
    sql(f"CREATE TABLE compact_t (id BIGINT, name STRING) STORED AS carbondata "
        f"TBLPROPERTIES ('sort_columns'='name') LOCATION '{tmp_path / 'ct'}'")
    for i in range(6):
        sql(f"INSERT INTO compact_t VALUES ({i}, 'n{5 - i}'), ({i + 10}, 'm{i}')")
    sql("DELETE FROM compact_t WHERE id = 3")
    expected = sorted(r["id"] for r in sql("SELECT id FROM compact_t").collect())
    assert len(expected) == 11

    out = sql("ALTER TABLE compact_t COMPACT 'MINOR'").collect()
    assert [(r["Merged Segment"], r["Source Segments"]) for r in out] == [("0.1", "0,1,2,3")]
    segs = {r["ID"]: r["Status"] for r in sql("SHOW SEGMENTS FOR TABLE compact_t").collect()}
    assert segs == {"0.1": "Success", "0": "Compacted", "1": "Compacted", "2": "Compacted", "3": "Compacted",
                    "4": "Success", "5": "Success"}
    sql("ALTER TABLE compact_t COMPACT 'CUSTOM' WHERE SEGMENT.ID IN (4, 5)")
    sql("ALTER TABLE compact_t COMPACT 'MAJOR'")
    assert sorted(r["id"] for r in sql("SELECT id FROM compact_t").collect()) == expected
    t = CarbonTable.open(str(tmp_path / "ct"))
    assert [(e.name, e.status, e.merged_load_name) for e in t.load_details() if "." in e.name] == [
        ("0.1", "Compacted", "0.2"), ("4.1", "Compacted", "0.2"), ("0.2", "Success", None)]
    sql("DROP TABLE compact_t")


# ------------------------------------------------------------------------------------------ Spark tasks
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("v", pa.float64()), ("day", pa.int32())])
COLUMNS = "id BIGINT, name STRING, v DOUBLE"


def _batch(i: int, n: int = 400) -> pa.Table:
    rng = np.random.default_rng(i)
    ids = np.arange(i * n, (i + 1) * n, dtype=np.int64)
    rng.shuffle(ids)
    names = [None if x % 11 == 0 else f"n{(x * 7) % 53:02d}" for x in ids]
    return pa.table({"id": ids, "name": pa.array(names, pa.string()), "v": ids * 0.5,
                     "day": pa.array(ids % 3, pa.int32())}, schema=SCHEMA)


def _partitioned(path: Path, loads: int) -> tuple[CarbonTable, pa.Table]:
    t = CarbonTable.create(str(path), SCHEMA, partition_by=["day"], sort_columns=["name"])
    data = []
    for i in range(loads):
        with t.load() as load:
            load.write([_batch(i)])
        data.append(_batch(i))
    t.delete("(id >= 100 AND id < 130) OR (id >= 900 AND id < 950)")
    oracle = pa.concat_tables(data)
    ids = oracle.column("id").to_numpy()
    oracle = oracle.filter(pa.array(~(((ids >= 100) & (ids < 130)) | ((ids >= 900) & (ids < 950)))))
    return t, oracle.sort_by("id")


def _rows(t: CarbonTable) -> pa.Table:
    return t.to_arrow().select(SCHEMA.names).sort_by("id")


def _status(t: CarbonTable) -> dict[str, tuple[str, str | None]]:
    return {e.name: (e.status, e.merged_load_name) for e in t.load_details()}


def _merged_files(t: CarbonTable, segment: str) -> dict[str, pa.Table]:
    """The merged segment's rows per partition folder, in file order."""
    out = {}
    for f in t.files([segment]):
        with CarbonDataFile(f.path) as cf:
            out[Path(f.path).parent.name] = cf.read()
    return out


def test_spark_compaction_runs_one_task_per_partition_and_matches_pure_python(spark, tmp_path):
    t, oracle = _partitioned(tmp_path / "sp", 5)
    shutil.copytree(tmp_path / "sp", tmp_path / "py")
    carbon_ds.sql(spark, "DROP TABLE IF EXISTS compact_sp")
    carbon_ds.sql(spark, f"CREATE TABLE compact_sp ({COLUMNS}) PARTITIONED BY (day INT) STORED AS carbondata "
                         f"LOCATION '{tmp_path / 'sp'}'")
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup(JOB_GROUP))
    out = carbon_ds.sql(spark, "ALTER TABLE compact_sp COMPACT 'MINOR'").collect()
    jobs = sorted(set(tracker.getJobIdsForGroup(JOB_GROUP)) - before)
    assert len(jobs) == 1  # one Spark job for the one merge group ...
    stages = tracker.getJobInfo(jobs[0]).stageIds
    assert [tracker.getStageInfo(s).numTasks for s in stages] == [3]  # ... one task per partition folder

    py = CarbonTable.open(str(tmp_path / "py"))
    merged = py.compact("minor")  # the pure-Python path on an identical copy
    assert [(r["Merged Segment"], r["Source Segments"], r["Rows"]) for r in out] == [
        (m.segment, ",".join(m.sources), str(m.rows)) for m in merged] == [("0.1", "0,1,2,3", str(
            pc.sum(pc.less(oracle.column("id"), 1600)).as_py()))]
    sp = CarbonTable.open(str(tmp_path / "sp"))
    expected = {**{str(i): (ts.COMPACTED, "0.1") for i in range(4)}, "4": (ts.SUCCESS, None),
                "0.1": (ts.SUCCESS, None)}
    assert _status(sp) == _status(py) == expected
    assert _rows(sp).equals(oracle) and _rows(py).equals(oracle)
    spark_files, python_files = _merged_files(sp, "0.1"), _merged_files(py, "0.1")
    assert sorted(spark_files) == ["day=0", "day=1", "day=2"]
    for folder, rows in spark_files.items():
        assert rows.equals(python_files[folder])  # same rows in the same order
        order = pc.sort_indices(rows, sort_keys=[("name", "ascending", "at_start")])
        assert rows.column("name").equals(rows.take(order).column("name"))
    carbon_ds.sql(spark, "DROP TABLE compact_sp")


def test_failing_spark_task_leaves_the_table_unchanged(spark, tmp_path):
    t, oracle = _partitioned(tmp_path / "f", 4)
    before = _status(t)
    victim = next(Path(f.path) for f in t.files(["2"]) if Path(f.path).parent.name == "day=1")
    saved = victim.read_bytes()
    victim.write_bytes(saved[: len(saved) // 2])  # the task merging day=1 fails; the others succeed
    carbon_ds.sql(spark, "DROP TABLE IF EXISTS compact_fail")
    carbon_ds.sql(spark, f"CREATE TABLE compact_fail ({COLUMNS}) PARTITIONED BY (day INT) STORED AS carbondata "
                         f"LOCATION '{tmp_path / 'f'}'")
    with pytest.raises(CarbonError, match=victim.name):
        carbon_ds.sql(spark, "ALTER TABLE compact_fail COMPACT 'MINOR'")
    victim.write_bytes(saved)
    t = CarbonTable.open(str(tmp_path / "f"))
    after = _status(t)
    assert after.pop("0.1", (ts.FAILURE, None)) == (ts.FAILURE, None)  # never committed
    assert after == before
    assert _rows(t).equals(oracle)
    assert {f.segment_id for f in t.files()} == {"0", "1", "2", "3"}

    merged = t.compact("minor")  # the next compaction removes what the failed one left and merges again
    assert [m.segment for m in merged] == ["0.1"]
    assert _rows(t).equals(oracle)
    committed = {Path(f.path).name for f in t.files(["0.1"])}
    on_disk = {p.name for p in (tmp_path / "f").glob("day=*/*.carbondata") if "-0.1-" in p.name}
    assert committed and on_disk == committed
    carbon_ds.sql(spark, "DROP TABLE compact_fail")
