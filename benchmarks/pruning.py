"""The seed-003 queries on generated telemetry: carbon-ds against Spark's own Parquet and ORC, same run.

All three copies are written by Spark from the same cached DataFrame, each task's rows sorted by
(vin, ts): carbon-ds with sort_columns=vin,ts (LOCAL_SORT), Parquet and ORC after sortWithinPartitions.
Queries (the production case of the partitioning talk, on the sort column `vin`):

  point     SELECT * WHERE vin = V
  range_id  SELECT to_date(ts), count(*) WHERE vin = V AND ts in [A, B) GROUP BY 1
  agg       SELECT to_date(ts), count(*) GROUP BY 1                  (no filter)
  detail    SELECT * WHERE vin = V AND day = D

carbon-ds is read through carbon_ds.read(spark, path, columns, filter) (the projected, pruned relation),
Parquet/ORC through spark.read with the same predicate in .filter(). Saves JSON, a markdown table and
a PNG chart (matplotlib when installed, else plain bars).

    python benchmarks/pruning.py [--rows 5000000] [--repeat 3] [--blocklet-mb 1] [--out benchmarks/results]
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import struct
import tempfile
import zlib

import pyarrow.parquet as pq
from common import parser, pyplot, save, spark_session, timed

import carbon_ds
from carbon_ds.api import explain
from carbon_ds.demo import telemetry
from carbon_ds.spark.session import read as carbon_read


def queries(vin: str, day: dt.date):
    a = dt.datetime.combine(day, dt.time(6), tzinfo=dt.UTC)
    b = a + dt.timedelta(hours=30)
    ts = f"TIMESTAMP '{a:%Y-%m-%d %H:%M:%S}'", f"TIMESTAMP '{b:%Y-%m-%d %H:%M:%S}'"
    return {
        "point": (f"vin = '{vin}'", None, "rows"),
        "range_id": (f"vin = '{vin}' AND ts >= {ts[0]} AND ts < {ts[1]}", ["ts"], "by_day"),
        "agg": (None, ["ts"], "by_day"),
        "detail": (f"vin = '{vin}' AND day = DATE '{day}'", None, "rows"),
    }


def run(df, shape: str):
    from pyspark.sql import functions as F

    if shape == "by_day":
        return df.groupBy(F.to_date("ts").alias("d")).count().collect()
    return df.collect()


def png_bars(path: str, groups: dict[str, dict[str, float]]) -> None:
    """A chart without matplotlib: one group of bars per query (carbon, parquet, orc), no text."""
    colors = {"carbondata": (31, 119, 180), "parquet": (255, 127, 14), "orc": (44, 160, 44)}
    w, h, bar, gap = 640, 320, 40, 40
    top = max(v for g in groups.values() for v in g.values()) or 1.0
    img = [[(255, 255, 255)] * w for _ in range(h)]
    x = gap
    for g in groups.values():
        for kind, v in g.items():
            height = int((h - 20) * v / top)
            for yy in range(h - height, h):
                for xx in range(x, x + bar - 4):
                    img[yy][xx] = colors[kind]
            x += bar
        x += gap
    raw = b"".join(b"\x00" + bytes(c for px in row for c in px) for row in img)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    with open(path, "wb") as fh:
        fh.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                 + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def chart(path: str, seconds: dict[str, dict[str, float]]) -> None:
    plt = pyplot()
    if plt is None:
        png_bars(path, seconds)
        return
    names = list(seconds)
    kinds = ["carbondata", "parquet", "orc"]
    fig, ax = plt.subplots(figsize=(8, 4))
    for k, kind in enumerate(kinds):
        ax.bar([i + 0.27 * (k - 1) for i in range(len(names))], [seconds[n][kind] for n in names], 0.27, label=kind)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("seconds (best of N, lower is better)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    ap = parser(__doc__, rows=5_000_000, repeat=3)
    ap.add_argument("--blocklet-mb", type=int, default=1, help="carbon-ds blocklet size (MB)")
    args = ap.parse_args()

    spark = spark_session("6g")
    work = tempfile.mkdtemp(prefix="carbon-prune-bench-")
    try:
        stage = os.path.join(work, "stage.parquet")
        writer = None
        for b in telemetry.batches(args.rows, seed=3):
            if writer is None:
                writer = pq.ParquetWriter(stage, b.schema)
            writer.write_batch(b)
        writer.close()
        first = pq.ParquetFile(stage).read_row_group(0, columns=["vin", "day"])
        vin, day = first.column("vin")[12345].as_py(), first.column("day")[12345].as_py()
        src = spark.read.parquet(stage).repartition(2).cache()
        print(f"rows: {src.count():,}; lookup vin={vin} day={day}", flush=True)

        paths = {k: os.path.join(work, k) for k in ("carbondata", "parquet", "orc")}
        (src.write.format("carbondata").mode("overwrite").option("sort_columns", "vin,ts")
         .option("blocklet_size", str(args.blocklet_mb)).save(paths["carbondata"]))
        sorted_src = src.sortWithinPartitions("vin", "ts")
        sorted_src.write.mode("overwrite").parquet(paths["parquet"])
        sorted_src.write.mode("overwrite").orc(paths["orc"])

        def frame(kind: str, flt: str | None, cols: list[str] | None):
            if kind == "carbondata":
                return carbon_read(spark, paths[kind], columns=cols, filter=flt)
            df = spark.read.format(kind).load(paths[kind])
            if flt:
                df = df.filter(flt)
            return df.select(*cols) if cols else df

        seconds: dict[str, dict[str, float]] = {}
        results: dict[str, int] = {}
        for name, (flt, cols, shape) in queries(vin, day).items():
            seconds[name] = {}
            answers = {}
            for kind in paths:
                answers[kind] = len(run(frame(kind, flt, cols), shape))
                seconds[name][kind] = timed(
                    lambda k=kind, f=flt, c=cols, s=shape: run(frame(k, f, c), s), args.repeat
                )
            assert len(set(answers.values())) == 1, (name, answers)  # same answer everywhere
            results[name] = answers["carbondata"]
            s = seconds[name]
            print(f"{name:<9} carbon {s['carbondata']:6.3f}s  parquet {s['parquet']:6.3f}s  orc {s['orc']:6.3f}s"
                  f"  (parquet/carbon {s['parquet'] / s['carbondata']:.2f}x)", flush=True)

        report = explain(paths["carbondata"], queries(vin, day)["point"][0])
        bl = report["blocklets"]
        skipped_pct = 100.0 * bl["skipped"] / bl["total"] if bl["total"] else 0.0
        py_carbon = timed(lambda: carbon_ds.read_table(paths["carbondata"], filter=f"vin = '{vin}'"), args.repeat)
        pq_files = [os.path.join(paths["parquet"], f) for f in os.listdir(paths["parquet"]) if f.endswith(".parquet")]
        py_parquet = timed(lambda: pq.read_table(pq_files, filters=[("vin", "=", vin)]), args.repeat)
        summary = {
            "point_speedup_vs_parquet": seconds["point"]["parquet"] / seconds["point"]["carbondata"],
            "point_speedup_vs_orc": seconds["point"]["orc"] / seconds["point"]["carbondata"],
            "point_blocklets_skipped_pct": skipped_pct,
            "python_point_read_table_s": py_carbon,
            "python_point_pyarrow_parquet_s": py_parquet,
        }
        print(f"point lookup: {summary['point_speedup_vs_parquet']:.2f}x Parquet, blocklets skipped "
              f"{bl['skipped']}/{bl['total']} ({skipped_pct:.2f}%), pages read {report['pages']['read']}"
              f"/{report['pages']['total']}")
        os.makedirs(args.out, exist_ok=True)
        save(args.out, "pruning.json", {"rows": args.rows, "blocklet_mb": args.blocklet_mb, "seconds": seconds,
                                        "result_rows": results, "summary": summary, "explain_point": report})
        lines = ["| query | carbon-ds (s) | Spark Parquet (s) | Spark ORC (s) | Parquet / carbon-ds |",
                 "|---|---:|---:|---:|---:|"]
        for name, s in seconds.items():
            lines.append(f"| {name} | {s['carbondata']:.3f} | {s['parquet']:.3f} | {s['orc']:.3f} | "
                         f"{s['parquet'] / s['carbondata']:.2f}x |")
        lines.append("")
        lines.append(f"{args.rows:,} rows, 2 tasks each sorted by (vin, ts); carbon-ds blocklets of "
                     f"{args.blocklet_mb} MB; point lookup skipped {bl['skipped']} of {bl['total']} blocklets "
                     f"({skipped_pct:.2f}%) and read {report['pages']['read']} of {report['pages']['total']} pages.")
        with open(os.path.join(args.out, "pruning.md"), "w") as fh:
            fh.write("\n".join(lines) + "\n")
        chart(os.path.join(args.out, "pruning.png"), seconds)
        print("\n".join(lines))
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
