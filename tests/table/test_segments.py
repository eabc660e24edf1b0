"""Segment management without Spark: SHOW SEGMENTS text, DELETE by id / start time, CLEAN FILES + trash."""

from __future__ import annotations

import json
from datetime import datetime

import pyarrow as pa
import pytest

import carbon_ds.api as api
from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.table import CarbonTable
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.ops.segments import manage

DAY = manage.DAY_MS


def _table(tmp_path, n=4, rows=10) -> CarbonTable:
    path = tmp_path / "t"
    for i in range(n):
        api.write_table(pa.table({"a": pa.array(range(i * rows, (i + 1) * rows), pa.int64())}), path)
    return CarbonTable.open(path)


def _set_starts(t: CarbonTable, starts: dict[str, str]) -> None:
    """Give segments chosen load start times ('yyyy-MM-dd HH:mm:ss', local)."""
    with t.edit_status("test") as edit:
        entries = edit.entries
        for e in entries:
            if e.name in starts:
                ms = int(datetime.strptime(starts[e.name], "%Y-%m-%d %H:%M:%S").timestamp() * 1000)
                e.load_start_time, e.timestamp = str(ms), str(ms + 452)


def _set_status(t: CarbonTable, seg: str, status: str) -> None:
    with t.edit_status("test") as edit:
        entries = edit.entries
        ts.find(entries, seg).status = status


def test_show_segments_text_newest_first(tmp_path):
    t = _table(tmp_path, n=3)
    _set_starts(t, {"0": "2021-11-29 16:30:16", "1": "2021-11-29 16:30:17", "2": "2021-11-29 16:34:27"})
    text = t.show_segments()
    lines = text.splitlines()
    assert lines[0].startswith("+--") and lines[0] == lines[2] == lines[-1]
    header = [c.strip() for c in lines[1].strip("|").split("|")]
    assert header == list(manage.COLUMNS)
    body = [[c.strip() for c in line.strip("|").split("|")] for line in lines[3:-1]]
    assert [r[0] for r in body] == ["2", "1", "0"]
    assert body[2][1:5] == ["Success", "2021-11-29 16:30:16.000", "0.452S", "NA"]
    assert body[0][7:] == ["columnar_v3", "NA"] and body[0][5].endswith("B") and body[0][6].endswith("B")
    # every line is the same width: a real table, not ragged text
    assert len({len(line) for line in lines}) == 1
    assert [r["ID"] for r in t.segment_rows(limit=2)] == ["2", "1"]
    assert t.show_segments(limit=0).count("\n") == 3
    # ids order numerically (10 after 9), compaction results next to their source
    assert sorted(["10", "9", "0.1", "0", "2"], key=manage.segment_sort_key, reverse=True) == ["10", "9", "2", "0.1", "0"]


def test_show_segments_external_and_partition_columns(tmp_path):
    t = _table(tmp_path, n=1)
    with t.edit_status("test") as edit:
        entries = edit.entries
        entries.append(
            ts.LoadDetail(name="1", status=ts.SUCCESS, file_format="parquet", path="/data/ext", data_size="2048",
                          load_start_time="1", timestamp="2")
        )
    (row,) = t.segment_rows(limit=1)
    assert row["File Format"] == "parquet" and row["Index Size"] == "NA" and row["Path"] == "/data/ext"
    assert row["Data Size"] == "2.00KB" and row["Partition"] == "NA"


def test_delete_by_id_marks_atomically_and_refuses_with_reasons(tmp_path):
    t = _table(tmp_path)
    _set_status(t, "2", ts.COMPACTED)
    before = (t.storage.read_text(t.tablestatus_path))
    with pytest.raises(CarbonTableError) as e:
        t.delete_segments(["0", "2", "9"])
    msg = str(e.value)
    assert "Invalid ID is: 2, 9" in msg and "segment 2 cannot be deleted because it is compacted" in msg
    assert "segment 9 is not found" in msg and "nothing was deleted" in msg
    assert t.storage.read_text(t.tablestatus_path) == before  # all or nothing
    _set_status(t, "2", ts.IN_PROGRESS)
    with pytest.raises(CarbonTableError, match="segment 2 cannot be deleted because its load is in progress"):
        t.delete_segments([2])
    assert t.delete_segments(["0", "3"]) == ["0", "3"]
    st = {s.id: s.status for s in t.segments()}
    assert st == {"0": "Marked for Delete", "1": "Success", "2": "In Progress", "3": "Marked for Delete"}
    assert api.read_table(t.path).column("a").to_pylist() == list(range(10, 20))
    with pytest.raises(CarbonTableError, match="segment 0 is already marked for delete"):
        t.delete_segments(["0"])
    with pytest.raises(CarbonOptionError, match="segment ids must be numbers"):
        t.delete_segments(["x"])
    with pytest.raises(CarbonOptionError, match="at least one segment id"):
        t.delete_segments([])


def test_delete_before_start_time_local(tmp_path):
    t = _table(tmp_path)
    _set_starts(t, {"0": "2021-11-29 16:30:16", "1": "2021-11-29 16:30:17", "2": "2021-11-29 16:34:27",
                    "3": "2021-11-29 17:59:40"})
    _set_status(t, "1", ts.COMPACTED)
    # strictly before, compared in local time; compacted ones are skipped, not errors (as CarbonData)
    assert t.delete_segments_before("2021-11-29 16:34:27") == ["0"]
    assert t.delete_segments_before("2021-11-29 17:00:00") == ["2"]
    with pytest.raises(CarbonTableError, match=r"No matching segment found.*skipped: 1 \(Compacted\)"):
        t.delete_segments_before("2021-11-29 17:00:00")
    with pytest.raises(CarbonOptionError, match="yyyy-MM-dd HH:mm:ss"):
        t.delete_segments_before("29-11-2021")
    assert [s.id for s in t.segments() if s.readable] == ["3"]


def test_delete_before_reads_old_date_format(tmp_path):
    t = _table(tmp_path, n=2)
    with t.edit_status("test") as edit:
        entries = edit.entries
        entries[0].load_start_time = "29-11-2021 16:30:16:480"  # a 1.x tablestatus date
    assert t.delete_segments_before("2021-11-29 16:30:17") == ["0"]
    assert "2021-11-29 16:30:16.480" in t.show_segments()


def test_clean_files_trash_retention_and_force(tmp_path):
    t = _table(tmp_path)
    t.delete_segments(["0", "1"])
    now = ts.now_ms()
    r = manage.clean_files(t, now_ms=now)
    assert r.trashed == ["0", "1"] and r.removed_entries == ["1"]  # segment 0 stays, invisible (see below)
    assert not (tmp_path / "t" / "Fact" / "Part0" / "Segment_0").exists()
    trash = manage.trash_contents(t)
    assert list(trash) == [str(now)]
    assert sorted(f.split("/")[0] for f in trash[str(now)]) == ["Segment_0", "Segment_0", "Segment_1", "Segment_1"]
    assert [s.id for s in t.segments()] == ["0", "2", "3"]
    history = json.loads((tmp_path / "t" / "Metadata" / "tablestatus.history").read_text())
    assert [h["loadName"] for h in history] == ["1"]
    assert api.read_table(t.path).num_rows == 20
    # within retention the trash stays; after it, the sub-folder goes
    assert manage.clean_files(t, now_ms=now + 6 * DAY).expired_trash == []
    assert manage.clean_files(t, now_ms=now + 7 * DAY + 1).expired_trash == [str(now)]
    assert manage.trash_contents(t) == {}
    # retention is configurable (0..365 days)
    t.delete_segments(["2"])
    manage.clean_files(t, retention=0, now_ms=now + 8 * DAY)
    assert manage.clean_files(t, retention=0, now_ms=now + 8 * DAY + 1).expired_trash == [str(now + 8 * DAY)]
    with pytest.raises(CarbonOptionError, match="between 0 and 365"):
        t.clean_files(retention_days=400)
    # force: straight delete, trash emptied
    (tmp_path / "t" / ".Trash" / "123").mkdir(parents=True)
    api.write_table(pa.table({"a": pa.array([1], pa.int64())}), t.path)
    t.delete_segments(["3"])
    r = t.clean_files(force=True)
    assert r.deleted == ["3"] and not (tmp_path / "t" / ".Trash").exists()
    assert api.read_table(t.path).column("a").to_pylist() == [1]


def test_clean_keeps_top_id_so_ids_are_never_reused(tmp_path):
    t = _table(tmp_path, n=2)
    t.delete_segments(["0", "1"])
    r = t.clean_files()
    assert r.removed_entries == []  # 1 (the top id) and 0 stay as invisible entries, as in CarbonData
    assert t.show_segments().count("\n") == 3  # header only
    assert [(s.id, s.readable) for s in t.segments()] == [("0", False), ("1", False)]
    assert api.write_table(pa.table({"a": pa.array([5], pa.int64())}), t.path) == "2"
    assert api.read_table(t.path).column("a").to_pylist() == [5]
    assert t.clean_files().removed_entries == ["1"]


def test_clean_never_touches_external_segment_files(tmp_path):
    t = _table(tmp_path, n=1)
    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "part-0.parquet").write_bytes(b"PAR1 not really")
    with t.edit_status("test") as edit:
        entries = edit.entries
        entries.append(ts.LoadDetail(name="1", status=ts.SUCCESS, file_format="parquet", path=str(ext),
                                     load_start_time="1", timestamp="2", visibility="true"))
    api.write_table(pa.table({"a": pa.array([1], pa.int64())}), t.path)
    t.delete_segments(["1"])
    r = t.clean_files(force=True)
    assert r.kept_external == ["1"] and r.removed_entries == ["1"]
    assert (ext / "part-0.parquet").read_bytes() == b"PAR1 not really"


def test_clean_files_crash_between_steps_leaves_table_readable(tmp_path, monkeypatch):
    t = _table(tmp_path, n=3)
    t.delete_segments(["1"])
    real_write = ts.replace_if_version

    def crash(*_args):
        raise OSError("simulated crash before the tablestatus write")

    monkeypatch.setattr(ts, "replace_if_version", crash)
    with pytest.raises(OSError):
        t.clean_files()
    monkeypatch.setattr(ts, "replace_if_version", real_write)
    # files are in the trash, the entry still says Marked for Delete: readers see exactly the live rows
    assert {s.id: s.status for s in t.segments()}["1"] == "Marked for Delete"
    assert sorted(api.read_table(t.path).column("a").to_pylist()) == list(range(0, 10)) + list(range(20, 30))
    assert "Marked for Delete" in t.show_segments()
    r = t.clean_files()  # a second run finishes the job
    assert r.removed_entries == ["1"] and [s.id for s in t.segments()] == ["0", "2"]
    history = json.loads((tmp_path / "t" / "Metadata" / "tablestatus.history").read_text())
    assert [h["loadName"] for h in history] == ["1"]  # not recorded twice


def test_real_1x_table_show_delete_clean(tmp_path, corpus):
    import shutil

    path = tmp_path / "real"
    shutil.copytree(corpus / "table-1.1-global-dictionary", path)
    t = CarbonTable.open(path)
    assert "|0 |Success|" in t.show_segments()  # 1.x dates, no sizes: NA
    assert t.delete_segments_before("2030-01-01") == ["0"]
    r = t.clean_files()
    assert r.trashed == ["0"] and not (path / "Fact" / "Part0" / "Segment_0").exists()
    assert any(f.endswith(".carbondata") for fs in manage.trash_contents(t).values() for f in fs)
    assert t.to_arrow().num_rows == 0


def test_clean_files_moves_history_as_carbondata_does(tmp_path):
    """CLEAN FILES moves the entries it cleaned to tablestatus.history except two that stay invisible, as in
    CarbonData (SegmentStatusManager.countInvisibleSegments / separateVisibleAndInvisibleSegments): segment 0,
    whose updateStatusFileName is where CarbonData finds the table's deletes (getUpdateStatusFileName reads
    segment 0's, SegmentUpdateStatusManager the first entry's), and the highest id. Live segments and the rows
    read are untouched."""
    t = _table(tmp_path, n=6)
    assert t.delete("a = 25") == 1  # rows of segment 2 deleted: an update status file, named in every entry
    status_name = ts.find(t.load_details(), "0").update_status_file
    assert status_name
    t.delete_segments(["0", "1", "5"])
    before = api.read_table(t.path).sort_by("a")
    live = [e for e in t.load_details() if e.readable]
    r = t.clean_files(force=True)
    assert r.removed_entries == ["1"]
    entries = t.load_details()
    assert [(e.name, e.visibility) for e in entries] == [("0", "false"), ("2", "true"), ("3", "true"),
                                                          ("4", "true"), ("5", "false")]
    assert entries[0].name == "0" and entries[0].update_status_file == status_name
    assert [e for e in entries if e.readable] == live
    history = json.loads((tmp_path / "t" / "Metadata" / "tablestatus.history").read_text())
    assert [(h["loadName"], h["loadStatus"]) for h in history] == [("1", "Marked for Delete")]
    assert api.read_table(t.path).sort_by("a").equals(before)
    # a second clean has nothing to move; a later one appends to the history, never repeating an entry
    assert t.clean_files(force=True).removed_entries == []
    t.delete_segments(["3"])
    assert t.clean_files(force=True).removed_entries == ["3"]
    history = json.loads((tmp_path / "t" / "Metadata" / "tablestatus.history").read_text())
    assert [h["loadName"] for h in history] == ["1", "3"]
    assert [e.name for e in t.load_details()] == ["0", "2", "4", "5"]
