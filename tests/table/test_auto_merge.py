"""Automatic load merge (CarbonData's ``auto_load_merge`` / ``carbon.enable.auto.load.merge``, MINOR with
``carbon.compaction.level.threshold``) as a post-commit step: it never makes a writer wait or fail, and never
loses or repeats a row, with appends, DELETEs and other merges running beside it (the oracle: the rows the
writers wrote, counted by pyarrow)."""

from __future__ import annotations

import multiprocessing as mp
import warnings

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import carbon_ds
from carbon_ds import faults
from carbon_ds.table import CarbonTable
from carbon_ds.table.loads.start import PostCommit, start_load
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.ops.compaction import compact

SCHEMA = pa.schema([("id", pa.int64()), ("who", pa.string())])


def _batch(start: int, n: int, who: str) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "who": [who] * n}, schema=SCHEMA)


def _ids(path) -> list[int]:
    return sorted(carbon_ds.read_table(path, columns=["id"]).column("id").to_pylist())


def _appender(path: str, who: int, loads: int, out) -> None:
    """A writer process: ``loads`` appends, each followed by its own automatic merge (table property)."""
    try:
        for i in range(loads):
            carbon_ds.write_table(_batch(who * 10_000 + i * 10, 10, f"w{who}"), path)
        out.put((who, None))
    except BaseException as e:  # noqa: BLE001 - reported to the test
        out.put((who, repr(e)))


@pytest.mark.slow
def test_merges_beside_concurrent_appends_lose_nothing(tmp_path):
    path = str(tmp_path / "t")
    CarbonTable.create(path, SCHEMA, properties={"auto_load_merge": "true", "compaction_level_threshold": "3,2"})
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    writers = [ctx.Process(target=_appender, args=(path, w, 12, out)) for w in range(2)]
    for p in writers:
        p.start()
    t = CarbonTable.open(path)
    while any(p.is_alive() for p in writers):  # this process merges too, in the background
        thread = compact.merge_in_background(t, force=True)
        if thread is not None:
            thread.join(60)
    for p in writers:
        p.join(120)
    errors = [out.get(timeout=10) for _ in writers]
    assert [e for _w, e in errors if e] == []
    compact.wait_for_merges()
    want = sorted(w * 10_000 + i for w in range(2) for i in range(120))
    assert _ids(path) == want  # every row, once
    statuses = [e.status for e in t.load_details()]
    assert statuses.count(ts.COMPACTED) >= 6 and ts.IN_PROGRESS not in statuses
    assert carbon_ds.scan(path).count() == 240
    # merging again, with a DELETE between, keeps exactly the live rows
    gone = {3, 17, 64, 10_021, 10_119}
    assert t.delete(f"id IN ({', '.join(map(str, sorted(gone)))})") == len(gone)
    compact.auto_compact(t, force=True)
    assert _ids(path) == [i for i in want if i not in gone]


def test_a_merge_gives_way_to_a_delete(tmp_path):
    path = str(tmp_path / "t")
    t = CarbonTable.create(path, SCHEMA, properties={"auto_load_merge": "false"})
    for i in range(4):
        carbon_ds.write_table(_batch(i * 10, 10, "a"), path)
    # a DELETE running (its update lock held): the merge does not start, and is no failure
    with t.update_lock("DELETE"), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compact.auto_compact(t, force=True) == []
    # a DELETE starting while the merge runs: the merge commits nothing and the DELETE is not refused
    lock = []

    def delete_starts(name):
        if name == "compaction.before_status" and not lock:
            lock.append(t.update_lock("DELETE"))

    with faults.inject(delete_starts), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compact.auto_compact(t, force=True) == []
    lock[0].release()
    # the merged segment it reserved is "Failure" (never read; the next compaction drops it), the sources live
    assert [(e.name, e.status) for e in t.load_details()] == [(str(i), ts.SUCCESS) for i in range(4)] + [
        ("0.1", ts.FAILURE)]
    # a DELETE committing while the merge writes: the merge commits nothing (no warning), the DELETE stands
    deleted = []

    def delete_commits(name):
        if name == "compaction.written" and not deleted:
            deleted.append(t.delete("id = 13"))

    with faults.inject(delete_commits), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compact.auto_compact(t, force=True) == []
    assert deleted == [1]
    assert [(e.name, e.status) for e in t.load_details()][-1] == ("0.1", ts.FAILURE)
    merged = compact.auto_compact(t, force=True)  # the next merge takes the same segments
    assert [(m.segment, m.sources) for m in merged] == [("0.1", ["0", "1", "2", "3"])]
    assert _ids(path) == [i for i in range(40) if i != 13]


def test_merge_setting_and_its_default(tmp_path):
    """The table property decides, else the setting carbon.enable.auto.load.merge, else the caller's default
    (the streaming sink's: on; everyone else's: CarbonData's, off)."""
    for prop, setting, default, merges in [(None, None, None, False), (None, None, True, True),
                                           ("false", None, True, False), (None, "false", True, False),
                                           ("true", None, None, True), (None, "true", None, True)]:
        path = tmp_path / f"t{prop}{setting}{default}"
        t = CarbonTable.create(str(path), SCHEMA, properties={"auto_load_merge": prop} if prop else None)
        for i in range(4):
            with start_load(t, post_commit=PostCommit(compact=False)) as load:
                load.write([_batch(i * 10, 10, "a")])
        settings = {"carbon.enable.auto.load.merge": setting} if setting else None
        got = compact.auto_compact(t, settings, default=default)
        assert bool(got) == merges, (prop, setting, default)
        assert _ids(path) == list(range(40))


def test_stream_hooks_merge_in_the_background(tmp_path):
    path = str(tmp_path / "t")
    t = CarbonTable.create(path, SCHEMA)
    for i in range(4):
        with start_load(t, post_commit=PostCommit(stream_merge="default")) as load:
            load.write([_batch(i * 10, 10, "a")])
    compact.wait_for_merges(60)
    assert {e.name: e.status for e in t.load_details()}["0.1"] == ts.SUCCESS
    assert PostCommit(stream_merge=None, compact=False).names() == ()
    off = CarbonTable.create(str(tmp_path / "off"), SCHEMA, properties={"auto_load_merge": "false"})
    for i in range(4):
        with start_load(off, post_commit=PostCommit(stream_merge="default")) as load:
            load.write([_batch(i * 10, 10, "a")])
    compact.wait_for_merges(60)
    assert "0.1" not in {e.name for e in off.load_details()}
    assert pc.sum(carbon_ds.read_table(off.path)["id"]).as_py() == sum(range(40))


def test_a_long_stream_keeps_few_live_segments_with_deep_merges(tmp_path):
    """60 batches through the sink's hooks: CarbonData's two MINOR levels leave one live segment per 12
    batches (5), the deep merge folds the level-2 results again (0.3 of 36 batches, 36.2, 48.2); every row
    once either way (oracle: the ids written)."""
    live = {}
    for deep in (False, True):
        path = str(tmp_path / f"deep{deep}")
        t = CarbonTable.create(path, SCHEMA)
        for i in range(60):
            with start_load(t, post_commit=PostCommit(stream_merge="always", compact=False, deep=deep)) as load:
                load.write([_batch(i * 10, 10, "a")])
            compact.wait_for_merges(60)  # each commit's merge settles before the next, as a slow trigger's
        live[deep] = sorted(e.name for e in t.load_details() if e.readable)
        assert _ids(path) == list(range(600)), deep
    assert live[False] == ["0.2", "12.2", "24.2", "36.2", "48.2"]
    assert live[True] == ["0.3", "36.2", "48.2"]
    assert PostCommit(stream_merge="default").names() == ("merge_default_deep",)
    assert PostCommit(stream_merge="default", deep=False).names() == ("merge_default",)
