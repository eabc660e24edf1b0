"""carbon-ds reads against Parquet on TPC-H lineitem (DuckDB's offline dbgen), threaded and single-threaded.

Part 1, the Python API: ``carbon_ds.scan(...).to_arrow()`` against ``pyarrow.parquet.read_table`` of the same
rows: all columns; the 4 columns of Q6; Q6's columns with one week of the sort column (l_shipdate), through
pyarrow.dataset's filter on the Parquet side.

Part 2, engines: Polars (``carbon_ds.polars.scan_carbondata`` against ``pl.scan_parquet``) and DuckDB
(``carbon_ds.duckdb.register`` against ``read_parquet``) running the same two queries over the same data:
Q6 (filter + aggregate) and a selective lookup of one day of l_shipdate. The carbon-ds table is sorted by
l_shipdate (its sort column); the Parquet file is as DuckDB's generator orders it (by order key), written by
pyarrow with its default row groups. Single-threaded runs happen in a child process started with
``POLARS_MAX_THREADS=1``, DuckDB ``SET threads = 1``, pyarrow's CPU pool at 1 and ``use_threads=False``.

Each case is timed interleaved with its Parquet peer; the figure is the median of ``--repeat`` runs and
the ratio carbon-ds / Parquet (below 1: carbon-ds faster). Writes python_read.json, python_read.md and
python_read.png (a chart of the ratios) to ``--out``.

    python benchmarks/python_read.py [--sf 0.1] [--repeat 5] [--data /tmp/carbon-ds-pyread]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from common import pyplot, save
from tpch_queries import generate

import carbon_ds

Q6 = ["l_shipdate", "l_discount", "l_quantity", "l_extendedprice"]
DAY = dt.date(1995, 3, 1)

Q6_SQL = """select sum(l_extendedprice * l_discount) as revenue from lineitem
where l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01'
  and l_discount between 0.05 and 0.07 and l_quantity < 24"""
LOOKUP_SQL = f"""select l_orderkey, l_linenumber, l_quantity, l_extendedprice from lineitem
where l_shipdate = date '{DAY}'"""


def _interleaved(ours: Callable[[], object], peer: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Median seconds of ``ours`` and of ``peer``, run turn about so both see the same machine load."""
    times: dict[int, list[float]] = {0: [], 1: []}
    for _ in range(repeat):
        for k, f in enumerate((ours, peer)):
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    return statistics.median(times[0]), statistics.median(times[1])


def _row(engine: str, case: str, threads: bool, carbon_s: float, parquet_s: float) -> dict:
    return {"engine": engine, "case": case, "threads": threads, "carbon_s": carbon_s, "parquet_s": parquet_s,
            "ratio": carbon_s / parquet_s}


def api_rows(carbon: str, parquet: str, repeat: int) -> list[dict]:
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
            a, b = _interleaved(lambda o=ours, t=threads: o(t), lambda p=peer, t=threads: p(t), repeat)
            rows.append(_row("pyarrow", name, threads, a, b))
    return rows


def engine_rows(carbon: str, parquet: str, repeat: int, threads: bool) -> list[dict]:
    """Polars and DuckDB over carbon-ds against the same engine over Parquet (this process's thread setting)."""
    import duckdb
    import polars as pl

    from carbon_ds.duckdb import register
    from carbon_ds.polars import scan_carbondata

    con = duckdb.connect()
    if not threads:
        con.execute("SET threads = 1")
    register(con, "lineitem", carbon, use_threads=threads)
    peer = duckdb.connect()
    if not threads:
        peer.execute("SET threads = 1")
    peer.execute(f"create view lineitem as select * from read_parquet('{parquet}')")

    q6 = ((pl.col("l_shipdate") >= dt.date(1994, 1, 1)) & (pl.col("l_shipdate") < dt.date(1995, 1, 1))
          & pl.col("l_discount").is_between(0.05, 0.07) & (pl.col("l_quantity") < 24))
    revenue = (pl.col("l_extendedprice") * pl.col("l_discount")).sum().alias("revenue")
    lookup_cols = ["l_orderkey", "l_linenumber", "l_quantity", "l_extendedprice"]

    def polars_q6(lf):
        return lambda: lf().filter(q6).select(revenue).collect()

    def polars_lookup(lf):
        return lambda: lf().filter(pl.col("l_shipdate") == DAY).select(lookup_cols).collect()

    ours_lf = lambda: scan_carbondata(carbon, use_threads=threads)  # noqa: E731
    peer_lf = lambda: pl.scan_parquet(parquet)  # noqa: E731
    cases = [
        ("DuckDB", "Q6", lambda: con.sql(Q6_SQL).fetchall(), lambda: peer.sql(Q6_SQL).fetchall()),
        ("DuckDB", "one day of l_shipdate", lambda: con.sql(LOOKUP_SQL).fetchall(),
         lambda: peer.sql(LOOKUP_SQL).fetchall()),
        ("Polars", "Q6", polars_q6(ours_lf), polars_q6(peer_lf)),
        ("Polars", "one day of l_shipdate", polars_lookup(ours_lf), polars_lookup(peer_lf)),
    ]
    rows = []
    for engine, case, ours, other in cases:
        a, b = ours(), other()  # the same answer first: a fast wrong answer is no result
        if engine == "DuckDB":
            assert sorted(a) == sorted(b), (engine, case)
        else:
            assert a.sort(a.columns).equals(b.sort(b.columns)), (engine, case)
        t_ours, t_peer = _interleaved(ours, other, repeat)
        rows.append(_row(engine, case, threads, t_ours, t_peer))
    return rows


def _child(args) -> None:
    threads = args.child == "threaded"
    if not threads:
        pa.set_cpu_count(1)
        pa.set_io_thread_count(1)
    rows = engine_rows(args.carbon, args.parquet, args.repeat, threads)
    if threads:
        rows = api_rows(args.carbon, args.parquet, args.repeat) + rows
    print(json.dumps(rows))


def _engines_in_children(args, carbon: str, parquet: str) -> list[dict]:
    rows = []
    for mode in ("threaded", "single"):
        env = dict(os.environ)
        if mode == "single":
            env["POLARS_MAX_THREADS"] = "1"  # read once, when Polars is imported
        out = subprocess.run([sys.executable, __file__, "--child", mode, "--carbon", carbon, "--parquet", parquet,
                              "--repeat", str(args.repeat)], env=env, check=True, capture_output=True, text=True)
        rows += json.loads(out.stdout.strip().splitlines()[-1])
    return rows


def markdown(rows: list[dict], sf: float, repeat: int) -> str:
    lines = [f"TPC-H lineitem SF {sf:g}, median of {repeat}, {os.cpu_count()} cpus; ratio = carbon-ds / Parquet",
             "", "| engine | case | threads | carbon-ds s | Parquet s | ratio |", "| --- | --- | --- | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['engine']} | {r['case']} | {'yes' if r['threads'] else 'no'} | {r['carbon_s']:.3f} | "
                     f"{r['parquet_s']:.3f} | {r['ratio']:.2f} |")
    return "\n".join(lines) + "\n"


def chart(rows: list[dict], path: str, title: str) -> None:
    plt = pyplot()
    if plt is None:
        return
    labels = list(dict.fromkeys(f"{r['engine']}: {r['case']}" for r in rows))
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(labels) + 1.2))
    for k, (threads, color) in enumerate(((True, "#3b7dd8"), (False, "#9cc3f0"))):
        ratio = {f"{r['engine']}: {r['case']}": r["ratio"] for r in rows if r["threads"] == threads}
        ys = [i + (0.2 if k else -0.2) for i in range(len(labels))]
        ax.barh(ys, [ratio.get(label, 0) for label in labels], height=0.38, color=color,
                label="threaded" if threads else "single thread")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("time carbon-ds / time Parquet (below 1: carbon-ds faster)")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"saved {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", type=float, default=0.1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "carbon-ds-pyread"))
    ap.add_argument("--out", default="benchmarks/results")
    ap.add_argument("--child", choices=("threaded", "single"), help=argparse.SUPPRESS)
    ap.add_argument("--carbon", help=argparse.SUPPRESS)
    ap.add_argument("--parquet", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args)
        return
    parquet = generate(args.sf, os.path.join(args.data, "parquet"))["lineitem"]
    carbon = os.path.join(args.data, f"carbon-sf{args.sf:g}")
    if not os.path.exists(carbon):
        carbon_ds.write_table(pq.read_table(parquet), carbon, sort_columns="l_shipdate")
    rows = _engines_in_children(args, carbon, parquet)
    rows.sort(key=lambda r: (r["engine"] != "pyarrow", r["engine"], r["case"], not r["threads"]))
    text = markdown(rows, args.sf, args.repeat)
    print(text)
    save(args.out, "python_read.json", {"sf": args.sf, "repeat": args.repeat, "rows": rows})
    with open(os.path.join(args.out, "python_read.md"), "w") as fh:
        fh.write(text)
    chart(rows, os.path.join(args.out, "python_read.png"),
          f"TPC-H lineitem SF {args.sf:g}, {os.cpu_count()} cpus, median of {args.repeat}")


if __name__ == "__main__":
    main()
