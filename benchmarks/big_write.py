"""Big data on one machine, pure Python side: TPC-H lineitem written and read back with bounded memory.

Lineitem at scale factor ``--sf`` (10: about 60M rows) is made once with DuckDB's ``dbgen`` (the
``duckdb-extension-tpch`` wheel, as benchmarks/tpch_queries.py loads it), in ``--parts`` steps so that
DuckDB never holds the whole table, as Parquet files under ``--data``. Then, each phase in a fresh child
process whose peak RSS (``ru_maxrss``) is its own:

- write: ``carbon_ds.write_table`` from a ``pyarrow.RecordBatchReader`` over the Parquet files (streamed
  batch by batch, never a materialised table) into a new table, with and without a sort column;
- scan: ``carbon_ds.scan(path).to_batches()``, every row, each batch dropped once counted;
- Q6-like: the same with Q6's filter and its four columns, the revenue summed batch by batch.

- spark (not in the default phases): Spark with its default driver memory (1g) and the carbon-ds extension
  writes the Parquet files' rows twice from one DataFrame (``df.write.format("carbondata")``,
  ``df.write.parquet``), then runs TPC-H Q1 and Q6 through plain ``spark.sql`` over a ``USING carbondata``
  view and over a Parquet view: one warm-up each (their rows compared), then ``--repeat`` interleaved
  rounds, medians. Run it at ``--sf 1`` too: the SF 10 ratios are read against those.

Each phase prints its wall time, rows and peak RSS; the done-when of issue 48 is a peak under 2 GB.

    python benchmarks/big_write.py [--sf 10] [--data /tmp/s9-sf10] [--out /tmp/s9-sf10-carbon]
                                   [--phases write,scan,q6|spark] [--repeat 3]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import shutil
import subprocess
import sys
import time

Q6_FILTER = ("l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01' "
             "and l_discount >= 0.05 and l_discount <= 0.07 and l_quantity < 24")
Q6_COLUMNS = ["l_extendedprice", "l_discount", "l_shipdate", "l_quantity"]


def generate(sf: float, directory: str, parts: int) -> list[str]:
    """Lineitem of ``sf`` as ``parts`` Parquet files in ``directory`` (kept: a directory holding its
    ``_SF`` marker for this ``sf`` is reused)."""
    from tpch_queries import duckdb_connect

    marker = os.path.join(directory, "_SF")
    files = sorted(glob.glob(os.path.join(directory, "lineitem-*.parquet")))
    if os.path.exists(marker) and open(marker).read().strip() == f"{sf:g}" and files:
        return files
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    con = duckdb_connect(threads=2)
    try:
        con.execute("SET preserve_insertion_order = false")
        for step in range(parts):
            t0 = time.perf_counter()
            con.execute(f"CALL dbgen(sf = {sf}, children = {parts}, step = {step})")
            path = os.path.join(directory, f"lineitem-{step:03d}.parquet")
            # plain strings (not views), as Spark and carbon-ds hold them
            cols = ", ".join(f"{c}::VARCHAR AS {c}" if t == "VARCHAR" else c
                             for c, t in con.execute("SELECT column_name, data_type FROM information_schema.columns "
                                                     "WHERE table_name = 'lineitem' ORDER BY ordinal_position").fetchall())
            con.execute(f"COPY (SELECT {cols} FROM lineitem) TO '{path}' (FORMAT parquet, COMPRESSION snappy, "
                        "ROW_GROUP_SIZE 1000000)")
            for (name,) in con.execute("SHOW TABLES").fetchall():
                con.execute(f"DROP TABLE {name}")
            print(f"  lineitem part {step + 1} of {parts} in {time.perf_counter() - t0:.0f} s", flush=True)
    finally:
        con.close()
    with open(marker, "w") as fh:
        fh.write(f"{sf:g}")
    return sorted(glob.glob(os.path.join(directory, "lineitem-*.parquet")))


def reader(files: list[str]):
    """One ``RecordBatchReader`` over ``files``: batches of at most 64K rows, read as they are asked for."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pq.read_schema(files[0])

    def batches():
        for f in files:
            pf = pq.ParquetFile(f)
            yield from pf.iter_batches(batch_size=65536)

    return pa.RecordBatchReader.from_batches(schema, batches())


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def spark_phase(files: list[str], out: str, repeat: int) -> dict:
    """The ``spark`` phase (module docstring): write times, then Q1 and Q6 on both copies."""
    import statistics

    from pyspark.sql import SparkSession
    from tpch_queries import compare, ordered, query

    import carbon_ds

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = carbon_ds.configure_spark(SparkSession.builder).config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    carbon_ds.register(spark)
    figures: dict = {"driver_memory": spark.conf.get("spark.driver.memory", "1g (default)")}
    try:
        src = spark.read.parquet(*files)
        paths = {"carbondata": out + "-spark", "parquet": out + "-spark-parquet"}
        for kind, path in paths.items():
            shutil.rmtree(path, ignore_errors=True)
            t0 = time.perf_counter()
            writer = src.write.mode("overwrite")
            (writer.format("carbondata").save(path) if kind == "carbondata" else writer.parquet(path))
            figures[f"{kind}_write_s"] = time.perf_counter() - t0
        sessions = {kind: spark.newSession() for kind in paths}
        sessions["carbondata"].sql(f"CREATE TEMPORARY VIEW lineitem USING carbondata OPTIONS (path '{paths['carbondata']}')")
        sessions["parquet"].read.parquet(paths["parquet"]).createOrReplaceTempView("lineitem")
        for n in (1, 6):
            text = query(n)
            rows = {kind: session.sql(text).collect() for kind, session in sessions.items()}
            equal, note = compare(rows["carbondata"], rows["parquet"], ordered(text))
            if not equal:
                raise AssertionError(f"Q{n}: carbondata and Parquet differ: {note}")
            times: dict[str, list[float]] = {kind: [] for kind in sessions}
            for r in range(repeat):
                for kind in (list(sessions) if r % 2 == 0 else list(sessions)[::-1]):
                    t0 = time.perf_counter()
                    sessions[kind].sql(text).collect()
                    times[kind].append(time.perf_counter() - t0)
            for kind, ts in times.items():
                figures[f"q{n}_{kind}_s"] = statistics.median(ts)
            figures[f"q{n}_ratio"] = figures[f"q{n}_carbondata_s"] / figures[f"q{n}_parquet_s"]
    finally:
        spark.stop()
    return figures


def phase(name: str, data: str, out: str, sort: bool, repeat: int = 3) -> dict:
    """One phase in this process; returns its figures."""
    import carbon_ds

    files = sorted(glob.glob(os.path.join(data, "lineitem-*.parquet")))
    rss0 = peak_rss_mb()
    t0 = time.perf_counter()
    rows = 0
    if name == "write":
        shutil.rmtree(out, ignore_errors=True)
        options = {"sort_columns": "l_shipdate"} if sort else {}
        carbon_ds.write_table(reader(files), out, mode="overwrite", **options)
        rows = carbon_ds.scan(out).count()
    elif name == "scan":
        for b in carbon_ds.scan(out).to_batches():
            rows += b.num_rows
    elif name == "q6":
        import pyarrow.compute as pc

        revenue = 0.0
        for b in carbon_ds.scan(out, columns=Q6_COLUMNS, filter=Q6_FILTER).to_batches():
            rows += b.num_rows
            revenue += float(pc.sum(pc.multiply(b.column("l_extendedprice"), b.column("l_discount"))).as_py() or 0)
    elif name == "spark":
        figures = spark_phase(files, out, repeat)
        rows = carbon_ds.scan(out + "-spark").count()
    else:
        raise ValueError(f"phase {name!r}: expected write, scan, q6 or spark")
    out = {"phase": name, "seconds": time.perf_counter() - t0, "rows": rows, "peak_rss_mb": peak_rss_mb(),
           "rss_at_start_mb": rss0, "load_average": os.getloadavg()[0]}
    if name == "q6":
        out["revenue"] = revenue
    if name == "spark":
        out.update(figures)
    return out


def expected(data: str) -> dict:
    """What the phases must give, from the Parquet files: rows (their footers) and Q6 (DuckDB over them)."""
    import pyarrow.parquet as pq
    from tpch_queries import duckdb_connect

    files = sorted(glob.glob(os.path.join(data, "lineitem-*.parquet")))
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    con = duckdb_connect(threads=2)
    try:
        q6 = con.execute(f"SELECT count(*), sum(l_extendedprice * l_discount) FROM read_parquet({files!r}) "
                         f"WHERE {Q6_FILTER}").fetchone()
    finally:
        con.close()
    return {"write": rows, "scan": rows, "spark": rows, "q6": q6[0], "revenue": float(q6[1])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sf", type=float, default=10)
    ap.add_argument("--parts", type=int, default=10)
    ap.add_argument("--data", default="/tmp/s9-sf10")
    ap.add_argument("--out", default="/tmp/s9-sf10-carbon")
    ap.add_argument("--phases", default="write,scan,q6")
    ap.add_argument("--sort", action="store_true", help="write with SORT_COLUMNS l_shipdate")
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds of each Spark query (spark phase)")
    ap.add_argument("--results", default="benchmarks/results")
    ap.add_argument("--phase", help=argparse.SUPPRESS)  # a child process running one phase
    args = ap.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, args.data, args.out, args.sort, args.repeat)), flush=True)
        return
    t0 = time.perf_counter()
    files = generate(args.sf, args.data, args.parts)
    print(f"lineitem SF {args.sf:g}: {len(files)} files in {args.data} ({time.perf_counter() - t0:.0f} s)", flush=True)
    # each phase's child starts before this process reads anything with DuckDB: a child's peak RSS counts
    # its parent's resident memory at the fork (Linux keeps ru_maxrss across exec)
    results = []
    for name in args.phases.split(","):
        cmd = [sys.executable, __file__, "--phase", name, "--data", args.data, "--out", args.out,
               "--repeat", str(args.repeat)]
        if args.sort:
            cmd.append("--sort")
        got = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
        print(f"{name}: {got['rows']:,} rows in {got['seconds']:.1f} s, peak RSS {got['peak_rss_mb']:,.0f} MB "
              f"(load average {got['load_average']:.1f})", flush=True)
        if name == "spark":
            print("  " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                                   for k, v in got.items() if k.startswith(("q", "carbondata", "parquet", "driver"))),
                  flush=True)
        results.append(got)
    want = expected(args.data)
    for got in results:
        name = got["phase"]
        if got["rows"] != want[name] or name == "q6" and abs(got["revenue"] - want["revenue"]) > 0.01 * max(1, want["q6"]):
            raise AssertionError(f"{name} gave {got}, expected {want[name]} rows (Q6 revenue {want['revenue']:,.2f})")
    from common import save

    save(args.results, "big_write.json", {"sf": args.sf, "results": results})


if __name__ == "__main__":
    main()
