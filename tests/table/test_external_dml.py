"""DELETE / UPDATE / MERGE on a table holding Parquet, ORC, CSV and JSON segments (ADD SEGMENT): deleted rows
of an external file are delete deltas keyed by that file, applied by every reader; the files never change.
The oracle is the same operations applied with pyarrow to the same rows."""

from __future__ import annotations

import glob
import hashlib
import json
import os

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest

import carbon_ds
import carbon_ds.duckdb as cdd
import carbon_ds.polars as cpl
from carbon_ds.errors import CarbonTableError
from carbon_ds.expressions.values import SqlExpr
from carbon_ds.table.meta.status import tablestatus
from carbon_ds.table.table import CarbonTable

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string())])


def _rows(lo: int, hi: int) -> pa.Table:
    ids = list(range(lo, hi))
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([(i * 7) % 50 for i in ids], pa.int64()),
                     "s": pa.array([["a", "b", None][i % 3] for i in ids], pa.string())}, schema=SCHEMA)


def _sorted(t: pa.Table) -> list[tuple]:
    return sorted(zip(*[t.column(n).to_pylist() for n in SCHEMA.names], strict=True))


def _fingerprint(root) -> dict[str, tuple]:
    out = {}
    for p in sorted(glob.glob(os.path.join(root, "**", "*"), recursive=True)):
        if os.path.isfile(p):
            st = os.stat(p)
            out[p] = (hashlib.sha256(open(p, "rb").read()).hexdigest(), st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture
def mixed(tmp_path):
    """A table: carbondata segment 0 (ids 0-99), Parquet 1 (100-299, four row groups), ORC 2 (300-449, small
    stripes), CSV 3 (450-549), JSON 4 (550-599); returns (table, the same rows in Arrow, external root)."""
    ext = tmp_path / "ext"
    for d in ("pq", "orc", "csv", "json"):
        (ext / d).mkdir(parents=True)
    pq.write_table(_rows(100, 200), ext / "pq" / "a.parquet", row_group_size=50)
    pq.write_table(_rows(200, 300), ext / "pq" / "b.parquet", row_group_size=50)
    po.write_table(_rows(300, 450), str(ext / "orc" / "a.orc"), stripe_size=1024)
    pcsv.write_csv(_rows(450, 550), ext / "csv" / "a.csv")
    with open(ext / "json" / "a.json", "w") as fh:
        for r in _rows(550, 600).to_pylist():
            fh.write(json.dumps(r) + "\n")
    path = str(tmp_path / "t")
    carbon_ds.write_table(_rows(0, 100), path)
    t = CarbonTable.open(path)
    for d, fmt in (("pq", "parquet"), ("orc", "orc"), ("csv", "csv"), ("json", "json")):
        t.add_segment(str(ext / d), format=fmt, options={"header": "true"} if fmt == "csv" else None)
    return CarbonTable.open(path), _rows(0, 600), str(ext)


def _every_reader(path: str) -> dict[str, pa.Table]:
    con = duckdb.connect()
    cdd.register(con, "t", path)

    return {
        "read_table": carbon_ds.read_table(path),
        "scan": carbon_ds.scan(path).to_arrow(),
        "scan_batches": pa.Table.from_batches(list(carbon_ds.scan(path, batch_size=17).to_batches())),
        "polars": cpl.scan_carbondata(path).collect().to_arrow(),
        "duckdb": con.sql("SELECT id, v, s FROM t").to_arrow_table(),
    }


def _check(path: str, oracle: pa.Table) -> None:
    want = _sorted(oracle)
    for name, got in _every_reader(path).items():
        assert _sorted(got.select(SCHEMA.names).cast(SCHEMA)) == want, name
    t = CarbonTable.open(path)
    assert t.count() == oracle.num_rows
    flt = "v >= 10 AND v < 30"
    mask = pc.and_(pc.greater_equal(oracle["v"], 10), pc.less(oracle["v"], 30))
    assert t.count(flt) == pc.sum(mask).as_py()
    assert _sorted(carbon_ds.read_table(path, filter=flt)) == _sorted(oracle.filter(mask))


def test_delete_update_merge_on_external_segments(mixed):
    t, oracle, ext = mixed
    before = _fingerprint(ext)
    # DELETE across every format
    assert t.delete("v < 8") == pc.sum(pc.less(oracle["v"], 8)).as_py()
    oracle = oracle.filter(pc.greater_equal(oracle["v"], 8))
    _check(t.uri, oracle)
    # UPDATE rows of the Parquet, ORC and CSV files
    where = "(id >= 120 AND id < 140) OR (id >= 300 AND id < 310) OR (id >= 540 AND id < 560)"
    sel = pc.or_(pc.or_(pc.and_(pc.greater_equal(oracle["id"], 120), pc.less(oracle["id"], 140)),
                        pc.and_(pc.greater_equal(oracle["id"], 300), pc.less(oracle["id"], 310))),
                 pc.and_(pc.greater_equal(oracle["id"], 540), pc.less(oracle["id"], 560)))
    n = t.update({"s": "u", "v": SqlExpr("v + 1000")}, where)
    assert n == pc.sum(sel).as_py() > 0
    upd = oracle.filter(sel)
    upd = upd.set_column(1, "v", pc.add(upd["v"], 1000)).set_column(2, "s", pa.array(["u"] * upd.num_rows))
    oracle = pa.concat_tables([oracle.filter(pc.invert(sel)), upd])
    _check(t.uri, oracle)
    # a second DELETE on the same files merges their deltas (horizontal compaction)
    assert t.delete("id >= 250 AND id < 260") == pc.sum(
        pc.and_(pc.greater_equal(oracle["id"], 250), pc.less(oracle["id"], 260))).as_py()
    oracle = oracle.filter(pc.invert(pc.and_(pc.greater_equal(oracle["id"], 250), pc.less(oracle["id"], 260))))
    # MERGE: update rows of every format, delete some, insert new ones
    src = pa.table({"id": pa.array([5, 150, 151, 320, 470, 580, 9000], pa.int64()),
                    "v": pa.array([-1, -2, -3, -4, -5, -6, -7], pa.int64()),
                    "s": pa.array(["m", "m", "del", "m", "m", "m", "new"])})
    m = (t.merge(src, on="id").when_matched_delete("source.s = 'del'").when_matched_update_all()
         .when_not_matched_insert_all().execute())
    present = set(oracle["id"].to_pylist())
    hit = [i for i in src["id"].to_pylist() if i in present]
    assert (m.rows_updated + m.rows_deleted, m.rows_inserted) == (len(hit), 7 - len(hit))
    keep = oracle.filter(pc.invert(pc.is_in(oracle["id"], src["id"])))
    add = src.filter(pc.invert(pc.and_(pc.equal(src["s"], "del"), pc.is_in(src["id"], pa.array(hit, pa.int64())))))
    add = add.filter(pc.or_(pc.is_in(add["id"], pa.array(hit, pa.int64())), pc.invert(pc.is_in(add["id"], oracle["id"]))))
    oracle = pa.concat_tables([keep, add.cast(SCHEMA)])
    _check(t.uri, oracle)
    # the external files were never written, nothing was added next to them
    assert _fingerprint(ext) == before
    pattern = os.path.join(t.uri, "Metadata", "external_deltas", "Segment_*", "*.deletedelta")
    assert len(glob.glob(pattern)) > 5  # one per external file and DML, superseded ones included
    # CLEAN FILES drops superseded delta files, keeps the committed ones; compaction merges carbondata only
    t.clean_files(force=True)
    assert len(glob.glob(pattern)) == 5  # each of the five external files keeps its one merged delta
    _check(t.uri, oracle)
    t.compact("major")
    t = CarbonTable.open(t.uri)
    t.clean_files(force=True)
    _check(t.uri, oracle)
    assert _fingerprint(ext) == before


def test_changed_external_file_is_detected(mixed):
    t, oracle, ext = mixed
    assert t.delete("id = 101") == 1
    pq.write_table(_rows(100, 201), os.path.join(ext, "pq", "a.parquet"), row_group_size=50)  # changed
    with pytest.raises(CarbonTableError, match="a.parquet of segment 1 changed since rows of it were deleted"):
        carbon_ds.read_table(t.uri)
    with pytest.raises(CarbonTableError, match="changed since"):
        t.delete("id = 102")
    # other formats' files are unaffected, and deleting the segment makes the table readable again
    t.delete_segments(["1"])
    assert carbon_ds.read_table(t.uri).num_rows == 600 - 200
    # the same folder added again is a new segment: the old segment's deltas do not apply to it
    pq.write_table(_rows(100, 200), os.path.join(ext, "pq", "a.parquet"), row_group_size=50)
    assert t.add_segment(os.path.join(ext, "pq"), format="parquet") == ["5"]
    assert carbon_ds.read_table(t.uri).num_rows == 600


def test_unsupported_external_format_still_refused(tmp_path):
    path = str(tmp_path / "t")
    carbon_ds.write_table(pa.table({"a": pa.array([1], pa.int64())}), path)
    t = CarbonTable.open(path)
    with t.edit_status("test") as edit:
        edit.entries.append(tablestatus.LoadDetail(name="1", status="Success", file_format="avro",
                                                   path=str(tmp_path / "ext")))
    with pytest.raises(CarbonTableError, match="MERGE is not allowed .*segments 1 \\(avro"):
        t.merge(pa.table({"a": pa.array([1], pa.int64())}), on="a").when_matched_delete().execute()


def test_spark_reads_and_sql_dml_on_external_segments(mixed, spark):
    t, oracle, ext = mixed
    before = _fingerprint(ext)
    assert t.delete("v < 8") > 0
    oracle = oracle.filter(pc.greater_equal(oracle["v"], 8))
    df = spark.read.format("carbondata").load(t.uri)
    assert _sorted(pa.Table.from_pylist([r.asDict() for r in df.collect()], SCHEMA)) == _sorted(oracle)
    native = carbon_ds.read(spark, t.uri, native=True)
    assert _sorted(pa.Table.from_pylist([r.asDict() for r in native.collect()], SCHEMA)) == _sorted(oracle)
    # DELETE / MERGE through Spark SQL on the same table
    carbon_ds.sql(spark, "DROP TABLE IF EXISTS extdml")
    carbon_ds.sql(spark, f"CREATE TABLE extdml (id BIGINT, v BIGINT, s STRING) STORED AS carbondata LOCATION '{t.uri}'")
    gone = pc.and_(pc.greater_equal(oracle["id"], 140), pc.less(oracle["id"], 145))
    assert (carbon_ds.sql(spark, "DELETE FROM extdml WHERE id >= 140 AND id < 145").collect()[0][0] ==
        pc.sum(gone).as_py() > 0)
    oracle = oracle.filter(pc.invert(gone))
    (spark.createDataFrame([(310, 1, "sq"), (9001, 2, "new")], "id bigint, v bigint, s string")
        .createOrReplaceTempView("extsrc"))
    assert 310 in oracle["id"].to_pylist()
    out = carbon_ds.sql(spark, "MERGE INTO extdml t USING extsrc s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * "
                               "WHEN NOT MATCHED THEN INSERT *").collect()[0]
    assert (out.num_updated_rows, out.num_inserted_rows) == (1, 1)
    oracle = pa.concat_tables([oracle.filter(pc.not_equal(oracle["id"], 310)),
                               pa.table({"id": [310, 9001], "v": [1, 2], "s": ["sq", "new"]}, schema=SCHEMA)])
    _check(t.uri, oracle)
    got = spark.read.format("carbondata").load(t.uri).collect()
    assert _sorted(pa.Table.from_pylist([r.asDict() for r in got], SCHEMA)) == _sorted(oracle)
    # the external Parquet and ORC segments' rows rewritten into carbondata, only when asked
    merged = carbon_ds.sql(spark, "ALTER TABLE extdml COMPACT 'CUSTOM' WHERE SEGMENT.ID IN (1, 2) "
                                  "OPTIONS('include_external'='true')").collect()
    assert [(r[0], r[1]) for r in merged] == [("1.1", "1,2")]
    _check(t.uri, oracle)
    assert _fingerprint(ext) == before


def test_compaction_rewrites_external_segments_only_when_asked(mixed):
    t, oracle, ext = mixed
    before = _fingerprint(ext)
    assert t.delete("v < 8") > 0
    oracle = oracle.filter(pc.greater_equal(oracle["v"], 8))
    with pytest.raises(CarbonTableError, match="format parquet: custom compaction does not support other format "
                                               "segments; include_external=True"):
        t.compact("custom", segments=["0", "1"])
    assert [m.segment for m in t.compact("major")] == []  # external segments never picked by MINOR / MAJOR
    merged = t.compact("custom", segments=["0", "1", "3"], include_external=True)
    in_merged = pc.or_(pc.less(oracle["id"], 300),
                       pc.and_(pc.greater_equal(oracle["id"], 450), pc.less(oracle["id"], 550)))
    assert merged[0].sources == ["0", "1", "3"] and merged[0].rows == pc.sum(in_merged).as_py()
    t = CarbonTable.open(t.uri)
    status = {s.id: s.status for s in t.segments()}
    assert status["1"] == status["3"] == "Compacted" and status["2"] == status["4"] == "Success"
    _check(t.uri, oracle)
    t.clean_files(force=True)
    _check(t.uri, oracle)
    assert _fingerprint(ext) == before  # rewritten into carbondata, the source files kept as they were
