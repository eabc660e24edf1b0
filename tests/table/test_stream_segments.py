"""Streaming and Streaming Finish segments read as CarbonData's queries read them (SegmentStatusManager lists
them as stream segments; CarbonTableInputFormat.getSplitsOfStreaming reads each file of the segment folder up
to the size its stream index records, StreamSegment.updateIndexFile).

The table is the real CarbonData 1.1 table of the corpus (10 rows, ids 1..10, CarbonData's example data.csv),
its strings declared no-dictionary in Metadata/schema as a 2.x streaming table has them. Segment 1 is a
ROW_V1 file laid out byte by byte as CarbonStreamRecordWriter / StreamBlockletWriter write it (see
tests/format/test_stream_files.py for the layout), plus its stream index (CarbonIndexFileWriter: IndexHeader
then BlockIndex with file_name and file_size).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import struct
from pathlib import Path

import pytest

import carbon_ds
from carbon_ds.errors import CarbonTableError
from carbon_ds.format.pages import compress
from carbon_ds.format.stream import BlockletHeader, StreamBlockletInfo
from carbon_ds.format.thrift.structs import (
    BlockIndex,
    BlockletIndex,
    Encoding,
    FileHeader,
    IndexHeader,
    SegmentInfo,
)
from carbon_ds.fs import Storage
from carbon_ds.table.meta.schema import schema_file

SOURCE = Path("/work/shared/compat/carbondata-real/table-1.1-global-dictionary")
for _up in Path(__file__).resolve().parents:
    if (_up / "shared/compat/carbondata-real/table-1.1-global-dictionary").is_dir():
        SOURCE = _up / "shared/compat/carbondata-real/table-1.1-global-dictionary"
        break
if not SOURCE.is_dir():
    pytest.skip(f"CarbonData 1.1 table not found at {SOURCE}", allow_module_level=True)

MARKER = b"@carbondata_sync"  # CarbonStreamOutputFormat.CARBON_SYNC_MARKER
DATE_BASE = 1073741823  # DateDirectDictionaryGenerator: days since 1970-01-01 + Integer.MAX_VALUE >> 1
STREAM_FILE = "part-0-0_batchno0-0-1-0.snappy.carbondata"  # CarbonTablePath.getCarbonDataFileName(0, 0, 0, 0, "0", "1")


def _lv(text: bytes) -> bytes:
    return struct.pack(">h", len(text)) + text


def stream_row(day: dt.date | None, country: bytes, name: bytes, phone: bytes, serial: bytes,
               id_: int | None, salary: int | None) -> bytes:
    """Columns in the writer's order: dimensions date, country, name, phonetype, serialname; measures id,
    salary (indexes 5 and 6 of the null BitSet)."""
    nulls = [i for i, v in ((5, id_), (6, salary)) if v is None]
    bits = bytearray(1) if nulls else bytearray()
    for i in nulls:
        bits[0] |= 1 << i
    key = 1 if day is None else (day - dt.date(1970, 1, 1)).days + DATE_BASE
    out = struct.pack(">h", len(bits)) + bytes(bits) + struct.pack(">i", key)
    out += _lv(country) + _lv(name) + _lv(phone) + _lv(serial)
    return out + b"".join(struct.pack(">i", v) for v in (id_, salary) if v is not None)


def blocklet(rows: list[bytes]) -> bytes:
    body = b"".join(rows)
    bh = BlockletHeader(blocklet_length=len(body), mutation=0,
                        blocklet_info=StreamBlockletInfo(num_rows=len(rows))).to_bytes()
    packed = compress.compress("snappy", body)
    return MARKER + struct.pack(">i", len(bh)) + bh + struct.pack(">i", len(packed)) + packed


@pytest.fixture
def table(tmp_path: Path) -> Path:
    root = tmp_path / "t"
    shutil.copytree(SOURCE, root)
    storage = Storage.for_path(str(root))[0]
    path = str(root / "Metadata" / "schema")
    info = schema_file.read(storage, path)
    for c in info.fact_table.table_columns:
        if c.column_name in ("country", "name", "phonetype", "serialname"):
            c.encoders = [e for e in c.encoders or [] if e != Encoding.DICTIONARY]
    schema_file.write(storage, path, info)
    return root


def add_stream_segment(root: Path, state: str, blocklets: list[bytes], committed: int | None = None) -> None:
    storage = Storage.for_path(str(root))[0]
    info = schema_file.read(storage, str(root / "Metadata" / "schema"))
    cols = info.fact_table.table_columns
    ordered = [c for c in cols if c.dimension] + [c for c in cols if not c.dimension]
    head = FileHeader(version=3, column_schema=ordered, is_footer_present=False, time_stamp=1500000000000,
                      is_splitable=True, sync_marker=MARKER, compressor_name="snappy").to_bytes()
    data = head + b"".join(blocklets)
    seg = root / "Fact/Part0/Segment_1"
    seg.mkdir()
    (seg / STREAM_FILE).write_bytes(data)
    index = IndexHeader(version=3, table_columns=ordered, segment_info=SegmentInfo(num_cols=len(ordered),
                                                                                   column_cardinalities=[]))
    entry = BlockIndex(num_rows=0, file_name=STREAM_FILE, offset=-1, block_index=BlockletIndex(),
                       file_size=len(data) if committed is None else len(head) + committed)
    (seg / "0_batchno0-0-1-0.carbonindex").write_bytes(index.to_bytes() + entry.to_bytes())
    entries = json.loads((root / "Metadata" / "tablestatus").read_text())
    entries.append({"timestamp": "", "loadStatus": state, "loadName": "1", "isDeleted": "FALSE",
                    "loadStartTime": "1500000000000", "visibility": "true"})
    (root / "Metadata" / "tablestatus").write_text(json.dumps(entries))


ROW_11 = stream_row(dt.date(2015, 8, 1), b"india", b"aaa11", b"phone11", b"ASD11", 11, 15010)
ROW_12 = stream_row(None, b"@NU#LL$!", b"aaa12", b"phone12", b"ASD12", 12, None)


@pytest.mark.parametrize("state", ["Streaming", "Streaming Finish"])
def test_stream_segment_rows_are_read(table: Path, state: str):
    add_stream_segment(table, state, [blocklet([ROW_11]), blocklet([ROW_12])])
    got = carbon_ds.read_table(str(table))
    assert sorted(got.column("id").to_pylist()) == list(range(1, 13))
    rows = {r["id"]: r for r in got.to_pylist()}
    assert rows[11] == {"id": 11, "date": dt.date(2015, 8, 1), "country": "india", "name": "aaa11",
                        "phonetype": "phone11", "serialname": "ASD11", "salary": 15010}
    assert rows[12] == {"id": 12, "date": None, "country": None, "name": "aaa12", "phonetype": "phone12",
                        "serialname": "ASD12", "salary": None}
    assert carbon_ds.CarbonTable.open(str(table)).count() == 12
    assert carbon_ds.read_table(str(table), segments="1", filter="country = 'india'").column("id").to_pylist() == [11]


def test_bytes_past_the_committed_size_are_not_read(table: Path):
    first = blocklet([ROW_11])
    add_stream_segment(table, "Streaming", [first, blocklet([ROW_12])], committed=len(first))
    assert sorted(carbon_ds.read_table(str(table), columns=["id"]).column("id").to_pylist()) == list(range(1, 12))


def test_update_on_a_table_with_stream_segments_refuses(table: Path):
    add_stream_segment(table, "Streaming", [blocklet([ROW_11])])
    with pytest.raises(CarbonTableError, match="streaming segments"):
        carbon_ds.CarbonTable.open(str(table)).delete("id = 1")


def test_spark_reads_stream_segments(table: Path, spark):
    add_stream_segment(table, "Streaming Finish", [blocklet([ROW_11, ROW_12])])
    carbon_ds.register(spark)
    df = spark.read.format("carbondata").load(str(table))
    assert sorted(r["id"] for r in df.select("id").collect()) == list(range(1, 13))
    assert df.where("country = 'india'").count() == 1
    assert (sorted(r["id"] for r in carbon_ds.read(spark, str(table), columns=["id"], native=True).collect())
        == list(range(1, 13)))


@pytest.mark.parametrize("force", [False, True])
def test_clean_files_keeps_stream_files(table: Path, force: bool):
    add_stream_segment(table, "Streaming", [blocklet([ROW_11])])
    carbon_ds.CarbonTable.open(str(table)).clean_files(force=force)
    assert (table / "Fact/Part0/Segment_1" / STREAM_FILE).exists()
    assert carbon_ds.CarbonTable.open(str(table)).count() == 11
