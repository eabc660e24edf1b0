"""Planning a read parses each segment's segment file and index files once per process, kept by the segment's
tablestatus entry (meta.caches.committed_cache) or by the signatures of the files (meta.caches.signed_cache, for added
external folders), and never answers from what it kept once a compaction, a delete, an update, an overwrite,
a segment delete or CLEAN FILES changed the table, nor once an external folder's file changed: every read
gives the rows a process that never read the table before gives (the oracle: the same read with the caches
emptied) and the rows pyarrow computes from what was written."""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import carbon_ds
from carbon_ds.errors import CarbonError
from carbon_ds.table import CarbonTable
from carbon_ds.table.meta.caches import committed_cache
from carbon_ds.table.meta.files import data_files
from carbon_ds.table.meta.status import status_doc
from carbon_ds.table.read import pruning


def _rows(s: int) -> pa.Table:
    ids = list(range(10 * s, 10 * s + 10))
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids]})


def _cold(fn):
    """``fn()`` as a process that never read anything would answer it."""
    for cache in (data_files._LISTED, pruning._FOLDERS, status_doc.KEPT):
        cache.clear()
    committed_cache.clear_all()
    pruning._CACHE.clear()
    return fn()


def _same_as_cold(path, filter=None) -> pa.Table:
    warm = carbon_ds.read_table(path, filter=filter).sort_by("id")
    assert warm.equals(_cold(lambda: carbon_ds.read_table(path, filter=filter).sort_by("id")))
    assert carbon_ds.scan(path, filter=filter).count() == warm.num_rows
    return warm


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "t"
    for s in range(5):
        carbon_ds.write_table(_rows(s), path)
    return path


def test_index_and_segment_files_are_parsed_once(table, monkeypatch):
    _same_as_cold(table, "id = 23")
    parsed = {"index": 0, "segment": 0}
    real_index, real_segment = pruning.read_index, data_files.segfiles.read

    def read_index(*a, **k):
        parsed["index"] += 1
        return real_index(*a, **k)

    def read_segment(*a, **k):
        parsed["segment"] += 1
        return real_segment(*a, **k)

    monkeypatch.setattr(pruning, "read_index", read_index)
    monkeypatch.setattr(data_files.segfiles, "read", read_segment)
    pruning._CACHE.clear()  # the per-file cache under the folder cache: a hit must not even reach it
    for text in ("id = 23", "id > 30", None):
        carbon_ds.read_table(table, filter=text)
        carbon_ds.scan(table, filter=text).count()
    assert parsed == {"index": 0, "segment": 0}
    carbon_ds.write_table(_rows(5), table)  # a new segment: its files once, the others' never again
    assert carbon_ds.read_table(table, filter="id >= 0").num_rows == 60
    assert parsed == {"index": 1, "segment": 1}


def test_no_stale_answer_after_compaction_delete_and_overwrite(table):
    want = pa.concat_tables([_rows(s) for s in range(5)])
    assert _same_as_cold(table, "id >= 20").equals(want.filter(pc.field("id") >= 20))
    t = CarbonTable.open(table)
    t.compact("major")
    t.clean_files(force=True)
    assert _same_as_cold(table, "id >= 20").equals(want.filter(pc.field("id") >= 20))
    assert _same_as_cold(table).equals(want)
    assert t.delete("id = 23 OR id = 41") == 2
    want = want.filter(~pc.field("id").isin([23, 41]))
    assert _same_as_cold(table, "id >= 20").equals(want.filter(pc.field("id") >= 20))
    carbon_ds.write_table(_rows(9), table, mode="overwrite")
    assert _same_as_cold(table).equals(_rows(9))
    assert _same_as_cold(table, "id = 23").num_rows == 0


def test_files_changed_in_place_are_read_again_once_the_committed_caches_are_cleared(table):
    """A committed segment's own files are trusted while its tablestatus entry is unchanged (as CarbonData's
    driver does); under that, the signed layer never answers for a file replaced under the same name
    (another index, a damaged copy)."""
    assert _same_as_cold(table, "id = 23").num_rows == 1
    committed_cache.clear_all()
    seg2 = table / "Fact" / "Part0" / "Segment_2"
    seg3 = table / "Fact" / "Part0" / "Segment_3"
    index2 = next(p for p in os.listdir(seg2) if p.endswith(".carbonindex"))
    index3 = next(p for p in os.listdir(seg3) if p.endswith(".carbonindex"))
    # segment 2's index replaced by segment 3's: it names another data file, so segment 2's file is read by
    # its footer (the same rows) or refused, exactly as a new process does
    shutil.copyfile(seg3 / index3, seg2 / index2)
    committed_cache.clear_all()
    try:
        warm = carbon_ds.read_table(table, filter="id = 23").to_pylist()
    except CarbonError as e:
        warm = type(e)
    try:
        cold = _cold(lambda: carbon_ds.read_table(table, filter="id = 23").to_pylist())
    except CarbonError as e:
        cold = type(e)
    assert warm == cold
    # a damaged index in place: the same answer as a cold read (an unreadable index costs pruning only)
    (seg2 / index2).write_bytes(b"\x00" * 40)
    committed_cache.clear_all()
    assert _same_as_cold(table, "id = 23").num_rows == 1
    # a segment file rewritten in place to list no index file
    seg_file = next((table / "Metadata" / "segments").iterdir())
    seg_file.write_text('{"locationMap":{}}')
    committed_cache.clear_all()
    with pytest.raises(CarbonError):
        carbon_ds.read_table(table)
    with pytest.raises(CarbonError):
        _cold(lambda: carbon_ds.read_table(table))


def test_no_stale_answer_after_update_segment_delete_and_clean_files(table):
    """The table-level plan (an unfiltered count answers from it alone) and each segment's kept files and index
    entries follow every commit that changes them."""
    want = pa.concat_tables([_rows(s) for s in range(5)])
    assert _same_as_cold(table).equals(want)
    assert carbon_ds.scan(table).count() == 50  # the kept table-level plan
    t = CarbonTable.open(table)
    assert t.update({"v": "changed"}, "id = 12 OR id = 33") == 2
    got = _same_as_cold(table)
    assert got.filter(pc.field("v") == "changed")["id"].to_pylist() == [12, 33]
    assert got.num_rows == 50
    assert t.delete("id < 5") == 5
    assert carbon_ds.scan(table).count() == 45
    assert _same_as_cold(table).num_rows == 45
    t.delete_segments(["1"])  # segment 1's rows go, but for row 12, which the UPDATE wrote anew
    want = sorted([i for i in range(5, 50) if not 10 <= i < 20] + [12])
    assert _same_as_cold(table)["id"].to_pylist() == want
    assert carbon_ds.scan(table).count() == 36
    t.clean_files(force=True)
    assert _same_as_cold(table)["id"].to_pylist() == want
    carbon_ds.write_table(_rows(7), table)
    assert carbon_ds.scan(table).count() == 46
    assert _same_as_cold(table, "id >= 70").equals(_rows(7))


def test_an_added_external_folder_changed_in_place_is_read_again(table, tmp_path):
    """An added folder is someone else's: its files are signed, never trusted by the segment's entry."""
    import pyarrow.parquet as pq

    folder = tmp_path / "ext"
    folder.mkdir()
    pq.write_table(_rows(50), folder / "a.parquet")
    CarbonTable.open(table).add_segment(str(folder), format="parquet")
    assert _same_as_cold(table, "id >= 500").equals(_rows(50))
    assert carbon_ds.scan(table).count() == 60
    pq.write_table(_rows(60).slice(0, 4), folder / "a.parquet")  # replaced in place, other rows
    assert _same_as_cold(table, "id >= 500").equals(_rows(60).slice(0, 4))
    assert carbon_ds.scan(table).count() == 54
