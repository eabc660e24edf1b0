"""TPC-DS on carbon-ds against Spark's own Parquet: the 99 queries, same data, same query text, same Spark.

Data and query texts come from DuckDB's ``tpcds`` extension (benchmarks/tpcds_data.py), generated once
per scale factor into the work folder (``--out``): one Parquet file per table, written by DuckDB, and the
same rows written as a carbondata table by ``carbon_ds.write_table``. Spark is started with the carbon-ds
Catalyst extension (``carbon_ds.configure_spark``); the queries run in sessions of that one SparkContext
(``spark.newSession()``), each with temporary views under the plain TPC-DS names:

  carbondata  ``CREATE TEMPORARY VIEW t USING carbondata OPTIONS (path '...')``; plain ``spark.sql(q)``
  parquet     ``spark.read.parquet(...)`` views over the same rows; plain ``spark.sql(q)``
  load        (``--load-queries``, default none) views over ``spark.read.format("carbondata").load(path)``

Per query the sides run interleaved: one warm-up each (whose rows are compared), then ``--repeat`` rounds
of carbondata, parquet[, load]; the median is kept. Rows are compared without regard to order, numbers to
1e-6 relative; where the outermost query has ORDER BY and LIMIT the order must match too (the same rows in
another order count as equal, with a note: ties). DuckDB's text goes through ``tpcds_data.spark_text``
(its small, listed dialect rewrites); a query Spark cannot run over Parquet is listed with Spark's error.
Saves tpcds.json, tpcds.md (per-query seconds, ratio carbon-ds / Parquet, geomean, the worst ten) and a
chart (``--chart``, matplotlib from the ``bench`` extra) to ``--results``, after every query too.

    python benchmarks/tpcds.py [--sf 1] [--repeat 3] [--queries 1,6,14-16] [--load-queries none|all|LIST]
                               [--out /tmp/carbon-ds-tpcds] [--results benchmarks/results] [--chart PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import tempfile
import time

import pyarrow.parquet as pq
import tpcds_data as ds
from common import pyplot, save, spark_session
from tpch import failure, folder_bytes, geomean

import carbon_ds

SIDES = ("carbondata", "parquet", "load")


def arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", type=float, default=1.0, help="TPC-DS scale factor (default 1)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per query and side, after one warm-up")
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "carbon-ds-tpcds"),
                    help="work folder: generated data and the carbondata tables, kept per scale factor")
    ap.add_argument("--queries", default="all", help="subset, e.g. 1,6,14-16 (default all 99)")
    ap.add_argument("--load-queries", default="none",
                    help="queries also timed over spark.read.format('carbondata').load() views: list, all or none")
    ap.add_argument("--results", default="benchmarks/results", help="where tpcds.json and tpcds.md go")
    ap.add_argument("--chart", default=None, help="chart file (default <results>/tpcds.png)")
    ap.add_argument("--memory", default="8g", help="Spark driver memory")
    return ap.parse_args()


def numbers(spec: str) -> list[int]:
    spec = spec.strip().lower()
    if spec in ("", "none"):
        return []
    if spec == "all":
        return list(ds.NUMBERS)
    out = set()
    for part in spec.split(","):
        part = part.strip().lstrip("q")
        if "-" in part:
            lo, hi = (int(p.strip().lstrip("q")) for p in part.split("-", 1))
            out.update(range(lo, hi + 1))
        elif part:
            out.add(int(part))
    bad = sorted(n for n in out if n not in ds.NUMBERS)
    if bad:
        raise SystemExit(f"TPC-DS has queries 1 to 99; unknown: {bad}")
    return sorted(out)


def write_carbondata(stage: dict[str, str], root: str) -> dict[str, dict]:
    """Every table as a carbondata table written by carbon_ds.write_table (kept: a ``_DONE`` file each)."""
    info = {}
    for t, src in stage.items():
        path = os.path.join(root, "carbondata", t)
        done = os.path.join(root, "carbondata", f"{t}._DONE")
        row = {"parquet": src, "carbondata": path, "parquet_bytes": os.path.getsize(src)}
        if not os.path.exists(done):
            t0 = time.perf_counter()
            carbon_ds.write_table(pq.read_table(src), path, mode="overwrite")
            row["carbondata_write_s"] = time.perf_counter() - t0
            with open(done, "w") as fh:
                fh.write("done")
            print(f"  {t:<22} written in {row['carbondata_write_s']:6.1f}s", flush=True)
        row["carbondata_bytes"] = folder_bytes(path)
        info[t] = row
    return info


def register_sides(spark, tables: dict[str, dict], with_load: bool) -> dict:
    sessions = {"carbondata": spark.newSession(), "parquet": spark.newSession()}
    if with_load:
        sessions["load"] = spark.newSession()
    for session in sessions.values():
        carbon_ds.register(session)
    for t, row in tables.items():
        loc = row["carbondata"].replace("\\", "\\\\").replace("'", "\\'")
        sessions["carbondata"].sql(f"CREATE OR REPLACE TEMPORARY VIEW {t} USING carbondata OPTIONS (path '{loc}')")
        sessions["parquet"].read.parquet(row["parquet"]).createOrReplaceTempView(t)
        if with_load:
            sessions["load"].read.format("carbondata").load(row["carbondata"]).createOrReplaceTempView(t)
    for side, session in sessions.items():  # the same names must reach different files on each side
        plan = session.sql("EXPLAIN SELECT * FROM store_sales").collect()[0][0].lower()
        if ("parquet" in plan) != (side == "parquet"):
            raise RuntimeError(f"the {side} session's store_sales is not the {side} table:\n{plan}")
    return sessions


def run_query(sessions: dict, n: int, text: str, sides: list[str], repeat: int) -> dict:
    res: dict = {"ordered": ds.ordered_limit(text), "errors": {}, "equal": {}, "notes": {}}
    if n in ds.UNSUPPORTED:
        res["unsupported"] = ds.UNSUPPORTED[n]
        return res
    rows: dict[str, list] = {}
    for side in sides:  # warm-up (not counted); these rows are the ones compared
        try:
            t0 = time.perf_counter()
            rows[side] = sessions[side].sql(text).collect()
            res[f"{side}_first_s"] = time.perf_counter() - t0
        except Exception as exc:  # noqa: BLE001 - recorded and reported, the other queries still run
            res["errors"][side] = failure(exc)
    if "parquet" in res["errors"]:  # Spark itself cannot run this text: nothing to compare with
        res["unsupported"] = "Spark over Parquet: " + res["errors"].pop("parquet")
        return res
    ref = rows["parquet"]
    res["rows"] = len(ref)
    for side in sides:
        if side != "parquet" and side in rows:
            equal, note = ds.compare(rows[side], ref, res["ordered"])
            res["equal"][side] = equal
            if note:
                res["notes"][side] = note
    times: dict[str, list[float]] = {s: [] for s in sides if s in rows}
    for _ in range(repeat):
        for side in times:
            if side in res["errors"]:
                continue
            t0 = time.perf_counter()
            try:
                sessions[side].sql(text).collect()
            except Exception as exc:  # noqa: BLE001 - a failure after a good warm-up is reported too
                res["errors"][side] = failure(exc)
                continue
            times[side].append(time.perf_counter() - t0)
    for side, ts in times.items():
        res[f"{side}_s"] = statistics.median(ts) if ts else None
        res[f"{side}_runs_s"] = ts
    if res.get("carbondata_s") and res.get("parquet_s"):
        res["ratio"] = res["carbondata_s"] / res["parquet_s"]
    if res.get("load_s") and res.get("parquet_s"):
        res["load_ratio"] = res["load_s"] / res["parquet_s"]
    return res


def summarise(results: dict[str, dict]) -> dict:
    timed = {q: r for q, r in results.items() if r.get("ratio")}
    worst = sorted(timed, key=lambda q: timed[q]["ratio"], reverse=True)[:10]
    return {
        "queries_timed": len(timed),
        "geomean_carbondata_s": geomean([r["carbondata_s"] for r in timed.values()]),
        "geomean_parquet_s": geomean([r["parquet_s"] for r in timed.values()]),
        "geomean_ratio": geomean([r["ratio"] for r in timed.values()]),
        "geomean_load_ratio": geomean([r["load_ratio"] for r in results.values() if r.get("load_ratio")]),
        "over_2x": sorted((q for q, r in timed.items() if r["ratio"] > 2), key=lambda q: int(q[1:])),
        "worst_ten": [(q, timed[q]["ratio"]) for q in worst],
        "all_equal": all(all(r["equal"].values()) for r in results.values()),
        "different": sorted(q for q, r in results.items() if not all(r["equal"].values())),
        "unsupported": {q: r["unsupported"] for q, r in results.items() if "unsupported" in r},
        "failed": {q: r["errors"] for q, r in results.items() if r["errors"]},
    }


def markdown(results: dict[str, dict], summary: dict, args, load_avg: tuple[float, float]) -> str:
    with_load = any(r.get("load_s") for r in results.values())

    def num(v, fmt):
        return format(v, fmt) if v is not None else "-"

    head = "| query | carbon-ds (s) | Spark Parquet (s) | carbon-ds / Parquet |"
    rule = "|---|---:|---:|---:|"
    if with_load:
        head += " load() (s) | load() / Parquet |"
        rule += "---:|---:|"
    lines = [head + " rows | equal |", rule + "---:|---|"]
    for q, r in results.items():
        if "unsupported" in r:
            equal = "not run: Spark cannot run it (below)"
        elif r["errors"]:
            equal = "failed: " + ", ".join(sorted(r["errors"]))
        elif all(r["equal"].values()):
            equal = "yes" + (" (ties ordered differently)" if r["notes"] else "")
        else:
            equal = "NO: " + ", ".join(k for k, v in r["equal"].items() if not v)
        line = (f"| {q.upper()} | {num(r.get('carbondata_s'), '.3f')} | {num(r.get('parquet_s'), '.3f')} | "
                f"{num(r.get('ratio'), '.2f')}x |")
        if with_load:
            line += f" {num(r.get('load_s'), '.3f')} | {num(r.get('load_ratio'), '.2f')}x |"
        lines.append(line + f" {r.get('rows', '-')} | {equal} |")
    gm = summary["geomean_ratio"]
    lines.append(f"| geomean | {num(summary['geomean_carbondata_s'], '.3f')} | "
                 f"{num(summary['geomean_parquet_s'], '.3f')} | **{num(gm, '.2f')}x** |"
                 + (f" | **{num(summary['geomean_load_ratio'], '.2f')}x** |" if with_load else "") + " | |")
    lines += ["", f"TPC-DS SF {args.sf:g} (DuckDB's dsdgen and query texts), Spark local[2] with the carbon-ds "
              f"extension, median of {args.repeat} run(s) after one warm-up, both sides through plain `spark.sql`: "
              f"carbon-ds over `USING carbondata` temporary views of tables written by `carbon_ds.write_table`, "
              f"Parquet over `spark.read.parquet` views of DuckDB's Parquet files; ratio = carbon-ds / Parquet "
              f"(lower is better). {summary['queries_timed']} queries timed. Load average at start and end: "
              f"{load_avg[0]:.1f} / {load_avg[1]:.1f}.", ""]
    if summary["worst_ten"]:
        lines.append("Worst ten: " + ", ".join(f"{q.upper()} {x:.2f}x" for q, x in summary["worst_ten"]) + ".")
    for q, why in summary["unsupported"].items():
        lines.append(f"- {q.upper()} not run: {why}")
    for q, r in results.items():
        for side, err in r["errors"].items():
            lines.append(f"- {q.upper()} {side} failed: {err}")
        for side, note in r["notes"].items():
            lines.append(f"- {q.upper()} {side}: {note}")
    lines += ["", "Dialect rewrites applied to DuckDB's texts (benchmarks/tpcds_data.py): "
              + "; ".join(why for _p, _r, why in ds.ADAPTATIONS) + "."]
    return "\n".join(lines) + "\n"


def chart(path: str, results: dict[str, dict], summary: dict, sf: float) -> None:
    plt = pyplot()
    if plt is None:
        return
    names = [q for q, r in results.items() if r.get("ratio")]
    if not names:
        return
    fig, ax = plt.subplots(figsize=(max(10, 0.16 * len(names) + 2), 4.5))
    ax.bar(range(len(names)), [results[q]["ratio"] for q in names], 0.7, label="carbon-ds / Spark Parquet")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(names)), [q[1:] for q in names], rotation=90, fontsize=6)
    ax.set_xlabel("TPC-DS query")
    ax.set_ylabel("time ratio (median, lower is better)")
    gm = summary["geomean_ratio"]
    ax.set_title(f"TPC-DS SF {sf:g}, plain spark.sql: carbon-ds / Parquet, geomean {gm:.2f}x" if gm else "")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def report(args, tables: dict, results: dict, load_avg: tuple[float, float], complete: bool) -> tuple[str, dict]:
    import pyspark

    summary = summarise(results)
    payload = {"sf": args.sf, "repeat": args.repeat, "complete": complete,
               "versions": {"carbon_ds": carbon_ds.__version__, "pyspark": pyspark.__version__,
                            "python": sys.version.split()[0]},
               "load_average": {"start": load_avg[0], "end": load_avg[1]},
               "tables": {t: {k: v for k, v in row.items() if k not in ("parquet", "carbondata")}
                          for t, row in tables.items()},
               "results": results, "summary": summary}
    with contextlib.redirect_stdout(sys.stdout if complete else io.StringIO()):
        save(args.results, "tpcds.json", payload)
    text = markdown(results, summary, args, load_avg)
    if not complete:
        text += f"\nIncomplete run: {len(results)} queries so far.\n"
    with open(os.path.join(args.results, "tpcds.md"), "w") as fh:
        fh.write(text)
    chart(args.chart or os.path.join(args.results, "tpcds.png"), results, summary, args.sf)
    return text, summary


def main() -> None:
    args = arguments()
    wanted = numbers(args.queries)
    load_numbers = set(numbers(args.load_queries)) & set(wanted)
    root = os.path.join(os.path.abspath(args.out), f"sf{args.sf:g}")
    load_start = os.getloadavg()[0]
    t0 = time.perf_counter()
    stage = ds.generate(args.sf, os.path.join(root, "stage"), threads=os.cpu_count())
    print(f"TPC-DS SF {args.sf:g} data in {os.path.join(root, 'stage')} ({time.perf_counter() - t0:.1f}s)", flush=True)
    tables = write_carbondata(stage, root)
    texts = ds.queries(os.path.join(root, "stage"))
    spark = spark_session(args.memory, extension=True)
    results: dict[str, dict] = {}
    try:
        sessions = register_sides(spark, tables, bool(load_numbers))
        for n in wanted:
            sides = ["carbondata", "parquet"] + (["load"] if n in load_numbers else [])
            r = run_query(sessions, n, ds.spark_text(texts[n]), sides, args.repeat)
            results[f"q{n}"] = r
            if "unsupported" in r:
                print(f"Q{n:<2} not run: {r['unsupported']}", flush=True)
            else:
                times = " ".join(f"{s} {r[f'{s}_s']:7.3f}s" for s in sides if r.get(f"{s}_s") is not None)
                eq = "equal" if all(r["equal"].values()) else f"DIFFERENT {r['equal']} {r['notes']}"
                ratio = f" ratio {r['ratio']:.2f}x" if "ratio" in r else ""
                errs = f" ERRORS {r['errors']}" if r["errors"] else ""
                print(f"Q{n:<2} {times}{ratio}  rows {r.get('rows', '?')}  {eq}{errs}", flush=True)
            report(args, tables, results, (load_start, os.getloadavg()[0]), False)
    finally:
        spark.stop()
    text, summary = report(args, tables, results, (load_start, os.getloadavg()[0]), True)
    print()
    print(text)
    if summary["different"] or summary["failed"]:
        print("RESULTS DIFFER OR QUERIES FAILED: see above", flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
