"""Tables without Spark: create/open, the write protocol, planning and reads."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import carbon_ds.api as api
from carbon_ds import progress
from carbon_ds.errors import CarbonOptionError, CarbonSchemaError, CarbonTableError
from carbon_ds.table import CarbonTable
from carbon_ds.table.loads.start import start_load
from carbon_ds.table.meta.options import parse_write


def _data(start: int, n: int) -> pa.Table:
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table(
        {
            "id": ids,
            "name": pc.cast(pc.multiply(ids, 7), pa.string()),
            "score": pc.divide(pc.cast(ids, pa.float64()), 3.0),
        }
    )


def _status(path) -> list[dict]:
    return json.loads((path / "Metadata" / "tablestatus").read_text())


def test_appends_make_segments_and_read_back(tmp_path):
    path = tmp_path / "t"
    for i in range(3):
        assert api.write_table(_data(i * 100, 100), path) == str(i)
    t = CarbonTable.open(path)
    assert t.schema == _data(0, 1).schema
    segs = t.segments()
    assert [(s.id, s.status, s.readable) for s in segs] == [(str(i), "Success", True) for i in range(3)]
    assert all(s.data_size > 0 and s.index_size > 0 and s.load_end >= s.load_start for s in segs)
    assert all(s.segment_file == f"{s.id}_{s.load_end}.segment" for s in segs)
    raw = _status(path)[0]
    assert set(raw) == {
        "timestamp",
        "loadStatus",
        "loadName",
        "dataSize",
        "indexSize",
        "loadStartTime",
        "visibility",
        "segmentFile",
    }
    assert all((path / "Fact" / "Part0" / f"Segment_{i}").is_dir() for i in range(3))
    assert len(t.files()) == 3
    got = api.read_table(path).sort_by("id")
    assert got.equals(pa.concat_tables([_data(0, 100), _data(100, 100), _data(200, 100)]))
    # segments, columns (any case), filter
    assert api.read_table(path, segments="0,2").num_rows == 200
    assert api.read_table(path, segments=["1"]).column("id").to_pylist() == list(range(100, 200))
    assert api.read_table(path, columns=["NAME", "Id"]).schema.names == ["name", "id"]
    assert api.read_table(path, columns=["id"], filter="id >= 250 and score > 0").num_rows == 50
    with pytest.raises(CarbonOptionError, match="segments 7 are not readable.*readable segments: 0, 1, 2"):
        api.read_table(path, segments="7")
    with pytest.raises(CarbonSchemaError, match="'nope' not in table"):
        api.read_table(path, columns=["nope"])


def test_overwrite_marks_old_segments_in_the_same_write(tmp_path):
    path = tmp_path / "t"
    api.write_table(_data(0, 10), path)
    api.write_table(_data(10, 10), path)
    api.write_table(_data(100, 5), path, mode="overwrite")
    status = [(e["loadName"], e["loadStatus"]) for e in _status(path)]
    assert status == [("0", "Marked for Delete"), ("1", "Marked for Delete"), ("2", "Success")]
    assert all("modificationOrDeletionTimestamp" in e for e in _status(path)[:2])
    assert api.read_table(path).equals(_data(100, 5))
    api.write_table(_data(200, 5), path)
    assert api.read_table(path).num_rows == 10


def test_sort_columns_and_table_properties(tmp_path):
    path = tmp_path / "t"
    data = _data(0, 50).take(pa.array(list(range(49, -1, -1))))
    api.write_table(data, path, SORT_COLUMNS="name", compressor="zstd", table_blocksize="256")
    t = CarbonTable.open(path)
    assert t.sort_columns == ["name"]
    assert t.properties["table_blocksize"] == "256"
    assert t.properties["sort_scope"] == "local_sort"
    names = api.read_table(path).column("name").to_pylist()
    assert names == sorted(names)
    with pytest.raises(CarbonOptionError, match="sort_columns='id' differs from table"):
        api.write_table(data, path, sort_columns="id")


def test_options_are_checked():
    with pytest.raises(CarbonOptionError, match="unknown option 'colour'; valid options: .*sort_columns"):
        parse_write({"colour": "red"})
    with pytest.raises(CarbonOptionError, match="'compressor' must be one of snappy, zstd, gzip, found 'lz4'"):
        parse_write({"compressor": "lz4"})
    with pytest.raises(CarbonOptionError, match="'table_blocksize' must be a positive integer, found 'big'"):
        parse_write({"table_blocksize": "big"})
    assert parse_write({"path": "/x", "Local_Dictionary_Enable": "FALSE"}).local_dictionary_enable is False
    with pytest.raises(CarbonOptionError, match="mode must be one of append, overwrite"):
        api.write_table(_data(0, 1), "/nonexistent", mode="ignore")


def test_schema_mismatch_names_every_column(tmp_path):
    path = tmp_path / "t"
    api.write_table(_data(0, 3), path)
    bad = pa.table({"ID": pa.array([1.0], pa.float64()), "name": ["x"], "extra": [1.5]})
    with pytest.raises(CarbonSchemaError) as e:
        api.write_table(bad, path)
    msg = str(e.value)
    assert "column 'id': expected int64, found double" in msg
    assert "column 'score': expected double, found no such column" in msg
    assert "column 'extra': not in the table, found double" in msg
    assert str(path) in msg
    # names match case-insensitively, order may differ, large_string is fine
    ok = pa.table({"SCORE": [1.0], "Name": pa.array(["a"], pa.large_string()), "id": pa.array([9], pa.int64())})
    api.write_table(ok, path)
    assert api.read_table(path).num_rows == 4


def test_in_progress_and_aborted_loads_are_invisible(tmp_path):
    path = tmp_path / "t"
    api.write_table(_data(0, 10), path)
    t = CarbonTable.open(path)
    pending = start_load(t)
    pending.write_task(0, [_data(10, 10)])
    assert [s.status for s in t.segments()] == ["Success", "In Progress"]
    assert api.read_table(path).num_rows == 10  # its files exist but are not read
    failed = start_load(t)
    failed.write_task(0, [_data(20, 10)])
    failed.abort()
    assert [s.status for s in t.segments()] == ["Success", "In Progress", "Failure"]
    assert not (path / "Fact" / "Part0" / "Segment_2").exists()
    assert api.write_table(_data(30, 10), path) == "3"
    with pytest.raises(CarbonTableError, match="expected it 'In Progress', found status 'Failure'"):
        failed.commit([])
    assert api.read_table(path).num_rows == 20


def test_files_of_failed_task_attempts_are_not_read(tmp_path):
    path = tmp_path / "t"
    api.write_table(_data(0, 1), path)
    t = CarbonTable.open(path)
    res = start_load(t)
    res.write_task(11, [_data(100, 5)])  # an attempt whose result never reached commit
    kept = res.write_task(1, [_data(200, 5)])
    res.commit([kept, None])
    assert api.read_table(path, segments="1").column("id").to_pylist() == list(range(200, 205))


def test_create_and_open_errors(tmp_path):
    schema = pa.schema([("a", pa.int32())])
    t = CarbonTable.create(tmp_path / "t", schema, sort_columns=["a"])
    assert t.segments() == [] and t.to_arrow().schema == schema and t.files() == []
    with pytest.raises(CarbonTableError, match="table already exists"):
        CarbonTable.create(tmp_path / "t", schema)
    with pytest.raises(CarbonTableError, match="not a CarbonData table: .*missing does not exist "
                                               r"\(expected a table folder holding .*missing/Metadata/schema\)"):
        CarbonTable.open(tmp_path / "missing")
    with pytest.raises(CarbonSchemaError, match="partition column 'nope' is not a table column"):
        CarbonTable.create(tmp_path / "p", schema, partition_by=["nope"])


def test_real_carbondata_1_1_table(corpus):
    from carbon_ds.readers.carbon_file import CarbonDataFile

    path = corpus / "table-1.1-global-dictionary"
    t = CarbonTable.open(path)
    assert t.schema.names == ["id", "date", "country", "name", "phonetype", "serialname", "salary"]
    (seg,) = t.segments()
    assert (seg.id, seg.status, seg.file_format, seg.segment_file) == ("0", "Success", "columnar_v3", None)
    files = t.files()
    assert [f.path.rsplit("/", 1)[-1] for f in files] == ["part-0-0_batchno0-0-1492585716607.carbondata"]
    assert sum(CarbonDataFile(f.path).num_rows for f in files) == 10
    nums = api.read_table(path, columns=["id", "salary"])
    assert nums.num_rows == 10 and nums.schema.types == [pa.int32(), pa.int32()]


def test_bare_sdk_folder(corpus):
    got = api.read_table(corpus / "sdk-1.3-name-age-b", columns=["age"])
    assert got.num_rows == 200
    with pytest.raises(CarbonOptionError, match="has no Metadata/tablestatus"):
        api.read_table(corpus / "sdk-1.3-name-age-b", segments="0")


def test_read_table_says_what_is_wrong_with_the_path(tmp_path):
    import pyarrow.parquet as pq

    with pytest.raises(CarbonTableError, match="does not exist"):
        api.read_table(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CarbonTableError, match="is an empty folder"):
        api.read_table(tmp_path / "empty")
    (tmp_path / "pq").mkdir()
    pq.write_table(pa.table({"a": [1]}), tmp_path / "pq" / "x.parquet")
    with pytest.raises(CarbonTableError, match=r"found 1 \.parquet.*add_segment\(.*format='parquet'\)"):
        api.read_table(tmp_path / "pq")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(CarbonTableError, match="is a file but not a .carbondata file"):
        api.read_table(tmp_path / "notes.txt")


def test_read_table_of_one_data_file_and_columns_as_a_string(tmp_path):
    path = tmp_path / "t"
    api.write_table(_data(0, 7), path)
    one = next((path / "Fact" / "Part0" / "Segment_0").glob("*.carbondata"))
    assert api.read_table(one).equals(api.read_table(path))
    from carbon_ds.errors import CarbonOptionError

    with pytest.raises(CarbonOptionError, match=r"write columns=\['id'\]"):
        api.read_table(path, columns="id")


def test_every_timestamp_unit_is_floored_to_the_millisecond(tmp_path):
    import datetime as dt

    ns = pa.array([1_637_668_800_123_456_789, -1], pa.timestamp("ns"))  # pandas' default unit
    us = pa.array([1_637_668_800_123_456, -1], pa.timestamp("us", "UTC"))
    for name, arr in (("ns", ns), ("us", us)):
        path = tmp_path / name
        api.write_table(pa.table({"ts": arr}), path)
        got = api.read_table(path).column("ts").to_pylist()
        utc = dt.UTC
        assert got == [dt.datetime(2021, 11, 23, 12, 0, 0, 123000, tzinfo=utc),
                       dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=utc)], name


def test_append_accepts_the_documented_widenings(tmp_path):
    path = tmp_path / "t"
    api.write_table(pa.table({"n": pa.array([1], pa.int64()), "x": pa.array([1.5], pa.float64())}), path)
    api.write_table(pa.table({"n": pa.array([2], pa.int32()), "x": pa.array([2.5], pa.float32())}), path)
    got = api.read_table(path)
    assert got.schema.field("n").type == pa.int64() and got.column("n").to_pylist() == [1, 2]
    assert got.column("x").to_pylist() == [1.5, 2.5]
    with pytest.raises(CarbonSchemaError, match="column 'n': expected int64, found string"):
        api.write_table(pa.table({"n": ["3"], "x": [1.0]}), path)


def test_write_option_errors_list_only_write_options(tmp_path):
    from carbon_ds.errors import CarbonOptionError

    with pytest.raises(CarbonOptionError, match=r"unknown write option 'filter' \(a read option\)") as e:
        api.write_table(_data(0, 1), tmp_path / "t", filter="id > 1")
    assert "segments" not in str(e.value) and "sort_columns" in str(e.value)


def test_spark_entry_points_without_pyspark_say_how_to_install(tmp_path):
    import subprocess
    import sys

    code = ("import sys; sys.modules['pyspark'] = None\nimport carbon_ds\n"
            "try:\n    carbon_ds.register\nexcept carbon_ds.CarbonDependencyError as e:\n    print('MSG', e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "MSG carbon_ds.register needs pyspark, which is not installed: pip install 'carbon-ds[spark]'" in r.stdout, (
        r.stderr[-2000:])


def test_progress_bars_show_when_asked_and_stay_quiet_otherwise(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CARBON_DS_PROGRESS", "1")
    api.write_table(_data(0, 50), tmp_path / "a")
    assert "writing" in capsys.readouterr().err
    monkeypatch.setenv("CARBON_DS_PROGRESS", "0")
    api.write_table(_data(0, 50), tmp_path / "b")
    assert capsys.readouterr().err == ""
    monkeypatch.delenv("CARBON_DS_PROGRESS")
    api.write_table(_data(0, 50), tmp_path / "c")  # not a terminal: quiet
    assert capsys.readouterr().err == ""


def test_repr_segment_times_and_explain_text_are_readable(tmp_path):
    import datetime as dt

    path = tmp_path / "t"
    api.write_table(_data(0, 10), path, sort_columns="id")
    t = CarbonTable.open(path)
    text = repr(t)
    assert str(path) in text and "id: int64" in text and "1 readable segment(s) of 1" in text
    assert "10 rows" in text and "sort_columns=['id']" in text
    seg = t.segments()[0]
    assert isinstance(seg.load_start_time, dt.datetime) and seg.load_start_time.tzinfo is not None
    assert abs(seg.load_start_time.timestamp() * 1000 - seg.load_start) < 1
    report = api.explain(path, "id = 3")
    assert report["rows"]["total"] == 10 and str(report).splitlines()[0] == f"table: {path}"
    assert "blocklets  read" in str(report)


def test_the_write_bar_moves_while_one_large_batch_is_written(tmp_path, monkeypatch):
    """One Arrow table is one batch: the bar counts rows as the writer encodes its pages (32,000 rows each,
    CarbonData's default page size), not once when the whole batch is done."""
    seen: list[tuple[int, int | None]] = []

    class Recording(progress.tqdm):
        def update(self, n=1):
            seen.append((n, self.total))
            return super().update(n)

    monkeypatch.setattr(progress, "tqdm", Recording)
    monkeypatch.setenv("CARBON_DS_PROGRESS", "1")
    rows = 100_000
    api.write_table(pa.table({"id": pa.array(range(rows), pa.int64())}), tmp_path / "t")
    assert [n for n, _t in seen] == [32_000, 32_000, 32_000, 4_000]
    assert {t for _n, t in seen} == {rows}  # the bar knows the total: a percentage, not just a count


def test_the_write_bar_says_when_it_sorts(tmp_path, monkeypatch):
    """A load with sort columns sorts before it writes a row: the bar says so while it sorts, and only then."""
    said: list[tuple[str, int]] = []

    class Recording(progress.tqdm):
        def set_postfix_str(self, s="", refresh=True):
            said.append((s, self.n))
            return super().set_postfix_str(s, refresh)

    monkeypatch.setattr(progress, "tqdm", Recording)
    monkeypatch.setenv("CARBON_DS_PROGRESS", "1")
    rows = pa.table({"k": pa.array([(i * 7919) % 1000 for i in range(1000)], pa.int64())})
    api.write_table(rows, tmp_path / "sorted", sort_columns="k")
    assert said == [("sorting 1,000 rows by k", 0), ("", 0)]
    said.clear()
    api.write_table(rows, tmp_path / "unsorted")
    assert said == []
