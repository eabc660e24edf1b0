"""Materialized views through both doors: ``carbon_ds.sql`` and plain ``spark.sql`` in a session with the
extension (which must take CREATE MATERIALIZED VIEW before Spark 4's parser reads it as a pipeline dataset).

Oracle: Spark's own GROUP BY over the main table (``date_trunc`` for timeseries), run fresh after each change.
"""

from __future__ import annotations

import pytest

import carbon_ds
from carbon_ds.ddl.statement_parser import table_name
from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.spark.statements import catalog
from carbon_ds.spark.statements import materialized_views as mv
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.ops import views

pytestmark = pytest.mark.spark

VIEW = ("SELECT brand, timeseries(ts, 'hour') AS hour, sum(speed) AS total, count(*) AS n, avg(speed) AS mean, "
        "max(speed) AS top FROM tel WHERE speed >= 0 GROUP BY brand, timeseries(ts, 'hour')")
ORACLE = ("SELECT brand, date_trunc('hour', ts) AS hour, sum(speed) AS total, count(*) AS n, avg(speed) AS mean, "
          "max(speed) AS top FROM tel WHERE speed >= 0 GROUP BY brand, date_trunc('hour', ts)")


def _rows(df) -> list[tuple]:
    return sorted((tuple(None if v is None else round(v, 9) if isinstance(v, float) else v for v in r)
                   for r in df.collect()), key=repr)


def _view_rows(spark, name: str = "mv_tel") -> list[tuple]:
    return _rows(spark.sql(f"SELECT brand, hour, total, n, mean, top FROM {name}"))


def _insert(spark, day: int, n: int) -> None:
    spark.sql(f"INSERT INTO tel SELECT CASE WHEN id % 3 = 0 THEN 'a' WHEN id % 3 = 1 THEN 'b' ELSE NULL END, "
              f"timestamp'2024-03-{day:02d} 00:00:00' + make_interval(0, 0, 0, 0, 0, CAST(id * 7 AS INT), 0), "
              f"CAST(id % 50 - 5 AS INT) FROM range({n})")


@pytest.fixture
def tel(ext):
    ext.sql("DROP MATERIALIZED VIEW IF EXISTS mv_tel")
    ext.sql("DROP TABLE IF EXISTS tel")
    ext.sql("CREATE TABLE tel (brand STRING, ts TIMESTAMP, speed INT) STORED AS carbondata")
    _insert(ext, 1, 300)
    yield ext
    ext.sql("DROP MATERIALIZED VIEW IF EXISTS mv_tel")
    ext.sql("DROP TABLE IF EXISTS tel")


@pytest.mark.parametrize("door", ["spark_sql", "carbon_ds_sql"])
def test_view_follows_loads_through_either_door(tel, door):
    spark = tel
    run = spark.sql if door == "spark_sql" else (lambda text: carbon_ds.sql(spark, text))
    run(f"CREATE MATERIALIZED VIEW mv_tel AS {VIEW}")
    assert _view_rows(spark) == _rows(spark.sql(ORACLE))
    _insert(spark, 2, 200)  # on_commit: the load refreshes the view, one row per group
    assert _view_rows(spark) == _rows(spark.sql(ORACLE))
    shown = [r.asDict() for r in run("SHOW MATERIALIZED VIEWS ON TABLE tel").collect()]
    columns = ("Name", "Main Table", "Status", "Refresh Mode", "Segments Covered")
    assert [tuple(r[c] for c in columns) for r in shown] == [("default.mv_tel", "default.tel", "enabled", "on_commit", "0,1")]
    spark.sql("DELETE FROM tel WHERE speed = 7")
    assert run("SHOW MATERIALIZED VIEWS").collect()[0]["Status"] == "stale"
    assert run("REFRESH MATERIALIZED VIEW mv_tel").collect()[0]["Refresh"] == "full"
    assert _view_rows(spark) == _rows(spark.sql(ORACLE))
    assert run("SHOW MATERIALIZED VIEWS").collect()[0]["Status"] == "enabled"
    run("DROP MATERIALIZED VIEW mv_tel")
    assert spark.sql("SHOW MATERIALIZED VIEWS").collect() == []
    assert not spark.catalog.tableExists("mv_tel")


def test_on_manual_view_waits_for_refresh(tel):
    spark = tel
    spark.sql(f"CREATE MATERIALIZED VIEW mv_tel PROPERTIES ('refresh_trigger_mode'='on_manual') AS {VIEW}")
    before = _view_rows(spark)
    _insert(spark, 3, 100)
    assert _view_rows(spark) == before
    row = spark.sql("SHOW MATERIALIZED VIEWS ON TABLE tel").collect()[0]
    assert (row["Status"], row["Refresh Mode"], row["Segments Covered"]) == ("stale", "on_manual", "0")
    assert "1 not aggregated yet" in row["Reason"]
    done = spark.sql("REFRESH MATERIALIZED VIEW mv_tel").collect()[0]
    assert (done["Refresh"], done["Segments Aggregated"]) == ("incremental", "1")
    assert _view_rows(spark) == _rows(spark.sql(ORACLE))


def test_refused_shapes_and_names(tel):
    spark = tel

    def run(text: str):
        return carbon_ds.sql(spark, text)

    with pytest.raises(CarbonOptionError, match=r"LEFT JOIN \(only inner joins\)"):
        run("CREATE MATERIALIZED VIEW mv_tel AS SELECT t.brand, sum(t.speed) FROM tel t LEFT JOIN tel u "
            "ON t.brand = u.brand GROUP BY t.brand")
    with pytest.raises(Exception, match=r"count\(DISTINCT \.\.\.\) \(group the view by the column instead"):  # spark.sql's own error
        spark.sql("CREATE MATERIALIZED VIEW mv_tel AS SELECT brand, count(DISTINCT speed) FROM tel GROUP BY brand")
    with pytest.raises(CarbonTableError, match="not a carbondata table"):
        run("CREATE MATERIALIZED VIEW mv_tel AS SELECT brand, sum(speed) FROM nowhere GROUP BY brand")
    with pytest.raises(CarbonTableError, match="no materialized view"):
        run("REFRESH MATERIALIZED VIEW mv_tel")
    with pytest.raises(CarbonTableError, match="is a table, not a materialized view"):
        run("DROP MATERIALIZED VIEW tel")
    run("DROP MATERIALIZED VIEW IF EXISTS mv_tel")  # nothing to drop: no error
    run(f"CREATE MATERIALIZED VIEW mv_tel AS {VIEW}")
    run(f"CREATE MATERIALIZED VIEW IF NOT EXISTS mv_tel AS {VIEW}")
    with pytest.raises(CarbonTableError, match="already exists"):
        run(f"CREATE MATERIALIZED VIEW mv_tel AS {VIEW}")


PLAIN = ("SELECT brand, sum(speed) AS total, count(*), avg(speed), max(speed) FROM tel WHERE speed >= 0 "
         "GROUP BY brand")


def _answered(spark, text: str) -> tuple[bool, list[tuple], list[str]]:
    """(read from the view?, rows, column names) of ``text`` through carbon_ds.sql."""
    df = carbon_ds.sql(spark, text)
    return "mv_tel" in df._jdf.queryExecution().analyzed().toString(), _rows(df), df.columns


def _off(spark, text: str) -> tuple[list[tuple], list[str]]:
    spark.conf.set("carbon_ds.sql.materializedViewRewrite", "false")
    try:
        df = carbon_ds.sql(spark, text)
        assert "mv_tel" not in df._jdf.queryExecution().analyzed().toString()
        return _rows(df), df.columns
    finally:
        spark.conf.unset("carbon_ds.sql.materializedViewRewrite")


def test_carbon_ds_sql_answers_the_views_shape_from_the_view(tel, tmp_path):
    spark = tel
    spark.sql(f"CREATE MATERIALIZED VIEW mv_tel AS {PLAIN}")
    exact = ["SELECT brand, sum(speed) AS total, avg(speed) FROM tel WHERE speed >= 0 GROUP BY brand",
             "SELECT max(speed), brand, count(*) FROM tel WHERE  speed >= 0 GROUP BY brand"]
    near = ["SELECT brand, sum(speed) FROM tel WHERE speed > 0 GROUP BY brand",  # another filter
            "SELECT brand, sum(speed) FROM tel GROUP BY brand",  # no filter
            "SELECT brand, min(speed) FROM tel WHERE speed >= 0 GROUP BY brand",  # an aggregate it lacks
            "SELECT brand, ts, sum(speed) FROM tel WHERE speed >= 0 GROUP BY brand, ts",  # finer groups
            "SELECT sum(speed) FROM tel WHERE speed >= 0",  # coarser groups: not in this slice
            "SELECT brand, sum(speed) FROM tel WHERE speed >= 0 GROUP BY brand ORDER BY brand"]

    def check() -> None:
        for text in exact:
            used, rows, cols = _answered(spark, text)
            assert used, text
            assert (rows, cols) == _off(spark, text), text
        for text in near:
            used, rows, cols = _answered(spark, text)
            assert not used, text
            assert (rows, cols) == _off(spark, text), text

    check()
    _insert(spark, 4, 150)
    folder = tmp_path / "added"
    spark.sql("SELECT * FROM tel").write.parquet(str(folder))
    carbon_ds.sql(spark, f"ALTER TABLE tel ADD SEGMENT OPTIONS ('path'='{folder}', 'format'='parquet')")
    check()
    spark.sql("UPDATE tel SET speed = 1 WHERE brand = 'a'")  # stale: never answered from the view
    assert not _answered(spark, exact[0])[0]
    assert _answered(spark, exact[0])[1:] == _off(spark, exact[0])
    spark.sql("REFRESH MATERIALIZED VIEW mv_tel")
    check()


@pytest.mark.parametrize("door", ["spark_sql", "carbon_ds_sql"])
def test_drop_table_drops_its_views(tel, door):
    """As CarbonData's DROP TABLE (CarbonDropTableCommand drops the views on the table), and DROP TABLE of a
    view's own table is refused: DROP MATERIALIZED VIEW removes it."""
    spark = tel
    run = spark.sql if door == "spark_sql" else (lambda text: carbon_ds.sql(spark, text))
    run(f"CREATE MATERIALIZED VIEW mv_tel AS {VIEW}")
    [view_path] = views.linked_views(TableHandle.open(catalog.lookup(spark, table_name("tel")).path))
    with pytest.raises(Exception, match="is a materialized view; use DROP MATERIALIZED VIEW"):
        run("DROP TABLE mv_tel")
    run("DROP TABLE IF EXISTS mv_tel")  # skipped, as CarbonData skips it
    assert spark.catalog.tableExists("mv_tel")
    run("DROP TABLE tel")
    assert not spark.catalog.tableExists("mv_tel")
    assert run("SHOW MATERIALIZED VIEWS").collect() == []
    assert not TableHandle.exists(view_path)
    run("CREATE TABLE tel (brand STRING, ts TIMESTAMP, speed INT) STORED AS carbondata")
    run(f"CREATE MATERIALIZED VIEW mv_tel AS {VIEW}")  # the name is free again


def test_the_answer_is_the_checked_segments_rows(tel, monkeypatch):
    """The view's rows read are those of the segment whose freshness was checked: a load (with its on_commit
    refresh) landing between the check and the read sends the query to the main table, and a load after
    carbon_ds.sql returned does not change the answer it gave."""
    spark = tel
    spark.sql(f"CREATE MATERIALIZED VIEW mv_tel AS {PLAIN}")
    text = "SELECT brand, sum(speed) AS total, count(*) FROM tel WHERE speed >= 0 GROUP BY brand"
    before = _off(spark, text)
    df = carbon_ds.sql(spark, text)
    assert "mv_tel" in df._jdf.queryExecution().analyzed().toString()
    _insert(spark, 5, 120)  # refreshes the view: a new view segment
    assert (_rows(df), df.columns) == before  # the rows of the segment checked, not a mix
    after = _off(spark, text)
    assert after != before

    real = mv.views.view_status
    landed = []

    def check_then_load(path, defn=None):
        state = real(path, defn)
        if not landed:  # a load and its refresh land right after the check
            landed.append(True)
            _insert(spark, 6, 80)
        return state

    monkeypatch.setattr(mv.views, "view_status", check_then_load)
    used, rows, cols = _answered(spark, text)
    assert landed and not used  # the checked segment was replaced: the main table answered
    assert (rows, cols) == _off(spark, text)
