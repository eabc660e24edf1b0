"""What a table's history costs: appends and reads of a table of N small segments, beside a Delta table.

A streaming sink commits one segment per trigger and an hourly job 8,760 a year, so a table's costs must
not grow with the segments it already holds. For each size N (default 10, 100, 1,000, 10,000) this builds
a carbondata table of N segments of 100 rows (``id`` 100*s .. 100*s+99 in segment s, a string and a double)
and a Delta table (``deltalake``) of the same N appends, once, cached under ``--cache``. Then, on copies,
interleaved and ``--repeat`` times (medians):

- append: one more 100-row Arrow table (``carbon_ds.write_table`` / ``deltalake.write_deltalake``);
- full read: every row (``carbon_ds.read_table`` / ``DeltaTable(path).to_pyarrow_table()``);
- key lookup: the row of one ``id`` (a filter each side prunes by its statistics);
- count(*): ``carbon_ds.scan(path).count()`` / ``DeltaTable(path).count()``;
- the size of ``Metadata/tablestatus`` (Delta: of the ``_delta_log`` folder);
- with ``--spark``: Spark's planning time of a key lookup and of ``count(*)`` over the carbondata table
  (``spark.sql`` over ``CREATE TEMPORARY VIEW ... USING carbondata``; the time to the executed plan with its
  input partitions), and the whole query's time.

Every measurement opens the table afresh (as a new process's first query would, except for what a process
keeps between queries: parsed index and status files). The carbondata tables are written segment by segment
by ``build_carbon``, the same files and entries a load writes, committed in one status write instead of N
(tests/table/test_scale_builder.py checks it against real appends); the Delta tables by real appends.

    python benchmarks/scale.py [--sizes 10,100,1000,10000] [--repeat 3] [--spark] [--carbon-only] [--chart PNG]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable

import pyarrow as pa
from common import pyplot

import carbon_ds
from carbon_ds.table.loads.load_base import Reservation
from carbon_ds.table.loads.plain import PlainLoad
from carbon_ds.table.meta.files import segment_file as segfiles
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.tablestatus import LoadDetail

ROWS = 100
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("value", pa.float64())])


def segment_rows(s: int, rows: int = ROWS) -> pa.Table:
    """Segment ``s``'s rows: ids ``rows*s`` .. ``rows*s + rows - 1``."""
    ids = list(range(rows * s, rows * (s + 1)))
    return pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i % 997}" for i in ids],
                     "value": pa.array([i / 7 for i in ids], pa.float64())}, schema=SCHEMA)


def build_carbon(path: str, segments: range, rows: int = ROWS, progress: bool = False) -> None:
    """Write ``segments`` (ids) of ``segment_rows`` into the table at ``path`` (created when absent): for
    each, the files a load writes (data and index file through the load's own task writer, its segment
    file) and its "Success" entry as a load's commit makes it; then all the entries in one status write,
    where a load writes two per segment."""
    if not TableHandle.exists(path):
        carbon_ds.CarbonTable.create(path, SCHEMA)
    table = TableHandle.open(path)
    entries: list[LoadDetail] = []
    for n, s in enumerate(segments):
        start = ts.now_ms()
        load = PlainLoad(table, Reservation(table.uri, str(s), start, False))
        result = load.write_task(0, [segment_rows(s, rows)])
        end = max(ts.now_ms(), start + 1)
        name = segfiles.segment_file_name(str(s), end)
        segfiles.write(table.storage, table.path, name, segfiles.for_load(str(s), [i for i, _ in result.index_files]))
        entries.append(LoadDetail(name=str(s), status=ts.SUCCESS, timestamp=str(end),
                                  data_size=str(sum(size for _n, size, _r in result.data_files)),
                                  index_size=str(sum(size for _n, size in result.index_files)),
                                  load_start_time=str(start), visibility="true", segment_file=name))
        if progress and (n + 1) % 1000 == 0:
            print(f"  carbondata: {n + 1} of {len(segments)} segments written", flush=True)
    with table.edit_status("LOAD (many segments)") as edit:
        have = {e.name for e in edit.entries}
        clash = [e.name for e in entries if e.name in have]
        if clash:
            raise ValueError(f"segments {clash[:5]} already exist in {path}")
        edit.entries.extend(entries)


def build_delta(path: str, segments: range, rows: int = ROWS, progress: bool = False) -> None:
    from deltalake import write_deltalake

    for n, s in enumerate(segments):
        write_deltalake(path, segment_rows(s, rows), mode="append")
        if progress and (n + 1) % 1000 == 0:
            print(f"  delta: {n + 1} of {len(segments)} appends", flush=True)


def cached(cache: str, kind: str, n: int) -> str:
    """The cached table of ``kind`` with ``n`` segments (built on first use; a half-built one is rebuilt)."""
    path = os.path.join(cache, f"{kind}-{n}")
    done = path + ".complete"
    if os.path.exists(done):
        return path
    shutil.rmtree(path, ignore_errors=True)
    t0 = time.perf_counter()
    print(f"building {kind} table of {n} segments in {path}", flush=True)
    (build_carbon if kind == "carbon" else build_delta)(path, range(n), progress=True)
    open(done, "w").close()
    print(f"  built in {time.perf_counter() - t0:.0f} s", flush=True)
    return path


def folder_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _s, fs in os.walk(path) for f in fs)


def status_bytes(kind: str, path: str) -> int:
    if kind == "carbon":
        return os.path.getsize(TableHandle.open(path).tablestatus_path)
    return folder_bytes(os.path.join(path, "_delta_log"))


# ---------------------------------------------------------------------------------------------- operations
def carbon_ops(path: str, key: int) -> dict[str, Callable[[], object]]:
    return {
        "full_read": lambda: carbon_ds.read_table(path),
        "key_lookup": lambda: carbon_ds.read_table(path, filter=f"id = {key}"),
        "count": lambda: carbon_ds.scan(path).count(),
    }


def delta_ops(path: str, key: int) -> dict[str, Callable[[], object]]:
    from deltalake import DeltaTable

    return {
        "full_read": lambda: DeltaTable(path).to_pyarrow_table(),
        "key_lookup": lambda: DeltaTable(path).to_pyarrow_table(filters=[("id", "=", key)]),
        "count": lambda: DeltaTable(path).count(),
    }


def expected(name: str, n: int) -> int:
    """Rows (or the count) each operation must give on a table of ``n`` segments."""
    return 1 if name == "key_lookup" else n * ROWS


def rows_of(result: object) -> int:
    return result if isinstance(result, int) else result.num_rows  # type: ignore[union-attr]


def measure(cache: str, work: str, n: int, repeat: int, kinds: tuple[str, ...] = ("carbon", "delta")) -> dict:
    """One size: appends on copies of the cached tables, then the reads; both sides interleaved (``kinds``:
    the sides measured; without "delta", its cells are left empty)."""
    if "delta" in kinds:
        from deltalake import write_deltalake

    paths = {}
    for kind in kinds:
        src = cached(cache, kind, n)
        paths[kind] = os.path.join(work, f"{kind}-{n}")
        shutil.rmtree(paths[kind], ignore_errors=True)
        shutil.copytree(src, paths[kind], symlinks=True)
    # the copies' dirty pages and metadata go to disk now: else the first commits' fsyncs write them (a copy of
    # 10,000 segments is some 40,000 files), which a table's appends in real use do not pay
    os.sync()
    out: dict = {"segments": n, "rows": n * ROWS}
    out["status_bytes"] = {k: status_bytes(k, p) for k, p in paths.items()}
    appends: dict[str, list[float]] = {k: [] for k in kinds}
    for r in range(repeat):
        data = segment_rows(n + r)
        for kind in (kinds if r % 2 == 0 else kinds[::-1]):
            t0 = time.perf_counter()
            if kind == "carbon":
                carbon_ds.write_table(data, paths[kind])
            else:
                write_deltalake(paths[kind], data, mode="append")
            appends[kind].append(time.perf_counter() - t0)
    out["append_s"] = {k: statistics.median(v) for k, v in appends.items()}
    total = n + repeat
    key = (total // 2) * ROWS + 17
    ops = {k: (carbon_ops if k == "carbon" else delta_ops)(paths[k], key) for k in kinds}
    for name in ("full_read", "key_lookup", "count"):
        times: dict[str, list[float]] = {k: [] for k in kinds}
        for r in range(repeat):
            for kind in (kinds if r % 2 == 0 else kinds[::-1]):
                t0 = time.perf_counter()
                got = ops[kind][name]()
                times[kind].append(time.perf_counter() - t0)
                if rows_of(got) != expected(name, total):
                    raise AssertionError(f"{kind} {name} at {n} segments gave {rows_of(got)} rows, "
                                         f"expected {expected(name, total)}")
        out[f"{name}_s"] = {k: statistics.median(v) for k, v in times.items()}
    out["load_average"] = os.getloadavg()[0]
    return out


def spark_planning(spark, path: str, key: int, repeat: int) -> dict:
    """Planning and whole-query times of a key lookup and of count(*) over ``path``, medians of ``repeat``
    after one warm-up. Planning: from ``spark.sql`` to the query's RDD (``queryExecution().toRdd()``, which
    plans the scans' input partitions), in a session without adaptive execution (which would run stages to
    plan); the whole query: ``collect()`` in the session as configured."""
    planner = spark.newSession()
    carbon_ds.register(planner)
    planner.conf.set("spark.sql.adaptive.enabled", "false")
    view = "scale_t"
    loc = path.replace("'", "\\'")
    for session in (spark, planner):
        session.sql(f"CREATE OR REPLACE TEMPORARY VIEW {view} USING carbondata OPTIONS (path '{loc}')")
    out = {}
    for name, text in (("key_lookup", f"SELECT * FROM {view} WHERE id = {key}"),
                       ("count", f"SELECT count(*) FROM {view}")):
        plans, runs = [], []
        for r in range(repeat + 1):
            t0 = time.perf_counter()
            planner.sql(text)._jdf.queryExecution().toRdd()
            t1 = time.perf_counter()
            rows = spark.sql(text).collect()
            t2 = time.perf_counter()
            if r:
                plans.append(t1 - t0)
                runs.append(t2 - t1)
        if name == "count" and rows[0][0] <= 0 or name == "key_lookup" and len(rows) != 1:
            raise AssertionError(f"Spark {name} over {path} gave {rows}")
        out[name] = {"plan_s": statistics.median(plans), "query_s": statistics.median(runs)}
    return out


# ---------------------------------------------------------------------------------------------- report
def fmt_s(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def fmt_kib(n: int) -> str:
    return f"{n / 1024:,.0f} KiB" if n < 10 * 1024 * 1024 else f"{n / 1024 / 1024:.1f} MiB"


def table_text(results: list[dict]) -> str:
    head = ("| segments | append carbon-ds / delta-rs | full read | key lookup | count(*) | tablestatus / _delta_log |"
            "\n|---:|---:|---:|---:|---:|---:|")
    lines = [head]
    for r in results:
        cells = [f"{r['segments']:,}"]
        for key in ("append_s", "full_read_s", "key_lookup_s", "count_s"):
            cells.append(f"{fmt_s(r[key]['carbon'])} / {fmt_s(r[key]['delta']) if 'delta' in r[key] else '-'}")
        delta_bytes = r["status_bytes"].get("delta")
        cells.append(f"{fmt_kib(r['status_bytes']['carbon'])} / {'-' if delta_bytes is None else fmt_kib(delta_bytes)}")
        lines.append("| " + " | ".join(cells) + " |")
    if any("spark" in r for r in results):
        lines += ["", "| segments | Spark plan: key lookup | count(*) | query: key lookup | count(*) |",
                  "|---:|---:|---:|---:|---:|"]
        for r in results:
            s = r.get("spark")
            if s:
                lines.append(f"| {r['segments']:,} | {fmt_s(s['key_lookup']['plan_s'])} | {fmt_s(s['count']['plan_s'])} "
                             f"| {fmt_s(s['key_lookup']['query_s'])} | {fmt_s(s['count']['query_s'])} |")
    return "\n".join(lines)


def chart(results: list[dict], path: str) -> None:
    plt = pyplot()
    if plt is None:
        return
    sizes = [r["segments"] for r in results]
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.6))
    for ax, (key, title) in zip(axes, (("append_s", "append"), ("full_read_s", "full read"),
                                        ("key_lookup_s", "key lookup"), ("count_s", "count(*)")), strict=True):
        for kind, label in (("carbon", "carbon-ds"), ("delta", "delta-rs")):
            if all(kind in r[key] for r in results):
                ax.plot(sizes, [r[key][kind] * 1000 for r in results], marker="o", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel("segments (commits) in the table")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("ms (median)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"saved {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,100,1000,10000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "carbon-ds-scale"))
    ap.add_argument("--spark", action="store_true", help="also Spark's planning time at each size")
    ap.add_argument("--chart", help="write a chart of cost against segments here (PNG)")
    ap.add_argument("--results", default="benchmarks/results")
    ap.add_argument("--carbon-only", action="store_true", help="leave out the Delta side (its 10,000 appends "
                    "take most of an hour to build)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    os.makedirs(args.cache, exist_ok=True)
    spark = None
    if args.spark:
        from common import spark_session

        spark = spark_session(memory="1g", extension=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="carbon-ds-scale-") as work:
        for n in sizes:
            r = measure(args.cache, work, n, args.repeat, ("carbon",) if args.carbon_only else ("carbon", "delta"))
            if spark is not None:
                key = ((n + args.repeat) // 2) * ROWS + 17
                r["spark"] = spark_planning(spark, os.path.join(work, f"carbon-{n}"), key, args.repeat)
            results.append(r)
            print(table_text([r]).splitlines()[-1], flush=True)
            for kind in ("carbon", "delta"):
                shutil.rmtree(os.path.join(work, f"{kind}-{n}"), ignore_errors=True)
    print(table_text(results))
    from common import save

    save(args.results, "scale.json", {"repeat": args.repeat, "results": results})
    if args.chart:
        chart(results, args.chart)


if __name__ == "__main__":
    main()
