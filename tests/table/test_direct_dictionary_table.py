"""A table whose TIMESTAMP column holds direct-dictionary keys, as tables created through CarbonData's Spark SQL
store them, read end to end.

The pages are CarbonData's own: the 1.1 corpus table's `date` column is a DICTIONARY + DIRECT_DICTIONARY
dimension with RLE and an inverted index, written by CarbonData 1.1. Its keys are
``DateDirectDictionaryGenerator``'s (days since 1970-01-01 + ``Integer.MAX_VALUE >> 1``) of the dates in
CarbonData's examples/spark/src/main/resources/data.csv. Declaring the column TIMESTAMP in the file header,
the index header and Metadata/schema (one byte each: Thrift compact zigzag 14 -> 12) turns the same keys into
timestamp keys, whose values ``TimeStampDirectDictionaryGenerator.getValueFromSurrogate`` defines as
``(key - 2) * granularity + cutOff`` milliseconds.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

import carbon_ds
from carbon_ds.format.pages import direct_dictionary
from carbon_ds.format.thrift.structs import DataType
from carbon_ds.fs import Storage
from carbon_ds.table.meta.schema import schema_file

SOURCE = Path("/work/shared/compat/carbondata-real/table-1.1-global-dictionary")
for _up in Path(__file__).resolve().parents:
    if (_up / "shared/compat/carbondata-real/table-1.1-global-dictionary").is_dir():
        SOURCE = _up / "shared/compat/carbondata-real/table-1.1-global-dictionary"
        break
if not SOURCE.is_dir():
    pytest.skip(f"CarbonData 1.1 table not found at {SOURCE}", allow_module_level=True)

DATE_KEY_BASE = 1073741823  # Integer.MAX_VALUE >> 1 (DateDirectDictionaryGenerator)
# id -> date of examples/spark/src/main/resources/data.csv (see tests/format/test_global_dictionary.py)
DATES = {1: (2015, 7, 23), 2: (2015, 7, 24), 3: (2015, 7, 25), 4: (2015, 7, 26), 5: (2015, 7, 27),
         6: (2015, 7, 28), 7: (2015, 7, 29), 8: (2015, 7, 30), 9: (2015, 7, 18), 10: (2015, 7, 19)}
DATE_FIELD = b"\x15\x0e\x18\x04date"  # ColumnSchema field 1 data_type = DATE (7), field 2 column_name "date"
TIMESTAMP_FIELD = b"\x15\x0c\x18\x04date"  # the same with TIMESTAMP (6)


def expected(granularity_ms: int = 1000, cutoff_ms: int = 0) -> dict[int, dt.datetime]:
    out = {}
    for i, (y, m, d) in DATES.items():
        key = (dt.date(y, m, d) - dt.date(1970, 1, 1)).days + DATE_KEY_BASE
        ms = (key - 2) * granularity_ms + cutoff_ms
        out[i] = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms)
    return out


@pytest.fixture
def table(tmp_path: Path) -> Path:
    root = tmp_path / "t"
    shutil.copytree(SOURCE, root)
    seg = root / "Fact/Part0/Segment_0"
    for f in list(seg.glob("*.carbondata")) + list(seg.glob("*.carbonindex")):
        data = f.read_bytes()
        assert data.count(DATE_FIELD) == 1
        f.write_bytes(data.replace(DATE_FIELD, TIMESTAMP_FIELD))
    storage = Storage.for_path(str(root))[0]
    path = str(root / "Metadata" / "schema")
    info = schema_file.read(storage, path)
    for c in info.fact_table.table_columns:
        if c.column_name == "date":
            c.data_type = int(DataType.TIMESTAMP)
    schema_file.write(storage, path, info)
    yield root
    direct_dictionary.use(direct_dictionary.DEFAULT)


def read(root: Path) -> dict[int, dt.datetime]:
    t = carbon_ds.read_table(str(root), columns=["id", "date"])
    return dict(zip(t.column("id").to_pylist(), t.column("date").to_pylist(), strict=True))


def test_default_granularity(table: Path):
    got = read(table)
    assert got == expected()
    assert got[1] == dt.datetime(2004, 1, 10, 18, 14, 20, tzinfo=dt.UTC)  # key 1073758462: 1073758460 s


def test_minute_granularity_and_cutoff(table: Path):
    carbon_ds.set_timestamp_keys("MINUTE", "1960-01-01 00:00:00")
    assert read(table) == expected(60_000, -315_619_200_000)


def test_filter_on_the_timestamp_is_exact(table: Path):
    # min/max of direct-dictionary columns hold keys: they must not prune
    want = expected()[3]
    t = carbon_ds.read_table(str(table), columns=["id"], filter=f"`date` = TIMESTAMP '{want:%Y-%m-%d %H:%M:%S}'")
    assert t.column("id").to_pylist() == [3]


def test_spark_read_options(table: Path, spark):
    carbon_ds.register(spark)
    df = (spark.read.format("carbondata").option("timestamp_granularity", "minute")
          .option("cutoff_timestamp", "1960-01-01 00:00:00").load(str(table)))
    got = {r["id"]: r["us"] for r in df.selectExpr("id", "unix_micros(date) AS us").collect()}
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    assert got == {i: (t - epoch) // dt.timedelta(microseconds=1) for i, t in expected(60_000, -315_619_200_000).items()}
