"""The partitioning talk's production case, scaled down: telemetry RANGE-partitioned by hour into 24
ranges (sort columns vin, ts), against the same rows unpartitioned in carbon-ds and against Parquet
partitioned by hour (pyarrow.dataset, hive folders), all read in this process.

Queries (the seed's five):
  range_agg   count(*) WHERE hour in [H1, H2)
  range_id    count(*) WHERE hour in [H1, H2) AND vin = V
  no_filter   count(*) of a scanned column
  group_hour  count(*) GROUP BY hour
  detail      SELECT * WHERE hour in [H1, H2) AND vin = V AND day = D

Reported per query and copy: best-of-N seconds (copies interleaved per repetition) and data files read
(carbon-ds from explain; Parquet from the dataset's fragments after partition pruning).

    python benchmarks/partition_case.py [--rows 1000000] [--repeat 3] [--out benchmarks/results]
"""

from __future__ import annotations

import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from common import parser, save

import carbon_ds
from carbon_ds import CarbonTable, RangePartition
from carbon_ds.demo import telemetry

HOURS = 14 * 24  # the generated timestamps span 14 days


def data(rows: int) -> pa.Table:
    t = telemetry.table(rows)
    start = pc.min(t["ts"]).value
    hour = ((pc.cast(t["ts"], pa.int64()).to_numpy() - start) // 3_600_000_000).astype(np.int32)
    return t.append_column("hour", pa.array(hour, pa.int32()))


def build(root: str, t: pa.Table) -> dict[str, str]:
    bounds = [int((i + 1) * HOURS / 24) for i in range(23)]  # 24 ranges, the last one DEFAULT
    paths = {"carbon_range": f"{root}/range", "carbon_plain": f"{root}/plain", "parquet_hour": f"{root}/pq"}
    part = CarbonTable.create(paths["carbon_range"], t.schema, sort_columns=["vin", "ts"],
                              partition=RangePartition("hour", bounds))
    with part.load() as load:
        load.write([t])
    plain = CarbonTable.create(paths["carbon_plain"], t.schema, sort_columns=["vin", "ts"])
    with plain.load() as load:
        load.write([t])
    sorted_t = t.sort_by([("vin", "ascending"), ("ts", "ascending")])
    ds.write_dataset(sorted_t, paths["parquet_hour"], format="parquet", partitioning=["hour"],
                     partitioning_flavor="hive")
    return paths


def probe(t: pa.Table) -> tuple[str, object]:
    """A (vin, day) of a row inside the queried hours, so the detail query finds rows."""
    i = int(np.flatnonzero(t["hour"].to_numpy() == 100)[0])
    return t["vin"][i].as_py(), t["day"][i].as_py()


def queries(t: pa.Table) -> dict[str, tuple[str | None, list[str] | None]]:
    vin, day = probe(t)
    h1, h2 = 96, 120
    rng = f"hour >= {h1} and hour < {h2}"
    return {
        "range_agg": (rng, ["hour"]),
        "range_id": (f"{rng} and vin = '{vin}'", ["vin"]),
        "no_filter": (None, ["speed"]),
        "group_hour": (None, ["hour"]),
        "detail": (f"{rng} and vin = '{vin}' and day = date '{day}'", None),
    }


def parquet_expr(flt: str | None, t: pa.Table):
    if flt is None:
        return None
    vin, day = probe(t)
    e = (ds.field("hour") >= 96) & (ds.field("hour") < 120)
    if "vin" in flt:
        e = e & (ds.field("vin") == vin)
    if "day" in flt:
        e = e & (ds.field("day") == pa.scalar(day, pa.date32()))
    return e


def run(rows: int, repeat: int, out: str) -> dict:
    root = tempfile.mkdtemp(prefix="partition_case_")
    try:
        t = data(rows)
        paths = build(root, t)
        pq_ds = ds.dataset(paths["parquet_hour"], format="parquet", partitioning="hive")
        results: dict = {}
        for name, (flt, cols) in queries(t).items():
            def carbon(path, flt=flt, cols=cols, name=name):
                r = carbon_ds.read_table(path, columns=cols, filter=flt)
                return r.group_by("hour").aggregate([("hour", "count")]) if name == "group_hour" else r.num_rows

            def parquet(flt=flt, cols=cols, name=name):
                r = pq_ds.to_table(columns=cols, filter=parquet_expr(flt, t))
                return r.group_by("hour").aggregate([("hour", "count")]) if name == "group_hour" else r.num_rows

            runs = {
                "carbon_range": lambda c=carbon: c(paths["carbon_range"]),
                "carbon_plain": lambda c=carbon: c(paths["carbon_plain"]),
                "parquet_hour": parquet,
            }
            answers = {k: fn() for k, fn in runs.items()}
            if name != "group_hour":
                assert len(set(answers.values())) == 1, (name, answers)
            best = dict.fromkeys(runs, float("inf"))
            for _ in range(repeat):  # interleaved, best of N
                for k, fn in runs.items():
                    t0 = time.perf_counter()
                    fn()
                    best[k] = min(best[k], time.perf_counter() - t0)
            files = {k: carbon_ds.explain(paths[k], flt)["files"]["read"] for k in ("carbon_range", "carbon_plain")}
            files["parquet_hour"] = len(list(pq_ds.get_fragments(filter=parquet_expr(flt, t))))
            parts = carbon_ds.explain(paths["carbon_range"], flt).get("partitions")
            results[name] = {"filter": flt, "seconds": best, "files_read": files,
                             "partitions_read": len(parts["read"]) if parts else None}
            print(f"{name:<11} " + "  ".join(f"{k} {best[k]*1000:8.1f} ms ({files[k]} files)" for k in runs))
        payload = {"rows": rows, "repeat": repeat, "queries": results}
        save(out, "partition_case.json", payload)
        return payload
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    args = parser(__doc__, 1_000_000, 3).parse_args()
    run(args.rows, args.repeat, args.out)
