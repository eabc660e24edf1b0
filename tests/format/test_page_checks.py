"""Decoded DATE / TIMESTAMP / DECIMAL values against the format's range and the page's own min/max.

Expected values are computed by hand from CarbonData's Java definitions: a DATE is stored as the surrogate
``days since 1970-01-01 + 1,073,741,823`` (DateDirectDictionaryGenerator, range 0001-01-01..9999-12-31),
a TIMESTAMP as epoch milliseconds (statistics: 8 bytes big-endian, sign bit flipped), a DECIMAL statistic
as a scale byte and the big-endian unscaled value (DataTypeUtil.bigDecimalToByte).
"""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from carbon_ds.api import read_table, write_table
from carbon_ds.errors import CarbonFormatError, CarbonSchemaError
from carbon_ds.format.pages import chunk_decode, compress, encoder_meta, kernels, page_checks, stat_bytes
from carbon_ds.format.pages.chunk_decode import decode_pages
from carbon_ds.format.pages.decode import Page, decode_page
from carbon_ds.format.pages.encoder_meta import ColumnType, EncoderMeta, MetaType
from carbon_ds.format.thrift.structs import (
    BlockletMinMaxIndex,
    ChunkCompressionMeta,
    ColumnSchema,
    DataChunk2,
    DataType,
    Encoding,
    PresenceMeta,
)
from carbon_ds.readers import CarbonDataFile

E = Encoding
DATE_KEY_OF_EPOCH = 1073741823  # Integer.MAX_VALUE >> 1
EPOCH = dt.date(1970, 1, 1)


def key(d: dt.date) -> int:
    return (d - EPOCH).days + DATE_KEY_OF_EPOCH


def column(data_type: DataType, dimension: bool = True, scale: int = -1, precision: int = -1) -> ColumnSchema:
    return ColumnSchema(data_type=int(data_type), column_name="c", column_id="c", columnar=True, encoders=[],
                        dimension=dimension, scale=scale, precision=precision)


def page(col: ColumnSchema, data: bytes, rows: int, encoders: list[int], meta: bytes | None = None,
         stats: tuple[bytes, bytes] | None = None, codec: str = "snappy") -> Page:
    body = compress.compress(codec, data)
    dc2 = DataChunk2(
        chunk_meta=ChunkCompressionMeta(compression_codec=1, total_uncompressed_size=len(data),
                                        total_compressed_size=len(body), compressor_name=codec),
        rowMajor=False, data_page_length=len(body), rowid_page_length=0, rle_page_length=0,
        encoders=encoders, encoder_meta=[meta] if meta is not None else None, numberOfRowsInpage=rows,
        min_max=BlockletMinMaxIndex(min_values=[stats[0]], max_values=[stats[1]], min_max_presence=[True])
        if stats else None,
    )
    return Page(col, dc2, memoryview(body), rows, "mem.carbondata", 0, check_stats=stats is not None)


def meta(schema_type: MetaType, store: MetaType, vmax, vmin, scale: int = -1, precision: int = -1) -> bytes:
    return encoder_meta.serialize(EncoderMeta("c", int(schema_type), int(ColumnType.MEASURE), scale, precision,
                                              int(store), 0, 0, vmax, vmin))


def date_page(dates: list[dt.date | None], stats: tuple[dt.date, dt.date] | None = None, raw_keys=None) -> Page:
    keys = raw_keys or [1 if d is None else key(d) for d in dates]
    data = b"".join(struct.pack(">i", k) for k in keys)
    st = (struct.pack(">i", key(stats[0])), struct.pack(">i", key(stats[1]))) if stats else None
    return page(column(DataType.DATE), data, len(keys), [E.DICTIONARY, E.DIRECT_DICTIONARY], stats=st)


def ts_stat(ms: int) -> bytes:
    return ((ms & (2**64 - 1)) ^ (1 << 63)).to_bytes(8, "big")


def ts_page(ms: list[int], stats: tuple[int, int] | None = None) -> Page:
    data = b"".join(struct.pack("<q", v) for v in ms)
    st = (ts_stat(stats[0]), ts_stat(stats[1])) if stats else None
    return page(column(DataType.TIMESTAMP), data, len(ms), [E.ADAPTIVE_INTEGRAL],
                meta(MetaType.TIMESTAMP, MetaType.LONG, max(ms), min(ms)), stats=st)


def decimal_stat(unscaled: int, scale: int) -> bytes:
    return bytes([scale]) + unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)


def decimal_page(unscaled: list[int], precision: int, scale: int, stats: tuple[int, int] | None = None) -> Page:
    data = b"".join(struct.pack("<i", v) for v in unscaled)
    st = (decimal_stat(stats[0], scale), decimal_stat(stats[1], scale)) if stats else None
    hi, lo = Decimal(max(unscaled)).scaleb(-scale), Decimal(min(unscaled)).scaleb(-scale)
    return page(column(DataType.DECIMAL, False, scale, precision), data, len(unscaled), [E.ADAPTIVE_INTEGRAL],
                meta(MetaType.DECIMAL, MetaType.INT, hi, lo, scale, precision), stats=st)


# ------------------------------------------------------------------ impossible values, no statistics needed


def test_dates_at_the_ends_of_the_range_and_nulls_decode():
    dates = [dt.date(1, 1, 1), None, dt.date(9999, 12, 31), dt.date(2019, 3, 2)]
    assert decode_page(date_page(dates)).equals(pa.array(dates, pa.date32()))


@pytest.mark.parametrize("days", [(dt.date(9999, 12, 31) - EPOCH).days + 1, (dt.date(1, 1, 1) - EPOCH).days - 1,
                                  2**30 - 2])
def test_date_beyond_the_format_range_is_refused(days):
    p = date_page([], raw_keys=[key(dt.date(2020, 1, 1)), days + DATE_KEY_OF_EPOCH])
    with pytest.raises(CarbonFormatError, match=r"outside CarbonData's range 0001-01-01\.\.9999-12-31") as e:
        decode_page(p)
    assert "column 'c'" in str(e.value) and "mem.carbondata" in str(e.value) and str(days) in str(e.value)


def test_timestamp_ms_beyond_microseconds_is_refused():
    # 10**16 ms (year ~318857) times 1000 does not fit int64 microseconds: it wraps to a value that is no
    # whole number of milliseconds
    ms = 10**16
    assert (ms * 1000) > 2**63 - 1 and ((ms * 1000 + 2**63) % 2**64 - 2**63) % 1000 != 0
    with pytest.raises(CarbonFormatError, match="not a whole number of milliseconds"):
        decode_page(ts_page([1549911814000, ms]))
    assert decode_page(ts_page([1549911814000, -62135596800000])).cast(pa.int64()).to_pylist() == [
        1549911814000_000, -62135596800000_000]  # 0001-01-01T00:00:00Z


def test_decimal_wider_than_its_precision_is_refused():
    assert decode_page(decimal_page([99999, -99999], 5, 2)).to_pylist() == [Decimal("999.99"), Decimal("-999.99")]
    with pytest.raises(CarbonFormatError, match=r"do not fit the column's DECIMAL\(5, 2\)"):
        decode_page(decimal_page([12345, 100000], 5, 2))


def with_nulls(p: Page, nulls: list[bool]) -> Page:
    """``p`` with a null bitset (java BitSet.toByteArray, snappy as its data) marking ``nulls``."""
    bits = np.packbits(np.asarray(nulls, bool), bitorder="little").tobytes()
    p.chunk.presence = PresenceMeta(represents_presence=False, present_bit_stream=compress.compress("snappy", bits))
    return p


def test_decimal_bounds_of_a_page_with_nulls_are_its_set_values():
    """A null slot's stored integer is no value: the bounds found in the decode (and checked against the
    precision and the statistics) are those of the set slots, as Python's min/max of them."""
    unscaled = [5, 99999, -7, -99999, 120]  # the extremes sit in null slots
    nulls = [False, True, False, True, False]
    p = with_nulls(decimal_page(unscaled, 3, 2, (-7, 120)), nulls)
    got = decode_page(p)
    assert got.to_pylist() == [Decimal("0.05"), None, Decimal("-0.07"), None, Decimal("1.20")]
    assert p.unscaled_bounds == (-7, 120)
    with pytest.raises(CarbonFormatError, match="outside the page's stored min/max"):
        decode_page(with_nulls(decimal_page(unscaled, 3, 2, (-7, 119)), nulls))
    with pytest.raises(CarbonFormatError, match=r"do not fit the column's DECIMAL\(3, 2\)"):
        decode_page(with_nulls(decimal_page([5, 99999, 1000], 3, 2), [False, True, False]))


# ------------------------------------------------------------------ against the page's min/max


def test_date_outside_page_min_max_is_refused():
    lo, hi = dt.date(2020, 1, 1), dt.date(2020, 1, 31)
    assert decode_page(date_page([lo, None, hi], (lo, hi))).to_pylist() == [lo, None, hi]
    with pytest.raises(CarbonFormatError, match="outside the page's stored min/max") as e:
        decode_page(date_page([lo, dt.date(2020, 2, 5)], (lo, hi)))
    assert f"{(hi - EPOCH).days}]" in str(e.value) and "days since 1970-01-01" in str(e.value)
    p = date_page([hi, lo], (lo, hi))  # without nulls its min and max come from the decode itself
    decode_page(p)
    assert p.int_bounds == ((lo - EPOCH).days, (hi - EPOCH).days)


def test_date_stats_widened_by_the_null_key_are_fine():
    # Java's key statistics may count a null row's surrogate 1: a widening, never a narrowing
    p = date_page([dt.date(2020, 1, 1), None], None)
    p.chunk.min_max = BlockletMinMaxIndex(min_values=[struct.pack(">i", 1)],
                                          max_values=[struct.pack(">i", key(dt.date(2020, 1, 1)))],
                                          min_max_presence=[True])
    p.check_stats = True
    assert decode_page(p).to_pylist() == [dt.date(2020, 1, 1), None]


def test_timestamp_outside_page_min_max_is_refused():
    ms = [1549911814000, 1549911815000]
    assert decode_page(ts_page(ms, (ms[0], ms[1]))).cast(pa.int64()).to_pylist() == [v * 1000 for v in ms]
    with pytest.raises(CarbonFormatError, match="outside the page's stored min/max"):
        decode_page(ts_page([ms[0], ms[1] + 1], (ms[0], ms[1])))
    with pytest.raises(CarbonFormatError, match="outside the page's stored min/max"):
        decode_page(ts_page([-5, 0], (-4, 0)))  # negative epoch ms: the sign-flipped order holds


def test_decimal_outside_page_min_max_is_refused():
    assert decode_page(decimal_page([1234, 1235], 8, 2, (1234, 1235))).to_pylist() == [Decimal("12.34"),
                                                                                      Decimal("12.35")]
    with pytest.raises(CarbonFormatError, match=r"\[Decimal\('12.34'\), Decimal\('12.36'\)\] lie outside"):
        decode_page(decimal_page([1234, 1236], 8, 2, (1234, 1235)))
    with pytest.raises(CarbonFormatError, match="outside the page's stored min/max"):
        decode_page(decimal_page([-1236, 1234], 8, 2, (-1235, 1235)))


# ------------------------------------------------------------------ a real Apache CarbonData file


ALL_TYPES = "sdk-1.6-all-types"
ONE = b"\x18"  # compact thrift header of a one-element list<binary>: a page's min or max list
# the min/max of the 1.6 file's one page per column (each column holds one value), and the same statistic
# one unit lower: the values then lie above their page's stored max (the footer's lists hold every column)
LOWERED = {
    "datefield": (ONE + b"\x04" + struct.pack(">i", key(dt.date(2019, 3, 2))),
                  ONE + b"\x04" + struct.pack(">i", key(dt.date(2019, 3, 1)))),
    "timefield": (ONE + b"\x08" + ts_stat(1549911814000), ONE + b"\x08" + ts_stat(1549911813999)),
    "decimalfield": (ONE + b"\x03" + decimal_stat(1235, 2), ONE + b"\x03" + decimal_stat(1234, 2)),
    # a no-dictionary string's statistic is its bytes; a double's its 8 big-endian IEEE bytes (4.5 -> 4.0)
    "stringfield": (ONE + b"\x06robot9", ONE + b"\x06robot8"),
    "doublefield": (ONE + b"\x08" + struct.pack(">d", 4.5), ONE + b"\x08" + struct.pack(">d", 4.0)),
}


@pytest.mark.parametrize("name", sorted(LOWERED))
def test_real_file_values_above_their_lowered_page_max_are_refused(corpus: Path, tmp_path, name):
    [src] = (corpus / ALL_TYPES).glob("*.carbondata")
    data = src.read_bytes()
    old, new = LOWERED[name]
    # the page's min and max (the footer's blocklet index keeps a measure's and a string's in other bytes)
    assert data.count(old) == (1 if name in ("doublefield", "stringfield") else 2)
    with CarbonDataFile(str(src)) as f:
        assert f.read([name]).num_rows == 10  # the original reads
    bad = tmp_path / src.name
    bad.write_bytes(data.replace(old, new))
    with CarbonDataFile(str(bad)) as f, pytest.raises(CarbonFormatError, match="outside the page's stored") as e:
        f.read([name])
    assert f"column '{name}'" in str(e.value) and src.name in str(e.value)


def test_writer_refuses_dates_the_format_cannot_hold(tmp_path):
    # Arrow's date32 reaches far past year 9999; a file holding such a date would be refused on read
    too_late = (dt.date(9999, 12, 31) - EPOCH).days + 1
    with pytest.raises(CarbonSchemaError, match=f"'d': DATE value {too_late} days"):
        write_table(pa.table({"d": pa.array([0, too_late], pa.date32())}), str(tmp_path / "t"))
    ends = pa.array([dt.date(1, 1, 1), dt.date(9999, 12, 31), None], pa.date32())
    write_table(pa.table({"d": ends}), str(tmp_path / "t"))
    assert read_table(str(tmp_path / "t"))["d"].combine_chunks().equals(ends)


# ------------------------------------------------------------------ the compiled min/max against pyarrow's


@pytest.mark.parametrize("typ", [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.decimal128(15, 2),
                                 pa.decimal128(18, 0), pa.decimal128(30, 4)])
def test_page_min_max_equals_pyarrow(typ):
    rng = np.random.default_rng(11)
    bound = min(2 ** (typ.byte_width * 8 - 1) - 1, 10**15) if pa.types.is_integer(typ) else 10**14
    values = [int(v) for v in rng.integers(-bound // 2, bound // 2, 1000)]
    nulls = rng.random(1000) < 0.1
    values[int(np.flatnonzero(nulls)[1])] = bound  # the extremes sit in null slots: they must not count
    values[int(np.flatnonzero(nulls)[2])] = -bound
    full = pa.array([Decimal(v).scaleb(-typ.scale) for v in values] if pa.types.is_decimal(typ) else values, typ)
    for with_nulls, offset in [(False, 3), (True, 0), (True, 3), (True, 8), (True, 13)]:
        validity = pa.array(~nulls).buffers()[1] if with_nulls else None
        arr = pa.Array.from_buffers(typ, 1000, [validity, full.buffers()[1]])
        arr = arr.slice(offset, 980)  # an offset into the buffers, as a page slot has
        got = page_checks.decimal_min_max(arr) if pa.types.is_decimal(typ) else page_checks.integer_min_max(arr)
        want = pc.min_max(arr)
        assert got == (want["min"].as_py(), want["max"].as_py())
    assert page_checks.integer_min_max(pa.array([None, None], pa.int32())) == (None, None)
    assert page_checks.decimal_min_max(pa.array([None], pa.decimal128(9, 2))) == (None, None)


def testdecimal_min_max_sees_a_value_beyond_int64_in_a_narrow_column():
    # a corrupt 16-byte slot whose high word is not the sign of its low word: not an int64 value
    pairs = np.array([5, 0, 7, 1], np.int64)
    arr = pa.Array.from_buffers(pa.decimal128(18, 0), 2, [None, pa.py_buffer(pairs)])
    assert page_checks.decimal_min_max(arr) == (Decimal(5), Decimal(7 + 2**64))


# ------------------------------------------------------------------ strings and doubles against their min/max


def string_page(values: list[bytes | None], stats: tuple[bytes, bytes]) -> Page:
    # a no-dictionary STRING page: 2-byte big-endian lengths, a null stored as the marker @NU#LL$!
    stored = [b"@NU#LL$!" if v is None else v for v in values]
    data = b"".join(len(v).to_bytes(2, "big") + v for v in stored)
    return page(column(DataType.STRING), data, len(values), [], stats=stats)


def test_string_values_outside_page_min_max_are_refused_by_their_first_8_bytes():
    values = [b"robot10", None, b"robot2", b"", b"robot99-and-more"]
    p = string_page(values, (b"\0", b"robot99-and-more"))  # (an empty statistic means none)
    assert decode_page(p).to_pylist() == [None if v is None else v.decode() for v in values]
    # the keys are the values' first 8 bytes, zero-padded, big-endian (the null marker is no value)
    assert p.prefix_bounds == (0, int.from_bytes(b"robot99-", "big"))
    with pytest.raises(CarbonFormatError, match=r"decoded values beginning b''..b'robot99-' lie outside") as e:
        decode_page(string_page(values, (b"\0", b"robot9")))
    assert "column 'c'" in str(e.value)
    with pytest.raises(CarbonFormatError, match="outside the page's stored min/max"):
        decode_page(string_page([b"apple", b"banana"], (b"apricot", b"banana")))
    # a value beyond the max within the same first 8 bytes passes: the check is sound, not complete
    assert decode_page(string_page([b"robot99-and-more"], (b"robot99-", b"robot99-and"))).to_pylist() == [
        "robot99-and-more"]


def double_page(values: list[float], stats: tuple[float, float], codec: str = "snappy") -> Page:
    data = struct.pack(f"<{len(values)}d", *values)
    return page(column(DataType.DOUBLE, False), data, len(values), [E.DIRECT_COMPRESS],
                meta(MetaType.DOUBLE, MetaType.DOUBLE, max(values), min(values)),
                stats=(struct.pack(">d", stats[0]), struct.pack(">d", stats[1])), codec=codec)


def test_double_values_outside_page_min_max_are_refused_and_nan_bounds_nothing():
    nan = float("nan")
    got = decode_page(double_page([1.5, nan, -2.0], (-2.0, 1.5))).to_pylist()
    assert got[0] == 1.5 and got[1] != got[1] and got[2] == -2.0
    with pytest.raises(CarbonFormatError, match=r"\[-2.0, 1.75\] lie outside the page's stored min/max \[-2.0, 1.5\]"):
        decode_page(double_page([1.75, nan, -2.0], (-2.0, 1.5)))
    assert decode_page(double_page([nan, nan], (0.0, 0.0))).null_count == 0  # only NaN: nothing to compare


def test_float_min_max_equals_pyarrow_without_nan():
    rng = np.random.default_rng(5)
    values = rng.normal(0, 1e6, 1000)
    values[rng.random(1000) < 0.05] = np.nan
    nulls = rng.random(1000) < 0.1
    values[int(np.flatnonzero(nulls)[0])] = 1e30  # an extreme in a null slot must not count
    for typ in (pa.float64(), pa.float32()):
        full = pa.array(values.astype(typ.to_pandas_dtype()), typ)
        for with_nulls in (False, True):
            validity = pa.array(~nulls).buffers()[1] if with_nulls else None
            arr = pa.Array.from_buffers(typ, 1000, [validity, full.buffers()[1]]).slice(3, 990)
            want = pc.min_max(pc.filter(arr, pc.invert(pc.is_nan(arr))))
            assert page_checks.float_min_max(arr) == (want["min"].as_py(), want["max"].as_py())
    assert page_checks.float_min_max(pa.array([np.nan, None], pa.float64())) == (None, None)


def test_string_pages_are_checked_as_utf8_only_when_a_byte_needs_it():
    ok = [b"caf\xc3\xa9", b"plain", "\u6c7d\u8f66".encode()]
    assert decode_page(string_page(ok, (b"c", b"\xe6\xb1\xbd\xe8\xbd\xa6"))).to_pylist() == [
        "caf\u00e9", "plain", "\u6c7d\u8f66"]
    with pytest.raises(CarbonFormatError, match="string data is not valid UTF-8") as e:
        decode_page(string_page([b"fine", b"bad \xff\xfe"], (b"b", b"fine")))
    assert "column 'c'" in str(e.value)


def long_page(values: list[int], store: MetaType, stats: tuple[int, int], delta: bool = False) -> Page:
    """A LONG measure page stored narrow (ADAPTIVE_INTEGRAL: the values; ADAPTIVE_DELTA_INTEGRAL: max - v,
    as Java's AdaptiveDeltaIntegralCodec writes it)."""
    fmt = {MetaType.BYTE: "<b", MetaType.SHORT: "<h", MetaType.INT: "<i", MetaType.LONG: "<q"}[store]
    stored = [max(values) - v for v in values] if delta else values
    data = b"".join(struct.pack(fmt, v) for v in stored)
    st = (stat_bytes.stat_bytes(DataType.LONG, False, stats[0]), stat_bytes.stat_bytes(DataType.LONG, False, stats[1]))
    return page(column(DataType.LONG, dimension=False), data, len(values),
                [E.ADAPTIVE_DELTA_INTEGRAL if delta else E.ADAPTIVE_INTEGRAL],
                meta(MetaType.LONG, store, max(values), min(values)), stats=st)


@pytest.mark.parametrize("delta", [False, True])
def test_integer_values_outside_page_min_max_are_refused(delta):
    """An integer page's min and max come from its decode (no second pass): they still catch a value
    outside the stored statistics, on either side, after the delta is undone."""
    values = [-100, 5, 120, 7]
    p = long_page(values, MetaType.BYTE if not delta else MetaType.SHORT, (-100, 120), delta)
    assert decode_page(p).to_pylist() == values
    assert p.int_bounds == (-100, 120)
    with pytest.raises(CarbonFormatError, match=r"\[-100, 120\] lie outside the page's stored min/max \[-100, 119\]"):
        decode_page(long_page(values, MetaType.BYTE if not delta else MetaType.SHORT, (-100, 119), delta))
    with pytest.raises(CarbonFormatError, match="outside the page's stored min/max"):
        decode_page(long_page(values, MetaType.BYTE if not delta else MetaType.SHORT, (-99, 120), delta))


@pytest.mark.parametrize(("store", "delta"), [(MetaType.INT, False), (MetaType.INT, True), (MetaType.SHORT_INT, False)])
def test_integer_bounds_of_a_page_with_nulls_are_its_set_values(store, delta):
    """With nulls, the decode's min and max are numpy's over the set slots only: a null slot's stored
    integer (here the extremes) is no value, and a set value outside the statistics is still refused. The
    3-byte SHORT_INT store finds them in its decode too (no pass of the checks' own)."""
    rng = np.random.default_rng(11)
    values = [int(v) for v in rng.integers(-30000, 30000, 403)]
    nulls = rng.random(403) < 0.2
    values[int(np.flatnonzero(nulls)[0])], values[int(np.flatnonzero(nulls)[1])] = 32000, -32000
    kept = np.asarray(values)[~nulls]
    lo, hi = int(kept.min()), int(kept.max())

    def make(stats: tuple[int, int]) -> Page:
        made = short_int_page(values, stats) if store == MetaType.SHORT_INT else long_page(values, store, stats, delta)
        return with_nulls(made, list(nulls))

    p = make((lo, hi))
    assert decode_page(p).to_pylist() == [None if n else v for v, n in zip(values, nulls, strict=True)]
    assert p.int_bounds == (lo, hi)
    with pytest.raises(CarbonFormatError, match=rf"\[{lo}, {hi}\] lie outside the page's stored min/max"):
        decode_page(make((lo, hi - 1)))


@pytest.mark.parametrize("rows", [1, 7, 8, 13, 64, 100, 1001])
def test_page_validity_is_the_null_bitset_inverted_whole_bytes_at_a_time(rows):
    """A page's Arrow validity comes from its stored null bitset (java BitSet.toByteArray: trailing zero
    bytes left out) whole bytes at a time: pyarrow's own array of the same values with None, for nulls
    only near the start (a bitset shorter than the page), spread, at the last row, or none at all."""
    rng = np.random.default_rng(rows)
    values = [int(v) for v in rng.integers(-1000, 1000, rows)]
    layouts = [rng.random(rows) < 0.3, np.arange(rows) < min(3, rows), np.arange(rows) == rows - 1,
               np.zeros(rows, bool)]
    for nulls, presence in [(n, False) for n in layouts] + [(n, True) for n in layouts]:
        if presence and nulls.all():
            continue  # an empty bitset is read as a page without nulls, whichever way it points
        p = long_page(values, MetaType.SHORT, (min(values), max(values)))
        marked = ~nulls if presence else nulls  # a bitset that represents presence marks the set rows
        if marked.any():
            bits = np.packbits(marked, bitorder="little").tobytes().rstrip(b"\x00")
            p.chunk.presence = PresenceMeta(represents_presence=presence,
                                            present_bit_stream=compress.compress("snappy", bits))
        got = decode_page(p)
        want = pa.array([None if n else v for v, n in zip(values, nulls, strict=True)], pa.int64())
        assert got.equals(want) and got.null_count == int(nulls.sum())
        assert (p.nulls is None) == (not nulls.any())
        if p.nulls is not None:
            assert p.nulls.tolist() == nulls.tolist()


def test_chunk_of_pages_with_nulls_keeps_each_pages_nulls_at_every_bit_offset():
    """Pages of 300, 257, 64, 100, ... rows start inside bytes of the chunk's validity bitmap as well as on
    them: the chunk must equal its pages decoded one by one and laid end to end (pyarrow's concatenation)."""
    pages, values = long_chunk()
    rng = np.random.default_rng(5)
    nulls = []
    for p in pages[:-1]:  # the last, a DIRECT_COMPRESS page, stays without nulls
        mask = rng.random(p.rows) < 0.25
        with_nulls(p, list(mask))
        p.check_stats = False  # its statistics are of every stored value, null slots' included
        nulls += list(mask)
    nulls += [False] * pages[-1].rows
    got = decode_pages(pages)
    want = pa.array([None if n else v for v, n in zip(values, nulls, strict=True)], pa.int64())
    assert got.equals(want)
    fresh, _ = long_chunk()
    for a, b in zip(fresh, pages, strict=True):
        a.chunk.presence, a.check_stats = b.chunk.presence, False
    assert got.equals(pa.concat_arrays([decode_page(p) for p in fresh]))


def test_chunk_of_date_pages_keeps_the_rows_after_a_page_ending_inside_a_byte():
    """A page of 13 dates with a null key ends inside a byte of the chunk's validity; the next page has no
    null and starts in that byte: its first rows must stay set, as pyarrow's concatenation has them."""
    d = dt.date(2024, 2, 29)
    parts = [[d, None] + [d] * 11, [dt.date(2000, 1, 1)] * 8, [d] * 15 + [None]]
    pages = [date_page(dates) for dates in parts]
    got = decode_pages(pages)
    assert got.equals(pa.array([x for dates in parts for x in dates], pa.date32()))
    assert got.equals(pa.concat_arrays([decode_page(date_page(dates)) for dates in parts]))


def test_integer_bounds_of_a_page_are_numpys():
    rng = np.random.default_rng(3)
    for store, lo, hi in [(MetaType.BYTE, -128, 127), (MetaType.SHORT, -30000, 30000), (MetaType.INT, -2**31, 2**31 - 1)]:
        values = [int(v) for v in rng.integers(lo, hi, 500)]
        p = long_page(values, store, (min(values), max(values)))
        assert decode_page(p).to_pylist() == values
        assert p.int_bounds == (int(np.min(values)), int(np.max(values)))


def floating_page(values: list[float], decimals: int, stats: tuple[float, float], delta: bool = False) -> Page:
    """A DOUBLE measure page stored as scaled integers (Java's AdaptiveFloatingCodec: round(v * 10^d);
    AdaptiveDeltaFloatingCodec: round(max * 10^d) - round(v * 10^d)), in shorts."""
    f = 10**decimals
    scaled = [round(v * f) for v in values]
    stored = [round(max(values) * f) - s for s in scaled] if delta else scaled
    m = encoder_meta.serialize(EncoderMeta("c", int(MetaType.DOUBLE), int(ColumnType.MEASURE), -1, -1,
                                           int(MetaType.SHORT), decimals, 0, max(values), min(values)))
    return page(column(DataType.DOUBLE, False), struct.pack(f"<{len(stored)}h", *stored), len(values),
                [E.ADAPTIVE_DELTA_FLOATING if delta else E.ADAPTIVE_FLOATING], m,
                stats=(struct.pack(">d", stats[0]), struct.pack(">d", stats[1])))


@pytest.mark.parametrize("delta", [False, True])
def test_scaled_double_page_bounds_come_from_its_decode_and_catch_values_outside_its_stats(delta):
    values = [12.5, -3.1, 99.9, 0.0, 41.7]
    p = floating_page(values, 1, (-3.1, 99.9), delta)
    assert decode_page(p).to_pylist() == pytest.approx(values)
    got = decode_page(floating_page(values, 1, (-3.1, 99.9), delta))
    assert p.float_bounds == (pc.min(got).as_py(), pc.max(got).as_py())
    with pytest.raises(CarbonFormatError, match=r"lie outside the page's stored min/max \[-3.1, 99.8\]"):
        decode_page(floating_page(values, 1, (-3.1, 99.8), delta))
    with pytest.raises(CarbonFormatError, match="outside the page's stored min/max"):
        decode_page(floating_page(values, 1, (-3.0, 99.9), delta))


# ------------------------------------------------------------------ whole chunks: the plain-page path


def short_int_page(values: list[int], stats: tuple[int, int]) -> Page:
    """A LONG measure page stored as CarbonData's SHORT_INT: 3 bytes big-endian (not a plain page)."""
    data = b"".join(v.to_bytes(3, "big", signed=True) for v in values)
    st = (stat_bytes.stat_bytes(DataType.LONG, False, stats[0]), stat_bytes.stat_bytes(DataType.LONG, False, stats[1]))
    return page(column(DataType.LONG, dimension=False), data, len(values), [E.ADAPTIVE_INTEGRAL],
                meta(MetaType.LONG, MetaType.SHORT_INT, max(values), min(values)), stats=st)


def long_chunk(bad_stats: bool = False) -> tuple[list[Page], list[int]]:
    rng = np.random.default_rng(11)
    parts = [
        (MetaType.BYTE, False, [int(v) for v in rng.integers(-128, 128, 300)]),
        (MetaType.SHORT, True, [int(v) for v in rng.integers(10**6, 10**6 + 30000, 257)]),
        (MetaType.INT, False, [int(v) for v in rng.integers(-2**31, 2**31 - 1, 64)]),
        (MetaType.LONG, False, [int(v) for v in rng.integers(-2**62, 2**62, 33)] + [2**63 - 1, -2**63]),
        (MetaType.SHORT_INT, False, [int(v) for v in rng.integers(-2**23, 2**23, 100)]),
        (MetaType.BYTE, True, [-7, -100, 0, -3]),  # the page max is 0: stored 0 - v
    ]
    pages, values = [], []
    for k, (store, delta, vals) in enumerate(parts):
        hi = max(vals) - (1 if bad_stats and k == 1 else 0)
        if store == MetaType.SHORT_INT:
            pages.append(short_int_page(vals, (min(vals), hi)))
        else:
            pages.append(long_page(vals, store, (min(vals), hi), delta))
        values += vals
    pages[-1].check_stats = False  # nothing to catch a wrong sign but the decoding itself
    # DIRECT_COMPRESS longs (DirectCompressCodec): not a plain page, decoded by decode_page
    direct = [2**40, -5, 17]
    pages.append(page(column(DataType.LONG, dimension=False), struct.pack("<3q", *direct), 3, [E.DIRECT_COMPRESS],
                      meta(MetaType.LONG, MetaType.LONG, max(direct), min(direct))))
    return pages, values + direct


def test_plain_pages_of_a_chunk_decode_as_page_by_page_without_decode_page(monkeypatch):
    """Integer pages of every adaptive width (SHORT_INT: 3 bytes big-endian), with and without the delta
    against the page max, decode straight into the chunk's buffer; the DIRECT_COMPRESS page is left to
    decode_page."""
    pages, values = long_chunk()
    one_by_one = pa.concat_arrays([decode_page(p) for p in long_chunk()[0]])
    general = chunk_decode.decode_page
    calls = []
    monkeypatch.setattr(chunk_decode, "decode_page", lambda p, *a: calls.append(p) or general(p, *a))
    got = decode_pages(pages)
    assert got.to_pylist() == values and got.equals(one_by_one)
    assert calls == [pages[-1]]


def test_plain_decimal_pages_of_a_chunk_are_checked_as_decode_page_checks_them(monkeypatch):
    """Decimals stored as adaptive integers (the unscaled values, DataTypeUtil.bigDecimalToByte statistics):
    statistics of the column's scale compared as integers, of another scale as decimals."""
    unscaled = [[12345, -99, 7], [1, 2], [-400, 399]]
    general = chunk_decode.decode_page
    calls = []
    monkeypatch.setattr(chunk_decode, "decode_page", lambda p, *a: calls.append(p) or general(p, *a))

    def chunk(first_hi: int, third_stats: tuple[bytes, bytes] | None = None) -> list[Page]:
        pages = [decimal_page(unscaled[0], 9, 2, (-99, first_hi)), decimal_page(unscaled[1], 9, 2, (1, 2)),
                 decimal_page(unscaled[2], 9, 2, (-400, 399))]
        if third_stats is not None:  # the same bounds written at scale 3
            pages[2].chunk.min_max.min_values, pages[2].chunk.min_max.max_values = [third_stats[0]], [third_stats[1]]
        return pages

    got = decode_pages(chunk(12345, (decimal_stat(-4000, 3), decimal_stat(3990, 3))))
    assert got.to_pylist() == [Decimal(v).scaleb(-2) for r in unscaled for v in r] and calls == []
    with pytest.raises(CarbonFormatError, match=r"\[Decimal\('-0.99'\), Decimal\('123.45'\)\] lie outside the page's "
                                                r"stored min/max \[Decimal\('-0.99'\), Decimal\('123.44'\)\]"):
        decode_pages(chunk(12344))
    with pytest.raises(CarbonFormatError, match="outside the page's stored min/max"):
        decode_pages(chunk(12345, (decimal_stat(-4000, 3), decimal_stat(3989, 3))))
    with pytest.raises(CarbonFormatError, match=r"do not fit the column's DECIMAL\(4, 2\)"):
        decode_pages([decimal_page([12345, 1], 4, 2), decimal_page([1], 4, 2)])


def test_plain_page_outside_its_statistics_is_refused_as_decode_page_refuses_it():
    pages, values = long_chunk(bad_stats=True)
    hi = max(values[300:557])
    with pytest.raises(CarbonFormatError, match=rf"lie outside the page's stored min/max \[.*, {hi - 1}\]"):
        decode_pages(pages)


def test_plain_double_pages_of_a_chunk_skip_nan_and_catch_values_outside_their_statistics():
    nan = float("nan")
    raw = [[1.5, nan, -2.0], [nan, nan], [0.25, 1e300, -1e-300]]
    scaled = [12.5, -3.1, 99.9, 0.0]

    def chunk(last_hi: float) -> list[Page]:
        direct = [double_page(v, (-2.0, 1.5)) for v in raw[:2]] + [double_page(raw[2], (-1e-300, last_hi))]
        return direct + [floating_page(scaled, 1, (-3.1, 99.9)), floating_page(scaled, 1, (-3.1, 99.9), True)]

    got = decode_pages(chunk(1e300)).to_numpy(zero_copy_only=False)
    want = np.array([v for r in raw for v in r] + scaled + scaled)
    np.testing.assert_array_equal(got[~np.isnan(want)], want[~np.isnan(want)])
    assert np.isnan(got[np.isnan(want)]).all()
    with pytest.raises(CarbonFormatError, match=r"\[-1e-300, 1e\+300\] lie outside the page's stored min/max"):
        decode_pages(chunk(1e299))


def test_double_bounds_kernel_equals_numpy_nan_skipping_min_max():
    rng = np.random.default_rng(2)
    for values in (rng.normal(0, 1, 1000), np.array([np.nan, 3.0, np.inf, np.nan]), np.array([np.inf, np.inf]),
                   np.array([-np.inf]), np.array([np.nan, np.nan]), np.zeros(0)):
        found, lo, hi = kernels.double_bounds(values)
        numbers = values[~np.isnan(values)]
        assert found == bool(numbers.size)
        if numbers.size:
            assert (lo, hi) == (numbers.min(), numbers.max())


def test_plain_date_pages_of_a_chunk_decode_and_are_checked_as_decode_page_checks_them(monkeypatch):
    """DATE surrogates (DateDirectDictionaryGenerator: days + 1,073,741,823) straight into the chunk's
    buffer; a page holding the null key (1) is left to decode_page."""
    d = [dt.date(2024, 2, 29), dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1969, 12, 31)]
    general = chunk_decode.decode_page
    calls = []
    monkeypatch.setattr(chunk_decode, "decode_page", lambda p, *a: calls.append(p) or general(p, *a))
    pages = [date_page(d[:2], (d[1], d[0])), date_page([d[2], None], (d[2], d[2])), date_page(d[3:], (d[3], d[3]))]
    assert decode_pages(pages).to_pylist() == d[:3] + [None, d[3]]
    assert calls == [pages[1]]
    with pytest.raises(CarbonFormatError, match=r"\[-719162, 19782\] lie outside the page's stored min/max "
                                                r"\[-719162, 19781\] days since 1970-01-01"):
        decode_pages([date_page(d[:2], (d[1], d[0] - dt.timedelta(days=1))), date_page(d[3:], (d[3], d[3]))])
    with pytest.raises(CarbonFormatError, match="outside CarbonData's range"):
        decode_pages([date_page([], raw_keys=[key(d[1]) - 1, key(d[0])]), date_page(d[3:])])


@pytest.mark.parametrize("codec", ["snappy", "zstd", "gzip"])
def test_plain_double_pages_read_alone_or_in_a_chunk_under_every_compressor(codec):
    """snappy decompresses straight into the column's buffer; zstd and gzip pages are copied there."""
    values = [-4.916078894869243e16, 0.05, float("inf"), 6.2e-29]
    assert decode_pages([double_page(values, (values[0], float("inf")), codec)]).to_pylist() == values
    both = decode_pages([double_page(values, (values[0], float("inf")), codec), double_page([2.5], (2.5, 2.5), codec)])
    assert both.to_pylist() == values + [2.5]


@pytest.mark.parametrize("rows", [100, 70_000])  # one page; three pages
def test_local_dictionary_string_pages_outside_their_statistics_are_refused(tmp_path, rows):
    # every page's keys are looked up at once; each page is still checked against its stored min/max
    values = pa.array([f"robot{i % 10}" for i in range(rows)])
    path = tmp_path / "t"
    write_table(pa.table({"s": values}), str(path))
    [src] = path.rglob("*.carbondata")
    with CarbonDataFile(str(src)) as f:
        assert f.read(["s"]).column("s").combine_chunks().equals(values)
    data = src.read_bytes()
    old = b"\x18\x06robot9"  # a one-element min or max list: each page's max, and the blocklet's
    assert data.count(old) >= 2
    src.write_bytes(data.replace(old, b"\x18\x06robot8"))
    with CarbonDataFile(str(src)) as f, pytest.raises(CarbonFormatError, match="outside the page's stored"):
        f.read(["s"])
