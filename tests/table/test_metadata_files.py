"""tablestatus, schema file, segment files and locks: the metadata layer without data files."""

from __future__ import annotations

import json
import os
import threading
import time
from datetime import datetime

import pyarrow as pa
import pytest

import carbon_ds
from carbon_ds import fs as fs_module
from carbon_ds.errors import CarbonFormatError, CarbonTableError
from carbon_ds.fs import Storage
from carbon_ds.table.meta.files import segment_file as segments
from carbon_ds.table.meta.locks import TableLock
from carbon_ds.table.meta.schema import schema_file
from carbon_ds.table.meta.status import tablestatus
from carbon_ds.table.meta.status.tablestatus import LoadDetail

OLD = (
    '[{"timestamp":"19-04-2017 12:38:37:103","loadStatus":"Success","loadName":"0","partitionCount":"0",'
    '"isDeleted":"FALSE","updateDeltaEndTimestamp":"","updateDeltaStartTimestamp":"","updateStatusFileName":"",'
    '"loadStartTime":"19-04-2017 12:38:36:607","visibility":"true"}]'
)


def test_old_format_dates_and_unknown_keys_survive():
    (e,) = tablestatus.parse(OLD)
    assert e.name == "0" and e.status == "Success" and e.readable
    assert e.load_start_ms == int(datetime(2017, 4, 19, 12, 38, 36, 607000).timestamp() * 1000)
    assert e.load_end_ms - e.load_start_ms == 496
    assert e.other == {"partitionCount": "0", "isDeleted": "FALSE"}
    # Read-modify-write keeps every key, and the empty strings stay empty strings.
    assert json.loads(tablestatus.dumps([e])) == json.loads(OLD)


def test_real_table_tablestatus(corpus):
    storage, path = Storage.for_path(corpus / "table-1.1-global-dictionary" / "Metadata" / "tablestatus")
    (e,) = tablestatus.read(storage, path)
    assert (e.name, e.status, e.readable) == ("0", "Success", True)
    assert e.load_start_ms is not None


def test_new_format_omits_absent_fields():
    e = LoadDetail(name="3", status="Success", timestamp="1700000000123", load_start_time="1700000000000")
    assert json.loads(tablestatus.dumps([e])) == [
        {"timestamp": "1700000000123", "loadStatus": "Success", "loadName": "3", "loadStartTime": "1700000000000"}
    ]
    assert e.load_end_ms == 1700000000123


@pytest.mark.parametrize(
    "status,readable",
    [
        ("Success", True),
        ("Marked for Update", True),
        ("Partial Success", True),
        ("In Progress", False),
        ("Overwrite In Progress", False),
        ("Marked for Delete", False),
        ("Compacted", False),
        ("Failure", False),
    ],
)
def test_readable_statuses(status, readable):
    assert LoadDetail(name="0", status=status).readable is readable


def test_invisible_segment_is_not_readable():
    assert not LoadDetail(name="0", status="Success", visibility="false").readable


def test_next_segment_id_ignores_compaction_ids():
    entries = [LoadDetail(name=n, status="Success") for n in ("0", "1", "0.1", "7", "2")]
    assert tablestatus.next_segment_id(entries) == "8"
    assert tablestatus.next_segment_id([]) == "0"


def test_bad_files_name_the_problem():
    with pytest.raises(CarbonFormatError, match="not valid JSON"):
        tablestatus.parse('[{"loadName":"0"')
    with pytest.raises(CarbonFormatError, match="loadName/loadStatus"):
        tablestatus.parse('[{"loadName":"0"}]')
    with pytest.raises(CarbonFormatError, match="dd-MM-yyyy"):
        tablestatus.parse_time("2017/04/19")


def test_replace_is_never_torn(tmp_path):
    """A reader running alongside many rewrites only ever sees a complete list."""
    storage, path = Storage.for_path(tmp_path / "tablestatus")
    storage.write_atomic(path, tablestatus.dumps([]).encode())
    stop = threading.Event()
    seen: list[int] = []
    errors: list[Exception] = []

    def reader():
        while not stop.is_set():
            try:
                seen.append(len(tablestatus.read(storage, path)))
            except Exception as e:  # noqa: BLE001 - any failure is the finding
                errors.append(e)

    t = threading.Thread(target=reader)
    t.start()
    entries = []
    for i in range(300):
        entries.append(LoadDetail(name=str(i), status="Success", extra_info="x" * 2000))
        storage.write_atomic(path, tablestatus.dumps(entries).encode())
    stop.set()
    t.join()
    assert not errors
    assert seen == sorted(seen)  # lists only grow: every read saw one whole version
    assert len(tablestatus.read(storage, path)) == 300
    assert [p.path for p in storage.list(str(tmp_path))] == [path]  # no temp files left


def test_replace_if_takes_only_the_version_read(tmp_path):
    """A conditional replace goes through while the file holds the bytes read, and is refused once anyone
    wrote it since, even with bytes of the same length or the very bytes first read again (A, B, A)."""
    storage, path = Storage.for_path(tmp_path / "tablestatus")
    storage.write_atomic(path, b"[1]")
    data, first = storage.read_versioned(path)
    assert data == b"[1]" and storage.read_versioned(path)[1] == first  # reading again: the same version
    assert storage.replace_if(path, b"[2]", first)
    assert not storage.replace_if(path, b"[3]", first)  # [2] is there now: [1]'s version no longer holds
    _, second = storage.read_versioned(path)
    with open(path, "wb") as f:  # another writer, in place, same length
        f.write(b"[4]")
    assert not storage.replace_if(path, b"[5]", second)
    _, third = storage.read_versioned(path)
    storage.write_atomic(path, b"[9]")
    storage.read_versioned(path)  # this process met [9] at the path
    storage.write_atomic(path, b"[4]")  # and [4] came back
    assert not storage.replace_if(path, b"[6]", third)
    assert storage.read_versioned(path)[0] == b"[4]"
    assert storage.replace_if(path, b"[7]", storage.read_versioned(path)[1])
    assert storage.read_versioned(path)[0] == b"[7]"
    assert storage.replace_if(str(tmp_path / "absent"), b"[8]", None)  # None: created only while absent
    assert not storage.replace_if(str(tmp_path / "absent"), b"[8]", None)


def test_a_file_known_by_its_status_is_not_read_again_until_it_changes(tmp_path, monkeypatch):
    """A file this process wrote, or read more than a clock tick after it was written, is answered from its
    status (size, times, inode) without reading it; any write by another (a rename, or in place with the same
    length) is read."""
    storage, path = Storage.for_path(tmp_path / "tablestatus")
    opened: list[str] = []
    real_open = open

    def counting_open(file, *args, **kwargs):
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(fs_module, "open", counting_open, raising=False)
    storage.write_atomic(path, b"[1]")
    data, first = storage.read_versioned(path)
    assert storage.replace_if(path, b"[2]", first)
    opened.clear()
    data, second = storage.read_versioned(path)
    assert data == b"[2]" and opened == []  # written here: known by its status
    os.replace(_other_writer(tmp_path, b"[3]"), path)  # another writer, by rename
    data, third = storage.read_versioned(path)
    assert data == b"[3]" and third != second and opened == [path]
    time.sleep(0.05)  # past a coarse clock's tick
    data, _ = storage.read_versioned(path)
    assert data == b"[3]" and opened == [path, path]  # read within the tick of its write: read again
    opened.clear()
    assert storage.read_versioned(path) == (b"[3]", third) and opened == []
    with real_open(path, "wb") as f:  # in place, the same length
        f.write(b"[4]")
    data, fourth = storage.read_versioned(path)
    assert data == b"[4]" and fourth != third and opened == [path]
    assert not storage.replace_if(path, b"[5]", third)


def _other_writer(folder, data: bytes) -> str:
    tmp = os.path.join(folder, ".other.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    return tmp


def test_schema_file_like_carbondata(tmp_path, corpus):
    storage, path = Storage.for_path(corpus / "table-1.1-global-dictionary" / "Metadata" / "schema")
    real = schema_file.read(storage, path)
    assert schema_file.table_arrow_schema(real).names == [
        "id",
        "date",
        "country",
        "name",
        "phonetype",
        "serialname",
        "salary",
    ]
    schema = pa.schema([("id", pa.int32()), ("Name", pa.string()), ("ts", pa.timestamp("us", tz="UTC"))])
    info = schema_file.build_table_info(schema, sort_columns=["name"], properties={"table_blocksize": "256"})
    storage, out = Storage.for_path(tmp_path / "schema")
    schema_file.write(storage, out, info)
    back = schema_file.read(storage, out)
    assert back == info
    fact = back.fact_table
    assert len(fact.table_id) == 36 and len(fact.schema_evolution.schema_evolution_history) == 1
    assert all(c.column_id == c.columnReferenceId and len(c.column_id) == 36 for c in fact.table_columns)
    assert fact.table_columns[0].column_name == "Name"  # sort columns come first physically
    assert schema_file.table_arrow_schema(back) == schema  # user order restored
    assert schema_file.sort_columns(back) == ["name"]
    assert schema_file.properties(back)["table_blocksize"] == "256"
    assert schema_file.properties(back)["sort_scope"] == "local_sort"


def test_schema_file_reads_are_independent_objects(tmp_path, corpus):
    """Parsed schema files are kept by their bytes; each read must still be the caller's own TableInfo (ALTER
    TABLE paths change it in place before writing it back)."""
    storage, path = Storage.for_path(corpus / "table-1.1-global-dictionary" / "Metadata" / "schema")
    first = schema_file.read(storage, path)
    names = schema_file.table_arrow_schema(first).names
    for c in first.fact_table.table_columns:
        c.column_name = "changed"
    first.fact_table.tableProperties = {"sort_columns": "changed"}
    again = schema_file.read(storage, path)
    assert again is not first
    assert schema_file.table_arrow_schema(again).names == names
    assert "changed" not in (again.fact_table.tableProperties or {}).values()
    assert again == schema_file._parse((corpus / "table-1.1-global-dictionary" / "Metadata" / "schema").read_bytes(),
                                       "x")


def test_segment_file_round_trip(tmp_path):
    storage, table = Storage.for_path(tmp_path)
    seg = segments.for_load("4", ["1_batchno0-0-4-99.carbonindex", "0_batchno0-0-4-99.carbonindex"])
    name = segments.segment_file_name("4", 99)
    assert name == "4_99.segment"
    segments.write(storage, table, name, seg)
    raw = json.loads((tmp_path / "Metadata" / "segments" / name).read_text())
    assert raw == {
        "locationMap": {
            "/Fact/Part0/Segment_4": {
                "files": ["0_batchno0-0-4-99.carbonindex", "1_batchno0-0-4-99.carbonindex"],
                "partitions": [],
                "status": "Success",
                "isRelative": True,
            }
        }
    }
    back = segments.read(storage, table, name)
    ((folder, details),) = back.folders(table)
    assert folder == str(tmp_path / "Fact" / "Part0" / "Segment_4")
    assert details.files == raw["locationMap"]["/Fact/Part0/Segment_4"]["files"]


def test_lock_is_exclusive_and_breaks_stale(tmp_path):
    storage, table = Storage.for_path(tmp_path)
    with TableLock(storage, table) as held:
        assert (tmp_path / "LockFiles" / "tablestatus.lock").exists()
        with pytest.raises(CarbonTableError, match="could not take lock .*held by"):
            TableLock(storage, table, timeout=0.2).acquire()
        assert held.held
    assert not (tmp_path / "LockFiles" / "tablestatus.lock").exists()
    # A lock left by a dead process is taken over once it is older than stale_after.
    dead = TableLock(storage, table)
    dead.acquire()
    with TableLock(storage, table, timeout=5, stale_after=0.3):
        pass
    dead.release()  # the dead owner's late release must not remove someone else's lock


@pytest.mark.parametrize("damage", ["name", "entry"])
def test_a_partition_folder_that_lost_its_index_list_is_refused(tmp_path, damage):
    # a live folder of a load lists its tasks' index files: a name that is none, or an entry emptied beside
    # the other partitions', used to drop that partition's rows without a word
    path = tmp_path / "t"
    rows = pa.table({"id": pa.array(range(30), pa.int64()), "p": [f"k{i % 3}" for i in range(30)]})
    carbon_ds.write_table(rows, str(path), partition_by=["p"])
    assert carbon_ds.read_table(str(path)).num_rows == 30
    [seg] = (path / "Metadata" / "segments").glob("*.segment")
    doc = json.loads(seg.read_text())
    if damage == "name":
        doc["locationMap"]["/p=k0"]["files"][0] = "\u0000"
    else:
        doc["locationMap"]["/p=k0"] = {}
    seg.write_text(json.dumps(doc))
    want = "not an index file name" if damage == "name" else "no index file"
    with pytest.raises(CarbonFormatError, match=f"locationMap folder .*p=k0 lists .*{want}.*{seg.name}"):
        carbon_ds.read_table(str(path))


def test_replaced_large_files_are_closed_off_the_commit_path(tmp_path):
    """The rename of a large status file over the old one leaves freeing the old one's blocks to a thread
    (fs._Releaser); every descriptor it held is closed and the folder holds the last content only."""
    storage, path = Storage.for_path(tmp_path / "tablestatus")
    open_fds = lambda: len(os.listdir("/proc/self/fd"))  # noqa: E731
    storage.write_atomic(path, b"[" + b" " * (2 << 20) + b"]")
    before = open_fds()
    for i in range(40):
        _, version = storage.read_versioned(path)
        assert storage.replace_if(path, b"[" + str(i).encode() * (2 << 20) + b"]", version)
    deadline = time.monotonic() + 10
    while open_fds() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert open_fds() == before
    assert [p.path for p in storage.list(str(tmp_path))] == [path]
    assert storage.read_versioned(path)[0] == b"[" + b"39" * (2 << 20) + b"]"
