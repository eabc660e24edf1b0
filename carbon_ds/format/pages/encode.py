"""Page encoders: one Arrow array slice (one page of one column) to the bytes and metadata CarbonData stores.

Codec choice follows CarbonData's DefaultEncodingFactory:

* integral values: the narrowest of BYTE/SHORT/SHORT_INT/INT/LONG holding either the value itself
  (ADAPTIVE_INTEGRAL) or ``max - value`` (ADAPTIVE_DELTA_INTEGRAL), the adaptive one on a tie; when
  neither is narrower than the source type, DIRECT_COMPRESS of the source values;
* floating values: ``round(v * 10^k)`` as an integral type (ADAPTIVE_FLOATING) when a decimal count k
  makes every value round-trip exactly and the result is narrower than 8 bytes, a whole-number DOUBLE
  page goes the integral way, anything else (NaN, infinities, -0.0, too many digits) DIRECT_COMPRESS;
* decimals up to precision 18 as their unscaled integers by the integral rule; wider ones as fixed-width
  big-endian two's complement bytes, DIRECT_COMPRESS.

Fixed-width page data is little-endian before compression, the 3-byte SHORT_INT big-endian. Nulls: a
java ``BitSet.toByteArray`` of null positions in the page's presence meta; the slot stores 0 (numbers),
``@NU#LL$!`` (strings) or nothing (binary, complex children).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, localcontext

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonSchemaError
from carbon_ds.format.pages import encoder_meta as em
from carbon_ds.format.pages.compress import compress
from carbon_ds.format.pages.encoder_meta import ColumnType, MetaType
from carbon_ds.format.pages.page_checks import MAX_DAYS, MIN_DAYS
from carbon_ds.format.pages.stat_bytes import DATE_OFFSET, MAX_STRING_MINMAX, NULL_DATE_KEY
from carbon_ds.format.thrift.structs import (
    BlockletMinMaxIndex,
    ChunkCompressionMeta,
    DataChunk2,
    DataType,
    Encoding,
    PresenceMeta,
    SortState,
)

NULL_BYTES = b"@NU#LL$!"
# Java's stored-type widths; SHORT_INT is the 3-byte type
_WIDTH = {MetaType.BYTE: 1, MetaType.SHORT: 2, MetaType.SHORT_INT: 3, MetaType.INT: 4, MetaType.LONG: 8}
_NP = {MetaType.BYTE: "<i1", MetaType.SHORT: "<i2", MetaType.INT: "<i4", MetaType.LONG: "<i8"}
_SRC_WIDTH = {
    DataType.BYTE: 1,
    DataType.BOOLEAN: 1,
    DataType.SHORT: 2,
    DataType.INT: 4,
    DataType.LONG: 8,
    DataType.TIMESTAMP: 8,
    DataType.DOUBLE: 8,
}
_META_TYPE = {
    DataType.STRING: MetaType.STRING,
    DataType.SHORT: MetaType.SHORT,
    DataType.INT: MetaType.INT,
    DataType.LONG: MetaType.LONG,
    DataType.DOUBLE: MetaType.DOUBLE,
    DataType.DECIMAL: MetaType.DECIMAL,
    DataType.TIMESTAMP: MetaType.TIMESTAMP,
    DataType.DATE: MetaType.DATE,
    DataType.BOOLEAN: MetaType.BOOLEAN,
    DataType.FLOAT: MetaType.FLOAT,
    DataType.BYTE: MetaType.BYTE,
    DataType.VARCHAR: MetaType.VARCHAR,
    DataType.BINARY: MetaType.BINARY,
}
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


@dataclass
class ColumnInfo:
    """What a page encoder needs to know about one physical (flattened) column."""

    name: str
    data_type: DataType
    is_dimension: bool
    column_type: ColumnType  # encoder-meta column type
    scale: int = -1
    precision: int = -1
    complex_child: bool = False
    to_stat: Callable[[object], bytes] | None = None  # python stat value -> min/max bytes


@dataclass
class EncodedPage:
    data: bytes  # compressed data followed by any rle / rowid bytes
    data_page_length: int
    uncompressed_size: int
    rows: int
    encoders: list[int]
    encoder_meta: list[bytes] | None = None
    null_bits: bytes = b""  # BitSet.toByteArray of null positions, uncompressed
    min: object = None  # python values comparable within a column
    max: object = None
    stats_present: bool = False
    sort_state: int | None = None
    rowid_page_length: int | None = None
    rle_page_length: int | None = None
    extra: dict = field(default_factory=dict)


# ----------------------------------------------------------------------------- helpers


def bitset_bytes(mask: np.ndarray | None) -> bytes:
    """java.util.BitSet.toByteArray of the set positions: LSB-first bytes, trailing zero bytes dropped."""
    if mask is None or not mask.any():
        return b""
    packed = np.packbits(mask.astype(bool), bitorder="little")
    last = int(np.flatnonzero(packed)[-1])
    return packed[: last + 1].tobytes()


def null_mask(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def fit(lo: int, hi: int) -> MetaType:
    """Narrowest stored type holding every value in [lo, hi] (Java's fitLongMinMax)."""
    if -128 <= lo and hi <= 127:
        return MetaType.BYTE
    if -32768 <= lo and hi <= 32767:
        return MetaType.SHORT
    if -(1 << 23) <= lo and hi <= (1 << 23) - 1:
        return MetaType.SHORT_INT
    if -(1 << 31) <= lo and hi <= (1 << 31) - 1:
        return MetaType.INT
    return MetaType.LONG


def choose_integral(
    vmin: int, vmax: int, src_width: int, complex_child: bool = False
) -> tuple[Encoding, MetaType | None]:
    """(encoding, stored type) by Java's selectCodecByAlgorithmForIntegral; stored None means direct."""
    adaptive = fit(vmin, vmax)
    delta_v = vmax - vmin
    delta = MetaType.LONG if delta_v > I64_MAX else fit(delta_v, delta_v)
    if not complex_child and min(_WIDTH[adaptive], _WIDTH[delta]) == src_width:
        return Encoding.DIRECT_COMPRESS, None
    if _WIDTH[adaptive] <= _WIDTH[delta]:
        return Encoding.ADAPTIVE_INTEGRAL, adaptive
    return Encoding.ADAPTIVE_DELTA_INTEGRAL, delta


def store_integers(values: np.ndarray, store: MetaType) -> bytes:
    """int64 values narrowed to the stored type (wrapping is exact: the values fit by construction)."""
    if store == MetaType.SHORT_INT:
        be = values.astype(">i4").view(np.uint8).reshape(-1, 4)
        return be[:, 1:].tobytes()
    return values.astype(_NP[store]).tobytes()


def _meta(
    info: ColumnInfo,
    store: int,
    vmax: object,
    vmin: object,
    compressor: str,
    decimals: int = 0,
    schema_type: int | None = None,
) -> bytes:
    st = _META_TYPE[info.data_type] if schema_type is None else schema_type
    return em.serialize(
        em.EncoderMeta(
            info.name,
            int(st),
            int(info.column_type),
            info.scale if info.data_type == DataType.DECIMAL else -1,
            info.precision if info.data_type == DataType.DECIMAL else -1,
            int(store),
            decimals,
            0,
            vmax,
            vmin,
            compressor,
        )
    )


def _finish(raw: bytes, compressor: str, rows: int, encoders: list[int], **kw) -> EncodedPage:
    data = compress(compressor, raw)
    return EncodedPage(
        data=data,
        data_page_length=len(data),
        uncompressed_size=len(raw),
        rows=rows,
        encoders=[int(e) for e in encoders],
        **kw,
    )


def _minmax_np(values: np.ndarray, nulls: np.ndarray | None) -> tuple[object, object, bool]:
    v = values if nulls is None else values[~nulls]
    if v.size == 0:
        return None, None, False
    if v.dtype.kind == "f":
        finite = v[~np.isnan(v)]
        if finite.size == 0:
            return None, None, False
        return float(finite.min()), float(finite.max()), True
    return int(v.min()), int(v.max()), True


# ----------------------------------------------------------------------------- integral / floating


def encode_integral(
    info: ColumnInfo, values: np.ndarray, nulls: np.ndarray | None, compressor: str, src: DataType | None = None
) -> EncodedPage:
    """Integral-valued page (BYTE..LONG, TIMESTAMP ms, BOOLEAN as 0/1); ``values`` int64 with nulls as 0."""
    src = src or info.data_type
    n = len(values)
    vmin = int(values.min()) if n else 0
    vmax = int(values.max()) if n else 0
    enc, store = choose_integral(vmin, vmax, _SRC_WIDTH[src], info.complex_child)
    if enc == Encoding.DIRECT_COMPRESS:
        store = {1: MetaType.BYTE, 2: MetaType.SHORT, 4: MetaType.INT, 8: MetaType.LONG}[_SRC_WIDTH[src]]
        raw = store_integers(values, store)
    elif enc == Encoding.ADAPTIVE_INTEGRAL:
        raw = store_integers(values, store)
    else:
        delta = (np.uint64(vmax & 0xFFFFFFFFFFFFFFFF) - values.view(np.uint64)).view(np.int64)
        raw = store_integers(delta, store)
    smin, smax, present = _minmax_np(values, nulls)
    encoders = [enc]
    if info.complex_child:
        encoders.append(Encoding.INT_LENGTH_COMPLEX_CHILD_BYTE_ARRAY)
    return _finish(
        raw,
        compressor,
        n,
        encoders,
        encoder_meta=[_meta(info, store, vmax, vmin, compressor)],
        null_bits=bitset_bytes(nulls),
        min=smin,
        max=smax,
        stats_present=present,
        rowid_page_length=None if enc == Encoding.DIRECT_COMPRESS else 0,
    )


def _decimal_count(v: np.ndarray, is_float: bool) -> int | None:
    """Smallest k with every value == round(v * 10^k) / 10^k exactly, as each of CarbonData's readers divides.

    AdaptiveFloatingCodec has two: the row path divides in double (then narrows a FLOAT), the vector path
    of a FLOAT page converts the stored integer to float and divides by (float) 10^k in float arithmetic,
    which loses digits of an integer past 2^24. A FLOAT page takes k only when both give the value back.
    """
    if v.size == 0:
        return 0
    absmax = float(np.abs(v).max())
    for k in range(0, 10):
        f = 10.0**k
        if absmax * f > 2.0**31:
            return None
        scaled = np.rint(v.astype(np.float64) * f)
        back = scaled / f
        if is_float:
            back = back.astype(np.float32)
            in_float = scaled.astype(np.float32) / np.float32(f)
            if not np.array_equal(in_float, v):
                continue
        if np.array_equal(back, v):
            return k
    return None


def encode_floating(info: ColumnInfo, values: np.ndarray, nulls: np.ndarray | None, compressor: str) -> EncodedPage:
    is_float = info.data_type == DataType.FLOAT
    n = len(values)
    smin, smax, present = _minmax_np(values, nulls)
    ok = n > 0 and bool(np.isfinite(values).all()) and not bool((np.signbit(values) & (values == 0)).any())
    k = _decimal_count(values, is_float) if ok else None
    extra = [Encoding.INT_LENGTH_COMPLEX_CHILD_BYTE_ARRAY] if info.complex_child else []
    common = dict(null_bits=bitset_bytes(nulls), min=smin, max=smax, stats_present=present)
    vmax = float(values.max()) if ok else 0.0
    vmin = float(values.min()) if ok else 0.0
    if k == 0 and not is_float:
        ints = values.astype(np.int64)
        enc, store = choose_integral(int(ints.min()), int(ints.max()), 8, info.complex_child)
        if enc != Encoding.DIRECT_COMPRESS:
            if enc == Encoding.ADAPTIVE_INTEGRAL:
                raw = store_integers(ints, store)
            else:
                raw = store_integers(int(ints.max()) - ints, store)
            return _finish(
                raw,
                compressor,
                n,
                [enc, *extra],
                encoder_meta=[_meta(info, store, vmax, vmin, compressor)],
                rowid_page_length=0,
                **common,
            )
    elif k is not None:
        f = 10.0**k
        scaled = np.rint(values.astype(np.float64) * f).astype(np.int64)
        store = fit(0, int(np.abs(scaled).max()) if n else 0)
        if _WIDTH[store] < 8:
            return _finish(
                store_integers(scaled, store),
                compressor,
                n,
                [Encoding.ADAPTIVE_FLOATING, *extra],
                encoder_meta=[_meta(info, store, vmax, vmin, compressor, decimals=k)],
                rowid_page_length=0,
                **common,
            )
    # direct: the source values themselves
    store = MetaType.FLOAT if is_float else MetaType.DOUBLE
    raw = values.astype("<f4" if is_float else "<f8").tobytes()
    mx = float(np.nanmax(values)) if n and not np.isnan(values).all() else 0.0
    mn = float(np.nanmin(values)) if n and not np.isnan(values).all() else 0.0
    return _finish(
        raw,
        compressor,
        n,
        [Encoding.DIRECT_COMPRESS, *extra],
        encoder_meta=[_meta(info, store, mx, mn, compressor)],
        **common,
    )


# ----------------------------------------------------------------------------- decimals, booleans


def decimal_unscaled(arr: pa.Array) -> list[int]:
    """Unscaled integers of a decimal128/256 array (nulls as 0), exact at any precision."""
    width = 16 if pa.types.is_decimal128(arr.type) else 32
    raw = arr.buffers()[1].to_pybytes()[arr.offset * width : (arr.offset + len(arr)) * width]
    vals = [int.from_bytes(raw[i : i + width], "little", signed=True) for i in range(0, len(raw), width)]
    if arr.null_count:
        nulls = arr.is_null().to_pylist()
        vals = [0 if z else v for v, z in zip(vals, nulls, strict=True)]
    return vals


def decimal_int64(arr: pa.Array) -> np.ndarray:
    """Unscaled int64 of a decimal128 array with precision <= 18, vectorised from the 16-byte buffer."""
    arr = arr.fill_null(Decimal(0)) if arr.null_count else arr
    if pa.types.is_decimal256(arr.type):
        return np.array(decimal_unscaled(arr), dtype=np.int64)
    buf = np.frombuffer(arr.buffers()[1], dtype="<i8")
    return buf[2 * arr.offset : 2 * (arr.offset + len(arr)) : 2].copy()  # low 64 bits; fits by precision


def min_bytes_for_precision(precision: int) -> int:
    n = 1
    while 2 ** (8 * n - 1) < 10**precision:
        n += 1
    return n


def encode_decimal(info: ColumnInfo, arr: pa.Array, compressor: str) -> EncodedPage:
    nulls = null_mask(arr)
    n = len(arr)
    scale = info.scale if info.scale >= 0 else arr.type.scale
    valid = arr.drop_null()
    present = len(valid) > 0
    mm = pc.min_max(valid) if present else None
    smin = mm["min"].as_py() if present else None
    smax = mm["max"].as_py() if present else None
    if info.precision <= 18:
        values = decimal_int64(arr)
        vmin = int(values.min()) if n else 0
        vmax = int(values.max()) if n else 0
        src_width = 4 if info.precision <= 9 else 8
        adaptive = fit(vmin, vmax)
        if src_width == 4:
            delta = MetaType.LONG if adaptive == MetaType.LONG else fit(vmax - vmin, vmax - vmin)
        else:
            delta = MetaType.LONG
        if _WIDTH[adaptive] <= _WIDTH[delta]:
            enc, store, stored = Encoding.ADAPTIVE_INTEGRAL, adaptive, values
        else:
            enc, store = Encoding.ADAPTIVE_DELTA_INTEGRAL, delta
            stored = (np.uint64(vmax & 0xFFFFFFFFFFFFFFFF) - values.view(np.uint64)).view(np.int64)
        with localcontext() as ctx:
            ctx.prec = 100
            meta = _meta(info, store, Decimal(vmax).scaleb(-scale), Decimal(vmin).scaleb(-scale), compressor)
        return _finish(
            store_integers(stored, store),
            compressor,
            n,
            [enc],
            encoder_meta=[meta],
            null_bits=bitset_bytes(nulls),
            min=smin,
            max=smax,
            stats_present=present,
            rowid_page_length=0,
        )
    width = min_bytes_for_precision(info.precision)
    unscaled = decimal_unscaled(arr)
    raw = b"".join(u.to_bytes(width, "big", signed=True) for u in unscaled)
    meta = _meta(info, MetaType.DECIMAL, smax if present else Decimal(0), smin if present else Decimal(0), compressor)
    return _finish(
        raw,
        compressor,
        n,
        [Encoding.DIRECT_COMPRESS],
        encoder_meta=[meta],
        null_bits=bitset_bytes(nulls),
        min=smin,
        max=smax,
        stats_present=present,
    )


def encode_boolean(info: ColumnInfo, arr: pa.Array, compressor: str) -> EncodedPage:
    """BOOLEAN: one byte a row (0/1), DIRECT_COMPRESS, as Java's DirectCompressCodec writes it."""
    nulls = null_mask(arr)
    values = np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.int8)
    n = len(values)
    smin, smax, present = _minmax_np(values.astype(np.int64), nulls)
    vmax = int(values.max()) if n else 0
    vmin = int(values.min()) if n else 0
    encoders = [Encoding.DIRECT_COMPRESS]
    if info.complex_child:
        encoders.append(Encoding.INT_LENGTH_COMPLEX_CHILD_BYTE_ARRAY)
    return _finish(
        values.tobytes(),
        compressor,
        n,
        encoders,
        encoder_meta=[_meta(info, MetaType.BYTE, vmax, vmin, compressor)],
        null_bits=bitset_bytes(nulls),
        min=smin,
        max=smax,
        stats_present=present,
    )


# ----------------------------------------------------------------------------- byte arrays


def _plain_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(int64 offsets rebased to 0, uint8 data) of a string/binary array without nulls."""
    if pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type):
        off_t = np.int64
    else:
        off_t = np.int32
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=off_t)[arr.offset : arr.offset + len(arr) + 1].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    data = data[offsets[0] : offsets[-1]]
    return offsets - offsets[0], data


def lv_bytes(arr: pa.Array, header: int) -> bytes:
    """Concatenated (big-endian length of ``header`` bytes, value) of a null-free string/binary array."""
    if (
        pa.types.is_string_view(arr.type)
        or pa.types.is_binary_view(arr.type)
        or pa.types.is_fixed_size_binary(arr.type)
    ):
        arr = arr.cast(pa.binary())
    offsets, data = _plain_buffers(arr)
    n = len(offsets) - 1
    lens = np.diff(offsets)
    out = np.empty(len(data) + header * n, dtype=np.uint8)
    starts = offsets[:-1] + header * np.arange(n, dtype=np.int64)
    hdr = lens.astype(">u2" if header == 2 else ">u4").view(np.uint8).reshape(n, header)
    pos = starts[:, None] + np.arange(header)
    is_data = np.ones(len(out), dtype=bool)
    is_data[pos.ravel()] = False
    out[pos.ravel()] = hdr.ravel()
    out[is_data] = data
    return out.tobytes()


def byte_lengths_max(arr: pa.Array) -> int:
    if len(arr) == 0 or arr.null_count == len(arr):
        return 0
    return int(pc.max(pc.binary_length(arr)).as_py() or 0)


def string_stats(arr: pa.Array) -> tuple[object, object, bool]:
    """Raw-byte min/max of a string page; absent past MAX_STRING_MINMAX bytes.

    A null counts as its stored bytes ``@NU#LL$!``, as in Java's StringStatsCollector (the load hands it
    the marker): CarbonData answers ``IS NULL`` by looking for the marker between min and max.
    """
    valid = arr.drop_null()
    if byte_lengths_max(valid) > MAX_STRING_MINMAX:
        return None, None, False
    if len(valid) == 0:
        return NULL_BYTES, NULL_BYTES, True
    as_bin = valid.cast(pa.binary()) if not pa.types.is_binary(valid.type) else valid
    mm = pc.min_max(as_bin)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if arr.null_count:
        lo, hi = min(lo, NULL_BYTES), max(hi, NULL_BYTES)
    return lo, hi, True


def fill_null_bytes(arr: pa.Array, fill: bytes) -> pa.Array:
    if arr.null_count == 0:
        return arr
    as_bin = arr.cast(
        pa.large_binary() if pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type) else pa.binary()
    )
    return as_bin.fill_null(pa.scalar(fill, as_bin.type))


def encode_plain_bytes(info: ColumnInfo, arr: pa.Array, compressor: str) -> EncodedPage:
    """A no-dictionary STRING / VARCHAR / BINARY dimension page of LV values."""
    nulls = null_mask(arr)
    wide = info.data_type in (DataType.VARCHAR, DataType.BINARY)
    filled = fill_null_bytes(arr, NULL_BYTES)
    if not wide and len(filled) and byte_lengths_max(filled) > 32000:
        raise ValueError(info.name)
    raw = lv_bytes(filled, 4 if wide else 2)
    if info.data_type == DataType.BINARY:
        smin, smax, present = None, None, False
    else:
        smin, smax, present = string_stats(arr)
    encoders = [Encoding.DIRECT_COMPRESS_VARCHAR] if wide else []
    return _finish(
        raw,
        compressor,
        len(arr),
        encoders,
        null_bits=bitset_bytes(nulls),
        min=smin,
        max=smax,
        stats_present=present,
        sort_state=int(SortState.SORT_NATIVE),
    )


def encode_dict_keys(info: ColumnInfo, keys: np.ndarray, arr: pa.Array, compressor: str) -> EncodedPage:
    """A local-dictionary page: 3-byte big-endian surrogate keys (1 = null)."""
    raw = keys.astype(">u4").view(np.uint8).reshape(-1, 4)[:, 1:].tobytes()
    smin, smax, present = string_stats(arr)
    encoders = [Encoding.DIRECT_COMPRESS_VARCHAR] if info.data_type == DataType.VARCHAR else []
    return _finish(
        raw,
        compressor,
        len(arr),
        encoders,
        null_bits=bitset_bytes(null_mask(arr)),
        min=smin,
        max=smax,
        stats_present=present,
        sort_state=int(SortState.SORT_NATIVE),
    )


def encode_date(info: ColumnInfo, arr: pa.Array, compressor: str) -> EncodedPage:
    """DATE dimension: 4-byte big-endian surrogate keys (days + 2^30 - 1; null = 1), as Java 1.6 wrote it."""
    nulls = null_mask(arr)
    days = np.asarray(arr.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    if days.size and (days.min() < MIN_DAYS or days.max() > MAX_DAYS):
        # readers (Java's, and ours: see page_checks) refuse such a page as corrupt
        bad = int(days[(days < MIN_DAYS) | (days > MAX_DAYS)][0])
        raise CarbonSchemaError(f"column {info.name!r}: DATE value {bad} days from 1970-01-01 lies outside "
                                "CarbonData's range 0001-01-01..9999-12-31")
    keys = days + DATE_OFFSET
    if nulls is not None:
        keys[nulls] = NULL_DATE_KEY
    # the null key counts in the statistics, as Java's KeyPageStatsCollector sees every key: CarbonData
    # answers ``IS NULL`` by looking for key 1 between min and max
    smin, smax, present = _minmax_np(keys, None)
    return _finish(
        keys.astype(">i4").tobytes(),
        compressor,
        len(arr),
        [Encoding.DICTIONARY, Encoding.RLE],
        null_bits=bitset_bytes(nulls),
        min=smin,
        max=smax,
        stats_present=present,
        sort_state=int(SortState.SORT_NATIVE),
    )


def encode_complex_bytes(info: ColumnInfo, values: pa.Array, compressor: str, fill: bytes = b"") -> EncodedPage:
    """A complex child stored as int-length LV values (strings, binaries and non-integral scalars)."""
    nulls = null_mask(values)
    raw = lv_bytes(fill_null_bytes(values, fill), 4)
    meta = _meta(info, MetaType.BYTE_ARRAY, None, None, compressor, schema_type=MetaType.BYTE_ARRAY)
    return _finish(
        raw,
        compressor,
        len(values),
        [Encoding.DIRECT_COMPRESS, Encoding.INT_LENGTH_COMPLEX_CHILD_BYTE_ARRAY],
        encoder_meta=[meta],
        null_bits=bitset_bytes(nulls),
    )


def encode_complex_parent(
    info: ColumnInfo, raw: bytes, rows: int, nulls: np.ndarray | None, compressor: str
) -> EncodedPage:
    meta = _meta(info, MetaType.BYTE_ARRAY, None, None, compressor, schema_type=MetaType.BYTE_ARRAY)
    return _finish(
        raw,
        compressor,
        rows,
        [Encoding.DIRECT_COMPRESS, Encoding.INT_LENGTH_COMPLEX_CHILD_BYTE_ARRAY],
        encoder_meta=[meta],
        null_bits=bitset_bytes(nulls),
    )


# ----------------------------------------------------------------------------- DataChunk2


def to_chunk2(page: EncodedPage, compressor: str, min_b: bytes, max_b: bytes, present: bool) -> DataChunk2:
    return DataChunk2(
        chunk_meta=ChunkCompressionMeta(
            compression_codec=1,  # DEPRECATED: the compressor is named by compressor_name
            total_uncompressed_size=page.uncompressed_size,
            total_compressed_size=len(page.data),
            compressor_name=compressor,
        ),
        rowMajor=False,
        data_page_length=page.data_page_length,
        rowid_page_length=page.rowid_page_length,
        rle_page_length=page.rle_page_length,
        presence=PresenceMeta(represents_presence=False, present_bit_stream=compress(compressor, page.null_bits)),
        sort_state=page.sort_state,
        encoders=page.encoders,
        encoder_meta=page.encoder_meta,
        min_max=BlockletMinMaxIndex(min_values=[min_b], max_values=[max_b], min_max_presence=[present]),
        numberOfRowsInpage=page.rows,
    )
