"""Differential check: seeded random SQL queries over carbon-ds tables, each through every route into
carbon-ds, compared exactly with Spark over Parquet twins holding the same rows (tests/differential/).

    python benchmarks/differential.py --queries 1000 --seed 7

Prints each difference as it is found and per-route counts (equal, differ, both-raise, raise-only-one), and
writes benchmarks/results/differential.{json,md}. The CI test (tests/differential/test_differential.py)
runs a smaller sample of the same generator.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "differential"))
sys.path.insert(0, str(HERE))

import diff_queries  # noqa: E402
import diff_routes  # noqa: E402
import diff_tables  # noqa: E402
from common import save, spark_session  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--big-rows", type=int, default=20_000, help="rows per segment of big_t (6 segments)")
    ap.add_argument("--out", default=str(HERE / "results"))
    args = ap.parse_args()
    print(f"differential check: seed {args.seed}, {args.queries} queries", flush=True)
    from pyspark.sql import SparkSession

    import carbon_ds

    # no progress bars between the printed differences; spark_session then takes this session over (the
    # extension is attached here: a running session cannot take it later)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need this interpreter's packages
    (carbon_ds.configure_spark(SparkSession.builder).master("local[2]")
        .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark = spark_session("2g", extension=True)
    spark.sparkContext.setLogLevel("OFF")
    diff_routes.quiet()
    with tempfile.TemporaryDirectory() as root:
        t0 = time.perf_counter()
        tables = diff_tables.build_tables(root, args.seed, args.big_rows)
        diff_routes.create_views(spark, tables)
        queries = diff_queries.generate(tables, args.seed, args.queries)
        report = diff_routes.Report(echo=True)
        for i, q in enumerate(queries, 1):
            diff_routes.run_query(spark, tables, q, report)
            if i % 50 == 0 or i == len(queries):
                # written as it goes, so an interrupted run still leaves its counts
                _write(args, queries[:i], report, time.perf_counter() - t0)
                print(f"-- {i} queries, {len(report.failures)} differences, {time.perf_counter() - t0:.0f} s",
                      flush=True)
    print(report.table())
    return 1 if report.failures else 0


def _write(args, queries: list, report, elapsed: float) -> None:
    kinds = Counter(q.kind for q in queries)
    table = report.table()
    command = f"python benchmarks/differential.py --queries {args.queries} --seed {args.seed}"
    md = (f"# Differential check\n\n`{command}`: {len(queries)} of {args.queries} queries run, {elapsed:.0f} s, "
          f"{os.cpu_count()} cpus\n\nQuery kinds: {', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}\n\n"
          f"{table}\n")
    if report.failures:
        md += "\n## Differences\n\n" + "\n\n".join(f"```\n{f}\n```" for f in report.failures[:50]) + "\n"
    os.makedirs(args.out, exist_ok=True)
    Path(args.out, "differential.md").write_text(md)
    save(args.out, "differential.json", {
        "command": command, "seed": args.seed, "queries": args.queries, "run": len(queries),
        "seconds": round(elapsed, 1), "kinds": dict(kinds), "routes": {r: dict(c) for r, c in report.counts.items()},
        "route_seconds": {r: round(s, 1) for r, s in report.seconds.items()}, "differences": report.failures,
    })


if __name__ == "__main__":
    sys.exit(main())
