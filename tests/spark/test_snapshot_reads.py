"""A read sees one table version while commits land: the Spark data source driven as Spark drives it
(``partitions()`` planned, pickled, then ``read()`` per partition after an append / DELETE / UPDATE /
overwrite / compaction / CLEAN FILES), a real Spark query whose tasks run after a commit, and the
pure-Python ``scan().to_batches()`` with a commit landing mid-iteration. The oracle is the id set each
table version must hold, computed by hand."""

from __future__ import annotations

import os
import pickle
import sys
import threading
import time
import uuid

import pyarrow as pa
import pytest
from pyspark import cloudpickle

import carbon_ds
from carbon_ds.errors import CarbonMissingFileError
from carbon_ds.spark.source import batch_read, input_partitions, query_version
from carbon_ds.spark.source.batch_read import CarbonPartition, CarbonReader
from carbon_ds.spark.source.datasource import CarbonDataSource
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.schema import schema_file
from carbon_ds.table.meta.status import status_doc
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.ops.segments.manage import DAY_MS, clean_files
from carbon_ds.table.table import CarbonTable

ROWS = 40  # per segment


@pytest.fixture(autouse=True)
def one_task_per_file(monkeypatch):
    """Each of these tiny files its own partition, on any number of cores (tasks are otherwise packed by
    bytes per core): the tests run tasks one by one with commits between them."""
    monkeypatch.setattr(input_partitions, "PACK_BYTES", 1)


def _table(tmp_path, segments: int = 3) -> str:
    path = str(tmp_path / "t")
    for s in range(segments):
        ids = list(range(s * ROWS, (s + 1) * ROWS))
        carbon_ds.write_table(pa.table({"id": ids, "name": [f"n{i}" for i in ids]}), path)
    return path


def _plan(path: str, **options):
    """(reader, partitions) as Spark ships them: both pickled after planning."""
    source = CarbonDataSource({"path": path, **options})
    reader = source.reader(source.schema())
    parts = reader.partitions()
    return pickle.loads(pickle.dumps(reader)), [pickle.loads(pickle.dumps(p)) for p in parts]


def _run(reader, parts) -> list[int]:
    ids: list[int] = []
    for p in parts:
        for b in reader.read(p):
            ids += b.column("id").to_pylist()
    return sorted(ids)


def _ids(path: str) -> list[int]:
    return sorted(carbon_ds.read_table(path, columns=["id"]).column("id").to_pylist())


OLD = list(range(3 * ROWS))


def _append(t: CarbonTable, path: str):
    carbon_ds.write_table(pa.table({"id": [1000, 1001], "name": ["x", "y"]}), path)


def _delete(t: CarbonTable, path: str):
    assert t.delete("id < 50") == 50


def _update(t: CarbonTable, path: str):
    assert t.update({"id": carbon_ds.SqlExpr("id + 10000")}, "id >= 100") == 20


def _overwrite(t: CarbonTable, path: str):
    carbon_ds.write_table(pa.table({"id": [7], "name": ["only"]}), path, mode="overwrite")


def _compact(t: CarbonTable, path: str):
    assert t.compact("custom", segments="0,1")


COMMITS = {"append": _append, "delete": _delete, "update": _update, "overwrite": _overwrite, "compact": _compact}


@pytest.mark.parametrize("commit", sorted(COMMITS))
@pytest.mark.parametrize("clean", [False, True])
def test_tasks_read_the_planned_snapshot(tmp_path, commit, clean):
    path = _table(tmp_path)
    reader, parts = _plan(path)
    assert len(parts) == 3  # one task per file
    t = CarbonTable.open(path)
    COMMITS[commit](t, path)
    if clean:  # files of the old version move to the trash; the plan is younger than the retention
        t.clean_files()
    fresh_reader, fresh_parts = _plan(path)
    assert [p.pieces for p in fresh_parts] != [p.pieces for p in parts]  # a new plan reads other files
    assert _run(reader, parts) == OLD  # every task: exactly the planned version
    assert _run(fresh_reader, fresh_parts) == _ids(path)  # a new plan sees the commit
    assert commit == "compact" or _ids(path) != OLD


def test_row_positions_of_a_planned_file_moved_to_the_trash(tmp_path):
    """A DELETE/UPDATE's read of rows with their positions finds a file CLEAN FILES moved, as a row read does."""
    path = _table(tmp_path)
    reader, parts = _plan(path, with_row_positions="true")
    _overwrite(CarbonTable.open(path), path)
    CarbonTable.open(path).clean_files()
    got = [b for p in parts for b in reader.read(p)]
    assert sorted(i for b in got for i in b.column("id").to_pylist()) == OLD
    assert {f for b in got for f in b.column("__carbon_file").to_pylist()} == {p.pieces[0].path for p in parts}


def test_deletes_travel_with_the_plan(tmp_path):
    path = _table(tmp_path)
    t = CarbonTable.open(path)
    t.delete("id < 10")
    reader, parts = _plan(path)
    t.delete("id >= 10 and id < 30")  # the block's deltas are merged into a new file (horizontal compaction)
    t.clean_files()  # the superseded delta file goes to the trash
    assert _run(reader, parts) == list(range(10, 3 * ROWS))
    assert _ids(path) == list(range(30, 3 * ROWS))
    # bounded: a partition carries its own files' delete status only, not the table's
    assert [sum(x.deletes is not None for x in p.pieces) for p in parts] == [1, 0, 0]
    assert max(len(pickle.dumps(p)) for p in parts) < 2_000


def test_force_clean_is_the_documented_exception(tmp_path):
    path = _table(tmp_path)
    reader, parts = _plan(path)
    _overwrite(CarbonTable.open(path), path)
    CarbonTable.open(path).clean_files(force=True)
    with pytest.raises(FileNotFoundError, match="Segment_0"):
        _run(reader, parts)


def test_bare_folder_plans_carry_no_snapshot(tmp_path):
    path = _table(tmp_path, 1)
    folder = str(tmp_path / "t" / "Fact" / "Part0" / "Segment_0")
    reader, parts = _plan(folder)
    assert [p.snapshot for p in parts] == [None]
    assert _run(reader, parts) == list(range(ROWS))
    assert path


def test_query_start_from_uuid7():
    u = uuid.UUID("01a209e5-dd32-7a5a-8000-000000000000")
    assert query_version.uuid7_ms(str(u)) == 0x01A209E5DD32
    assert query_version.uuid7_ms(str(uuid.uuid4())) is None
    assert query_version.uuid7_ms("not a uuid") is None
    assert query_version.uuid7_ms(None) is None


def test_version_ignores_what_no_read_sees(tmp_path):
    path = _table(tmp_path)
    t = CarbonTable.open(path)
    t.delete_segments(["2"])
    before = query_version.version_of(t.load_details())
    t.clean_files()  # drops the unreadable entry: same readable table
    assert query_version.version_of(t.load_details()) == before
    carbon_ds.write_table(pa.table({"id": [1], "name": ["a"]}), path)
    assert query_version.version_of(t.load_details()) != before


# ------------------------------------------------------------------------------ pure-Python scan


@pytest.mark.parametrize("commit", sorted(COMMITS))
def test_scan_batches_read_one_snapshot(tmp_path, commit):
    path = _table(tmp_path)
    batches = carbon_ds.scan(path, columns=["id"], batch_size=ROWS // 2, use_threads=False).to_batches()
    first = next(batches)  # the scan has planned and started reading
    COMMITS[commit](CarbonTable.open(path), path)
    CarbonTable.open(path).clean_files()
    ids = sorted(first.column("id").to_pylist() + [i for b in batches for i in b.column("id").to_pylist()])
    assert ids == OLD
    assert commit == "compact" or _ids(path) != OLD


@pytest.mark.parametrize("commit", ["delete", "overwrite", "compact"])
def test_scan_made_before_a_commit_reads_its_snapshot(tmp_path, commit):
    path = _table(tmp_path)
    s = carbon_ds.scan(path, columns=["id"])
    assert len(s.plan()) == 3  # a scan plans once, at its first use; then it reads that snapshot
    COMMITS[commit](CarbonTable.open(path), path)
    CarbonTable.open(path).clean_files()
    assert sorted(s.to_arrow().column("id").to_pylist()) == OLD  # the whole-table path
    assert s.count() == len(OLD)
    assert sorted(i for b in s.to_batches() for i in b.column("id").to_pylist()) == OLD


# ------------------------------------------------------------------------------ real Spark


class GatedReader(CarbonReader):
    """The carbondata reader, with a gate: ``partitions()`` says it has planned (a file), and every task
    waits for the test to open the gate (another file) before it reads anything."""

    def __init__(self, path, schema, options, signals: str):
        super().__init__(path, schema, options)
        self.signals = signals

    def partitions(self):
        parts = super().partitions()
        with open(os.path.join(self.signals, "planned"), "w") as f:
            f.write(str(len(parts)))
        return parts

    def read(self, partition):
        gate = os.path.join(self.signals, "gate")
        deadline = time.monotonic() + 120
        while not os.path.exists(gate) and time.monotonic() < deadline:
            time.sleep(0.05)
        yield from super().read(partition)


class GatedSource(CarbonDataSource):
    @classmethod
    def name(cls) -> str:
        return "carbondata_gated"

    def __init__(self, options):
        options = dict(options)
        self.signals = options.pop("signals")
        super().__init__(options)

    def reader(self, schema):
        return GatedReader(self.options["path"], schema, {}, self.signals)


def _wait_for(path, what: str) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.spark
@pytest.mark.parametrize("commit", ["delete", "overwrite", "compact", "update"])
def test_spark_tasks_run_after_a_commit_read_the_planned_table(spark, tmp_path, commit):
    """The query plans, then a commit (and CLEAN FILES) lands, then its tasks run: every task reads the
    planned version, so the query returns the old table entirely."""
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the gated reader travels to the workers
    spark.dataSource.register(GatedSource)
    path = _table(tmp_path)
    signals = tmp_path / "signals"
    signals.mkdir()
    df = spark.read.format("carbondata_gated").option("signals", str(signals)).load(path)
    got: list = []
    query = threading.Thread(target=lambda: got.extend(r.id for r in df.collect()))
    query.start()
    try:
        _wait_for(signals / "planned", "the query to plan")
        t = CarbonTable.open(path)
        COMMITS[commit](t, path)
        t.clean_files()
    finally:
        (signals / "gate").write_text("open")
        query.join(180)
    assert sorted(got) == OLD
    fresh = sorted(r.id for r in spark.read.format("carbondata").load(path).collect())
    assert fresh == _ids(path)
    assert commit == "compact" or fresh != OLD


@pytest.mark.spark
def test_a_reused_plan_sees_later_commits(spark, tmp_path):
    """PySpark keeps a view's partitions across queries; a later query still sees the commits before it."""
    path = _table(tmp_path)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW snap_v USING carbondata OPTIONS (path '{path}')")
    try:
        assert spark.sql("SELECT count(*) FROM snap_v").first()[0] == 3 * ROWS
        CarbonTable.open(path).delete("id < 50")
        spark.sql("INSERT INTO snap_v VALUES (5000, 'z')")
        got = sorted(r.id for r in spark.sql("SELECT id FROM snap_v").collect())
        assert got == sorted(list(range(50, 3 * ROWS)) + [5000])
    finally:
        spark.sql("DROP VIEW IF EXISTS snap_v")


def test_partition_carries_the_snapshot(tmp_path):
    path = _table(tmp_path)
    _reader, parts = _plan(path)
    assert all(isinstance(p, CarbonPartition) for p in parts)
    assert {p.snapshot.segments for p in parts} == {("0",), ("1",), ("2",)}
    assert len({p.snapshot.version for p in parts}) == 1


def test_partitioned_table_plan_survives_overwrite_and_clean(tmp_path):
    path = str(tmp_path / "p")
    data = pa.table({"id": list(range(30)), "name": [f"n{i}" for i in range(30)], "p": [i % 3 for i in range(30)]})
    carbon_ds.write_table(data, path, partition_by="p")
    carbon_ds.write_table(data.slice(0, 6).set_column(0, "id", pa.array(range(100, 106))), path)
    reader, parts = _plan(path)
    old = sorted(list(range(30)) + list(range(100, 106)))
    t = CarbonTable.open(path)
    assert t.delete("id < 4") == 4
    carbon_ds.write_table(data.slice(0, 2), path, mode="overwrite")
    t.clean_files()
    assert _ids(path) == [0, 1]
    assert _run(reader, parts) == old


def test_reads_are_protected_for_the_retention_only(tmp_path):
    """The rule: a file CLEAN FILES moves stays readable (in the trash) for the retention; a plan older
    than that may find it gone, and then fails naming the file, never returning partial data silently."""
    path = _table(tmp_path)
    reader, parts = _plan(path)
    t = CarbonTable.open(path)
    _overwrite(t, path)
    now = ts.now_ms()
    clean_files(t, retention=1, now_ms=now)
    assert _run(reader, parts) == OLD  # within the retention: from the trash
    clean_files(t, retention=1, now_ms=now + DAY_MS // 2)
    assert _run(reader, parts) == OLD
    result = clean_files(t, retention=1, now_ms=now + DAY_MS + 1)
    assert result.expired_trash == [str(now)]
    with pytest.raises(CarbonMissingFileError, match="Segment_0"):
        _run(reader, parts)


def _as_task(monkeypatch, started):
    """Run read() as inside a Spark task of a query built at ``started`` (ms; None: Spark did not say)."""
    monkeypatch.setattr(batch_read, "in_task", lambda: True)
    monkeypatch.setattr(batch_read, "query_started_ms", lambda: started)


def test_task_of_the_planning_query_reads_the_plan(tmp_path, monkeypatch):
    path = _table(tmp_path)
    started = ts.now_ms()
    reader, parts = _plan(path)  # planned after the query was built
    _delete(CarbonTable.open(path), path)
    _as_task(monkeypatch, started)
    assert _run(reader, parts) == OLD


def test_reused_plan_reads_the_table_as_of_its_query(tmp_path, monkeypatch):
    path = _table(tmp_path)
    reader, parts = _plan(path)
    _delete(CarbonTable.open(path), path)  # between the queries
    _as_task(monkeypatch, ts.now_ms() + 1_000)  # a later query reuses the plan
    assert _run(reader, parts) == list(range(50, 3 * ROWS))
    _as_task(monkeypatch, None)  # a Spark without the query id: re-planned too
    assert _run(reader, parts) == list(range(50, 3 * ROWS))


def test_reused_plan_reads_its_version_when_segments_are_added_during_its_query(tmp_path, monkeypatch):
    """The planned version was still current when a later query began: loads committed after that are not
    seen and the query does not fail (snapshot.version_at), as a fresh plan's tasks would read."""
    path = _table(tmp_path)
    reader, parts = _plan(path)
    began = parts[0].snapshot.planned_ms + 1  # a later query began, then this commit landed
    while ts.now_ms() <= began + 1:
        pass
    _append(CarbonTable.open(path), path)
    _as_task(monkeypatch, began)
    assert _run(reader, parts) == OLD


def test_reused_plan_fails_when_a_commit_lands_during_its_query(tmp_path, monkeypatch):
    """The plan was stale when the query began (a DELETE between the queries) and a load lands while it
    runs: the version the query began with cannot be read any more, so the query fails."""
    path = _table(tmp_path)
    reader, parts = _plan(path)
    _delete(CarbonTable.open(path), path)
    began = _later_query(parts)
    _append(CarbonTable.open(path), path)
    _as_task(monkeypatch, began)
    with pytest.raises(carbon_ds.CarbonTableError, match="changed while this query ran"):
        _run(reader, parts)


def _later_query(parts) -> int:
    """The start of a query built after the plan, with the clock moved past it."""
    began = max(parts[0].snapshot.planned_ms, ts.now_ms()) + 1
    while ts.now_ms() <= began + 1:
        pass
    return began


def test_reused_plan_fails_when_a_delete_commits_during_its_query(tmp_path, monkeypatch):
    path = _table(tmp_path)
    reader, parts = _plan(path)
    began = _later_query(parts)
    _delete(CarbonTable.open(path), path)
    _as_task(monkeypatch, began)
    with pytest.raises(carbon_ds.CarbonTableError, match="changed while this query ran"):
        _run(reader, parts)


def test_reused_plan_of_a_versioned_status_table_fails_when_a_delete_commits_during_its_query(tmp_path, monkeypatch):
    """A table whose segment list is versioned (CarbonData 2.3.1+: ``Metadata/tablestatus_<epoch ms>``, no
    plain file): each commit writes a new version file, and that one tells that the table changed."""
    path = _table(tmp_path)
    meta = os.path.join(path, "Metadata")
    os.rename(os.path.join(meta, "tablestatus"), os.path.join(meta, f"tablestatus_{ts.now_ms()}"))
    reader, parts = _plan(path)
    began = _later_query(parts)
    _delete(CarbonTable.open(path), path)
    assert not os.path.exists(os.path.join(meta, "tablestatus"))  # the commit wrote a new version
    _as_task(monkeypatch, began)
    with pytest.raises(carbon_ds.CarbonTableError, match="changed while this query ran"):
        _run(reader, parts)


def test_reused_plan_ignores_a_reservation_made_during_its_query(tmp_path, monkeypatch):
    """INSERT INTO v SELECT ... FROM v: the query's own load reserves its segment ("In Progress") after the
    query began; that changes tablestatus but nothing a read sees."""
    path = _table(tmp_path)
    reader, parts = _plan(path)
    _delete(CarbonTable.open(path), path)  # between the queries: the kept plan is stale
    began = _later_query(parts)
    handle = TableHandle.open(path)
    with handle.edit_status("test") as edit:
        edit.entries.append(ts.LoadDetail(name="9", status=ts.IN_PROGRESS, load_start_time=str(ts.now_ms())))
    _as_task(monkeypatch, began)
    assert _run(reader, parts) == list(range(50, 3 * ROWS))


@pytest.mark.spark
def test_insert_into_a_view_from_itself_after_a_commit(spark, tmp_path):
    path = _table(tmp_path)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW snap_self USING carbondata OPTIONS (path '{path}')")
    assert spark.sql("SELECT count(*) AS n FROM snap_self").first().n == 3 * ROWS
    _delete(CarbonTable.open(path), path)
    spark.sql("INSERT INTO snap_self SELECT * FROM snap_self WHERE id >= 100")
    assert _ids(path) == sorted([*range(50, 3 * ROWS), *range(100, 3 * ROWS)])
    spark.catalog.dropTempView("snap_self")


@pytest.mark.spark
def test_each_action_on_a_kept_dataframe_sees_the_commits_before_it(spark, tmp_path):
    path = _table(tmp_path)
    df = spark.read.format("carbondata").load(path)
    assert sorted(r.id for r in df.collect()) == OLD
    _delete(CarbonTable.open(path), path)
    assert sorted(r.id for r in df.collect()) == list(range(50, 3 * ROWS))  # the kept plan, read as of now
    assert df.count() == 3 * ROWS - 50
    _append(CarbonTable.open(path), path)
    assert sorted(r.id for r in df.filter("id >= 0").collect()) == [*range(50, 3 * ROWS), 1000, 1001]


def test_direct_read_keeps_its_snapshot_through_a_commit(tmp_path, monkeypatch):
    """A reader pinned to its plan (CarbonReader.pinned, as a streaming micro-batch reads) is planned for its
    statement alone: a commit landing while its tasks run (after the query began) is not seen, and the query
    does not fail."""
    path = _table(tmp_path)
    reader, parts = _plan(path)
    reader.pinned = True  # as a streaming micro-batch plans it (carbon_ds.spark.streaming.stream_source)
    began = _later_query(parts)
    _append(CarbonTable.open(path), path)
    _delete(CarbonTable.open(path), path)
    _as_task(monkeypatch, began)
    assert _run(reader, parts) == OLD


def test_one_query_reads_schema_and_tablestatus_once_and_tasks_neither(tmp_path, monkeypatch):
    """Spark's round trips for one query, in its order (schema(), the data source pickled, reader(),
    partitions(), the reader and partitions pickled, read() per task): the schema file is read once and
    tablestatus once, on the driver side; tasks read neither."""
    path = _table(tmp_path)
    reads = {"schema": 0, "tablestatus": 0}
    real_schema, real_status = schema_file.read, status_doc.read_versioned

    def count_schema(*a, **k):
        reads["schema"] += 1
        return real_schema(*a, **k)

    def count_status(*a, **k):
        reads["tablestatus"] += 1
        return real_status(*a, **k)

    monkeypatch.setattr(schema_file, "read", count_schema)
    monkeypatch.setattr(status_doc, "read_versioned", count_status)
    started = ts.now_ms()
    source = CarbonDataSource({"path": path, "filter": "id >= 10"})
    spark_schema = source.schema()
    source = pickle.loads(pickle.dumps(source))
    reader = source.reader(spark_schema)
    parts = reader.partitions()
    assert reads == {"schema": 1, "tablestatus": 1}
    reader, parts = pickle.loads(pickle.dumps(reader)), [pickle.loads(pickle.dumps(p)) for p in parts]
    _as_task(monkeypatch, started)
    assert _run(reader, parts) == list(range(10, 3 * ROWS))
    assert reads == {"schema": 1, "tablestatus": 1}  # nothing more in the tasks
