"""Tables and read routes of benchmarks/fuzz.py, and how one read of a damaged copy is judged.

Sources: ``plain`` (three segments: two small ones, one of 70,000 rows in several blocklets and pages;
segment 0 with a merged index, as CarbonData 1.5+ writes it; delete deltas in each), ``hive`` (a
Hive-partitioned table with deletes) and the real CarbonData files of ../shared (read as single files).

Routes: read_table (``plain``), read_table with a filter (``filter``: planned from the index files),
``count`` and ``count_filter`` (CarbonTable.count), ``scan`` (scan().to_batches(): one blocklet at a time),
``polars`` (scan_carbondata), ``duckdb`` (a filtered query through carbon_ds.duckdb), ``spark`` and
``spark_filter`` (the data source, run by fuzz.py's Spark worker); ``file`` for a single data file.

A route's answer on the damaged copy is compared with its answer on the undamaged table:
  error   a carbon_ds.errors type (also when DuckDB, Polars or Spark wrap it); ``named`` says whether the
          message names the damaged file,
  same    the same rows (or count),
  dup     a row id appears more than once (ids are unique in every source),
  silent  other rows, or another count, without an error,
  crash   any other exception.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc

FILTER = "id >= 100 AND id < 500"
TABLE_ROUTES = ("plain", "filter", "count", "count_filter", "scan", "polars", "duckdb", "spark", "spark_filter")
FILE_ROUTES = ("file",)
SPARK_ROUTES = ("spark", "spark_filter")
ERROR_NAME = re.compile(r"\b(Carbon[A-Za-z]*Error): ")


# ------------------------------------------------------------------ sources
def _plain_rows(start: int, n: int, pad: bool = False) -> pa.Table:
    ids = list(range(start, start + n))
    cols = {
        "id": pa.array(ids, pa.int64()),
        "s": pa.array([None if i % 17 == 0 else ("@NU#LL$!" if i % 23 == 0 else f"v{i % 40}") for i in ids]),
        "d": pa.array([i / 8 for i in ids], pa.float64()),
        "dec": pa.array([Decimal(i) / 100 for i in ids], pa.decimal128(12, 2)),
        "ts": pa.array([dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(minutes=i) for i in ids],
                       pa.timestamp("ms", tz="UTC")),
        "l": pa.array([[i, i + 1] if i % 5 else None for i in ids], pa.list_(pa.int32())),
        "pad": pa.array([f"{i * 2654435761 % 10**12:012d}-pad-{i % 977:04d}" if pad else None for i in ids],
                        pa.string()),
    }
    return pa.table(cols)


def _merge_segment_index(table: str, segment: str) -> None:
    """Turn a segment's .carbonindex files into one .carbonindexmerge named by its segment file (how
    CarbonData 1.5+ leaves a load)."""
    from carbon_ds.format.index import write_merge_index
    from carbon_ds.table.meta.files import segment_file as segfiles
    folder = segfiles.segment_dir(table, segment)
    indexes = sorted(n for n in os.listdir(folder) if n.endswith(".carbonindex"))
    merged = f"{indexes[0].rsplit('-', 1)[-1].split('.')[0]}.carbonindexmerge"
    write_merge_index(os.path.join(folder, merged),
                      [(n, open(os.path.join(folder, n), "rb").read()) for n in indexes])
    index_size = os.path.getsize(os.path.join(folder, merged))
    for n in indexes:
        os.remove(os.path.join(folder, n))
    seg_dir = segfiles.segments_dir(table)
    [name] = [n for n in os.listdir(seg_dir) if n.startswith(f"{segment}_")]
    path = os.path.join(seg_dir, name)
    doc = json.load(open(path))
    for details in doc["locationMap"].values():
        details["files"] = [merged]
        details["mergeFileName"] = merged
    with open(path, "w") as fh:
        json.dump(doc, fh, separators=(",", ":"))
    status_path = os.path.join(table, "Metadata", "tablestatus")
    entries = json.load(open(status_path))
    for e in entries:
        if e["loadName"] == segment:
            e["indexSize"] = str(index_size)
    with open(status_path, "w") as fh:
        json.dump(entries, fh, separators=(",", ":"))


def build_sources(root: str) -> list[str]:
    """The source tables under ``root``: every kind of file a table holds."""
    from carbon_ds.api import write_table
    from carbon_ds.table.table import CarbonTable

    plain = os.path.join(root, "plain")
    write_table(_plain_rows(0, 300), plain)
    write_table(_plain_rows(300, 300), plain)
    write_table(_plain_rows(600, 70_000, pad=True), plain, blocklet_size=2)
    CarbonTable.open(plain).delete("id IN (7, 57, 107, 307, 407, 599, 700, 33000, 65000, 70599)")
    _merge_segment_index(plain, "0")
    hive = os.path.join(root, "hive")
    write_table(pa.table({"id": pa.array(range(120), pa.int64()), "p": [f"k{i % 3}" for i in range(120)],
                          "v": pa.array([i * 1.5 for i in range(120)], pa.float64())}), hive, partition_by=["p"])
    CarbonTable.open(hive).delete("id IN (4, 50, 101)")
    return [plain, hive]


KINDS = (".carbondata", ".carbonindexmerge", ".carbonindex", ".segment", ".deletedelta", "tableupdatestatus",
         "tablestatus", "schema")


def kind_of(path: str) -> str | None:
    name = os.path.basename(path)
    if name.startswith("tableupdatestatus-"):
        return "tableupdatestatus"
    if name in ("tablestatus", "schema"):
        return name
    return next((k for k in KINDS if name.endswith(k)), None)


def victims(table: str) -> list[str]:
    """Every file of ``table`` a case may damage."""
    out = []
    for dirpath, _dirs, names in os.walk(table):
        out += [os.path.join(dirpath, n) for n in names if kind_of(n) is not None]
    return sorted(out)


def copy_source(src: str, dest: str) -> None:
    if os.path.isdir(src):
        shutil.copytree(src, dest, symlinks=True)
    else:
        os.makedirs(dest)
        shutil.copyfile(src, os.path.join(dest, os.path.basename(src)))


# ------------------------------------------------------------------ routes
def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by("id") if "id" in t.column_names else t


def run_route(route: str, path: str) -> pa.Table | int:
    """``route``'s answer for the table (or single file) at ``path``."""
    from carbon_ds.api import read_table, scan
    from carbon_ds.table.table import CarbonTable

    if route == "plain":
        return _sorted(read_table(path))
    if route == "filter":
        return _sorted(read_table(path, filter=FILTER))
    if route == "count":
        return CarbonTable.open(path).count()
    if route == "count_filter":
        return CarbonTable.open(path).count(FILTER)
    if route == "scan":
        s = scan(path, batch_size=4096)
        return _sorted(pa.Table.from_batches(list(s.to_batches()), schema=s.schema))
    if route == "polars":
        from carbon_ds.polars import scan_carbondata

        return _sorted(scan_carbondata(path).collect().to_arrow())
    if route == "duckdb":
        import duckdb

        from carbon_ds.duckdb import register

        con = duckdb.connect()
        try:
            register(con, "t", path)
            return _sorted(con.sql(f"SELECT * FROM t WHERE {FILTER}").fetch_arrow_table())
        finally:
            con.close()
    if route == "file":
        from carbon_ds.readers import CarbonDataFile

        with CarbonDataFile(path) as f:
            return f.read()
    raise ValueError(f"unknown route {route}")


def spark_route(spark, route: str, path: str) -> pa.Table:
    reader = spark.read.format("carbondata")
    if route == "spark_filter":
        reader = reader.option("filter", FILTER)
    return _sorted(reader.load(path).toArrow())


# ------------------------------------------------------------------ judging
def save_expected(value: pa.Table | int, path: str) -> None:
    if isinstance(value, int):
        with open(path, "w") as fh:
            json.dump(value, fh)
        return
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, value.schema) as w:
        w.write_table(value)


def load_expected(path: str) -> pa.Table | int:
    with open(path, "rb") as fh:
        head = fh.read(6)
    if head != b"ARROW1":
        return int(json.load(open(path)))
    with pa.OSFile(path, "rb") as fh:
        return pa.ipc.open_file(fh).read_all()


def judge_value(got: pa.Table | int, want: pa.Table | int) -> dict:
    if isinstance(want, int):
        if got == want:
            return {"outcome": "same", "message": ""}
        return {"outcome": "silent", "message": f"count {want} -> {got}"}
    assert isinstance(got, pa.Table)
    got.validate(full=True)
    if _duplicated_rows(got):
        return {"outcome": "dup", "message": f"rows {want.num_rows} -> {got.num_rows}, rows repeated"}
    if got.equals(want):
        return {"outcome": "same", "message": ""}
    changed = [n for n in want.column_names if n not in got.column_names or got.num_rows != want.num_rows
               or not got.column(n).equals(want.column(n))]
    return {"outcome": "silent",
            "message": f"rows {want.num_rows} -> {got.num_rows}, columns changed: {', '.join(changed) or 'none'}"}


def _duplicated_rows(t: pa.Table) -> bool:
    """Whether a whole row appears twice (every source's ids are unique, so only among rows sharing an id;
    a damaged id that equals another row's is a changed value, not a repeated row)."""
    if "id" not in t.column_names or not t.num_rows or pc.count_distinct(t["id"]).as_py() == t.num_rows:
        return False
    counts = pc.value_counts(t["id"])
    twice = counts.field("values").filter(pc.greater(counts.field("counts"), 1))[:1000]
    rows = t.filter(pc.is_in(t["id"], twice)).to_pylist()
    seen = {repr(sorted(r.items())) for r in rows}
    return len(seen) < len(rows)


def judge_error(e: BaseException, target: str) -> dict:
    """An exception: ours (raised, or wrapped by DuckDB / Polars / Spark) or a crash. ``named``: whether our
    message names the damaged file."""
    from carbon_ds.errors import CarbonError
    from carbon_ds.spark.messages import ours

    inner = e if isinstance(e, CarbonError) else ours(e)
    text = str(inner) if inner is not None else str(e)
    if os.environ.get("FUZZ_DEBUG"):
        with open(os.environ["FUZZ_DEBUG"], "a") as fh:
            fh.write(f"=== {type(e).__name__}\n{e}\n")
    if type(e).__name__ == "BinderException" and "not found" in text:
        # the query names a column the (damaged) schema no longer has: no carbon-ds error to give
        return {"outcome": "silent", "message": f"rows: the query's column is gone: {text.splitlines()[0][:200]}"}
    if inner is None:
        found = ERROR_NAME.findall(text)  # DuckDB and Polars keep our type's name before the message
        if not found or isinstance(e, MemoryError):
            return {"outcome": "crash", "message": f"{type(e).__name__}: {text[-600:]}"}
        at = text.rfind(found[-1] + ": ")
        text = text[at + len(found[-1]) + 2:]
    kind = type(inner).__name__ if inner is not None else found[-1]
    return {"outcome": "error", "named": os.path.basename(target) in text,
            "message": f"{kind}: {text.strip()[:400]}"}


# ------------------------------------------------------------------ what a silent case is
# Damage the format has no second copy of, so no reader can tell it from data (docs/reliability.md lists
# these with their counts): class -> description.
SILENT_CLASSES = {
    "page-values": "a data page's bytes changed so that it still decodes to values within the page's stored "
                   "min/max, or its null bitset's sense flipped (pages carry no checksum); on a filtered read, "
                   "other rows then pass the filter",
    "file-header-columns": "a column's id, name, order or declared precision in a data file's header changed: "
                           "the file's column then reads as another, as one added later (NULL), or (a file read "
                           "alone) under another name or type",
    "delta-rows": "a delete delta names other rows of the same pages, as many as before",
    "segment-status": "tablestatus gives a segment another valid status (Marked for Delete, Compacted, "
                      "Failure...) or lists no segment at all",
    "schema-valid": "the schema describes another valid table (a column renamed, hidden, reordered, its "
                    "default or properties changed)",
    "update-status-emptied": "the update status file replaced by an empty list: CarbonData finds delete deltas "
                             "through it alone, so the deleted rows come back as CarbonData itself reads them",
    "index-rules-out": "an index's min/max rule out a whole file on a filtered read: the file is never "
                       "opened, so its footer cannot contradict the index",
}


def silent_class(kind: str, route: str, label: str, message: str) -> str:
    """Which of SILENT_CLASSES a silent case is, "?" when none explains it."""
    same_rows = (message.startswith("rows ") and message.split(",")[0].split(" -> ")[0][5:] ==
        message.split(",")[0].split(" -> ")[-1])
    if kind in (".carbondata", "corpus.carbondata"):
        if "header.column_schema" in label:
            return "file-header-columns"
        if same_rows or route.startswith("count") and message.startswith("count"):
            return "page-values"
        if label.startswith("bytes") and route in ("filter", "count_filter", "duckdb", "spark_filter"):
            return "page-values"  # values changed within their page's min/max, so other rows pass the filter
    if kind == ".deletedelta" and (same_rows or "deletedRows" in label):
        return "delta-rows"
    if kind == "tablestatus" and ("loadStatus" in label or "replaced by []" in label):
        return "segment-status"
    if kind == "schema":
        return "schema-valid"
    if kind == "tableupdatestatus" and "replaced by []" in label:
        return "update-status-emptied"
    if kind in (".carbonindex", ".carbonindexmerge") and route in ("filter", "count_filter", "duckdb",
                                                                   "spark_filter"):
        return "index-rules-out"
    return "?"
