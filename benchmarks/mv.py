"""Materialized views: a dashboard query answered by a view, by the main table, and by Spark on Parquet;
the view's refresh after a 1% append against a full rebuild.

The fact table is seed-003-style telemetry (``--rows``, default 10M): vin, brand (20), model (100), day
(30 days), ts, speed, temp, written once as a carbondata table and once as Parquet (the same rows). The
view is the dashboard's GROUP BY::

    SELECT brand, model, day, sum(speed), count(*), avg(temp), max(speed) FROM tel GROUP BY brand, model, day

Four sides answer that query, interleaved, ``--repeat`` times each (median reported):
  view            ``carbon_ds.sql`` in a session with the view enabled (the query is rewritten to read the view)
  view spark.sql  plain ``spark.sql`` in the same session (the extension's Catalyst rule rewrites it)
  no view         ``carbon_ds.sql`` with ``carbon_ds.sql.materializedViewRewrite=false`` (it aggregates the
                  main table)
  parquet         ``spark.sql`` over a temporary view of ``spark.read.parquet`` of the same rows
All results are checked to be equal, and the spark.sql view side to have read the view (its optimized plan).

Refresh: ``--repeat`` times, a 1% segment is appended to the main table (the view is ``on_manual`` so the
load does not refresh it) and the incremental refresh is timed (``carbon_ds.table.ops.views.refresh_view(path)``, what
REFRESH MATERIALIZED VIEW and the on_commit hook run), then a full
rebuild of the same view (``carbon_ds.table.ops.views.refresh_view(path, full=True)``); reported: medians
and their ratio, and that the two give the same rows.

    python benchmarks/mv.py [--rows 10000000] [--repeat 5] [--no-spark]
"""

from __future__ import annotations

import datetime as dt
import math
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
from carbon_ds.names import CONF_MV_REWRITE
from carbon_ds.table.ops import views
from carbon_ds.table.table import CarbonTable

SCHEMA = pa.schema([("vin", pa.string()), ("brand", pa.string()), ("model", pa.string()), ("day", pa.date32()),
                    ("ts", pa.timestamp("us", tz="UTC")), ("speed", pa.int32()), ("temp", pa.float64())])
COLUMNS = "vin STRING, brand STRING, model STRING, day DATE, ts TIMESTAMP, speed INT, temp DOUBLE"
VIEW = ("SELECT brand, model, day, sum(speed) AS total, count(*) AS n, avg(temp) AS mean, max(speed) AS top "
        "FROM tel GROUP BY brand, model, day")
QUERY = "SELECT brand, model, day, sum(speed), count(*), avg(temp), max(speed) FROM {t} GROUP BY brand, model, day"
CHUNK = 1_000_000
START = dt.date(2024, 3, 1)


def telemetry(n: int, seed: int, first_day: int = 0) -> pa.Table:
    """``n`` telemetry rows over 30 days from ``START`` + ``first_day`` (one RNG per call: reproducible)."""
    rng = np.random.default_rng(seed)
    vin = rng.integers(0, 50_000, n)
    brand = vin % 20
    secs = rng.integers(0, 30 * 86_400, n) + first_day * 86_400
    speed = rng.integers(0, 160, n).astype(np.int32)
    temp = np.round(rng.normal(20, 8, n), 2)
    strings = np.char.add
    return pa.table({
        "vin": pa.array(strings("V", vin.astype("U6"))),
        "brand": pa.array(strings("brand", brand.astype("U2"))),
        "model": pa.array(strings(strings("m", brand.astype("U2")), (vin // 20 % 5).astype("U1"))),
        "day": pa.array((np.datetime64(START) + (secs // 86_400).astype("timedelta64[D]")), pa.date32()),
        "ts": pa.array(np.datetime64(START, "us") + (secs * 1_000_000).astype("timedelta64[us]"),
                       pa.timestamp("us", tz="UTC")),
        "speed": pa.array(speed, mask=rng.random(n) < 0.01),
        "temp": pa.array(temp, mask=rng.random(n) < 0.01),
    }, schema=SCHEMA)


def rounded(rows: list) -> list[tuple]:
    """Rows sorted by their groups, floats to 9 significant digits (sums of doubles added in another order
    differ in the last bits)."""
    return sorted((tuple(float(f"{v:.9g}") if isinstance(v, float) else v for v in r) for r in rows), key=repr)


def differ(a: list[tuple], b: list[tuple]) -> list[tuple]:
    """The rows of ``a`` and ``b`` that are not equal to within 1e-8 relative for floats (they are rounded to 9 digits)."""
    def close(x, y) -> bool:
        return math.isclose(x, y, rel_tol=1e-8) if isinstance(x, float) and isinstance(y, float) else x == y
    if len(a) != len(b):
        return sorted(set(a) ^ set(b), key=repr)
    return [(x, y) for x, y in zip(a, b, strict=True) if not all(close(u, v) for u, v in zip(x, y, strict=True))]


def view_rows(path: str) -> list[tuple]:
    t = CarbonTable.open(path).to_arrow().select(["brand", "model", "day", "total", "n", "mean", "top"])
    return rounded([tuple(r.values()) for r in t.to_pylist()])


def main() -> None:
    ap = parser(__doc__, 10_000_000, 5)
    ap.add_argument("--no-spark", action="store_true", help="only the refresh figures (no Spark session)")
    args = ap.parse_args()
    n = args.rows
    base = tempfile.mkdtemp(prefix="mv_bench_")
    main_path, pq_path = os.path.join(base, "tel"), os.path.join(base, "tel_parquet")
    os.makedirs(pq_path)
    t0 = time.perf_counter()
    table = CarbonTable.create(main_path, SCHEMA)

    def chunks():  # a million rows at a time, each also written as one Parquet file
        for i, start in enumerate(range(0, n, CHUNK)):
            chunk = telemetry(min(CHUNK, n - start), seed=i)
            pq.write_table(chunk, os.path.join(pq_path, f"part-{i:04d}.parquet"))
            yield chunk

    with table.load() as load:  # one segment
        load.write(chunks())
    print(f"fact table: {n:,} rows written as carbondata and Parquet in {time.perf_counter() - t0:.1f} s")
    results: dict = {"rows": n, "repeat": args.repeat, "load_avg": os.getloadavg()}

    mv_path = None
    if not args.no_spark:
        spark = spark_session(extension=True, conf={"spark.sql.warehouse.dir": os.path.join(base, "warehouse")})
        carbon_ds.sql(spark, f"CREATE EXTERNAL TABLE tel ({COLUMNS}) STORED AS carbondata LOCATION '{main_path}'")
        t0 = time.perf_counter()
        carbon_ds.sql(spark, f"CREATE MATERIALIZED VIEW mv_tel PROPERTIES ('refresh_trigger_mode'='on_manual') "
                             f"AS {VIEW}")
        results["create_view_s"] = time.perf_counter() - t0
        mv_path = views.linked_views(CarbonTable.open(main_path))[0]
        spark.read.parquet(pq_path).createOrReplaceTempView("tel_pq")

        def carbon(rewrite: bool, route=carbon_ds.sql):
            def run() -> list:
                spark.conf.set(CONF_MV_REWRITE, "true" if rewrite else "false")
                try:
                    return route(spark, QUERY.format(t="tel")).collect()
                finally:
                    spark.conf.unset(CONF_MV_REWRITE)
            return run

        def reads_view(route) -> bool:
            plan = route(spark, QUERY.format(t="tel"))._jdf.queryExecution().optimizedPlan().toString()
            return "mv_tel" in plan

        def plain(session, text: str):
            return session.sql(text)

        if not reads_view(plain):  # carbon_ds.sql answers with local rows: no plan to look at
            raise SystemExit("the dashboard query through spark.sql does not read the view")
        sides = {"view": carbon(True), "view spark.sql": carbon(True, plain), "no view": carbon(False),
                 "parquet": lambda: spark.sql(QUERY.format(t="tel_pq")).collect()}
        times: dict[str, list[float]] = {k: [] for k in sides}
        answers = {}
        for name, run in sides.items():  # warm-up (JIT, caches), not timed
            answers[name] = rounded(run())
        for name, got in answers.items():
            diff = differ(got, answers["no view"])
            if diff:
                raise SystemExit(f"{name} and 'no view' answer differently ({len(got)} and "
                                 f"{len(answers['no view'])} rows), e.g. {diff[:4]}")
        for _ in range(args.repeat):
            for name, run in sides.items():
                t0 = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - t0)
        med = {k: statistics.median(v) for k, v in times.items()}
        results["query"] = {"groups": len(answers["view"]), "median_s": med, "times_s": times,
                            "no_view_over_view": med["no view"] / med["view"],
                            "parquet_over_view": med["parquet"] / med["view"],
                            "no_view_over_spark_sql_view": med["no view"] / med["view spark.sql"],
                            "parquet_over_spark_sql_view": med["parquet"] / med["view spark.sql"]}
        print(f"\ndashboard query, {len(answers['view'])} groups (median of {args.repeat}):")
        for k in sides:
            print(f"  {k:14s} {med[k]:8.3f} s  {med[k] / med['view']:7.1f}x the view")
    else:
        mv_path = os.path.join(base, "mv_tel")
        views.create_view(mv_path, "default.mv_tel", CarbonTable.open(main_path), "default.tel", VIEW,
                          "on_manual", "UTC")

    inc, full, appended = [], [], n // 100
    for rep in range(args.repeat):
        with CarbonTable.open(main_path).load() as load:
            load.write([telemetry(appended, seed=1000 + rep, first_day=rep)])
        t0 = time.perf_counter()
        done = views.refresh_view(mv_path)
        inc.append(time.perf_counter() - t0)
        assert done.kind == "incremental", done
        incremental = view_rows(mv_path)
        t0 = time.perf_counter()
        views.refresh_view(mv_path, full=True)
        full.append(time.perf_counter() - t0)
        diff = differ(view_rows(mv_path), incremental)
        if diff:
            raise SystemExit(f"the incremental refresh and the full rebuild give different rows, e.g. {diff[:4]}")
        print(f"  refresh run {rep + 1}: incremental {inc[-1]:.3f} s, full rebuild {full[-1]:.3f} s")
    ratio = statistics.median(inc) / statistics.median(full)
    results["refresh"] = {"appended_rows": appended, "incremental_s": inc, "full_s": full,
                          "incremental_median_s": statistics.median(inc), "full_median_s": statistics.median(full),
                          "incremental_over_full": ratio}
    print(f"\nrefresh after a {appended:,}-row (1%) append: incremental {statistics.median(inc):.3f} s, full rebuild "
          f"{statistics.median(full):.3f} s: {ratio:.1%} of a rebuild (median of {args.repeat})")
    save(args.out, f"mv_{n}.json", results)
    if not args.no_spark:
        spark.stop()
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
