"""What a new user hits in the first hour: misspelt table properties and ADD SEGMENT options are errors that
list the valid names (CarbonData's documented TBLPROPERTIES, ddl-of-carbondata.md), never silently kept."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.csv as pcsv
import pytest

import carbon_ds
from carbon_ds import CarbonTable
from carbon_ds.ddl import parser as p
from carbon_ds.errors import CarbonFormatError, CarbonOptionError


def test_misspelt_table_property_is_refused(tmp_path):
    schema = pa.schema([("vin", pa.string()), ("speed", pa.float64())])
    with pytest.raises(CarbonOptionError, match=r"unknown table property 'sort_column' .* valid: .*sort_columns"):
        CarbonTable.create(str(tmp_path / "t"), schema, properties={"sort_column": "vin"})
    assert not (tmp_path / "t" / "Metadata").exists()
    t = CarbonTable.create(str(tmp_path / "u"), schema, properties={"SORT_COLUMNS": "vin", "default.value.speed": "0"})
    assert t.schema.names == ["vin", "speed"]


def test_misspelt_add_segment_option_is_refused(tmp_path):
    table = str(tmp_path / "t")
    carbon_ds.write_table(pa.table({"a": pa.array([1], pa.int64()), "b": ["x"]}), table)
    folder = tmp_path / "csv"
    folder.mkdir()
    pcsv.write_csv(pa.table({"a": [2], "b": ["y"]}), folder / "part.csv",
                   pcsv.WriteOptions(delimiter=";"))
    t = CarbonTable.open(table)
    with pytest.raises(CarbonOptionError, match=r"unknown option\(s\) delimter .* valid: .*delimiter"):
        t.add_segment(str(folder), format="csv", options={"delimter": ";"})
    assert len(t.segments()) == 1
    t.add_segment(str(folder), format="csv", options={"delimiter": ";"})
    assert sorted(carbon_ds.read_table(table)["a"].to_pylist()) == [1, 2]


def test_alter_table_add_column_singular_is_ours():
    # Spark's grammar takes ADD COLUMN and ADD COLUMNS alike; both must reach our ALTER, not Spark's "is a view"
    one = p.parse("ALTER TABLE t ADD COLUMN (x INT)")
    assert one == p.AlterSchema(p.TableName(None, "t"), "add", columns=[("x", "INT")])
    assert p.parse("alter table t add columns (x int)").columns == [("x", "int")]


def test_a_truncated_data_file_is_called_truncated(tmp_path):
    path = tmp_path / "t"
    carbon_ds.write_table(pa.table({"s": [f"value {i}" for i in range(2000)]}), str(path))
    data = next(path.rglob("*.carbondata"))
    whole = data.read_bytes()
    cut = whole[: len(whole) // 2]
    # CarbonData V3 (CarbonFooterReaderV3): the last 8 bytes are the footer's offset, which the cut removes
    tail = int.from_bytes(cut[-8:], "big", signed=True)
    assert not 0 < tail < len(cut) - 8
    data.write_bytes(cut)
    with pytest.raises(CarbonFormatError, match=rf"truncated .*found {tail}; the file is {len(cut)} bytes"):
        carbon_ds.read_table(str(path))
