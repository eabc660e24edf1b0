"""Spark writes refuse a folder holding another dataset: a Hive-partitioned Parquet folder written by Spark
itself stays exactly as it was (its listing), and Spark's Parquet reader and pyarrow still read its rows."""

from __future__ import annotations

from pathlib import Path

import pyarrow.dataset as ds
import pytest

import carbon_ds

pytest.importorskip("pyspark")
from pyspark.errors import StreamingQueryException  # noqa: E402

WAIT = 180


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if not p.name.endswith(".crc"))


@pytest.fixture
def parquet_folder(spark, tmp_path) -> Path:
    folder = tmp_path / "events"
    (spark.range(6).selectExpr("id", "cast(id % 2 + 1 as int) AS day")
     .write.partitionBy("day").parquet(str(folder)))
    return folder


def assert_untouched(spark, folder: Path, before: list[str]) -> None:
    assert listing(folder) == before
    assert not any((folder / d).exists() for d in ("Metadata", "Fact", "LockFiles"))
    assert sorted(r.id for r in spark.read.parquet(str(folder)).collect()) == list(range(6))
    assert ds.dataset(folder, format="parquet", partitioning="hive").count_rows() == 6


def refusal(folder: Path) -> str:
    return rf"cannot create a CarbonData table in {folder}: the folder holds 3 entries: _SUCCESS, day=1/, day=2/"


@pytest.mark.parametrize("mode", ["append", "overwrite"])
def test_dataframe_write_refuses_a_parquet_folder(spark, parquet_folder, mode):
    before = listing(parquet_folder)
    df = spark.range(3).selectExpr("id", "cast(1 as int) AS day")
    with pytest.raises(Exception, match=refusal(parquet_folder)):
        df.write.format("carbondata").mode(mode).save(str(parquet_folder))
    assert_untouched(spark, parquet_folder, before)


def test_carbon_ds_write_refuses_a_parquet_folder(spark, parquet_folder):
    before = listing(parquet_folder)
    with pytest.raises(Exception, match=refusal(parquet_folder)):
        carbon_ds.write(spark.range(3).selectExpr("id", "cast(1 as int) AS day"), parquet_folder)
    assert_untouched(spark, parquet_folder, before)


def test_stream_sink_refuses_a_parquet_folder(spark, parquet_folder, tmp_path):
    before = listing(parquet_folder)
    rate = spark.readStream.format("rate").option("rowsPerSecond", 1).load()
    query = (rate.selectExpr("value AS id", "cast(1 as int) AS day").writeStream.format("carbondata")
             .option("checkpointLocation", str(tmp_path / "ck")).start(str(parquet_folder)))
    try:
        with pytest.raises(StreamingQueryException, match=refusal(parquet_folder)):
            query.awaitTermination(WAIT)
    finally:
        query.stop()
    assert_untouched(spark, parquet_folder, before)


def test_an_empty_folder_spark_made_is_written_to(spark, tmp_path):
    folder = tmp_path / "new"
    folder.mkdir()
    spark.range(3).write.format("carbondata").mode("append").save(str(folder))
    assert carbon_ds.read_table(folder).num_rows == 3
