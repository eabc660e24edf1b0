"""ROW_V1 stream files laid out byte by byte as CarbonData's streaming writer lays them out.

Layout from CarbonStreamRecordWriter.write / writeFileHeader and StreamBlockletWriter.appendBlocklet
(apache/carbondata streaming module): FileHeader (Thrift compact, no length), then per blocklet the sync
marker "@carbondata_sync", int length + BlockletHeader, int length + the snappy-compressed rows. A row: short
length + java.util.BitSet.toByteArray of null columns, then dimensions (no-dictionary: short length + bytes;
dictionary: int key), then measures big-endian; DECIMAL as short length + DataTypeUtil.bigDecimalToByte
(scale byte, then BigInteger.toByteArray of the unscaled value). Expected values: DateDirectDictionaryGenerator
(days + Integer.MAX_VALUE >> 1) and TimeStampDirectDictionaryGenerator ((key - 2) * 1000 ms).
"""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal

import pytest

from carbon_ds.cli import main
from carbon_ds.errors import CarbonFormatError
from carbon_ds.format.pages import compress
from carbon_ds.format.pages.direct_dictionary import DEFAULT
from carbon_ds.format.stream import BlockletHeader, StreamBlockletInfo, read_stream_file
from carbon_ds.format.thrift.structs import ColumnSchema, DataType, Encoding, FileHeader
from carbon_ds.readers.carbon_file import CarbonDataFile

E = Encoding
UTC = dt.UTC
MARKER = b"@carbondata_sync"
DATE_BASE = 1073741823


def col(name: str, t: DataType, dim: bool, enc=(), precision: int = -1, scale: int = -1) -> ColumnSchema:
    return ColumnSchema(data_type=int(t), column_name=name, column_id=name, columnar=True, encoders=list(enc),
                        dimension=dim, precision=precision, scale=scale)


COLUMNS = [
    col("name", DataType.STRING, True),
    col("ts", DataType.TIMESTAMP, True, [E.DICTIONARY, E.DIRECT_DICTIONARY]),
    col("d", DataType.DATE, True, [E.DICTIONARY, E.DIRECT_DICTIONARY]),
    col("id", DataType.INT, False),
    col("amount", DataType.DECIMAL, False, precision=10, scale=2),
    col("score", DataType.DOUBLE, False),
    col("flag", DataType.BOOLEAN, False),
    col("big", DataType.LONG, False),
]


def header() -> bytes:
    return FileHeader(version=3, column_schema=COLUMNS, is_footer_present=False, time_stamp=1638203400000,
                      is_splitable=True, sync_marker=MARKER, compressor_name="snappy").to_bytes()


def row(name: bytes, ts_key: int, d_key: int, measures: list[bytes | None]) -> bytes:
    nulls = [i + 3 for i, m in enumerate(measures) if m is None]
    bits = bytearray(max(nulls) // 8 + 1) if nulls else bytearray()
    for i in nulls:
        bits[i // 8] |= 1 << (i % 8)
    out = struct.pack(">h", len(bits)) + bytes(bits)
    out += struct.pack(">h", len(name)) + name + struct.pack(">ii", ts_key, d_key)
    return out + b"".join(m for m in measures if m is not None)


def blocklet(rows: list[bytes]) -> bytes:
    body = b"".join(rows)
    bh = BlockletHeader(blocklet_length=len(body), mutation=0,
                        blocklet_info=StreamBlockletInfo(num_rows=len(rows))).to_bytes()
    packed = compress.compress("snappy", body)
    return MARKER + struct.pack(">i", len(bh)) + bh + struct.pack(">i", len(packed)) + packed


def ts_key(when: dt.datetime) -> int:
    return int(when.timestamp()) + 2


def date_key(day: dt.date) -> int:
    return (day - dt.date(1970, 1, 1)).days + DATE_BASE


T0 = dt.datetime(2021, 11, 29, 16, 30, tzinfo=UTC)
ROWS = [
    row(b"alice", ts_key(T0), date_key(dt.date(2021, 11, 29)),
        [struct.pack(">i", 1), struct.pack(">h", 3) + bytes([2, 0x04, 0xD2]), struct.pack(">d", 0.5), b"\x01",
         struct.pack(">q", 1 << 40)]),
    row(b"@NU#LL$!", 1, 1, [None, None, None, None, None]),
    row(b"bob", ts_key(dt.datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC)), date_key(dt.date(1969, 7, 20)),
        [struct.pack(">i", -7), struct.pack(">h", 2) + bytes([2, 0xFB]), struct.pack(">d", -1.25), b"\x00",
         struct.pack(">q", -1)]),
]
EXPECTED = {
    "name": ["alice", None, "bob"],
    "ts": [T0, None, dt.datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC)],
    "d": [dt.date(2021, 11, 29), None, dt.date(1969, 7, 20)],
    "id": [1, None, -7],
    "amount": [Decimal("12.34"), None, Decimal("-0.05")],
    "score": [0.5, None, -1.25],
    "flag": [True, None, False],
    "big": [1 << 40, None, -1],
}


def test_rows_of_every_blocklet():
    data = header() + blocklet(ROWS[:2]) + blocklet(ROWS[2:])
    assert read_stream_file(data, "s.carbondata", DEFAULT).to_pydict() == EXPECTED


def test_unfinished_append_is_left_out():
    data = header() + blocklet(ROWS) + blocklet(ROWS)[:30]
    assert read_stream_file(data, "s.carbondata", DEFAULT).to_pydict() == EXPECTED


def test_rows_not_filling_the_blocklet_raise():
    data = header() + blocklet(ROWS)
    bad = data.replace(struct.pack(">h", 5) + b"alice", struct.pack(">h", 9) + b"alice")
    with pytest.raises(CarbonFormatError, match="s.carbondata"):
        read_stream_file(bad, "s.carbondata", DEFAULT)


def test_inspect_describes_a_stream_file(tmp_path, capsys):
    path = tmp_path / "part-0-0_batchno0-0-1-0.snappy.carbondata"
    path.write_bytes(header() + blocklet(ROWS[:2]) + blocklet(ROWS[2:]) + MARKER + b"\x00\x00")
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "ROW_V1 stream file" in out and "2 complete blocklet(s)" in out
    assert "blocklet 0: at" in out and "rows=2" in out and "trailing 18 bytes" in out
    assert "[1] ts: TIMESTAMP dimension" in out and "encoders=DICTIONARY,DIRECT_DICTIONARY" in out


def test_stream_file_opened_as_a_columnar_file_says_what_it_is(tmp_path):
    path = tmp_path / "part-0-0_batchno0-0-1-0.snappy.carbondata"
    path.write_bytes(header() + blocklet(ROWS))
    with pytest.raises(CarbonFormatError, match="ROW_V1 stream file"):
        CarbonDataFile(str(path))
