"""Spark filters never lose rows: the two stale-reuse reproductions from the notes (same DataFrame reused;
temporary view queried with then without a filter), a pushed filter on a fresh DataFrame, the `filter`
option as the exact per-relation path, and carbon_ds.read(spark, ...)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import carbon_ds
from carbon_ds.expressions import Compare
from carbon_ds.spark.session import read as spark_read
from carbon_ds.spark.source.batch_read import CarbonPushdownReader, CarbonReader
from carbon_ds.spark.source.read_options import PUSHDOWN_CONF, pushdown_is_safe

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def ten(tmp_path_factory):
    """10 rows x = 0..9 in two segments (two files), so pruning by x > 6 could drop a whole file."""
    path = tmp_path_factory.mktemp("ten") / "t"
    carbon_ds.write_table(pa.table({"x": list(range(5)), "y": ["a"] * 5}), path, sort_columns="x")
    carbon_ds.write_table(pa.table({"x": list(range(5, 10)), "y": ["b"] * 5}), path)
    return str(path)


@pytest.fixture(params=["false", "true"])
def pushdown_conf(request, spark):
    """Every reproduction runs with Spark's Python filter pushdown off and on."""
    old = spark.conf.get(PUSHDOWN_CONF, None)
    spark.conf.set(PUSHDOWN_CONF, request.param)
    yield request.param
    if old is None:
        spark.conf.unset(PUSHDOWN_CONF)
    else:
        spark.conf.set(PUSHDOWN_CONF, old)


def test_same_dataframe_reused(spark, ten, pushdown_conf):
    df = spark.read.format("carbondata").load(ten)
    assert df.filter("x > 6").count() == 3
    assert df.count() == 10
    assert df.filter("x < 2").count() == 2
    assert sorted(r.x for r in df.collect()) == list(range(10))


def test_temporary_view_with_then_without_filter(spark, ten, pushdown_conf):
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW ten_v USING carbondata OPTIONS (path '{ten}')")
    assert spark.sql("SELECT count(*) FROM ten_v WHERE x > 6").first()[0] == 3
    assert spark.sql("SELECT count(*) FROM ten_v").first()[0] == 10
    assert spark.sql("SELECT count(*) FROM ten_v WHERE y = 'a'").first()[0] == 5
    assert spark.sql("SELECT count(*) FROM ten_v").first()[0] == 10


def test_pushed_filter_on_fresh_dataframe(spark, ten, pushdown_conf):
    rows = spark.read.format("carbondata").load(ten).filter("x >= 8 AND y = 'b'").collect()
    assert sorted(r.x for r in rows) == [8, 9]


def test_filter_option_is_exact_and_per_relation(spark, ten):
    df = spark.read.format("carbondata").option("filter", "x > 6").load(ten)
    assert df.count() == 3  # exact on its own: no Spark filter involved
    assert df.filter("x < 8").count() == 1
    assert df.count() == 3
    full = spark.read.format("carbondata").load(ten)
    assert full.count() == 10


def test_read_helper_projects_and_filters(spark, ten):
    df = spark_read(spark, ten, columns=["X"], filter="x between 3 and 6 or y = 'b'")
    assert df.columns == ["x"]
    assert sorted(r.x for r in df.collect()) == list(range(3, 10))
    with pytest.raises(carbon_ds.CarbonOptionError, match="nope"):
        spark_read(spark, ten, filter="nope = 1")


def test_pushdown_only_where_safe():
    assert not pushdown_is_safe("4.1.1")
    assert not pushdown_is_safe("4.3.0")
    assert pushdown_is_safe("5.0.0")
    assert pushdown_is_safe("5.1.0.dev0")
    # the reader used on every current release must not override pushFilters (it would fail every read
    # while spark.sql.python.filterPushdown.enabled is false)
    from pyspark.sql.datasource import DataSourceReader

    assert CarbonReader.pushFilters is DataSourceReader.pushFilters
    assert CarbonPushdownReader.pushFilters is not DataSourceReader.pushFilters


def test_pushdown_reader_returns_every_filter(ten):
    from pyspark.sql.datasource import EqualTo, GreaterThan, StringEndsWith
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    schema = StructType([StructField("x", LongType()), StructField("y", StringType())])
    reader = CarbonPushdownReader(ten, schema, {})
    filters = [GreaterThan(("x",), 6), EqualTo(("y",), "b"), StringEndsWith(("y",), "b")]
    assert list(reader.pushFilters(filters)) == filters  # Spark keeps evaluating all of them
    assert Compare("x", ">", 6) in [reader.pushed.left, reader.pushed.right] or "x > 6" in str(reader.pushed)
    pieces = reader._plan()[1]
    assert len(pieces) == 1  # the x <= 4 segment is pruned
