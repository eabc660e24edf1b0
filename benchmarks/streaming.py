"""Structured Streaming: a rate-source stream into a carbondata table against the same stream into Parquet
files (``writeStream.format("parquet")``), then each read back as a stream.

Each sink runs ``--seconds`` with 1-second triggers (``--trigger``) on ``--rate`` rows/s of
``(timestamp, value, vin, amount)``; the two sinks run one after the other in the same Spark session
(``--repeat`` alternates their order and keeps each one's best run).
Reported per sink: rows committed, rows/s over the run (committed rows / wall time from the first batch's
start to the last batch's end), Spark's processed rows/s (rows / time spent in triggers), and end-to-end
latency (commit time of a batch's segment or file minus each row's rate timestamp; median and p95 of
rows). Then a streaming read of everything written (``Trigger.AvailableNow`` into the ``noop`` sink):
carbondata's source against Spark's Parquet file source.

    python benchmarks/streaming.py [--seconds 40] [--rate 100000] [--trigger "1 second"] [--repeat 1]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from datetime import datetime

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from common import parser, save, spark_session

import carbon_ds
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.ops.streams.commit import BATCH_KEY

WARMUP = 2


def stream_df(spark, rate: int):
    from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

    df = spark.readStream.format("rate").option("rowsPerSecond", rate).option("numPartitions", 2).load()
    return df.select(
        F.col("timestamp"),
        F.col("value"),
        F.concat(F.lit("V"), (F.col("value") % 997).cast("string")).alias("vin"),
        (F.col("value") % 1000 / 10).alias("amount"),
    )


def run_sink(spark, fmt: str, target: str, checkpoint: str, rate: int, seconds: float, trigger: str) -> dict:
    q = (stream_df(spark, rate).writeStream.format(fmt).option("checkpointLocation", checkpoint)
         .trigger(processingTime=trigger).start(target))
    started = None
    while True:  # the clock starts at the first batch: JVM and worker start-up are not the sink's cost
        p = q.lastProgress
        if q.exception() is not None:
            raise q.exception()
        if p is not None and started is None:
            started = time.monotonic()
        if started is not None and time.monotonic() - started >= seconds:
            break
        time.sleep(0.2)
    q.stop()
    # the first WARMUP batches carry the rows generated while the query started: left out of every figure
    progress = [p for p in q.recentProgress if p["numInputRows"] and p["batchId"] >= WARMUP]
    rows = sum(p["numInputRows"] for p in progress)
    busy_ms = sum(p["durationMs"].get("triggerExecution", 0) for p in progress)
    first = _ts(progress[0]["timestamp"])
    last = max(_ts(p["timestamp"]) + p["durationMs"].get("triggerExecution", 0) / 1000 for p in progress)
    return {"batches": len(progress), "first_batch": WARMUP, "rows_in_progress": rows, "rows_per_s": rows / max(last - first, 1e-9),
            "processed_rows_per_s": rows / max(busy_ms / 1000, 1e-9),
            "batch_ms_median": statistics.median(p["durationMs"].get("triggerExecution", 0) for p in progress)}


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def latencies_carbon(path: str) -> tuple[int, list[float]]:
    """(rows, each row's seconds from its rate timestamp to its segment's commit), batches from WARMUP on."""
    out: list[float] = []
    rows = 0
    for e in TableHandle.open(path).load_details():
        batch = int(e.other.get(BATCH_KEY, "x:-1").rsplit(":", 1)[1])
        if e.status != "Success" or batch < WARMUP:
            continue
        t = carbon_ds.read_table(path, columns=["timestamp"], segments=e.name)
        rows += t.num_rows
        out += _lags(t.column("timestamp"), int(e.timestamp) / 1000)
    return rows, out


def latencies_parquet(folder: str) -> tuple[int, list[float]]:
    """The same for the Parquet sink: its log ``_spark_metadata/<batch>`` lists each batch's files."""
    out: list[float] = []
    rows = 0
    log = os.path.join(folder, "_spark_metadata")
    for name in os.listdir(log):
        if not name.isdigit() or int(name) < WARMUP:
            continue
        with open(os.path.join(log, name)) as fh:
            files = [json.loads(line)["path"] for line in fh.read().splitlines()[1:] if line.strip()]
        committed = os.path.getmtime(os.path.join(log, name))  # the batch's files become visible here
        for uri in files:
            t = pq.read_table(uri.removeprefix("file://"), columns=["timestamp"])
            rows += t.num_rows
            out += _lags(t.column("timestamp"), committed)
    return rows, out


def _lags(ts: pa.ChunkedArray, committed: float) -> list[float]:
    micros = pc.cast(pc.cast(ts, pa.timestamp("us")), pa.int64()).to_numpy()
    return list(committed - micros / 1e6)


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def read_back(spark, reader, checkpoint: str) -> tuple[int, float]:
    t0 = time.perf_counter()
    q = reader.writeStream.format("noop").option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    q.awaitTermination()
    elapsed = time.perf_counter() - t0
    return sum(p["numInputRows"] for p in q.recentProgress), elapsed


def main() -> None:
    ap = parser(__doc__, rows=0, repeat=1)
    ap.add_argument("--seconds", type=float, default=40)
    ap.add_argument("--rate", type=int, default=100_000)
    ap.add_argument("--trigger", default="1 second")
    args = ap.parse_args()
    spark = spark_session()
    base = tempfile.mkdtemp(prefix="carbon_stream_bench_")
    results: dict = {"seconds": args.seconds, "rate": args.rate, "trigger": args.trigger}
    try:
        for i in range(args.repeat):  # alternating runs; each sink's best is kept
            order = (("parquet", "parquet"), ("carbondata", "carbondata"))
            for name, fmt in order if i % 2 == 0 else order[::-1]:
                target = os.path.join(base, f"{name}_{i}")
                r = run_sink(spark, fmt, target, os.path.join(base, f"ck_{name}_{i}"), args.rate, args.seconds,
                             args.trigger)
                rows, lags = latencies_carbon(target) if fmt == "carbondata" else latencies_parquet(target)
                r.update(rows=rows, latency_s_median=pct(lags, 0.5), latency_s_p95=pct(lags, 0.95), target=target)
                print(f"{name:>10} sink: {rows:,} rows in {r['batches']} batches, {r['rows_per_s']:,.0f} rows/s, "
                      f"processed {r['processed_rows_per_s']:,.0f} rows/s, batch {r['batch_ms_median']:.0f} ms, "
                      f"latency median {r['latency_s_median']:.2f} s, p95 {r['latency_s_p95']:.2f} s", flush=True)
                if name not in results or r["rows_per_s"] > results[name]["rows_per_s"]:
                    results[name] = r
        table, parquet = results["carbondata"]["target"], results["parquet"]["target"]
        ratio = results["carbondata"]["rows_per_s"] / results["parquet"]["rows_per_s"]
        results["carbondata_vs_parquet_rows_per_s"] = ratio
        print(f"carbondata / parquet rows/s: {ratio:.2f}x")

        schema = spark.read.parquet(parquet).schema
        for name, reader in (
            ("parquet", spark.readStream.schema(schema).parquet(parquet)),
            ("carbondata", spark.readStream.format("carbondata").option("starting_segment", "earliest").load(table)),
        ):
            rows, elapsed = read_back(spark, reader, os.path.join(base, f"ck_read_{name}"))
            results[f"{name}_read"] = {"rows": rows, "seconds": elapsed, "rows_per_s": rows / elapsed}
            print(f"{name:>10} stream read: {rows:,} rows in {elapsed:.1f} s, {rows / elapsed:,.0f} rows/s", flush=True)
        save(args.out, "streaming.json", results)
    finally:
        spark.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
