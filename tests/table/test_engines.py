"""Polars and DuckDB over carbon-ds equal the pyarrow oracle; pandas, Polars and DuckDB results write back."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import carbon_ds
from carbon_ds.duckdb import register

pl = pytest.importorskip("polars")
from carbon_ds.polars import scan_carbondata  # noqa: E402


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("engines") / "t")
    for seed in range(3):
        n = 200
        carbon_ds.write_table(pa.table({
            "id": pa.array(range(seed * 1000, seed * 1000 + n), pa.int64()),
            "k": pa.array([(i * 7) % 40 for i in range(n)], pa.int32()),
            "s": [None if i % 11 == 0 else f"v{i % 5}" for i in range(n)],
        }), path, sort_columns="k")
    return path


def test_polars_projection_predicate_and_limit(table):
    full = carbon_ds.read_table(table)
    lf = scan_carbondata(table)
    got = lf.filter((pl.col("k") > 30) & pl.col("s").is_not_null()).select(["s", "id"]).collect()
    mask = pc.and_(pc.greater(full["k"], 30), pc.is_valid(full["s"]))
    expected = full.filter(mask).select(["s", "id"])
    assert got.to_arrow().cast(expected.schema).equals(expected)
    assert scan_carbondata(table).head(5).collect().height == 5
    pruned = scan_carbondata(table, filter=pc.field("id") >= 2000).select("id").collect()
    assert pruned["id"].to_list() == [i for i in full["id"].to_pylist() if i >= 2000]


def test_duckdb_queries_equal_oracle(table):
    full = carbon_ds.read_table(table)
    con = duckdb.connect()
    register(con, "t", table)
    got = con.sql("select id, s from t where k between 5 and 9 order by id").arrow()
    got = got.read_all() if isinstance(got, pa.RecordBatchReader) else got
    mask = pc.and_(pc.greater_equal(full["k"], 5), pc.less_equal(full["k"], 9))
    expected = full.filter(mask).select(["id", "s"]).sort_by("id")
    assert got.cast(expected.schema).equals(expected)
    assert con.sql("select count(*) from t").fetchone()[0] == full.num_rows  # re-readable
    register(con, "recent", table, columns=["id"], filter="id >= 1000")
    assert con.sql("select count(*) from recent").fetchone()[0] == 400


def test_write_table_takes_engine_results(table, tmp_path):
    full = carbon_ds.read_table(table, columns=["id", "k"])
    con = duckdb.connect()
    register(con, "t", table)
    carbon_ds.write_table(con.sql("select id, k from t where k < 10"), str(tmp_path / "from_duckdb"))
    carbon_ds.write_table(scan_carbondata(table).select(["id", "k"]).collect(), str(tmp_path / "from_polars"))
    carbon_ds.write_table(pa.Table.from_pandas(carbon_ds.scan(table, ["id", "k"]).to_pandas()),
                          str(tmp_path / "from_pandas"))
    small = full.filter(pc.less(full["k"], 10))
    assert carbon_ds.read_table(str(tmp_path / "from_duckdb")).sort_by("id").cast(small.schema).equals(
        small.sort_by("id"))
    assert carbon_ds.read_table(str(tmp_path / "from_polars")).cast(full.schema).equals(full)
    assert carbon_ds.read_table(str(tmp_path / "from_pandas")).cast(full.schema).equals(full)
