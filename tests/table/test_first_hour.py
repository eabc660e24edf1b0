"""What a new user hits in the first hour: misspelt table properties and ADD SEGMENT options are errors that
list the valid names (CarbonData's documented TBLPROPERTIES, ddl-of-carbondata.md), never silently kept."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest

import carbon_ds
from carbon_ds import CarbonTable
from carbon_ds.ddl import statement_parser as p
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


def test_hive_folders_on_an_unpartitioned_table_hint_at_partitioned_by(tmp_path):
    schema = pa.schema([("vin", pa.string()), ("speed", pa.float64()), ("day", pa.int32())])
    src = tmp_path / "hive"
    for day in (1, 2):
        (src / f"day={day}").mkdir(parents=True)
        pq.write_table(pa.table({"vin": [f"v{day}"], "speed": [float(day)]}), src / f"day={day}" / "p.parquet")
    flat = CarbonTable.create(str(tmp_path / "flat"), schema)
    with pytest.raises(carbon_ds.CarbonSchemaError) as e:
        flat.add_segment(str(src), format="parquet")
    first = str(e.value).splitlines()[0]
    assert "Hive partition folders" in first and "PARTITIONED BY (day)" in first
    assert "'partition'='day:int'" in first
    # doing what the hint says works
    parted = CarbonTable.create(str(tmp_path / "parted"), schema, partition_by=["day"])
    parted.add_segment(str(src), format="parquet", partition="day:int")
    got = carbon_ds.read_table(str(tmp_path / "parted")).sort_by("vin").to_pylist()
    assert got == [{"vin": "v1", "speed": 1.0, "day": 1}, {"vin": "v2", "speed": 2.0, "day": 2}]


def test_add_segment_with_the_wrong_format_says_the_cause_first(tmp_path):
    schema = pa.schema([("vin", pa.string()), ("speed", pa.float64())])
    t = CarbonTable.create(str(tmp_path / "t"), schema)
    data = pa.table({"vin": ["a", "b"], "speed": [1.0, 2.0]})
    orc = tmp_path / "orc"
    orc.mkdir()
    for i in range(50):
        po.write_table(data, orc / f"f{i:02}.orc")
    with pytest.raises(carbon_ds.CarbonSchemaError) as e:
        t.add_segment(str(orc), format="parquet")
    lines = str(e.value).splitlines()
    assert "expected format 'orc'" in lines[0]
    assert sum(".orc:" in line for line in lines) == 5 and "45 more file(s)" in lines[-1]
    assert len(t.add_segment(str(orc), format="parquet", dry_run=True).bad_files) == 50  # the report keeps all

    # another CarbonData table's folder added as parquet: its own Metadata files are never candidates
    other = tmp_path / "other"
    carbon_ds.write_table(data, str(other))
    with pytest.raises(carbon_ds.CarbonSchemaError) as e:
        t.add_segment(str(other), format="parquet")
    text = str(e.value)
    assert text.splitlines()[0].startswith(f"{other} is a CarbonData table's folder")
    assert "expected format 'carbondata'" in text.splitlines()[0]
    assert "Metadata" not in text.split("\n", 1)[1]
    report = t.add_segment(str(other), format="parquet", dry_run=True)
    assert report.files and not any("/Metadata/" in f.path for f in report.files)
    t.add_segment(str(other), format="carbondata")
    assert carbon_ds.read_table(str(tmp_path / "t")).equals(data)
