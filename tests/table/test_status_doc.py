"""A status file's parse kept per process (meta.status.status_doc): a commit touches only the entries it changes, a
reader never sees a stale or half-changed list, and the file written is the one a full rewrite would write
(``tablestatus.parse`` of the same bytes, the parser every earlier version used, is the oracle)."""

from __future__ import annotations

import json
import os
import random
import time

import pyarrow as pa
import pytest

import carbon_ds
from carbon_ds.errors import CarbonError, CarbonFormatError
from carbon_ds.fs import Storage, joined
from carbon_ds.table import CarbonTable
from carbon_ds.table.meta.status import shared_prefix, status_doc
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.status_doc import EntryList
from carbon_ds.table.meta.status.tablestatus import LoadDetail


def _entry(i: int, status: str = ts.SUCCESS) -> dict:
    return {"timestamp": str(1_700_000_000_000 + i), "loadStatus": status, "loadName": str(i), "dataSize": "10",
            "indexSize": "5", "loadStartTime": str(1_700_000_000_000 + i - 1), "visibility": "true",
            "segmentFile": f"{i}_{1_700_000_000_000 + i}.segment"}


def _write(path, entries: list[dict], **dumps) -> bytes:
    data = json.dumps(entries, **dumps).encode()
    path.write_bytes(data)
    return data


def _read(storage: Storage, path) -> list[LoadDetail]:
    return status_doc.read_versioned(storage, str(path))[0]


def test_changed_files_read_as_a_full_parse(tmp_path):
    storage = Storage.for_path(str(tmp_path))[0]
    path = tmp_path / "tablestatus"
    entries = [_entry(i) for i in range(50)]
    _write(path, entries, separators=(",", ":"))
    assert _read(storage, path) == ts.parse(path.read_text())
    # another writer appends, flips an entry near the end, one in the middle, then writes another layout
    steps = [lambda e: e.append(_entry(50, ts.IN_PROGRESS)),
             lambda e: e[-1].update(loadStatus=ts.SUCCESS),
             lambda e: e[20].update(loadStatus=ts.MARKED_FOR_DELETE),
             lambda e: e.pop(3),
             lambda e: e.append({**_entry(51), "extraInfo": "ünïcode"})]
    for step in steps:
        step(entries)
        _write(path, entries, separators=(",", ":"), ensure_ascii=False)
        assert _read(storage, path) == ts.parse(path.read_text())
    _write(path, entries, indent=2)  # Gson's pretty printing, whitespace everywhere
    assert _read(storage, path) == ts.parse(path.read_text())
    _write(path, [])
    assert _read(storage, path) == []


def test_damage_is_reported_as_before(tmp_path):
    storage = Storage.for_path(str(tmp_path))[0]
    path = tmp_path / "tablestatus"
    _write(path, [_entry(i) for i in range(3)], separators=(",", ":"))
    _read(storage, path)
    for text in ('[{"loadName":"0","loadStatus":"Success"},', '{"loadName":"0"}', '[1]',
                 '[{"loadName":"0","loadStatus":"Success"},{"loadName":"0","loadStatus":"Success"}]'):
        path.write_text(text)
        with pytest.raises(CarbonFormatError) as got:
            _read(storage, path)
        with pytest.raises(CarbonFormatError) as want:
            ts.parse(text, storage.uri(str(path)))
        assert str(got.value) == str(want.value)


def test_entry_list_edits_write_what_a_full_rewrite_writes(monkeypatch):
    """Edits, and edits continued from what an edit wrote (sharing its lists' prefix, meta.status.shared_prefix),
    render what ``tablestatus.dumps`` renders; the docs written before stay what they were."""
    monkeypatch.setattr(shared_prefix, "_FOLD", 3)
    monkeypatch.setattr(status_doc, "_PARTS", 3)  # contents of parts joined often too
    rng = random.Random(48)
    for _round in range(60):
        raw = [_entry(i) for i in range(rng.randint(0, 12))]
        data = json.dumps(raw, separators=(",", ":")).encode()
        doc = status_doc.parse_doc(data, "t", None)
        edited, plain = EntryList(doc), ts.parse(data.decode())
        earlier: list[tuple[status_doc.Doc, list[LoadDetail]]] = []
        for _edit in range(rng.randint(1, 6)):
            data = _edit_round(rng, edited, plain, data)
            earlier.append((edited.base, [e.copy() for e in plain]))
            for was, entries in earlier:
                assert list(was.details) == entries and list(was.statuses) == [e.status for e in entries]
                assert was.data.decode() == ts.dumps(entries)


def _edit_round(rng: random.Random, edited: EntryList, plain: list[LoadDetail], data: bytes) -> bytes:
    """A few random steps on both lists, checked, then written; the bytes written."""
    for _step in range(rng.randint(1, 6)):
        op = rng.choice(["append", "flip", "finish", "delete", "drop_some", "find"])
        if op == "append":
            n = max([int(e.name) for e in plain], default=-1) + 1
            for target in (edited, plain):
                target.append(LoadDetail(name=str(n), status=ts.IN_PROGRESS, visibility="true"))
        elif op == "flip" and plain:
            i = rng.randrange(len(plain))
            for target in (edited, plain):
                target[i].status = ts.COMPACTED
                target[i].merged_load_name = "0.1"
        elif op == "finish" and plain:  # a load's commit: its entry, the last, flips to Success
            for target in (edited, plain):
                target[-1].status = ts.SUCCESS
                target[-1].segment_file = f"{target[-1].name}_1.segment"
        elif op == "delete" and plain:
            i = rng.randrange(len(plain))
            del edited[i], plain[i]
        elif op == "drop_some":
            keep = {e.name for e in plain if rng.random() < 0.7}
            edited[:] = [e for e in edited if e.name in keep]
            plain[:] = [e for e in plain if e.name in keep]
        elif op == "find" and plain:
            name = rng.choice(plain).name
            assert edited.find(name) == ts.find(plain, name)
        assert ts.next_segment_id(edited) == ts.next_segment_id(list(plain))
        assert (ts.with_status(edited, frozenset({ts.IN_PROGRESS})) ==
            [e for e in plain if e.status == ts.IN_PROGRESS])
    texts = edited.texts()
    assert status_doc.text_of(texts) == ts.dumps(plain)  # canonical rows render exactly as before
    assert edited.changed() == (ts.dumps(plain) != data.decode())
    content = edited.data(texts)  # bytes, or parts: views of the bytes read, then the rest
    out = joined(content)
    assert out.decode() == ts.dumps(plain)
    written = edited.written(content, texts)
    assert written.details == plain and not edited.changed() and written.data == out
    assert written.compact == (out.isascii() and written.exact)
    assert written.rare == tuple(i for i, e in enumerate(plain) if e.status not in status_doc._COMMON)
    return out


def test_untouched_entries_keep_their_text(tmp_path):
    """Entries a commit does not change are written back as the file held them (CarbonData's key order,
    keys carbon-ds does not know), only the changed ones are rendered again."""
    path = tmp_path / "t"
    carbon_ds.write_table(pa.table({"a": [1, 2]}), path)
    status = path / "Metadata" / "tablestatus"
    foreign = {"loadStatus": "Success", "loadName": "7", "segmentFile": None, "someFutureKey": "x", "dataSize": 1}
    raw = status.read_text()[:-1] + "," + json.dumps(foreign) + "]"
    status.write_text(raw)
    carbon_ds.write_table(pa.table({"a": [3]}), path)
    text = status.read_text()
    assert json.dumps(foreign) in text  # kept byte for byte
    assert [e["loadName"] for e in json.loads(text)] == ["0", "7", "8"]


def test_shared_entries_are_not_changed_by_commits(tmp_path):
    path = tmp_path / "t"
    for i in range(3):
        carbon_ds.write_table(pa.table({"a": [i]}), path)
    t = CarbonTable.open(path)
    before = t.load_details()
    with pytest.raises(CarbonError, match="cannot be changed"):
        before[0].status = ts.MARKED_FOR_DELETE
    t.delete_segments(["0"])
    assert [e.status for e in before] == [ts.SUCCESS] * 3  # a reader's list stays what it read
    assert [e.status for e in t.load_details()] == [ts.MARKED_FOR_DELETE, ts.SUCCESS, ts.SUCCESS]
    mine = before[1].copy()
    mine.status = ts.FAILURE
    assert t.load_details()[1].status == ts.SUCCESS
    # a commit that raises leaves nothing behind, in the file or in what later reads get
    with pytest.raises(RuntimeError), t.edit_status("test") as edit:
        ts.find(edit.entries, "2").status = ts.FAILURE
        raise RuntimeError("the operation failed")
    assert t.load_details()[2].status == ts.SUCCESS
    assert carbon_ds.read_table(path).num_rows == 2


def test_a_commit_parses_and_renders_only_what_it_touches(tmp_path, monkeypatch):
    """An append to a table of 300 segments makes and renders as many entries as one to a table of 3."""
    counts = {"parsed": 0, "rendered": 0}
    real_from_json, real_text = LoadDetail.from_json.__func__, LoadDetail.text

    def from_json(cls, obj, where="tablestatus"):
        counts["parsed"] += 1
        return real_from_json(cls, obj, where)

    def text(self):
        counts["rendered"] += 1
        return real_text(self)

    spent = {}
    for n in (3, 300):
        path = tmp_path / f"t{n}"
        carbon_ds.write_table(pa.table({"a": [0]}), path)
        status = path / "Metadata" / "tablestatus"
        status.write_text(json.dumps([_entry(i) for i in range(n)], separators=(",", ":")))
        carbon_ds.write_table(pa.table({"a": [1]}), path)  # the first read of the file parses all of it
        monkeypatch.setattr(LoadDetail, "from_json", classmethod(from_json))
        monkeypatch.setattr(LoadDetail, "text", text)
        counts.update(parsed=0, rendered=0)
        for i in range(3):
            carbon_ds.write_table(pa.table({"a": [i]}), path)
        spent[n] = dict(counts)
        monkeypatch.undo()
        assert [e.name for e in CarbonTable.open(path).load_details()][-4:] == [str(n + k) for k in range(4)]
    assert spent[300] == spent[3] and spent[3]["rendered"] <= 3 * 3


def test_a_status_file_changed_by_another_writer_is_read_again(tmp_path):
    """After a commit, the file this process wrote is answered from its kept parse; once another writer
    replaced it (by rename, or in place with the same length), the next read and the next commit see that."""
    path = tmp_path / "t"
    for i in range(3):
        carbon_ds.write_table(pa.table({"a": [i]}), path)
    status = path / "Metadata" / "tablestatus"
    assert [e.status for e in CarbonTable.open(path).load_details()] == [ts.SUCCESS] * 3
    changed = status.read_text().replace('"loadStatus":"Success"', '"loadStatus":"Failure"', 1)  # same length
    other = tmp_path / "other"
    other.write_text(changed)
    os.replace(other, status)
    assert [e.status for e in CarbonTable.open(path).load_details()] == [ts.FAILURE, ts.SUCCESS, ts.SUCCESS]
    time.sleep(0.05)  # past a coarse clock's tick
    CarbonTable.open(path).load_details()  # read a tick after its change: known by its status from now on
    text = status.read_text().replace('"Success"', '"Failure"')
    with open(status, "r+") as f:  # in place, the same length
        f.write(text)
    assert [e.status for e in CarbonTable.open(path).load_details()] == [ts.FAILURE] * 3
    carbon_ds.write_table(pa.table({"a": [9]}), path)  # a commit reads it as it is now
    assert [e.status for e in CarbonTable.open(path).load_details()] == [ts.FAILURE] * 3 + [ts.SUCCESS]
    assert carbon_ds.read_table(path).column("a").to_pylist() == [9]
