"""Small carbondata reads in plain ``spark.sql`` (the extension on): read in the one planning call and planned
as a local table scan of the relation (jvm/src ViewRows, KnownRows), so a join of a large table to a small
one runs no Python task for the small one, as TPC-DS's dimension tables need.

The oracle is Spark's own Parquet reader over Parquet twins of the same rows (written by pyarrow, deleted
rows left out, an added Parquet segment's rows included), queried with the same text; the plan is read from
Spark's optimized and executed plans.
"""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from spark_confs import confs

import carbon_ds
from carbon_ds.spark.bridge.extension import extension_active, jar_path
from carbon_ds.table.table import CarbonTable

pytestmark = pytest.mark.spark

LOCAL_BYTES = "carbon_ds.sql.localRelationBytes"
LIMIT = str(64 << 10)  # the fact table's read is over it, every dimension's under it
FACT_ROWS = 20_000
ZONES = ("UTC", "America/Los_Angeles", "Asia/Kolkata")


def _dim(n: int, start: int = 0) -> pa.Table:
    ks = list(range(start, start + n))
    return pa.table({
        "k": pa.array(ks, pa.int32()),
        "name": [f"n{k}" if k % 7 else None for k in ks],
        "price": pa.array([Decimal(f"{k * 3}.{k % 100:02d}") for k in ks], pa.decimal128(9, 2)),
        "big": pa.array([Decimal(k) * Decimal("1234567890123.456789") for k in ks], pa.decimal128(30, 6)),
        "ts": pa.array([dt.datetime(2024, 3, 10, 1, 30, tzinfo=dt.UTC) + dt.timedelta(hours=7 * k)
                        for k in ks], pa.timestamp("us", tz="UTC")),
        "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=k % 40) for k in ks], pa.date32()),
        "region": [("east", "west", "north")[k % 3] for k in ks],
    })


def _fact() -> pa.Table:
    ids = list(range(FACT_ROWS))
    return pa.table({"id": pa.array(ids, pa.int64()), "k": pa.array([i % 60 for i in ids], pa.int32()),
                     "qty": pa.array([i % 13 for i in ids], pa.int64())})


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory):
    """``fact`` (20,000 rows, over LIMIT), and small dimensions of 60 keys: ``dim`` in two loads with a DELETE,
    ``mixed`` with an added Parquet segment, ``part`` partitioned by region; each with a Parquet twin
    (``*_pq``). Yields the folders."""
    if jar_path() is None:
        if os.environ.get("CI"):
            pytest.fail("the Spark extension jar was not built (scripts/setup.sh runs scripts/build-jvm.sh)")
        pytest.skip("the Spark extension jar is not built (needs a JDK: scripts/build-jvm.sh)")
    assert extension_active(spark)
    root = tmp_path_factory.mktemp("small_reads")
    paths = {t: str(root / t) for t in ("fact", "dim", "mixed", "part")}
    carbon_ds.write_table(_fact(), paths["fact"])
    carbon_ds.write_table(_dim(30), paths["dim"])
    carbon_ds.write_table(_dim(30, 30), paths["dim"])
    CarbonTable.open(paths["dim"]).delete("k >= 20 AND k < 35")
    carbon_ds.write_table(_dim(40), paths["mixed"])
    (root / "added").mkdir()
    pq.write_table(_dim(20, 40), root / "added" / "a.parquet")
    CarbonTable.open(paths["mixed"]).add_segment(str(root / "added"), format="parquet")
    carbon_ds.write_table(_dim(60), paths["part"], partition_by="region")
    whole = _dim(60)
    twins = {"fact": _fact(), "dim": whole.filter(pc.invert(pc.and_(pc.greater_equal(whole["k"], 20),
                                                                       pc.less(whole["k"], 35)))),
             "mixed": whole, "part": whole}
    for t, data in twins.items():
        pq.write_table(data, root / f"{t}.parquet")
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {t} USING carbondata OPTIONS (path '{paths[t]}')")
        spark.read.parquet(str(root / f"{t}.parquet")).createOrReplaceTempView(f"{t}_pq")
    try:
        with confs(spark, **{LOCAL_BYTES: LIMIT}):
            yield paths
    finally:
        for t in twins:
            spark.catalog.dropTempView(t)
            spark.catalog.dropTempView(f"{t}_pq")


JOIN = ("SELECT d.region, d.name, sum(f.qty) AS q, sum(d.price * f.qty) AS amount, max(d.big) AS big, "
        "min(d.ts) AS ts, date_format(max(d.ts), 'yyyy-MM-dd HH:mm') AS local_time, count(*) AS n "
        "FROM fact f JOIN {dim} d ON f.k = d.k WHERE d.day >= DATE'2024-01-05' GROUP BY d.region, d.name")


def _rows(df) -> list[str]:
    return sorted(repr(r) for r in df.collect())


def _scans(df) -> list[tuple[str, str]]:
    """(scan class, relation name) of each data source scan of ``df``'s optimized plan."""
    leaves = df._jdf.queryExecution().optimizedPlan().collectLeaves()
    out = []
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        if leaf.getClass().getSimpleName() == "DataSourceV2ScanRelation":
            out.append((str(leaf.scan().getClass().getSimpleName()), str(leaf.relation().name())))
    return out


def _local_scans(df) -> list[str]:
    """The relations of ``df`` planned from rows read at planning (a local table scan each)."""
    return [name for kind, name in _scans(df) if kind == "ViewRows"]


def _python_scans(df) -> int:
    """The carbondata scans of ``df`` that run Python tasks."""
    return sum(kind != "ViewRows" and name == "carbondata" for kind, name in _scans(df))


@pytest.mark.parametrize("dim", ["dim", "mixed", "part"])
def test_a_small_dimension_is_read_at_planning_and_broadcast(spark, tables, dim):
    """The join's small side is the relation with its rows (a local table scan, broadcast), the fact table
    the one Python scan; the rows are Parquet's in every session time zone (deletes, the added Parquet
    segment, partitions, decimals of both widths, timestamps). Past localRelationBytes the Python scan of the
    dimension comes back, with the same rows."""
    for zone in ZONES:
        with confs(spark, **{"spark.sql.session.timeZone": zone}):
            df = spark.sql(JOIN.format(dim=dim))
            assert _rows(df) == _rows(spark.sql(JOIN.format(dim=f"{dim}_pq"))), zone
            assert _local_scans(df) and _python_scans(df) == 1, _scans(df)
            plan = df._jdf.queryExecution().executedPlan().toString()
            assert "LocalTableScan" in plan and "BroadcastHashJoin" in plan, plan
    with confs(spark, **{LOCAL_BYTES: "1"}):
        df = spark.sql(JOIN.format(dim=dim))
        assert _local_scans(df) == [] and _python_scans(df) == 2
        assert _rows(df) == _rows(spark.sql(JOIN.format(dim=f"{dim}_pq")))
    with confs(spark, **{LOCAL_BYTES: "0"}):
        assert _python_scans(spark.sql(JOIN.format(dim=dim))) == 2


def test_a_change_to_a_small_table_is_seen_by_the_next_query(spark, tables, tmp_path):
    """Rows read at planning are those of the table when the query was planned: a load and a DELETE between
    two queries are in the second's rows (a read kept for an unchanged table is not reused for a changed one),
    and a DataFrame run again after them (Spark keeps its plan) reads the table as it is then. The oracle is
    the Parquet twin rewritten with the same change, and the rows written."""
    path = str(tmp_path / "changing")
    carbon_ds.write_table(_dim(10), path)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW changing USING carbondata OPTIONS (path '{path}')")
    query = JOIN.format(dim="changing")
    try:
        def check(data: pa.Table) -> None:
            pq.write_table(data, tmp_path / "twin.parquet")
            spark.read.parquet(str(tmp_path / "twin.parquet")).createOrReplaceTempView("changing_pq")
            df = spark.sql(query)
            assert _local_scans(df) and _python_scans(df) == 1
            assert _rows(df) == _rows(spark.sql(JOIN.format(dim="changing_pq")))

        kept = spark.sql("SELECT k, name, price, ts FROM changing WHERE k % 2 = 0")
        assert _local_scans(kept) and _python_scans(kept) == 0

        def kept_rows() -> list[tuple]:
            return sorted(tuple(r) for r in kept.collect())

        def want(data: pa.Table) -> list[tuple]:
            data = data.filter(pc.equal(pc.bit_wise_and(data["k"], 1), 0)).select(["k", "name", "price", "ts"])
            return sorted((r["k"], r["name"], r["price"], r["ts"].replace(tzinfo=None)) for r in data.to_pylist())

        with confs(spark, **{"spark.sql.session.timeZone": "UTC"}):
            assert kept_rows() == want(_dim(10))
        check(_dim(10))
        check(_dim(10))  # the kept read of the unchanged table
        carbon_ds.write_table(_dim(15, 10), path, mode="append")
        check(_dim(25))
        with confs(spark, **{"spark.sql.session.timeZone": "UTC"}):
            # the same DataFrame, run again: its scan finds the table changed and reads it as it is now
            assert kept_rows() == want(_dim(25))
        CarbonTable.open(path).delete("k < 5")
        check(_dim(20, 5))
        with confs(spark, **{"spark.sql.session.timeZone": "UTC"}):
            assert kept_rows() == want(_dim(20, 5))
    finally:
        spark.catalog.dropTempView("changing")
        spark.catalog.dropTempView("changing_pq")


def test_rows_read_at_planning_spread_over_the_cores_where_a_stage_streams_them(spark, tables):
    """A local scan a stage streams (here under an aggregation's shuffle) makes as many partitions as Spark's
    own local table scan: one per core up to one per row, so the stage is not run by one task. The rows are
    the Parquet twin's."""
    query = "SELECT region, count(*) AS n, sum(price) AS p FROM {dim} GROUP BY region"
    with confs(spark, **{"spark.sql.adaptive.enabled": "false"}):
        df = spark.sql(query.format(dim="dim"))
        assert _rows(df) == _rows(spark.sql(query.format(dim="dim_pq")))
        leaves = df._jdf.queryExecution().executedPlan().collectLeaves()
        scans = [leaves.apply(i) for i in range(leaves.size())
                 if leaves.apply(i).getClass().getSimpleName() == "CheckedLocalTableScanExec"]
        assert len(scans) == 1, df._jdf.queryExecution().executedPlan().toString()
        cores = spark.sparkContext.defaultParallelism
        assert cores >= 2 and scans[0].execute().getNumPartitions() == cores
