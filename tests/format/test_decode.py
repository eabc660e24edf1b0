"""Page decoders against hand-computed bytes, and codec properties with hypothesis."""

from __future__ import annotations

import struct
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from carbon_ds.errors import CarbonFormatError
from carbon_ds.format.pages import compress, encoder_meta, kernels
from carbon_ds.format.pages.decode import Page, be_uint, decode_page, decode_parent_page, null_mask
from carbon_ds.format.pages.encoder_meta import ColumnType, EncoderMeta, MetaType
from carbon_ds.format.thrift.structs import (
    ChunkCompressionMeta,
    ColumnSchema,
    DataChunk2,
    DataType,
    Encoding,
    PresenceMeta,
)

E = Encoding


def column(dt: DataType, dimension: bool = False, name: str = "c", scale: int = -1, precision: int = -1,
           encoders: list[int] | None = None) -> ColumnSchema:
    return ColumnSchema(data_type=int(dt), column_name=name, column_id=name, columnar=True,
                        encoders=encoders or [], dimension=dimension, scale=scale, precision=precision)


def page(col: ColumnSchema, data: bytes, rows: int, encoders: list[int], meta: bytes | None = None,
         extra: bytes = b"", rowid_len: int = 0, rle_len: int = 0, nulls: set[int] | None = None,
         comp: str = "snappy") -> Page:
    body = compress.compress(comp, data)
    presence = None
    if nulls is not None:
        presence = PresenceMeta(represents_presence=False,
                                present_bit_stream=compress.compress(comp, java_bitset(nulls)))
    dc2 = DataChunk2(
        chunk_meta=ChunkCompressionMeta(compression_codec=1, total_uncompressed_size=len(data),
                                        total_compressed_size=len(body), compressor_name=comp),
        rowMajor=False, data_page_length=len(body), rowid_page_length=rowid_len, rle_page_length=rle_len,
        presence=presence, encoders=encoders, encoder_meta=[meta] if meta is not None else None,
        numberOfRowsInpage=rows,
    )
    return Page(col, dc2, memoryview(body + extra), rows, "mem.carbondata", 0)


def java_bitset(positions: set[int]) -> bytes:
    """java.util.BitSet.toByteArray: little-endian bit order, trailing zero bytes dropped."""
    if not positions:
        return b""
    out = bytearray(max(positions) // 8 + 1)
    for p in positions:
        out[p // 8] |= 1 << (p % 8)
    return bytes(out)


def meta(schema_type: MetaType, store: MetaType, vmax, vmin, decimals: int = 0,
         column_type: ColumnType = ColumnType.MEASURE, scale: int = -1, precision: int = -1) -> bytes:
    return encoder_meta.serialize(EncoderMeta("c", int(schema_type), int(column_type), scale, precision, int(store),
                                              decimals, 0, vmax, vmin))


def lv(values: list[bytes | None], width: int) -> bytes:
    out = bytearray()
    for v in values:
        b = b"@NU#LL$!" if v is None else v
        out += len(b).to_bytes(width, "big") + b
    return bytes(out)


# ------------------------------------------------------------------ length-value pages


# the null marker itself is a value CarbonData cannot store: it reads back as null by design
NOT_MARKER = st.binary(max_size=40).filter(lambda b: b != b"@NU#LL$!")


@given(st.lists(st.one_of(st.none(), NOT_MARKER), max_size=60), st.sampled_from([2, 4]))
@settings(max_examples=150, deadline=None)
def test_lv_round_trip(values, width):
    col = column(DataType.BINARY, dimension=True)
    encs = [E.DIRECT_COMPRESS_VARCHAR] if width == 4 else []
    arr = decode_page(page(col, lv(values, width), len(values), encs))
    assert arr.to_pylist() == values


def test_lv_string_hand_bytes():
    # 2-byte big-endian lengths: "ab", null marker, ""
    data = b"\x00\x02ab\x00\x08@NU#LL$!\x00\x00"
    arr = decode_page(page(column(DataType.STRING, True), data, 3, []))
    assert arr.type == pa.string() and arr.to_pylist() == ["ab", None, ""]


@pytest.mark.parametrize("data", [b"\x00\x05ab", b"\x00", b"\x00\x01a\x00\x01b"])
def test_lv_corrupt_lengths_raise(data):
    with pytest.raises(CarbonFormatError):
        decode_page(page(column(DataType.STRING, True), data, 1, []))


def test_lv_invalid_utf8_raises():
    with pytest.raises(CarbonFormatError, match="UTF-8"):
        decode_page(page(column(DataType.STRING, True), b"\x00\x02\xff\xfe", 1, []))


# ------------------------------------------------------------------ dimension RLE, row ids, dictionaries


def test_dimension_rle_and_inverted_index_from_real_layout():
    # The 1.1 file's 'country' page: keys [2, 3] with RLE pairs (0,9),(9,1), row ids [0, 2..9, 1] stored as
    # int 8 | shorts 0,2,9,1 | range map [1]. DATE keys make it decodable without a global dictionary.
    base = 1073741823
    keys = struct.pack(">ii", base + 2, base + 3)
    rowid = struct.pack(">i4hh", 8, 0, 2, 9, 1, 1)
    rle = struct.pack(">4h", 0, 9, 9, 1)
    col = column(DataType.DATE, True, encoders=[E.DICTIONARY, E.DIRECT_DICTIONARY, E.INVERTED_INDEX])
    p = page(col, keys, 10, [E.DICTIONARY, E.DIRECT_DICTIONARY, E.RLE, E.INVERTED_INDEX], extra=rowid + rle,
             rowid_len=len(rowid), rle_len=len(rle))
    days = pa.array(decode_page(p)).cast(pa.int32()).to_pylist()
    assert days == [2, 3, 2, 2, 2, 2, 2, 2, 2, 2]


def test_expand_row_ids_kernel():
    got = kernels.expand_row_ids(np.array([2, 1, 3, 9, 0]), np.array([2]), 10)
    assert got.tolist() == [2, 1, 3, 4, 5, 6, 7, 8, 9, 0]
    assert kernels.expand_row_ids(np.array([5, 1]), np.array([0]), 10).size == 0  # reversed range
    assert kernels.expand_row_ids(np.array([0, 100000]), np.array([0]), 10).size == 0  # over the limit


def test_date_null_surrogate():
    data = struct.pack(">ii", 1, 1073741823 + 17957)
    arr = decode_page(page(column(DataType.DATE, True), data, 2, [E.DICTIONARY, E.DIRECT_DICTIONARY]))
    assert arr.to_pylist()[0] is None and str(arr.to_pylist()[1]) == "2019-03-02"


def test_local_dictionary_keys_lookup():
    dictionary = pa.array([None, None, "x", "y"])
    data = bytes([0, 0, 3, 0, 0, 2, 0, 0, 1])
    arr = decode_page(page(column(DataType.STRING, True), data, 3, []), dictionary)
    assert arr.to_pylist() == ["y", "x", None]
    with pytest.raises(CarbonFormatError, match="outside the dictionary"):
        decode_page(page(column(DataType.STRING, True), bytes([0, 0, 9]), 1, []), dictionary)


# ------------------------------------------------------------------ adaptive codecs


@pytest.mark.parametrize(
    "store,fmt",
    [(MetaType.BYTE, "<i1"), (MetaType.SHORT, "<i2"), (MetaType.INT, "<i4"), (MetaType.LONG, "<i8")],
)
def test_adaptive_integral(store, fmt):
    values = np.array([-3, 0, 7, 100], dtype=fmt)
    p = page(column(DataType.LONG), values.tobytes(), 4, [E.ADAPTIVE_INTEGRAL], meta(MetaType.LONG, store, 100, -3))
    assert decode_page(p).to_pylist() == [-3, 0, 7, 100]


def test_adaptive_delta_short_int_big_endian():
    # stored = max - value in 3-byte big-endian; max 10_000_000: values 10_000_000, 9_000_000, 2_000_000
    stored = [0, 1_000_000, 8_000_000]
    data = b"".join(v.to_bytes(3, "big", signed=True) for v in stored)
    p = page(column(DataType.INT), data, 3, [E.ADAPTIVE_DELTA_INTEGRAL],
             meta(MetaType.INT, MetaType.SHORT_INT, 10_000_000, 2_000_000))
    assert decode_page(p).to_pylist() == [10_000_000, 9_000_000, 2_000_000]


def test_short_int_sign():
    assert be_uint(np.frombuffer(b"\xff\xff\xff", np.uint8), 3).tolist() == [0xFFFFFF]


def test_adaptive_floating_and_delta_floating():
    p = page(column(DataType.DOUBLE), bytes([0, 5, 10, 255]), 4, [E.ADAPTIVE_FLOATING],
             meta(MetaType.DOUBLE, MetaType.BYTE, 1.0, -0.1, decimals=1))
    assert decode_page(p).to_pylist() == [0.0, 0.5, 1.0, -0.1]
    # delta floating: stored = max*10^d - v*10^d with max 2.5, d = 1
    p = page(column(DataType.DOUBLE), bytes([0, 5, 25]), 3, [E.ADAPTIVE_DELTA_FLOATING],
             meta(MetaType.DOUBLE, MetaType.BYTE, 2.5, 0.0, decimals=1))
    assert decode_page(p).to_pylist() == [2.5, 2.0, 0.0]


def test_delta_floating_float_page_takes_max_in_float_arithmetic():
    # AdaptiveDeltaFloatingCodec of a FLOAT page: max = (long) ((long) 10^d * (float) pageMax), a long times a
    # float, so the product is rounded to float first: 10 * 675864.6875f = 6758647.0f, not 6758646.875.
    # CarbonData 2.3.0 stored 675864.6875 as byte 0 = (byte) (6758647 - 6758646.875); read as (6758647 - 0) / 10
    p = page(column(DataType.FLOAT), bytes([0]), 1, [E.ADAPTIVE_DELTA_FLOATING],
             meta(MetaType.FLOAT, MetaType.BYTE, 675864.6875, 675864.6875, decimals=1))
    assert decode_page(p).to_pylist() == [675864.6875]
    # a DOUBLE page multiplies in double: (long) (10 * 2.55) = 25
    p = page(column(DataType.DOUBLE), bytes([0, 5]), 2, [E.ADAPTIVE_DELTA_FLOATING],
             meta(MetaType.DOUBLE, MetaType.BYTE, 2.55, 2.0, decimals=1))
    assert decode_page(p).to_pylist() == [2.5, 2.0]


def test_direct_compress_double_with_nulls():
    values = np.array([1.5, 0.0, -2.25])
    p = page(column(DataType.DOUBLE), values.tobytes(), 3, [E.DIRECT_COMPRESS],
             meta(MetaType.DOUBLE, MetaType.DOUBLE, 1.5, -2.25), nulls={1})
    assert decode_page(p).to_pylist() == [1.5, None, -2.25]


def test_decimal_delta_uses_unscaled_max():
    # the real 1.6 file: DECIMAL(8,2), max 12.35, ADAPTIVE_DELTA_INTEGRAL over BYTE, all stored zero
    col = column(DataType.DECIMAL, scale=2, precision=8)
    p = page(col, bytes([0, 1]), 2, [E.ADAPTIVE_DELTA_INTEGRAL],
             meta(MetaType.DECIMAL, MetaType.BYTE, Decimal("12.35"), Decimal("12.34"), scale=2, precision=8))
    assert decode_page(p).to_pylist() == [Decimal("12.35"), Decimal("12.34")]


def test_timestamp_millis_to_micros():
    p = page(column(DataType.TIMESTAMP, True), bytes([0, 1]), 2, [E.ADAPTIVE_DELTA_INTEGRAL],
             meta(MetaType.TIMESTAMP, MetaType.BYTE, 1549911814000, 1549911813999))
    arr = decode_page(p)
    assert arr.type == pa.timestamp("us", tz="UTC")
    assert arr.cast(pa.int64()).to_pylist() == [1549911814000_000, 1549911813999_000]


def test_rle_integral_java_doc_example():
    # RLECodec's own example: {5,5,1,2,3,3,3,3,3}; the runs are written uncompressed
    data = bytes([0x00, 0x02, 0x05, 0x80, 0x03, 0x01, 0x02, 0x03, 0x00, 0x04, 0x03])
    p = page(column(DataType.BYTE), b"", 9, [E.RLE_INTEGRAL], meta(MetaType.BYTE, MetaType.BYTE, 5, 1))
    p.chunk.data_page_length = len(data)
    p.raw = memoryview(data)
    assert decode_page(p).to_pylist() == [5, 5, 1, 2, 3, 3, 3, 3, 3]
    p.rows = 10
    with pytest.raises(CarbonFormatError, match="expected 10"):
        decode_page(p)


@given(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=80))
@settings(max_examples=100, deadline=None)
def test_rle_integral_round_trip(values):
    out = bytearray()
    i = 0
    while i < len(values):  # repeated run when two equal values follow, else a one-value literal run
        j = i
        while j < len(values) and values[j] == values[i]:
            j += 1
        if j - i > 1:
            out += struct.pack(">hi", j - i, values[i])
        else:
            out += struct.pack(">Hi", 0x8001, values[i])
        i = j
    arr = np.frombuffer(bytes(out), np.uint8)
    assert kernels.rle_integral_scan(arr, 4, len(values)) == len(values)
    assert kernels.rle_integral_expand(arr, 4, len(values)).tolist() == values


@given(st.sets(st.integers(0, 199)), st.sampled_from(["snappy", "zstd", "gzip"]))
@settings(max_examples=100, deadline=None)
def test_null_bitset(nulls, comp):
    p = page(column(DataType.INT), np.zeros(200, "<i1").tobytes(), 200, [E.ADAPTIVE_INTEGRAL],
             meta(MetaType.INT, MetaType.BYTE, 0, 0), nulls=nulls, comp=comp)
    mask = null_mask(p)
    got = set() if mask is None else set(np.flatnonzero(mask).tolist())
    assert got == nulls
    assert decode_page(p).null_count == len(nulls)


def test_array_parent_counts():
    data = struct.pack(">6i", 4, 0, 0, 4, 2, 4)
    col = column(DataType.ARRAY, True)
    counts, nulls = decode_parent_page(page(col, data, 3, [E.DIRECT_COMPRESS]))
    assert counts.tolist() == [4, 0, 2] and nulls is None
    with pytest.raises(CarbonFormatError):
        decode_parent_page(page(col, data[:-1], 3, [E.DIRECT_COMPRESS]))


def test_legacy_delta_measure_picks_delta_or_adaptive():
    # CarbonData 1.1 meta: char 'd', long max, long min, long unique, int decimals, byte selected
    m = b"\x00d" + struct.pack(">qqqib", 15009, 15000, 14999, 0, 0)
    p = page(column(DataType.INT), bytes([1, 0, 9]), 3, [E.DELTA], m)
    assert decode_page(p).to_pylist() == [15008, 15009, 15000]  # max needs 2 bytes, max-min 1: delta
    m = b"\x00d" + struct.pack(">qqqib", 10, 1, 0, 0, 0)
    p = page(column(DataType.INT), bytes([9, 10, 1]), 3, [E.DELTA], m)
    assert decode_page(p).to_pylist() == [9, 10, 1]  # both fit a byte: stored as is


def test_wrong_row_count_is_an_error():
    p = page(column(DataType.INT), bytes([1, 2, 3]), 4, [E.ADAPTIVE_INTEGRAL], meta(MetaType.INT, MetaType.BYTE, 3, 1))
    with pytest.raises(CarbonFormatError, match="expected 4"):
        decode_page(p)


def test_complex_child_date_and_timestamp_lv():
    # complex children without an adaptive codec: int-length LV of fixed-width big-endian values
    encs = [E.DIRECT_COMPRESS, E.INT_LENGTH_COMPLEX_CHILD_BYTE_ARRAY]
    m = meta(MetaType.BYTE_ARRAY, MetaType.BYTE_ARRAY, None, None, column_type=ColumnType.COMPLEX_PRIMITIVE)
    data = lv([struct.pack(">i", 1073741823 + 17957), b"", struct.pack(">i", 1)], 4)
    arr = decode_page(page(column(DataType.DATE, True), data, 3, encs, m))
    assert [None if v is None else str(v) for v in arr.to_pylist()] == ["2019-03-02", None, None]
    data = lv([struct.pack(">q", 1549911814000)], 4)
    arr = decode_page(page(column(DataType.TIMESTAMP, True), data, 1, encs, m))
    assert arr.cast(pa.int64()).to_pylist() == [1549911814000_000]
