"""Materialized views over a fact table inner-joined to dimension tables.

Oracle: Spark itself, with ``carbon_ds.sql.materializedViewRewrite=false``, joining and aggregating the
tables (``date_trunc`` for timeseries). Every query the rule answers from the view must equal that, and is
checked to read the view's folder (so a rule that stopped matching fails); near misses (another join key,
an outer join, a table more or less, a column the view does not group by) must read the tables.
"""

from __future__ import annotations

import pytest

import carbon_ds
from carbon_ds.ddl.statement_parser import table_name
from carbon_ds.errors import CarbonOptionError, CarbonSchemaError, CarbonTableError
from carbon_ds.names import CONF_MV_REWRITE
from carbon_ds.spark.statements import catalog
from carbon_ds.table.ops import views

pytestmark = pytest.mark.spark

JOIN = "FROM sales f JOIN stores s ON f.store = s.store JOIN items i ON f.item = i.item"
VIEW = ("SELECT s.region, i.kind, timeseries(f.ts, 'day') AS day, sum(f.qty) AS total, count(*) AS n, "
        f"avg(f.qty) AS mean, max(f.qty) AS top {JOIN} GROUP BY s.region, i.kind, timeseries(f.ts, 'day')")
ORACLE = ("SELECT s.region, i.kind, date_trunc('day', f.ts) AS day, sum(f.qty) AS total, count(*) AS n, "
          f"avg(f.qty) AS mean, max(f.qty) AS top {JOIN} GROUP BY 1, 2, 3")

ANSWERED = [
    ORACLE,
    # other aliases, tables in another order, keys written the other way round; rollup to fewer groups
    "SELECT region, sum(qty), max(qty) FROM items JOIN sales ON sales.item = items.item "
    "JOIN stores ON stores.store = sales.store GROUP BY region",
    "SELECT date_trunc('month', f.ts), count(*), avg(f.qty) FROM sales f JOIN stores s ON s.store = f.store "
    "JOIN items i ON i.item = f.item WHERE s.region = 'north' AND i.kind IN ('x', 'y') GROUP BY 1",
    f"SELECT sum(f.qty), count(1) {JOIN}",
    # count(DISTINCT) of a plain grouping column of the view
    f"SELECT s.region, count(DISTINCT i.kind), count(*) {JOIN} GROUP BY s.region",
]

NEAR_MISSES = [
    # another join key
    "SELECT s.region, sum(f.qty) FROM sales f JOIN stores s ON f.qty = s.store JOIN items i ON f.item = i.item "
    "GROUP BY s.region",
    # an outer join
    "SELECT s.region, sum(f.qty) FROM sales f LEFT JOIN stores s ON f.store = s.store "
    "JOIN items i ON f.item = i.item GROUP BY s.region",
    # a table fewer, a table more
    "SELECT s.region, sum(f.qty) FROM sales f JOIN stores s ON f.store = s.store GROUP BY s.region",
    f"SELECT s.region, sum(f.qty) {JOIN} JOIN promos p ON p.item = f.item GROUP BY s.region",
    # a grouping column, a filter column the view lacks
    f"SELECT s.store, sum(f.qty) {JOIN} GROUP BY s.store",
    f"SELECT s.region, sum(f.qty) {JOIN} WHERE f.qty > 3 GROUP BY s.region",
    # count(DISTINCT) of a column the view does not group by
    f"SELECT s.region, count(DISTINCT f.qty) {JOIN} GROUP BY s.region",
    # the fact table alone: the join drops rows the view never saw
    "SELECT sum(qty), count(*) FROM sales",
]


def _rows(df) -> list[tuple]:
    return sorted((tuple(None if v is None else round(v, 9) if isinstance(v, float) else v for v in r)
                   for r in df.collect()), key=repr)


def _paths(df) -> set[str]:
    leaves = df._jdf.queryExecution().optimizedPlan().collectLeaves()
    return {catalog.real_path(leaves.apply(i).relation().options().get("path")) for i in range(leaves.size())
            if leaves.apply(i).getClass().getSimpleName() == "DataSourceV2ScanRelation"}


def _path(spark, name: str) -> str:
    return catalog.real_path(catalog.lookup(spark, table_name(name)).path)


def _check(spark, text: str, *, answered: bool) -> None:
    view = _path(spark, "mv_star")
    spark.conf.unset(CONF_MV_REWRITE)
    df = spark.sql(text)
    got, read = _rows(df), _paths(df)
    assert (read == {view}) if answered else (view not in read and read), text
    spark.conf.set(CONF_MV_REWRITE, "false")
    off = spark.sql(text)
    assert view not in _paths(off)
    assert got == _rows(off), text
    spark.conf.unset(CONF_MV_REWRITE)


def _sales(spark, day: int, n: int) -> None:
    # store 9 is in no dimension row, store NULL matches nothing: the inner join drops both
    spark.sql(f"INSERT INTO sales SELECT CASE WHEN id % 13 = 0 THEN NULL WHEN id % 17 = 0 THEN 9 "
              f"ELSE CAST(id % 4 AS INT) END, CASE WHEN id % 3 = 0 THEN 'p' WHEN id % 3 = 1 THEN 'q' ELSE 'r' END, "
              f"timestamp'2024-03-{day:02d} 00:00:00' + make_interval(0, 0, 0, 0, 0, CAST(id * 301 AS INT), 0), "
              f"CASE WHEN id % 11 = 0 THEN NULL ELSE CAST(id % 20 - 3 AS INT) END FROM range({n})")


@pytest.fixture
def star(ext):
    spark = ext
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    for t in ("sales", "stores", "items", "promos"):
        spark.sql(f"DROP TABLE IF EXISTS {t}")  # drops the views over them too
    spark.sql("CREATE TABLE sales (store INT, item STRING, ts TIMESTAMP, qty INT) STORED AS carbondata")
    spark.sql("CREATE TABLE stores (store INT, region STRING) STORED AS carbondata")
    spark.sql("CREATE TABLE items (item STRING, kind STRING) STORED AS carbondata")
    spark.sql("CREATE TABLE promos (item STRING, promo STRING) STORED AS carbondata")
    spark.sql("INSERT INTO stores VALUES (0, 'north'), (1, 'south'), (2, 'north'), (3, NULL), (5, 'east')")
    spark.sql("INSERT INTO items VALUES ('p', 'x'), ('q', 'y'), ('r', 'x'), ('s', 'z')")
    spark.sql("INSERT INTO promos VALUES ('p', 'spring')")
    _sales(spark, 1, 300)
    yield spark
    spark.conf.unset(CONF_MV_REWRITE)
    for t in ("sales", "stores", "items", "promos"):
        spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.conf.set("spark.sql.session.timeZone", zone)


def _view_rows(spark) -> list[tuple]:
    return _rows(spark.sql("SELECT region, kind, day, total, n, mean, top FROM mv_star"))


def _oracle(spark) -> list[tuple]:
    spark.conf.set(CONF_MV_REWRITE, "false")
    try:
        return _rows(spark.sql(ORACLE))
    finally:
        spark.conf.unset(CONF_MV_REWRITE)


@pytest.mark.slow
def test_rewrite_across_fact_loads_dimension_changes_and_refresh(star):
    spark = star
    spark.sql(f"CREATE MATERIALIZED VIEW mv_star PROPERTIES ('refresh_trigger_mode'='on_manual') AS {VIEW}")
    assert _view_rows(spark) == _oracle(spark)
    for text in ANSWERED:
        _check(spark, text, answered=True)
    plan = spark.sql(ANSWERED[1])._jdf.queryExecution().optimizedPlan().toString()
    assert "default.mv_star" in plan and "default.sales" not in plan  # EXPLAIN shows the view's table
    for text in NEAR_MISSES:
        _check(spark, text, answered=False)

    _sales(spark, 2, 120)  # stale until REFRESH: the tables answer
    _check(spark, ANSWERED[0], answered=False)
    done = spark.sql("REFRESH MATERIALIZED VIEW mv_star").collect()[0]
    assert (done["Refresh"], done["Segments Aggregated"]) == ("incremental", "1")  # the new fact segment only
    assert _view_rows(spark) == _oracle(spark)
    for text in ANSWERED:
        _check(spark, text, answered=True)

    spark.sql("UPDATE stores SET region = 'west' WHERE store = 1")  # a dimension changed: stale
    state = views.view_status(_path(spark, "mv_star"))
    assert state.status == "stale" and "default.stores" in state.reason
    for text in ANSWERED:
        _check(spark, text, answered=False)
    assert spark.sql("REFRESH MATERIALIZED VIEW mv_star").collect()[0]["Refresh"] == "full"
    assert _view_rows(spark) == _oracle(spark)
    _check(spark, ANSWERED[1], answered=True)


def test_on_commit_show_and_drop_of_a_dimension_table(star):
    spark = star
    carbon_ds.sql(spark, f"CREATE MATERIALIZED VIEW mv_star AS {VIEW}")
    _sales(spark, 3, 50)  # a fact load refreshes the view at its commit
    assert _view_rows(spark) == _oracle(spark)
    spark.sql("INSERT INTO items VALUES ('q', 'w')")  # a dimension load too (in full: every group may change)
    assert _view_rows(spark) == _oracle(spark)
    _check(spark, ANSWERED[2], answered=True)
    shown = carbon_ds.sql(spark, "SHOW MATERIALIZED VIEWS ON TABLE sales").collect()
    assert [(r["Name"], r["Main Table"], r["Status"], r["Dimension Tables"]) for r in shown] == [
        ("default.mv_star", "default.sales", "enabled", "default.stores,default.items")]
    assert [r["Name"] for r in spark.sql("SHOW MATERIALIZED VIEWS ON TABLE stores").collect()] == ["default.mv_star"]
    spark.sql("DROP TABLE stores")  # the view could never be refreshed again: it goes with the table
    assert catalog.lookup(spark, table_name("mv_star")) is None
    assert spark.sql("SHOW MATERIALIZED VIEWS ON TABLE sales").collect() == []


@pytest.mark.parametrize(("query", "error", "message"), [
    (VIEW.replace("JOIN stores", "LEFT JOIN stores"), CarbonOptionError, "LEFT JOIN (only inner joins)"),
    (VIEW.replace("GROUP BY s.region", "GROUP BY region").replace("SELECT s.region", "SELECT region"),
     CarbonOptionError, "write each column as alias.column"),
    (VIEW.replace("f.store = s.store", "f.store < s.store"), CarbonOptionError, "the join condition"),
    (VIEW.replace("JOIN items i ON f.item = i.item", "JOIN stores i ON f.item = i.region"), CarbonTableError,
     "joined twice"),
    (VIEW.replace("GROUP BY", "WHERE f.qty > 0 GROUP BY"), CarbonOptionError, "WHERE in a view over a join"),
    (VIEW.replace("f.store = s.store", "f.store = s.shop"), CarbonSchemaError,
     "'shop' not in stores (a join key of the materialized view)"),
])
def test_refused_join_views(star, query, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        carbon_ds.sql(star, f"CREATE MATERIALIZED VIEW mv_star AS {query}")
    assert catalog.lookup(star, table_name("mv_star")) is None
