"""The partitioning talk's production case (seed 003), scaled to this machine, through Spark.

The talk's table: 51 columns of vehicle telemetry (mostly dimensions), RANGE-partitioned on the hour of
the day (RANGE_INFO '1, 2, ..., 24': 24 ranges, DEFAULT empty), SORT_COLUMNS 'Id, Field_C, Field_D'. Here:
the 32 columns of carbon_ds.demo.telemetry plus ``hour`` (hour of day of ``ts``) and 18 more sensor
columns = 51, sort columns vin, soc, brand. Three copies written by Spark from one cached DataFrame:

  carbon_range  carbon-ds, RANGE by hour (carbon_ds.write: one task per partition)
  carbon_plain  carbon-ds, the same rows unpartitioned (2 tasks)
  parquet_hour  Spark Parquet, partitionBy("hour") after repartition by hour, sorted like the others

Queries (the talk's five; the partition filter is the talk's ``hour >= 17 and hour < 20``):

  q1_range_agg   SELECT to_date(ts), count(DISTINCT vin) WHERE hour in [17, 20) GROUP BY 1
  q2_range_id    SELECT to_date(ts), count(*) WHERE hour in [17, 20) AND vin = V GROUP BY 1
  q3_no_filter   SELECT to_date(ts), count(*) GROUP BY 1
  q4_group_hour  SELECT hour, count(*) GROUP BY hour
  q5_detail      SELECT * WHERE hour in [17, 20) AND vin = V AND day = D

carbon-ds is read with carbon_ds.read(spark, path, columns, filter) (the pruned, projected relation),
Parquet with spark.read.parquet(...).where(filter). Per query and copy: median of ``--repeat`` runs after
one warm-up run, the copies interleaved in every round; Spark tasks (all stages of the query's jobs, from
Spark's status tracker); data files read (carbon-ds: explain; Parquet: the scan's "number of files read"
metric). Saves partition_case.json, partition_case.md and partition_case.png (matplotlib).

Spark runs with the carbon-ds Catalyst extension (``carbon_ds.configure_spark``, the documented Spark setup)
unless ``--no-extension`` is given.

    python benchmarks/partition_case.py [--rows 3000000] [--repeat 3] [--no-extension] [--out benchmarks/results]
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from common import parser, pyplot, save, spark_session

import carbon_ds
from carbon_ds.api import explain
from carbon_ds.demo import telemetry
from carbon_ds.spark.session import read as carbon_read
from carbon_ds.table.table import CarbonTable, RangePartition

COPIES = ("carbon_range", "carbon_plain", "parquet_hour")
SORT = ["vin", "soc", "brand"]
EXTRA = 18  # sensor columns added to telemetry's 32 and hour: 51 columns, as in the talk's table
H1, H2 = 17, 20


def widen(batch: pa.RecordBatch, seed: int) -> pa.RecordBatch:
    """telemetry's batch + hour of day + EXTRA sensor columns (cell voltages, temperatures, counters)."""
    rng = np.random.default_rng(seed)
    n = batch.num_rows
    us = pc.cast(batch.column("ts"), pa.int64()).to_numpy()
    hour = ((us // 3_600_000_000) % 24).astype(np.int32)
    cols = [*batch.columns, pa.array(hour)]
    names = [*batch.schema.names, "hour"]
    for i in range(EXTRA):
        if i % 3 == 0:
            cols.append(pa.array(np.round(rng.uniform(3.0, 4.3, n), 3)))
        elif i % 3 == 1:
            cols.append(pa.array(rng.integers(-20, 60, n).astype(np.int32)))
        else:
            cols.append(pa.array(rng.integers(0, 1 << 40, n)))
        names.append(f"sensor_{i:02d}")
    return pa.RecordBatch.from_arrays(cols, names=names)


def stage(path: str, rows: int) -> tuple[str, object]:
    """Write the generated rows to one Parquet file; return a (vin, day) of an hour-18 row to look up."""
    writer = None
    probe = None
    for k, b in enumerate(telemetry.batches(rows, seed=3)):
        w = widen(b, seed=1000 + k)
        if writer is None:
            writer = pq.ParquetWriter(path, w.schema)
        writer.write_batch(w)
        if probe is None:
            i = int(np.flatnonzero(w.column("hour").to_numpy() == 18)[100])
            probe = (w.column("vin")[i].as_py(), w.column("day")[i].as_py())
    writer.close()
    return probe


def queries(vin: str, day) -> dict[str, tuple[str | None, list[str] | None, str]]:
    rng = f"hour >= {H1} AND hour < {H2}"
    return {
        "q1_range_agg": (rng, ["ts", "vin"], "distinct_by_day"),
        "q2_range_id": (f"{rng} AND vin = '{vin}'", ["ts"], "by_day"),
        "q3_no_filter": (None, ["ts"], "by_day"),
        "q4_group_hour": (None, ["hour"], "by_hour"),
        "q5_detail": (f"{rng} AND vin = '{vin}' AND day = DATE '{day}'", None, "rows"),
    }


def run(df, shape: str):
    """The query's result rows (sorted, columns in name order) and the DataFrame that produced them."""
    from pyspark.sql import functions as F

    if shape == "distinct_by_day":
        out = df.groupBy(F.to_date("ts").alias("d")).agg(F.countDistinct("vin").alias("n"))
    elif shape == "by_day":
        out = df.groupBy(F.to_date("ts").alias("d")).count()
    elif shape == "by_hour":
        out = df.groupBy("hour").count()
    else:
        out = df.select(*sorted(df.columns))  # Parquet puts its partition column last
    return sorted(tuple(r) for r in out.collect()), out


def spark_tasks(spark, group: str) -> int:
    """Tasks of every stage of the jobs run under ``group`` (Spark's status tracker)."""
    tracker = spark.sparkContext.statusTracker()
    total = 0
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        for sid in info.stageIds if info else []:
            stage_info = tracker.getStageInfo(sid)
            total += stage_info.numTasks if stage_info else 0
    return total


def parquet_files_read(df) -> int:
    """Spark's own "number of files read" metric of the Parquet scans of an executed DataFrame (inside the
    adaptive plan's query stages too)."""
    plan = df._jdf.queryExecution().executedPlan()
    total = 0
    nodes = [plan]
    while nodes:
        node = nodes.pop()
        kind = node.getClass().getSimpleName()
        if kind == "AdaptiveSparkPlanExec":
            nodes.append(node.executedPlan())
            continue
        if kind.endswith("QueryStageExec"):
            nodes.append(node.plan())
            continue
        metrics = node.metrics()
        if metrics.contains("numFiles"):
            total += int(metrics.apply("numFiles").value())
        children = node.children()
        nodes += [children.apply(i) for i in range(children.size())]
    return total


def chart(path: str, medians: dict[str, dict[str, float]]) -> None:
    plt = pyplot()
    if plt is None:
        return
    names = list(medians)
    fig, ax = plt.subplots(figsize=(9, 4))
    for k, copy in enumerate(COPIES):
        ax.bar([i + 0.27 * (k - 1) for i in range(len(names))], [medians[n][copy] for n in names], 0.27,
               label=copy)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("seconds (median, lower is better)")
    ax.set_title("seed-003 production case through Spark")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def markdown(rows: int, repeat: int, results: dict, loads: dict, extension: bool = True) -> str:
    lines = ["| query | carbon-ds RANGE by hour | carbon-ds unpartitioned | Spark Parquet by hour | "
             "RANGE / Parquet |", "|---|---|---|---|---|"]
    for name, r in results.items():
        cells = [f"{r['seconds'][c]:.2f} s · {r['tasks'][c]} tasks · {r['files'][c]} files" for c in COPIES]
        lines.append(f"| {name} | {' | '.join(cells)} | "
                     f"{r['seconds']['carbon_range'] / r['seconds']['parquet_hour']:.2f}x |")
    lines.append(f"| load (write) | {loads['carbon_range']:.1f} s · {loads['files']['carbon_range']} files | "
                 f"{loads['carbon_plain']:.1f} s · {loads['files']['carbon_plain']} files | "
                 f"{loads['parquet_hour']:.1f} s · {loads['files']['parquet_hour']} files | "
                 f"{loads['carbon_range'] / loads['parquet_hour']:.2f}x |")
    lines.append("")
    lines.append(f"{rows:,} rows, 51 columns; median of {repeat} runs after a warm-up, copies interleaved; "
                 "local[2] Spark on a shared 2-core machine, "
                 + ("with" if extension else "without") + " the carbon-ds Spark extension.")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = parser(__doc__, rows=3_000_000, repeat=3)
    ap.add_argument("--no-extension", action="store_true", help="start Spark without the carbon-ds extension")
    args = ap.parse_args()
    spark = spark_session("6g", extension=not args.no_extension)
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    work = tempfile.mkdtemp(prefix="partition-case-")
    try:
        staged = os.path.join(work, "stage.parquet")
        vin, day = stage(staged, args.rows)
        src = spark.read.parquet(staged).repartition(2).cache()
        print(f"rows: {src.count():,}, columns: {len(src.columns)}; lookup vin={vin} day={day}", flush=True)

        paths = {c: os.path.join(work, c) for c in COPIES}
        schema = pq.read_schema(staged)
        loads: dict = {"files": {}}
        t0 = time.perf_counter()
        CarbonTable.create(paths["carbon_range"], schema, sort_columns=SORT,
                           partition=RangePartition("hour", list(range(1, 25))))
        carbon_ds.write(src, paths["carbon_range"])
        loads["carbon_range"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        carbon_ds.write(src, paths["carbon_plain"], sort_columns=SORT)
        loads["carbon_plain"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        (src.repartition(24, "hour").sortWithinPartitions(*SORT).write.mode("overwrite")
         .partitionBy("hour").parquet(paths["parquet_hour"]))
        loads["parquet_hour"] = time.perf_counter() - t0
        for c in ("carbon_range", "carbon_plain"):
            loads["files"][c] = len(CarbonTable.open(paths[c]).files())
        loads["files"]["parquet_hour"] = sum(f.endswith(".parquet") for _d, _s, fs in os.walk(paths["parquet_hour"])
                                             for f in fs)
        print("loads: " + ", ".join(f"{c} {loads[c]:.1f} s ({loads['files'][c]} files)" for c in COPIES), flush=True)
        src.unpersist()

        def frame(copy: str, flt: str | None, cols: list[str] | None):
            if copy != "parquet_hour":
                return carbon_read(spark, paths[copy], columns=cols, filter=flt)
            df = spark.read.parquet(paths[copy])
            if flt:
                df = df.where(flt)
            return df.select(*cols) if cols else df

        results: dict = {}
        sc = spark.sparkContext
        for name, (flt, cols, shape) in queries(vin, day).items():
            answers, tasks, files = {}, {}, {}
            for copy in COPIES:  # warm-up: answers, tasks and files read
                group = f"{name}-{copy}-warm"
                sc.setJobGroup(group, group)
                answers[copy], out = run(frame(copy, flt, cols), shape)
                tasks[copy] = spark_tasks(spark, group)
                if copy == "parquet_hour":
                    files[copy] = parquet_files_read(out)
                elif "carbondata" not in out._jdf.queryExecution().optimizedPlan().toString().lower():
                    files[copy] = 0  # answered from metadata (the partition column alone): no file opened
                else:
                    files[copy] = explain(paths[copy], flt)["files"]["read"]
            assert answers["carbon_range"] == answers["carbon_plain"] == answers["parquet_hour"], name
            times: dict[str, list[float]] = {c: [] for c in COPIES}
            for _ in range(args.repeat):  # interleaved rounds
                for copy in COPIES:
                    t0 = time.perf_counter()
                    run(frame(copy, flt, cols), shape)
                    times[copy].append(time.perf_counter() - t0)
            medians = {c: statistics.median(v) for c, v in times.items()}
            parts = explain(paths["carbon_range"], flt).get("partitions") or {}
            results[name] = {"filter": flt, "seconds": medians, "runs": times, "tasks": tasks, "files": files,
                             "result_rows": len(answers["carbon_range"]),
                             "partitions_read": len(parts.get("read", [])) if parts else None}
            print(f"{name:<14} " + "  ".join(f"{c} {medians[c]:6.2f}s {tasks[c]:3d} tasks {files[c]:3d} files"
                                              for c in COPIES), flush=True)
        sc.setJobGroup("", "")
        os.makedirs(args.out, exist_ok=True)
        stem = "partition_case" if not args.no_extension else "partition_case_no_extension"
        save(args.out, f"{stem}.json", {"rows": args.rows, "columns": len(schema), "repeat": args.repeat,
                                        "sort_columns": SORT, "extension": not args.no_extension, "loads": loads,
                                        "queries": results})
        text = markdown(args.rows, args.repeat, results, loads, not args.no_extension)
        with open(os.path.join(args.out, f"{stem}.md"), "w") as fh:
            fh.write(text)
        chart(os.path.join(args.out, f"{stem}.png"), {n: r["seconds"] for n, r in results.items()})
        print(text)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
