"""Decode throughput of the carbondata reader against pyarrow reading the same data from Parquet.

One column type at a time, single thread on both sides (pyarrow with use_threads=False), same data, same run. Prints a table of ratios
(carbon-ds time / pyarrow time; lower is better, goal <= 1.5) and saves JSON.

    python benchmarks/decode_throughput.py [--rows 2000000] [--repeat 3] [--out benchmarks/results]
"""

from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from common import parser, save, timed

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



def main() -> None:
    args = parser(__doc__, rows=2_000_000, repeat=3).parse_args()
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
            t_carbon = timed(lambda f=files[0].path: CarbonDataFile(f).read(), args.repeat)
            t_arrow = timed(lambda p=ppath: pq.read_table(p, use_threads=False), args.repeat)
            row = {
                "column": name,
                "rows": args.rows,
                "carbon_s": round(t_carbon, 4),
                "parquet_s": round(t_arrow, 4),
                "ratio": round(t_carbon / t_arrow, 2),
                "carbon_bytes": sum(x.file_size for x in files),
                "parquet_bytes": os.path.getsize(ppath),
            }
            results.append(row)
            print(f"{name:<16} carbon {t_carbon:7.3f}s  parquet {t_arrow:7.3f}s  ratio {row['ratio']:5.2f}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    save(args.out, "decode_throughput.json", {"results": results})


if __name__ == "__main__":
    main()
