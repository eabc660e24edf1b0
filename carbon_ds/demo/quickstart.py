"""The quick-start demo: a vehicle-telemetry CarbonData table written and read with and without Spark.

Run with `bash scripts/demo.sh` (sets everything up first) or `python -m carbon_ds.demo [--rows N] [--out DIR]`.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager

import pyarrow.compute as pc

import carbon_ds
from carbon_ds.demo import telemetry


@contextmanager
def step(title: str):
    print(f">> {title} ...", flush=True)
    t0 = time.perf_counter()
    yield
    print(f"   done in {time.perf_counter() - t0:.1f}s", flush=True)


MARKER = ".carbon-ds-demo"  # written into the table folder the demo creates: only such a folder is replaced


def prepare_out(path: str) -> None:
    """Make ``path`` ready for a new demo table: absent or empty is fine, an earlier demo table is removed,
    anything else is refused (the demo never deletes a folder it did not create)."""
    if not os.path.exists(path):
        return
    if not os.path.isdir(path):
        raise SystemExit(f"--out {path} is a file; give a folder the demo may create")
    if not os.listdir(path):
        return
    if not os.path.isfile(os.path.join(path, MARKER)):
        raise SystemExit(f"--out {path} is a non-empty folder the demo did not create; refusing to replace it. "
                         "Give a new or empty folder.")
    shutil.rmtree(path)


def java_major() -> int | None:
    """The major version of the ``java`` Spark would start (JAVA_HOME first), None when there is none."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.exists(java):
        return None
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if m is None:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


def _quiet_log_config() -> str:
    """A log4j2 configuration that lets only errors through, so Spark's startup warnings do not drown
    the demo's own lines."""
    path = os.path.join(tempfile.gettempdir(), "carbon-ds-demo-log4j2.properties")
    with open(path, "w") as f:
        f.write("rootLogger.level = error\nrootLogger.appenderRef.stderr.ref = console\n"
                "appender.console.type = Console\nappender.console.name = console\n"
                "appender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\n"
                "appender.console.layout.pattern = %p %c{1}: %m%n\n")
    return path


def spark_session():
    major = java_major()
    if major is None or major < 17:
        found = "is not installed" if major is None else f"is version {major}"
        print(
            f"!! Java {found}; Spark 4 needs Java 17 or newer, so the Spark part of the demo is skipped.\n"
            "   Install it (e.g. 'apt-get install openjdk-17-jre-headless') and run the demo again.",
            file=sys.stderr,
        )
        return None
    from pyspark.sql import SparkSession

    # Spark's Python workers must run this interpreter, which has carbon-ds and pyarrow installed
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    log_conf = f"-Dlog4j2.configurationFile=file:{_quiet_log_config()}"
    # with the Catalyst extension (built by scripts/setup.sh) every Spark query prunes, not only carbon_ds.sql
    spark = (
        carbon_ds.configure_spark(SparkSession.builder).master("local[2]")
        .appName("carbon-ds-demo")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", log_conf)
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    carbon_ds.register(spark)
    return spark


def cli_command() -> str:
    """How to call this environment's ``carbon-ds`` from the current folder."""
    exe = os.path.join(os.path.dirname(sys.executable), "carbon-ds")
    if shutil.which("carbon-ds") == exe:
        return "carbon-ds"
    rel = os.path.relpath(exe)
    return rel if not rel.startswith("..") else exe


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=300_000, help="rows per load (default 300000)")
    ap.add_argument("--out", default="demo-output/telemetry",
                    help="table folder: new, empty, or an earlier demo table (which is replaced)")
    args = ap.parse_args(argv)
    path = os.path.abspath(args.out)
    prepare_out(path)

    with step(f"generating {args.rows:,} telemetry rows (VIN, timestamp, 20 dimensions, 10 measures)"):
        first = telemetry.table(args.rows, seed=1)
    with step(f"first load without Spark: carbon_ds.write_table -> {path}"):
        carbon_ds.write_table(first, path, mode="overwrite", sort_columns="vin,ts")
        with open(os.path.join(path, MARKER), "w") as f:
            f.write("created by the carbon-ds demo; the demo may replace this folder\n")

    spark = spark_session()
    if spark is not None:
        for i in (2, 3):
            with step(f"append #{i - 1} through Spark: df.write.format('carbondata').mode('append')"):
                df = spark.createDataFrame(telemetry.table(args.rows, seed=i)).coalesce(2)
                df.write.format("carbondata").mode("append").save(path)
        with step("reading with Spark: spark.read.format('carbondata').load(path)"):
            df = spark.read.format("carbondata").load(path)
            print(f"   rows: {df.count():,}")
            top = df.groupBy("brand").avg("speed").orderBy("brand").limit(4).collect()
            for r in top:
                print(f"   {r['brand']:<8} avg speed {r['avg(speed)']:.2f}")
    else:
        with step("append #1 and #2 without Spark"):
            for i in (2, 3):
                carbon_ds.write_table(telemetry.table(args.rows, seed=i), path, mode="append")

    with step("reading with pure Python: carbon_ds.read_table(path)"):
        tbl = carbon_ds.read_table(path)
        charging = pc.sum(pc.equal(tbl["charge_state"], "charging")).as_py()
        print(f"   rows: {tbl.num_rows:,}; columns: {tbl.num_columns}")
        print(f"   rows recorded while the vehicle was charging (charge_state = 'charging'): {charging:,}")
    table = carbon_ds.CarbonTable.open(path)
    with step("counting rows from metadata alone: CarbonTable.open(path).count()"):
        print(f"   rows: {table.count():,} (from the index files' row counts; no data page read)")
    vin = tbl["vin"][0].as_py()
    where = f"vin = '{vin}'"
    with step(f"a filtered read on the sort column: read_table(path, filter=\"{where}\")"):
        hits = carbon_ds.read_table(path, columns=["vin", "ts", "speed"], filter=where)
        report = carbon_ds.explain(path, where)
        b, pg = report["blocklets"], report["pages"]
        print(f"   rows: {hits.num_rows:,}; blocklets read {b['read']} of {b['total']}, pages read {pg['read']} "
              f"of {pg['total']}, rows decoded {report['rows']['read']:,} of {report['rows']['total']:,}")
        print("   (each load is sorted by vin, so the min/max of its blocklets and pages skip what cannot match)")
    print(">> SHOW SEGMENTS (from Metadata/tablestatus):")
    print(table.show_segments())
    if spark is not None:
        spark.stop()
    print(f">> the table is at {path}")
    print(f">> look inside it with: {cli_command()} inspect {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
