"""The 99 TPC-DS queries through plain ``spark.sql`` over ``USING carbondata`` views, with the Catalyst
extension on, give the rows Spark's own Parquet reader gives over the same data (SF 0.01 from DuckDB's
dsdgen, DuckDB's query texts with the dialect rewrites of benchmarks/tpcds_data.py).

The two sides run in two sessions of the shared SparkContext (``spark.newSession()``), each with its own
temporary views under the plain TPC-DS names. A query Spark cannot run over Parquet must be listed in
``tpcds_data.UNSUPPORTED`` (so the list stays true).

The suite runs ``SAMPLE``, queries of every shape (star joins, EXISTS / NOT EXISTS, rollups, window
functions, many scans of one fact table, the dialect rewrites); ``CARBON_DS_TPCDS=all`` runs all 99 (about
five minutes on 2 cores), as benchmarks/tpcds.py compares every result at any scale."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import carbon_ds

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SF = 0.01
BENCHMARKS = next(p / "benchmarks" for p in Path(__file__).resolve().parents
                  if (p / "benchmarks" / "tpcds_data.py").is_file())


def _load(name: str):
    if str(BENCHMARKS) not in sys.path:  # tpcds_data imports its sibling tpch_queries
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ds = _load("tpcds_data")
if not ds.has_generator():
    if os.environ.get("CI"):  # scripts/setup.sh installs it: its absence in CI is a failure, not a skip
        pytest.fail("DuckDB 1.5.5 with duckdb-extension-tpcds is not installed (scripts/setup.sh)",
                    pytrace=False)
    pytest.skip("TPC-DS data needs DuckDB 1.5.5 with duckdb-extension-tpcds (scripts/setup.sh installs both)",
                allow_module_level=True)

SAMPLE = (3, 7, 9, 14, 16, 25, 27, 32, 36, 47, 50, 64, 72, 78, 95)
CHOSEN = ds.NUMBERS if os.environ.get("CARBON_DS_TPCDS", "").lower() == "all" else SAMPLE
# query -> why carbon-ds gives other rows than Spark's Parquet reader (a known defect, not yet fixed)
KNOWN_DIFFERENCES: dict[int, str] = {}


@pytest.fixture(scope="module")
def sides(spark, tmp_path_factory):
    """(carbon session, parquet session, query texts)."""
    work = tmp_path_factory.mktemp("tpcds")
    stage = ds.generate(SF, str(work / "stage"), threads=2)
    carbon, parquet = spark.newSession(), spark.newSession()
    carbon_ds.register(carbon)
    for name, path in stage.items():
        target = os.path.join(str(work), "carbondata", name)
        carbon_ds.write_table(pq.read_table(path), target, mode="overwrite")
        carbon.sql(f"CREATE OR REPLACE TEMPORARY VIEW {name} USING carbondata OPTIONS (path '{target}')")
        parquet.read.parquet(path).createOrReplaceTempView(name)
    yield carbon, parquet, ds.queries(str(work / "stage"))
    for name in stage:
        carbon.catalog.dropTempView(name)
        parquet.catalog.dropTempView(name)


def test_tables_are_carbondata(sides):
    carbon, _parquet, _texts = sides
    for name in ds.TABLES:
        plan = carbon.sql(f"EXPLAIN SELECT * FROM {name}").collect()[0][0].lower()
        assert "parquet" not in plan, f"{name} on the carbon side reads Parquet:\n{plan}"


def _case(n: int):
    marks = []
    if n in ds.UNSUPPORTED:
        marks.append(pytest.mark.skip(reason=f"Spark cannot run it: {ds.UNSUPPORTED[n]}"))
    elif n in KNOWN_DIFFERENCES:
        marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_DIFFERENCES[n]))
    return pytest.param(n, id=f"q{n}", marks=marks)


@pytest.mark.parametrize("n", [_case(n) for n in CHOSEN])
def test_query_matches_parquet(sides, n):
    carbon, parquet, texts = sides
    text = ds.spark_text(texts[n])
    want = parquet.sql(text).collect()
    got = carbon.sql(text).collect()
    equal, note = ds.compare(got, want, ds.ordered_limit(text))
    assert equal, f"Q{n}: carbondata vs Parquet: {note}"
