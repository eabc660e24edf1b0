"""The streaming sink's commit protocol driven in this process (what Spark's tasks and its commit worker
call), with crashes at each step: every batch's rows land exactly once. Oracle: the rows handed in."""

from __future__ import annotations

import pyarrow as pa
import pytest

import carbon_ds
from carbon_ds import faults
from carbon_ds.errors import CarbonTableError
from carbon_ds.spark.streaming.stream_sink import StreamCommitMessage, abort_batch, commit_batch
from carbon_ds.table.loads.start import PostCommit, resume_load, start_load
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.ops.streams.commit import BATCH_KEY, StreamBatch, committed_segment, reserve_batch
from carbon_ds.table.table import CarbonTable

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
QUERY = "5b8e6c1e-0000-4000-8000-000000000001"


def rows(start: int, n: int) -> pa.RecordBatch:
    ids = list(range(start, start + n))
    return pa.record_batch([pa.array(ids, pa.int64()), pa.array([f"n{i}" for i in ids])], schema=SCHEMA)


def run_tasks(path, batch: StreamBatch, parts: list[pa.RecordBatch]) -> list[StreamCommitMessage]:
    """What each task of a micro-batch does: reserve (shared), write its rows, return its message."""
    out = []
    for task_no, part in enumerate(parts):
        table = TableHandle.open(path)
        # automatic compaction in the committing thread (the sink runs it in the background), so the tests see
        # its outcome at once
        reservation = reserve_batch(table, batch, PostCommit().names())
        if reservation is None:
            out.append(StreamCommitMessage(batch, None, None))
            continue
        result = resume_load(table, reservation).write_task(task_no, [part])
        out.append(StreamCommitMessage(batch, reservation, result))
    return out


def ids(path) -> list[int]:
    return sorted(carbon_ds.read_table(str(path)).column("id").to_pylist())


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "t"
    CarbonTable.create(str(path), SCHEMA)
    return str(path)


class Crash(Exception):
    pass


def crash_at(name):
    def hook(point):
        if point == name:
            raise Crash(point)
    return hook


def test_tasks_of_a_batch_share_one_segment(table):
    batch = StreamBatch(QUERY, 0, "run-1")
    messages = run_tasks(table, batch, [rows(0, 10), rows(10, 5)])
    assert {m.reservation.segment_id for m in messages} == {"0"}
    assert commit_batch(TableHandle.open(table), messages, 0) == "0"
    assert ids(table) == list(range(15))
    (entry,) = TableHandle.open(table).load_details()
    assert (entry.status, entry.other[BATCH_KEY]) == (ts.SUCCESS, f"{QUERY}:0")


def test_empty_batch_commits_nothing(table):
    batch = StreamBatch(QUERY, 0, "run-1")
    assert commit_batch(TableHandle.open(table), [StreamCommitMessage(batch, None, None), None], 0) is None
    assert TableHandle.open(table).load_details() == []


def test_crash_after_the_commit_point_replays_as_nothing(table):
    commit_batch(TableHandle.open(table), run_tasks(table, StreamBatch(QUERY, 0, "run-1"), [rows(0, 4)]), 0)
    batch = StreamBatch(QUERY, 1, "run-1")
    with faults.inject(crash_at("stream.committed")), pytest.raises(Crash):
        commit_batch(TableHandle.open(table), run_tasks(table, batch, [rows(4, 4)]), 1)
    # Spark never recorded batch 1: the restarted query (same query id, new run) replays it
    replay = StreamBatch(QUERY, 1, "run-2")
    messages = run_tasks(table, replay, [rows(4, 4)])
    assert all(m.reservation is None for m in messages)  # tasks see the mark and write nothing
    assert commit_batch(TableHandle.open(table), messages, 1) is None
    assert ids(table) == list(range(8))
    assert len(TableHandle.open(table).load_details()) == 2


def test_crash_before_the_commit_point_writes_the_batch_again(table):
    batch = StreamBatch(QUERY, 0, "run-1")
    run_tasks(table, batch, [rows(0, 6)])  # the driver dies before commit: segment 0 stays In Progress
    replay = StreamBatch(QUERY, 0, "run-2")
    messages = run_tasks(table, replay, [rows(0, 6)])
    assert messages[0].reservation.segment_id == "1"  # the crashed run's segment is not reused
    commit_batch(TableHandle.open(table), messages, 0)
    statuses = {e.name: e.status for e in TableHandle.open(table).load_details()}
    assert statuses == {"0": ts.FAILURE, "1": ts.SUCCESS}
    assert ids(table) == list(range(6))


def test_a_zombie_run_cannot_commit_a_batch_again(table):
    # run 1 lost its driver after its tasks wrote; run 2 replays batch 0 and commits it; run 1's late commit
    # is refused (its reservation was marked "Failure" when run 2 reserved)
    zombie = run_tasks(table, StreamBatch(QUERY, 0, "run-1"), [rows(0, 3)])
    replay = run_tasks(table, StreamBatch(QUERY, 0, "run-2"), [rows(0, 3)])
    assert commit_batch(TableHandle.open(table), replay, 0) == "1"
    with pytest.raises(CarbonTableError, match="expected it 'In Progress', found status 'Failure'"):
        commit_batch(TableHandle.open(table), zombie, 0)
    statuses = {e.name: e.status for e in TableHandle.open(table).load_details()}
    assert statuses == {"0": ts.FAILURE, "1": ts.SUCCESS}
    assert ids(table) == [0, 1, 2]


def test_a_second_mark_for_one_batch_is_refused_inside_the_commit(table):
    done = run_tasks(table, StreamBatch(QUERY, 0, "run-1"), [rows(0, 3)])
    commit_batch(TableHandle.open(table), done, 0)
    # a reservation made by hand for the same batch (bypassing reserve_batch's check)
    handle = TableHandle.open(table)
    load = start_load(handle)
    result = load.write_task(0, [rows(0, 3)])
    message = StreamCommitMessage(StreamBatch(QUERY, 0, "run-2"), load.reservation, result)
    assert commit_batch(TableHandle.open(table), [message], 0) is None
    statuses = {e.name: e.status for e in TableHandle.open(table).load_details()}
    assert statuses == {"0": ts.SUCCESS, "1": ts.FAILURE}
    assert ids(table) == [0, 1, 2]


def test_abort_removes_an_uncommitted_batch_only(table):
    messages = run_tasks(table, StreamBatch(QUERY, 0, "run-1"), [rows(0, 3)])
    abort_batch(TableHandle.open(table), messages)
    (entry,) = TableHandle.open(table).load_details()
    assert entry.status == ts.FAILURE
    done = run_tasks(table, StreamBatch(QUERY, 1, "run-1"), [rows(3, 3)])
    commit_batch(TableHandle.open(table), done, 1)
    abort_batch(TableHandle.open(table), done)  # too late: the segment is the table's
    assert ids(table) == [3, 4, 5]


def test_mark_outlives_compaction_and_clean_files(table):
    for b in range(3):
        batch = StreamBatch(QUERY, b, "run-1")
        commit_batch(TableHandle.open(table), run_tasks(table, batch, [rows(b * 10, 10)]), b)
    t = CarbonTable.open(table)
    t.compact("major")
    t.clean_files(force=True)
    handle = TableHandle.open(table)
    # segment 1's entry left tablestatus for tablestatus.history
    assert [e.name for e in handle.load_details() if e.other.get(BATCH_KEY) == f"{QUERY}:1"] == []
    assert committed_segment(handle, StreamBatch(QUERY, 1)) == "1"
    assert run_tasks(table, StreamBatch(QUERY, 1, "run-9"), [rows(10, 10)])[0].reservation is None
    assert ids(table) == list(range(30))


def test_small_batch_segments_merge_when_the_table_asks(tmp_path):
    path = str(tmp_path / "t")
    CarbonTable.create(path, SCHEMA, properties={"auto_load_merge": "true"})
    for b in range(4):  # MINOR's default threshold merges 4 segments
        commit_batch(TableHandle.open(path), run_tasks(path, StreamBatch(QUERY, b, "run-1"), [rows(b * 5, 5)]), b)
    statuses = {e.name: e.status for e in TableHandle.open(path).load_details()}
    assert statuses == {"0": ts.COMPACTED, "1": ts.COMPACTED, "2": ts.COMPACTED, "3": ts.COMPACTED,
                        "0.1": ts.SUCCESS}
    assert run_tasks(path, StreamBatch(QUERY, 2, "run-2"), [rows(10, 5)])[0].reservation is None  # still known
    assert ids(path) == list(range(20))
