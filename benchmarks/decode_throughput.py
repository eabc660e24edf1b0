"""Decode throughput of the carbondata reader against pyarrow reading the same data from Parquet.

One column type at a time, single thread on both sides (pyarrow with use_threads=False), same data, same run,
the two readers interleaved, medians of ``--repeat`` runs. Prints a table of ratios (carbon-ds time / pyarrow
time; lower is better, goal <= 1.3) and saves JSON. ``ratio`` is a repeated read (the file's parsed footer
and column-chunk headers come from the reader's cache, as in a Python worker re-reading files query after
query); ``cold_ratio`` parses them again on every read.

    python benchmarks/decode_throughput.py [--rows 2000000] [--repeat 9] [--out benchmarks/results]
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
from common import parser, save

from carbon_ds.format import v3_file
from carbon_ds.readers.carbon_file import CarbonDataFile
from carbon_ds.writers.carbon_file_writer import CarbonWriter, WriterOptions


def columns(rows: int) -> dict[str, pa.Array]:
    rng = np.random.default_rng(7)
    words = np.array([f"word_{i:05d}" for i in range(50_000)], dtype=object)
    return {
        "int32": pa.array(rng.integers(-1_000_000, 1_000_000, rows).astype(np.int32)),
        "int64": pa.array(rng.integers(-(2**40), 2**40, rows)),
        "int64_narrow": pa.array(rng.integers(0, 200, rows)),
        "double": pa.array(rng.normal(0, 1e6, rows)),
        "double_1dp": pa.array(np.round(rng.uniform(0, 1000, rows), 1)),
        "string_lowcard": pa.array(words[rng.integers(0, 500, rows)], pa.string()),
        "string_highcard": pa.array(words[rng.integers(0, 50_000, rows)], pa.string()),
        "timestamp": pa.array(1_636_934_400_000_000 + np.sort(rng.integers(0, 10**12, rows)) // 1000 * 1000,
                              pa.timestamp("us", tz="UTC")),
        "date": pa.array(rng.integers(18_000, 20_000, rows).astype(np.int32), pa.date32()),
    }



def _seconds(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _cold_read(path: str) -> None:
    v3_file._PARSED.clear()  # what a first read of the file pays
    CarbonDataFile(path).read()


def interleaved(fns: dict, repeat: int) -> dict[str, float]:
    """Median wall time of each function, run in turn ``repeat`` times."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            times[k].append(_seconds(fn))
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    args = parser(__doc__, rows=2_000_000, repeat=9).parse_args()
    work = tempfile.mkdtemp(prefix="carbon-bench-")
    results = []
    try:
        for name, arr in columns(args.rows).items():
            table = pa.table({name: arr})
            cdir = os.path.join(work, name)
            w = CarbonWriter(cdir, table.schema, WriterOptions())
            w.write(table)
            files = w.close()
            ppath = os.path.join(work, f"{name}.parquet")
            pq.write_table(table, ppath, compression="snappy")
            f = CarbonDataFile(files[0].path)
            assert f.read().column(0).equals(table.column(0)), f"{name}: carbon-ds read differs from the input"
            t = interleaved({
                "cold": lambda f=files[0].path: _cold_read(f),
                "carbon": lambda f=files[0].path: CarbonDataFile(f).read(),
                "parquet": lambda p=ppath: pq.read_table(p, use_threads=False),
            }, args.repeat)
            t_carbon, t_arrow = t["carbon"], t["parquet"]
            row = {
                "column": name,
                "rows": args.rows,
                "carbon_s": round(t_carbon, 4),
                "carbon_cold_s": round(t["cold"], 4),
                "parquet_s": round(t_arrow, 4),
                "ratio": round(t_carbon / t_arrow, 2),
                "cold_ratio": round(t["cold"] / t_arrow, 2),
                "carbon_bytes": sum(x.file_size for x in files),
                "parquet_bytes": os.path.getsize(ppath),
            }
            results.append(row)
            print(f"{name:<16} carbon {t_carbon:7.4f}s  parquet {t_arrow:7.4f}s  ratio {row['ratio']:5.2f}  "
                  f"(cold {t['cold']:7.4f}s, {row['cold_ratio']:5.2f})", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    save(args.out, "decode_throughput.json", {"results": results})


if __name__ == "__main__":
    main()
