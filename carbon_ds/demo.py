"""The quick-start demo: a vehicle-telemetry CarbonData table written and read with and without Spark.

Run with `bash scripts/demo.sh` (sets everything up first) or `python -m carbon_ds.demo [--rows N] [--out DIR]`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from contextlib import contextmanager

import pyarrow.compute as pc

import carbon_ds
from carbon_ds import telemetry


@contextmanager
def step(title: str):
    print(f">> {title} ...", flush=True)
    t0 = time.perf_counter()
    yield
    print(f"   done in {time.perf_counter() - t0:.1f}s", flush=True)


def spark_session():
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        print(
            "!! Java 17+ is not installed, so the Spark part of the demo is skipped.\n"
            "   Install it (e.g. 'apt-get install openjdk-17-jre-headless') and run the demo again.",
            file=sys.stderr,
        )
        return None
    from pyspark.sql import SparkSession

    # Spark's Python workers must run this interpreter, which has carbon-ds and pyarrow installed
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("carbon-ds-demo")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    carbon_ds.register(spark)
    return spark


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=300_000, help="rows per load (default 300000)")
    ap.add_argument("--out", default="demo-output/telemetry", help="table folder (replaced)")
    args = ap.parse_args(argv)
    path = os.path.abspath(args.out)
    shutil.rmtree(path, ignore_errors=True)

    with step(f"generating {args.rows:,} telemetry rows (VIN, timestamp, 20 dimensions, 10 measures)"):
        first = telemetry.table(args.rows, seed=1)
    with step(f"first load without Spark: carbon_ds.write_table -> {path}"):
        carbon_ds.write_table(first, path, mode="overwrite", sort_columns="vin,ts")

    spark = spark_session()
    if spark is not None:
        for i in (2, 3):
            with step(f"append #{i - 1} through Spark: df.write.format('carbondata').mode('append')"):
                df = spark.createDataFrame(telemetry.table(args.rows, seed=i)).coalesce(2)
                df.write.format("carbondata").mode("append").option("sort_columns", "vin,ts").save(path)
        with step("reading with Spark: spark.read.format('carbondata').load(path)"):
            df = spark.read.format("carbondata").load(path)
            print(f"   rows: {df.count():,}")
            top = df.groupBy("brand").avg("speed").orderBy("brand").limit(4).collect()
            for r in top:
                print(f"   {r['brand']:<8} avg speed {r['avg(speed)']:.2f}")
    else:
        with step("append #1 and #2 without Spark"):
            for i in (2, 3):
                carbon_ds.write_table(telemetry.table(args.rows, seed=i), path, mode="append", sort_columns="vin,ts")

    with step("reading with pure Python: carbon_ds.read_table(path)"):
        tbl = carbon_ds.read_table(path)
        charging = pc.sum(pc.equal(tbl["charge_state"], "charging")).as_py()
        print(f"   rows: {tbl.num_rows:,}; columns: {tbl.num_columns}; rows while charging: {charging:,}")
    print(">> SHOW SEGMENTS (from Metadata/tablestatus):")
    print(carbon_ds.CarbonTable.open(path).show_segments())
    if spark is not None:
        spark.stop()
    print(f">> the table is at {path}; inspect a file with: carbon-ds inspect {path}/Fact/Part0/Segment_0/*.carbondata")
    return 0


if __name__ == "__main__":
    sys.exit(main())
