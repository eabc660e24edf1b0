"""A commit writes the entries it did not change as the bytes of the file it read (meta.status.status_doc
``EntryList.data``): the file must still be exactly what a full rewrite gives (``json.dumps`` of every entry,
``tablestatus.dumps``), also when the kept bytes could be stale: after another process's commit, after CLEAN
FILES moved entries to ``tablestatus.history``, after compaction, delete and overwrite. The oracle is the
standard library's JSON parser and writer over the file as it is on disk."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pyarrow as pa
import pytest

import carbon_ds
from carbon_ds.fs import joined
from carbon_ds.table import CarbonTable
from carbon_ds.table.meta.status import status_doc
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.status_doc import EntryList
from carbon_ds.table.meta.status.tablestatus import LoadDetail


def _status(path) -> str:
    return (path / "Metadata" / "tablestatus").read_text(encoding="utf-8")


def _canonical(text: str) -> str:
    """The file a full rewrite of its entries writes: compact JSON, every entry's keys as they are."""
    return json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)


def _check(path, names: list[str] | None = None) -> list[dict]:
    text = _status(path)
    assert text == _canonical(text)
    assert text == ts.dumps(ts.parse(text))
    rows = json.loads(text)
    if names is not None:
        assert [r["loadName"] for r in rows] == names
    return rows


def test_spliced_bytes_equal_a_full_rewrite():
    """Random edits of random files, compact or not, ASCII or not: ``data`` equals the join of every text."""
    rng = random.Random(4848)
    for _round in range(200):
        n = rng.randint(0, 15)
        raw = [{"timestamp": str(1_700_000_000_000 + i), "loadStatus": ts.SUCCESS, "loadName": str(i),
                "visibility": "true", **({"extraInfo": "é"} if rng.random() < 0.1 else {})} for i in range(n)]
        layout = rng.choice([{"separators": (",", ":")}, {"separators": (",", ":"), "ensure_ascii": False},
                             {"indent": 1}])
        data = json.dumps(raw, **layout).encode()
        edited = EntryList(status_doc.parse_doc(data, "t", None))
        for _commit in range(rng.randint(1, 3)):
            for _step in range(rng.randint(1, 4)):
                op = rng.choice(["append", "flip_last", "flip_any", "read"])
                if op == "append":
                    edited.append(LoadDetail(name=ts.next_segment_id(edited), status=ts.IN_PROGRESS,
                                             visibility="true"))
                elif op == "flip_last" and len(edited):
                    edited[-1].status = ts.SUCCESS
                    edited[-1].segment_file = f"{edited[-1].name}_1.segment"
                elif op == "flip_any" and len(edited):
                    edited[rng.randrange(len(edited))].status = ts.MARKED_FOR_DELETE
                elif op == "read" and len(edited):
                    assert edited[rng.randrange(len(edited))].name  # touched, unchanged
            texts = edited.texts()
            content = edited.data(texts)  # bytes, or parts: views of the bytes read, then the rest
            got = joined(content)
            assert got == status_doc.text_of(texts).encode("utf-8")
            assert json.loads(got) == [e.to_json() for e in edited]
            edited.written(content, texts)  # the next commit of the same edit splices from this one


def test_appends_keep_the_file_a_full_rewrite_would_write(tmp_path):
    path = tmp_path / "t"
    for i in range(5):
        carbon_ds.write_table(pa.table({"a": [i]}), path)
        rows = _check(path, [str(k) for k in range(i + 1)])
        assert {r["loadStatus"] for r in rows} == {ts.SUCCESS}


def test_a_commit_after_another_process_commit(tmp_path):
    """This process keeps the bytes it last wrote; another process appends a segment (and leaves unknown
    keys in it); this process's next commit must carry the other's entry, not its own stale bytes."""
    path = tmp_path / "t"
    for i in range(3):
        carbon_ds.write_table(pa.table({"a": [i]}), path)
    code = ("import sys, pyarrow as pa, carbon_ds\n"
            "carbon_ds.write_table(pa.table({'a': [10]}), sys.argv[1])\n")
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
    theirs = _check(path, ["0", "1", "2", "3"])[-1]
    carbon_ds.write_table(pa.table({"a": [4]}), path)
    rows = _check(path, ["0", "1", "2", "3", "4"])
    assert rows[3] == theirs
    assert sorted(carbon_ds.read_table(path).column("a").to_pylist()) == [0, 1, 2, 4, 10]


def test_a_commit_after_a_foreign_rewrite_of_the_same_size(tmp_path):
    """Another writer flips an early entry's status to one of the same length: the file's size stays, only
    its bytes differ; the next commit keeps the flip."""
    path = tmp_path / "t"
    for i in range(3):
        carbon_ds.write_table(pa.table({"a": [i]}), path)
    status = path / "Metadata" / "tablestatus"
    text = status.read_text()
    rows = json.loads(text)
    rows[0]["loadStatus"] = "Failure"  # "Success" -> "Failure": seven letters each
    changed = json.dumps(rows, separators=(",", ":"))
    assert len(changed) == len(text)
    status.write_text(changed)
    carbon_ds.write_table(pa.table({"a": [3]}), path)
    got = _check(path, ["0", "1", "2", "3"])
    assert [r["loadStatus"] for r in got] == [ts.FAILURE, ts.SUCCESS, ts.SUCCESS, ts.SUCCESS]
    assert sorted(carbon_ds.read_table(path).column("a").to_pylist()) == [1, 2, 3]


def test_commits_after_delete_compaction_and_clean_files(tmp_path):
    path = tmp_path / "t"
    for i in range(6):
        carbon_ds.write_table(pa.table({"a": [i]}), path)
    t = CarbonTable.open(path)
    t.delete_segments(["1"])
    carbon_ds.write_table(pa.table({"a": [6]}), path)
    rows = _check(path, ["0", "1", "2", "3", "4", "5", "6"])
    assert rows[1]["loadStatus"] == ts.MARKED_FOR_DELETE
    t.compact("custom", segments=["2", "3"])
    carbon_ds.write_table(pa.table({"a": [7]}), path)
    rows = _check(path)
    status = {r["loadName"]: r["loadStatus"] for r in rows}
    assert status["2"] == status["3"] == ts.COMPACTED and status["2.1"] == ts.SUCCESS
    assert rows[-1]["loadName"] == "7" and rows[-1]["loadStatus"] == ts.SUCCESS
    t.clean_files(force=True)
    history = json.loads((path / "Metadata" / "tablestatus.history").read_text())
    moved = {r["loadName"] for r in history}
    assert moved == {"1", "2", "3"}
    carbon_ds.write_table(pa.table({"a": [8]}), path)
    rows = _check(path)
    names = [r["loadName"] for r in rows]
    assert not moved & set(names) and names[-1] == "8"
    assert sorted(carbon_ds.read_table(path).column("a").to_pylist()) == [0, 2, 3, 4, 5, 6, 7, 8]
    carbon_ds.write_table(pa.table({"a": [9]}), path, mode="overwrite")
    rows = _check(path)
    assert [r["loadStatus"] for r in rows if r["loadName"] != "9"] == [ts.MARKED_FOR_DELETE] * (len(rows) - 1)
    carbon_ds.write_table(pa.table({"a": [10]}), path)
    _check(path)
    assert sorted(carbon_ds.read_table(path).column("a").to_pylist()) == [9, 10]


@pytest.mark.parametrize("n", [1, 40])
def test_a_failed_commit_leaves_no_stale_bytes(tmp_path, n):
    """An edit that raises writes nothing; the next commit starts from the file, not from the failed edit."""
    path = tmp_path / "t"
    for i in range(n):
        carbon_ds.write_table(pa.table({"a": [i]}), path)
    t = CarbonTable.open(path)
    with pytest.raises(RuntimeError), t.edit_status("test") as edit:
        edit.entries[-1].status = ts.FAILURE
        raise RuntimeError("the operation failed")
    carbon_ds.write_table(pa.table({"a": [n]}), path)
    rows = _check(path, [str(k) for k in range(n + 1)])
    assert {r["loadStatus"] for r in rows} == {ts.SUCCESS}
