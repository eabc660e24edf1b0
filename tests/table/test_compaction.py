"""Compaction (MINOR, MAJOR, CUSTOM, automatic): selection, tablestatus, merged data against a pyarrow oracle,
deleted rows gone from the files, sort order of merged files, mixed-format tables, locks and crashes."""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import carbon_ds
from carbon_ds import faults
from carbon_ds.cli.main import main as cli
from carbon_ds.ddl import statement_parser as p
from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.readers.carbon_file import CarbonDataFile
from carbon_ds.table.meta.locks import TableLock
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.ops.compaction import compact
from carbon_ds.table.ops.compaction import tasks as compaction_tasks
from carbon_ds.table.table import CarbonTable

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("day", pa.int32()), ("v", pa.float64())])


class Crash(BaseException):
    pass


def _batch(i: int, n: int = 300) -> pa.Table:
    rng = np.random.default_rng(i)
    ids = np.arange(i * n, (i + 1) * n, dtype=np.int64)
    rng.shuffle(ids)
    names = [None if x % 13 == 0 else f"n{(x * 7) % 41:02d}" for x in ids]
    return pa.table({"id": ids, "name": pa.array(names, pa.string()), "day": pa.array(ids % 3, pa.int32()),
                     "v": ids * 0.25}, schema=SCHEMA)


def _table(tmp_path: Path, loads: int, name: str = "t", **kw) -> tuple[CarbonTable, list[pa.Table]]:
    t = CarbonTable.create(str(tmp_path / name), SCHEMA, **kw)
    data = []
    for i in range(loads):
        b = _batch(i)
        with t.load() as load:
            load.write([b])
        data.append(b)
    return t, data


def _rows(t: CarbonTable) -> pa.Table:
    return t.to_arrow().sort_by([("id", "ascending")])


def _status(t: CarbonTable) -> dict[str, tuple[str, str | None]]:
    return {e.name: (e.status, e.merged_load_name) for e in t.load_details()}


def _sorted_by(data: pa.Table, keys: list[str]) -> bool:
    """The oracle: pyarrow's own sort (nulls first) leaves the rows as they are."""
    order = pc.sort_indices(data, sort_keys=[(k, "ascending", "at_start") for k in keys])
    again = data.take(order)
    return all(again.column(k).equals(data.column(k)) for k in keys)


def _file_rows(path: str) -> pa.Table:
    with CarbonDataFile(path) as f:
        return f.read()


def _digest(folder: Path) -> dict[str, str]:
    return {str(q.relative_to(folder)): hashlib.sha256(q.read_bytes()).hexdigest()
            for q in sorted(folder.rglob("*")) if q.is_file()}


# ------------------------------------------------------------------------------------------ MINOR
def test_minor_merges_by_count_levels_with_exact_tablestatus(tmp_path):
    t, data = _table(tmp_path, 13, sort_columns=["name", "id"])
    oracle = pa.concat_tables(data).sort_by("id")
    merged = t.compact("minor")
    assert [(m.segment, m.sources) for m in merged] == [
        ("0.1", ["0", "1", "2", "3"]), ("4.1", ["4", "5", "6", "7"]), ("8.1", ["8", "9", "10", "11"]),
        ("0.2", ["0.1", "4.1", "8.1"])]
    st = _status(t)
    assert {k: v for k, v in st.items() if "." not in k} == {
        **{str(i): (ts.COMPACTED, "0.1") for i in range(4)}, **{str(i): (ts.COMPACTED, "4.1") for i in range(4, 8)},
        **{str(i): (ts.COMPACTED, "8.1") for i in range(8, 12)}, "12": (ts.SUCCESS, None)}
    assert st["0.1"] == st["4.1"] == st["8.1"] == (ts.COMPACTED, "0.2")
    assert st["0.2"] == (ts.SUCCESS, None)
    assert _rows(t).equals(oracle)
    merged_files = [f.path for f in t.files() if f.segment_id == "0.2"]
    assert merged_files
    for path in merged_files:
        assert _sorted_by(_file_rows(path), ["name", "id"])
    assert t.compact("minor") == []  # nothing left at any level
    with t.load() as load:  # ids are never reused
        load.write([_batch(99)])
    assert t.load_details()[-1].name == "13"
    rows = [r for r in t.segment_rows() if r["ID"] in ("0.2", "0.1", "0")]
    assert [(r["ID"], r["Status"]) for r in rows] == [("0.2", "Success"), ("0.1", "Compacted"), ("0", "Compacted")]


def test_preserve_segments_and_thresholds_from_table_properties(tmp_path):
    t, _ = _table(tmp_path, 5, properties={"compaction_preserve_segments": "2", "compaction_level_threshold": "3,2"})
    merged = t.compact("minor")
    assert [(m.segment, m.sources) for m in merged] == [("0.1", ["0", "1", "2"])]
    t2, _ = _table(tmp_path, 5, name="t2", properties={"compaction_preserve_segments": "2"})
    assert t2.compact("minor") == []  # 3 candidates < 4
    t3, _ = _table(tmp_path, 2, name="t3", properties={"compaction_level_threshold": "4,x"})
    with pytest.raises(CarbonOptionError, match="compaction_level_threshold"):
        t3.compact("minor")


# ------------------------------------------------------------------------------------------ MAJOR / deltas
def test_major_drops_deleted_rows_from_files_and_keeps_updated_values(tmp_path):
    t, data = _table(tmp_path, 5, sort_columns=["id"])
    oracle = pa.concat_tables(data)
    t.delete("id < 100 OR (id >= 700 AND id < 750)")
    t.update({"v": -1.0}, "id = 1000")
    ids = oracle.column("id").to_numpy()
    keep = ~((ids < 100) | ((ids >= 700) & (ids < 750)))
    oracle = oracle.filter(pa.array(keep))
    oracle = oracle.set_column(3, "v", pc.if_else(pc.equal(oracle.column("id"), 1000), -1.0, oracle.column("v")))
    oracle = oracle.sort_by("id")
    assert _rows(t).equals(oracle)
    merged = t.compact("major")
    assert [(m.segment, m.sources, m.rows) for m in merged] == [("0.1", ["0", "1", "2", "3", "4", "5"],
                                                                 oracle.num_rows)]
    assert t.load_details()[-1].major_compacted == "true"
    assert _rows(t).equals(oracle)
    files = [f.path for f in t.files()]
    on_disk = pa.concat_tables([_file_rows(f) for f in files])
    assert on_disk.num_rows == oracle.num_rows  # deleted and superseded rows are gone from the files
    assert pc.sum(pc.less(on_disk.column("id"), 100)).as_py() in (0, None)
    assert on_disk.filter(pc.equal(on_disk.column("id"), 1000)).column("v").to_pylist() == [-1.0]
    assert all(_sorted_by(_file_rows(f), ["id"]) for f in files)
    assert t.compact("minor") == []  # a major result is not taken by MINOR


def test_merge_tasks_carry_their_files_deletes(tmp_path, monkeypatch):
    """A merge task reads its files' deletes from its planned pieces (as every read of the one read loop,
    table.read.task_reader): it reads no update status or delete delta itself, yet drops the deleted rows;
    the oracle is the rows written less the deleted ones, computed with pyarrow."""
    t, data = _table(tmp_path, 3, sort_columns=["id"])
    t.delete("id % 7 = 0")
    written = pa.concat_tables(data)
    oracle = written.filter(pa.array(written.column("id").to_numpy() % 7 != 0))
    planned = []

    def runner(tasks):
        planned.extend(tasks)
        with monkeypatch.context() as m:
            def refuse(*_a, **_k):
                raise AssertionError("a merge task looked deletes up")
            m.setattr(compaction_tasks.D, "read_status", refuse)
            m.setattr(compaction_tasks.D, "Deletes", refuse)
            return [compaction_tasks.run_task(task, t) for task in tasks]

    merged = t.compact("major", runner=runner)
    assert [m.rows for m in merged] == [oracle.num_rows] and oracle.num_rows < 900
    assert any(p.deletes is not None and p.deletes.count for task in planned for p in task.pieces)
    assert _rows(t).equals(oracle.sort_by("id"))


def test_major_respects_size_limit(tmp_path):
    t, _ = _table(tmp_path, 3, properties={"major_compaction_size": "0"})
    assert t.compact("major") == []


# ------------------------------------------------------------------------------------------ CUSTOM
def test_custom_merges_the_given_ids_and_refuses_bad_ones(tmp_path):
    t, data = _table(tmp_path, 4)
    before = t.load_details()
    with pytest.raises(CarbonTableError, match="segment 7 \\(does not exist\\)"):
        t.compact("custom", [1, 7])
    assert t.load_details() == before
    with pytest.raises(CarbonOptionError, match="only for kind='custom'"):
        t.compact("minor", [1])
    merged = t.compact("custom", "3,1")
    assert [(m.segment, m.sources) for m in merged] == [("1.1", ["1", "3"])]
    assert _status(t) == {"0": (ts.SUCCESS, None), "1": (ts.COMPACTED, "1.1"), "2": (ts.SUCCESS, None),
                          "3": (ts.COMPACTED, "1.1"), "1.1": (ts.SUCCESS, None)}
    assert _rows(t).equals(pa.concat_tables(data).sort_by("id"))
    with pytest.raises(CarbonTableError, match="1 \\(not valid: Compacted\\)"):
        t.compact("custom", [1, 2])


# ------------------------------------------------------------------------------------------ partitions
def test_partitioned_table_is_compacted_partition_by_partition(tmp_path):
    t, data = _table(tmp_path, 4, partition_by=["day"], sort_columns=["name"])
    merged = t.compact("minor")
    assert [m.segment for m in merged] == ["0.1"]
    assert _rows(t).equals(pa.concat_tables(data).sort_by("id"))
    files = [f.path for f in t.files()]
    folders = sorted(Path(f).parent.name for f in files)
    assert folders == ["day=0", "day=1", "day=2"]  # one merged file per partition folder
    for f in files:
        rows = _file_rows(f)
        assert _sorted_by(rows, ["name"])
        day = int(Path(f).parent.name.split("=")[1])
        assert set(rows.column("day").to_pylist()) == {day}
    assert sorted(t.show_partitions()) == ["day=0", "day=1", "day=2"]
    t.clean_files(force=True)
    assert _rows(t).equals(pa.concat_tables(data).sort_by("id"))
    assert len(list(tmp_path.glob("t/day=*/*.carbondata"))) == 3


# ------------------------------------------------------------------------------------------ mixed formats
def test_mixed_format_table_merges_carbondata_only_and_keeps_external_folders(tmp_path):
    t, data = _table(tmp_path, 2)
    pq_dir = tmp_path / "ext_pq"
    pq_dir.mkdir()
    extra = _batch(50)
    pq.write_table(extra, pq_dir / "a.parquet")
    assert t.add_segment(str(pq_dir), format="parquet") == ["2"]
    with t.load() as load:
        load.write([_batch(3)])
    before = _digest(pq_dir)
    merged = t.compact("major")
    assert [(m.segment, m.sources) for m in merged] == [("0.1", ["0", "1", "3"])]
    assert _status(t)["2"] == (ts.SUCCESS, None)
    assert _rows(t).equals(pa.concat_tables([*data, extra, _batch(3)]).sort_by("id"))
    with pytest.raises(CarbonTableError, match="format parquet"):
        t.compact("custom", [2])
    t.clean_files(force=True)
    assert _digest(pq_dir) == before
    assert _rows(t).equals(pa.concat_tables([*data, extra, _batch(3)]).sort_by("id"))


def test_external_carbondata_segment_is_merged_but_its_folder_kept(tmp_path):
    src = tmp_path / "src"
    carbon_ds.write_table(_batch(7), str(src))
    ext = src / "Fact" / "Part0" / "Segment_0"
    t, data = _table(tmp_path, 2)
    try:
        added = t.add_segment(str(ext), format="carbondata")
    except CarbonTableError as e:  # pragma: no cover - depends on ADD SEGMENT's carbondata support
        pytest.skip(f"ADD SEGMENT of a carbondata folder: {e}")
    before = _digest(ext)
    merged = t.compact("major")
    assert merged[0].sources == ["0", "1", *added]
    assert _rows(t).equals(pa.concat_tables([*data, _batch(7)]).sort_by("id"))
    t.clean_files(force=True)
    assert _digest(ext) == before
    assert _rows(t).equals(pa.concat_tables([*data, _batch(7)]).sort_by("id"))


# ------------------------------------------------------------------------------------------ clean files
def test_clean_files_removes_compacted_data_after_retention(tmp_path):
    t, data = _table(tmp_path, 4)
    t.compact("minor")
    t.clean_files()
    assert not (tmp_path / "t" / "Fact" / "Part0" / "Segment_0").exists()
    assert (tmp_path / "t" / ".Trash").exists()  # kept for the retention period
    assert _rows(t).equals(pa.concat_tables(data).sort_by("id"))
    t.clean_files(force=True)
    assert not (tmp_path / "t" / ".Trash").exists()
    assert [e.name for e in t.load_details() if e.visibility != "false"] == ["0.1"]


# ------------------------------------------------------------------------------------------ locks, concurrency
def test_second_compaction_is_refused_naming_the_holder(tmp_path):
    t, _ = _table(tmp_path, 4)
    with TableLock(t.storage, t.path, compact.COMPACTION_LOCK, operation="MAJOR COMPACTION"):
        with pytest.raises(CarbonTableError, match="another compaction \\(MAJOR COMPACTION \\(host"):
            t.compact("minor")


def test_append_during_compaction_keeps_its_rows_and_delete_fails_clearly(tmp_path):
    t, data = _table(tmp_path, 4)
    seen: list[str] = []

    def hook(name: str) -> None:
        if name == "compaction.written" and not seen:
            seen.append(name)
            with CarbonTable.open(t.path).load() as load:
                load.write([_batch(20)])
            with pytest.raises(CarbonTableError, match="MINOR COMPACTION"):
                CarbonTable.open(t.path).delete("id = 5")

    with faults.inject(hook):
        merged = t.compact("minor")
    assert seen and [m.segment for m in merged] == ["0.1"]
    assert _status(t)["4"] == (ts.SUCCESS, None)
    assert _rows(t).equals(pa.concat_tables([*data, _batch(20)]).sort_by("id"))


@pytest.mark.parametrize("point", ["compaction.reserved", "compaction.written", "compaction.before_status",
                                   "load.segment_file", "load.index_moved", "load.before_status"])
@pytest.mark.parametrize("partitioned", [False, True])
def test_crash_at_each_step_keeps_every_committed_row(tmp_path, point, partitioned):
    kw = {"partition_by": ["day"]} if partitioned else {}
    t, data = _table(tmp_path, 4, sort_columns=["id"], **kw)
    t.delete("id < 10")
    oracle = _rows(t)

    def hook(name: str) -> None:
        if name == point:
            raise Crash(name)

    with faults.inject(hook):
        try:
            t.compact("minor")
        except Crash:
            pass
    assert _rows(t).equals(oracle)
    st = _status(t)
    if point.startswith("load.") and not partitioned:
        assert st["0.1"] == (ts.SUCCESS, None)  # plain loads have no such step: the compaction ran
    else:
        assert all(st[str(i)] == (ts.SUCCESS, None) for i in range(4))
        assert st.get("0.1", (ts.FAILURE,))[0] in (ts.FAILURE, ts.IN_PROGRESS)
        merged = t.compact("minor")  # a later run merges again, under the same name
        assert [(m.segment, m.sources) for m in merged] == [("0.1", ["0", "1", "2", "3"])]
    assert _rows(t).equals(oracle)
    t.clean_files(force=True)
    assert _rows(t).equals(oracle)
    assert [e.status for e in t.load_details() if e.visibility != "false"] == [ts.SUCCESS]


# ------------------------------------------------------------------------------------------ entry points
def test_auto_load_merge_compacts_after_a_load(tmp_path):
    t, data = _table(tmp_path, 4, properties={"auto_load_merge": "true"})
    assert _status(t)["0.1"] == (ts.SUCCESS, None)
    carbon_ds.write_table(_batch(9), t.path)
    assert _rows(t).equals(pa.concat_tables([*data, _batch(9)]).sort_by("id"))
    off, _ = _table(tmp_path, 4, name="off")
    assert "0.1" not in _status(off)


def test_cli_compact(tmp_path, capsys):
    t, data = _table(tmp_path, 3)
    assert cli(["compact", t.path, "--kind", "custom", "--segments", "0,2"]) == 0
    assert "0.1: merged segments 0, 2" in capsys.readouterr().out
    assert cli(["compact", t.path, "--kind", "minor"]) == 0
    assert "nothing to compact" in capsys.readouterr().out
    assert _rows(t).equals(pa.concat_tables(data).sort_by("id"))


@pytest.mark.parametrize("text, kind, ids", [
    ("ALTER TABLE db.t COMPACT 'MINOR'", "minor", None),
    ("alter table t compact \"major\"", "major", None),
    ("ALTER TABLE t COMPACT 'CUSTOM' WHERE SEGMENT.ID IN (1, 2, 5)", "custom", ["1", "2", "5"]),
    ("ALTER TABLE t COMPACT 'CUSTOM' WHERE SEGMENT.ID IN (1) OPTIONS ('include_external' = 'TRUE')", "custom", ["1"]),
])
def test_parse_compact(text, kind, ids):
    stmt = p.parse(text)
    assert isinstance(stmt, p.Compact) and stmt.kind == kind and stmt.segments == ids
    assert stmt.include_external == ("include_external" in text)


@pytest.mark.parametrize("text", ["ALTER TABLE t COMPACT 'CUSTOM'", "ALTER TABLE t COMPACT 'MINOR' WHERE SEGMENT.ID "
                                  "IN (1)", "ALTER TABLE t COMPACT 'SEGMENT_INDEX'", "ALTER TABLE t COMPACT MINOR",
                                  "ALTER TABLE t COMPACT 'MAJOR' OPTIONS('include_external'='true')"])
def test_parse_compact_refuses_malformed(text):
    with pytest.raises(CarbonOptionError, match="COMPACT"):
        p.parse(text)


def test_hard_crash_leftover_is_invisible_and_redone(tmp_path, monkeypatch):
    """A process that dies leaves no abort behind: the merged segment stays "In Progress" with its files."""
    t, data = _table(tmp_path, 4, sort_columns=["id"])
    monkeypatch.setattr("carbon_ds.table.loads.load_base.Load.abort", lambda self: None)

    def hook(name: str) -> None:
        if name == "compaction.before_status":
            raise Crash(name)

    with faults.inject(hook), pytest.raises(Crash):
        t.compact("minor")
    assert _status(t)["0.1"] == (ts.IN_PROGRESS, None)
    assert (tmp_path / "t" / "Fact" / "Part0" / "Segment_0.1").exists()
    assert _rows(t).equals(pa.concat_tables(data).sort_by("id"))
    monkeypatch.undo()
    assert [m.segment for m in t.compact("minor")] == ["0.1"]
    assert _rows(t).equals(pa.concat_tables(data).sort_by("id"))
    assert len(list((tmp_path / "t" / "Fact" / "Part0" / "Segment_0.1").glob("*.carbondata"))) == 1


def test_delete_and_update_after_compaction_touch_the_merged_segment(tmp_path):
    t, data = _table(tmp_path, 4, sort_columns=["id"])
    t.compact("minor")
    assert t.delete("id >= 10 AND id < 20") == 10
    assert t.update({"v": 9.5}, "id = 50") == 1
    oracle = pa.concat_tables(data).sort_by("id")
    ids = oracle.column("id").to_numpy()
    oracle = oracle.filter(pa.array((ids < 10) | (ids >= 20)))
    oracle = oracle.set_column(3, "v", pc.if_else(pc.equal(oracle.column("id"), 50), 9.5, oracle.column("v")))
    assert _rows(t).equals(oracle)
    assert [m.segment for m in t.compact("custom", ["0.1", "4"])] == ["0.2"]
    assert _rows(t).equals(oracle)


def test_failed_automatic_compaction_keeps_the_committed_load(tmp_path):
    t, data = _table(tmp_path, 3, properties={"auto_load_merge": "true"})
    # another compaction running: the load commits, and its merge is left to a later load (no failure)
    with TableLock(t.storage, t.path, compact.COMPACTION_LOCK, operation="MAJOR COMPACTION"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with t.load() as load:
                load.write([_batch(3)])
    assert "0.1" not in _status(t)
    # a merge that fails is reported as a warning, and the load stays committed

    def disk_full(name):
        if name == "compaction.written":
            raise OSError("disk full")

    with pytest.warns(UserWarning, match="automatic compaction"), faults.inject(disk_full):
        with t.load() as load:
            load.write([_batch(4)])
    assert "0.1" not in _status(t) or _status(t)["0.1"][0] != ts.SUCCESS
    data.append(_batch(3))
    assert _rows(t).equals(pa.concat_tables([*data, _batch(4)]).sort_by("id"))


# ------------------------------------------------------------------------------------------ unsorted runs
def _descending(i: int, n: int = 250_000) -> pa.Table:
    ids = np.arange((i + 1) * n, i * n, -1, dtype=np.int64)  # every blocklet below the one before it
    v = np.random.default_rng(i).random(n)  # incompressible: several 1 MB blocklets per file
    return pa.table({"id": ids, "name": pa.array(["x"] * n), "day": pa.array(ids % 3, pa.int32()), "v": v},
                    schema=SCHEMA)


@pytest.mark.parametrize("how", ["no_sort", "claims_sorted"])
def test_files_not_in_sort_order_are_merged_whole(tmp_path, monkeypatch, how):
    """A NO_SORT load (footer is_sort false) is read whole; a file whose footer says sorted although its
    blocklets are not (written by hand here) is found at a blocklet boundary and merged again whole."""
    t = CarbonTable.create(str(tmp_path / "t"), SCHEMA, sort_columns=["id"], properties={"table_blocklet_size": "1"})
    data = [_descending(i) for i in range(3)]
    for b in data:
        load = t.load(sort_scope="no_sort") if how == "no_sort" else t.load()
        load.presorted = how == "claims_sorted"  # the writer takes the rows as they come
        with load:
            load.write([b])
    f = t.files()[0]
    with CarbonDataFile(f.path) as cf:
        assert cf.num_blocklets > 1 and bool(cf.footer.is_sort) == (how == "claims_sorted")
    retried: list[str] = []
    run = compaction_tasks.file_run

    def spy(table, piece, keys, chunk, whole=False):
        if whole:
            retried.append(piece.path)
        return run(table, piece, keys, chunk, whole)

    monkeypatch.setattr(compaction_tasks, "file_run", spy)
    merged = t.compact("major")
    assert bool(retried) == (how == "claims_sorted")  # only a false claim costs a second pass
    assert [m.rows for m in merged] == [3 * 250_000]
    assert _rows(t).equals(pa.concat_tables(data).sort_by("id"))
    for f in t.files():
        assert _sorted_by(_file_rows(f.path), ["id"])
