"""The 22 TPC-H queries through ``carbon_ds.sql`` over carbondata tables, and through plain ``spark.sql``
over ``USING carbondata`` views with the Catalyst extension on, give the rows Spark gives over Parquet copies
of the same data (SF 0.01 from DuckDB's dbgen; queries in benchmarks/tpch_queries.py).

The two sides run in two sessions of the shared SparkContext (``spark.newSession()``): each has its own
temporary views, so the same query text finds the carbondata tables on one side and the Parquet ones on
the other, and nothing leaks into the session other tests use."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

import carbon_ds  # noqa: E402

pytestmark = pytest.mark.spark

SF = 0.01
QUERIES_FILE = next(
    p / "benchmarks" / "tpch_queries.py"
    for p in Path(__file__).resolve().parents
    if (p / "benchmarks" / "tpch_queries.py").is_file()
)


def _load_queries():
    spec = importlib.util.spec_from_file_location("tpch_queries", QUERIES_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tpch = _load_queries()
_TARGETS: dict[str, str] = {}  # table name -> carbondata folder, filled by the sides fixture
if not tpch.has_generator():
    pytest.skip("TPC-H data needs tpchgen-cli (test extra) or the duckdb-extension-tpch wheel", allow_module_level=True)


@pytest.fixture(scope="module")
def sides(spark, tmp_path_factory):
    """(carbon session, parquet session): the TPC-H tables as carbondata tables registered through
    ``carbon_ds.sql`` in one, as Parquet temporary views in the other."""
    work = tmp_path_factory.mktemp("tpch")
    stage = tpch.generate(SF, str(work / "stage"), threads=2)
    carbon = spark.newSession()
    parquet = spark.newSession()
    carbon_ds.register(carbon)
    for name, path in stage.items():
        df = carbon.read.parquet(path)
        target = os.path.join(str(work), "carbondata", name)
        _TARGETS[name] = target
        df.write.format("carbondata").mode("overwrite").save(target)
        fields = [(f.name, f.dataType.simpleString()) for f in df.schema]
        carbon_ds.sql(carbon, tpch.carbon_create_sql(name, fields, target))
        parquet.read.parquet(path).createOrReplaceTempView(name)
    yield carbon, parquet
    for name in stage:
        carbon.catalog.dropTempView(name)
        parquet.catalog.dropTempView(name)


def test_tables_are_carbondata(sides):
    carbon, _parquet = sides
    for name in tpch.TABLES:
        plan = carbon.sql(f"EXPLAIN SELECT * FROM {name}").collect()[0][0].lower()
        assert "parquet" not in plan, f"{name} on the carbon side reads Parquet:\n{plan}"


@pytest.mark.parametrize("n", tpch.NUMBERS, ids=[f"q{n}" for n in tpch.NUMBERS])
@pytest.mark.slow
def test_query_matches_parquet(sides, n):
    carbon, parquet = sides
    text = tpch.query(n, SF)
    got = carbon_ds.sql(carbon, text).collect()
    want = parquet.sql(text).collect()
    equal, note = tpch.compare(got, want, tpch.ordered(text))
    assert equal, f"Q{n}: carbondata vs Parquet: {note}"


@pytest.fixture(scope="module")
def plain(ext, sides):  # sides: writes the tables and fills _TARGETS
    """A session whose TPC-H names are ``CREATE TEMPORARY VIEW ... USING carbondata`` views over the same
    tables, queried through plain ``spark.sql``: only the Catalyst extension prunes there."""
    session = ext.newSession()
    for name, target in _TARGETS.items():
        session.sql(f"CREATE TEMPORARY VIEW {name} USING carbondata OPTIONS (path '{target}')")
    yield session
    for name in _TARGETS:
        session.catalog.dropTempView(name)


@pytest.mark.parametrize("n", tpch.NUMBERS, ids=[f"q{n}" for n in tpch.NUMBERS])
def test_plain_spark_sql_matches_parquet(plain, sides, n):
    """The 22 queries through plain ``spark.sql`` over ``USING carbondata`` views, the extension on."""
    _carbon, parquet = sides
    text = tpch.query(n, SF)
    df = plain.sql(text)
    optimized = df._jdf.queryExecution().optimizedPlan().toString()
    assert "carbondata" in optimized.lower()
    got = df.collect()
    want = parquet.sql(text).collect()
    equal, note = tpch.compare(got, want, tpch.ordered(text))
    assert equal, f"Q{n}: plain spark.sql over carbondata views vs Parquet: {note}"


def _with_local_relations(carbon, n: int) -> tuple[list[tuple[str, str]], list]:
    """Query ``n`` through carbon_ds.sql with carbon_ds.sql.localRelationBytes set: ((scan class, first
    column) of each carbondata read in its optimized plan, its rows)."""
    carbon.conf.set("carbon_ds.sql.localRelationBytes", str(64 << 20))
    try:
        df = carbon_ds.sql(carbon, tpch.query(n, SF))
        optimized = df._jdf.queryExecution().optimizedPlan()
        leaves = [optimized.collectLeaves().apply(i) for i in range(optimized.collectLeaves().size())]
        scans = [(str(leaf.scan().getClass().getSimpleName()), str(leaf.output().apply(0).name()))
                 for leaf in leaves if leaf.getClass().getSimpleName() == "DataSourceV2ScanRelation"]
        return scans, df.collect()
    finally:
        carbon.conf.unset("carbon_ds.sql.localRelationBytes")


@pytest.mark.parametrize("n", [2, 11, 13, 16, 20, 22], ids=lambda n: f"q{n}")
def test_query_with_local_relations_matches_parquet(sides, n):
    """With carbon_ds.sql.localRelationBytes set, the small relations of a query are read on the driver
    and handed to Spark as local scans (at SF 0.01 every read of these queries gives at most the 40,000 rows
    read at planning: all of them; lineitem's 60,000 are not); the answer stays Parquet's."""
    carbon, parquet = sides
    scans, got = _with_local_relations(carbon, n)
    # every read is rows read at planning (a scan of them keeping the table's name), none a Python scan
    assert scans and {kind for kind, _c in scans} == {"ViewRows"}, scans
    text = tpch.query(n, SF)
    equal, note = tpch.compare(got, parquet.sql(text).collect(), tpch.ordered(text))
    assert equal, f"Q{n}: carbondata (local relations) vs Parquet: {note}"


def test_a_read_past_the_planning_rows_runs_as_tasks(sides):
    """Reads at planning stop at 40,000 rows (past that Spark's shipping of the rows costs more than a task):
    in Q5 at SF 0.01 lineitem's 60,000 rows are a Python scan, its five small relations local scans; the
    answer stays Parquet's."""
    carbon, parquet = sides
    scans, got = _with_local_relations(carbon, 5)
    assert [c for kind, c in scans if kind != "ViewRows"] == ["l_orderkey"], scans
    assert sum(kind == "ViewRows" for kind, _c in scans) == 5, scans
    text = tpch.query(5, SF)
    equal, note = tpch.compare(got, parquet.sql(text).collect(), tpch.ordered(text))
    assert equal, f"Q5: carbondata vs Parquet: {note}"
