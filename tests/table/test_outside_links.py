"""Nothing outside a table is deleted, moved or read as part of it: symbolic links in a table's folders lead
out of it, and CLEAN FILES, trash expiry, compaction and DROP remove a link as a link, never its target."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import carbon_ds.api as api
from carbon_ds.errors import CarbonTableError
from carbon_ds.table import CarbonTable
from carbon_ds.table.ops.segments import manage

DAY = manage.DAY_MS


def _outside(tmp_path: Path) -> Path:
    """A folder outside the table holding files a careless sweep would take (names like a segment's)."""
    out = tmp_path / "outside"
    (out / "sub").mkdir(parents=True)
    (out / "keep.txt").write_bytes(b"not the table's")
    (out / "part-0-0_batchno0-0-0-1.carbondata").write_bytes(b"also not the table's")
    (out / "sub" / "deep.bin").write_bytes(os.urandom(64))
    return out


def _digests(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and its SHA-256: the oracle that nothing there changed."""
    out = {}
    for d, _dirs, files in os.walk(folder):
        for f in files:
            p = Path(d) / f
            out[str(p.relative_to(folder))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _table(tmp_path: Path, n: int = 3, rows: int = 5) -> CarbonTable:
    path = tmp_path / "t"
    for i in range(n):
        api.write_table(pa.table({"a": pa.array(range(i * rows, (i + 1) * rows), pa.int64())}), path)
    return CarbonTable.open(path)


def _seg(t: CarbonTable, seg: str) -> Path:
    return Path(t.path) / "Fact" / "Part0" / f"Segment_{seg}"


def _plant(t: CarbonTable, seg: str, out: Path) -> None:
    """A folder link and a file link inside a segment folder, both pointing out of the table."""
    (_seg(t, seg) / "linked_dir").symlink_to(out, target_is_directory=True)
    (_seg(t, seg) / "linked_file.carbondata").symlink_to(out / "keep.txt")


def _sum(t: CarbonTable) -> tuple[int, int]:
    a = api.read_table(t.path).column("a")
    return len(a), pc.sum(a).as_py()


def test_clean_files_force_removes_links_never_their_targets(tmp_path):
    out = _outside(tmp_path)
    before = _digests(out)
    t = _table(tmp_path)
    _plant(t, "0", out)
    t.delete_segments(["0"])
    r = t.clean_files(force=True)
    assert r.deleted == ["0"]
    assert _digests(out) == before
    assert not _seg(t, "0").exists() and not os.path.lexists(_seg(t, "0") / "linked_dir")
    assert sorted(x.split(" -> ")[0] for x in r.links) == ["Fact/Part0/Segment_0/linked_dir",
                                                          "Fact/Part0/Segment_0/linked_file.carbondata"]
    assert _sum(t) == (10, sum(range(5, 15)))


def test_clean_files_trash_then_expiry_keeps_outside_files(tmp_path):
    out = _outside(tmp_path)
    before = _digests(out)
    t = _table(tmp_path)
    _plant(t, "1", out)
    t.delete_segments(["1"])
    now = 1_700_000_000_000
    r = manage.clean_files(t, now_ms=now)
    assert r.trashed == ["1"]
    assert _digests(out) == before
    run = Path(t.path) / ".Trash" / str(now) / "Segment_1"
    assert (run / "linked_dir").is_symlink() and (run / "linked_file.carbondata").is_symlink()
    # within the retention nothing expires; after it the trash run goes, the outside files stay
    assert manage.clean_files(t, now_ms=now + 6 * DAY).expired_trash == []
    assert manage.clean_files(t, now_ms=now + 8 * DAY).expired_trash == [str(now)]
    assert not run.exists()
    assert _digests(out) == before
    assert _sum(t) == (10, sum(range(0, 5)) + sum(range(10, 15)))


def test_segment_folder_that_is_a_link_is_removed_as_a_link(tmp_path):
    out = _outside(tmp_path)
    t = _table(tmp_path, n=2)
    seg = _seg(t, "0")
    moved = tmp_path / "moved_segment"
    seg.rename(moved)
    seg.symlink_to(moved, target_is_directory=True)
    before, seg_files = _digests(out), _digests(moved)
    t.delete_segments(["0"])
    r = t.clean_files(force=True)
    assert not os.path.lexists(seg)
    assert _digests(moved) == seg_files and _digests(out) == before
    assert r.links and r.links[0].startswith("Fact/Part0/Segment_0 -> ")
    assert _sum(t) == (5, sum(range(5, 10)))


def test_trash_folder_linked_out_of_the_table(tmp_path):
    out = _outside(tmp_path)
    (out / "123").mkdir()
    (out / "123" / "old.bin").write_bytes(b"old")
    before = _digests(out)
    t = _table(tmp_path)
    (Path(t.path) / ".Trash").symlink_to(out, target_is_directory=True)
    t.delete_segments(["0"])
    with pytest.raises(CarbonTableError, match=r"trash folder .*\.Trash is a symbolic link to .*outside"):
        t.clean_files()
    assert _digests(out) == before and _seg(t, "0").exists()  # refused before touching anything
    # force deletes the segment directly; the expiry of a linked trash removes only the link
    r = manage.clean_files(t, force=True, now_ms=10**13)
    assert r.deleted == ["0"] and _digests(out) == before
    assert not os.path.lexists(Path(t.path) / ".Trash")


def test_compaction_leaves_outside_files(tmp_path):
    out = _outside(tmp_path)
    before = _digests(out)
    t = _table(tmp_path, n=4)
    _plant(t, "0", out)
    _plant(t, "2", out)
    expected = _sum(t)
    t.compact("major")
    assert _sum(t) == expected  # the links are not read as data
    now = 1_700_000_000_000
    manage.clean_files(t, now_ms=now)
    assert _digests(out) == before
    manage.clean_files(t, now_ms=now + 8 * DAY)
    t.clean_files(force=True)
    assert _digests(out) == before
    assert _sum(t) == expected


def test_drop_table_files_removes_links_only(tmp_path):
    out = _outside(tmp_path)
    before = _digests(out)
    t = _table(tmp_path, n=2)
    _plant(t, "1", out)
    (Path(t.path) / "Fact" / "Part0" / "Segment_0" / "sub_link").symlink_to(out / "sub", target_is_directory=True)
    manage.drop_table_files(t)
    assert not Path(t.path).exists()
    assert _digests(out) == before


def test_partition_folder_links_are_not_swept(tmp_path):
    out = _outside(tmp_path)
    path = tmp_path / "t"
    data = pa.table({"a": pa.array([1, 2, 3], pa.int64()), "d": pa.array([1, 1, 2], pa.int32())})
    api.write_table(data, path, partition_by=["d"])
    api.write_table(data, path)
    t = CarbonTable.open(path)
    # a whole partition folder that is a link, and a link inside a real partition folder
    (path / "d=9").symlink_to(out, target_is_directory=True)
    (path / "d=1" / "elsewhere").symlink_to(out / "sub", target_is_directory=True)
    before = _digests(out)
    t.delete_segments(["0"])
    t.clean_files()
    assert _digests(out) == before
    t.clean_files(force=True)
    assert _digests(out) == before
    assert sorted(api.read_table(path).column("a").to_pylist()) == [1, 2, 3]
