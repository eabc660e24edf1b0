"""MERGE / upsert: 1% changed + 0.1% new rows into an N-row table, carbon-ds against delta-rs.

The same rows go into a carbon-ds table and a Delta table (the ``deltalake`` package, ``pip install
carbon-ds[bench]``); the same source (1% of the ids with new values, 0.1% new ids) is merged into fresh
copies of both with "update all when matched, insert all when not matched": carbon-ds joined in pyarrow
(``CarbonTable.merge``), carbon-ds's Spark MERGE (``carbon_ds.spark.statements.merge_into``: for this statement the
source is collected and joined in pyarrow), the same with the join forced into Spark (conf
``carbon_ds.merge.driverJoinRows=0``; ``--no-spark`` skips both), and delta-rs (``DeltaTable.merge``). The
runs are interleaved, each on its own fresh copy (the copy is not timed); reported: median of ``--repeat`` times, the ratio to delta-rs, and the rows each engine wrote
(carbon-ds: updated + inserted rows, the replaced rows get delete deltas; delta-rs: its output rows, which
include the unchanged rows of every file it rewrote). Both results are checked to hold the same rows.

    python benchmarks/merge.py [--rows 1000000] [--repeat 3] [--no-spark]
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
from common import parser, save, spark_session

import carbon_ds
from carbon_ds.table.table import CarbonTable

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.float64()), ("name", pa.string()), ("cat", pa.int32())])


def rows(ids: np.ndarray, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"id": pa.array(ids, pa.int64()), "v": rng.random(len(ids)),
                     "name": pc.binary_join_element_wise("n", pa.array((ids % 100_003).astype(str)), ""),
                     "cat": pa.array(rng.integers(0, 50, len(ids)).astype(np.int32))}, schema=SCHEMA)


def fingerprint(t: pa.Table) -> tuple:
    t = t.select(SCHEMA.names).sort_by("id")
    return (t.num_rows, pc.sum(t["id"]).as_py(), round(pc.sum(t["v"]).as_py(), 6), pc.sum(t["cat"]).as_py())


def main() -> None:
    ap = parser(__doc__, 1_000_000, 3)
    ap.add_argument("--no-spark", action="store_true")
    args = ap.parse_args()
    try:
        import deltalake
    except ImportError:
        raise SystemExit("benchmarks/merge.py needs the deltalake package: pip install 'carbon-ds[bench]'") from None

    n = args.rows
    base = tempfile.mkdtemp(prefix="merge_bench_")
    target = rows(np.arange(n), 1)
    rng = np.random.default_rng(2)
    changed = np.sort(rng.choice(n, n // 100, replace=False))
    new = np.arange(n, n + n // 1000)
    source = rows(np.concatenate([changed, new]), 3)
    print(f"target {n:,} rows; source {source.num_rows:,} rows ({len(changed):,} changed, {len(new):,} new)")

    carbon_src = os.path.join(base, "carbon_src")
    delta_src = os.path.join(base, "delta_src")
    carbon_ds.write_table(target, carbon_src)
    deltalake.write_deltalake(delta_src, target)

    spark = None if args.no_spark else spark_session()
    spark_source = spark.createDataFrame(source.to_pandas()).cache() if spark is not None else None
    if spark_source is not None:
        spark_source.count()

    def fresh(src: str, name: str) -> str:
        dst = os.path.join(base, name)
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst)
        return dst

    def carbon_python(path: str) -> dict:
        m = (CarbonTable.open(path).merge(source, on="id").when_matched_update_all()
             .when_not_matched_insert_all().execute())
        return {"rows_written": m.rows_written, "rows_copied": m.rows_copied, "updated": m.rows_updated,
                "inserted": m.rows_inserted}

    def carbon_spark(path: str) -> dict:
        from carbon_ds.ddl.statement_parser import MergeClause
        from carbon_ds.spark.statements.merge_into import spark_merge

        clauses = [MergeClause(True, "update", None, None), MergeClause(False, "insert", None, None)]
        m = spark_merge(spark, CarbonTable.open(path), spark_source, "target.id = source.id", clauses)
        return {"rows_written": m.rows_written, "rows_copied": m.rows_copied, "updated": m.rows_updated,
                "inserted": m.rows_inserted}

    def carbon_spark_join(path: str) -> dict:
        from carbon_ds.spark.statements.merge_into import CONF_DRIVER_ROWS

        spark.conf.set(CONF_DRIVER_ROWS, "0")  # the target's keys and positions read into Spark and joined there
        try:
            return carbon_spark(path)
        finally:
            spark.conf.unset(CONF_DRIVER_ROWS)

    def delta(path: str) -> dict:
        merger = deltalake.DeltaTable(path).merge(source, predicate="t.id = s.id", source_alias="s",
                                                  target_alias="t")
        got = merger.when_matched_update_all().when_not_matched_insert_all().execute()
        return {"rows_written": got["num_output_rows"], "rows_copied": got["num_target_rows_copied"],
                "updated": got["num_target_rows_updated"], "inserted": got["num_target_rows_inserted"],
                "files_added": got.get("num_target_files_added"), "files_removed": got.get("num_target_files_removed")}

    engines = {"carbon-ds (pyarrow)": (carbon_src, carbon_python, lambda p: carbon_ds.read_table(p)),
               "delta-rs": (delta_src, delta, lambda p: deltalake.DeltaTable(p).to_pyarrow_table())}
    if spark is not None:
        engines["carbon-ds (Spark)"] = (carbon_src, carbon_spark, lambda p: carbon_ds.read_table(p))
        engines["carbon-ds (Spark join)"] = (carbon_src, carbon_spark_join, lambda p: carbon_ds.read_table(p))
    times: dict[str, list[float]] = {k: [] for k in engines}
    metrics: dict[str, dict] = {}
    prints: dict[str, tuple] = {}
    for rep in range(args.repeat):
        for name, (src, run, read) in engines.items():
            path = fresh(src, f"run_{rep}_{len(times[name])}_{abs(hash(name)) % 1000}")
            t0 = time.perf_counter()
            metrics[name] = run(path)
            times[name].append(time.perf_counter() - t0)
            if rep == 0:
                prints[name] = fingerprint(read(path))
            shutil.rmtree(path, ignore_errors=True)
            print(f"  {name:20s} run {rep + 1}: {times[name][-1]:.2f} s")
    if len(set(prints.values())) != 1:
        raise SystemExit(f"the engines' results differ: {prints}")
    ref = statistics.median(times["delta-rs"])
    results = {}
    print(f"\nupsert of {source.num_rows:,} rows into {n:,} (median of {args.repeat}):")
    for name in engines:
        med = statistics.median(times[name])
        results[name] = {"median_s": med, "times_s": times[name], "vs_delta_rs": med / ref, **metrics[name]}
        print(f"  {name:20s} {med:7.2f} s  {med / ref:5.2f}x delta-rs  rows written {metrics[name]['rows_written']:>10,}"
              f"  unchanged rows copied {metrics[name]['rows_copied']:>10,}")
    save(args.out, f"merge_{n}.json", {"rows": n, "source_rows": source.num_rows, "repeat": args.repeat,
                                       "deltalake": deltalake.__version__, "results": results})
    if spark is not None:
        spark.stop()
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
