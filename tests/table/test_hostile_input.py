"""Hostile input ends in carbon_ds.errors types that name the file, column or value: deep filter trees
(built in Python or pushed by Spark), a data file whose header names a column the table lacks, damaged
metadata text, a file the metadata points at that is gone."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import pyarrow as pa
import pytest

from carbon_ds.api import read_table, write_table
from carbon_ds.errors import CarbonFormatError, CarbonMissingFileError, CarbonOptionError, CarbonSchemaError
from carbon_ds.expressions import And, Compare, Not, Or
from carbon_ds.expressions.spark import from_spark_filter
from carbon_ds.expressions.tree import MAX_TREE_DEPTH, depth
from carbon_ds.format.arrow_types import MAX_NESTING, nest
from carbon_ds.format.structs import MAX_COLUMNS, ColumnSchema, DataType, TableInfo
from carbon_ds.readers.carbon_file import CarbonDataFile
from carbon_ds.table.meta.schema_file import MAX_SCHEMA_BYTES
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
