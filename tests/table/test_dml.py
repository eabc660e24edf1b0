"""Row DELETE / UPDATE through delete deltas (carbon_ds.table.ops.dml.delete_update, carbon_ds.table.meta.files.deltas)."""

from __future__ import annotations

import glob
import json
import logging
import os
import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import carbon_ds
from carbon_ds import faults
from carbon_ds.ddl.statement_parser import DeleteRows, parse_row_dml
from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.expressions.values import SqlExpr
from carbon_ds.table.meta.files import deltas as D
from carbon_ds.table.meta.status import tablestatus
from carbon_ds.table.table import CarbonTable

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string()), ("p", pa.int32())])


def _rows(ids, rng: random.Random) -> pa.Table:
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "v": pa.array([rng.randrange(100) for _ in ids], pa.int64()),
        "s": pa.array([rng.choice(["a", "b", "c", None]) for _ in ids], pa.string()),
        "p": pa.array([rng.randrange(3) for _ in ids], pa.int32()),
    }, schema=SCHEMA)


def _sorted(t: pa.Table) -> list[tuple]:
    return sorted(zip(*[t.column(n).to_pylist() for n in SCHEMA.names], strict=True), key=lambda r: r[0])


@pytest.mark.parametrize("partitioned", [False, True])
def test_random_mixed_sequence_matches_oracle(tmp_path, partitioned):
    rng = random.Random(7 + partitioned)
    path = str(tmp_path / "t")
    CarbonTable.create(path, SCHEMA, partition_by=["p"] if partitioned else None)
    oracle = SCHEMA.empty_table()
    next_id = 0
    for step in range(56):
        op = rng.choice(["insert", "insert", "delete", "delete", "update", "update", "overwrite"]
                        if step > 2 else ["insert"])
        table = CarbonTable.open(path)
        if op in ("insert", "overwrite"):
            n = rng.randrange(1, 40)
            data = _rows(list(range(next_id, next_id + n)), rng)
            next_id += n
            carbon_ds.write_table(data, path, mode="append" if op == "insert" else "overwrite")
            oracle = data if op == "overwrite" else pa.concat_tables([oracle, data])
        elif op == "delete":
            lo = rng.randrange(100)
            where = f"v >= {lo} AND v < {lo + 25}" if rng.random() < 0.7 else "s = 'a'"
            mask = pc.fill_null(pc.and_(pc.greater_equal(oracle["v"], lo), pc.less(oracle["v"], lo + 25))
                                if where.startswith("v") else pc.equal(oracle["s"], "a"), False)
            assert table.delete(where) == pc.sum(mask).as_py() or 0
            oracle = oracle.filter(pc.invert(mask))
        else:
            lo = rng.randrange(100)
            mask = pc.fill_null(pc.and_(pc.greater_equal(oracle["v"], lo), pc.less(oracle["v"], lo + 20)), False)
            sets = {"v": SqlExpr("v + 1000"), "s": "u"}
            if partitioned and rng.random() < 0.5:
                sets["p"] = 7  # moves rows to another partition
            assert table.update(sets, f"v >= {lo} AND v < {lo + 20}") == (pc.sum(mask).as_py() or 0)
            changed = oracle.filter(mask)
            changed = changed.set_column(1, "v", pc.add(changed["v"], 1000))
            changed = changed.set_column(2, "s", pa.array(["u"] * changed.num_rows, pa.string()))
            if "p" in sets:
                changed = changed.set_column(3, "p", pa.array([7] * changed.num_rows, pa.int32()))
            oracle = pa.concat_tables([oracle.filter(pc.invert(mask)), changed])
        got = carbon_ds.read_table(path)
        assert _sorted(got) == _sorted(oracle), f"step {step} ({op})"
        assert CarbonTable.open(path).count() == oracle.num_rows
        if step % 9 == 0:
            f = carbon_ds.read_table(path, filter="v < 50")
            assert _sorted(f) == _sorted(oracle.filter(pc.fill_null(pc.less(oracle["v"], 50), False)))
            assert CarbonTable.open(path).count("v < 50") == f.num_rows
    if partitioned:
        assert glob.glob(str(tmp_path / "t" / "p=*" / "*.deletedelta"))


def test_delta_files_status_and_horizontal_compaction(tmp_path):
    path = str(tmp_path / "t")
    carbon_ds.write_table(pa.table({"a": pa.array(range(100), pa.int64())}), path)
    t = CarbonTable.open(path)
    assert t.delete("a < 3") == 3
    deltas = glob.glob(os.path.join(path, "Fact", "Part0", "Segment_0", "*.deletedelta"))
    assert len(deltas) == 1
    body = json.load(open(deltas[0]))
    data_file = glob.glob(os.path.join(path, "Fact", "Part0", "Segment_0", "*.carbondata"))[0]
    # CarbonData's block name: the data file's name without load timestamp and extensions, as
    # SegmentUpdateStatusManager.getDeltaFiles derives it from the data file's path
    block = os.path.basename(data_file).rsplit(".", 1)[0].rsplit("-", 1)[0]
    assert block == "part-0-0_batchno0-0-0"
    assert body == {"blockletDetailsMap": {"0_0": {"id": "0", "pageId": 0, "deletedRows": [0, 1, 2]}},
                    "blockName": block}
    assert os.path.basename(deltas[0]).rsplit("-", 1)[0] == block  # CarbonData's getBlockNameFromDeleteDeltaFile
    entries = tablestatus.read(t.storage, t.tablestatus_path)
    status_name = entries[0].update_status_file
    assert status_name.startswith("tableupdatestatus-")
    assert entries[0].update_delta_start == entries[0].update_delta_end == status_name.split("-")[1]
    status = json.load(open(os.path.join(path, "Metadata", status_name)))
    assert status == [{"segmentName": "0", "blockName": block, "segmentStatus": "Success",
                       "deleteDeltaStartTimestamp": status_name.split("-")[1],
                       "deleteDeltaEndTimestamp": status_name.split("-")[1],
                       "deltaFileStamps": [status_name.split("-")[1]],
                       "actualBlockName": os.path.basename(data_file), "deletedRowsInBlock": "3"}]
    # a second delete: threshold 1 merges both into one file listed alone
    assert t.delete("a = 50") == 1
    st = json.load(open(os.path.join(path, "Metadata", t.load_details()[0].update_status_file)))
    assert len(st[0]["deltaFileStamps"]) == 1 and st[0]["deletedRowsInBlock"] == "4"
    merged = os.path.join(os.path.dirname(data_file), f"{block}-{st[0]['deltaFileStamps'][0]}.deletedelta")
    assert json.load(open(merged))["blockletDetailsMap"]["0_0"]["deletedRows"] == [0, 1, 2, 50]
    # with a higher threshold deltas accumulate
    assert t.delete("a = 60", threshold=5) == 1
    st = json.load(open(os.path.join(path, "Metadata", t.load_details()[0].update_status_file)))
    assert len(st[0]["deltaFileStamps"]) == 2
    assert t.count() == 95 and carbon_ds.read_table(path).num_rows == 95
    assert t.delete("a < 3") == 0  # already deleted rows are not counted again


def test_deltas_named_by_earlier_versions_still_apply_and_move_to_carbondata_names(tmp_path, monkeypatch):
    # carbon-ds once named a block's deltas with the data file's load timestamp in the block name; CarbonData
    # (SegmentUpdateStatusManager.getDeltaFiles) never found those. Such a table reads as before, and the next
    # DELETE of a block rewrites its deletes into one delta under CarbonData's name.
    path = str(tmp_path / "t")
    carbon_ds.write_table(pa.table({"a": pa.array(range(100), pa.int64())}), path)
    with monkeypatch.context() as m:
        m.setattr(D, "block_name", D.legacy_block_name)
        assert CarbonTable.open(path).delete("a < 3") == 3
    folder = os.path.join(path, "Fact", "Part0", "Segment_0")
    data_file = glob.glob(os.path.join(folder, "*.carbondata"))[0]
    legacy = os.path.basename(data_file).split(".")[0]
    assert [os.path.basename(f).rsplit("-", 1)[0] for f in glob.glob(os.path.join(folder, "*.deletedelta"))] == [legacy]
    t = CarbonTable.open(path)
    assert sorted(carbon_ds.read_table(path).column("a").to_pylist()) == list(range(3, 100))
    assert t.delete("a = 50", threshold=5) == 1
    st = json.load(open(os.path.join(path, "Metadata", t.load_details()[0].update_status_file)))
    assert st[0]["blockName"] == "part-0-0_batchno0-0-0" and st[0]["deletedRowsInBlock"] == "4"
    assert len(st[0]["deltaFileStamps"]) == 1
    moved = os.path.join(folder, f"part-0-0_batchno0-0-0-{st[0]['deltaFileStamps'][0]}.deletedelta")
    assert json.load(open(moved))["blockletDetailsMap"]["0_0"]["deletedRows"] == [0, 1, 2, 50]
    assert sorted(carbon_ds.read_table(path).column("a").to_pylist()) == [a for a in range(3, 100) if a != 50]


def test_fully_deleted_block_is_marked_and_skipped(tmp_path):
    path = str(tmp_path / "t")
    carbon_ds.write_table(pa.table({"a": pa.array([1, 2, 3], pa.int64())}), path)
    carbon_ds.write_table(pa.table({"a": pa.array([10, 20], pa.int64())}), path)
    t = CarbonTable.open(path)
    assert t.delete("a >= 10") == 2
    st = json.load(open(os.path.join(path, "Metadata", t.load_details()[0].update_status_file)))
    assert [(s["segmentName"], s["segmentStatus"]) for s in st] == [("1", "Marked for Delete")]
    assert len(t.files()) == 1
    assert t.count() == 3 and t.to_arrow()["a"].to_pylist() == [1, 2, 3]
    assert carbon_ds.read_table(path, filter="a > 0")["a"].to_pylist() == [1, 2, 3]


def test_lock_conflict_and_crash_leave_table_unchanged(tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    carbon_ds.write_table(pa.table({"a": pa.array(range(10), pa.int64())}), path)
    t = CarbonTable.open(path)
    before = open(t.tablestatus_path).read()
    lock = t.update_lock("test")
    try:
        with pytest.raises(CarbonTableError, match="DELETE on table .* refused: another UPDATE/DELETE"):
            t.delete("a = 1")
        with pytest.raises(CarbonTableError, match="UPDATE on table .* refused"):
            t.update({"a": 5}, "a = 1")
    finally:
        lock.release()

    def crash(name):
        if name == "dml.before_status":
            raise RuntimeError("crash")

    with faults.inject(crash):
        with pytest.raises(RuntimeError):
            t.delete("a = 1")
        with pytest.raises(RuntimeError):
            t.update({"a": 5}, "a = 2")
    assert carbon_ds.read_table(path)["a"].to_pylist() == list(range(10))
    assert [e.status for e in t.load_details()] == ["Success", "Failure"]  # the update's reserved segment
    assert json.loads(open(t.tablestatus_path).read())[0] == json.loads(before)[0]
    # a delta file written but never named by tablestatus is ignored
    assert not glob.glob(os.path.join(path, "Fact", "Part0", "Segment_0", "*.deletedelta"))
    assert t.delete("a = 1") == 1 and t.count() == 9


def test_external_segment_refused(tmp_path):
    path = str(tmp_path / "t")
    carbon_ds.write_table(pa.table({"a": pa.array([1], pa.int64())}), path)
    t = CarbonTable.open(path)
    with t.edit_status("test") as edit:
        edit.entries.append(tablestatus.LoadDetail(name="1", status="Success", file_format="avro",
                                                   path=str(tmp_path / "ext")))
    # Parquet / ORC / CSV / JSON segments take deltas (tests/table/test_external_dml.py); other formats not
    with pytest.raises(CarbonTableError, match="DELETE is not allowed .*segments 1 \\(avro"):
        t.delete("a = 1")
    with pytest.raises(CarbonTableError, match="UPDATE is not allowed"):
        t.update({"a": 2}, "a = 1")


@pytest.mark.parametrize("value", ["abc", SqlExpr("'abc'"), SqlExpr("'12x'")])
@pytest.mark.parametrize("where", ["id = 1", "id = 99", None])
def test_update_value_of_the_wrong_type_is_refused_whether_rows_match_or_not(tmp_path, value, where):
    """A SET value the column's type cannot take (int64 from 'abc') is an error before any row is looked at:
    the same error when a row matches, when none does, and on an empty table (Spark refuses it at analysis)."""
    path = str(tmp_path / "t")
    carbon_ds.write_table(_rows([1, 2], random.Random(0)), path)
    t = CarbonTable.open(path)
    before = t.to_arrow()
    with pytest.raises(CarbonOptionError, match=r"SET id = .*'.*': cannot make a int64 value"):
        t.update({"id": value}, where)
    assert t.to_arrow().equals(before) and len(t.segments()) == 1
    empty = CarbonTable.create(tmp_path / "e", SCHEMA)
    with pytest.raises(CarbonOptionError, match="cannot make a int64 value"):
        empty.update({"id": value}, where)
    assert t.update({"id": 7}, "id = 99") == 0  # a value of the right type on no rows is fine


def test_parse_sql_forms():
    s = parse_row_dml("DELETE FROM db.t WHERE a = 1 AND s = 'x'")
    assert (s.table.db, s.table.name, s.where) == ("db", "t", "a = 1 AND s = 'x'")
    u = parse_row_dml("UPDATE t SET v = v * 2, s = 'a, b' WHERE id > 3")
    assert u.sets == (("v", "v * 2"), ("s", "'a, b'")) and u.where == "id > 3"
    u = parse_row_dml("update t set (v, s) = (1, 'z')")
    assert u.sets == (("v", "1"), ("s", "'z'")) and u.where is None
    from carbon_ds.ddl import statement_parser

    assert type(statement_parser.parse("DELETE FROM TABLE t WHERE SEGMENT.ID IN (0)")).__name__ == "DeleteSegments"
    assert isinstance(statement_parser.parse("DELETE FROM t WHERE a = 1"), DeleteRows)


def test_sql_delete_update_and_spark_read(spark):
    from carbon_ds.spark.statements import catalog

    run = carbon_ds.sql
    run(spark, "DROP TABLE IF EXISTS dmlt")
    run(spark, "CREATE TABLE dmlt (id BIGINT, v BIGINT) PARTITIONED BY (p INT) STORED AS carbondata")
    run(spark, "INSERT INTO dmlt VALUES (1, 10, 0), (2, 20, 0), (3, 30, 1), (4, 40, 1)")
    assert run(spark, "DELETE FROM dmlt WHERE v = 20").collect()[0][0] == 1
    assert run(spark, "UPDATE dmlt SET v = v + 1, p = 2 WHERE id = 3").collect()[0][0] == 1
    path = catalog.default_location(spark, "default", "dmlt")
    got = sorted(tuple(r) for r in spark.read.format("carbondata").load(path).select("id", "v", "p").collect())
    assert got == [(1, 10, 0), (3, 31, 2), (4, 40, 1)]
    assert CarbonTable.open(path).count() == 3


@pytest.mark.parametrize("statement", ["DELETE FROM dml_typo WHERE idd % 2 = 1",
                                       "UPDATE dml_typo SET v = 0 WHERE idd = 1",
                                       "UPDATE dml_typo SET v = vv + 1 WHERE id = 1"])
def test_sql_dml_with_a_mistyped_column_names_it(spark, statement, capfd):
    """Spark's analysis error would list the internal row-position columns (__carbon_file, ...) and PySpark
    would log it with the JVM stack first: the error is carbon-ds's, names the column and the table's columns,
    and nothing else is printed."""
    run = carbon_ds.sql
    run(spark, "DROP TABLE IF EXISTS dml_typo")
    run(spark, "CREATE TABLE dml_typo (id BIGINT, v BIGINT) STORED AS carbondata")
    run(spark, "INSERT INTO dml_typo VALUES (1, 10), (2, 20)")
    capfd.readouterr()
    with pytest.raises(CarbonOptionError) as e:
        run(spark, statement)
    typo = "vv" if "vv" in statement else "idd"
    assert f"column `{typo}` is not a column of table " in str(e.value) and "(columns: id, v)" in str(e.value)
    out = capfd.readouterr()
    assert "__carbon" not in str(e.value) + out.out + out.err and "\tat " not in out.out + out.err
    assert sorted(tuple(r) for r in run(spark, "SELECT id, v FROM dml_typo").collect()) == [(1, 10), (2, 20)]
    run(spark, "DROP TABLE dml_typo")


def test_sql_dml_typo_leaves_later_analysis_errors_intact(spark):
    """PySpark logs an analysis error to its "SQLQueryContextLogger" with extra keywords; when the DML check
    above is the first to ask for that logger, it must still be PySpark's class, or every later analysis
    error of the process becomes "Logger._log() got an unexpected keyword argument 'errorClass'"."""
    run = carbon_ds.sql
    run(spark, "DROP TABLE IF EXISTS dml_typo2")
    run(spark, "CREATE TABLE dml_typo2 (id BIGINT, v BIGINT) STORED AS carbondata")
    logging.Logger.manager.loggerDict.pop("SQLQueryContextLogger", None)  # as in a fresh process
    with pytest.raises(CarbonOptionError, match="idd"):
        run(spark, "DELETE FROM dml_typo2 WHERE idd = 1")
    with pytest.raises(Exception, match="UNRESOLVED_COLUMN"):
        spark.sql("SELECT no_such_column FROM dml_typo2").collect()
    run(spark, "DROP TABLE dml_typo2")
