"""Which segments compaction takes, checked against Apache CarbonData's rules (CarbonDataMergerUtil) on
hand-written tablestatus entries: id order, level counts, sizes, preserved segments, allowed days, the
system-level settings under the table properties, and the property checks."""

from __future__ import annotations

import pyarrow as pa
import pytest

from carbon_ds.errors import CarbonOptionError
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.tablestatus import LoadDetail
from carbon_ds.table.ops.compaction.selection import MB, select
from carbon_ds.table.table import CarbonTable

DAY_MS = 24 * 3600 * 1000
T0 = 1_700_000_000_000  # a load start in milliseconds


def _table(tmp_path, **props) -> CarbonTable:
    return CarbonTable.create(str(tmp_path / "t"), pa.schema([("a", pa.int64())]), properties=props or None)


def _seg(name: str, mb: float = 0.01, status: str = ts.SUCCESS, start: int = T0, **kw) -> LoadDetail:
    return LoadDetail(name=name, status=status, data_size=str(int(mb * MB)), load_start_time=str(start), **kw)


def _names(group: list[LoadDetail]) -> list[str]:
    return [e.name for e in group]


def test_minor_counts_levels_in_id_order_not_only_consecutive(tmp_path):
    t = _table(tmp_path)
    # 1.1 came from a CUSTOM merge of 1 and 2: the level-0 count skips it, as CarbonData's does
    entries = [_seg("0"), _seg("1", status=ts.COMPACTED), _seg("2", status=ts.COMPACTED), _seg("3"), _seg("4"),
               _seg("5"), _seg("1.1")]
    assert _names(select(t, entries, "minor")) == ["0", "3", "4", "5"]
    # level-1 segments are counted apart; the first count to reach its threshold wins
    entries = [_seg("0.1"), _seg("4.1"), _seg("8"), _seg("8.1"), _seg("9")]
    assert _names(select(t, entries, "minor")) == ["0.1", "4.1", "8.1"]
    # level 2 and MAJOR results are never taken by MINOR; streaming and failed segments neither
    entries = [_seg("0.2"), _seg("3.1", major_compacted="true"), _seg("4", status=ts.STREAMING),
               _seg("5", status=ts.FAILURE), _seg("6"), _seg("7"), _seg("8")]
    assert select(t, entries, "minor") == []


def test_level_thresholds_use_two_counts_and_a_second_count_of_one_is_off(tmp_path):
    entries = [_seg("0.1"), _seg("4.1"), _seg("8"), _seg("9")]
    assert _names(select(_table(tmp_path, compaction_level_threshold="2,2,2"), entries, "minor")) == ["0.1", "4.1"]
    t = _table(tmp_path / "b", compaction_level_threshold="3,1")
    assert select(t, entries, "minor") == []  # 2 loads < 3, and a level-2 count of 1 is off
    t = _table(tmp_path / "c", compaction_level_threshold="4,100")
    with pytest.raises(CarbonOptionError, match="compaction_level_threshold .*'4,100'.*between 0 and 99"):
        select(t, entries, "minor")


def test_deep_minor_merges_merged_segments_level_by_level_under_the_major_size(tmp_path):
    """The streaming sink's merge: MINOR as CarbonData selects, then every level-2 count of one level (2 and
    up) into the next, oldest first, never a group of major_compaction_size or more."""
    t = _table(tmp_path, major_compaction_size="10")
    entries = [_seg("0.2"), _seg("12.2"), _seg("24.2"), _seg("36.1"), _seg("40")]
    assert select(t, entries, "minor") == []  # CarbonData's MINOR: level 2 is final
    assert _names(select(t, entries, "minor", deep=True)) == ["0.2", "12.2", "24.2"]
    # levels are counted apart; level-0 and level-1 groups keep CarbonData's counts
    entries = [_seg("0.3"), _seg("36.3"), _seg("72.2"), _seg("84.2"), _seg("96.3")]
    assert _names(select(t, entries, "minor", deep=True)) == ["0.3", "36.3", "96.3"]
    # too big together: the oldest is passed over and the next three merge
    entries = [_seg("0.2", 6), _seg("12.2", 3), _seg("24.2", 2), _seg("36.2", 1), _seg("48", 1)]
    assert _names(select(t, entries, "minor", deep=True)) == ["12.2", "24.2", "36.2"]
    assert select(t, entries[:3], "minor", deep=True) == []
    # MAJOR results and a level-2 count of 0 stay out
    entries = [_seg("0.2", major_compacted="true"), _seg("12.2"), _seg("24.2")]
    assert select(t, entries, "minor", deep=True) == []
    off = _table(tmp_path / "off", compaction_level_threshold="4,0")
    assert select(off, [_seg("0.2"), _seg("12.2"), _seg("24.2")], "minor", deep=True) == []


def test_minor_compaction_size_skips_large_segments(tmp_path):
    t = _table(tmp_path, minor_compaction_size="2", compaction_level_threshold="3,0")
    entries = [_seg("0", 1), _seg("1", 5), _seg("2", 1), _seg("3", 1.5)]
    assert _names(select(t, entries, "minor")) == ["0", "2", "3"]


def test_major_takes_the_oldest_segments_below_the_size_and_skips_one_above_it(tmp_path):
    t = _table(tmp_path, major_compaction_size="10 MB")
    # 1 alone is above 10 MB: skipped, and the group of one before it dropped; then 2+3+4 < 10 MB <= +5
    entries = [_seg("0", 2), _seg("1", 11), _seg("2", 3), _seg("3", 3), _seg("4", 3), _seg("5", 2)]
    assert _names(select(t, entries, "major")) == ["2", "3", "4"]
    with pytest.raises(CarbonOptionError, match="major_compaction_size .*'ten'"):
        select(_table(tmp_path / "b", major_compaction_size="ten"), entries, "major")


def test_preserve_and_allowed_days(tmp_path):
    t = _table(tmp_path, compaction_preserve_segments="2", compaction_level_threshold="2,0")
    entries = [_seg("0"), _seg("1"), _seg("2"), _seg("3")]
    assert _names(select(t, entries, "minor")) == ["0", "1"]
    t = _table(tmp_path / "b", compaction_preserve_segments="1", compaction_level_threshold="3,0")
    assert select(t, entries[:3], "minor") == []  # the newest is kept: two left, fewer than three
    with pytest.raises(CarbonOptionError, match="compaction_preserve_segments .*between 0 and 100"):
        select(_table(tmp_path / "c", compaction_preserve_segments="101"), entries, "minor")
    # allowed_compaction_days 2: a run of loads less than two calendar days after its first one
    t = _table(tmp_path / "d", allowed_compaction_days="2", compaction_level_threshold="3,0")
    days = [_seg("0", start=T0), _seg("1", start=T0 + 5 * DAY_MS), _seg("2", start=T0 + 5 * DAY_MS + 3600_000),
            _seg("3", start=T0 + 6 * DAY_MS), _seg("4", start=T0 + 9 * DAY_MS)]
    assert _names(select(t, days, "minor")) == ["1", "2", "3"]


def test_system_settings_apply_under_table_properties(tmp_path):
    entries = [_seg(str(i)) for i in range(4)]
    t = _table(tmp_path)
    assert _names(select(t, entries, "minor", settings={"carbon.compaction.level.threshold": "2,2"})) == ["0", "1"]
    assert _names(select(t, entries, "minor", settings={"carbon.numberof.preserve.segments": "1",
                                                          "carbon.compaction.level.threshold": "3,0"})) == [
        "0", "1", "2"]
    t = _table(tmp_path / "b", compaction_level_threshold="4,3")
    assert _names(select(t, entries, "minor", settings={"carbon.compaction.level.threshold": "2,2"})) == [
        "0", "1", "2", "3"]  # the table property wins
    with pytest.raises(CarbonOptionError, match="setting carbon.major.compaction.size is '-1'"):
        select(t, entries, "major", settings={"carbon.major.compaction.size": "-1"})
