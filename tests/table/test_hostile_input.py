"""Hostile input ends in carbon_ds.errors types that name the file, column or value: deep filter trees
(built in Python or pushed by Spark), a data file whose header names a column the table lacks, damaged
metadata text, a file the metadata points at that is gone."""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pytest

from carbon_ds.api import read_table, write_table
from carbon_ds.errors import CarbonFormatError, CarbonMissingFileError, CarbonOptionError, CarbonSchemaError
from carbon_ds.expressions import And, Compare, Not, Or
from carbon_ds.expressions.spark import from_spark_filter
from carbon_ds.expressions.tree import MAX_TREE_DEPTH, depth
from carbon_ds.readers.carbondata import CarbonDataFile
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
