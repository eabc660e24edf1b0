"""storage_options through the Spark data source: options ``storage.<name>`` reach carbon_ds.fs.resolve in
the driver and in every Python worker (planning, tasks, commit), against a local S3 API (moto) that nothing
reaches without those options (no AWS_* variable names it)."""

from __future__ import annotations

import pytest

import carbon_ds
from carbon_ds import fs

pytest.importorskip("pyspark")


def _storage(endpoint: str) -> dict[str, str]:
    return {"storage.access_key": "k", "storage.secret_key": "s", "storage.region": "us-east-1",
            "storage.endpoint_url": endpoint}


def test_spark_reads_and_writes_s3_with_storage_options(spark, moto_s3, monkeypatch):
    monkeypatch.setattr(fs, "_configured", {})  # the driver remembers nothing from other tests
    path, opts = "s3://opts/spark_t", _storage(moto_s3)
    rows = [(i, f"s{i}") for i in range(20)]
    df = spark.createDataFrame(rows, "id long, s string")
    df.write.format("carbondata").options(**opts).mode("append").save(path)
    df.where("id >= 10").write.format("carbondata").options(**opts).mode("append").save(path)

    # the oracle: pyarrow's own S3 file system lists the files Spark's workers wrote
    s3 = fs.pafs.S3FileSystem(endpoint_override=moto_s3.split("://")[1], scheme="http", access_key="k",
                              secret_key="s", region="us-east-1")
    written = [i.path for i in s3.get_file_info(fs.pafs.FileSelector("opts/spark_t", recursive=True))
               if i.path.endswith(".carbondata")]
    assert len(written) >= 2

    got = spark.read.format("carbondata").options(**opts).load(path)
    assert sorted(tuple(r) for r in got.collect()) == sorted(rows + rows[10:])
    counted = spark.read.format("carbondata").options(**opts).option("filter", "id < 5").load(path)
    assert counted.count() == 5
    settings = {k.removeprefix("storage."): v for k, v in opts.items()}
    assert carbon_ds.read(spark, path, columns=["s"], filter="id = 15", storage_options=settings
                          ).collect()[0].s == "s15"


def test_a_bad_storage_option_names_the_valid_ones(spark, moto_s3):
    with pytest.raises(Exception, match="unknown storage option") as e:
        spark.read.format("carbondata").option("storage.acess_key", "k").load("s3://opts/nothing")
    assert "valid: access_key" in str(e.value)
