"""What planning a carbondata read costs a plain ``spark.sql`` query, and what one shared call saves.

Spark plans each Python data source read with two calls into Python workers; the extension's ReadPlans
(conf ``carbon_ds.extension.planReads``) plans all the relations of a query in one. This runs TPC-H
queries through plain ``spark.sql`` over ``CREATE TEMPORARY VIEW ... USING carbondata`` views in two
sessions of one SparkContext, one with the shared call and one without, beside Spark over the Parquet copy:
one warm-up each (its rows compared), then ``--repeat`` interleaved rounds (the order rotating), medians.

Uses the tables benchmarks/tpch.py wrote (run it first with the same ``--out`` and ``--sf``).

    python benchmarks/spark_planning.py [--sf 1] [--repeat 3] [--queries 2,8,9,11,20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

from common import save, spark_session
from tpch_queries import compare, ordered, parse_numbers, query

import carbon_ds

CONF = "carbon_ds.extension.planReads"
SIDES = ("shared", "separate", "parquet")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--queries", default="all", help="subset, e.g. 2,8,9 (default all 22)")
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "carbon-ds-tpch"))
    ap.add_argument("--results", default="benchmarks/results")
    args = ap.parse_args()
    root = os.path.join(args.out, f"sf{args.sf:g}")
    with open(os.path.join(root, "_TABLES")) as fh:
        tables = json.load(fh)
    spark = spark_session(memory="8g", extension=True)
    sessions = {side: spark.newSession() for side in SIDES}
    for side in ("shared", "separate"):
        carbon_ds.register(sessions[side])
    sessions["separate"].conf.set(CONF, "false")
    for t, row in tables.items():
        for side in ("shared", "separate"):
            loc = row["paths"]["carbondata"].replace("'", "\\'")
            sessions[side].sql(f"CREATE OR REPLACE TEMPORARY VIEW {t} USING carbondata OPTIONS (path '{loc}')")
        sessions["parquet"].read.parquet(row["paths"]["parquet"]).createOrReplaceTempView(t)

    results: dict[str, dict] = {}
    for n in parse_numbers(args.queries):
        text = query(n, args.sf)
        rows = {side: sessions[side].sql(text).collect() for side in SIDES}
        equal = all(compare(rows[side], rows["parquet"], ordered(text))[0] for side in ("shared", "separate"))
        times: dict[str, list[float]] = {side: [] for side in SIDES}
        for round_no in range(args.repeat):
            for side in SIDES[round_no % 3:] + SIDES[:round_no % 3]:  # each side in each position
                t0 = time.perf_counter()
                sessions[side].sql(text).collect()
                times[side].append(time.perf_counter() - t0)
        res = {f"{side}_s": statistics.median(ts) for side, ts in times.items()}
        res["equal"] = equal
        results[f"Q{n}"] = res
        print(f"Q{n:<3} shared {res['shared_s']:6.3f}s  separate {res['separate_s']:6.3f}s  "
              f"parquet {res['parquet_s']:6.3f}s  shared/separate {res['shared_s'] / res['separate_s']:.2f}  "
              f"equal={equal}", flush=True)

    def geo(key: str) -> float:
        values = [r[key] / r["parquet_s"] for r in results.values()]
        return statistics.geometric_mean(values)

    summary = {"shared_vs_parquet": geo("shared_s"), "separate_vs_parquet": geo("separate_s"),
               "load_average": os.getloadavg()}
    print(f"geomean vs Parquet: shared {summary['shared_vs_parquet']:.2f}x, "
          f"separate {summary['separate_vs_parquet']:.2f}x", flush=True)
    save(args.results, "spark_planning.json", {"sf": args.sf, "repeat": args.repeat, "results": results,
                                          "summary": summary})


if __name__ == "__main__":
    main()
