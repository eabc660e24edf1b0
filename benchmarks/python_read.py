"""carbon-ds reads against pyarrow.parquet on TPC-H lineitem (DuckDB's offline dbgen), threaded and single.

Cases: all columns; the 4 columns of Q6; Q6's columns with a selective filter on the sort column
(l_shipdate). Each case is timed interleaved with its Parquet peer (pyarrow.parquet.read_table of the same
rows, with pyarrow.dataset's filter for the filtered case); the figure is the median of ``--repeat`` runs
and the ratio carbon-ds / Parquet. Prints a table and saves python_read.json.

    python benchmarks/python_read.py [--sf 0.1] [--repeat 5] [--data /tmp/carbon-ds-pyread]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import tempfile
import time

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from common import save
from tpch_queries import generate

import carbon_ds

Q6 = ["l_shipdate", "l_discount", "l_quantity", "l_extendedprice"]
DAY = dt.date(1995, 3, 1)


def _median(fn, repeat: int, peer, results: dict[str, list[float]], key: str, peer_key: str) -> None:
    for _ in range(repeat):  # interleaved, so both sides see the same machine load
        for k, f in ((key, fn), (peer_key, peer)):
            t0 = time.perf_counter()
            f()
            results.setdefault(k, []).append(time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", type=float, default=0.1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "carbon-ds-pyread"))
    ap.add_argument("--out", default="benchmarks/results")
    args = ap.parse_args()
    paths = generate(args.sf, os.path.join(args.data, "parquet"))
    parquet = paths["lineitem"]
    carbon = os.path.join(args.data, f"carbon-sf{args.sf}")
    if not os.path.exists(carbon):
        carbon_ds.write_table(pq.read_table(parquet), carbon, sort_columns="l_shipdate")
    narrow = (pc.field("l_shipdate") >= DAY) & (pc.field("l_shipdate") < DAY + dt.timedelta(days=7))
    cases = {
        "all columns": (lambda th: carbon_ds.scan(carbon, use_threads=th).to_arrow(),
                        lambda th: pq.read_table(parquet, use_threads=th)),
        "Q6 columns": (lambda th: carbon_ds.scan(carbon, Q6, use_threads=th).to_arrow(),
                       lambda th: pq.read_table(parquet, columns=Q6, use_threads=th)),
        "Q6 columns, one week of l_shipdate": (
            lambda th: carbon_ds.scan(carbon, Q6, filter=narrow, use_threads=th).to_arrow(),
            lambda th: ds.dataset(parquet).to_table(columns=Q6, filter=narrow, use_threads=th)),
    }
    rows = []
    for name, (ours, peer) in cases.items():
        for threads in (True, False):
            times: dict[str, list[float]] = {}
            _median(lambda o=ours, t=threads: o(t), args.repeat, lambda p=peer, t=threads: p(t), times,
                    "carbon", "parquet")
            a, b = statistics.median(times["carbon"]), statistics.median(times["parquet"])
            rows.append({"case": name, "threads": threads, "carbon_s": a, "parquet_s": b, "ratio": a / b})
    print(f"TPC-H lineitem SF {args.sf}, median of {args.repeat}, {os.cpu_count()} cpus")
    print(f"{'case':<38} {'threads':<8} {'carbon-ds s':>12} {'parquet s':>10} {'ratio':>6}")
    for r in rows:
        print(f"{r['case']:<38} {r['threads']!s:<8} {r['carbon_s']:>12.3f} {r['parquet_s']:>10.3f} {r['ratio']:>6.2f}")
    save(args.out, "python_read.json", {"sf": args.sf, "repeat": args.repeat, "rows": rows})


if __name__ == "__main__":
    main()
