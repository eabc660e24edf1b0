"""ADD SEGMENT resolves symbolic links before it decides a folder lies outside the table: a link to the
table or to one of its segment folders (directly, or anywhere under the added folder) is refused, and a
file reached twice through links is registered once."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import carbon_ds.api as api
from carbon_ds.errors import CarbonTableError
from carbon_ds.table.table import CarbonTable

SCHEMA = pa.schema([("id", pa.int64())])


def _table(tmp_path: Path) -> CarbonTable:
    api.write_table(pa.table({"id": pa.array(range(5), pa.int64())}, schema=SCHEMA), tmp_path / "t")
    return CarbonTable.open(tmp_path / "t")


def _rows(t: CarbonTable) -> list[int]:
    return sorted(api.read_table(t.path).column("id").to_pylist())


def _segment_dir(t: CarbonTable) -> Path:
    return Path(t.path) / "Fact" / "Part0" / "Segment_0"


def _link(at: Path, to: Path) -> Path:
    at.parent.mkdir(parents=True, exist_ok=True)
    at.symlink_to(to, target_is_directory=to.is_dir())
    return at


@pytest.mark.parametrize("target", ["root", "segment"])
def test_link_to_the_table_is_refused(tmp_path, target):
    t = _table(tmp_path)
    to = Path(t.path) if target == "root" else _segment_dir(t)
    link = _link(tmp_path / "elsewhere" / "alias", to)
    with pytest.raises(CarbonTableError, match=rf"{link} \(a symbolic link to {to}\) lies inside table"):
        t.add_segment(str(link), format="carbondata")
    assert _rows(t) == list(range(5))
    assert [s.id for s in t.segments()] == ["0"]


@pytest.mark.parametrize("depth", [1, 3])
def test_outside_folder_holding_a_link_to_the_table_is_refused(tmp_path, depth):
    t = _table(tmp_path)
    outer = tmp_path / "outer"
    pq.write_table(pa.table({"id": pa.array([100], pa.int64())}), _mk(outer) / "own.parquet")
    deep = outer.joinpath(*[f"d{i}" for i in range(depth - 1)])
    link = _link(deep / "in_table", _segment_dir(t))
    with pytest.raises(CarbonTableError, match=rf"{link} under {outer} is a symbolic link to {_segment_dir(t)}, "
                                               r"which lies inside table"):
        t.add_segment(str(outer), format="carbondata")
    assert _rows(t) == list(range(5))


def test_link_chain_reaching_the_table_root_is_refused(tmp_path):
    t = _table(tmp_path)
    hop = _mk(tmp_path / "hop")
    _link(hop / "back", Path(t.path))
    outer = _mk(tmp_path / "outer")
    _link(outer / "via", hop)
    with pytest.raises(CarbonTableError, match=r"is a symbolic link to .*/t, which lies inside table"):
        t.add_segment(str(outer), format="carbondata")
    assert _rows(t) == list(range(5))


def test_files_reached_through_links_are_registered_once(tmp_path):
    t = _table(tmp_path)
    other = _mk(tmp_path / "other")
    pq.write_table(pa.table({"id": pa.array([20, 21], pa.int64())}), other / "b.parquet")
    data = _mk(tmp_path / "data")
    pq.write_table(pa.table({"id": pa.array([10], pa.int64())}), data / "a.parquet")
    _link(data / "dup", other)  # folder link: b.parquet once through here
    _link(data / "b_again.parquet", other / "b.parquet")  # and once more as a file link
    t.add_segment(str(data), format="parquet")
    # the oracle: each real file read once by pyarrow
    expected = (pq.read_table(data / "a.parquet").column("id").to_pylist() +
        pq.read_table(other / "b.parquet").column("id").to_pylist())
    assert _rows(t) == sorted(list(range(5)) + expected)
    # the same folder again under another name is the same segment path
    alias = _link(tmp_path / "alias", data)
    with pytest.raises(CarbonTableError, match="can not add same segment path repeatedly"):
        t.add_segment(str(alias), format="parquet")
    assert _rows(t) == sorted(list(range(5)) + expected)


def _mk(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p
