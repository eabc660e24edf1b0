"""Compressors, encoder meta, schema mapping, the storage layer and `carbon-ds inspect`."""

from __future__ import annotations

import struct
import subprocess
import sys
import threading
from decimal import Decimal

import cramjam
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from carbon_ds.cli import main as cli_main
from carbon_ds.errors import CarbonFormatError, CarbonSchemaError
from carbon_ds.format.arrow_types import arrow_schema, columns_for
from carbon_ds.format.pages import compress, encoder_meta
from carbon_ds.format.thrift.structs import DataChunk3, DataType, FileFooter3, FileHeader
from carbon_ds.fs import Storage

# ------------------------------------------------------------------ compressors


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=5000), name=st.sampled_from(compress.COMPRESSORS))
def test_compressors_round_trip(data, name):
    assert compress.decompress(name, compress.compress(name, data)).tobytes() == data


def test_snappy_is_raw_block_format():
    # raw snappy starts with the uncompressed length as a varint, no stream identifier frame
    assert compress.compress("snappy", b"abc")[:1] == b"\x03"
    assert compress.decompress("snappy", bytes(cramjam.snappy.compress_raw(b"hello"))).tobytes() == b"hello"


@pytest.mark.parametrize("size", [0, 1, 60, 61, 256, 257, 65_536, 65_537, 200_003])
def test_snappy_literal_stream_decodes_with_google_snappy(size):
    # pyarrow's snappy codec is Google's C++ library, the one snappy-java (Apache CarbonData's reader) wraps
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    stream = compress.snappy_literal(memoryview(data))
    assert pa.decompress(stream, size, codec="snappy").to_pybytes() == data
    assert len(stream) <= size + 8 + 3 * (size // 65_536 + 1)


def test_snappy_stores_barely_compressible_pages_as_literals():
    # random 4-byte date keys (days + 2^30 - 1, big-endian) save 12-26% under snappy: stored as literals
    keys = (np.random.default_rng(7).integers(18_000, 20_000, 32_000) + 1_073_741_823).astype(">i4").tobytes()
    assert len(cramjam.snappy.compress_raw(keys)) > 2 / 3 * len(keys)
    stored = compress.compress("snappy", keys)
    assert stored == compress.snappy_literal(memoryview(keys))
    assert pa.decompress(stored, len(keys), codec="snappy").to_pybytes() == keys
    # a page that compresses well keeps snappy's own stream
    runs = np.repeat(np.arange(1_000, dtype=">i4"), 32).tobytes()
    assert compress.compress("snappy", runs) == bytes(cramjam.snappy.compress_raw(runs))


@pytest.mark.parametrize("name", compress.COMPRESSORS)
def test_decompression_is_bounded(name):
    bomb = compress.compress(name, b"\0" * 1_000_000)
    with pytest.raises(CarbonFormatError, match="limit"):
        compress.decompress(name, bomb, limit=10_000)


def test_snappy_declared_length_is_checked_against_input():
    # declares 2**31 bytes from 6 bytes of input: refused before any allocation
    lying = b"\x80\x80\x80\x80\x08" + b"\x00"
    with pytest.raises(CarbonFormatError, match="declares"):
        compress.decompress("snappy", lying)


@pytest.mark.parametrize("name", compress.COMPRESSORS)
def test_corrupt_compressed_data(name):
    with pytest.raises(CarbonFormatError):
        compress.decompress(name, b"\x05\xff\xfe\xfd\xfc\xfb\xfa")


def test_unknown_compressor():
    with pytest.raises(CarbonFormatError, match="unsupported compressor 'lz4'"):
        compress.normalize("lz4")
    assert compress.normalize(None) == "snappy" and compress.normalize("ZSTD") == "zstd"


# ------------------------------------------------------------------ encoder meta


def test_encoder_meta_of_real_pages_round_trips(corpus):
    seen = 0
    for path in sorted(corpus.glob("sdk-*/**/*.carbondata")):
        data = path.read_bytes()
        off = struct.unpack(">q", data[-8:])[0]
        footer, _ = FileFooter3.from_bytes(data[off:-8])
        info = footer.blocklet_info_list3[0]
        for o, n in zip(info.column_data_chunks_offsets, info.column_data_chunks_length, strict=True):
            chunk, _ = DataChunk3.from_bytes(data[o : o + n])
            for page in chunk.data_chunk_list:
                for blob in page.encoder_meta or []:
                    assert encoder_meta.serialize(encoder_meta.parse(blob)) == bytes(blob)
                    seen += 1
    assert seen >= 20


def test_encoder_meta_values_by_hand(corpus):
    # sdk-1.6-all-types, CarbonReaderExample: decimalfield is 12.35 in every row, doublefield max 4.5
    path = next(corpus.glob("sdk-1.6-all-types/*.carbondata"))
    data = path.read_bytes()
    off = struct.unpack(">q", data[-8:])[0]
    footer, _ = FileFooter3.from_bytes(data[off:-8])
    info = footer.blocklet_info_list3[0]
    metas = {}
    for o, n in zip(info.column_data_chunks_offsets, info.column_data_chunks_length, strict=True):
        chunk, _ = DataChunk3.from_bytes(data[o : o + n])
        for blob in chunk.data_chunk_list[0].encoder_meta or []:
            m = encoder_meta.parse(blob)
            metas[m.column_name] = m
    assert metas["decimalfield"].max == Decimal("12.35") and metas["decimalfield"].scale == 2
    assert metas["decimalfield"].precision == 8
    assert metas["doublefield"].max == 4.5 and metas["doublefield"].decimal_count == 1
    assert metas["longfield"].max == 2**63 - 1
    assert metas["shortfield"].store_type == encoder_meta.MetaType.BYTE
    assert metas["intfield"].compressor == "snappy"


def test_encoder_meta_truncated():
    with pytest.raises(CarbonFormatError, match="truncated"):
        encoder_meta.parse(b"\x00\x05ab")


@given(st.decimals(allow_nan=False, allow_infinity=False, places=4, min_value=-(10**20), max_value=10**20))
def test_decimal_bytes(value):
    b = encoder_meta.decimal_to_bytes(value, 4)
    assert b[0] == 4
    assert Decimal(int.from_bytes(b[1:], "big", signed=True)).scaleb(-4) == value


# ------------------------------------------------------------------ schema mapping


def test_every_real_header_maps_to_arrow(corpus):
    for path in sorted(corpus.rglob("*.carbondata")):
        header, _ = FileHeader.from_bytes(path.read_bytes())
        schema = arrow_schema(header.column_schema)
        assert len(schema) == len([c for c in header.column_schema if c.schemaOrdinal != -1])


def test_user_order_follows_schema_ordinal(corpus):
    path = next(corpus.glob("sdk-1.6-all-types/*.carbondata"))
    header, _ = FileHeader.from_bytes(path.read_bytes())
    assert arrow_schema(header.column_schema).names == [
        "stringfield", "shortfield", "intfield", "longfield", "doublefield", "boolfield",
        "datefield", "timefield", "decimalfield", "varcharfield", "arrayfield",
    ]


def test_columns_for_physical_order_and_round_trip():
    schema = pa.schema([
        ("m", pa.float64()), ("s", pa.string()), ("k", pa.int64()), ("arr", pa.list_(pa.string())),
        ("d", pa.date32()), ("st", pa.struct([("x", pa.int32()), ("y", pa.map_(pa.string(), pa.int64()))])),
        ("long", pa.string()), ("ts", pa.timestamp("ms")), ("dec", pa.decimal128(20, 3)),
    ])
    cols = columns_for(schema, sort_columns=["k"], long_string_columns=["long"])
    names = [c.column_name for c in cols]
    assert names[0] == "k" and cols[0].dimension  # sort column leads and becomes a dimension
    assert names.index("s") < names.index("long") < names.index("arr")  # dims, varchars, complex
    assert names[-2:] == ["m", "dec"]  # measures last
    assert [c.column_name for c in cols if c.schemaOrdinal == -1] == [
        "arr.val", "st.x", "st.y", "st.y.val", "st.y.val.key", "st.y.val.value",
    ]
    assert DataType(cols[names.index("long")].data_type) == DataType.VARCHAR
    back = arrow_schema(cols)
    assert back.names == schema.names
    assert back.field("ts").type == pa.timestamp("us", tz="UTC")
    assert back.field("st").type == schema.field("st").type
    assert back.field("dec").type == pa.decimal128(20, 3)


def test_columns_for_errors():
    with pytest.raises(CarbonSchemaError, match="sort column 'nope' is not in the schema"):
        columns_for(pa.schema([("a", pa.int32())]), sort_columns=["nope"])
    with pytest.raises(CarbonSchemaError, match="'u'.*no CarbonData equivalent"):
        columns_for(pa.schema([("u", pa.uint64())]))
    with pytest.raises(CarbonSchemaError, match="cannot be a sort column"):
        columns_for(pa.schema([("f", pa.float64())]), sort_columns=["f"])


# ------------------------------------------------------------------ storage


def test_storage_local_and_file_uri(tmp_path):
    s, p = Storage.for_path(tmp_path / "a" / "b.bin")
    s.write_bytes(p, b"hello")
    s2, p2 = Storage.for_path(f"file://{tmp_path}/a/b.bin")
    assert s2.read_bytes(p2) == b"hello" and s2.size(p2) == 5
    assert [i.path for i in s.list(str(tmp_path), recursive=True)] == [p]
    assert s.list(str(tmp_path / "missing")) == []


def test_atomic_write_never_shows_a_torn_file(tmp_path):
    s, p = Storage.for_path(tmp_path / "status")
    a, b = b"A" * 200_000, b"B" * 300_000
    s.write_atomic(p, a)
    seen = set()
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            seen.add(s.read_bytes(p))

    t = threading.Thread(target=reader)
    t.start()
    for i in range(50):
        s.write_atomic(p, a if i % 2 else b)
    stop.set()
    t.join()
    assert seen <= {a, b}
    assert not [f for f in s.list(str(tmp_path)) if f.path.endswith(".tmp")]


def test_create_exclusive(tmp_path):
    s, p = Storage.for_path(tmp_path / "lock")
    assert s.create_exclusive(p, b"1") and not s.create_exclusive(p, b"2")
    assert s.read_bytes(p) == b"1"


# ------------------------------------------------------------------ inspect


def test_inspect_real_file(corpus, capsys):
    path = next(corpus.glob("sdk-1.6-all-types/*.carbondata"))
    assert cli_main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "footer: rows=10 blocklets=1" in out
    assert "written_by = CarbonReaderExample" in out
    assert "decimalfield: DECIMAL(8,2) measure" in out
    assert "min='robot0' max='robot9'" in out
    assert "encoders=ADAPTIVE_DELTA_INTEGRAL" in out


def test_inspect_index_files(corpus, capsys):
    path = next(corpus.glob("sdk-1.3-name-age-a/*.carbonindex"))
    assert cli_main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "file_rows=100" in out and "part-0-10142455992272_batchno0-0-0.carbondata" in out


def test_inspect_corrupt_file_is_a_clean_error(tmp_path):
    bad = tmp_path / "bad.carbondata"
    bad.write_bytes(b"\x15\x06\x19" + b"\xff" * 40)
    r = subprocess.run([sys.executable, "-m", "carbon_ds.cli", "inspect", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2
    assert "carbon-ds: error:" in r.stderr and str(bad) in r.stderr and "Traceback" not in r.stderr
