"""A mixed table as a migrating user builds it, against the files it holds read by plain Spark.

TPC-H lineitem at ``--sf``: the rows of the lowest 10% of order keys written as a carbondata segment, the
other 90% a folder Spark wrote as Parquet (and, as a second variant, ORC) added with ADD SEGMENT. Q1, Q6,
Q12, Q14, Q19, ``count(*)``, an ``l_orderkey`` point lookup and a date-range aggregation run through
``carbon_ds.sql`` over the mixed table, through plain ``spark.sql`` over a ``load()`` view of it (the session
has the carbon-ds Spark extension; ``--no-extension`` leaves that side out), and through ``spark.sql`` over one
Spark-written Parquet copy of all rows (orders and part are Parquet views on every side). One warm-up per case
and side (results compared), then ``--repeat`` timed runs, the sides interleaved; the median is kept. Saves
mixed_read.json and mixed_read.md under ``--results``.

    .venv/bin/python benchmarks/mixed_read.py --sf 1 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tpch_queries as tq  # noqa: E402
from common import spark_session  # noqa: E402

QUERIES = (1, 6, 12, 14, 19)
CARBON_SHARE = 0.10


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per case and side, after one warm-up")
    ap.add_argument("--formats", default="parquet,orc", help="variants: the added folder's format(s)")
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "carbon-ds-mixed"),
                    help="work folder: generated data (kept per scale factor) and the tables")
    ap.add_argument("--results", default="benchmarks/results", help="where mixed_read.json/.md go")
    ap.add_argument("--memory", default="6g", help="Spark driver memory")
    ap.add_argument("--no-extension", action="store_true", help="no plain spark.sql side (no Spark extension)")
    return ap.parse_args()


def cases(sf: float, lookup_key: int) -> dict[str, str]:
    out = {f"Q{n}": tq.query(n, sf) for n in QUERIES}
    out["count(*)"] = "select count(*) from lineitem"
    out["point lookup"] = f"select * from lineitem where l_orderkey = {lookup_key}"
    out["date range agg"] = ("select l_shipmode, count(*), sum(l_extendedprice), avg(l_discount) from lineitem "
                             "where l_shipdate >= date '1995-03-01' and l_shipdate < date '1995-04-01' "
                             "group by l_shipmode")
    return out


def build(spark, data: dict[str, str], work: str, fmt: str) -> tuple[str, int, int]:
    """The mixed table (a carbondata segment of the lowest order keys, the rest added as a Spark-written
    ``fmt`` folder): (table path, the split key, a point-lookup key inside the added folder)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    import carbon_ds
    from carbon_ds.table.table import CarbonTable

    keys = pq.read_table(data["lineitem"], columns=["l_orderkey"]).column(0)
    lo, hi = pc.min(keys).as_py(), pc.max(keys).as_py()
    split = lo + int((hi - lo) * CARBON_SHARE)
    lookup = int(keys[int(len(keys) * 0.7)].as_py())
    path, folder = os.path.join(work, f"mixed_{fmt}"), os.path.join(work, f"added_{fmt}")
    shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)
    carbon_ds.write_table(pq.read_table(data["lineitem"], filters=[("l_orderkey", "<=", split)]), path)
    spark.read.parquet(data["lineitem"]).where(f"l_orderkey > {split}").write.format(fmt).save(folder)
    CarbonTable.open(path).add_segment(folder, format=fmt)
    return path, split, lookup


def timed(fn) -> tuple[float, list]:
    t0 = time.perf_counter()
    rows = fn()
    return time.perf_counter() - t0, rows


def run_variant(spark, fmt: str, path: str, texts: dict[str, str], repeat: int, plain: bool) -> dict[str, dict]:
    import carbon_ds

    spark.read.format("carbondata").load(path).createOrReplaceTempView("lineitem_mixed")

    def on(view: str, text: str) -> str:
        return re.sub(r"\blineitem\b", view, text)

    sides = {"mixed": lambda t: carbon_ds.sql(spark, on("lineitem_mixed", t)).collect()}
    if plain:
        sides["plain"] = lambda t: spark.sql(on("lineitem_mixed", t)).collect()
    sides["parquet"] = lambda t: spark.sql(on("lineitem_pq", t)).collect()
    out: dict[str, dict] = {}
    for name, text in texts.items():
        warm = {side: fn(text) for side, fn in sides.items()}
        equal, note = tq.compare(warm["mixed"], warm["parquet"], tq.ordered(text))
        if plain:
            plain_equal, plain_note = tq.compare(warm["plain"], warm["parquet"], tq.ordered(text))
            equal, note = equal and plain_equal, note or plain_note
        times: dict[str, list[float]] = {side: [] for side in sides}
        for r in range(repeat):
            order = list(sides) if r % 2 == 0 else list(reversed(sides))  # interleaved, alternating first
            for side in order:
                times[side].append(timed(lambda s=side, t=text: sides[s](t))[0])
        med = {side: statistics.median(ts) for side, ts in times.items()}
        row = {"mixed_s": med["mixed"], "parquet_s": med["parquet"], "ratio": med["mixed"] / med["parquet"],
               "equal": equal, "note": note, "runs": times}
        if plain:
            row.update(plain_s=med["plain"], plain_ratio=med["plain"] / med["parquet"])
        out[name] = row
        extra = f"  plain {med['plain']:7.3f}s ({row['plain_ratio']:5.2f})" if plain else ""
        print(f"{fmt:8} {name:15} mixed {med['mixed']:7.3f}s  parquet {med['parquet']:7.3f}s  ratio "
              f"{row['ratio']:5.2f}{extra}  {'equal' if equal else 'DIFFERENT: ' + str(note)}", flush=True)
    return out


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def markdown(results: dict[str, dict[str, dict]], sf: float, repeat: int, load: tuple) -> str:
    lines = [f"Mixed table read, TPC-H lineitem SF {sf:g}: {CARBON_SHARE:.0%} carbondata + "
             f"{1 - CARBON_SHARE:.0%} added folder, carbon_ds.sql vs plain Spark over one Parquet copy "
             f"(local[2], median of {repeat} interleaved runs after a warm-up; load average at the end "
             f"{load[0]:.1f}).", ""]
    for fmt, rows in results.items():
        plain = all("plain_s" in r for r in rows.values())
        head = "| case | mixed (s) | Spark Parquet (s) | ratio |" + (" plain spark.sql (s) | ratio |" if plain else "")
        lines += [f"### added folder: {fmt}", "", head + " equal |",
                  "|---|---:|---:|---:|" + ("---:|---:|" if plain else "") + "---|"]
        for name, r in rows.items():
            extra = f" {r['plain_s']:.3f} | {r['plain_ratio']:.2f}x |" if plain else ""
            lines.append(f"| {name} | {r['mixed_s']:.3f} | {r['parquet_s']:.3f} | {r['ratio']:.2f}x |{extra} "
                         f"{'yes' if r['equal'] else 'NO'} |")
        extra = f" | **{geomean([r['plain_ratio'] for r in rows.values()]):.2f}x**" if plain else ""
        lines += [f"| **geomean** | | | **{geomean([r['ratio'] for r in rows.values()]):.2f}x** |{extra} | |", ""]
    return "\n".join(lines)


def main() -> None:
    args = parse_args()
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    data = tq.generate(args.sf, os.path.join(args.out, f"data-sf{args.sf:g}"))
    spark = spark_session(args.memory, extension=not args.no_extension)
    from carbon_ds.spark.bridge.extension import extension_active

    plain = extension_active(spark)
    try:
        work = os.path.join(args.out, f"tables-sf{args.sf:g}")
        os.makedirs(work, exist_ok=True)
        peer = os.path.join(work, "lineitem_pq")
        shutil.rmtree(peer, ignore_errors=True)
        spark.read.parquet(data["lineitem"]).write.parquet(peer)
        spark.read.parquet(peer).createOrReplaceTempView("lineitem_pq")
        for t in ("orders", "part"):
            spark.read.parquet(data[t]).createOrReplaceTempView(t)
        results: dict[str, dict[str, dict]] = {}
        for fmt in formats:
            path, _split, lookup = build(spark, data, work, fmt)
            results[fmt] = run_variant(spark, fmt, path, cases(args.sf, lookup), args.repeat, plain)
    finally:
        spark.stop()
    load = os.getloadavg()
    summary = {fmt: {"geomean": geomean([r["ratio"] for r in rows.values()]),
                     "max": max(r["ratio"] for r in rows.values()),
                     "plain_geomean": geomean([r["plain_ratio"] for r in rows.values() if "plain_ratio" in r]),
                     "all_equal": all(r["equal"] for r in rows.values())} for fmt, rows in results.items()}
    os.makedirs(args.results, exist_ok=True)
    with open(os.path.join(args.results, "mixed_read.json"), "w") as fh:
        json.dump({"machine": platform.platform(), "cpus": os.cpu_count(), "sf": args.sf, "repeat": args.repeat,
                   "load_avg": load, "summary": summary, "results": results}, fh, indent=2)
    text = markdown(results, args.sf, args.repeat, load)
    with open(os.path.join(args.results, "mixed_read.md"), "w") as fh:
        fh.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
