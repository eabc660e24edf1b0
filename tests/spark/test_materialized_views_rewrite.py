"""The extension's query rewrite to a materialized view, differentially: every query the rule answers from
the view must equal the same query with ``carbon_ds.sql.materializedViewRewrite=false`` (Spark aggregating
the main table itself, the oracle), and each rewrite is checked to have happened (the optimized plan reads
the view's folder) so a rule that stopped matching fails here. Near misses must read the main table.
"""

from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from carbon_ds.ddl.statement_parser import table_name
from carbon_ds.names import CONF_LOCAL_BYTES, CONF_MV_REWRITE
from carbon_ds.spark.statements import catalog
from carbon_ds.table.ops import views

pytestmark = pytest.mark.spark
# each case runs in UTC by default and in a second zone with the slow cases (scripts/test.sh --slow; CI runs both)
KOLKATA = pytest.param("Asia/Kolkata", marks=pytest.mark.slow)
NEW_YORK = pytest.param("America/New_York", marks=pytest.mark.slow)

VIEW = ("SELECT brand, model, timeseries(ts, 'hour') AS hour, sum(speed) AS total, count(*) AS n, "
        "count(speed) AS counted, avg(speed) AS mean, max(speed) AS top, min(speed) AS low "
        "FROM tel GROUP BY brand, model, timeseries(ts, 'hour')")

ANSWERED_SQL = [
    # exact shape, a subset of the aggregates, avg from the kept sum and count
    "SELECT brand, model, date_trunc('hour', ts) AS h, sum(speed), count(*), avg(speed) FROM tel "
    "GROUP BY brand, model, date_trunc('hour', ts)",
    # rollup: coarser granularity, fewer grouping columns, no grouping at all
    "SELECT brand, date_trunc('DAY', ts) AS d, sum(speed), count(speed), min(speed), max(speed), avg(speed) "
    "FROM tel GROUP BY 1, 2",
    "SELECT date_trunc('week', ts) AS w, count(1) AS n FROM tel GROUP BY 1",
    "SELECT model, avg(speed) AS mean, max(speed) + 1 AS over FROM tel GROUP BY model",
    "SELECT sum(speed), count(*) FROM tel",
    "SELECT date_trunc('month', ts), date_trunc('year', ts), count(*) FROM tel GROUP BY 1, 2",
    # filters on grouping columns, above the view's rows
    "SELECT brand, sum(speed) FROM tel WHERE brand = 'a' OR brand IS NULL GROUP BY brand",
    "SELECT date_trunc('day', ts), count(*) FROM tel WHERE model IN (1, 3) AND brand <> 'b' GROUP BY 1",
    # count(DISTINCT) of a plain grouping column: the view's rows hold each value of its groups
    "SELECT model, count(DISTINCT brand), sum(speed) FROM tel GROUP BY model",
    # exactly the view's groups: one view row per group (answered with the rows at planning when small)
    "SELECT brand, model, date_trunc('hour', ts), max(speed) + 1, min(speed), count(speed), count(DISTINCT brand), "
    "sum(speed) * 2 FROM tel GROUP BY brand, model, date_trunc('hour', ts)",
]

NEAR_MISSES = [
    "SELECT brand, sum(speed) FROM tel WHERE speed > 10 GROUP BY brand",  # not a grouping column
    "SELECT brand, sum(speed) FROM tel WHERE ts > timestamp'2024-03-01 05:00:00' GROUP BY brand",  # truncated
    "SELECT brand, stddev(speed) FROM tel GROUP BY brand",  # an aggregate the view lacks
    "SELECT brand, sum(model) FROM tel GROUP BY brand",  # an aggregate of a column the view lacks
    "SELECT brand, count(DISTINCT speed) FROM tel GROUP BY brand",
    "SELECT date_trunc('minute', ts), count(*) FROM tel GROUP BY 1",  # finer than the view's hours
    "SELECT speed, count(*) FROM tel GROUP BY speed",  # not a grouping column of the view
    "SELECT brand, sum(speed) FILTER (WHERE model = 1) FROM tel GROUP BY brand",
    "SELECT model, count(DISTINCT date_trunc('hour', ts)) FROM tel GROUP BY model",  # not a plain grouping column
    "SELECT brand, model, sum(speed) FROM tel GROUP BY ROLLUP(brand, model)",  # grouping sets
]


def _frames(spark):
    """DataFrame-call queries the view answers (built anew for each run: a DataFrame keeps its plan)."""
    tel = spark.table("tel")
    return [
        tel.groupBy("brand").agg(F.sum("speed"), F.count(F.lit(1)), F.avg("speed")),
        tel.where(F.col("brand") == "a").groupBy(F.date_trunc("day", "ts").alias("d"), "model")
        .agg(F.max("speed"), F.min("speed")),
    ]


def _rows(df) -> list[tuple]:
    return sorted((tuple(None if v is None else round(v, 9) if isinstance(v, float) else v for v in r)
                   for r in df.collect()), key=repr)


def _paths(df) -> set[str]:
    """The folders the optimized plan's carbondata relations read."""
    leaves = df._jdf.queryExecution().optimizedPlan().collectLeaves()
    out = set()
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        if leaf.getClass().getSimpleName() == "DataSourceV2ScanRelation":  # after Spark's scan push-down
            out.add(catalog.real_path(leaf.relation().options().get("path")))
    return out


def _view_scans(df) -> list[str]:
    """The scan kinds of the optimized plan's reads of a view's folder: ``ViewRows`` where the view's rows
    came with its freshness answer (no Python task), a Python data source scan otherwise."""
    leaves = df._jdf.queryExecution().optimizedPlan().collectLeaves()
    return [leaves.apply(i).scan().getClass().getSimpleName() for i in range(leaves.size())
            if leaves.apply(i).getClass().getSimpleName() == "DataSourceV2ScanRelation"]


def _insert(spark, day: int, n: int) -> None:
    spark.sql(f"INSERT INTO tel SELECT CASE WHEN id % 3 = 0 THEN 'a' WHEN id % 3 = 1 THEN 'b' ELSE NULL END, "
              f"CAST(id % 4 AS INT), "
              f"timestamp'2024-03-{day:02d} 00:00:00' + make_interval(0, 0, 0, 0, 0, CAST(id * 37 AS INT), 0), "
              f"CASE WHEN id % 11 = 0 THEN NULL ELSE CAST(id % 50 - 5 AS INT) END FROM range({n})")


@pytest.fixture
def tel(ext, request):
    spark = ext
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", getattr(request, "param", "UTC"))
    spark.sql("DROP MATERIALIZED VIEW IF EXISTS mv_tel")
    spark.sql("DROP TABLE IF EXISTS tel")
    spark.sql("CREATE TABLE tel (brand STRING, model INT, ts TIMESTAMP, speed INT) STORED AS carbondata")
    _insert(spark, 1, 400)
    spark.sql(f"CREATE MATERIALIZED VIEW mv_tel AS {VIEW}")
    yield spark
    spark.conf.unset(CONF_MV_REWRITE)
    spark.sql("DROP MATERIALIZED VIEW IF EXISTS mv_tel")
    spark.sql("DROP TABLE IF EXISTS tel")
    spark.conf.set("spark.sql.session.timeZone", zone)


def _check(spark, make, *, answered: bool, table: str = "tel") -> None:
    main = catalog.real_path(catalog.lookup(spark, table_name(table)).path)
    view = catalog.real_path(catalog.lookup(spark, table_name("mv_tel")).path)
    spark.conf.unset(CONF_MV_REWRITE)
    df = make()
    got, read = _rows(df), _paths(df)
    assert read == ({view} if answered else {main}), make
    spark.conf.set(CONF_MV_REWRITE, "false")
    off = make()
    assert _paths(off) == {main}
    assert got == _rows(off), make
    spark.conf.unset(CONF_MV_REWRITE)


def _check_all(spark, *, answered: bool) -> None:
    for text in ANSWERED_SQL:
        _check(spark, lambda t=text: spark.sql(t), answered=answered)
    for i in range(len(_frames(spark))):
        _check(spark, lambda i=i: _frames(spark)[i], answered=answered)


@pytest.mark.parametrize("tel", ["UTC", KOLKATA], indirect=True)  # half-hour offset: days differ from UTC's
def test_rewritten_queries_equal_the_main_tables_answers(tel):
    spark = tel
    _check_all(spark, answered=True)
    _insert(spark, 2, 150)  # on_commit: refreshed at the load, answered again
    _check_all(spark, answered=True)
    plan = spark.sql(ANSWERED_SQL[1])._jdf.queryExecution().optimizedPlan().toString()
    assert "default.mv_tel" in plan and "default.tel" not in plan  # EXPLAIN shows the view's table
    spark.sql("DELETE FROM tel WHERE speed = 7")  # the view is stale: never read
    assert views.view_status(catalog.lookup(spark, table_name("mv_tel")).path).status == "stale"
    _check_all(spark, answered=False)
    spark.sql("REFRESH MATERIALIZED VIEW mv_tel")
    _check(spark, lambda: spark.sql(ANSWERED_SQL[1]), answered=True)


def test_a_small_view_is_answered_with_its_rows_a_larger_one_by_a_python_scan(tel):
    spark = tel
    exact, rollup, filtered = ANSWERED_SQL[0], ANSWERED_SQL[1], ANSWERED_SQL[6]
    for text in (exact, rollup, filtered):
        _check(spark, lambda t=text: spark.sql(t), answered=True)
        assert _view_scans(spark.sql(text)) == ["ViewRows"], text
    # exactly the view's groups: the answer's rows themselves, no job at all (the plan is the scan alone)
    plan = spark.sql(exact)._jdf.queryExecution().executedPlan().toString()
    assert "LocalTableScan" in plan and "Aggregate" not in plan, plan
    assert "default.mv_tel" in spark.sql(exact)._jdf.queryExecution().optimizedPlan().toString()
    # past the session's bytes read at planning: Spark's Python tasks read the view, the same answers
    spark.conf.set(CONF_LOCAL_BYTES, "1")
    try:
        for text in (exact, rollup, filtered):
            _check(spark, lambda t=text: spark.sql(t), answered=True)
            scans = _view_scans(spark.sql(text))
            assert len(scans) == 1 and scans != ["ViewRows"], (text, scans)
        assert "Aggregate" in spark.sql(exact)._jdf.queryExecution().executedPlan().toString()
    finally:
        spark.conf.unset(CONF_LOCAL_BYTES)


def test_near_misses_read_the_main_table(tel):
    spark = tel
    for text in NEAR_MISSES:
        _check(spark, lambda t=text: spark.sql(t), answered=False)


def test_another_time_zone_or_the_conf_reads_the_main_table(tel):
    spark = tel
    text = ANSWERED_SQL[1]
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")  # the view's hours are another zone's
    try:
        _check(spark, lambda: spark.sql(text), answered=False)
        _check(spark, lambda: spark.sql(ANSWERED_SQL[3]), answered=True)  # no timeseries: any zone
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)


def _parquet_segment(spark, folder, day: int, n: int) -> None:
    """Rows written by pyarrow as Parquet and added to ``tel`` with ADD SEGMENT (an external segment)."""
    rows = spark.sql(f"SELECT CASE WHEN id % 2 = 0 THEN 'a' ELSE 'c' END AS brand, CAST(id % 5 AS INT) AS model, "
                     f"timestamp'2024-03-{day:02d} 03:00:00' + make_interval(0, 0, 0, 0, 0, CAST(id * 53 AS INT), 0) "
                     f"AS ts, CAST(id % 17 AS INT) AS speed FROM range({n})")
    pq.write_table(pa.Table.from_pylist([r.asDict() for r in rows.collect()], schema=pa.schema(
        [("brand", pa.string()), ("model", pa.int32()), ("ts", pa.timestamp("us", tz="UTC")),
         ("speed", pa.int32())])), str(folder / "part-0.parquet"))
    spark.sql(f"ALTER TABLE tel ADD SEGMENT OPTIONS ('path'='{folder}', 'format'='parquet')")


@pytest.mark.parametrize("tel", ["UTC", NEW_YORK], indirect=True)
def test_rewritten_answers_across_update_delete_and_added_parquet(tel, tmp_path):
    """UPDATE and DELETE leave the view stale (never read) until REFRESH; ADD SEGMENT refreshes it at the commit;
    every answer equals the main table's, in the session's zone."""
    spark = tel
    view = catalog.lookup(spark, table_name("mv_tel")).path
    spark.sql("UPDATE tel SET speed = speed + 100 WHERE model = 2")
    assert views.view_status(view).status == "stale"
    _check_all(spark, answered=False)
    spark.sql("REFRESH MATERIALIZED VIEW mv_tel")
    _check_all(spark, answered=True)
    folder = tmp_path / "added"
    folder.mkdir()
    _parquet_segment(spark, folder, 3, 120)
    assert views.view_status(view).status == "enabled"
    _check_all(spark, answered=True)
    spark.sql("DELETE FROM tel WHERE brand = 'c' AND model = 1")  # rows of the added segment
    _check_all(spark, answered=False)
    spark.sql("REFRESH MATERIALIZED VIEW mv_tel")
    _check_all(spark, answered=True)


def test_on_manual_view_is_not_read_until_refreshed(tel):
    spark = tel
    spark.sql("DROP MATERIALIZED VIEW mv_tel")
    spark.sql(f"CREATE MATERIALIZED VIEW mv_tel PROPERTIES ('refresh_trigger_mode'='on_manual') AS {VIEW}")
    _check_all(spark, answered=True)
    _insert(spark, 4, 90)  # the main table changed; the view was not refreshed
    _check_all(spark, answered=False)
    spark.sql("REFRESH MATERIALIZED VIEW mv_tel")
    _check_all(spark, answered=True)


def test_avg_needs_the_count_of_its_column(tel):
    """A view with sum(speed) and count(*) but no count(speed): avg(speed) is not sum / count(*) when speed has
    nulls, so it is not answered from that view; what the view keeps is."""
    spark = tel
    spark.sql("DROP MATERIALIZED VIEW mv_tel")
    spark.sql("CREATE MATERIALIZED VIEW mv_tel AS SELECT brand, model, sum(speed) AS total, count(*) AS n "
              "FROM tel GROUP BY brand, model")
    _check(spark, lambda: spark.sql("SELECT brand, avg(speed) FROM tel GROUP BY brand"), answered=False)
    _check(spark, lambda: spark.sql("SELECT brand, count(speed) FROM tel GROUP BY brand"), answered=False)
    _check(spark, lambda: spark.sql("SELECT brand, sum(speed), count(*) FROM tel GROUP BY brand"), answered=True)


def test_another_table_is_not_answered_by_the_view(tel, tmp_path):
    """A table with the same columns, and a copy of the main table's folder (which carries its link file), are
    not the view's main table: their queries read themselves."""
    spark = tel
    text = "SELECT brand, sum(speed), count(*) FROM {t} GROUP BY brand"
    try:
        spark.sql("CREATE TABLE tel_twin (brand STRING, model INT, ts TIMESTAMP, speed INT) STORED AS carbondata")
        spark.sql("INSERT INTO tel_twin SELECT * FROM tel WHERE model = 1")
        _check(spark, lambda: spark.sql(text.format(t="tel_twin")), answered=False, table="tel_twin")
        copy = tmp_path / "tel_copy"
        shutil.copytree(catalog.lookup(spark, table_name("tel")).path, copy)
        spark.sql(f"CREATE TABLE tel_copy USING carbondata LOCATION '{copy}'")
        spark.sql("DELETE FROM tel_copy WHERE model = 3")
        _check(spark, lambda: spark.sql(text.format(t="tel_copy")), answered=False, table="tel_copy")
        _check(spark, lambda: spark.sql(text.format(t="tel")), answered=True)
    finally:
        spark.sql("DROP TABLE IF EXISTS tel_twin")
        spark.sql("DROP TABLE IF EXISTS tel_copy")


FILTERED = ("SELECT brand, model, timeseries(ts, 'hour') AS hour, sum(speed) AS total, count(*) AS n, "
            "count(speed) AS counted, avg(speed) AS mean FROM tel WHERE speed >= 0 AND brand <> 'b' "
            "AND model IN (0, 1, 2) GROUP BY brand, model, timeseries(ts, 'hour')")
SAME_WHERE = [
    "SELECT brand, sum(speed), count(*) FROM tel WHERE speed >= 0 AND brand <> 'b' AND model IN (0, 1, 2) "
    "GROUP BY brand",
    # the same conditions in another order and spelling, plus filters on grouping columns, rolled up
    "SELECT date_trunc('day', ts) AS d, avg(speed), count(speed) FROM tel WHERE model IN (2, 1, 0) "
    "AND brand != 'b' AND 0 <= speed AND model <> 1 AND brand IS NOT NULL GROUP BY 1",
]
OTHER_WHERE = [
    "SELECT brand, sum(speed) FROM tel WHERE speed >= 0 AND brand <> 'b' GROUP BY brand",  # a condition missing
    "SELECT brand, sum(speed) FROM tel WHERE speed >= -1 AND brand <> 'b' AND model IN (0, 1, 2) GROUP BY brand",
    "SELECT brand, sum(speed) FROM tel WHERE speed > 0 AND brand <> 'b' AND model IN (0, 1, 2) GROUP BY brand",
    "SELECT brand, sum(speed) FROM tel WHERE speed >= 0 AND brand <> 'b' AND model IN (0, 1) GROUP BY brand",
    # a further condition on a column the view does not group by
    "SELECT brand, sum(speed) FROM tel WHERE speed >= 0 AND speed < 30 AND brand <> 'b' AND model IN (0, 1, 2) "
    "GROUP BY brand",
    "SELECT brand, sum(speed) FROM tel WHERE (speed >= 0 AND brand <> 'b' AND model IN (0, 1, 2)) OR brand = 'a' "
    "GROUP BY brand",
    "SELECT brand, sum(speed) FROM tel GROUP BY brand",
]


@pytest.mark.parametrize("tel", ["UTC", KOLKATA], indirect=True)
def test_view_with_a_where_answers_queries_with_the_same_conditions(tel):
    spark = tel
    spark.sql("DROP MATERIALIZED VIEW mv_tel")
    spark.sql(f"CREATE MATERIALIZED VIEW mv_tel AS {FILTERED}")

    def check() -> None:
        for text in SAME_WHERE:
            _check(spark, lambda t=text: spark.sql(t), answered=True)
        for text in OTHER_WHERE:
            _check(spark, lambda t=text: spark.sql(t), answered=False)

    check()
    _insert(spark, 2, 150)  # on_commit refresh
    check()


def test_view_where_spark_may_read_otherwise_is_never_used(tel):
    """Conditions whose literals carbon-ds's filter and Spark may read differently (string order, fractions,
    timestamps) keep the view out of the rule, even for a query with the same text."""
    spark = tel
    for where in ["brand > 'a'", "speed > 1.5", "ts >= '2024-03-01 05:00:00'"]:
        spark.sql("DROP MATERIALIZED VIEW mv_tel")
        spark.sql(f"CREATE MATERIALIZED VIEW mv_tel AS SELECT brand, sum(speed) AS total FROM tel WHERE {where} "
                  "GROUP BY brand")
        _check(spark, lambda w=where: spark.sql(f"SELECT brand, sum(speed) FROM tel WHERE {w} GROUP BY brand"),
               answered=False)



MERGE = ("MERGE INTO tel t USING (SELECT 'a' AS brand, 1 AS model, timestamp'2024-03-01 02:30:00' AS ts, 5 AS speed "
         "UNION ALL SELECT 'z', 9, timestamp'2024-03-05 08:00:00', 7) s ON t.brand = s.brand AND t.model = s.model "
         "WHEN MATCHED AND t.speed > 30 THEN DELETE WHEN MATCHED THEN UPDATE SET speed = t.speed + s.speed "
         "WHEN NOT MATCHED THEN INSERT *")
OVERWRITE = "INSERT OVERWRITE tel SELECT brand, model, ts + INTERVAL 1 DAY, speed * 2 FROM tel WHERE model <> 2"
COMPACT = "ALTER TABLE tel COMPACT 'MAJOR'"


@pytest.mark.parametrize("mode", ["on_commit", "on_manual"])
@pytest.mark.parametrize("tel", ["UTC", NEW_YORK], indirect=True)  # the overwrite moves rows a day
def test_answers_after_merge_overwrite_and_compaction(tel, mode):
    """After MERGE, INSERT OVERWRITE and compaction of the main table, queries equal the main table's answers,
    in the session's zone. on_commit: MERGE and compaction leave the view stale (the main table is read), the
    overwrite rebuilds it at its commit (the view is read); on_manual: the view, not refreshed since the change,
    is never read."""
    spark = tel
    spark.sql("DROP MATERIALIZED VIEW mv_tel")
    spark.sql(f"CREATE MATERIALIZED VIEW mv_tel PROPERTIES ('refresh_trigger_mode'='{mode}') AS {VIEW}")
    manual = mode == "on_manual"
    _insert(spark, 6, 80)  # a second segment, for the compaction
    spark.sql("REFRESH MATERIALIZED VIEW mv_tel")
    for change, answered in [(MERGE, False), (OVERWRITE, not manual), (COMPACT, False)]:
        if change == COMPACT:  # the overwrite left one segment: compaction needs two
            _insert(spark, 7, 60)
            spark.sql("REFRESH MATERIALIZED VIEW mv_tel")
        spark.sql(change)
        status = views.view_status(catalog.lookup(spark, table_name("mv_tel")).path).status
        assert status == ("enabled" if answered else "stale"), change
        for text in (ANSWERED_SQL[1], ANSWERED_SQL[7]):
            _check(spark, lambda t=text: spark.sql(t), answered=answered)
        _check(spark, lambda: _frames(spark)[1], answered=answered)
        spark.sql("REFRESH MATERIALIZED VIEW mv_tel")
    _check(spark, lambda: spark.sql(ANSWERED_SQL[1]), answered=True)  # fresh again after the compaction
