"""A long stream into a carbondata table: is every row there exactly once, and does the table the sink leaves
read as fast as the same rows written in one load?

A ``rate`` source at ``--rate`` rows/s (``value`` 0, 1, 2, ... plus a timestamp, a string and a double) writes
into a carbondata table with a ``--trigger`` processing-time trigger (default 1 second) for ``--minutes``
(default 30). The sink merges its batch segments in the background (``auto_load_merge``, on by default for
the stream; ``--no-merge`` turns it off; ``--merge-levels 2`` stops at CarbonData's two MINOR levels instead of
merging merged segments again). Then:

- exactly once: the ids in the table against the ids the source produced in the batches Spark committed
  (the rate source's offset log in the checkpoint: batch ``b`` covers values ``rate * start`` .. ``rate * end
  - 1`` of its offsets); a batch Spark had planned but not recorded as committed when the query stopped may
  be in the table or not (its replay would be recognised), never twice and never in part;
- segments: batch segments the stream committed, live segments when it stopped and once the background merge
  has settled;
- reads, medians of ``--repeat`` interleaved runs, the streamed table against a copy of the same rows written
  in a single load (``carbon_ds.write_table`` of all rows in ``value`` order): a full read and a filtered read
  (a 1% ``value`` range) through ``carbon_ds.read_table`` and through Spark (``spark.read.format("carbondata")``
  into the ``noop`` sink); then the ratio streamed / single load.

    python benchmarks/stream_soak.py [--minutes 30] [--rate 1000] [--trigger "1 second"] [--repeat 3] [--keep DIR]
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import statistics
import tempfile
import time

import pyarrow as pa
import pyarrow.compute as pc
from common import parser, save, spark_session

import carbon_ds
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.ops.streams.commit import BATCH_KEY


def stream_df(spark, rate: int, partitions: int):
    from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

    df = (spark.readStream.format("rate").option("rowsPerSecond", rate).option("numPartitions", partitions)
          .load())
    return df.select(F.col("value"), F.col("timestamp"),
                     F.concat(F.lit("V"), (F.col("value") % 997).cast("string")).alias("vin"),
                     (F.col("value") % 1000 / 10).alias("amount"))


def run_stream(spark, args, target: str, checkpoint: str) -> dict:
    w = (stream_df(spark, args.rate, args.partitions).writeStream.format("carbondata")
         .option("checkpointLocation", checkpoint).trigger(processingTime=args.trigger))
    if args.no_merge:
        w = w.option("auto_load_merge", "false")
    w = w.option("merge_levels", args.merge_levels)
    q = w.start(target)
    started = None
    seconds = args.minutes * 60
    last_note = 0.0
    while True:  # the clock starts at the first batch: JVM start-up is not the sink's time
        if q.exception() is not None:
            raise q.exception()
        p = q.lastProgress
        if p is not None and started is None:
            started = time.monotonic()
        if started is not None:
            ran = time.monotonic() - started
            if ran >= seconds:
                break
            if ran - last_note >= 60:
                last_note = ran
                print(f"  {ran / 60:.0f} min: batch {p['batchId']}, {live_segments(target)} live segments",
                      flush=True)
        time.sleep(0.2)
    q.stop()
    progress = list(q.recentProgress)
    return {"seconds": time.monotonic() - started, "batches_in_progress": len(progress),
            "batch_ms_median": statistics.median(p["durationMs"].get("triggerExecution", 0) for p in progress)
            if progress else None}


def live_segments(path: str) -> int:
    return sum(1 for e in TableHandle.open(path).load_details() if e.status == ts.SUCCESS)


def segment_counts(path: str) -> dict:
    entries = TableHandle.open(path).load_details()
    return {"batch_segments": sum(1 for e in entries if e.other.get(BATCH_KEY) is not None),
            "live": sum(1 for e in entries if e.status == ts.SUCCESS),
            "in_progress": sum(1 for e in entries if e.status == ts.IN_PROGRESS),
            "merged_live": sum(1 for e in entries if e.status == ts.SUCCESS and "." in e.name)}


def settle(path: str, quiet: float = 10.0, limit: float = 300.0) -> dict:
    """Segment counts once the status file has not changed for ``quiet`` seconds (the background merge, if
    one is still running in a Spark Python worker, has committed or been cut short)."""
    status = TableHandle.open(path).tablestatus_path
    t0 = time.monotonic()
    seen = os.path.getmtime(status)
    still = time.monotonic()
    while time.monotonic() - still < quiet and time.monotonic() - t0 < limit:
        time.sleep(1)
        now = os.path.getmtime(status)
        if now != seen:
            seen, still = now, time.monotonic()
    return segment_counts(path)


def committed_ranges(checkpoint: str, rate: int) -> tuple[list[tuple[int, int]], tuple[int, int] | None]:
    """The value ranges of the batches Spark recorded as committed, and of a planned one it did not record.

    The rate source's offset in ``offsets/<batch>`` is seconds since its start; batch ``b`` produces values
    ``rate * offset(b - 1)`` .. ``rate * offset(b) - 1`` (no ramp-up)."""
    def offset(batch: int) -> int:
        with open(os.path.join(checkpoint, "offsets", str(batch))) as fh:
            return int(json.loads(fh.read().splitlines()[-1]))

    planned = sorted(int(os.path.basename(f)) for f in glob.glob(os.path.join(checkpoint, "offsets", "*"))
                     if os.path.basename(f).isdigit())
    done = {int(os.path.basename(f)) for f in glob.glob(os.path.join(checkpoint, "commits", "*"))
            if os.path.basename(f).isdigit()}
    ranges = []
    pending = None
    for b in planned:
        r = (rate * (offset(b - 1) if b > 0 else 0), rate * offset(b))
        if b in done:
            ranges.append(r)
        else:
            pending = r
    return ranges, pending


def exactly_once(path: str, checkpoint: str, rate: int) -> dict:
    column = carbon_ds.read_table(path, columns=["value"]).column("value")
    values = column.take(pc.sort_indices(column)).to_numpy()
    ranges, pending = committed_ranges(checkpoint, rate)
    expected = sum(b - a for a, b in ranges)
    contiguous = ranges == sorted(ranges) and all(ranges[i][1] == ranges[i + 1][0] for i in range(len(ranges) - 1))
    top = ranges[-1][1] if ranges else 0
    dups = int((values[1:] == values[:-1]).sum()) if len(values) else 0
    pending_rows = (pending[1] - pending[0]) if pending else 0
    # every committed value once, and the planned-but-unrecorded batch wholly or not at all
    ok_without = len(values) == expected and (len(values) == 0 or (values[0] == 0 and values[-1] == top - 1))
    ok_with = (pending is not None and pending[0] == top and len(values) == expected + pending_rows
               and values[0] == 0 and values[-1] == pending[1] - 1)
    return {"rows": len(values), "committed_batches": len(ranges), "expected_rows": expected,
            "pending_batch_rows": pending_rows, "pending_batch_in_table": bool(ok_with),
            "duplicates": dups, "contiguous_offsets": contiguous, "exactly_once": bool(dups == 0 and (ok_without or ok_with))}


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def compare_reads(spark, streamed: str, single: str, lo: int, hi: int, repeat: int) -> dict:
    filt = f"value >= {lo} AND value < {hi}"

    def carbon_full(p):
        return carbon_ds.read_table(p).num_rows

    def carbon_filtered(p):
        return carbon_ds.read_table(p, filter=filt).num_rows

    def spark_full(p):
        spark.read.format("carbondata").load(p).write.format("noop").mode("overwrite").save()

    def spark_filtered(p):
        spark.read.format("carbondata").load(p).where(filt).write.format("noop").mode("overwrite").save()

    reads = {"carbon-ds full read": carbon_full, "carbon-ds filtered read": carbon_filtered,
             "Spark full read": spark_full, "Spark filtered read": spark_filtered}
    assert carbon_full(streamed) == carbon_full(single)
    assert carbon_filtered(streamed) == carbon_filtered(single)
    out = {}
    for name, fn in reads.items():
        fn(streamed), fn(single)  # warm-up: JIT, caches a long-lived process keeps
        times: dict[str, list[float]] = {"streamed": [], "single": []}
        for i in range(repeat):
            order = ("streamed", "single") if i % 2 == 0 else ("single", "streamed")
            for which in order:
                t0 = time.perf_counter()
                fn(streamed if which == "streamed" else single)
                times[which].append(time.perf_counter() - t0)
        s, o = median_ms(times["streamed"]), median_ms(times["single"])
        out[name] = {"streamed_ms": s, "single_load_ms": o, "ratio": s / o}
        print(f"{name:>24}: streamed {s:8.1f} ms, single load {o:8.1f} ms, ratio {s / o:.2f}x", flush=True)
    return out


def main() -> None:
    ap = parser(__doc__, rows=0, repeat=3)
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--trigger", default="1 second")
    ap.add_argument("--no-merge", action="store_true", help="the stream option auto_load_merge = false")
    ap.add_argument("--merge-levels", choices=("all", "2"), default="all", help="the stream option merge_levels")
    ap.add_argument("--major", action="store_true", help="also read the streamed table after a MAJOR compaction")
    ap.add_argument("--keep", help="copy the streamed and single-load tables here (to measure their reads again)")
    args = ap.parse_args()
    load_start = os.getloadavg()
    spark = spark_session(extension=True, conf={"spark.sql.streaming.numRecentProgressUpdates": "10000",
                                                 # every batch's offsets kept for the exactly-once check
                                                 "spark.sql.streaming.minBatchesToRetain": "1000000",
                                                 "spark.ui.showConsoleProgress": "false"})
    base = tempfile.mkdtemp(prefix="carbon_stream_soak_")
    streamed, single, ck = (os.path.join(base, n) for n in ("streamed", "single", "ck"))
    results: dict = {"minutes": args.minutes, "rate": args.rate, "trigger": args.trigger,
                     "merge": not args.no_merge, "merge_levels": args.merge_levels, "load_at_start": load_start}
    try:
        print(f"streaming {args.rate} rows/s for {args.minutes} min into {streamed}", flush=True)
        results["stream"] = run_stream(spark, args, streamed, ck)
        results["segments_at_stop"] = segment_counts(streamed)
        results["segments_settled"] = settle(streamed)
        print(f"segments: {results['segments_at_stop']} at stop, {results['segments_settled']} settled", flush=True)
        once = results["exactly_once"] = exactly_once(streamed, ck, args.rate)
        print(f"rows: {once}", flush=True)
        rows = carbon_ds.read_table(streamed)
        rows = rows.take(pc.sort_indices(rows.column("value")))
        carbon_ds.write_table(rows, single)
        n = rows.num_rows
        lo = n // 2
        if args.keep:
            for name, src in (("streamed", streamed), ("single", single)):
                shutil.copytree(src, os.path.join(args.keep, name))
        results["reads"] = compare_reads(spark, streamed, single, lo, lo + max(n // 100, 1), args.repeat)
        if args.major:
            carbon_ds.CarbonTable.open(streamed).compact("major")
            results["segments_after_major"] = segment_counts(streamed)
            print(f"after MAJOR: {results['segments_after_major']}", flush=True)
            results["reads_after_major"] = compare_reads(spark, streamed, single, lo, lo + max(n // 100, 1),
                                                         args.repeat)
        results["load_at_end"] = os.getloadavg()
        print(f"load average at start {load_start}, at end {results['load_at_end']}", flush=True)
        save(args.out, "stream_soak.json", results)
    finally:
        spark.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    pa.set_cpu_count(os.cpu_count() or 2)
    main()
