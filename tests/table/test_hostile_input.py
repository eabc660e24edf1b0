"""Hostile input ends in carbon_ds.errors types that name the file, column or value: deep filter trees
(built in Python or pushed by Spark), a data file whose header names a column the table lacks, damaged
metadata text, a file the metadata points at that is gone."""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import time

import pyarrow as pa
import pytest

from carbon_ds.api import read_table, write_table
from carbon_ds.errors import (
    CarbonFormatError,
    CarbonMissingFileError,
    CarbonOptionError,
    CarbonSchemaError,
    CarbonTableError,
)
from carbon_ds.expressions import And, Compare, Not, Or
from carbon_ds.expressions.spark import from_spark_filter
from carbon_ds.expressions.tree import MAX_TREE_DEPTH, depth
from carbon_ds.format.arrow_types import MAX_NESTING, nest
from carbon_ds.format.thrift.structs import MAX_COLUMNS, ColumnSchema, DataType, TableInfo
from carbon_ds.readers.carbon_file import CarbonDataFile
from carbon_ds.table.meta.schema.schema_file import MAX_SCHEMA_BYTES
from carbon_ds.table.table import CarbonTable


@pytest.fixture
def table(tmp_path):
    path = str(tmp_path / "t")
    write_table(pa.table({"alpha": pa.array([1, 2, 3], pa.int64()), "sname": ["x", "y", "z"]}), path)
    return path


def test_deep_not_chain_is_refused_not_a_crash(table):
    e = Compare("alpha", "=", 1)
    for _ in range(20_000):  # before: Arrow's evaluation overflowed the C stack (segfault)
        e = Not(e)
    with pytest.raises(CarbonOptionError, match="nests 20001 levels deep"):
        read_table(table, filter=e)
    with pytest.raises(CarbonOptionError):
        CarbonTable.open(table).delete(e)
    assert read_table(table).num_rows == 3


def test_long_chains_built_by_hand_are_rebalanced(table):
    left, right = Compare("alpha", "=", 0), Compare("alpha", "=", 0)
    for i in range(5000):
        left = Or(left, Compare("alpha", "=", i % 7))  # left-deep, 5001 levels
        right = And(Compare("alpha", "!=", 100 + i), right)  # right-deep
    assert depth(left) > MAX_TREE_DEPTH
    assert sorted(read_table(table, filter=left).column("alpha").to_pylist()) == [1, 2, 3]
    assert read_table(table, filter=right).num_rows == 0
    nots = Compare("alpha", "=", 2)
    for _ in range(MAX_TREE_DEPTH - 1):  # within the bound: evaluated (an even number of NOTs cancels out)
        nots = Not(nots)
    assert read_table(table, filter=nots).column("alpha").to_pylist() == ([2] if (MAX_TREE_DEPTH - 1) % 2 == 0
                                                                            else [1, 3])


def test_spark_not_chain_converts_without_recursion():
    class EqualTo:
        attribute, value = ("alpha",), 1

    class Not:  # Spark's filter class names are matched by name
        def __init__(self, child):
            self.child = child

    f = EqualTo()
    for _ in range(30_001):
        f = Not(f)
    assert from_spark_filter(f) == ~Compare("alpha", "=", 1)  # an odd number of NOTs


def test_corrupted_column_name_in_file_header(table):
    before = read_table(table)
    [f] = glob.glob(os.path.join(table, "**", "*.carbondata"), recursive=True)
    data = bytearray(open(f, "rb").read())
    data[data.find(b"sname")] = ord("t")
    open(f, "wb").write(bytes(data))
    # the table maps file columns by column id, so a damaged name in a header cannot lose the column
    assert read_table(table).equals(before)
    # asked for by name, the file says which column it lacks instead of a KeyError
    with pytest.raises(CarbonSchemaError) as e, CarbonDataFile(f) as cf:
        cf.read(columns=["sname"])
    assert os.path.basename(f) in str(e.value) and "'sname'" in str(e.value)


def test_damaged_metadata_text_names_the_file(table):
    [seg] = glob.glob(os.path.join(table, "Metadata", "segments", "*.segment"))
    with open(seg, "r+b") as fh:
        fh.seek(3)
        fh.write(b"\xff")
    with pytest.raises(CarbonFormatError, match="UTF-8") as e:  # before: UnicodeDecodeError
        read_table(table)
    assert os.path.basename(seg) in str(e.value)


def test_missing_data_file_is_our_error(table):
    [f] = glob.glob(os.path.join(table, "**", "*.carbondata"), recursive=True)
    os.remove(f)
    with pytest.raises(CarbonMissingFileError, match="no data file"):  # before: an empty table, silently
        read_table(table)


def test_page_values_outside_stored_min_max_are_refused(tmp_path):
    """An ADAPTIVE_INTEGRAL page whose stored byte is flipped decodes to a value no statistic allows."""
    import pyarrow.compute as pc

    from carbon_ds.readers import CarbonDataFile

    path = str(tmp_path / "t")
    write_table(pa.table({"v": pa.array(range(1000, 1100), pa.int64())}), path, local_dictionary_enable=False)
    [f] = glob.glob(os.path.join(path, "**", "*.carbondata"), recursive=True)
    with CarbonDataFile(f) as cf:
        assert pc.min_max(cf.read()["v"]).as_py() == {"min": 1000, "max": 1099}
    data = bytearray(open(f, "rb").read())
    raw = bytes(range(99, -1, -1))  # ADAPTIVE_DELTA_INTEGRAL: max - value in one byte; snappy keeps them literal
    at = data.find(raw[40:60])
    assert at > 0
    data[at + 5] ^= 0x80  # one value moves by 128: out of [1000, 1099]
    open(f, "wb").write(bytes(data))
    with pytest.raises(CarbonFormatError, match="outside the page's stored min/max"):
        read_table(path)


def _wide_schema(table: str, declared: int, held: int) -> None:
    """Rewrite the table's Metadata/schema so that its column list declares ``declared`` one-byte-named
    columns and holds ``held`` of them (compact thrift list header written by hand)."""
    schema = os.path.join(table, "Metadata", "schema")
    info, _ = TableInfo.from_bytes(open(schema, "rb").read())
    col = ColumnSchema(data_type=0, column_name="c", column_id="c", columnar=True, encoders=[], dimension=True)
    info.fact_table.table_columns = [col]  # 13 bytes a column: a million stay under the file size limit
    data = info.to_bytes()
    one = bytes([0x1C]) + col.to_bytes()  # a list of one struct
    assert data.count(one) == 1
    varint, n = bytearray(), declared
    while True:
        varint.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            break
    open(schema, "wb").write(data.replace(one, bytes([0xFC]) + bytes(varint) + col.to_bytes() * held))


@pytest.mark.parametrize("declared, held", [(1_000_000, 1_000_000), (1_000_000, 1), (MAX_COLUMNS + 1, MAX_COLUMNS + 1)])
def test_schema_declaring_too_many_columns_fails_fast(table, declared, held):
    # before: a million columns ran for minutes and died with a raw MemoryError. The read runs in a child
    # process so that a regression shows as a timeout instead of hanging the suite
    _wide_schema(table, declared, held)
    code = ("import sys; from carbon_ds.api import read_table\n"
            "try:\n    read_table(sys.argv[1])\nexcept Exception as e:\n    print(type(e).__name__, e)\n")
    out = subprocess.run([sys.executable, "-c", code, table], capture_output=True, text=True, timeout=120)
    assert out.stdout.startswith("CarbonFormatError"), out.stdout + out.stderr
    assert f"list of {declared} columns exceeds the limit of {MAX_COLUMNS} columns" in out.stdout
    assert os.path.join(table, "Metadata", "schema") in out.stdout


def test_oversized_schema_file_is_refused_before_reading(table):
    schema = os.path.join(table, "Metadata", "schema")
    with open(schema, "ab") as fh:
        fh.truncate(MAX_SCHEMA_BYTES + 1)  # sparse: no disk space used
    with pytest.raises(CarbonFormatError, match=f"schema file of {MAX_SCHEMA_BYTES + 1} bytes exceeds the limit"):
        read_table(table)


def test_unknown_data_type_in_schema_is_a_format_error(table):
    schema = os.path.join(table, "Metadata", "schema")
    info, _ = TableInfo.from_bytes(open(schema, "rb").read())
    info.fact_table.table_columns[1].data_type = 34  # before: ValueError "34 is not a valid DataType"
    open(schema, "wb").write(info.to_bytes())
    with pytest.raises(CarbonFormatError, match="column 'alpha' has data type 34, expected one of 0 .STRING.") as e:
        read_table(table)
    assert schema in str(e.value)


def test_complex_columns_nested_past_the_limit_are_refused():
    flat = [ColumnSchema(data_type=int(DataType.ARRAY), column_name=f"a{i}", column_id=f"a{i}", columnar=True,
                         encoders=[], dimension=True, num_child=1) for i in range(5000)]
    flat.append(ColumnSchema(data_type=0, column_name="leaf", column_id="leaf", columnar=True, encoders=[],
                             dimension=True))
    with pytest.raises(CarbonSchemaError, match=f"nests deeper than the limit of {MAX_NESTING} levels"):
        nest(flat)  # before: RecursionError
    assert len(nest(flat[-MAX_NESTING - 1:])) == 1


# ------------------------------------------------------------------ metadata that claims more than the file holds
_BOUNDED_READ = """
import resource, sys
limit = int(sys.argv[2]) << 20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from carbon_ds.api import read_table
try:
    read_table(sys.argv[1])
    print("READ")
except Exception as e:
    print(type(e).__name__, e)
"""


def _bounded_read(table: str, limit_mb: int = 3072) -> str:
    """``read_table(table)`` in a child process whose address space is capped: a read that tries to allocate
    by a claimed size fails there with a MemoryError instead of taking the machine's memory."""
    out = subprocess.run([sys.executable, "-c", _BOUNDED_READ, table, str(limit_mb)], capture_output=True,
                         text=True, timeout=300)
    return out.stdout + out.stderr


def _data_file(table: str) -> str:
    [f] = glob.glob(os.path.join(table, "Fact", "**", "*.carbondata"), recursive=True)
    return f


def _rewrite_footer(path: str, change) -> None:
    """Apply ``change`` to the footer of the data file at ``path`` and write it back in place."""
    from carbon_ds.format.thrift.structs import FileFooter3

    data = open(path, "rb").read()
    at = int.from_bytes(data[-8:], "big")
    footer, _ = FileFooter3.from_bytes(data[at:-8])
    change(footer)
    open(path, "wb").write(data[:at] + footer.to_bytes() + at.to_bytes(8, "big"))


@pytest.fixture
def rows_table(tmp_path):
    path = str(tmp_path / "rows")
    write_table(pa.table({"id": pa.array(range(100_000), pa.int64()),
                          "s": pa.array([f"s{i % 1000}" for i in range(100_000)])}), path)
    return path


def test_footer_listing_a_blocklet_twice_is_refused(rows_table):
    # before: read_table returned 200,000 rows from a 100,000-row file, every row twice
    f = _data_file(rows_table)

    def twice(footer):
        footer.blocklet_info_list3 = footer.blocklet_info_list3 * 2
        footer.blocklet_index_list = footer.blocklet_index_list * 2
        footer.num_rows *= 2

    _rewrite_footer(f, twice)
    for read in (lambda: read_table(rows_table), lambda: read_table(rows_table, filter="id >= 0"),
                 lambda: CarbonTable.open(rows_table).count("id >= 0"), lambda: CarbonDataFile(f).read(),
                 lambda: list(CarbonTable.open(rows_table).scan().to_batches())):
        with pytest.raises(CarbonFormatError) as e:
            read()
        assert os.path.basename(f) in str(e.value)
    assert CarbonTable.open(rows_table).count() == 100_000  # from the index alone: the footer is not read
    with pytest.raises(CarbonFormatError, match="footer lists blocklet 1 column 0 at offset"):
        CarbonDataFile(f)


def test_footer_repeating_its_blocklet_200000_times_fails_fast_in_bounded_memory(rows_table):
    # before: 4.1 GB peak RSS after 130 s, killed by a watchdog
    f = _data_file(rows_table)

    def repeated(footer):
        footer.blocklet_info_list3 = footer.blocklet_info_list3 * 200_000
        footer.blocklet_index_list = footer.blocklet_index_list * 200_000
        footer.num_rows *= 200_000

    _rewrite_footer(f, repeated)
    t0 = time.monotonic()
    out = _bounded_read(rows_table, 2048)
    assert out.startswith("CarbonFormatError") and "footer declares 200000 blocklets" in out, out
    assert os.path.basename(f) in out
    assert time.monotonic() - t0 < 60


def _chunk_with_pages(path: str, pages: int) -> None:
    """Give the first column chunk of the data file at ``path`` ``pages`` copies of its page header (each
    claiming its page's rows), offsets of the later chunks and the footer moved to match."""
    from carbon_ds.format.thrift.structs import DataChunk3, FileFooter3

    data = open(path, "rb").read()
    at = int.from_bytes(data[-8:], "big")
    footer, _ = FileFooter3.from_bytes(data[at:-8])
    info = footer.blocklet_info_list3[0]
    start, hlen = info.column_data_chunks_offsets[0], info.column_data_chunks_length[0]
    chunk, _ = DataChunk3.from_bytes(data[start:start + hlen])
    chunk.data_chunk_list = chunk.data_chunk_list[:1] * pages
    chunk.page_offset = [0] * pages
    chunk.page_length = chunk.page_length[:1] * pages
    new = chunk.to_bytes()
    delta = len(new) - hlen
    for b in footer.blocklet_info_list3:
        b.column_data_chunks_offsets = [o + delta if o > start else o for o in b.column_data_chunks_offsets]
    info.column_data_chunks_length[0] = len(new)
    body = data[:start] + new + data[start + hlen:at]
    open(path, "wb").write(body + footer.to_bytes() + (at + delta).to_bytes(8, "big"))


def test_column_chunk_listing_200000_page_headers_fails_fast_in_bounded_memory(rows_table):
    # before: read_table reached 2.7 GB and a numpy MemoryError (the chunk's buffer sized for every page)
    f = _data_file(rows_table)
    _chunk_with_pages(f, 200_000)
    out = _bounded_read(rows_table, 2048)  # the table: its index records where the footer was
    assert out.startswith("CarbonFormatError") and "the index records a file of" in out, out
    out = _bounded_read(f, 2048)  # the file alone
    assert out.startswith("CarbonFormatError"), out
    assert "200000 page headers, the footer says" in out and os.path.basename(f) in out


def test_page_rows_beyond_the_blocklet_are_refused_before_decoding(rows_table):
    f = _data_file(rows_table)
    _chunk_with_pages(f, 4)  # as many pages as the footer says could hold, each claiming 32,000 rows

    def four_pages(footer):
        footer.blocklet_info_list3[0].number_number_of_pages = 4
        footer.blocklet_info_list3[0].row_count_in_page = [32000, 32000, 32000, 4000]

    _rewrite_footer(f, four_pages)
    out = _bounded_read(f, 2048)
    assert out.startswith("CarbonFormatError"), out
    assert "holds 32000 rows, but only 4000" in out and os.path.basename(f) in out


# ------------------------------------------------------------------ names from metadata that lead out of the table
def _status(table: str) -> list:
    import json

    return json.load(open(os.path.join(table, "Metadata", "tablestatus")))


def _write_status(table: str, entries: list) -> None:
    import json

    open(os.path.join(table, "Metadata", "tablestatus"), "w").write(json.dumps(entries))


def test_traversing_load_name_is_refused_by_reads_compaction_and_clean_files(tmp_path):
    # before: a loadName "0/../../../../outside/victim_seg" without a segment file read another folder's
    # rows as the table's; compaction then wrote segment "0/../../../..1" and CLEAN FILES lost rows
    victim = tmp_path / "outside" / "victim_seg"
    write_table(pa.table({"alpha": pa.array([100, 200], pa.int64()), "sname": ["p", "q"]}), str(tmp_path / "v"))
    victim.parent.mkdir()
    os.rename(glob.glob(str(tmp_path / "v" / "Fact" / "Part0" / "Segment_0"))[0], victim)
    path = str(tmp_path / "deep" / "a" / "b" / "t")
    for i in range(2):
        write_table(pa.table({"alpha": pa.array([i], pa.int64()), "sname": [f"r{i}"]}), path)
    entries = _status(path)
    bad = dict(entries[0], loadName="0/../../../../../outside/victim_seg")
    bad.pop("segmentFile", None)
    _write_status(path, entries + [bad])
    before = set(os.listdir(victim))
    for op in (lambda: read_table(path), lambda: CarbonTable.open(path).count(),
               lambda: CarbonTable.open(path).compact("major"), lambda: CarbonTable.open(path).clean_files()):
        with pytest.raises(CarbonFormatError, match="loadName '0/../../../../../outside/victim_seg': expected a plain"):
            op()
    assert set(os.listdir(victim)) == before
    _write_status(path, entries)  # the damage undone, every row is still there
    assert sorted(read_table(path).column("alpha").to_pylist()) == [0, 1]


def test_relative_segment_folder_leading_out_of_the_table_is_refused(table):
    import json

    [seg] = glob.glob(os.path.join(table, "Metadata", "segments", "*.segment"))
    doc = json.load(open(seg))
    key = next(iter(doc["locationMap"]))
    doc["locationMap"] = {"/Fact/Part0/../../../outside": doc["locationMap"][key]}
    open(seg, "w").write(json.dumps(doc))
    with pytest.raises(CarbonFormatError, match="leads out of it") as e:
        read_table(table)
    assert os.path.basename(seg) in str(e.value)


def test_symlinked_lock_folder_is_refused_and_nothing_outside_is_touched(table, tmp_path):
    # before: LockFiles as a link to an outside folder let an append create and delete lock files there
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "tablestatus.lock").write_text('{"owner": "x", "time": 0}')  # stale by age: would be broken
    locks = os.path.join(table, "LockFiles")
    if os.path.isdir(locks):
        os.rmdir(locks)
    os.symlink(outside, locks)
    with pytest.raises(CarbonTableError, match="LockFiles resolves to .*outside the table"):
        write_table(pa.table({"alpha": pa.array([9], pa.int64()), "sname": ["n"]}), table)
    with pytest.raises(CarbonTableError, match="outside the table"):
        CarbonTable.open(table).delete("alpha = 1")
    assert os.listdir(outside) == ["tablestatus.lock"]
    assert read_table(table).num_rows == 3  # reads take no lock


def test_symlinked_metadata_folder_is_not_written_through(table, tmp_path):
    import shutil

    meta = os.path.join(table, "Metadata")
    moved = tmp_path / "meta_elsewhere"
    shutil.move(meta, moved)
    os.symlink(moved, meta)
    before = sorted(os.listdir(moved))
    with pytest.raises(CarbonTableError, match="Metadata resolves to .*outside the table"):
        write_table(pa.table({"alpha": pa.array([9], pa.int64()), "sname": ["n"]}), table)
    assert sorted(os.listdir(moved)) == before


# ------------------------------------------------------------------ delete deltas
def _delta_table(tmp_path) -> tuple[str, str, str]:
    path = str(tmp_path / "d")
    write_table(pa.table({"alpha": pa.array(range(10), pa.int64()), "sname": [f"v{i}" for i in range(10)]}), path)
    CarbonTable.open(path).delete("alpha IN (2, 5)")
    [delta] = glob.glob(os.path.join(path, "Fact", "Part0", "Segment_0", "*.deletedelta"))
    [status] = glob.glob(os.path.join(path, "Metadata", "tableupdatestatus-*"))
    return path, delta, status


def _edit_json(path: str, change) -> None:
    import json

    doc = json.load(open(path))
    doc = change(doc) or doc
    open(path, "w").write(json.dumps(doc))


READS = {
    "plain": lambda p: read_table(p),
    "filter": lambda p: read_table(p, filter="alpha >= 0"),
    "count": lambda p: CarbonTable.open(p).count(),
    "count_filter": lambda p: CarbonTable.open(p).count("alpha >= 0"),
    "scan": lambda p: list(CarbonTable.open(p).scan().to_batches()),
}


@pytest.mark.parametrize("route", sorted(READS))
@pytest.mark.parametrize("rows, found", [([2, 10], "row 10 of page 0 of blocklet 0, a page of 10 rows"),
                                         ([2, 2**63], "not the expected JSON"),
                                         ([-1], "none may be negative")])
def test_delete_delta_rows_the_file_does_not_hold_are_refused(tmp_path, route, rows, found):
    # before: row 10 of a 10-row page was ignored (the deleted row came back), 2**63 a bare OverflowError
    path, delta, _status_file = _delta_table(tmp_path)

    def set_rows(doc):
        next(iter(doc["blockletDetailsMap"].values()))["deletedRows"] = rows

    _edit_json(delta, set_rows)
    with pytest.raises(CarbonFormatError, match=re.escape(found)) as e:
        READS[route](path)
    assert os.path.basename(delta) in str(e.value)


def test_null_update_status_entry_is_a_format_error(tmp_path):
    # before: a bare AttributeError
    path, _delta, status = _delta_table(tmp_path)
    _edit_json(status, lambda doc: doc + [None])
    with pytest.raises(CarbonFormatError, match="tableupdatestatus entry must be a JSON object") as e:
        read_table(path)
    assert os.path.basename(status) in str(e.value)


def test_update_status_naming_a_block_the_segment_lacks_is_refused(tmp_path):
    # a damaged block name would leave the deleted rows in the table without a word
    path, _delta, status = _delta_table(tmp_path)

    def rename(doc):
        doc[0]["actualBlockName"] = "part-0-9_batchno0-0-0-1.snappy.carbondata"

    _edit_json(status, rename)
    for read in READS.values():
        with pytest.raises(CarbonFormatError, match="holds no such data file") as e:
            read(path)
        assert os.path.basename(status) in str(e.value)


# ------------------------------------------------------------------ records that contradict each other
def test_deleted_row_total_of_the_update_status_is_checked_against_the_delta(tmp_path):
    # a delta that lost an entry (here: one of its two rows) brought a deleted row back without a word
    path, delta, status = _delta_table(tmp_path)

    def one_row(doc):
        next(iter(doc["blockletDetailsMap"].values()))["deletedRows"] = [2]

    _edit_json(delta, one_row)
    for read in READS.values():
        with pytest.raises(CarbonFormatError, match="records 2 deleted rows of .* delete 1") as e:
            read(path)
        assert os.path.basename(delta) in str(e.value) and os.path.basename(status) in str(e.value)


def test_update_status_moving_a_block_to_another_segment_is_refused(tmp_path):
    path, _delta, status = _delta_table(tmp_path)
    write_table(pa.table({"alpha": pa.array([50], pa.int64()), "sname": ["x"]}), path)
    _edit_json(status, lambda doc: doc[0].update(segmentName="1"))
    with pytest.raises(CarbonFormatError, match="the table holds that block in segment 0") as e:
        read_table(path)
    assert os.path.basename(status) in str(e.value)


@pytest.mark.parametrize("change, found", [
    (lambda e: e[0].update(loadStatus="Succes"), "has loadStatus 'Succes', expected one of"),
    (lambda e: e.append(dict(e[0])), "lists segment '0' more than once"),
    (lambda e: e[0].update(loadName="1"), "names segment file .*which belongs to segment '0'"),
])
def test_tablestatus_entries_that_cannot_be_right_are_refused(table, change, found):
    entries = _status(table)
    change(entries)
    _write_status(table, entries)
    with pytest.raises((CarbonFormatError, CarbonTableError), match=found) as e:
        read_table(table)
    assert "tablestatus" in str(e.value)


def test_updates_recorded_without_an_update_status_file_are_refused(tmp_path):
    path, _delta, _status_file = _delta_table(tmp_path)
    entries = _status(path)
    for e in entries:
        e.pop("updateStatusFileName")
    _write_status(path, entries)
    with pytest.raises(CarbonFormatError, match="names no update status file"):
        read_table(path)


def test_segment_file_listing_nothing_for_a_load_of_data_is_refused(table):
    import json

    [seg] = glob.glob(os.path.join(table, "Metadata", "segments", "*.segment"))
    doc = json.load(open(seg))
    for details in doc["locationMap"].values():
        details["files"] = []
    open(seg, "w").write(json.dumps(doc))
    with pytest.raises(CarbonFormatError, match="lists no data file for segment 0, whose tablestatus entry records"):
        read_table(table)


def test_page_statistics_disagreeing_with_the_footer_are_refused_before_pruning(rows_table):
    """A page whose stored max is lowered would be pruned from a filter it matches: the footer's blocklet
    max (its pages' merged) shows the difference first."""
    from carbon_ds.format.thrift.structs import DataChunk3, FileFooter3

    f = _data_file(rows_table)
    data = open(f, "rb").read()
    at = int.from_bytes(data[-8:], "big")
    footer, _ = FileFooter3.from_bytes(data[at:-8])
    info = footer.blocklet_info_list3[0]
    with CarbonDataFile(f) as cf:
        c = [col.column_name for col in cf.columns].index("id")
    start, hlen = info.column_data_chunks_offsets[c], info.column_data_chunks_length[c]
    chunk, _ = DataChunk3.from_bytes(data[start:start + hlen])
    assert len(chunk.data_chunk_list) == 4  # pages of 32,000 rows
    last = chunk.data_chunk_list[-1].min_max
    first = chunk.data_chunk_list[0].min_max
    last.min_values, last.max_values = list(first.min_values), list(first.max_values)  # claims page 0's range
    new = chunk.to_bytes()
    assert len(new) == hlen
    open(f, "wb").write(data[:start] + new + data[start + hlen:])
    for filtered in (lambda: read_table(rows_table, filter="id >= 99990"),
                     lambda: CarbonTable.open(rows_table).count("id >= 99990")):
        with pytest.raises(CarbonFormatError, match="column 'id' of blocklet 0: its pages' max is 95999, the "
                                                    "footer's 99999") as e:
            filtered()  # before: the last page was pruned, 0 rows
        assert os.path.basename(f) in str(e.value)
