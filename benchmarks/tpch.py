"""TPC-H on carbon-ds against Spark's own Parquet: the 22 queries, same data, same query text, same run.

Data comes from DuckDB's dbgen (benchmarks/tpch_queries.py), generated once per scale factor and kept in
the work folder (``--out``). Every table is then written by Spark from the same DataFrame twice:
``df.write.format("carbondata")`` and ``df.write.parquet``. The queries run in three sessions of one
SparkContext (``spark.newSession()``), each with its own temporary views under the plain TPC-H names:

  carbondata  tables registered by ``carbon_ds.sql(spark, "CREATE EXTERNAL TABLE ... STORED AS carbondata
              LOCATION '...'")``; queries run through ``carbon_ds.sql(spark, q).collect()``
  parquet     ``spark.read.parquet(...)`` temporary views; queries run through ``spark.sql(q).collect()``
  load        (``--load-queries``, default Q1 and Q6) temporary views over
              ``spark.read.format("carbondata").load(path)``; queries through ``spark.sql(q).collect()``
  sql         (``--sql-queries``, default all) ``CREATE TEMPORARY VIEW t USING carbondata OPTIONS (path
              '...')`` views; queries through plain ``spark.sql(q).collect()``
  dataframe   (``--dataframe-queries``, default Q1, Q6, Q14) ``spark.read.format("carbondata").load(path)``
              and the query written as DataFrame calls (DATAFRAME_QUERIES below)

The session is started with the carbon-ds Catalyst extension (``carbon_ds.configure_spark``) unless
``--no-extension`` is given: it is what prunes every carbondata side (``carbon_ds.sql``'s queries too).

Per query the sides run interleaved: one warm-up each (whose rows are compared), then ``--repeat`` rounds
of carbondata, parquet[, load]; the median is kept. Results must agree: carbondata = Parquet = DuckDB
running the same text over the Parquet files (numbers to 1e-6 relative; row order where the query has an
ORDER BY). Saves tpch.json, tpch.md (per-query seconds, ratio carbon-ds / Parquet, equal?, geometric
mean) and tpch.png (matplotlib, ``bench`` extra) to ``--results``, and prints the table.

    python benchmarks/tpch.py [--sf 1] [--repeat 3] [--out /tmp/carbon-ds-tpch] [--queries 1,6,14-16]
                              [--load-queries 1,6|all|none] [--reuse-tables] [--results benchmarks/results]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import traceback

from common import pyplot, save, spark_session
from pyspark.sql import functions as F  # noqa: N812 - the usual spelling
from tpch_queries import (
    TABLES,
    carbon_create_sql,
    compare,
    duckdb_over_parquet,
    generate,
    ordered,
    parse_numbers,
    query,
)

import carbon_ds

SIDES = ("carbondata", "parquet", "load", "sql", "dataframe")
# side -> (its column title, what the ratio key is called)
EXTRA_SIDES = {"load": ("load()", "load_ratio"), "sql": ("spark.sql", "sql_ratio"),
               "dataframe": ("DataFrame", "dataframe_ratio")}


def _q1(t):
    disc = F.expr("l_extendedprice * (1 - l_discount)")
    return (t["lineitem"].where(F.expr("l_shipdate <= date '1998-12-01' - interval 90 days"))
            .groupBy("l_returnflag", "l_linestatus")
            .agg(F.sum("l_quantity").alias("sum_qty"), F.sum("l_extendedprice").alias("sum_base_price"),
                 F.sum(disc).alias("sum_disc_price"), F.sum(disc * F.expr("(1 + l_tax)")).alias("sum_charge"),
                 F.avg("l_quantity").alias("avg_qty"), F.avg("l_extendedprice").alias("avg_price"),
                 F.avg("l_discount").alias("avg_disc"), F.count(F.lit(1)).alias("count_order"))
            .orderBy("l_returnflag", "l_linestatus"))


def _q6(t):
    return (t["lineitem"].where((F.col("l_shipdate") >= F.expr("date '1994-01-01'"))
                                & (F.col("l_shipdate") < F.expr("date '1994-01-01' + interval 1 year"))
                                & F.col("l_discount").between(F.expr("0.06 - 0.01"), F.expr("0.06 + 0.01"))
                                & (F.col("l_quantity") < 24))
            .agg(F.sum(F.expr("l_extendedprice * l_discount")).alias("revenue")))


def _q14(t):
    li = t["lineitem"].where((F.col("l_shipdate") >= F.expr("date '1995-09-01'"))
                             & (F.col("l_shipdate") < F.expr("date '1995-09-01' + interval 1 month")))
    joined = li.join(t["part"], li.l_partkey == t["part"].p_partkey)
    disc = F.expr("l_extendedprice * (1 - l_discount)")
    promo = F.sum(F.when(F.col("p_type").startswith("PROMO"), disc).otherwise(0))
    return joined.agg((F.lit(100.00) * promo / F.sum(disc)).alias("promo_revenue"))


# TPC-H queries as DataFrame calls over spark.read.format("carbondata").load(path) (same text semantics)
DATAFRAME_QUERIES = {1: _q1, 6: _q6, 14: _q14}


def arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per query and side, after one warm-up")
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "carbon-ds-tpch"),
                    help="work folder: generated data (kept per scale factor) and the written tables")
    ap.add_argument("--queries", default="all", help="subset, e.g. 1,6,14-16 (default all 22)")
    ap.add_argument("--load-queries", default="1,6",
                    help="queries also timed over spark.read.format('carbondata').load() views: list, all or none")
    ap.add_argument("--sql-queries", default="all",
                    help="queries also run through plain spark.sql over USING carbondata views (default all; none)")
    ap.add_argument("--dataframe-queries", default="1,6,14",
                    help=f"queries also run as DataFrame calls over load() (of {sorted(DATAFRAME_QUERIES)}; none)")
    ap.add_argument("--no-extension", action="store_true",
                    help="start Spark without the carbon-ds Catalyst extension (carbon_ds.configure_spark)")
    ap.add_argument("--reuse-tables", action="store_true",
                    help="keep the carbondata and Parquet tables a previous run wrote at this scale factor")
    ap.add_argument("--results", default="benchmarks/results", help="where tpch.json/.md/.png go")
    ap.add_argument("--memory", default="8g", help="Spark driver memory (Spark's own default: 1g)")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="Spark conf for the carbon-ds side, e.g. carbon_ds.sql.localRelationBytes=8388608")
    return ap.parse_args()


def folder_bytes(path: str) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


def failure(exc: BaseException) -> str:
    """One line for the report: the exception and the innermost frames of the traceback."""
    frames = traceback.extract_tb(exc.__traceback__)[-3:]
    where = " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno} {f.name}" for f in reversed(frames))
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first[:400]} [{where}]"


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def tables_named(numbers: list[int], sf: float) -> tuple[str, ...]:
    """The tables the queries ``numbers`` read (at SF 10, Q1 and Q6 need lineitem alone)."""
    texts = " ".join(query(n, sf) for n in numbers).lower()
    return tuple(t for t in TABLES if re.search(rf"\b{t}\b", texts))


def write_tables(spark, stage: dict[str, str], root: str, reuse: bool,
                 names: tuple[str, ...] = TABLES) -> dict[str, dict]:
    """Both copies of the tables ``names``, written by Spark from the same DataFrame; seconds and bytes per
    table."""
    marker = os.path.join(root, "_TABLES")
    info: dict[str, dict] = {}
    paths = {t: {k: os.path.join(root, k, t) for k in ("carbondata", "parquet")} for t in names}
    if reuse and os.path.exists(marker):
        with open(marker) as fh:
            info = json.load(fh)
        if all(t in info for t in names) and all(os.path.isdir(p) for t in names for p in paths[t].values()):
            print("reusing the tables written by an earlier run", flush=True)
            return {t: info[t] for t in names}
    if os.path.exists(marker):
        os.remove(marker)
    for t in names:
        src = spark.read.parquet(stage[t])
        row = {"paths": paths[t]}
        for kind, path in paths[t].items():
            shutil.rmtree(path, ignore_errors=True)
            t0 = time.perf_counter()
            if kind == "carbondata":
                src.write.format("carbondata").mode("overwrite").save(path)
            else:
                src.write.mode("overwrite").parquet(path)
            row[f"{kind}_write_s"] = time.perf_counter() - t0
            row[f"{kind}_bytes"] = folder_bytes(path)
        row["fields"] = [(f.name, f.dataType.simpleString()) for f in src.schema]
        info[t] = row
        print(f"  {t:<9} carbondata {row['carbondata_write_s']:6.2f}s {row['carbondata_bytes'] / 1e6:8.1f} MB"
              f"   parquet {row['parquet_write_s']:6.2f}s {row['parquet_bytes'] / 1e6:8.1f} MB", flush=True)
    with open(marker, "w") as fh:
        json.dump(info, fh)
    return info


def register_sides(spark, tables: dict[str, dict], extra: set[str]) -> dict:
    """One session per side, each with temporary views under the plain TPC-H names (``extra``: which of
    load, sql, dataframe to set up besides carbondata and parquet)."""
    sessions = {"carbondata": spark.newSession(), "parquet": spark.newSession()}
    for side in sorted(extra):
        sessions[side] = spark.newSession()
        carbon_ds.register(sessions[side])
    carbon_ds.register(sessions["carbondata"])
    for t, row in tables.items():
        cpath, ppath = row["paths"]["carbondata"], row["paths"]["parquet"]
        carbon_ds.sql(sessions["carbondata"], carbon_create_sql(t, [tuple(f) for f in row["fields"]], cpath))
        sessions["parquet"].read.parquet(ppath).createOrReplaceTempView(t)
        if "load" in extra:
            sessions["load"].read.format("carbondata").load(cpath).createOrReplaceTempView(t)
        if "sql" in extra:
            loc = cpath.replace("\\", "\\\\").replace("'", "\\'")
            sessions["sql"].sql(f"CREATE OR REPLACE TEMPORARY VIEW {t} USING carbondata OPTIONS (path '{loc}')")
        if "dataframe" in extra:
            sessions["dataframe"].read.format("carbondata").load(cpath).createOrReplaceTempView(t)
    # the same names must reach different files on each side
    probe = "lineitem" if "lineitem" in tables else next(iter(tables))
    for side, session in sessions.items():
        plan = session.sql(f"EXPLAIN SELECT * FROM {probe}").collect()[0][0].lower()
        if ("parquet" in plan) != (side == "parquet"):
            raise RuntimeError(f"the {side} session's {probe} is not the {side} table:\n{plan}")
    return sessions


def run_queries(sessions: dict, duck, numbers: list[int], extra_numbers: dict[str, set[int]], sf: float,
                repeat: int, after_each=None) -> dict[str, dict]:
    def runner(side: str, text: str, n: int):
        if side == "carbondata":
            return lambda: carbon_ds.sql(sessions[side], text).collect()
        if side == "dataframe":
            session = sessions[side]
            return lambda: DATAFRAME_QUERIES[n]({t: session.table(t) for t in TABLES}).collect()
        return lambda: sessions[side].sql(text).collect()

    out: dict[str, dict] = {}
    for n in numbers:
        text = query(n, sf)
        sides = [s for s in SIDES if s in sessions and (s not in EXTRA_SIDES or n in extra_numbers.get(s, ()))]
        res: dict = {"ordered": ordered(text), "errors": {}, "equal": {}, "notes": {}}
        rows: dict[str, list] = {}
        for side in sides:  # warm-up (timed, not counted); these rows are the ones compared
            try:
                t0 = time.perf_counter()
                rows[side] = runner(side, text, n)()
                res[f"{side}_first_s"] = time.perf_counter() - t0
            except Exception as exc:  # noqa: BLE001 - recorded and reported, the other queries still run
                res["errors"][side] = failure(exc)
        try:
            rows["duckdb"] = duck.execute(text).fetchall()
        except Exception as exc:  # noqa: BLE001
            res["errors"]["duckdb"] = failure(exc)
        ref = rows.get("parquet")
        if ref is not None:
            res["rows"] = len(ref)
            for other in ("carbondata", *EXTRA_SIDES, "duckdb"):
                if other in rows:
                    equal, note = compare(rows[other], ref, res["ordered"])
                    res["equal"][other] = equal
                    if note:
                        res["notes"][other] = note
        times: dict[str, list[float]] = {s: [] for s in sides if s in rows}
        for _ in range(repeat):
            for side in times:
                if side in res["errors"]:
                    continue
                fn = runner(side, text, n)
                t0 = time.perf_counter()
                try:
                    fn()
                except Exception as exc:  # noqa: BLE001 - a failure after a good warm-up is reported too
                    res["errors"][side] = failure(exc)
                    continue
                times[side].append(time.perf_counter() - t0)
        for side, ts in times.items():
            res[f"{side}_s"] = statistics.median(ts) if ts else None
            res[f"{side}_runs_s"] = ts
        if res.get("carbondata_s") and res.get("parquet_s"):
            res["ratio"] = res["carbondata_s"] / res["parquet_s"]
        for side, (_title, key) in EXTRA_SIDES.items():
            if res.get(f"{side}_s") and res.get("parquet_s"):
                res[key] = res[f"{side}_s"] / res["parquet_s"]
        out[f"q{n}"] = res
        msg = " ".join(
            f"{side} {res[f'{side}_s']:7.3f}s" for side in sides if res.get(f"{side}_s") is not None
        )
        eq = "equal" if res["equal"] and all(res["equal"].values()) else f"DIFFERENT {res['equal']}"
        errs = f" ERRORS {res['errors']}" if res["errors"] else ""
        ratio = f" ratio {res['ratio']:.2f}x" if "ratio" in res else ""
        print(f"Q{n:<2} {msg}{ratio}  rows {res.get('rows', '?')}  {eq}{errs}", flush=True)
        for side, note in res["notes"].items():
            print(f"      {side}: {note}", flush=True)
        if after_each is not None:
            after_each(out)
    return out


def summarise(results: dict[str, dict]) -> dict:
    both = [r for r in results.values() if r.get("ratio")]
    loads = [r for r in results.values() if r.get("load_ratio")]
    extra = {}
    for _title, key in EXTRA_SIDES.values():
        ratios = [r[key] for r in results.values() if r.get(key)]
        extra[f"geomean_{key}"] = geomean(ratios)
        extra[f"max_{key}"] = max(ratios) if ratios else None
        extra[f"total_{key}"] = (sum(r[key.removesuffix("_ratio") + "_s"] for r in results.values() if r.get(key))
                                 / sum(r["parquet_s"] for r in results.values() if r.get(key))) if ratios else None
    return {
        **extra,
        "queries_timed": len(both),
        "geomean_carbondata_s": geomean([r["carbondata_s"] for r in both]),
        "geomean_parquet_s": geomean([r["parquet_s"] for r in both]),
        "geomean_ratio": geomean([r["ratio"] for r in both]),
        "load_queries_timed": len(loads),
        "geomean_load_ratio": geomean([r["load_ratio"] for r in loads]),
        "all_equal": all(r["equal"] and all(r["equal"].values()) for r in results.values()),
        "failed": {q: r["errors"] for q, r in results.items() if r["errors"]},
    }


def markdown(results: dict[str, dict], summary: dict, sf: float, repeat: int, load_avg: tuple) -> str:
    extras = [(side, title, key) for side, (title, key) in EXTRA_SIDES.items()
              if any(r.get(f"{side}_s") for r in results.values())]
    head = "| query | carbon-ds (s) | Spark Parquet (s) | carbon-ds / Parquet |"
    rule = "|---|---:|---:|---:|"
    for _side, title, _key in extras:
        head += f" {title} (s) | {title} / Parquet |"
        rule += "---:|---:|"
    head += " rows | equal (carbon = Parquet = DuckDB) |"
    rule += "---:|---|"
    lines = [head, rule]

    def num(v, fmt):
        return format(v, fmt) if v is not None else "-"

    for q, r in results.items():
        if r["errors"]:
            equal = "failed: " + ", ".join(sorted(r["errors"]))
        elif r["equal"] and all(r["equal"].values()):
            equal = "yes" + (" (row order differs among ties)" if r["notes"] else "")
        else:
            equal = "NO: " + ", ".join(k for k, v in r["equal"].items() if not v)
        line = (f"| {q.upper()} | {num(r.get('carbondata_s'), '.3f')} | {num(r.get('parquet_s'), '.3f')} | "
               f"{num(r.get('ratio'), '.2f')}x |")
        for side, _title, key in extras:
            line += f" {num(r.get(f'{side}_s'), '.3f')} | " + (f"{r[key]:.2f}x |" if r.get(key) else "- |")
        line += f" {r.get('rows', '-')} | {equal} |"
        lines.append(line)
    gm = (f"| geomean | {num(summary['geomean_carbondata_s'], '.3f')} | {num(summary['geomean_parquet_s'], '.3f')} | "
         f"**{num(summary['geomean_ratio'], '.2f')}x** |")
    for _side, _title, key in extras:
        gm += " | " + (f"**{summary[f'geomean_{key}']:.2f}x** |" if summary[f"geomean_{key}"] else "- |")
    gm += " | |"
    lines.append(gm)
    lines.append("")
    lines.append(
        f"TPC-H SF {sf:g}, Spark local[2], median of {repeat} runs after one warm-up, carbon-ds through "
        f"`carbon_ds.sql` over tables registered with CREATE EXTERNAL TABLE, Parquet through `spark.sql` over "
        f"temporary views; load() / spark.sql / DataFrame: plain Spark over `load()` views, `USING carbondata` "
        f"views and DataFrame calls (the Catalyst extension on unless noted); ratio = carbon-ds / Parquet "
        f"(lower is better). Load average at start and end: "
        f"{load_avg[0]:.1f} / {load_avg[1]:.1f}."
    )
    for q, r in results.items():
        for side, err in r["errors"].items():
            lines.append(f"- {q.upper()} {side} failed: {err}")
        for side, note in r["notes"].items():
            lines.append(f"- {q.upper()} {side}: {note}")
    return "\n".join(lines) + "\n"


def chart(path: str, results: dict[str, dict], summary: dict, sf: float) -> None:
    plt = pyplot()
    if plt is None:
        return
    names = [q for q, r in results.items() if r.get("carbondata_s") and r.get("parquet_s")]
    if not names:
        return
    fig, ax = plt.subplots(figsize=(max(8, 0.5 * len(names) + 2), 4.5))
    xs = range(len(names))
    ax.bar([x - 0.2 for x in xs], [results[q]["carbondata_s"] for q in names], 0.4, label="carbon-ds (carbon_ds.sql)")
    ax.bar([x + 0.2 for x in xs], [results[q]["parquet_s"] for q in names], 0.4, label="Spark Parquet")
    ax.set_xticks(list(xs), [q.upper() for q in names], rotation=0, fontsize=8)
    ax.set_ylabel("seconds (median, lower is better)")
    gm = summary["geomean_ratio"]
    ax.set_title(f"TPC-H SF {sf:g}: carbon-ds / Parquet geomean {gm:.2f}x" if gm else f"TPC-H SF {sf:g}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def report(args, numbers: list[int], extra_numbers: dict[str, set[int]], generate_s: float, tables: dict,
           results: dict[str, dict], load_avg: tuple, complete: bool) -> tuple[str, dict]:
    """Write tpch.json, tpch.md and tpch.png (after every query too, so a stopped run keeps its numbers)."""
    import duckdb
    import pyspark

    summary = summarise(results)
    payload = {
        "sf": args.sf, "repeat": args.repeat, "queries": numbers,
        **{f"{side}_queries": sorted(ns) for side, ns in extra_numbers.items()},
        "extension": not args.no_extension,
        "complete": complete,
        "versions": {"carbon_ds": carbon_ds.__version__, "pyspark": pyspark.__version__,
                     "duckdb": duckdb.__version__, "python": sys.version.split()[0]},
        "load_average": {"start": load_avg[0], "end": load_avg[1]},
        "generate_s": generate_s,
        "tables": {t: {k: v for k, v in row.items() if k not in ("paths", "fields")} for t, row in tables.items()},
        "results": results, "summary": summary,
    }
    with contextlib.redirect_stdout(sys.stdout if complete else io.StringIO()):
        save(args.results, "tpch.json", payload)
    text = markdown(results, summary, args.sf, args.repeat, load_avg)
    if not complete:
        text += f"\nIncomplete run: {len(results)} of {len(numbers)} queries so far.\n"
    with open(os.path.join(args.results, "tpch.md"), "w") as fh:
        fh.write(text)
    chart(os.path.join(args.results, "tpch.png"), results, summary, args.sf)
    return text, summary


def main() -> None:
    args = arguments()
    numbers = parse_numbers(args.queries)
    load_spec = args.load_queries.strip().lower()
    load_numbers = set() if load_spec in ("none", "") else set(parse_numbers(load_spec)) & set(numbers)
    extra_numbers = {"load": load_numbers}
    for side, spec, allowed in (("sql", args.sql_queries, set(numbers)),
                                ("dataframe", args.dataframe_queries, set(DATAFRAME_QUERIES))):
        spec = spec.strip().lower()
        extra_numbers[side] = set() if spec in ("none", "") else set(parse_numbers(spec)) & set(numbers) & allowed
    extra_numbers = {side: ns for side, ns in extra_numbers.items() if ns}
    root = os.path.join(os.path.abspath(args.out), f"sf{args.sf:g}")
    load_start = os.getloadavg()[0]

    t0 = time.perf_counter()
    stage = generate(args.sf, os.path.join(root, "stage"), threads=os.cpu_count(),
                     progress=lambda t, n: print(f"  generated {t}: {n:,} rows", flush=True))
    generate_s = time.perf_counter() - t0
    print(f"TPC-H SF {args.sf:g} data in {os.path.join(root, 'stage')} ({generate_s:.1f}s)", flush=True)

    spark = spark_session(args.memory, extension=not args.no_extension)
    try:
        tables = write_tables(spark, stage, root, args.reuse_tables, tables_named(numbers, args.sf))
        sessions = register_sides(spark, tables, set(extra_numbers))
        for item in args.conf:
            key, _, value = item.partition("=")
            sessions["carbondata"].conf.set(key.strip(), value.strip())
        duck = duckdb_over_parquet({t: row["paths"]["parquet"] for t, row in tables.items()}, threads=os.cpu_count())

        def partial(results: dict[str, dict]) -> None:
            report(args, numbers, extra_numbers, generate_s, tables, results, (load_start, os.getloadavg()[0]), False)

        results = run_queries(sessions, duck, numbers, extra_numbers, args.sf, args.repeat, partial)
        duck.close()
    finally:
        spark.stop()

    load_avg = (load_start, os.getloadavg()[0])
    text, summary = report(args, numbers, extra_numbers, generate_s, tables, results, load_avg, True)
    print()
    print(text)
    gm = summary["geomean_ratio"]
    print(f"geomean carbon-ds / Parquet: {gm:.2f}x over {summary['queries_timed']} queries" if gm else "nothing timed")
    for side, (title, key) in EXTRA_SIDES.items():
        if summary.get(f"geomean_{key}"):
            print(f"{title} ({side}) / Parquet: geomean {summary[f'geomean_{key}']:.2f}x, max "
                  f"{summary[f'max_{key}']:.2f}x, total {summary[f'total_{key}']:.2f}x")
    if not summary["all_equal"] or summary["failed"]:
        print("RESULTS DIFFER OR QUERIES FAILED: see above", flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
