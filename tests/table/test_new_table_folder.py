"""A write that would create a table refuses a folder holding someone else's data, and writes nothing there.

The oracle is pyarrow: the Hive-partitioned Parquet / ORC folder reads the same rows before and after the
refused write, and its listing (every file and folder, recursively) is unchanged."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

import carbon_ds
from carbon_ds.errors import CarbonTableError
from carbon_ds.fs import Storage
from carbon_ds.table.meta.files.new_table_folder import check_new_table_folder
from carbon_ds.table.table import CarbonTable

ROWS = pa.table({"id": pa.array(range(6), pa.int64()), "v": pa.array(list("abcdef"))})


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) + ("/" if p.is_dir() else "") for p in folder.rglob("*"))


def hive_parquet(folder: Path) -> Path:
    """What ``spark.write.partitionBy("day").parquet(folder)`` leaves: day=N/ folders and _SUCCESS."""
    for day in (1, 2):
        (folder / f"day={day}").mkdir(parents=True)
        pq.write_table(ROWS, folder / f"day={day}" / "part-00000.parquet")
    (folder / "_SUCCESS").write_bytes(b"")
    return folder


def orc_folder(folder: Path) -> Path:
    folder.mkdir(parents=True)
    orc.write_table(ROWS, str(folder / "part-00000.orc"))
    return folder


WRITES = {
    "write_table append": lambda p: carbon_ds.write_table(ROWS, p),
    "write_table overwrite": lambda p: carbon_ds.write_table(ROWS, p, mode="overwrite"),
    "write_table merge": lambda p: carbon_ds.write_table(ROWS, p, schema_mode="merge"),
    "CarbonTable.create": lambda p: CarbonTable.create(p, ROWS.schema),
    "write_table partitioned": lambda p: carbon_ds.write_table(ROWS, p, partition_by=["v"]),
}


@pytest.mark.parametrize("write", list(WRITES))
def test_hive_partitioned_parquet_folder_is_refused_and_left_as_it_was(tmp_path, write):
    folder = hive_parquet(tmp_path / "events")
    before = listing(folder)
    with pytest.raises(CarbonTableError) as err:
        WRITES[write](folder)
    message = str(err.value)
    assert str(folder) in message
    assert "holds 3 entries: _SUCCESS, day=1/, day=2/" in message
    assert "expected an empty folder or a CarbonData table (Metadata/schema)" in message
    assert listing(folder) == before  # no Metadata/, Fact/ or LockFiles/
    got = ds.dataset(folder, format="parquet", partitioning="hive").to_table()
    assert got.num_rows == 2 * ROWS.num_rows and sorted(set(got.column("day").to_pylist())) == [1, 2]


@pytest.mark.parametrize("mode", ["append", "overwrite"])
def test_orc_folder_is_refused(tmp_path, mode):
    folder = orc_folder(tmp_path / "orc")
    before = listing(folder)
    with pytest.raises(CarbonTableError, match=r"holds 1 entry: part-00000\.orc; expected an empty folder"):
        carbon_ds.write_table(ROWS, folder, mode=mode)
    assert listing(folder) == before
    assert orc.read_table(str(folder / "part-00000.orc")).equals(ROWS)


@pytest.mark.parametrize("entry", ["_SUCCESS", "notes.txt", ".Trash/", "Fact/", "day=1/"])
def test_any_other_entry_is_refused(tmp_path, entry):
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / entry.rstrip("/")).mkdir() if entry.endswith("/") else (folder / entry).write_bytes(b"x")
    with pytest.raises(CarbonTableError, match=f"holds 1 entry: {re.escape(entry)};"):
        carbon_ds.write_table(ROWS, folder)
    assert listing(folder) == [entry]


def test_metadata_without_schema_is_named_as_a_partial_table(tmp_path):
    folder = tmp_path / "half"
    carbon_ds.write_table(ROWS, folder)
    (folder / "Metadata" / "schema").unlink()  # a copy that lost its schema
    before = listing(folder)
    with pytest.raises(CarbonTableError) as err:
        carbon_ds.write_table(ROWS, folder)
    message = str(err.value)
    assert "part of a CarbonData table without its schema" in message
    assert "Metadata/ holds segments/, tablestatus but no schema file" in message
    assert listing(folder) == before


def test_many_entries_are_counted_not_all_named(tmp_path):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(20):
        (folder / f"part-{i:05d}.parquet").write_bytes(b"")
    with pytest.raises(CarbonTableError, match=r"holds 20 entries: part-00000\.parquet, .*, \.\.\. \(12 more\)"):
        carbon_ds.write_table(ROWS, folder)


def test_empty_folder_and_hidden_files_are_accepted(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    carbon_ds.write_table(ROWS, empty)
    finder = tmp_path / "mac"
    finder.mkdir()
    (finder / ".DS_Store").write_bytes(b"\0")
    carbon_ds.write_table(ROWS, finder)
    assert (finder / ".DS_Store").exists()
    for folder in (empty, finder):
        assert carbon_ds.read_table(folder).sort_by("id").equals(ROWS)


def test_a_creation_that_died_before_its_schema_is_finished_by_the_next_write(tmp_path):
    """A writer killed between making Metadata/ and writing the schema leaves an empty Metadata/ and its
    lock file: that is no one else's data, so the next write creates the table."""
    folder = tmp_path / "t"
    (folder / "Metadata").mkdir(parents=True)
    (folder / "LockFiles").mkdir()
    (folder / "LockFiles" / "tablestatus.lock").write_text('{"owner": "x", "time": 0, "host": "gone"}')
    carbon_ds.write_table(ROWS, folder)
    assert carbon_ds.read_table(folder).num_rows == ROWS.num_rows


def test_an_existing_table_is_appended_to_as_before(tmp_path):
    folder = tmp_path / "t"
    carbon_ds.write_table(ROWS, folder)
    carbon_ds.write_table(ROWS, folder)
    assert carbon_ds.read_table(folder).num_rows == 2 * ROWS.num_rows


def test_writers_racing_to_create_one_table_all_succeed(tmp_path):
    """The check runs before the creation lock and again under it: a creation under way (its lock file,
    its Metadata/ with the schema's temporary file) is not mistaken for a foreign folder."""
    folder = tmp_path / "t"
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            carbon_ds.write_table(pa.table({"id": pa.array([i], pa.int64()), "v": [str(i)]}), folder)
        except BaseException as e:  # noqa: BLE001 - reported by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(carbon_ds.read_table(folder).column("id").to_pylist()) == list(range(6))


def test_a_table_made_since_the_caller_looked_is_not_refused(tmp_path):
    """A racing first writer can finish the table between another's "no schema yet" and its folder check:
    the check then sees a whole table (Metadata/ with schema and tablestatus, Fact/), which is not foreign;
    the caller opens it under the creation lock."""
    folder = tmp_path / "t"
    carbon_ds.write_table(ROWS, folder)
    check_new_table_folder(*Storage.for_path(str(folder)))  # no error


def test_regular_file_is_still_named_as_such(tmp_path):
    target = tmp_path / "file.parquet"
    pq.write_table(ROWS, target)
    with pytest.raises(CarbonTableError, match="a table must be a folder"):
        carbon_ds.write_table(ROWS, target)
    assert os.path.isfile(target)
