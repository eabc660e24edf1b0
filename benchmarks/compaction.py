"""Compaction: many small appends, then a point lookup and a full scan before and after MINOR and MAJOR.

A table with sort column ``key`` gets ``--loads`` appends of ``--rows-per-load`` rows (each load sorted by
itself, so every small file spans the whole key range). Reported at each stage: data files, blocklets the
point lookup skips (min/max pruning), the lookup's and the full scan's time (median of ``--repeat``), and the
compaction's own rows/s against its peer measured in the same run: rewriting the same live rows sorted by the
key with pyarrow's Parquet writer (``--spark`` adds Spark's ``df.write.parquet`` of the same rows).

    python benchmarks/compaction.py [--quick] [--loads 200] [--rows-per-load 20000] [--repeat 3] [--spark]
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from common import parser, save, spark_session

import carbon_ds
from carbon_ds.api import explain
from carbon_ds.progress import progress

SCHEMA = pa.schema([("key", pa.int64()), ("vin", pa.string()), ("value", pa.float64())])


def batch(i: int, n: int, keys: int) -> pa.Table:
    rng = np.random.default_rng(i)
    k = rng.integers(0, keys, n)
    return pa.table({"key": k, "vin": pa.array([f"V{x % 997:04d}" for x in k]), "value": rng.random(n)},
                    schema=SCHEMA)


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def stage(path: str, probe: int, repeat: int) -> dict:
    t = carbon_ds.CarbonTable.open(path)
    flt = f"key = {probe}"
    report = explain(path, flt)
    return {
        "files": len(t.files()),
        "blocklets_total": report["blocklets"]["total"],
        "blocklets_skipped": report["blocklets"]["skipped"],
        "point_s": median_time(lambda: carbon_ds.read_table(path, filter=flt), repeat),
        "scan_s": median_time(lambda: t.to_arrow(), repeat),
    }


def main() -> None:
    ap = parser(__doc__, rows=20_000, repeat=3)
    ap.add_argument("--loads", type=int, default=200)
    ap.add_argument("--rows-per-load", type=int, default=None)
    ap.add_argument("--quick", action="store_true", help="40 loads of 5,000 rows")
    ap.add_argument("--spark", action="store_true", help="also time Spark's df.write.parquet of the same rows")
    args = ap.parse_args()
    loads, per = (40, 5_000) if args.quick else (args.loads, args.rows_per_load or args.rows)
    keys = loads * per
    work = tempfile.mkdtemp(prefix="compaction_bench_")
    path = os.path.join(work, "t")
    try:
        t = carbon_ds.CarbonTable.create(path, SCHEMA, sort_columns=["key"],
                                         properties={"table_blocklet_size": "1"})
        for i in progress(range(loads), "appending"):
            with t.load() as load:
                load.write([batch(i, per, keys)])
        t.delete("key < 1000")  # compaction drops these rows from the files
        probe = int(batch(loads // 2, per, keys).column("key")[0].as_py())
        rows = t.count()
        results = {"before": stage(path, probe, args.repeat)}
        print("before", results["before"])
        timings = {}
        for kind in ("minor", "major"):
            t0 = time.perf_counter()
            merged = t.compact(kind)
            secs = time.perf_counter() - t0
            merged_rows = sum(m.rows for m in merged)
            timings[kind] = {"seconds": secs, "rows": merged_rows, "rows_per_s": merged_rows / secs if secs else 0,
                             "merged_segments": len(merged)}
            results[f"after_{kind}"] = stage(path, probe, args.repeat)
            print(kind, timings[kind], results[f"after_{kind}"])
        # The peer: the same live rows, sorted by key, rewritten as Parquet in this process.
        live = t.to_arrow()
        out = os.path.join(work, "peer.parquet")
        t0 = time.perf_counter()
        pq.write_table(live.sort_by("key"), out)
        peer = time.perf_counter() - t0
        timings["pyarrow_parquet_rewrite"] = {"seconds": peer, "rows": live.num_rows,
                                              "rows_per_s": live.num_rows / peer}
        if args.spark:
            spark = spark_session()
            df = spark.createDataFrame(live.to_pandas()).sortWithinPartitions("key").cache()
            df.count()
            t0 = time.perf_counter()
            df.write.mode("overwrite").parquet(os.path.join(work, "spark_parquet"))
            secs = time.perf_counter() - t0
            timings["spark_write_parquet"] = {"seconds": secs, "rows": live.num_rows, "rows_per_s": live.num_rows / secs}
        assert live.num_rows == rows, (live.num_rows, rows)
        print("timings", timings)
        save(args.out, "compaction.json", {"loads": loads, "rows_per_load": per, "live_rows": rows,
                                            "stages": results, "timings": timings})
        for name, r in results.items():
            print(f"| {name:<12} | {r['files']:>5} files | blocklets skipped {r['blocklets_skipped']:>5} of "
                  f"{r['blocklets_total']:>5} | point {r['point_s'] * 1000:8.1f} ms | scan {r['scan_s']:6.2f} s |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
