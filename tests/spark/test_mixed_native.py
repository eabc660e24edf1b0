"""Mixed tables (carbondata segments plus added Parquet / ORC / CSV / JSON folders) read through Spark's own
file scans on every route (carbon_ds.read, carbon_ds.sql, carbon_ds.optimize, and with the Spark extension
plain spark.sql and DataFrame calls over load()), checked against Spark reading the same rows from one
Parquet copy written by pyarrow; counts of Parquet/ORC segments from the row counts ADD SEGMENT recorded."""

from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest
from spark_confs import confs

import carbon_ds
from carbon_ds.readers import external
from carbon_ds.spark.bridge.extension import extension_active, jar_path
from carbon_ds.spark.bridge.native_read import CONF_NATIVE
from carbon_ds.spark.local import CONF_LOCAL_BYTES
from carbon_ds.table import CarbonTable
from carbon_ds.table.read import pruning

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.float64()), ("s", pa.string()), ("d", pa.date32()),
                    ("k", pa.int32())])


def _rows(lo: int, hi: int) -> pa.Table:
    ids = list(range(lo, hi))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "v": pa.array([None if i % 13 == 0 else i * 0.25 for i in ids], pa.float64()),
        "s": pa.array([None if i % 17 == 0 else "abcde"[i % 5] for i in ids], pa.string()),
        "d": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=i % 40) for i in ids], pa.date32()),
        "k": pa.array([i % 4 for i in ids], pa.int32()),
    }, schema=SCHEMA)


@pytest.fixture(scope="module")
def mixed(spark, tmp_path_factory):
    """(table path, Parquet oracle path): carbondata rows 0-199, a Parquet folder of two files (small row
    groups) 200-599, ORC 600-799, CSV 800-899, JSON 900-999."""
    root = tmp_path_factory.mktemp("mixed")
    path = str(root / "t")
    carbon_ds.write_table(_rows(0, 200), path)
    (root / "pq").mkdir()
    pq.write_table(_rows(200, 400), root / "pq" / "a.parquet", row_group_size=50)
    pq.write_table(_rows(400, 600), root / "pq" / "b.parquet", row_group_size=50)
    (root / "orc").mkdir()
    po.write_table(_rows(600, 800), root / "orc" / "a.orc", stripe_size=4096)
    (root / "csv").mkdir()
    pcsv.write_csv(_rows(800, 900), root / "csv" / "a.csv")
    (root / "json").mkdir()
    with open(root / "json" / "a.json", "w") as fh:
        for r in _rows(900, 1000).to_pylist():
            fh.write(json.dumps({**r, "d": r["d"].isoformat()}) + "\n")
    t = CarbonTable.open(path)
    for fmt in ("parquet", "orc", "csv", "json"):
        t.add_segment(str(root / ("pq" if fmt == "parquet" else fmt)), format=fmt)
    pq.write_table(_rows(0, 1000), root / "oracle.parquet")
    spark.read.format("carbondata").load(path).createOrReplaceTempView("mixed_t")
    spark.read.parquet(str(root / "oracle.parquet")).createOrReplaceTempView("mixed_oracle")
    with confs(spark, **{CONF_LOCAL_BYTES: "0"}):  # no driver-side local relations: Spark's scans run
        yield path, str(root / "oracle.parquet")


def _routes(spark, query: str) -> list:
    """The query through carbon_ds.sql and, where the session has the extension (jvm/src NativeUnion),
    through plain spark.sql."""
    frames = [carbon_ds.sql(spark, query)]
    if extension_active(spark):
        frames.append(spark.sql(query))
    elif os.environ.get("CI") and jar_path() is None:
        pytest.fail("the Spark extension jar was not built (scripts/setup.sh runs scripts/build-jvm.sh)")
    return frames


def _extension(spark) -> None:
    if not extension_active(spark):
        if os.environ.get("CI"):
            pytest.fail("the Spark extension jar was not built (scripts/setup.sh runs scripts/build-jvm.sh)")
        pytest.skip("the Spark extension jar is not built (needs a JDK: scripts/build-jvm.sh)")


def _same(df, oracle) -> None:
    got, want = [tuple(r) for r in df.collect()], [tuple(r) for r in oracle.collect()]
    key = lambda r: tuple((x is None, x) for x in r)  # noqa: E731 - None sorts first
    assert sorted(got, key=key) == sorted(want, key=key)
    assert got, "an empty answer proves nothing"


QUERIES = [
    "SELECT * FROM {t}",
    "SELECT id, s FROM {t} WHERE id BETWEEN 150 AND 950 AND s = 'b'",
    "SELECT s, count(*), sum(v), min(d), max(id) FROM {t} GROUP BY s",
    "SELECT count(*) FROM {t}",
    "SELECT count(*) FROM {t} WHERE d >= DATE '2020-01-20' AND d < DATE '2020-02-01'",
    "SELECT k, avg(v) FROM {t} WHERE v > 100 OR s IS NULL GROUP BY k",
    "SELECT a.id, b.s FROM {t} a JOIN {t} b ON a.id = b.id + 1 WHERE a.id < 30 OR a.id > 990",
]


@pytest.mark.parametrize("query", QUERIES)
def test_sql_and_optimize_equal_parquet(spark, mixed, query):
    oracle = spark.sql(query.format(t="mixed_oracle"))
    for df in _routes(spark, query.format(t="mixed_t")):
        _same(df, oracle)
    _same(carbon_ds.optimize(spark.sql(query.format(t="mixed_t"))), oracle)
    with confs(spark, **{CONF_NATIVE: "false"}):  # the data source path stays right too
        for df in _routes(spark, query.format(t="mixed_t")):
            _same(df, oracle)
    # a session without the extension's rules: carbon_ds.sql and optimize give Spark's own answer
    with confs(spark, **{"carbon_ds.extension.enabled": "false"}):
        _same(carbon_ds.sql(spark, query.format(t="mixed_t")), oracle)
        _same(carbon_ds.optimize(spark.sql(query.format(t="mixed_t"))), oracle)


@pytest.mark.parametrize("columns,filter", [(None, None), (["s", "id"], "id >= 180 AND id < 920 AND k = 2"),
                                            (["d"], "s = 'e'"), ([], None)])
def test_read_equals_parquet(spark, mixed, columns, filter):
    path, oracle_path = mixed
    df = carbon_ds.read(spark, path, columns=columns, filter=filter)
    oracle = spark.read.parquet(oracle_path)
    if filter:
        oracle = oracle.where(filter)
    if columns is not None:
        oracle = oracle.select(*columns)
    assert df.columns == oracle.columns
    if columns == []:
        assert df.count() == oracle.count() == 1000
    else:
        _same(df, oracle)
    # the pure-Python route reads the same rows
    assert carbon_ds.read_table(path, columns=columns or None, filter=filter).num_rows == oracle.count()


def _scans(df) -> list[str]:
    """The executed plan's file scan nodes, as Spark prints them."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    return [line[line.index("FileScan"):] for line in plan.splitlines() if "FileScan" in line]


def test_external_segments_are_spark_file_scans_with_pushed_filters(spark, mixed):
    df = carbon_ds.sql(spark, "SELECT id, v FROM mixed_t WHERE id >= 500 AND id < 520")
    scans = _scans(df)
    assert {s.split()[1] for s in scans} == {"parquet", "orc", "csv", "json"}
    parquet = next(s for s in scans if s.split()[1] == "parquet")
    assert "GreaterThanOrEqual(id,500)" in parquet and "LessThan(id,520)" in parquet
    assert "ReadSchema: struct<id:bigint,v:double>" in parquet  # the query's columns only
    assert len(df.collect()) == 20
    # carbon_ds.read hands its filter to the same scans
    scans = _scans(carbon_ds.read(spark, mixed[0], columns=["s"], filter="id = 777"))
    orc = next(s for s in scans if s.split()[1] == "orc")
    assert "EqualTo(id,777)" in orc and "ReadSchema: struct<id:bigint,s:string>" in orc
    # turned off: no Spark file scan, the data source reads every segment
    with confs(spark, **{CONF_NATIVE: "false"}):
        assert _scans(carbon_ds.sql(spark, "SELECT id FROM mixed_t WHERE id > 5")) == []


def test_plain_spark_sql_and_dataframes_scan_external_segments_with_spark(spark, mixed):
    """With the extension, plain spark.sql and DataFrame calls over load() get the same union: Spark's
    file scans with the query's columns and pushed filters, the carbondata part pruned by the extension."""
    _extension(spark)
    path, oracle_path = mixed
    frames = [spark.sql("SELECT id, v FROM mixed_t WHERE id >= 190 AND id < 210"),
              spark.read.format("carbondata").load(path).where("id >= 190 AND id < 210").select("id", "v")]
    for df in frames:
        scans = _scans(df)
        assert {s.split()[1] for s in scans} == {"parquet", "orc", "csv", "json"}
        parquet = next(s for s in scans if s.split()[1] == "parquet")
        assert "GreaterThanOrEqual(id,190)" in parquet and "LessThan(id,210)" in parquet
        assert "ReadSchema: struct<id:bigint,v:double>" in parquet
        plan = df._jdf.queryExecution().executedPlan().toString()
        assert "BatchScan carbondata[id#" in plan and ", s#" not in plan  # the carbondata part: id, v only
        assert sorted(r.id for r in df.collect()) == list(range(190, 210))
    # rows only in the external files: the carbondata part's planning finds no blocklet, so it is no read
    df = spark.sql("SELECT id, v FROM mixed_t WHERE id >= 500 AND id < 520")
    assert "BatchScan carbondata" not in df._jdf.queryExecution().executedPlan().toString()
    assert sorted(r.id for r in df.collect()) == list(range(500, 520))
    # a DataFrame reused by two queries plans each afresh
    df = spark.read.format("carbondata").load(path)
    assert df.where("id < 250").count() == 250 and df.where("id >= 900").count() == 100
    with confs(spark, **{CONF_NATIVE: "false"}):
        assert _scans(spark.sql("SELECT id FROM mixed_t WHERE id > 5")) == []
        assert spark.sql("SELECT count(*) FROM mixed_t WHERE id > 5").collect()[0][0] == 994


def test_join_statistics_include_external_files(spark, mixed):
    df = carbon_ds.sql(spark, "SELECT id, s FROM mixed_t WHERE id > 10")
    size = int(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes())
    assert 0 < size < 2**62  # Spark's default for an unsized relation is Long.MaxValue
    # the broadcast threshold applies: a small mixed side is broadcast
    joined = carbon_ds.sql(spark, "SELECT count(*) FROM mixed_oracle o JOIN mixed_t m ON o.id = m.id")
    assert "BroadcastHashJoin" in joined._jdf.queryExecution().executedPlan().toString()
    assert joined.collect()[0][0] == 1000


def test_hive_partitioned_external_folders(spark, tmp_path):
    rows = _rows(0, 300)
    days = pa.array([i % 3 for i in range(300)], pa.int32())
    schema = pa.schema([*SCHEMA, ("day", pa.int32())])
    t = CarbonTable.create(str(tmp_path / "t"), schema, partition_by=["day"])
    for day in range(3):
        folder = tmp_path / "hive" / f"day={day}"
        folder.mkdir(parents=True)
        part = rows.filter(pc.equal(days, day))
        pq.write_table(part, folder / "p.parquet", row_group_size=25)
    t.add_segment(str(tmp_path / "hive"), format="parquet", partition="day:int")
    pq.write_table(rows.append_column("day", days), tmp_path / "oracle.parquet")
    spark.read.format("carbondata").load(t.path).createOrReplaceTempView("hive_t")
    spark.read.parquet(str(tmp_path / "oracle.parquet")).createOrReplaceTempView("hive_oracle")
    with confs(spark, **{CONF_LOCAL_BYTES: "0"}):
        for q in ("SELECT day, count(*), sum(id) FROM {t} GROUP BY day",
                  "SELECT id, s, day FROM {t} WHERE day = 1 AND id < 100"):
            for df in _routes(spark, q.format(t="hive_t")):
                _same(df, spark.sql(q.format(t="hive_oracle")))
        for df in _routes(spark, "SELECT id FROM hive_t WHERE day = 2"):
            scans = _scans(df)  # a filter on the partition value skips the other folders
            assert len(scans) == 1
            files = df.inputFiles()
            assert files and all("/day=2/" in f for f in files)
            assert sorted(r.id for r in df.collect()) == [i for i in range(300) if i % 3 == 2]


def test_renamed_added_and_widened_columns(spark, tmp_path):
    t = CarbonTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int32()), ("name", pa.string())]))
    for fmt, write in (("parquet", pq.write_table), ("orc", po.write_table)):
        (tmp_path / fmt).mkdir()
        write(pa.table({"id": pa.array([10, 11], pa.int32()), "name": ["x", "y"]}), tmp_path / fmt / "a")
        t.add_segment(str(tmp_path / fmt), format=fmt)
    carbon_ds.write_table(pa.table({"id": pa.array([1], pa.int32()), "name": ["a"]}), t.path)
    with t.update_schema() as u:
        u.rename_column("name", "nm").add_column("q", pa.int64(), default=5).widen_column("id", pa.int64())
    want = pa.table({"id": pa.array([1, 10, 11, 10, 11], pa.int64()), "nm": ["a", "x", "y", "x", "y"],
                     "q": pa.array([5] * 5, pa.int64())})
    pq.write_table(want, tmp_path / "oracle.parquet")
    spark.read.format("carbondata").load(t.path).createOrReplaceTempView("evo_mixed")
    spark.read.parquet(str(tmp_path / "oracle.parquet")).createOrReplaceTempView("evo_oracle")
    with confs(spark, **{CONF_LOCAL_BYTES: "0"}):
        for q in ("SELECT * FROM {t}", "SELECT nm, q FROM {t} WHERE id > 5 AND nm <> 'y'",
                  "SELECT q, count(*) FROM {t} GROUP BY q"):
            for df in _routes(spark, q.format(t="evo_mixed")):
                _same(df, spark.sql(q.format(t="evo_oracle")))
        _same(carbon_ds.read(spark, t.path, columns=["nm", "q"], filter="id >= 11"),
              spark.sql("SELECT nm, q FROM evo_oracle WHERE id >= 11"))
        for df in _routes(spark, "SELECT nm FROM evo_mixed"):
            assert _scans(df)


def _carbon_and_parquet(spark, tmp_path, view: str) -> tuple[str, CarbonTable]:
    """A table of rows 0-9 in carbondata and 10-19 in an added Parquet folder, as the view ``view``."""
    path = str(tmp_path / "t")
    carbon_ds.write_table(_rows(0, 10), path)
    (tmp_path / "a").mkdir()
    pq.write_table(_rows(10, 20), tmp_path / "a" / "a.parquet")
    t = CarbonTable.open(path)
    t.add_segment(str(tmp_path / "a"), format="parquet")
    spark.read.format("carbondata").load(path).createOrReplaceTempView(view)
    return path, t


def test_a_commit_after_planning_is_not_seen(spark, tmp_path):
    path, t = _carbon_and_parquet(spark, tmp_path, "snap_t")
    with confs(spark, **{CONF_LOCAL_BYTES: "0"}):
        planned = [carbon_ds.sql(spark, "SELECT id FROM snap_t"), carbon_ds.read(spark, path, columns=["id"])]
        if extension_active(spark):
            plain = spark.sql("SELECT id FROM snap_t")
            plain._jdf.queryExecution().executedPlan()  # planned (files listed) before the commits below
            planned.append(plain)
        (tmp_path / "b").mkdir()
        pq.write_table(_rows(20, 30), tmp_path / "b" / "b.parquet")
        t.add_segment(str(tmp_path / "b"), format="parquet")
        carbon_ds.write_table(_rows(30, 40), path, mode="append")
        for df in planned:
            assert sorted(r.id for r in df.collect()) == list(range(20))
        for df in _routes(spark, "SELECT count(*) FROM snap_t"):
            assert df.collect()[0][0] == 40


# ------------------------------------------------------------------------------------------ counts
def test_count_from_recorded_footer_rows(tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    carbon_ds.write_table(_rows(0, 10), path)
    (tmp_path / "pq").mkdir()
    pq.write_table(_rows(10, 60), tmp_path / "pq" / "a.parquet", row_group_size=7)
    pq.write_table(_rows(60, 100), tmp_path / "pq" / "b.parquet")
    (tmp_path / "orc").mkdir()
    po.write_table(_rows(100, 130), tmp_path / "orc" / "a.orc")
    (tmp_path / "csv").mkdir()
    pcsv.write_csv(_rows(130, 135), tmp_path / "csv" / "a.csv")
    t = CarbonTable.open(path)
    for fmt, folder in (("parquet", "pq"), ("orc", "orc"), ("csv", "csv")):
        t.add_segment(str(tmp_path / folder), format=fmt)

    opened: list[str] = []
    real = external.open_reader

    def spy(storage, p, fmt, *args, **kwargs):
        opened.append(fmt)
        return real(storage, p, fmt, *args, **kwargs)

    monkeypatch.setattr(pruning, "open_reader", spy)
    assert CarbonTable.open(path).count() == 135
    assert opened == []  # CSV is never opened to count either: it is read by the scan below
    # a filtered count plans (and opens) as before
    assert t.count("id >= 50") == 85 and opened

    # a rewritten file (other size) is counted from its footer again
    opened.clear()
    pq.write_table(_rows(60, 70), tmp_path / "pq" / "b.parquet")
    assert CarbonTable.open(path).count() == 105 and opened == ["parquet"]
    # same size, new modification time: counted again too
    opened.clear()
    st = os.stat(tmp_path / "orc" / "a.orc")
    os.utime(tmp_path / "orc" / "a.orc", ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert CarbonTable.open(path).count() == 105 and opened == ["parquet", "orc"]


def test_deleted_rows_and_deleted_segments_stay_deleted(spark, tmp_path):
    path = str(tmp_path / "t")
    carbon_ds.write_table(_rows(0, 20), path)
    t = CarbonTable.open(path)
    assert t.delete("id < 5") == 5  # delete deltas on the carbondata segment, before any external one
    for name, lo in (("a", 20), ("b", 30)):
        (tmp_path / name).mkdir()
        pq.write_table(_rows(lo, lo + 10), tmp_path / name / "x.parquet")
        t.add_segment(str(tmp_path / name), format="parquet")
    t.delete_segments(["2"])  # the second Parquet folder
    spark.read.format("carbondata").load(path).createOrReplaceTempView("del_t")
    want = list(range(5, 30))
    with confs(spark, **{CONF_LOCAL_BYTES: "0"}):
        for df in _routes(spark, "SELECT id FROM del_t"):
            assert sorted(r.id for r in df.collect()) == want
        assert sorted(r.id for r in carbon_ds.read(spark, path, columns=["id"]).collect()) == want
        for df in _routes(spark, "SELECT count(*) FROM del_t"):
            assert df.collect()[0][0] == len(want)
    assert CarbonTable.open(path).count() == len(want)


def test_zone_less_parquet_timestamps_read_as_utc(spark, tmp_path):
    path = str(tmp_path / "t")
    utc = pa.timestamp("us", "UTC")
    stamps = [dt.datetime(2021, 11, 23, 8, 30), dt.datetime(2000, 1, 1)]
    carbon_ds.write_table(pa.table({"id": pa.array([1], pa.int64()), "ts": pa.array([stamps[0]], utc)}), path)
    (tmp_path / "pq").mkdir()
    pq.write_table(pa.table({"id": pa.array([2, 3], pa.int64()), "ts": pa.array(stamps, pa.timestamp("us"))}),
                   tmp_path / "pq" / "a.parquet")  # naive: isAdjustedToUTC false
    CarbonTable.open(path).add_segment(str(tmp_path / "pq"), format="parquet")
    want = carbon_ds.read_table(path).sort_by("id").column("ts").to_pylist()
    with confs(spark, **{CONF_LOCAL_BYTES: "0", "spark.sql.session.timeZone": "America/New_York"}):
        frames = [carbon_ds.read(spark, path), carbon_ds.read(spark, path, native=False)]
        if extension_active(spark):
            frames.append(spark.read.format("carbondata").load(path))
        for df in frames:
            got = [r.ts for r in df.selectExpr("id", "CAST(unix_micros(ts) AS BIGINT) AS ts").orderBy("id").collect()]
            assert got == [int(w.timestamp() * 1_000_000) for w in want]


def test_negative_zero_in_external_segments_equals_zero(spark, tmp_path):
    """Spark SQL says -0.0 = 0.0; Parquet statistics and dictionaries order them, so a filter Spark pushed
    into the Parquet scan of a row group holding only -0.0 would drop it. Double columns are not pushed."""
    path = str(tmp_path / "t")
    carbon_ds.write_table(pa.table({"id": pa.array([1], pa.int64()), "v": pa.array([1.5])}), path)
    (tmp_path / "pq").mkdir()
    pq.write_table(pa.table({"id": pa.array([2, 3, 4], pa.int64()), "v": pa.array([-0.0, -0.0, 2.0])}),
                   tmp_path / "pq" / "a.parquet", row_group_size=2)
    CarbonTable.open(path).add_segment(str(tmp_path / "pq"), format="parquet")
    spark.read.format("carbondata").load(path).createOrReplaceTempView("negzero_mixed")
    with confs(spark, **{CONF_LOCAL_BYTES: "0"}):
        for where in ("v = 0.0", "v >= 0.0 AND v < 1.0", "v IN (0.0, 7.0)"):
            for df in _routes(spark, f"SELECT id FROM negzero_mixed WHERE {where}"):
                assert sorted(r.id for r in df.collect()) == [2, 3], where
        assert sorted(r.id for r in carbon_ds.read(spark, path, filter="v = 0.0", native=True).collect()) == [2, 3]


def test_a_kept_union_plan_answers_only_while_the_table_and_its_files_are_unchanged(spark, tmp_path):
    """The extension keeps the Python side's union plan of a mixed table for the next query (jvm/src
    PlanCache): a second query of an unchanged table asks Python once instead of twice, and every change
    (a DELETE, an external file rewritten in place, a dropped segment, a new segment) is seen at once."""
    _extension(spark)
    hits = spark._jvm.carbonds.spark.PlanCache.hits
    _path, t = _carbon_and_parquet(spark, tmp_path, "kept_t")

    def ids() -> list[int]:
        return sorted(r.id for r in spark.sql("SELECT id FROM kept_t WHERE id >= 0").collect())

    with confs(spark, **{CONF_LOCAL_BYTES: "0"}):
        assert {s.split()[1] for s in _scans(spark.sql("SELECT id FROM kept_t"))} == {"parquet"}
        assert ids() == list(range(20))
        before = hits()
        assert ids() == list(range(20))
        assert hits() == before + 1  # unchanged: the kept plan answered
        t.delete("id = 15")  # a commit: new tablestatus (that segment is then the data source's to read)
        assert ids() == [i for i in range(20) if i != 15]
        (tmp_path / "b").mkdir()
        pq.write_table(_rows(30, 40), tmp_path / "b" / "y.parquet")
        t.add_segment(str(tmp_path / "b"), format="parquet")
        assert ids() == [i for i in range(20) if i != 15] + list(range(30, 40))
        before = hits()
        pq.write_table(_rows(30, 45), tmp_path / "b" / "y.parquet")  # rewritten in place: another size
        assert ids() == [i for i in range(20) if i != 15] + list(range(30, 45))
        assert hits() == before  # the size check sent it to Python
        t.delete_segments(["2"])  # the second Parquet folder
        assert ids() == [i for i in range(20) if i != 15]


def test_a_self_join_of_a_mixed_table_with_a_kept_plan(spark, tmp_path):
    """Both occurrences of a mixed table in one query read the external files through the Spark relation
    kept with the plan (jvm/src PlanCache), on the first query and on the next; the oracle is the same join
    computed with pyarrow from the rows written."""
    _extension(spark)
    _carbon_and_parquet(spark, tmp_path, "kept_join")
    rows = pa.concat_tables([_rows(0, 10), _rows(10, 20)])
    joined = rows.join(rows.select(["id", "v"]).append_column("next", pc.add(rows["id"], 1)),
                       keys="id", right_keys="next", join_type="inner", right_suffix="_b")
    want = sorted(zip(joined["id"].to_pylist(), joined["v_b"].to_pylist(), strict=True))
    text = "SELECT a.id, b.v FROM kept_join a JOIN kept_join b ON a.id = b.id + 1"
    hits = spark._jvm.carbonds.spark.PlanCache.hits
    with confs(spark, **{CONF_LOCAL_BYTES: "0"}):
        for _ in range(2):
            assert sorted((r.id, r.v) for r in spark.sql(text).collect()) == want and len(want) == 19
        before = hits()
        assert sorted((r.id, r.v) for r in spark.sql(text).collect()) == want
        assert hits() >= before + 1  # the kept plan (and its relation) answered


def test_queries_are_planned_by_the_extension_in_one_call(spark, tmp_path):
    """With the extension's rules on, carbon_ds.sql hands a query to them in one JVM call (jvm/src
    PlannedQueries), planned at once, mixed tables or not; a statement without carbondata relations, a
    write, an error or the rules switched off comes back as null and goes to spark.sql as written, and every
    route still answers what pyarrow computes from the rows written."""
    _extension(spark)
    _carbon_and_parquet(spark, tmp_path, "once_mixed")
    plain = str(tmp_path / "plain")
    carbon_ds.write_table(_rows(5, 15), plain)
    spark.read.format("carbondata").load(plain).createOrReplaceTempView("once_plain")
    planned = spark._jvm.carbonds.spark.PlannedQueries.planned
    session = spark._jsparkSession
    with confs(spark, **{CONF_LOCAL_BYTES: "0"}):
        text = "SELECT id, s FROM once_mixed WHERE id > 3 AND id IN (SELECT id FROM once_mixed WHERE k = 1)"
        df = planned(session, text)
        assert df is not None
        # planned already: the plan has Spark's Parquet scan of the added folder
        assert "FileScan parquet" in df.queryExecution().executedPlan().toString()
        want = sorted((i, "abcde"[i % 5] if i % 17 else None) for i in range(4, 20) if i % 4 == 1)
        assert sorted(tuple(r) for r in carbon_ds.sql(spark, text).collect()) == want
        joined = "SELECT a.id FROM once_mixed a JOIN once_plain b ON a.id = b.id"
        assert planned(session, joined) is not None and planned(session, "SELECT count(*) FROM once_plain") is not None
        assert sorted(r.id for r in carbon_ds.sql(spark, joined).collect()) == list(range(5, 15))
        for other in ("SELECT 1",
                      "SELECT no_such_column FROM once_mixed",
                      f"INSERT OVERWRITE DIRECTORY '{tmp_path / 'out'}' USING parquet SELECT id FROM once_mixed"):
            assert planned(session, other) is None, other
        assert not (tmp_path / "out").exists()  # the write was analysed, never run
        with confs(spark, **{"carbon_ds.extension.enabled": "false"}):
            assert planned(session, "SELECT id FROM once_mixed") is None
        assert sorted(r.id for r in carbon_ds.sql(spark, "SELECT id FROM once_mixed").collect()) == list(range(20))


def _typed(lo: int, hi: int) -> pa.Table:
    ids = list(range(lo, hi))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "x": pa.array([[float("nan"), -0.0, 0.0, None, 2.5][i % 5] for i in ids], pa.float64()),
        "dec": pa.array([None if i % 11 == 0 else Decimal(i * 7 - 500).scaleb(-2) for i in ids], pa.decimal128(10, 2)),
        "big": pa.array([Decimal(i * 10**20 + 3).scaleb(-6) for i in ids], pa.decimal128(38, 6)),
        "s": pa.array([None if i % 17 == 0 else "ünï"[: i % 4] for i in ids], pa.string()),
        "flag": pa.array([None if i % 9 == 0 else i % 2 == 0 for i in ids], pa.bool_()),
        "d": pa.array([dt.date(1969, 12, 1) + dt.timedelta(days=i % 90) for i in ids], pa.date32()),
        # CarbonData keeps timestamps to the millisecond
        "ts": pa.array([dt.datetime(2021, 3, 28, 0, 30, tzinfo=dt.UTC) + dt.timedelta(minutes=37 * i) for i in ids],
                       pa.timestamp("us", tz="UTC")),
        "arr": pa.array([None if i % 13 == 0 else list(range(i % 4)) for i in ids], pa.list_(pa.int32())),
    })


def _carbon_scans(df) -> int:
    """The carbondata reads of ``df`` that run as tasks: the data source's scans and carbon_ds.sql's own
    direct reads (MapInArrow)."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    return sum("BatchScan carbondata" in line or "MapInArrow" in line for line in plan.splitlines())


def _local(df) -> bool:
    return "LocalTableScan" in df._jdf.queryExecution().executedPlan().toString()


@pytest.mark.parametrize("query", [
    "SELECT * FROM {t} WHERE id % 3 = 0",
    "SELECT s, count(*), sum(dec), max(big), min(d), max(ts), count(flag), sum(size(arr)) FROM {t} GROUP BY s",
    "SELECT a.id, b.x, a.dec + b.dec FROM {t} a JOIN {t} b ON a.id = b.id + 1 WHERE a.id < 1500",
])
def test_carbon_ds_sql_reads_a_small_carbondata_part_at_planning(spark, tmp_path, query):
    """Through carbon_ds.sql, a mixed table's carbondata segments, when their read gives few rows (at most
    100,000 and carbon_ds.sql.localRelationBytes bytes of Arrow), are read in the extension's planning call
    into a local relation (no Python task beside Spark's file scans), as carbon_ds.sql's own small reads
    are; every type crosses as Arrow. Plain spark.sql plans the same under an exchange, and the relation's
    read in the result stage (a kept DataFrame's later actions must see later commits). Past the limit and
    with a non-deterministic expression, the relation's tasks read. The oracle is Spark's Parquet reader over the
    same rows."""
    _extension(spark)
    path = str(tmp_path / "t")
    carbon_ds.write_table(_typed(0, 1000), path)
    (tmp_path / "pq").mkdir()
    pq.write_table(_typed(1000, 2000), tmp_path / "pq" / "a.parquet")
    CarbonTable.open(path).add_segment(str(tmp_path / "pq"), format="parquet")
    pq.write_table(_typed(0, 2000), tmp_path / "oracle.parquet")
    spark.read.format("carbondata").load(path).createOrReplaceTempView("small_mixed")
    spark.read.parquet(str(tmp_path / "oracle.parquet")).createOrReplaceTempView("small_oracle")
    want = sorted(repr(r) for r in spark.sql(query.format(t="small_oracle")).collect())

    def rows(df) -> list[str]:
        return sorted(repr(r) for r in df.collect())

    with confs(spark, **{CONF_LOCAL_BYTES: str(4 << 20)}):
        df = carbon_ds.sql(spark, query.format(t="small_mixed"))
        assert rows(df) == want
        assert _carbon_scans(df) == 0 and _local(df)
        assert "FileScan parquet" in df._jdf.queryExecution().executedPlan().toString()
        df = spark.sql(query.format(t="small_mixed"))
        assert rows(df) == want
        # under an exchange (the aggregate's, the join's broadcast) the rows read at planning; in the result
        # stage (the plain select, the join's streamed side) the read they were made from
        assert _local(df) == ("SELECT *" not in query) and (_carbon_scans(df) > 0) == ("GROUP BY" not in query)
    with confs(spark, **{CONF_LOCAL_BYTES: "1000"}):  # more Arrow bytes than that
        df = carbon_ds.sql(spark, query.format(t="small_mixed"))
        assert rows(df) == want and _carbon_scans(df) > 0
    with confs(spark, **{CONF_LOCAL_BYTES: str(4 << 20)}):
        df = carbon_ds.sql(spark, "SELECT id, rand(7) FROM small_mixed WHERE id < 10")
        assert sorted(r[0] for r in df.collect()) == list(range(10)) and _carbon_scans(df) > 0


def test_a_small_carbondata_part_read_at_planning_follows_commits(spark, tmp_path):
    """The rows read at planning are kept (as plans are) for the same read of an unchanged table: a load or
    a DELETE since is read again by the next carbon_ds.sql call. The oracle is the rows written."""
    _extension(spark)
    path, table = _carbon_and_parquet(spark, tmp_path, "small_commits")
    text = "SELECT id, k FROM small_commits WHERE id < 15"
    with confs(spark, **{CONF_LOCAL_BYTES: str(4 << 20)}):
        def rows() -> list[tuple[int, int]]:
            df = carbon_ds.sql(spark, text)
            assert _carbon_scans(df) == 0 and _local(df)
            return sorted(tuple(r) for r in df.collect())

        want = [(i, i % 4) for i in range(15)]
        assert rows() == want and rows() == want
        carbon_ds.write_table(_rows(5, 8), path, mode="append")
        want = sorted(want + [(i, i % 4) for i in range(5, 8)])
        assert rows() == want
        table.delete("k = 2 AND id < 10")
        assert rows() == [r for r in want if r[1] != 2 or r[0] >= 10]


def test_a_headerless_csv_segment_reads_its_columns_in_table_order(spark, tmp_path):
    """A CSV file without a header row: Spark names its columns _c0, _c1, ...; the native scan maps them to the
    table's columns by position, as the Python reader does."""
    path = str(tmp_path / "t")
    carbon_ds.write_table(_rows(0, 10), path)
    (tmp_path / "csv").mkdir()
    pcsv.write_csv(_rows(10, 20), tmp_path / "csv" / "a.csv", pcsv.WriteOptions(include_header=False))
    CarbonTable.open(path).add_segment(str(tmp_path / "csv"), format="csv", options={"header": "false"})
    pq.write_table(_rows(0, 20), tmp_path / "oracle.parquet")
    spark.read.format("carbondata").load(path).createOrReplaceTempView("headerless_t")
    spark.read.parquet(str(tmp_path / "oracle.parquet")).createOrReplaceTempView("headerless_oracle")
    with confs(spark, **{CONF_LOCAL_BYTES: "0"}):
        for q in ("SELECT * FROM {t}", "SELECT s, d FROM {t} WHERE id >= 12 AND k = 1"):
            for df in _routes(spark, q.format(t="headerless_t")):
                _same(df, spark.sql(q.format(t="headerless_oracle")))
        assert carbon_ds.read_table(path).sort_by("id").equals(_rows(0, 20))
