"""carbon-ds beside Delta Lake on Spark (delta-spark) and Spark's Parquet: the same data, one Spark, one run.

Run it in its own environment, made by ``bash scripts/setup-peers.sh`` (it prints the interpreter):
delta-spark 4.4.0 is built for Spark 4.0-4.2, so that venv holds PySpark 4.2.0, delta-spark 4.4.0 and
carbon-ds from its wheel; Delta's jars come from Maven Central through ``configure_spark_with_delta_pip``.

    $(bash scripts/setup-peers.sh) benchmarks/peers.py [--sf 1] [--repeat 3] [--out /tmp/carbon-ds-peers]

One SparkSession with both extensions (carbon-ds's ``carbon_ds.configure_spark``, Delta's
``DeltaSparkSessionExtension`` and ``DeltaCatalog``), every table written by Spark from the same DataFrame
three times: ``format("carbondata")``, ``format("delta")``, ``parquet``. Each side's queries run in a session
of its own (``spark.newSession()``) whose temporary views carry the plain TPC-H names: carbondata views are
``CREATE TEMPORARY VIEW ... USING carbondata`` and queries run through plain ``spark.sql``, as a user's would.

Workloads, interleaved (one warm-up each, whose rows are compared; then ``--repeat`` rounds; medians):

- TPC-H, the 22 queries (benchmarks/tpch_queries.py, DuckDB's generator; every answer equal to Parquet's);
- a point lookup and a 0.1% range on ``l_partkey`` of a lineitem copy clustered by it: carbon-ds
  ``sort_columns=l_partkey``, Delta ``OPTIMIZE ... ZORDER BY (l_partkey)``, Parquet
  ``sortWithinPartitions("l_partkey")``;
- MERGE of 1% changed rows (``WHEN MATCHED THEN UPDATE SET *`` on the order and line numbers) and DELETE of
  1% of lineitem, each on a fresh copy of the table (the copy is not timed), by Spark SQL on each format.

Delta's tables keep delta-spark's defaults (no deletion vectors unless its defaults say so) except
``spark.databricks.delta.snapshotPartitions``, set to 2 as the shuffle partitions are: its default of 50
tasks per snapshot made every query on a 2-core machine wait for 50 small tasks per table. Saves peers.json and peers.md to ``--results`` and prints the tables.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from importlib.metadata import version

from common import save
from delta import configure_spark_with_delta_pip  # the peers' venv (scripts/setup-peers.sh)
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the usual spelling
from tpch import failure, folder_bytes, geomean
from tpch_queries import TABLES, compare, duckdb_over_parquet, generate, ordered, parse_numbers, query

import carbon_ds

SIDES = ("carbondata", "delta", "parquet")
KEY = "l_partkey"


def arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per workload and side, after one warm-up")
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "carbon-ds-peers"),
                    help="work folder: generated data and the written tables")
    ap.add_argument("--queries", default="all", help="TPC-H subset, e.g. 1,6,14-16 (default all 22; none)")
    ap.add_argument("--results", default="benchmarks/results", help="where peers.json / peers.md go")
    ap.add_argument("--memory", default="8g", help="Spark driver memory")
    return ap.parse_args()


def session(memory: str) -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.master("local[2]")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.memory", memory)
               .config("spark.sql.shuffle.partitions", "2")
               # Delta rebuilds a table's snapshot in 50 tasks by default (sized for clusters); like the
               # shuffle partitions above, 2 on a 2-core machine
               .config("spark.databricks.delta.snapshotPartitions", "2")
               .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
               .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"))
    spark = carbon_ds.configure_spark(configure_spark_with_delta_pip(builder)).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    carbon_ds.register(spark)
    return spark


def quoted(path: str) -> str:
    return path.replace("\\", "\\\\").replace("'", "\\'")


def write(df, kind: str, path: str, sort: str | None = None) -> float:
    shutil.rmtree(path, ignore_errors=True)
    t0 = time.perf_counter()
    if kind == "carbondata":
        w = df.write.format("carbondata").mode("overwrite")
        (w.option("sort_columns", sort) if sort else w).save(path)
    elif kind == "delta":
        df.write.format("delta").mode("overwrite").save(path)
        if sort:
            df.sparkSession.sql(f"OPTIMIZE delta.`{path}` ZORDER BY ({sort})").collect()
    else:
        (df.sortWithinPartitions(sort) if sort else df).write.mode("overwrite").parquet(path)
    return time.perf_counter() - t0


def write_tables(spark, stage: dict[str, str], root: str) -> dict[str, dict]:
    info: dict[str, dict] = {}
    for t in (*TABLES, "lineitem_by_key"):
        src = spark.read.parquet(stage["lineitem" if t == "lineitem_by_key" else t])
        row: dict = {"paths": {k: os.path.join(root, k, t) for k in SIDES}}
        for kind, path in row["paths"].items():
            row[f"{kind}_write_s"] = write(src, kind, path, KEY if t == "lineitem_by_key" else None)
            row[f"{kind}_bytes"] = folder_bytes(path)
        info[t] = row
        print(f"  {t:<15} " + "   ".join(f"{k} {row[f'{k}_write_s']:6.1f}s {row[f'{k}_bytes'] / 1e6:7.1f} MB"
                                          for k in SIDES), flush=True)
    return info


def view_sql(kind: str, name: str, path: str) -> str:
    if kind == "carbondata":
        return f"CREATE OR REPLACE TEMPORARY VIEW {name} USING carbondata OPTIONS (path '{quoted(path)}')"
    if kind == "delta":
        return f"CREATE OR REPLACE TEMPORARY VIEW {name} AS SELECT * FROM delta.`{path}`"
    return f"CREATE OR REPLACE TEMPORARY VIEW {name} USING parquet OPTIONS (path '{quoted(path)}')"


def sessions_for(spark, tables: dict[str, dict]) -> dict:
    out = {}
    for kind in SIDES:
        s = spark.newSession()
        if kind != "delta":
            # the other sides keep Spark's own session catalog, as a user of that format alone would
            s.conf.set("spark.sql.catalog.spark_catalog", "builtin")
        carbon_ds.register(s)
        for t, row in tables.items():
            s.sql(view_sql(kind, t, row["paths"][kind]))
        out[kind] = s
    for kind, s in out.items():  # the same names must reach each side's own files
        plan = s.sql("EXPLAIN SELECT * FROM lineitem").collect()[0][0].lower()
        want = {"carbondata": "carbon", "delta": "delta", "parquet": "parquet"}[kind]
        if want not in plan:
            raise RuntimeError(f"the {kind} session's lineitem is not the {kind} table:\n{plan}")
    return out


def timed_sides(label: str, runs: dict, repeat: int, is_ordered: bool = False, ref_side: str = "parquet",
                check: dict | None = None) -> dict:
    """``runs``: side -> (prepare, run): ``prepare()`` is untimed, ``run()`` returns the rows compared with
    ``ref_side``'s, or ``check[side]()`` does after the warm-up run."""
    res: dict = {"errors": {}, "equal": {}}
    rows: dict[str, list] = {}
    for side, (prepare, run) in runs.items():
        try:
            prepare()
            got = run()
            rows[side] = check[side]() if check else got
        except Exception as exc:  # noqa: BLE001 - recorded and reported, the others still run
            res["errors"][side] = failure(exc)
    ref = rows.get(ref_side)
    for side in ("carbondata", "delta"):
        if ref is not None and side in rows and side != ref_side:
            res["equal"][side] = compare(rows[side], ref, is_ordered)[0]
    times: dict[str, list[float]] = {s: [] for s in runs if s not in res["errors"]}
    for _ in range(repeat):
        for side in times:
            prepare, run = runs[side]
            prepare()
            t0 = time.perf_counter()
            run()
            times[side].append(time.perf_counter() - t0)
    for side, ts in times.items():
        res[f"{side}_s"] = statistics.median(ts) if ts else None
    for side in ("carbondata", "delta"):
        if res.get(f"{side}_s") and res.get("parquet_s"):
            res[f"{side}_vs_parquet"] = res[f"{side}_s"] / res["parquet_s"]
    if res.get("carbondata_s") and res.get("delta_s"):
        res["carbondata_vs_delta"] = res["carbondata_s"] / res["delta_s"]
    line = " ".join(f"{s} {res[f'{s}_s']:7.3f}s" for s in SIDES if res.get(f"{s}_s") is not None)
    vs = f" carbon/delta {res['carbondata_vs_delta']:.2f}x" if "carbondata_vs_delta" in res else ""
    eq = "equal" if res["equal"] and all(res["equal"].values()) else f"DIFFERENT {res['equal']}"
    print(f"{label:<8} {line}{vs}  {eq}" + (f" ERRORS {res['errors']}" if res["errors"] else ""), flush=True)
    return res


def nothing() -> None:
    return None


def tpch(sessions: dict, numbers: list[int], sf: float, repeat: int) -> dict:
    out = {}
    for n in numbers:
        text = query(n, sf)
        runs = {k: (nothing, lambda s=s, t=text: s.sql(t).collect()) for k, s in sessions.items()}
        out[f"q{n}"] = timed_sides(f"Q{n}", runs, repeat, ordered(text))
    return out


def lookups(sessions: dict, duck, repeat: int) -> dict:
    lo, hi = duck.execute(f"SELECT min({KEY}), max({KEY}) FROM lineitem").fetchone()
    point = lo + (hi - lo) // 3
    width = max(1, (hi - lo) // 1000)
    texts = {"lookup": f"SELECT * FROM lineitem_by_key WHERE {KEY} = {point}",
             "range": (f"SELECT count(*), sum(l_extendedprice) FROM lineitem_by_key "
                       f"WHERE {KEY} BETWEEN {point} AND {point + width}")}
    return {name: timed_sides(name, {k: (nothing, lambda s=s, t=t: s.sql(t).collect()) for k, s in sessions.items()},
                              repeat)
            for name, t in texts.items()}


def changes(sessions: dict, tables: dict, root: str, repeat: int) -> dict:
    """MERGE of 1% changed rows and DELETE of 1%, each run on a fresh copy of lineitem (copy not timed), in
    each format's own session."""
    for s in sessions.values():
        src = s.read.parquet(tables["lineitem"]["paths"]["parquet"])
        changed = src.where("l_orderkey % 100 = 7").withColumn("l_quantity", F.col("l_quantity") + 1)
        changed.createOrReplaceTempView("peers_changed")
    counter = iter(range(10**6))
    target: dict[str, str] = {}

    def fresh(kind: str):
        def prepare() -> None:
            path = os.path.join(root, "copies", kind)
            shutil.rmtree(path, ignore_errors=True)
            shutil.copytree(tables["lineitem"]["paths"][kind], path)
            if kind == "carbondata":  # a catalog table over the copy: Spark SQL's MERGE / DELETE target
                name = f"peers_li_{next(counter)}"
                sessions[kind].sql(f"CREATE TABLE {name} USING carbondata LOCATION '{quoted(path)}'")
                target[kind] = name
            elif kind == "delta":
                target[kind] = f"delta.`{path}`"
            else:
                target[kind] = path
        return prepare

    def statement(kind: str, text: str):
        return lambda: sessions[kind].sql(text.format(t=target[kind])).collect()

    def totals(kind: str):
        return lambda: sessions[kind].sql(f"SELECT count(*), sum(l_quantity), sum(l_orderkey * l_linenumber) "
                                          f"FROM {target[kind]}").collect()

    texts = {"merge": ("MERGE INTO {t} t USING peers_changed s ON t.l_orderkey = s.l_orderkey "
                       "AND t.l_linenumber = s.l_linenumber WHEN MATCHED THEN UPDATE SET *"),
             "delete": "DELETE FROM {t} WHERE l_orderkey % 100 = 13"}
    kinds = ("carbondata", "delta")
    # Parquet has no MERGE / DELETE: carbon-ds's table after the change is compared with Delta's
    return {name: timed_sides(name, {k: (fresh(k), statement(k, text)) for k in kinds}, repeat,
                              ref_side="delta", check={k: totals(k) for k in kinds})
            for name, text in texts.items()}


def markdown(results: dict, args, load_avg: tuple) -> str:
    lines = [f"TPC-H SF {args.sf:g}, medians of {args.repeat} interleaved runs, load average at start "
             f"{load_avg[0]:.1f} / {load_avg[1]:.1f} / {load_avg[2]:.1f}", "",
             "| workload | carbon-ds | Delta | Parquet | carbon-ds / Delta | carbon-ds / Parquet | equal |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]

    def num(v, fmt):
        return format(v, fmt) if v is not None else "-"

    for group in ("tpch", "lookups", "changes"):
        for name, r in results[group].items():
            lines.append(f"| {name} | {num(r.get('carbondata_s'), '.3f')} | {num(r.get('delta_s'), '.3f')} | "
                         f"{num(r.get('parquet_s'), '.3f')} | {num(r.get('carbondata_vs_delta'), '.2f')} | "
                         f"{num(r.get('carbondata_vs_parquet'), '.2f')} | "
                         f"{'yes' if r['equal'] and all(r['equal'].values()) else 'NO'} |")
    s = results["summary"]
    lines += ["", f"TPC-H geomean: carbon-ds / Delta {num(s['tpch_vs_delta'], '.2f')}x, carbon-ds / Parquet "
                  f"{num(s['tpch_vs_parquet'], '.2f')}x, Delta / Parquet {num(s['delta_vs_parquet'], '.2f')}x"]
    return "\n".join(lines) + "\n"


def main() -> None:
    args = arguments()
    load_avg = os.getloadavg()
    os.makedirs(args.out, exist_ok=True)
    stage = generate(args.sf, os.path.join(args.out, f"data-sf{args.sf:g}"))
    spark = session(args.memory)
    root = os.path.join(args.out, f"tables-sf{args.sf:g}")
    print(f"writing the tables at SF {args.sf:g} (carbondata, delta, parquet)", flush=True)
    tables = write_tables(spark, stage, root)
    sessions = sessions_for(spark, tables)
    duck = duckdb_over_parquet({t: stage[t] for t in TABLES})
    numbers = [] if args.queries == "none" else parse_numbers(args.queries)
    results: dict = {"tpch": tpch(sessions, numbers, args.sf, args.repeat),
                     "lookups": lookups(sessions, duck, args.repeat),
                     "changes": changes(sessions, tables, root, args.repeat)}
    q = results["tpch"].values()
    results["summary"] = {
        "tpch_vs_delta": geomean([r.get("carbondata_vs_delta") for r in q]),
        "tpch_vs_parquet": geomean([r.get("carbondata_vs_parquet") for r in q]),
        "delta_vs_parquet": geomean([r["delta_s"] / r["parquet_s"] for r in q if r.get("delta_s") and r.get("parquet_s")]),
        "all_equal": all(r["equal"] and all(r["equal"].values()) for g in ("tpch", "lookups") for r in results[g].values()),
    }
    versions = {"pyspark": spark.version, "delta-spark": version("delta-spark"), "carbon-ds": version("carbon-ds")}
    md = markdown(results, args, load_avg)
    print(md)
    save(args.results, "peers.json", {"sf": args.sf, "repeat": args.repeat, "load_avg": load_avg,
                                      "versions": versions, "tables": tables, **results})
    with open(os.path.join(args.results, "peers.md"), "w") as fh:
        fh.write(md)
    spark.stop()


if __name__ == "__main__":
    main()
