"""carbon_ds.read of a HASH / RANGE / LIST table's partition column alone, answered from metadata
(carbon_ds.table.partitions.id_partition_values, carbon_ds.spark.source.partition_values).

Oracle: Spark's own Parquet reader over a Parquet twin of the same rows (written by pyarrow, the deleted
rows left out), queried with the same filter and grouping. NULLs and out-of-range values go to the DEFAULT
partition (index 0), as CarbonData's PartitionUtil puts them, so a table holding any makes the read fall
back to the data files; the answer must be the same either way.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

import carbon_ds
from carbon_ds.errors import CarbonOptionError
from carbon_ds.spark.bridge.extension import extension_active
from carbon_ds.spark.source.partition_values import CONF_PARTITION_VALUES
from carbon_ds.table.table import CarbonTable, ListPartition, RangePartition

pytestmark = pytest.mark.spark

ROWS = 3000
LOCAL_BYTES = "carbon_ds.sql.localRelationBytes"


def _made(tmp_path, partition, hours: pa.Array) -> tuple[str, str]:
    """A partitioned carbon table of (id, hour, v) in three loads, ids 100-399 deleted, and its Parquet twin."""
    path, twin = str(tmp_path / "t"), str(tmp_path / "twin.parquet")
    rng = np.random.default_rng(3)
    data = pa.table({"id": pa.array(range(ROWS), pa.int64()), "hour": hours, "v": pa.array(rng.random(ROWS))})
    CarbonTable.create(path, data.schema, partition=partition)
    for k in range(3):
        carbon_ds.write_table(data.slice(k * 1000, 1000), path)
    CarbonTable.open(path).delete("id >= 100 AND id < 400")
    pq.write_table(data.filter(pc.invert(pc.and_(pc.greater_equal(data["id"], 100), pc.less(data["id"], 400)))),
                   twin)
    return path, twin


def _by_hour(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.groupBy("hour").count().collect()), key=lambda r: (r[0] is None, r))


@pytest.fixture(autouse=True)
def _no_local_reads(spark):
    """Small reads are not done on the driver here (carbon_ds.spark.local), so a local relation in a plan is
    one made from metadata: the counts of each value, or no row."""
    spark.conf.set(LOCAL_BYTES, "0")
    try:
        yield
    finally:
        spark.conf.unset(LOCAL_BYTES)


def _from_metadata(df) -> bool:
    """No carbondata relation: a range of the rows, or a local relation (the counts by value, or no row)."""
    plan = df._jdf.queryExecution().optimizedPlan().toString()
    return ("Range (0," in plan or "LocalRelation" in plan) and "carbondata" not in plan.lower()


def _counted(df) -> bool:
    """Counted by value from metadata: no row made, no file read."""
    plan = df._jdf.queryExecution().optimizedPlan().toString()
    return "LocalRelation" in plan and "Range" not in plan and "carbondata" not in plan.lower()


def test_range_partition_column_counts_from_metadata(spark, tmp_path):
    hours = pa.array(np.random.default_rng(1).integers(0, 24, ROWS), pa.int32())
    path, twin = _made(tmp_path, RangePartition("hour", tuple(range(1, 25))), hours)
    parquet = spark.read.parquet(twin)
    df = carbon_ds.read(spark, path, columns=["hour"])
    assert _from_metadata(df)
    assert _by_hour(df) == _by_hour(parquet.select("hour"))
    assert df.count() == ROWS - 300

    rnd = random.Random(11)  # seeded random filters on the partition column against the Parquet twin
    for _ in range(12):
        a, b = sorted(rnd.sample(range(-2, 27), 2))
        listed = ", ".join(str(rnd.randrange(-1, 25)) for _ in range(rnd.randrange(1, 5)))
        text = rnd.choice([f"hour >= {a} AND hour < {b}", f"hour IN ({listed})", f"hour = {a}",
                           f"NOT (hour BETWEEN {a} AND {b})", f"hour > {b} OR hour <= {a}"])
        df = carbon_ds.read(spark, path, columns=["hour"], filter=text)
        assert _from_metadata(df), text
        assert _by_hour(df) == _by_hour(parquet.select("hour").where(text)), text

    spark.conf.set(CONF_PARTITION_VALUES, "false")
    try:
        df = carbon_ds.read(spark, path, columns=["hour"])
        assert not _from_metadata(df)
        assert _by_hour(df) == _by_hour(parquet.select("hour"))
    finally:
        spark.conf.unset(CONF_PARTITION_VALUES)
    spark.conf.set(CONF_PARTITION_VALUES, "no")  # read like every boolean conf: a typo is named, not guessed
    try:
        with pytest.raises(CarbonOptionError, match=f"spark conf {CONF_PARTITION_VALUES} must be true or false"):
            carbon_ds.read(spark, path, columns=["hour"])
    finally:
        spark.conf.unset(CONF_PARTITION_VALUES)


def test_partitions_that_may_hold_several_values_are_read(spark, tmp_path):
    # NULLs and values past the last bound (DEFAULT), and a first range unbounded below holding -3..0
    rng = np.random.default_rng(2)
    hours = pa.array([None if rng.random() < 0.03 else int(x) for x in rng.integers(-3, 30, ROWS)], pa.int32())
    path, twin = _made(tmp_path, RangePartition("hour", tuple(range(1, 25))), hours)
    parquet = spark.read.parquet(twin).select("hour")
    df = carbon_ds.read(spark, path, columns=["hour"])
    assert not _from_metadata(df)
    assert _by_hour(df) == _by_hour(parquet)
    # the range unbounded below holds several values: read; one-wide ranges alone: from metadata
    for text, known in (("hour < 1", False), ("hour >= 5 AND hour < 9", True), ("hour IS NULL", False)):
        df = carbon_ds.read(spark, path, columns=["hour"], filter=text)
        assert _from_metadata(df) is known, text
        assert _by_hour(df) == _by_hour(parquet.where(text)), text
    both = carbon_ds.read(spark, path, columns=["hour", "v"], filter="hour = 7")  # another column: read
    assert not _from_metadata(both)
    assert both.count() == parquet.where("hour = 7").count()


def test_list_partitions_of_one_value_from_metadata(spark, tmp_path):
    rng = np.random.default_rng(4)
    hours = pa.array(rng.choice([1, 2, 3, 4, 5], ROWS), pa.int32())
    path, twin = _made(tmp_path, ListPartition("hour", (1, 2, (3, 4), 5)), hours)
    parquet = spark.read.parquet(twin).select("hour")
    df = carbon_ds.read(spark, path, columns=["hour"])
    assert not _from_metadata(df)  # the files of (3, 4) hold both values
    assert _by_hour(df) == _by_hour(parquet)
    df = carbon_ds.read(spark, path, columns=["hour"], filter="hour IN (1, 5)")
    assert _from_metadata(df)
    assert _by_hour(df) == _by_hour(parquet.where("hour IN (1, 5)"))


def test_plain_spark_sql_through_the_extension(ext, tmp_path):
    spark = ext
    """With the Catalyst extension, plain spark.sql and DataFrame calls over the table get the same answer
    from the one planning call (jvm/src KnownRows), and the kept plan of a repeated query follows a DELETE."""
    hours = pa.array(np.random.default_rng(5).integers(0, 24, ROWS), pa.int32())
    path, twin = _made(tmp_path, RangePartition("hour", tuple(range(1, 25))), hours)
    spark.read.parquet(twin).createOrReplaceTempView("pv_twin")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW pv USING carbondata OPTIONS (path '{path}')")
    try:
        for where in ("", "WHERE hour >= 5 AND hour < 9", "WHERE hour IN (3, 30)", "WHERE hour > 100"):
            q = f"SELECT hour, count(*) FROM {{}} {where} GROUP BY hour"
            df = spark.sql(q.format("pv"))
            assert _from_metadata(df), where
            assert sorted(map(tuple, df.collect())) == sorted(map(tuple, spark.sql(q.format("pv_twin")).collect()))
        both = spark.sql("SELECT hour, max(v) FROM pv GROUP BY hour")
        assert not _from_metadata(both)
        assert sorted(map(tuple, both.collect())) == sorted(
            map(tuple, spark.sql("SELECT hour, max(v) FROM pv_twin GROUP BY hour").collect()))
        loaded = spark.read.format("carbondata").load(path).groupBy("hour").count()
        assert _from_metadata(loaded)
        assert sorted(map(tuple, loaded.collect())) == sorted(
            map(tuple, spark.sql("SELECT hour, count(*) FROM pv_twin GROUP BY hour").collect()))

        CarbonTable.open(path).delete("hour = 7")
        df = spark.sql("SELECT hour, count(*) FROM pv GROUP BY hour")
        assert 7 not in {r[0] for r in df.collect()}
        assert sum(r[1] for r in df.collect()) == spark.sql("SELECT count(*) FROM pv_twin WHERE hour <> 7").first()[0]
    finally:
        spark.catalog.dropTempView("pv")
        spark.catalog.dropTempView("pv_twin")


@pytest.mark.parametrize("kind", ["date", "decimal"])
def test_date_and_decimal_partition_values(spark, tmp_path, kind):
    """LIST partitions of one date / decimal each: both routes give Spark's answer over the Parquet twin."""
    rng = np.random.default_rng(6)
    if kind == "date":
        values = [dt.date(2024, 1, 1) + dt.timedelta(days=int(i)) for i in rng.integers(0, 3, ROWS)]
        col, listed = pa.array(values, pa.date32()), ("2024-01-01", "2024-01-02", "2024-01-03")
    else:
        values = [Decimal(("1.50", "2.25", "-7.00")[i]) for i in rng.integers(0, 3, ROWS)]
        col, listed = pa.array(values, pa.decimal128(5, 2)), ("1.50", "2.25", "-7.00")
    path, twin = _made(tmp_path, ListPartition("hour", listed), col)
    spark.read.parquet(twin).createOrReplaceTempView("pv_typed_twin")
    want = sorted(map(tuple, spark.sql("SELECT hour, count(*) FROM pv_typed_twin GROUP BY hour").collect()))
    df = carbon_ds.read(spark, path, columns=["hour"])
    assert _from_metadata(df)
    assert _by_hour(df) == want
    if extension_active(spark):
        loaded = spark.read.format("carbondata").load(path).groupBy("hour").count()
        assert _from_metadata(loaded)
        assert sorted(map(tuple, loaded.collect())) == want
    spark.catalog.dropTempView("pv_typed_twin")


def test_counts_by_value_need_no_row(ext, tmp_path):
    spark = ext
    """With the extension, counting rows by the partition column is answered with the counts themselves (jvm/src
    KnownRows): a local relation of one row per value. Any other aggregate of the column gets the rows made
    from metadata and Spark's own aggregate. Both against Spark over the Parquet twin."""
    hours = pa.array(np.random.default_rng(8).integers(0, 24, ROWS), pa.int32())
    path, twin = _made(tmp_path, RangePartition("hour", tuple(range(1, 25))), hours)
    parquet = spark.read.parquet(twin)
    for flt in (None, "hour >= 17 AND hour < 20", "hour > 100"):
        df = carbon_ds.read(spark, path, columns=["hour"], filter=flt)
        pq_df = parquet.select("hour").where(flt) if flt else parquet.select("hour")
        for make, counted in ((lambda d: d.groupBy("hour").count(), True),
                              (lambda d: d.groupBy("hour").agg(F.count("hour").alias("n"), F.count(F.lit(1))), True),
                              (lambda d: d.groupBy("hour").agg(F.max("hour")), False),
                              (lambda d: d.agg(F.countDistinct("hour")), False),
                              (lambda d: d.groupBy((F.col("hour") % 2).alias("odd")).count(), False)):
            got = make(df)
            # no value matching: Spark's own optimizer makes every aggregate an empty local relation
            assert _counted(got) is (counted or flt == "hour > 100"), flt
            assert _from_metadata(got)
            assert sorted(map(tuple, got.collect())) == sorted(map(tuple, make(pq_df).collect())), flt
    df = carbon_ds.read(spark, path, columns=["hour"]).groupBy("hour").count()
    CarbonTable.open(path).delete("hour = 18")  # made before the delete, answered when it runs
    assert 18 not in {r[0] for r in df.collect()}
    assert sum(r[1] for r in df.collect()) == parquet.where("hour <> 18").count()
