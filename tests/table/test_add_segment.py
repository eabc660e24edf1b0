"""ADD SEGMENT of Parquet / ORC / CSV / JSON / carbondata folders: validation, metadata, reads, the seed's
SQL table (seeds/000) on Spark-written partitioned data, and external files surviving DELETE + CLEAN."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest

import carbon_ds
from carbon_ds.errors import CarbonError, CarbonOptionError, CarbonSchemaError, CarbonTableError
from carbon_ds.table.meta.files import segment_file as segfiles
from carbon_ds.table.ops.segments.add import ValidationReport, compactable
from carbon_ds.table.table import CarbonTable

UTC = dt.UTC
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("ts", pa.timestamp("us", tz="UTC"))])
PAR_SCHEMA = pa.schema([("event_time", pa.int64()), ("day", pa.int32()), ("hour", pa.int32()), ("type", pa.int32())])
PART = "day:int,hour:int,type:int"


def _ts(y):
    return dt.datetime(y, 1, 1, tzinfo=UTC)


def _table(tmp_path: Path, name="t", schema=SCHEMA, **kw) -> CarbonTable:
    return CarbonTable.create(str(tmp_path / name), schema, **kw)


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def formats(tmp_path):
    """One folder per format, each holding ids 10.. in its own spelling and (widened) types."""
    root = tmp_path / "src"
    (root / "pq").mkdir(parents=True)
    pq.write_table(pa.table({"ID": pa.array([10, 11], pa.int32()), "Name": ["p", "q"],
                             "ts": pa.array([dt.datetime(2021, 1, 1)] * 2, pa.timestamp("ns"))}),
                   root / "pq" / "a.parquet", row_group_size=1)
    (root / "pq" / "_SUCCESS").write_bytes(b"")
    (root / "orc").mkdir()
    po.write_table(pa.table({"id": [20, 21], "name": ["o", "r"],
                             "ts": pa.array([dt.datetime(2022, 1, 1)] * 2, pa.timestamp("ns"))}),
                   str(root / "orc" / "a.orc"))
    (root / "csv").mkdir()
    (root / "csv" / "a.csv").write_text("id;name;ts\n30;'c;1';23/01/2023 10:00:00\n31;d;\n")
    (root / "json").mkdir()
    (root / "json" / "a.json").write_text('{"id": 40, "name": "j", "ts": "2024-01-01T00:00:00"}\n{"id": 41}\n')
    (root / "mjson").mkdir()
    (root / "mjson" / "a.json").write_text(json.dumps([{"id": 50, "name": "m\nx", "ts": "2025-01-01 00:00:00"}],
                                                      indent=2))
    return root


def test_add_every_format_reads_and_writes_carbondata_metadata(tmp_path, formats):
    carbon_ds.write_table(pa.table({"id": [1, 2], "name": ["a", "b"], "ts": pa.array([_ts(2020)] * 2, SCHEMA[2].type)}),
                          str(tmp_path / "t"))
    t = CarbonTable.open(str(tmp_path / "t"))
    assert t.add_segment(str(formats / "pq"), format="parquet") == ["1"]
    assert t.add_segment(str(formats / "orc"), format="orc") == ["2"]
    csv_opts = {"header": "true", "delimiter": ";", "quote": "'", "timestampformat": "dd/MM/yyyy HH:mm:ss"}
    assert t.add_segment(str(formats / "csv"), format="csv", options=csv_opts) == ["3"]
    assert t.add_segment(str(formats / "json"), format="json") == ["4"]
    assert t.add_segment(str(formats / "mjson"), format="json", options={"multiLine": "true"}) == ["5"]

    got = carbon_ds.read_table(str(tmp_path / "t")).sort_by("id")
    assert got.schema == SCHEMA
    assert got.column("id").to_pylist() == [1, 2, 10, 11, 20, 21, 30, 31, 40, 41, 50]
    assert got.column("name").to_pylist()[6:] == ["c;1", "d", "j", None, "m\nx"]
    assert got.column("ts").to_pylist()[2] == _ts(2021)
    assert got.column("ts").to_pylist()[6] == dt.datetime(2023, 1, 23, 10, tzinfo=UTC)
    assert got.column("ts").to_pylist()[7] is None
    # projection, filter (row-group pruning on parquet), count (no metadata shortcut for csv/json)
    assert carbon_ds.read_table(str(tmp_path / "t"), columns=["NAME"], filter="id = 11").column(0).to_pylist() == ["q"]
    report = carbon_ds.explain(str(tmp_path / "t"), filter="id = 11")
    assert report["blocklets"]["read"] < report["blocklets"]["total"]
    assert t.count() == 11 and t.count("id >= 30") == 5

    details = {d.name: d for d in t.load_details()}
    d = details["1"]
    assert d.file_format == "parquet" and d.path == str(formats / "pq") and d.index_size == "NA"
    assert int(d.data_size) == (formats / "pq" / "a.parquet").stat().st_size
    seg = segfiles.read(t.storage, t.path, d.segment_file)
    [(folder, fd)] = seg.location_map.items()
    assert folder == str(formats / "pq") and fd.files == ["a.parquet"] and fd.is_relative is False
    assert segfiles.read(t.storage, t.path, details["3"].segment_file).options["delimiter"] == ";"
    rows = {r["ID"]: r for r in t.segment_rows()}
    assert rows["2"]["File Format"] == "orc" and rows["2"]["Index Size"] == "NA"
    assert rows["0"]["File Format"] == "columnar_v3"


def test_fastparquet_pyorc_and_int96_files(tmp_path):
    fastparquet = pytest.importorskip("fastparquet")
    pyorc = pytest.importorskip("pyorc")
    import pandas as pd

    src = tmp_path / "fp"
    df = pd.DataFrame({"event_time": [1, 2, 3], "day": [20211123] * 3, "hour": [12] * 3, "type": [0, 1, 1]})
    fastparquet.write(str(src), df, partition_on=["day", "hour", "type"], file_scheme="hive")
    t = _table(tmp_path, schema=PAR_SCHEMA, partition_by=["day", "hour", "type"])
    assert t.add_segment(str(src), "parquet", PART) == ["0", "1"]
    got = carbon_ds.read_table(t.path, filter="type = 1").sort_by("event_time")
    assert got.column("event_time").to_pylist() == [2, 3] and set(got.column("day").to_pylist()) == {20211123}

    leaf = tmp_path / "orcsrc" / "day=20211124" / "hour=1" / "type=2"
    leaf.mkdir(parents=True)
    with open(leaf / "x.orc", "wb") as fh, pyorc.Writer(fh, "struct<event_time:bigint>") as w:
        w.writerows([(7,), (8,)])
    assert t.add_segment(str(leaf), "orc", PART) == ["2"]
    assert sorted(carbon_ds.read_table(t.path, filter="day = 20211124").column("event_time").to_pylist()) == [7, 8]

    ts_table = _table(tmp_path, "t96", pa.schema([("ts", pa.timestamp("us", tz="UTC")), ("f", pa.float64())]))
    (tmp_path / "i96").mkdir()
    pq.write_table(pa.table({"ts": pa.array([dt.datetime(2020, 5, 1)], pa.timestamp("ns")),
                             "f": pa.array([1.5], pa.float32())}),
                   tmp_path / "i96" / "a.parquet", use_deprecated_int96_timestamps=True)
    ts_table.add_segment(str(tmp_path / "i96"), "parquet")
    assert ts_table.to_arrow().to_pylist() == [{"ts": dt.datetime(2020, 5, 1, tzinfo=UTC), "f": 1.5}]


def test_every_file_is_checked_and_dry_run_commits_nothing(tmp_path):
    t = _table(tmp_path)
    src = tmp_path / "bad"
    src.mkdir()
    pq.write_table(pa.table({"id": [1], "name": ["a"], "ts": pa.array([_ts(2020)])}), src / "good.parquet")
    pq.write_table(pa.table({"id": [1.5], "name": ["a"]}), src / "wrong.parquet")
    (src / "broken.parquet").write_bytes(b"not parquet at all")
    report = t.add_segment(str(src), "parquet", dry_run=True)
    assert isinstance(report, ValidationReport) and not report.ok
    by_name = {Path(f.path).name: f for f in report.files}
    assert by_name["good.parquet"].ok
    assert any("missing column(s) ts" in p for p in by_name["wrong.parquet"].problems)
    assert any("column id: expected int64, found double" in p for p in by_name["wrong.parquet"].problems)
    assert any("unreadable" in p for p in by_name["broken.parquet"].problems)
    assert t.load_details() == []
    with pytest.raises(CarbonSchemaError) as e:
        t.add_segment(str(src), "parquet")
    text = str(e.value)
    assert text.startswith("Schema is not same.") and "wrong.parquet" in text and "broken.parquet" in text
    assert "good.parquet" not in text.split("\n", 1)[1]
    assert t.load_details() == []
    # a CSV value that does not parse is found at add time, naming the file
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "x.csv").write_text("id,name,ts\nabc,a,2020-01-01 00:00:00\n")
    with pytest.raises(CarbonSchemaError, match="x.csv"):
        t.add_segment(str(tmp_path / "c"), "csv")


@pytest.mark.parametrize(
    ("text", "options", "where"),
    [
        # an integer column; the blank lines are skipped by the CSV reader but still count as lines
        ("id,name,ts\n1,a,2020-01-01\n\n2,b,2020-01-02\n3x,c,2020-01-03\n4,d,2020-01-04\n", {},
         "row 3 (line 5), column 'id': '3x' does not parse as int64"),
        # no header: rows are lines
        ("1,a,2020-01-01\n2,b,2020-01-32\n", {"header": "false"},
         "row 2 (line 2), column 'ts': '2020-01-32' does not parse as timestamp[us, tz=UTC]"),
        # a timestamp in the format given, named as the user gave it
        ("id;name;ts\n1;a;01/02/2020 00:00:00\n2;b;2020-02-01 00:00:00\n",
         {"delimiter": ";", "timestampformat": "dd/MM/yyyy HH:mm:ss"},
         "row 2 (line 3), column 'ts': '2020-02-01 00:00:00' does not parse as timestamp[us, tz=UTC] in the "
         "format 'dd/MM/yyyy HH:mm:ss'"),
    ],
)
def test_csv_bad_value_names_file_row_line_column_and_value(tmp_path, text, options, where):
    """One bad value among good rows: the error's first line is that value (file, row, line, column), not a
    doubt about the format; the oracle for row and line is the text written here."""
    t = CarbonTable.create(tmp_path / "t", SCHEMA)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "x.csv").write_text(text)
    with pytest.raises(CarbonSchemaError) as e:
        t.add_segment(str(tmp_path / "c"), "csv", options=options)
    first = str(e.value).splitlines()[0]
    assert first == f"a value does not parse as its column's type: {tmp_path / 'c' / 'x.csv'}: {where}"
    assert "is format" not in str(e.value)
    assert t.load_details() == []


def test_json_lines_bad_timestamp_names_file_row_line_column_and_value(tmp_path):
    t = CarbonTable.create(tmp_path / "t", SCHEMA)
    (tmp_path / "j").mkdir()
    (tmp_path / "j" / "x.json").write_text('{"id": 1, "name": "a \\"q\\"", "ts": "2020-01-01T00:00:00"}\n\n'
                                           '{"id": 2, "name": "b", "ts": "yesterday"}\n')
    with pytest.raises(CarbonSchemaError) as e:
        t.add_segment(str(tmp_path / "j"), "json")
    assert str(e.value).splitlines()[0] == (
        f"a value does not parse as its column's type: {tmp_path / 'j' / 'x.json'}: row 2 (line 3), column 'ts': "
        "'yesterday' does not parse as timestamp[us, tz=UTC]")


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"path": ""}, CarbonOptionError, "option 'path' is empty"),
        ({"path": "/no/such/folder"}, CarbonTableError, "does not exist"),
        ({"path": "SRC", "format": "avro"}, CarbonOptionError, "format must be one of"),
        ({"path": "SRC", "partition": "a:int"}, CarbonOptionError, "is not partitioned"),
        ({"path": "EMPTY"}, CarbonSchemaError, "no parquet data files found"),
    ],
)
def test_refusals(tmp_path, kwargs, error, message):
    t = _table(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "empty").mkdir()
    pq.write_table(pa.table({"id": [1], "name": ["a"], "ts": pa.array([_ts(2020)])}), tmp_path / "src" / "a.parquet")
    key = kwargs.pop("path")
    path = {"SRC": str(tmp_path / "src"), "EMPTY": str(tmp_path / "empty")}.get(key, key)
    with pytest.raises(error, match=message):
        t.add_segment(path, **{"format": "parquet", **kwargs})


def test_mixed_table_rules_and_external_files_survive_delete_and_clean(tmp_path, formats):
    carbon_ds.write_table(pa.table({"id": [1], "name": ["a"], "ts": pa.array([_ts(2020)])}), str(tmp_path / "t"))
    t = CarbonTable.open(str(tmp_path / "t"))
    t.require_all_carbondata("DELETE")  # only carbondata: allowed
    before = _digest(formats)
    t.add_segment(str(formats / "pq"), "parquet")
    t.require_all_carbondata("UPDATE")  # Parquet rows take delete deltas (tests/table/test_external_dml.py)
    assert [d.name for d in compactable(t, t.load_details())] == ["0"]
    t.delete_segments(["1"])
    t.clean_files(force=True)
    assert _digest(formats) == before
    # deleted and cleaned: the same path may be added again
    assert t.add_segment(str(formats / "pq"), "parquet") == ["2"]
    t.delete_segments(["2"])
    t.clean_files()
    assert _digest(formats) == before and t.count() == 1


# ---------------------------------------------------------------------------------- seed 000, on Spark data
@pytest.fixture(scope="module")
def hive_folders(spark, tmp_path_factory):
    """log_parquet_par / log_orc_par as Hive writes them: day=20211123/hour=12/type={0,1}, written by Spark."""
    root = tmp_path_factory.mktemp("hive")
    df = spark.createDataFrame([(i, 20211123, 12, i % 2) for i in range(10)], "event_time BIGINT, day INT, hour INT, type INT")
    df.write.partitionBy("day", "hour", "type").parquet(str(root / "log_parquet_par"))
    df.write.partitionBy("day", "hour", "type").orc(str(root / "log_orc_par"))
    return root


def test_seed_000_sql_table(spark, hive_folders, tmp_path):
    """Every row of the seed's table of real ALTER TABLE ... ADD SEGMENT attempts, with CarbonData's words."""
    t = _table(tmp_path, "log_carbon_par", PAR_SCHEMA, partition_by=["day", "hour", "type"])
    par, orc = hive_folders / "log_parquet_par", hive_folders / "log_orc_par"
    leaf = f"{par}/day=20211123/hour=12/type=0"
    before = _digest(hive_folders)

    # rows 1 and 2: whole partitioned folders, one segment per leaf folder
    assert t.add_segment(f"{par}/", format="parquet", partition=PART) == ["0", "1"]
    assert t.add_segment(f"{orc}/", format="orc", partition=PART) == ["2", "3"]
    # rows 3 and 4: the partition option must be 'name:type, ...'
    for bad in ("day=20211123 and hour=12 and type=0", "day=20211123,hour=12,type=0"):
        with pytest.raises(CarbonOptionError) as e:
            t.add_segment(leaf, format="parquet", partition=bad)
        assert str(e.value) == f"invalid partition option: Map(path -> {leaf}, format -> parquet, partition -> {bad})"
    # row 5: no partition option on a partitioned table
    with pytest.raises(CarbonOptionError, match="^partition option is required when adding segment to partition table$"):
        t.add_segment(leaf, format="parquet")
    # row 6: a leaf folder with the option: CarbonData fails; here the leaf is already part of segment 0
    with pytest.raises(CarbonTableError) as e:
        t.add_segment(leaf, format="parquet", partition=PART)
    assert str(e.value) == f"path already exists in table status file, can not add same segment path repeatedly: {leaf}"
    # ... and on a table without it, it works and takes its values from the path
    t2 = _table(tmp_path, "t2", PAR_SCHEMA, partition_by=["day", "hour", "type"])
    assert t2.add_segment(leaf, format="parquet", partition=PART) == ["0"]
    assert set(carbon_ds.read_table(t2.path).column("type").to_pylist()) == {0}
    # partition columns that differ from the table's
    with pytest.raises(CarbonOptionError, match="partitioned by day, hour, type"):
        t2.add_segment(str(orc), format="orc", partition="day:int,hour:int")

    # step 3: SHOW SEGMENTS as in the seed
    rows = {r["ID"]: r for r in t.segment_rows()}
    assert rows["0"]["Partition"] == "{day=20211123,hour=12,type=0}" and rows["0"]["File Format"] == "parquet"
    assert rows["3"]["Partition"] == "{day=20211123,hour=12,type=1}" and rows["3"]["File Format"] == "orc"
    assert all(r["Index Size"] == "NA" for r in rows.values())

    # reads: pure Python, the Spark data source, and the Spark-native union
    assert t.count() == 20 and t.count("type = 1") == 10
    got = carbon_ds.read_table(t.path, filter="type = 0 AND event_time >= 4").sort_by("event_time")
    assert got.column("event_time").to_pylist() == [4, 4, 6, 6, 8, 8]
    df = spark.read.format("carbondata").load(t.path)
    assert df.count() == 20 and df.where("type = 1").count() == 10
    assert sorted(r.event_time for r in df.where("type = 0 and event_time < 3").collect()) == [0, 0, 2, 2]
    if "native" in carbon_ds.read.__code__.co_varnames:
        nat = carbon_ds.read(spark, t.path, filter="type = 1", native=True)
        assert nat.count() == 10 and set(nat.columns) == set(PAR_SCHEMA.names)

    # the SQL statement goes through the same code
    carbon_ds.sql(spark, f"CREATE TABLE seed_add (id BIGINT, name STRING, ts TIMESTAMP) STORED AS carbondata "
                         f"LOCATION '{tmp_path / 'sqlt'}'")
    (tmp_path / "sq").mkdir()
    pq.write_table(pa.table({"id": [1], "name": ["a"], "ts": pa.array([_ts(2020)])}), tmp_path / "sq" / "a.parquet")
    stmt = f"ALTER TABLE seed_add ADD SEGMENT OPTIONS('path'='{tmp_path / 'sq'}', 'format'='parquet')"
    assert [r[0] for r in carbon_ds.sql(spark, stmt).collect()] == ["0"]
    with pytest.raises(CarbonError, match="can not add same segment path repeatedly"):
        carbon_ds.sql(spark, stmt)
    carbon_ds.sql(spark, "DROP TABLE seed_add")

    t.delete_segments(["0", "1", "2", "3"])
    t.clean_files(force=True)
    assert _digest(hive_folders) == before


def test_csv_written_by_pyarrow_with_zone_designators_is_accepted(tmp_path):
    import datetime as dt

    import pyarrow.csv as pcsv

    folder = tmp_path / "csv"
    folder.mkdir()
    stamps = pa.array([1_600_000_000_000_000, 0], pa.timestamp("us", "UTC"))
    pcsv.write_csv(pa.table({"id": pa.array([1, 2], pa.int64()), "ts": stamps}), folder / "x.csv")
    assert "Z" in (folder / "x.csv").read_text()  # pyarrow writes ISO 8601 with a zone designator
    (folder / "y.csv").write_text('"id","ts"\n3,2021-11-23 08:00:00+08:00\n4,2021-11-23 00:00:00\n')
    path = tmp_path / "t"
    carbon_ds.write_table(pa.table({"id": pa.array([0], pa.int64()), "ts": pa.array([0], pa.timestamp("us"))}), path)
    CarbonTable.open(path).add_segment(str(folder), format="csv")
    got = carbon_ds.read_table(path, filter="id > 0").sort_by("id").column("ts").to_pylist()
    utc = dt.UTC
    assert got == [dt.datetime(2020, 9, 13, 12, 26, 40, tzinfo=utc), dt.datetime(1970, 1, 1, tzinfo=utc),
                   dt.datetime(2021, 11, 23, 0, 0, tzinfo=utc), dt.datetime(2021, 11, 23, 0, 0, tzinfo=utc)]
