"""Offsets of a streaming read (carbon_ds.table.ops.streams.offsets), on hand-made tablestatus entries."""

from __future__ import annotations

import pytest

from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.tablestatus import LoadDetail
from carbon_ds.table.ops.streams.offsets import Limit, Offset, initial_offset, next_offset, segments_between


def entry(name: str, status: str = ts.SUCCESS, **kw) -> LoadDetail:
    return LoadDetail(name=name, status=status, **kw)


def pos(offset: Offset) -> tuple[int, tuple[int, ...]]:
    """Where an offset stands (next id, pending ids), without its bookkeeping times."""
    return offset.next, offset.pending


def test_initial_offsets():
    entries = [entry("0"), entry("1", ts.IN_PROGRESS), entry("2")]
    assert pos(initial_offset(entries, "latest")) == (3, (1,))  # segment 1 may still commit
    assert initial_offset(entries, "latest").snapshot == ()
    # the default (snapshot): the same position, and the readable segments to deliver first; a compaction's
    # result is one of them, its sources are not
    compacted = [entry("0", ts.COMPACTED, merged_load_name="0.1"), entry("1", ts.IN_PROGRESS), entry("2"),
                 entry("0.1")]
    start = initial_offset(compacted, None)
    assert pos(start) == (3, (1,)) and start.snapshot == ("2", "0.1")
    assert Offset.from_json(start.to_json()) == start
    end, _ = next_offset(compacted, start)
    assert pos(end) == (3, (1,)) and end.snapshot == () and segments_between(start, end) == []
    assert pos(initial_offset(entries, "earliest")) == (0, ())
    assert pos(initial_offset(entries, "2")) == (2, ())
    assert pos(initial_offset([], "latest")) == (0, ())
    with pytest.raises(CarbonOptionError, match="starting_segment"):
        initial_offset(entries, "yesterday")


def test_out_of_order_commit_is_delivered_later_exactly_once():
    # segment 1 reserved before 2 but committed after it: the first batch delivers 2, the next one 1
    entries = [entry("0"), entry("1", ts.IN_PROGRESS), entry("2")]
    first, _ = next_offset(entries, Offset(0))
    assert pos(first) == (3, (1,))
    assert segments_between(Offset(0), first) == [0, 2]
    entries[1].status = ts.SUCCESS
    second, _ = next_offset(entries, first, now=2000)
    assert pos(second) == (3, ())
    assert segments_between(first, second) == [1]
    assert next_offset(entries, second, now=3000)[0] == second  # nothing new: the very same offset (AvailableNow ends)


def test_failed_and_compaction_segments_are_not_delivered():
    entries = [entry("0", ts.COMPACTED, merged_load_name="0.1"), entry("1", ts.COMPACTED, merged_load_name="0.1"),
               entry("0.1"), entry("2", ts.FAILURE), entry("3", ts.IN_PROGRESS)]
    start = Offset(2)  # 0 and 1 delivered before they were compacted: no change to report
    end, notes = next_offset(entries, start)
    assert (pos(end), notes) == ((4, (3,)), [])
    assert segments_between(start, end) == [2]  # passed over; the reader reads only readable segments
    entries[4].status = ts.FAILURE  # the pending load failed: forgotten
    assert pos(next_offset(entries, end)[0]) == (4, ())


def test_carbondata_streaming_segments_wait_for_their_handoff():
    # CarbonData's own row-format streaming segments are still being appended to: pending, not read
    entries = [entry("0"), entry("1", ts.STREAMING), entry("2", ts.STREAMING_FINISH), entry("3")]
    end, _ = next_offset(entries, Offset(0))
    assert pos(end) == (4, (1, 2))
    assert segments_between(Offset(0), end) == [0, 3]


def test_limits_by_files_and_rows_take_at_least_one_segment():
    entries = [entry(str(i)) for i in range(5)]
    sizes = {"0": (3, 30), "1": (1, 10), "2": (1, 10), "3": (5, 50), "4": (1, 10)}
    by_files = Limit(max_files=2, size_of=sizes.__getitem__)
    first, _ = next_offset(entries, Offset(0), by_files)
    assert segments_between(Offset(0), first) == [0]  # 3 files > 2, but a batch holds one segment at least
    second, _ = next_offset(entries, first, by_files)
    assert segments_between(first, second) == [1, 2]
    by_rows = Limit(max_rows=60, size_of=sizes.__getitem__)
    third, _ = next_offset(entries, second, by_rows)
    assert segments_between(second, third) == [3, 4]


def test_limit_keeps_pending_segments_behind_the_limit():
    entries = [entry("0"), entry("1"), entry("2")]
    start = Offset(3, (0, 1))  # both committed late
    end, _ = next_offset(entries, start, Limit(max_files=1, size_of=lambda _s: (1, 1)))
    assert pos(end) == (3, (1,))
    assert segments_between(start, end) == [0]


@pytest.mark.parametrize(("change", "words"), [
    ({"status": ts.MARKED_FOR_DELETE, "modification_time": "6000"}, "deleted or overwritten"),
    ({"update_delta_end": "2000"}, "deleted or updated"),
])
def test_changes_to_delivered_rows_are_reported(change, words):
    entries = [entry("0", update_delta_end="1000"), entry("1")]
    start, _ = next_offset(entries, Offset(0), now=5000)
    assert start.updated == 1000
    for key, value in change.items():
        setattr(entries[0], key, value)
    with pytest.raises(CarbonTableError, match=f"segment 0 .*{words}.*ignore_changes"):
        next_offset(entries, start)
    end, notes = next_offset(entries, start, ignore_changes=True, now=7000)
    assert len(notes) == 1 and words in notes[0]
    assert next_offset(entries, end)[1] == []  # reported once


def test_segments_deleted_or_updated_before_the_start_are_not_changes():
    entries = [entry("0", ts.MARKED_FOR_DELETE, modification_time="1000"), entry("1", update_delta_end="1500"),
               entry("2", ts.MARKED_FOR_DELETE, modification_time="1800"), entry("3")]
    for starting in ("latest", "3", "earliest"):
        start = initial_offset(entries, starting, now=2000)
        end, notes = next_offset(entries, start, now=3000)
        assert notes == []
    # from the beginning: 0 and 2 were deleted before they were read, so only 1 and 3 are read
    passed = segments_between(initial_offset(entries, "earliest"), end)
    assert [i for i in passed if entries[i].readable] == [1, 3]


def test_segment_compacted_before_it_was_read_is_reported():
    entries = [entry("0", ts.COMPACTED, merged_load_name="0.1"), entry("1", ts.COMPACTED, merged_load_name="0.1"),
               entry("0.1")]
    with pytest.raises(CarbonTableError, match="segment 1 was compacted into 0.1 before this stream read it"):
        next_offset(entries, Offset(1))
    end, _ = next_offset(entries, Offset(1), ignore_changes=True)
    assert pos(end) == (2, ())


def test_offsets_round_trip_and_bad_offsets_are_named():
    off = Offset(7, (3, 5), 123)
    assert Offset.from_json(off.to_json()) == off
    with pytest.raises(CarbonTableError, match="offset"):
        Offset.from_json({"segment": 3})
