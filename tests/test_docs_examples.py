"""Every fenced ```python example in README.md and docs/*.md runs as written.

Each block runs against small generated data in a temp folder: the blocks of one file run in order in one
namespace (a later block may use names an earlier one made), each file gets a fresh namespace, fresh data
and its own Spark database. Absolute example paths (``"/warehouse/t"``, ``'/data/log_parquet'``) are
rewritten to the temp folder before the code runs; the folders the examples read are created first (see
``FOLDERS``). A block that cannot run (pseudo-code, S3 URIs) is marked in the document on the line
before its fence:

    <!-- example: no-run (why it cannot run) -->

Names every example may assume (``PRELUDE`` below): ``carbon_ds``, ``pa``, ``pc``, ``pq``, ``path`` (a
small telemetry table), ``t`` (``CarbonTable.open(path)``), ``arrow_table`` (telemetry rows shaped like
the tables' schema), ``data`` / ``schema`` (telemetry rows with ``day`` and ``hour`` int partition
columns), and for blocks that use them ``spark`` (the shared session) and ``df`` (``path`` read by Spark).
A failure is reported at the block's line in the document.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.orc as paorc
import pyarrow.parquet as pq
import pytest

import carbon_ds
from carbon_ds.demo import telemetry

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE_OPEN = re.compile(r"^(?P<indent>\s*)```python\s*$")
FENCE_CLOSE = re.compile(r"^\s*```\s*$")
NO_RUN = re.compile(r"^\s*<!--\s*example:\s*no-run\b\s*(?:\((?P<reason>.*)\))?\s*-->\s*$")
# a string literal holding an absolute path: "/data/x", '/warehouse/t' (also inside SQL text)
ABS_PATH = re.compile(r"""(?<=["'])/(?=[A-Za-z_])""")

VIN = "LSVAU2180N2005162"  # the VIN the examples filter on; the generated tables hold a few of its rows
ROWS = 400  # rows per generated segment or file: enough for every code path, small enough for 2 cores


@dataclass(frozen=True)
class Block:
    doc: Path
    index: int  # position among the document's python blocks
    line: int  # 1-based line of the opening fence
    code: str
    no_run: str | None  # reason, when marked no-run

    @property
    def name(self) -> str:
        return self.doc.relative_to(ROOT).as_posix()

    @property
    def uses_spark(self) -> bool:
        try:
            names = {n.id for n in ast.walk(ast.parse(self.code)) if isinstance(n, ast.Name)}
        except SyntaxError:  # reported when the block runs
            return False
        return "spark" in names or "df" in names


def extract(doc: Path) -> list[Block]:
    """The ```python blocks of a Markdown file, with their fence line and no-run marker."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE_OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        start = i
        i += 1
        body = []
        while i < len(lines) and not FENCE_CLOSE.match(lines[i]):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise AssertionError(f"{doc.name}:{start + 1}: ```python block is never closed")
        marker = NO_RUN.match(lines[start - 1]) if start > 0 else None
        reason = (marker.group("reason") or "marked no-run").strip() if marker else None
        blocks.append(Block(doc, len(blocks), start + 1, textwrap.dedent("\n".join(body)) + "\n", reason))
        i += 1
    return blocks


ALL_BLOCKS = [b for doc in DOCS for b in extract(doc)]


# ---------------------------------------------------------------------------------------------- data
def _telemetry(rows: int, seed: int) -> pa.Table:
    """Telemetry rows (the demo's schema) with every 25th row on the examples' VIN."""
    tbl = telemetry.table(rows, seed=seed)
    on_vin = pa.array(np.arange(rows) % 25 == 0)
    return tbl.set_column(0, "vin", pc.if_else(on_vin, VIN, tbl["vin"]))


def _partitioned(tbl: pa.Table) -> pa.Table:
    """``day`` as int yyyymmdd (2021-11-22 or -23) and an ``hour`` column: the partition examples' shape."""
    n = tbl.num_rows
    day = pa.array(20211122 + np.arange(n) % 2, pa.int32())
    hour = pa.array(np.arange(n) % 3, pa.int32())
    tbl = tbl.set_column(tbl.schema.get_field_index("day"), "day", day)
    return tbl.append_column("hour", hour)


def _table(folder: Path, segments: int, seed: int) -> None:
    for i in range(segments):
        carbon_ds.write_table(_telemetry(ROWS, seed + i), str(folder), sort_columns="vin,ts")


def _warehouse_t(folder: Path) -> None:  # three segments, so that segments="0,2" and deleting "1","3" work
    _table(folder, 3, seed=10)


def _sdk_output(folder: Path) -> None:  # a bare folder of .carbondata files, as the CarbonData SDK writes
    folder.mkdir(parents=True)
    with carbon_ds.CarbonWriter(str(folder), telemetry.schema()) as writer:
        writer.write(_telemetry(ROWS, 20))


def _parquet(folder: Path) -> None:
    folder.mkdir(parents=True)
    pq.write_table(_telemetry(ROWS, 30), folder / "part-00000.parquet")


def _csv(folder: Path) -> None:
    folder.mkdir(parents=True)
    pacsv.write_csv(_telemetry(ROWS, 40), folder / "part-00000.csv", pacsv.WriteOptions(delimiter=";"))


def _orc_partitioned(folder: Path) -> None:  # Hive layout day=../hour=.. of ORC files holding vin, speed
    tbl = _partitioned(_telemetry(ROWS, 50))
    for day in (20211122, 20211123):
        for hour in (0, 1):
            part = folder / f"day={day}" / f"hour={hour}"
            part.mkdir(parents=True)
            rows = tbl.filter(pc.and_(pc.equal(tbl["day"], day), pc.equal(tbl["hour"], hour)))
            paorc.write_table(rows.select(["vin", "speed"]), part / "part-00000.orc")


def _orc_days(folder: Path) -> None:  # Hive layout day=.. of ORC files holding vin, speed
    tbl = _telemetry(ROWS, 55).select(["vin", "speed"])
    for i, day in enumerate((20211122, 20211123)):
        part = folder / f"day={day}"
        part.mkdir(parents=True)
        paorc.write_table(tbl.slice(i * ROWS // 2, ROWS // 2), part / "part-00000.orc")


def _parquet_days(folder: Path) -> None:  # Hive layout day=.. of Parquet files holding id, name
    for day in (20211122, 20211123):
        part = folder / f"day={day}"
        part.mkdir(parents=True)
        ids = pa.array(np.arange(ROWS, dtype=np.int64) + day * ROWS)
        pq.write_table(pa.table({"id": ids, "name": pc.cast(ids, pa.string())}), part / "part-00000.parquet")


# the folders examples read, by the path the documents give them; created only for a file that names them
FOLDERS = {
    "/warehouse/t": _warehouse_t,
    "/data/sdk_output": _sdk_output,
    "/data/telemetry": lambda folder: _table(folder, 2, seed=60),
    "/data/log_parquet": _parquet,
    "/data/csv_dump": _csv,
    "/data/log_orc_par": _orc_partitioned,
    "/data/2021_orc": _orc_days,
    "/data/old_days": _parquet_days,
    "/data/existing_table": lambda folder: _table(folder, 1, seed=70),
}


# ---------------------------------------------------------------------------------------------- runs
@dataclass
class FileRun:
    """One document's namespace and progress; its blocks run in order, each once."""

    doc: Path
    root: Path
    namespace: dict[str, Any]
    done: int = 0  # blocks run so far (as their own test or as an earlier block of a later one)
    failed: dict[int, str] = field(default_factory=dict)  # block index -> why (failed or skipped)
    database: str | None = None  # the Spark database the file's SQL tables live in

    def rewrite(self, code: str) -> str:
        return ABS_PATH.sub(str(self.root) + "/", code)


def _prelude(root: Path) -> dict[str, Any]:
    path = root / "warehouse" / "telemetry"
    _table(path, 2, seed=0)
    data = _partitioned(_telemetry(ROWS, 1))
    return {
        "__name__": "__docs_example__",
        "carbon_ds": carbon_ds,
        "pa": pa,
        "pc": pc,
        "pq": pq,
        "path": str(path),
        "t": carbon_ds.CarbonTable.open(str(path)),
        "arrow_table": _telemetry(ROWS, 2),
        "data": data,
        "schema": data.schema,
    }


def _attach_spark(run: FileRun, spark: Any) -> None:
    """Give the file's namespace ``spark`` and ``df``, in a Spark database of its own and with no temporary
    view left over from other tests (the session is shared by the whole run)."""
    _forget_spark_state(spark)
    run.database = "docs_" + re.sub(r"\W", "_", run.doc.stem.lower())
    spark.sql(f"DROP DATABASE IF EXISTS {run.database} CASCADE")
    spark.sql(f"CREATE DATABASE {run.database}")
    spark.sql(f"USE {run.database}")
    run.namespace["spark"] = spark
    run.namespace.setdefault("df", spark.read.format("carbondata").load(run.namespace["path"]))


def _forget_spark_state(spark: Any) -> None:
    for table in spark.catalog.listTables():
        if table.isTemporary:
            spark.catalog.dropTempView(table.name)
    for row in spark.sql("SET").collect():
        if row.key.startswith("carbon_ds.table.docs_"):
            spark.conf.unset(row.key)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    started: dict[Path, FileRun] = {}
    yield started
    for run in started.values():
        spark = run.namespace.get("spark")
        if run.database and spark is not None:
            _forget_spark_state(spark)
            spark.sql("USE default")
            spark.sql(f"DROP DATABASE IF EXISTS {run.database} CASCADE")


def _run(block: Block, run: FileRun) -> None:
    # padded so that line numbers in a traceback are the document's
    code = "\n" * block.line + run.rewrite(block.code)
    exec(compile(code, str(block.doc), "exec"), run.namespace)  # noqa: S102 - running the docs is the test


def _file_run(runs: dict[Path, FileRun], doc: Path, tmp_path_factory) -> FileRun:
    if doc not in runs:
        root = tmp_path_factory.mktemp("docs_" + doc.stem.lower())
        blocks = [b for b in ALL_BLOCKS if b.doc == doc and not b.no_run]
        text = "".join(b.code for b in blocks)
        for doc_path, make in FOLDERS.items():
            if re.search(rf"""["']{re.escape(doc_path)}["'/]""", text):
                make(root / doc_path.lstrip("/"))
        runs[doc] = FileRun(doc, root, _prelude(root))
    return runs[doc]


@pytest.mark.parametrize(
    "block",
    [
        pytest.param(b, id=f"{b.name}:{b.line}", marks=[pytest.mark.spark] if b.uses_spark else [])
        for b in ALL_BLOCKS
    ],
)
def test_docs_example(block: Block, runs, tmp_path_factory, request):
    if block.no_run:
        pytest.skip(f"{block.name}:{block.line} is marked no-run: {block.no_run}")
    run = _file_run(runs, block.doc, tmp_path_factory)
    earlier = [b for b in ALL_BLOCKS if b.doc == block.doc and b.index < block.index]
    for b in earlier:
        if b.index in run.failed:
            pytest.skip(f"needs the block at {b.name}:{b.line}, which did not run: {run.failed[b.index]}")
    # blocks before this one that have not run yet (e.g. with -k picking one block) run first, in order
    for b in [*earlier[run.done :], block]:
        if b.no_run:
            run.done = b.index + 1
            continue
        if b.uses_spark and "spark" not in run.namespace:
            try:
                _attach_spark(run, request.getfixturevalue("spark"))
            except pytest.skip.Exception as e:
                run.failed[b.index] = f"skipped: {e}"
                raise
        try:
            _run(b, run)
        except Exception as e:
            run.failed[b.index] = f"{type(e).__name__}: {e}"
            if b is block:
                raise
            pytest.fail(f"the earlier block at {b.name}:{b.line} failed: {type(e).__name__}: {e}")
        finally:
            run.done = b.index + 1


def test_extract_finds_blocks_and_markers(tmp_path):
    """The extractor itself: fences, indentation, no-run markers and line numbers."""
    doc = tmp_path / "x.md"
    doc.write_text(
        "# t\n\n```python\nx = 1\n```\n\n<!-- example: no-run (needs S3) -->\n```python\ny = s3()\n```\n"
        "\n```\nnot python\n```\n\n  ```python\n  z = x\n  ```\n",
        encoding="utf-8",
    )
    got = extract(doc)
    assert [(b.line, b.code, b.no_run) for b in got] == [
        (3, "x = 1\n", None),
        (8, "y = s3()\n", "needs S3"),
        (16, "z = x\n", None),
    ]
    assert all(b.doc == doc for b in got)


def test_every_document_has_a_runnable_example():
    """The parametrization is not silently empty (a renamed fence or folder would make it so)."""
    names = {b.name for b in ALL_BLOCKS if not b.no_run}
    assert "README.md" in names and any(n.startswith("docs/") for n in names)


def test_example_paths_are_rewritten():
    run = FileRun(ROOT / "README.md", Path("/tmp/x"), {})
    code = """read("/data/a"); sql("ADD SEGMENT OPTIONS('path'='/data/b')"); f"{path}/x"; e("speed / 2")"""
    assert run.rewrite(code) == (
        """read("/tmp/x/data/a"); sql("ADD SEGMENT OPTIONS('path'='/tmp/x/data/b')"); f"{path}/x"; e("speed / 2")"""
    )
