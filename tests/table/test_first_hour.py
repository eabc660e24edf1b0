"""What a new user hits in the first hour: misspelt table properties and ADD SEGMENT options are errors that
list the valid names (CarbonData's documented TBLPROPERTIES, ddl-of-carbondata.md), never silently kept."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.csv as pcsv
import pytest

import carbon_ds
from carbon_ds import CarbonTable
from carbon_ds.errors import CarbonOptionError


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
