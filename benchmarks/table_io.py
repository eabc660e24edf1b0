"""Write and full-scan read of a telemetry table: carbon-ds against Spark's own Parquet and ORC, same run.

Spark side: df.write.format("carbondata") vs df.write.parquet / .orc, and a full scan of every column
(written to Spark's `noop` sink so the scan is not optimised away). Python side: carbon_ds.read_table vs
pyarrow.parquet.read_table. The formats take turns in every round; medians of ``--repeat`` rounds. Prints
ratios (carbon-ds / peer; lower is better) and saves JSON.

Spark runs with the carbon-ds Catalyst extension (``carbon_ds.configure_spark``, the documented Spark setup)
unless ``--no-extension`` is given; the extension drops the second copy Spark makes of every scanned row.

    python benchmarks/table_io.py [--rows 5000000] [--repeat 3] [--no-extension] [--out benchmarks/results]
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time

import pyarrow.parquet as pq
from common import parser, save, spark_session

import carbon_ds
from carbon_ds.demo import telemetry


def seconds(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = parser(__doc__, rows=5_000_000, repeat=3)
    ap.add_argument("--no-extension", action="store_true", help="start Spark without the carbon-ds extension")
    args = ap.parse_args()

    spark = spark_session("8g", extension=not args.no_extension)
    work = tempfile.mkdtemp(prefix="carbon-table-bench-")
    try:
        # a staging Parquet copy so every writer starts from the same cached DataFrame
        stage = os.path.join(work, "stage.parquet")
        writer = None
        for b in telemetry.batches(args.rows, seed=1):
            if writer is None:
                writer = pq.ParquetWriter(stage, b.schema)
            writer.write_batch(b)
        writer.close()
        src = spark.read.parquet(stage).repartition(2).cache()
        print(f"rows: {src.count():,}", flush=True)

        paths = {k: os.path.join(work, k) for k in ("carbondata", "parquet", "orc")}

        def write(kind: str) -> None:
            shutil.rmtree(paths[kind], ignore_errors=True)
            if kind == "carbondata":
                src.write.format("carbondata").mode("overwrite").save(paths[kind])
            else:
                getattr(src.write.mode("overwrite"), kind)(paths[kind])

        def scan(kind: str) -> None:
            reader = spark.read.format(kind)
            reader.load(paths[kind]).write.format("noop").mode("overwrite").save()

        # every round writes and scans each format in turn, so all see the same machine load; medians
        runs: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            for kind in paths:
                runs.setdefault(f"write_{kind}_s", []).append(seconds(lambda k=kind: write(k)))
                runs.setdefault(f"scan_{kind}_s", []).append(seconds(lambda k=kind: scan(k)))
        pq_files = [os.path.join(paths["parquet"], f) for f in os.listdir(paths["parquet"]) if f.endswith(".parquet")]
        for _ in range(args.repeat):
            runs.setdefault("python_read_carbon_s", []).append(seconds(lambda: carbon_ds.read_table(paths["carbondata"])))
            runs.setdefault("python_read_parquet_s", []).append(seconds(lambda: pq.read_table(pq_files)))
        res = {k: statistics.median(v) for k, v in runs.items()}
        for kind in paths:
            print(f"{kind:<10} write {res[f'write_{kind}_s']:7.2f}s  scan {res[f'scan_{kind}_s']:7.2f}s", flush=True)
        ratios = {
            "write_vs_parquet": res["write_carbondata_s"] / res["write_parquet_s"],
            "write_vs_orc": res["write_carbondata_s"] / res["write_orc_s"],
            "scan_vs_parquet": res["scan_carbondata_s"] / res["scan_parquet_s"],
            "scan_vs_orc": res["scan_carbondata_s"] / res["scan_orc_s"],
            "read_table_vs_pyarrow": res["python_read_carbon_s"] / res["python_read_parquet_s"],
        }
        for k, v in ratios.items():
            print(f"{k:<24} {v:5.2f}x")
        sizes = {
            k: sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(p) for f in fs) for k, p in paths.items()
        }
        save(args.out, "table_io.json" if not args.no_extension else "table_io_no_extension.json",
             {"rows": args.rows, "extension": not args.no_extension, "seconds": res, "ratios": ratios,
              "bytes": sizes})
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
