"""Decoding one CarbonData V3 page (a DataChunk2 and its bytes) into an Arrow array.

Two families of pages exist, and Java tells them apart by the page's encoder list:
- "encoded with meta" pages (ADAPTIVE_*, DIRECT_COMPRESS, RLE_INTEGRAL): one ``encoder_meta`` blob names
  the stored type; integral values are little-endian (SHORT_INT is 3 bytes big-endian);
- legacy dimension pages (no encoders, DICTIONARY/DIRECT_DICTIONARY, RLE, INVERTED_INDEX,
  DIRECT_COMPRESS_VARCHAR): length-value strings, local- or global-dictionary keys, date surrogates,
  with optional data RLE and a row-id permutation after the data.
Measures of CarbonData 1.1/1.2 use the DELTA encoding with an older meta layout (``_legacy_measure``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from decimal import Decimal, localcontext

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonFormatError
from carbon_ds.format.arrow_types import TIMESTAMP_TYPE
from carbon_ds.format.pages import compress, encoder_meta, kernels, page_checks
from carbon_ds.format.pages.direct_dictionary import DEFAULT as DEFAULT_TIMESTAMP_KEYS
from carbon_ds.format.pages.direct_dictionary import NULL_KEY, TimestampKeys
from carbon_ds.format.pages.encoder_meta import STORE_WIDTH, ColumnType, MetaType
from carbon_ds.format.thrift.parse_cache import BytesCache
from carbon_ds.format.thrift.structs import ColumnSchema, DataChunk2, DataType, Encoding

E = Encoding
META_ENCODINGS = {
    E.ADAPTIVE_INTEGRAL,
    E.ADAPTIVE_DELTA_INTEGRAL,
    E.ADAPTIVE_FLOATING,
    E.ADAPTIVE_DELTA_FLOATING,
    E.DIRECT_COMPRESS,
    E.RLE_INTEGRAL,
}
DATE_OFFSET = 1073741823  # Integer.MAX_VALUE >> 1: the surrogate of 1970-01-01; 1 means null
MAX_PAGE_ROWS = 1 << 22  # far above CarbonData's 32,000 default; guards allocations
MAX_VAR_PAGE = (1 << 31) - 1
NULL_BITSETS_KEY = "null_bitsets"  # footer extra_info key; value "exact" as written by carbon-ds
_SIMPLE = {
    DataType.SHORT: pa.int16(),
    DataType.INT: pa.int32(),
    DataType.LONG: pa.int64(),
    DataType.BYTE: pa.int8(),
    DataType.DOUBLE: pa.float64(),
    DataType.FLOAT: pa.float32(),
}


class _computed_once:
    """``functools.cached_property`` without the lock Python 3.11 takes on each first access: a page's
    encodings and compressor are asked once per page of every read (a page is never shared by threads
    before it is decoded)."""

    def __init__(self, fn):
        self.fn = fn
        self.name = fn.__name__

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.fn(obj)
        return value


@dataclass
class Page:
    """Where a page came from (for error messages) and its raw bytes: data, then row ids, then RLE."""

    column: ColumnSchema
    chunk: DataChunk2
    raw: memoryview
    rows: int
    path: str
    offset: int
    # where decode_pages wants this page's values (a slice of the whole chunk's buffer); decoders that can
    # write there directly do, the others return their own array and decode_pages copies it in
    out: np.ndarray | None = None
    # set for files whose footer says NULL_BITSETS_KEY: string nulls come from the presence bitset only and
    # a stored ``@NU#LL$!`` is that string (CarbonData's own files null every value equal to the marker)
    exact_nulls: bool = False
    # set by the reader for top-level plain columns: the decoded values must lie within the page's stored
    # min/max (CarbonData pages carry no checksum; this catches much corruption at the cost of a min/max)
    check_stats: bool = False
    # how direct-dictionary TIMESTAMP keys map to time (the writer's carbon.timegranularity / cutOffTimestamp)
    timestamp_keys: TimestampKeys = DEFAULT_TIMESTAMP_KEYS
    # min and max unscaled value of a decimal page's set values, when its decoding found them on the way
    # (the page checks then need no pass of their own)
    unscaled_bounds: tuple[int, int] | None = None
    # an integer page's min and max (of its set values) found while decoding it
    int_bounds: tuple[int, int] | None = None
    # a double page's min and max found while decoding it (no null in the page)
    float_bounds: tuple[float, float] | None = None
    # least and greatest 8-byte prefix key (see kernels.lv_decode) of a length-value page's non-null values
    prefix_bounds: tuple[int, int] | None = None

    def fail(self, what: str, at: int = 0) -> CarbonFormatError:
        return CarbonFormatError(f"column {self.column.column_name!r}: {what}", self.path, self.offset + at)

    @_computed_once
    def validity_bits(self) -> np.ndarray | None:
        """Arrow's validity bitmap of the page (bit i set: row i has a value), as bytes; None when no row is
        null. Made once from the presence bitset, whole bytes at a time: the fast path, the decode and the
        checks of a page all ask."""
        return _read_validity(self)

    @_computed_once
    def validity(self) -> pa.Buffer | None:
        bits = self.validity_bits
        return None if bits is None else pa.py_buffer(bits)

    @_computed_once
    def nulls(self) -> np.ndarray | None:
        """A byte per row, set where the row is null; None when no row is. Read-only."""
        bits = self.validity_bits
        if bits is None:
            return None
        nulls = ~np.unpackbits(bits, bitorder="little")[: self.rows].view(np.bool_)
        nulls.setflags(write=False)
        return nulls

    @_computed_once
    def encodings(self) -> set[int]:
        return set(self.chunk.encoders or [])

    @_computed_once
    def compressor(self) -> str:
        try:
            return compress.normalize(self.chunk.chunk_meta.compressor_name)
        except CarbonFormatError as e:
            raise self.fail(str(e)) from None

    def section(self, start: int, length: int | None) -> memoryview:
        n = length or 0
        if n < 0 or start < 0 or start + n > len(self.raw):
            raise self.fail(f"page section {start}+{n} exceeds the page of {len(self.raw)} bytes", start)
        return self.raw[start : start + n]

    def data(self, limit: int, into: np.ndarray | None = None) -> np.ndarray:
        """The decompressed data section; into ``into`` (a uint8 array) when its size is exactly right."""
        comp = self.section(0, self.chunk.data_page_length)
        try:
            return compress.decompress(self.compressor, comp, limit, into)
        except CarbonFormatError as e:
            raise self.fail(str(e)) from None


def arrow_type_of(col: ColumnSchema) -> pa.DataType:
    key = (col.data_type, col.precision, col.scale)
    typ = _ARROW_TYPES.get(key)
    if typ is None:  # asked on every page: a handful of distinct keys per table
        typ = _ARROW_TYPES[key] = _arrow_type_of(col)
    return typ


_ARROW_TYPES: dict[tuple, pa.DataType] = {}


def _arrow_type_of(col: ColumnSchema) -> pa.DataType:
    dt = col.data_type
    if dt in (DataType.STRING, DataType.VARCHAR):
        return pa.string()
    if dt == DataType.BINARY:
        return pa.binary()
    if dt == DataType.BOOLEAN:
        return pa.bool_()
    if dt == DataType.TIMESTAMP:
        return TIMESTAMP_TYPE
    if dt == DataType.DATE:
        return pa.date32()
    if dt == DataType.DECIMAL:
        precision = col.precision if col.precision and col.precision > 0 else 38
        return pa.decimal128(precision, col.scale if col.scale and col.scale > 0 else 0)
    if dt in _SIMPLE:
        return _SIMPLE[dt]
    raise CarbonFormatError(f"column {col.column_name!r} has unsupported data type {dt}")


# ------------------------------------------------------------------ small helpers


def null_mask(page: Page) -> np.ndarray | None:
    """Null positions from the page's presence bitset (``Page.nulls``: decoded once, read-only)."""
    return page.nulls


def _read_validity(page: Page) -> np.ndarray | None:
    """``Page.validity_bits`` from the presence bitset (java BitSet.toByteArray: bit i = row i, LSB first,
    trailing zero bytes left out; set where null, or where present when the page says it represents
    presence)."""
    pres = page.chunk.presence
    if pres is None or not pres.present_bit_stream:
        return None
    if pres.present_bit_stream == b"\x00" and page.compressor == "snappy":
        return None  # the snappy block of an empty BitSet (a page without nulls)
    try:
        bits = compress.decompress(page.compressor, bytes(pres.present_bit_stream), page.rows // 8 + 64)
    except CarbonFormatError as e:
        raise page.fail(f"null bitset: {e}") from None
    if not bits.any():
        return None
    rows = page.rows
    size = (rows + 7) // 8
    have = min(size, bits.shape[0])
    if pres.represents_presence:
        out = np.zeros(size, np.uint8)
        out[:have] = bits[:have]
    else:
        out = np.full(size, 0xFF, np.uint8)
        np.invert(bits[:have], out=out[:have])
    if rows % 8:
        out[-1] |= np.uint8(0xFF << (rows % 8) & 0xFF)  # past the last row: set, so "all set" means no null
    if (out == 0xFF).all():
        return None
    out.setflags(write=False)
    return out


def bitset_positions(bits: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.unpackbits(bits, bitorder="little"))


def be_uint(data: np.ndarray, width: int) -> np.ndarray:
    """Unsigned big-endian integers of ``width`` bytes (1-4) packed back to back."""
    if data.shape[0] % width:
        raise ValueError(f"{data.shape[0]} bytes are not a whole number of {width}-byte values")
    out = np.empty(data.shape[0] // width, np.int64)
    kernels.be_unsigned(data, width, out)
    return out


def stored_integers(page: Page, data: np.ndarray, store: int) -> np.ndarray:
    """The stored integral values of an adaptive page, widened to int64."""
    width = STORE_WIDTH.get(MetaType(store)) if store in MetaType._value2member_map_ else None
    if width is None:
        raise page.fail(f"stored type {store} is not integral")
    if data.shape[0] != page.rows * width:
        raise page.fail(f"page holds {data.shape[0]} bytes, expected {page.rows} x {width}")
    if width == 3:
        v = be_uint(data, 3)
        return np.where(v >= 1 << 23, v - (1 << 24), v)
    dtype = {1: "<i1", 2: "<i2", 4: "<i4", 8: "<i8"}[width]
    return data.view(dtype).astype(np.int64)


def _stored_view(page: Page, data: np.ndarray, store: int) -> tuple[np.ndarray, int]:
    """The stored integral values of an adaptive page as a little-endian view (3-byte SHORT_INT stays
    raw bytes), and their width."""
    width = STORE_WIDTH.get(store)  # type: ignore[call-overload]
    if width is None:
        raise page.fail(f"stored type {store} is not integral")
    if data.shape[0] != page.rows * width:
        raise page.fail(f"page holds {data.shape[0]} bytes, expected {page.rows} x {width}")
    if width == 3:
        return data, 3
    return data.view(LE_INT[width]), width


LE_INT = {1: np.dtype("<i1"), 2: np.dtype("<i2"), 4: np.dtype("<i4"), 8: np.dtype("<i8")}


INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def integer_dtype(typ: pa.DataType) -> np.dtype | None:
    """The numpy type of the values buffer of a column whose values are integers, else None."""
    try:
        return _INTEGER_DTYPES[typ]
    except KeyError:
        pass
    if pa.types.is_integer(typ):
        dtype: np.dtype | None = np.dtype(typ.to_pandas_dtype())
    elif pa.types.is_timestamp(typ):
        dtype = np.dtype(np.int64)
    elif pa.types.is_date32(typ):
        dtype = np.dtype(np.int32)
    else:
        dtype = None
    _INTEGER_DTYPES[typ] = dtype
    return dtype


_INTEGER_DTYPES: dict[pa.DataType, np.dtype | None] = {}  # asked once per page: remembered per type
DECIMAL_SLOT = np.dtype("V16")  # one decimal128 value: a buffer slot per row, filled by the decimal kernels


def _integral_page(page: Page, data: np.ndarray, store: int, base: int | None, typ: pa.DataType) -> pa.Array:
    """An integral adaptive page in one pass: widen the stored values, undo the delta against ``base``
    (when given), scale timestamps from milliseconds and narrow to the column's type."""
    bits = page.validity_bits  # None: no null
    src, width = _stored_view(page, data, store)
    in_range = base is None or INT64_MIN <= base <= INT64_MAX
    if pa.types.is_decimal128(typ) and in_range:
        # the stored integers are the unscaled values: one pass writes them as 16-byte decimals
        values = _values_buffer(page, DECIMAL_SLOT)
        pairs = values.view(np.int64)
        if width == 3:
            lo, hi = kernels.decimal_integral_be3(src, base or 0, base is not None, pairs)
        else:
            lo, hi = kernels.decimal_integral(src, base or 0, base is not None, pairs)
        if bits is None:
            page.unscaled_bounds = (int(lo), int(hi))
        else:  # a null slot holds no value: the bounds of the set ones only
            status, lo, hi = kernels.int_bounds_bits(pairs[0::2], bits)
            if status == 0:
                page.unscaled_bounds = (int(lo), int(hi))
        return _page_array(page, typ, values)
    out_dtype = integer_dtype(typ)
    if not in_range or out_dtype is None:
        stored = src.astype(np.int64) if width != 3 else stored_integers(page, data, store)
        if base is not None:
            stored = base - stored
        return _finish_numeric(page, stored, typ, page.nulls)
    mul = 1000 if pa.types.is_timestamp(typ) else 1  # CarbonData keeps epoch milliseconds
    if base is None and mul == 1 and src.dtype.itemsize == out_dtype.itemsize and width != 3:
        values = src.view(out_dtype)  # stored as is: no copy
    else:
        values = _values_buffer(page, out_dtype)
        if mul != 1:
            (kernels.integral_be3 if width == 3 else kernels.integral)(src, base or 0, base is not None, mul, values)
        elif bits is None:
            bounded = kernels.integral_be3_bounded if width == 3 else kernels.integral_bounded
            lo, hi = bounded(src, base or 0, base is not None, values)
            page.int_bounds = (int(lo), int(hi))
        else:  # a null slot holds no value: the bounds the page checks use are the set ones'
            status, lo, hi = kernels.integral_bounded_valid(src, width == 3, base or 0, base is not None, values, bits)
            if status == 0:
                page.int_bounds = (int(lo), int(hi))
    return _page_array(page, typ, values)


def _values_buffer(page: Page, dtype: np.dtype) -> np.ndarray:
    """The array a page's values go to: the slot decode_pages gave it, else a new one."""
    out = page.out
    if out is not None and out.dtype == dtype and out.shape[0] == page.rows:
        return out
    return pooled(page.rows, dtype)


def pooled(n: int, dtype: np.dtype | type) -> np.ndarray:
    """An uninitialised array in Arrow's memory pool. The pool keeps freed memory for the next read;
    big arrays from numpy come as fresh pages from the OS, each paying a page fault on first write
    (milliseconds per 16 MB, far more in a VM)."""
    dt = np.dtype(dtype)
    if n <= 0:
        return np.empty(0, dt)
    return np.frombuffer(pa.allocate_buffer(n * dt.itemsize), dt)


_NOT_AS_STORED = frozenset({E.ADAPTIVE_DELTA_INTEGRAL, E.ADAPTIVE_FLOATING, E.ADAPTIVE_DELTA_FLOATING, E.RLE_INTEGRAL})


def _direct_target(page: Page, store: int, typ: pa.DataType) -> np.ndarray | None:
    """The bytes of ``page.out`` when the page stores its values exactly as the column's type lays them
    out (same width, no delta, no scaling), so they can be decompressed straight into place."""
    out = page.out
    if out is None or out.shape[0] != page.rows or pa.types.is_timestamp(typ):
        return None
    if page.encodings & _NOT_AS_STORED:
        return None
    if store == MetaType.DOUBLE:
        ok = out.dtype == np.float64
    elif store == MetaType.FLOAT:
        ok = out.dtype == np.float32
    else:
        width = STORE_WIDTH.get(store)  # type: ignore[call-overload]
        ok = out.dtype.kind == "i" and width == out.dtype.itemsize and integer_dtype(typ) == out.dtype
    return out.view(np.uint8) if ok else None


def _page_array(page: Page, typ: pa.DataType, values: np.ndarray) -> pa.Array:
    """A primitive Arrow array over ``values`` (of the type's width, one per row of ``page``) with the page's
    nulls, without copying them."""
    return pa.Array.from_buffers(typ, len(values), [page.validity, pa.py_buffer(values)])


def _fixed_width(typ: pa.DataType, values: np.ndarray, mask: np.ndarray | None) -> pa.Array:
    """A primitive Arrow array over ``values`` (already of the type's width) without copying them."""
    if mask is not None and not mask.any():
        mask = None
    return pa.Array.from_buffers(typ, len(values), [_validity(mask), pa.py_buffer(values)])


def to_arrow(values: np.ndarray, typ: pa.DataType, mask: np.ndarray | None) -> pa.Array:
    if mask is not None and not mask.any():
        mask = None
    if pa.types.is_timestamp(typ):
        return pa.Array.from_buffers(typ, len(values), [_validity(mask), pa.py_buffer(values.astype(np.int64))])
    if pa.types.is_date32(typ):
        return pa.Array.from_buffers(typ, len(values), [_validity(mask), pa.py_buffer(values.astype(np.int32))])
    if pa.types.is_decimal(typ):
        v = values.astype(np.int64)
        pairs = np.empty((len(v), 2), np.int64)
        pairs[:, 0] = v
        pairs[:, 1] = v >> 63  # sign extension to 128 bits
        return pa.Array.from_buffers(typ, len(v), [_validity(mask), pa.py_buffer(pairs)])
    return pa.array(values.astype(typ.to_pandas_dtype(), copy=False), type=typ, mask=mask)


def _validity(mask: np.ndarray | None) -> pa.Buffer | None:
    if mask is None:
        return None
    return pa.py_buffer(np.packbits(~mask, bitorder="little"))


def lv_array(page: Page, data: np.ndarray, width: int, typ: pa.DataType, rows: int | None) -> pa.Array:
    """A length-value page as a string/binary array; ``@NU#LL$!`` values become nulls."""
    limit = rows if rows is not None else MAX_PAGE_ROWS
    if data.shape[0] >= 1 << 31:
        raise page.fail(f"page holds {data.shape[0]} bytes, more than an Arrow array can")
    arena = page.out if isinstance(page.out, Arena) and rows == page.rows else None
    if arena is not None and arena.reserve(data.shape[0]):
        offsets, values, valid, row0, out0 = arena.offsets, arena.values, arena.valid, arena.rows, arena.used
    else:
        cap = min(limit, data.shape[0] // width)
        offsets, values, valid = pooled(cap + 1, np.int32), pooled(data.shape[0], np.uint8), np.ones(cap, np.bool_)
        offsets[0] = row0 = out0 = 0
        arena = None
    n, end, nulls, bad, high, kmin, kmax = kernels.lv_decode(
        data, width, limit, kernels.NULL_MARKER, not page.exact_nulls, offsets, row0, values, out0, valid
    )
    if bad >= 0:
        raise page.fail(f"length-value entry at byte {bad} of the decompressed page runs past its end or row count")
    if rows is not None and n != rows:
        raise page.fail(f"page holds {n} values, expected {rows}")
    if page.exact_nulls and rows is not None:
        mask = null_mask(page)
        if mask is not None:
            valid[row0 : row0 + n] = ~mask
            nulls = int(mask.sum())
            kmin = None  # the keys counted the null slots' bytes
    if kmin is not None and kmin <= kmax:
        page.prefix_bounds = (int(kmin), int(kmax))
    validity = pa.py_buffer(np.packbits(valid[row0 : row0 + n], bitorder="little")) if nulls else None
    offsets_buf = pa.py_buffer(offsets[row0 : row0 + n + 1])
    if arena is not None:
        arena.appended(n, end, nulls)
    # in an arena the offsets are the chunk's (starting at out0) over the values of every page so far
    arr = pa.Array.from_buffers(typ, n, [validity, offsets_buf, pa.py_buffer(values[:end])])
    if pa.types.is_string(typ) and high >= 0x80:  # pure ASCII is valid UTF-8, the offsets are ours
        try:
            arr.validate(full=True)
        except pa.ArrowInvalid as e:
            raise page.fail(f"string data is not valid UTF-8: {e}") from None
    return arr


class Arena:
    """The offsets, values and validity that the length-value pages of one chunk are decoded into
    (see decode_pages), so they form one array without concatenating page arrays."""

    def __init__(self, rows: int, capacity: int):
        self.offsets = pooled(rows + 1, np.int32)
        self.offsets[0] = 0
        self.values = pooled(capacity, np.uint8)
        self.valid = np.ones(rows, np.bool_)
        self.rows = 0
        self.used = 0
        self.nulls = 0

    def reserve(self, nbytes: int) -> bool:
        """Room for a page of ``nbytes`` decompressed bytes (its values take fewer); False when the chunk
        would outgrow int32 offsets."""
        need = self.used + nbytes
        if need >= 1 << 31:
            return False
        if need > self.values.shape[0]:
            grown = pooled(min(max(need, 2 * self.values.shape[0]), (1 << 31) - 1), np.uint8)
            grown[: self.used] = self.values[: self.used]
            self.values = grown
        return True

    def appended(self, rows: int, end: int, nulls: int) -> None:
        self.rows += rows
        self.used = end
        self.nulls += nulls


# ------------------------------------------------------------------ local dictionary


def local_dictionary(chunk3, column: ColumnSchema, path: str, offset: int, exact_nulls: bool = False) -> pa.Array:
    """The blocklet's local dictionary as an array indexed by surrogate key (keys 0 and 1 are null)."""
    ld = chunk3.local_dictionary
    name = column.column_name
    metas = ld.dictionary_meta.encoder_meta or []
    width = 2
    comp = "snappy"
    if metas:
        try:
            m = encoder_meta.parse(bytes(metas[0]))
            comp = compress.normalize(m.compressor)
        except CarbonFormatError as e:
            raise CarbonFormatError(f"column {name!r} local dictionary meta: {e}", path, offset) from None
        if m.column_type == ColumnType.PLAIN_LONG_VALUE or column.data_type in (DataType.VARCHAR, DataType.BINARY):
            width = 4
    typ = pa.string() if column.data_type != DataType.BINARY else pa.binary()
    stored, bits = bytes(ld.dictionary_data), bytes(ld.dictionary_values)
    # the same stored dictionary always decodes to the same array (errors are not kept)
    kind = (_LOCAL_DICTIONARY, comp, width, typ.id, exact_nulls, len(stored))
    return _DICTIONARIES.get_or_parse(stored + bits, lambda: _local_dictionary(
        stored, bits, comp, width, typ, column, path, offset, exact_nulls), kind=kind)


# Decoded local dictionaries by their stored bytes: a table of many small files is one dictionary a file,
# decoded again by every read of it otherwise. Within 8 MiB of stored bytes.
_DICTIONARIES = BytesCache(budget_bytes=8 << 20, max_item_bytes=256 << 10)
_LOCAL_DICTIONARY = "local dictionary"


def _local_dictionary(stored: bytes, bits: bytes, comp: str, width: int, typ: pa.DataType, column: ColumnSchema,
                      path: str, offset: int, exact_nulls: bool) -> pa.Array:
    name = column.column_name
    try:
        data = compress.decompress(comp, stored, MAX_VAR_PAGE)
        used = compress.decompress(comp, bits, 1 << 24)
    except CarbonFormatError as e:
        raise CarbonFormatError(f"column {name!r} local dictionary: {e}", path, offset) from None
    fake = Page(column, None, memoryview(b""), 0, path, offset, exact_nulls=exact_nulls)  # type: ignore[arg-type]
    values = lv_array(fake, data, width, typ, None)
    keys = bitset_positions(used)
    if len(keys) != len(values):
        raise CarbonFormatError(
            f"column {name!r} local dictionary has {len(values)} values but {len(keys)} used keys", path, offset
        )
    size = int(keys[-1]) + 1 if len(keys) else 2
    # surrogate key -> entry, keys not in use (0 and 1 among them) -> one null entry after the values
    n = len(values)
    index = np.full(max(size, 2), n, np.int32)
    index[keys] = np.arange(n, dtype=np.int32)
    bufs = values.buffers()
    offsets = np.empty(n + 2, np.int32)
    offsets[: n + 1] = np.frombuffer(bufs[1], np.int32, count=n + 1, offset=values.offset * 4)
    offsets[n + 1] = offsets[n]
    valid = np.ones(n + 1, np.bool_)
    if values.null_count:
        valid[:n] = page_checks.valid_of(values)
    valid[n] = False
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
    total, nulls = kernels.take_sizes(offsets, valid, index)
    out_offsets, out_values = pooled(len(index) + 1, np.int32), pooled(max(total, 1), np.uint8)
    out_valid = np.ones(len(index), np.bool_)
    kernels.take_bytes(offsets, data, valid, index, out_offsets, out_values, out_valid)
    return pa.Array.from_buffers(values.type, len(index), [pa.py_buffer(np.packbits(out_valid, bitorder="little")),
                                 pa.py_buffer(out_offsets), pa.py_buffer(out_values[:total])], null_count=nulls)


def take_entries(dictionary: pa.Array, keys: pa.Array) -> pa.Array:
    """``dictionary.take(keys)`` (int32 keys already checked against its size); a string or binary
    dictionary is copied entry by entry in compiled code (kernels.take_bytes), other dictionaries and keys
    with nulls by pyarrow."""
    typ = dictionary.type
    if keys.null_count or not (pa.types.is_string(typ) or pa.types.is_binary(typ)):
        return dictionary.take(keys)
    n = len(keys)
    index = np.frombuffer(keys.buffers()[1], np.int32, count=n, offset=keys.offset * 4)
    bufs = dictionary.buffers()
    offsets = np.frombuffer(bufs[1], np.int32, count=len(dictionary) + 1, offset=dictionary.offset * 4)
    values = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
    valid = page_checks.valid_of(dictionary) if dictionary.null_count else np.empty(0, np.bool_)
    total, nulls = kernels.take_sizes(offsets, valid, index)
    if total >= 1 << 31:  # beyond int32 offsets: pyarrow's take says so
        return dictionary.take(keys)
    out_offsets, out_values = pooled(n + 1, np.int32), pooled(max(total, 1), np.uint8)
    out_valid = np.ones(n, np.bool_)
    kernels.take_bytes(offsets, values, valid, index, out_offsets, out_values, out_valid)
    validity = pa.py_buffer(np.packbits(out_valid, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(typ, n, [validity, pa.py_buffer(out_offsets), pa.py_buffer(out_values[:total])],
                                 null_count=nulls)


def _take_key_bytes(page: Page, data: np.ndarray, dictionary: pa.Array) -> pa.Array:
    """Look up a page of 3-byte big-endian local dictionary keys."""
    if data.shape[0] != page.rows * 3:
        raise page.fail(f"local dictionary page holds {data.shape[0]} bytes, expected {page.rows} x 3")
    keys = np.empty(page.rows, np.int32)  # 3-byte keys always fit
    kernels.be_unsigned(data, 3, keys)
    if keys.size and keys.max() >= len(dictionary):
        raise page.fail(f"local dictionary key {int(keys.max())} outside the dictionary of {len(dictionary)}")
    taken = pa.Array.from_buffers(pa.int32(), len(keys), [None, pa.py_buffer(keys)])
    if not isinstance(dictionary, KeysOnly):  # (decode_pages looks the keys of all pages up at once)
        taken = take_entries(dictionary, taken)
    mask = null_mask(page) if page.exact_nulls else None
    if mask is not None:
        taken = pc.if_else(pa.array(mask), pa.scalar(None, taken.type), taken)
    return taken


# ------------------------------------------------------------------ meta-encoded pages


def decode_meta_page(page: Page, dictionary: pa.Array | None) -> pa.Array:
    col = page.column
    encs = page.encodings
    metas = page.chunk.encoder_meta or []
    if not metas:
        raise page.fail(f"encodings {sorted(encs)} need an encoder_meta, none present")
    try:
        meta = encoder_meta.parse(bytes(metas[0]))
    except CarbonFormatError as e:
        raise page.fail(f"encoder meta: {e}") from None
    rows = page.rows
    if meta.store_type in (MetaType.BYTE_ARRAY, MetaType.DECIMAL) or col.data_type in (
        DataType.STRING,
        DataType.VARCHAR,
        DataType.BINARY,
    ):
        return _meta_bytes_page(page, meta, dictionary)
    typ = arrow_type_of(col)
    if E.RLE_INTEGRAL in encs:
        # the RLE codec writes its runs uncompressed (Java's RLECodec reads the page bytes directly)
        data = np.frombuffer(page.section(0, page.chunk.data_page_length), np.uint8)
        width = {DataType.BOOLEAN: 1, DataType.BYTE: 1, DataType.SHORT: 2, DataType.INT: 4, DataType.LONG: 8}.get(
            col.data_type
        )
        if width is None:
            raise page.fail(f"RLE_INTEGRAL on data type {col.data_type} is not defined")
        n = kernels.rle_integral_scan(data, width, rows)
        if n != rows:
            raise page.fail(f"RLE_INTEGRAL page holds {n} values, expected {rows}")
        return _finish_numeric(page, kernels.rle_integral_expand(data, width, rows), typ, page.nulls)
    store = meta.store_type
    data = page.data(rows * 8 + 64, _direct_target(page, store, typ))
    if E.DIRECT_COMPRESS in encs and store in (MetaType.DOUBLE, MetaType.FLOAT):
        dtype = "<f8" if store == MetaType.DOUBLE else "<f4"
        if data.shape[0] != rows * np.dtype(dtype).itemsize:
            raise page.fail(f"page holds {data.shape[0]} bytes for {rows} {dtype} values")
        return to_arrow(data.view(dtype), typ, page.nulls)
    if store == MetaType.BOOLEAN:
        store = MetaType.BYTE
    if E.ADAPTIVE_FLOATING in encs or E.ADAPTIVE_DELTA_FLOATING in encs:
        return _floating_page(page, meta, data, store, typ, page.nulls)
    base = int_meta(page, meta.max) if E.ADAPTIVE_DELTA_INTEGRAL in encs else None
    return _integral_page(page, data, store, base, typ)


def _floating_page(page: Page, meta, data: np.ndarray, store: int, typ: pa.DataType, mask) -> pa.Array:
    """ADAPTIVE_FLOATING stores round(v * 10^decimals); ADAPTIVE_DELTA_FLOATING stores max*f - v*f."""
    encs = page.encodings
    factor = 10.0**meta.decimal_count
    negate = E.ADAPTIVE_DELTA_FLOATING in encs
    try:
        top = delta_floating_top(meta.max, meta.decimal_count, typ == pa.float32()) if negate else 0
    except (TypeError, ValueError, OverflowError):
        raise page.fail(f"ADAPTIVE_DELTA_FLOATING page with max {meta.max!r} at {meta.decimal_count} decimals") from None
    if pa.types.is_floating(typ) and INT64_MIN <= top <= INT64_MAX:
        src, width = _stored_view(page, data, store)
        values = _values_buffer(page, np.dtype(typ.to_pandas_dtype()))
        if typ == pa.float32():
            wide = np.empty(page.rows, np.float64)  # round through double, as Java does
            (kernels.floating_be3 if width == 3 else kernels.floating)(src, top, negate, factor, wide)
            values[:] = wide
        elif width != 3 and page.rows and (mask is None or not mask.any()):
            # null slots hold no value: their bounds would mislead the page checks
            lo, hi = kernels.floating_bounded(src, top, negate, factor, values)
            page.float_bounds = (float(lo), float(hi))
        else:
            (kernels.floating_be3 if width == 3 else kernels.floating)(src, top, negate, factor, values)
        return _fixed_width(typ, values, mask)
    stored = stored_integers(page, data, store)
    vals = (top - stored) / factor if negate else stored / factor
    return to_arrow(vals, typ, mask)


def delta_floating_top(page_max: object, decimals: int, is_float: bool) -> int:
    """The integer AdaptiveDeltaFloatingCodec subtracts from: ``(long) (10^decimals * max)``, the product taken
    in float arithmetic for a FLOAT page (Java's long * float) and in double for a DOUBLE page."""
    scale = 10**decimals
    if is_float:
        return int(np.float32(scale) * np.float32(page_max))  # type: ignore[arg-type]
    return int(float(page_max) * scale)  # type: ignore[arg-type]


def int_meta(page: Page, v: object) -> int:
    if isinstance(v, Decimal):
        scale = page.column.scale if page.column.scale and page.column.scale > 0 else 0
        with localcontext(prec=100):
            return int(v.scaleb(scale))
    if v is None:
        raise page.fail("delta encoding without a max value in its meta")
    return int(v)  # type: ignore[call-overload]


def _finish_numeric(page: Page, values: np.ndarray, typ: pa.DataType, mask: np.ndarray | None) -> pa.Array:
    if pa.types.is_timestamp(typ):
        values = values * 1000  # CarbonData keeps epoch milliseconds
    elif pa.types.is_boolean(typ):
        return pa.array(values != 0, pa.bool_(), mask=mask if mask is not None and mask.any() else None)
    elif pa.types.is_floating(typ):
        return to_arrow(values.astype(np.float64), typ, mask)
    return to_arrow(values, typ, mask)


def _meta_bytes_page(page: Page, meta, dictionary: pa.Array | None) -> pa.Array:
    col = page.column
    typ = arrow_type_of(col)
    encs = page.encodings
    if dictionary is not None:
        return _take_key_bytes(page, page.data(page.rows * 3 + 64), dictionary)
    if col.data_type == DataType.DECIMAL:
        return _decimal_lv(page, page.data(MAX_VAR_PAGE), typ)
    wide = (
        E.INT_LENGTH_COMPLEX_CHILD_BYTE_ARRAY in encs
        or meta.column_type == ColumnType.PLAIN_LONG_VALUE
        or col.data_type in (DataType.VARCHAR, DataType.BINARY)
    )
    if not (pa.types.is_string(typ) or pa.types.is_binary(typ)):
        return _complex_scalars(page, lv_array(page, page.data(MAX_VAR_PAGE), 4 if wide else 2, pa.binary(),
                                               page.rows), typ)
    return lv_array(page, page.data(MAX_VAR_PAGE), 4 if wide else 2, typ, page.rows)


def _complex_scalars(page: Page, raw: pa.Array, typ: pa.DataType) -> pa.Array:
    """Scalars of a complex child kept as length-value bytes: BOOLEAN one byte, DATE its 4-byte big-endian
    surrogate, TIMESTAMP 8-byte big-endian epoch ms, DECIMAL a scale byte and the unscaled value.
    An empty entry, or a null in the presence bitset, is null."""
    dt = page.column.data_type
    if dt == DataType.DECIMAL:
        out = []
        with localcontext(prec=100):
            for b in raw.to_pylist():
                out.append(None if not b else Decimal(int.from_bytes(b[1:], "big", signed=True)).scaleb(-b[0]))
        mask = null_mask(page)
        arr = pa.array(out, typ)
        return arr if mask is None else pc_if_null(arr, mask)
    width = {DataType.BOOLEAN: 1, DataType.DATE: 4, DataType.TIMESTAMP: 8}.get(dt)
    if width is None:
        raise page.fail(f"byte-array page for data type {DataType(dt).name} is not supported")
    offsets = np.frombuffer(raw.buffers()[1], np.int32)[: page.rows + 1]
    lens = np.diff(offsets)
    empty = lens == 0
    if ((lens != width) & ~empty).any():
        raise page.fail(f"complex child values of type {DataType(dt).name} must be {width} bytes")
    body = np.frombuffer(raw.buffers()[2], np.uint8) if raw.buffers()[2] is not None else np.zeros(0, np.uint8)
    full = np.zeros((page.rows, width), np.uint8)
    full[~empty] = body[offsets[0] : offsets[0] + int((~empty).sum()) * width].reshape(-1, width)
    mask = empty | raw.is_null().to_numpy(zero_copy_only=False)
    pres = null_mask(page)
    if pres is not None:
        mask |= pres
    if dt == DataType.BOOLEAN:
        return pa.array(full[:, 0] != 0, pa.bool_(), mask=mask if mask.any() else None)
    if dt == DataType.DATE:
        keys = be_uint(full.reshape(-1), 4)
        return to_arrow(keys - DATE_OFFSET, typ, mask | (keys == 1))
    ms = full.reshape(-1).view(">i8").astype(np.int64)
    return to_arrow(ms * 1000, typ, mask)


def pc_if_null(arr: pa.Array, mask: np.ndarray) -> pa.Array:
    return pc.if_else(pa.array(mask), pa.nulls(len(arr), arr.type), arr)


def min_bytes_for_precision(precision: int) -> int:
    """Bytes of two's complement that hold any unscaled value of ``precision`` digits."""
    n = 1
    while (1 << (8 * n - 1)) < 10**precision:
        n += 1
    return n


def _decimal_lv(page: Page, data: np.ndarray, typ: pa.DataType) -> pa.Array:
    """Wide decimals (precision > 18). Java's unscaled converter stores a fixed width per row (the fewest
    bytes holding the precision, big-endian two's complement); without a known precision it writes
    length-value entries (int length) of a scale byte and the big-endian unscaled value."""
    width = min_bytes_for_precision(typ.precision)
    mask = null_mask(page)
    if data.shape[0] == page.rows * width and width <= 16:
        return _decimal128_from_big_endian(data.reshape(page.rows, width), typ, mask)
    out: list[Decimal | None] = []
    with localcontext(prec=100):  # the default 28 digits would round DECIMAL(29..38) values
        for b in lv_array(page, data, 4, pa.binary(), page.rows).to_pylist():
            if not b:
                out.append(None)
                continue
            unscaled = int.from_bytes(b[1:], "big", signed=True) if len(b) > 1 else 0
            out.append(Decimal(unscaled).scaleb(-b[0]))
    try:
        return pa.array(out, typ)
    except (pa.ArrowInvalid, ValueError) as e:
        raise page.fail(f"decimal value does not fit {typ}: {e}") from None


def _decimal128_from_big_endian(rows: np.ndarray, typ: pa.DataType, mask: np.ndarray | None) -> pa.Array:
    """Fixed-width big-endian two's complement rows to an Arrow decimal128 array, without Python objects:
    reverse each row to little-endian and sign-extend it to 16 bytes."""
    n, width = rows.shape
    out = np.zeros((n, 16), np.uint8)
    out[rows[:, 0] >= 0x80] = 0xFF
    out[:, :width] = rows[:, ::-1]
    validity = None
    if mask is not None and mask.any():
        validity = pa.array(~mask).buffers()[1]
        out[mask] = 0
    return pa.Array.from_buffers(typ, n, [validity, pa.py_buffer(out.tobytes())])


# ------------------------------------------------------------------ legacy dimension pages


def row_ids(page: Page, start: int) -> np.ndarray:
    """The inverted index: int32 BE length of the row-id shorts, the shorts, then the range map shorts."""
    sec = page.section(start, page.chunk.rowid_page_length)
    if len(sec) < 4:
        raise page.fail("row-id page shorter than its length prefix", start)
    (n,) = struct.unpack(">i", sec[:4])
    if n < 0 or n % 2 or 4 + n > len(sec) or (len(sec) - 4 - n) % 2:
        raise page.fail(f"row-id page declares {n} bytes of {len(sec)}", start)
    shorts = np.frombuffer(sec[4:], ">i2").astype(np.int64)
    ids = kernels.expand_row_ids(shorts[: n // 2], shorts[n // 2 :], page.rows)
    if ids.shape[0] != page.rows or (page.rows and (ids.min() < 0 or ids.max() >= page.rows)):
        raise page.fail(f"row-id page does not hold a permutation of {page.rows} rows", start)
    if np.bincount(ids, minlength=page.rows).max(initial=1) != 1:
        raise page.fail("row-id page repeats a row", start)
    return ids


def expand_runs(page: Page, data: np.ndarray, start: int) -> tuple[np.ndarray, int]:
    """Apply the dimension data RLE: pairs of BE shorts (ignored, count), one pair per stored key."""
    sec = page.section(start, page.chunk.rle_page_length)
    if len(sec) % 4:
        raise page.fail(f"RLE page of {len(sec)} bytes is not a list of short pairs", start)
    counts = np.frombuffer(sec, ">i2").reshape(-1, 2)[:, 1].astype(np.int64)
    if counts.size == 0 or counts.min() < 0 or counts.sum() != page.rows or data.shape[0] % counts.size:
        raise page.fail(f"RLE page of {counts.size} runs does not match {data.shape[0]} key bytes", start)
    width = data.shape[0] // counts.size
    keys = data.reshape(counts.size, width)
    return np.repeat(keys, counts, axis=0).reshape(-1), width


def decode_legacy_page(
    page: Page, dictionary: pa.Array | None, global_dictionary: pa.Array | None = None
) -> pa.Array:
    col = page.column
    encs = page.encodings
    dt = col.data_type
    pos = page.chunk.data_page_length
    ids = None
    if E.INVERTED_INDEX in encs and page.chunk.rowid_page_length:
        ids = row_ids(page, pos)
        pos += page.chunk.rowid_page_length or 0
    fixed = dictionary is not None or E.DICTIONARY in encs or E.DIRECT_DICTIONARY in encs
    data = page.data(page.rows * 8 + 64 if fixed else MAX_VAR_PAGE)
    width = None
    if E.RLE in encs and page.chunk.rle_page_length:
        data, width = expand_runs(page, data, pos)
    if dictionary is not None:
        arr = _take_key_bytes(page, data, dictionary)
    elif E.DICTIONARY in encs or E.DIRECT_DICTIONARY in encs:
        width = width or (data.shape[0] // page.rows if page.rows else 4)
        if width not in (1, 2, 3, 4) or data.shape[0] != width * page.rows:
            raise page.fail(f"dictionary page holds {data.shape[0]} bytes for {page.rows} keys")
        if global_dictionary is not None:
            # surrogates into the table's Metadata/<column_id>.dict (loaded by the reader); 1 is null there
            keys = be_uint(data, width)
            if keys.size and keys.max() >= len(global_dictionary):
                raise page.fail(
                    f"global dictionary key {int(keys.max())} outside the dictionary of {len(global_dictionary) - 1}"
                )
            arr = global_dictionary.take(pa.array(keys))
        elif dt == DataType.DATE:
            days = _values_buffer(page, np.dtype(np.int32))
            validity = None
            nulls, lo, hi = kernels.date_surrogates(data, width, DATE_OFFSET, days)
            if not nulls and page.rows:
                page.int_bounds = (int(lo), int(hi))
            if nulls:
                valid = np.ones(page.rows, np.bool_)
                kernels.date_nulls(data, width, valid)
                validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
            arr = pa.Array.from_buffers(pa.date32(), page.rows, [validity, pa.py_buffer(days)])
        elif dt == DataType.TIMESTAMP and E.DIRECT_DICTIONARY in encs | set(col.encoders or []):
            arr = _direct_timestamps(page, data, width)
        else:
            raise page.fail(
                "values are global dictionary surrogate keys (encoding DICTIONARY); "
                "reading them needs the table's Metadata/<column_id>.dict files, which this reader does not use"
            )
    elif dt in (DataType.STRING, DataType.VARCHAR, DataType.BINARY):
        wide = E.DIRECT_COMPRESS_VARCHAR in encs or E.INT_LENGTH_COMPLEX_CHILD_BYTE_ARRAY in encs
        arr = lv_array(page, data, 4 if wide else 2, arrow_type_of(col), page.rows)
    else:
        arr = _sign_flipped(page, data)
    if ids is not None:
        reverse = np.empty(page.rows, np.int64)
        reverse[ids] = np.arange(page.rows)
        arr = arr.take(pa.array(reverse))
    return arr


def _direct_timestamps(page: Page, data: np.ndarray, width: int) -> pa.Array:
    """Direct-dictionary TIMESTAMP keys (Java ints, big-endian) to microseconds: ``(key - 2) * granularity +
    cutOff`` ms, key 1 null (TimeStampDirectDictionaryGenerator.getValueFromSurrogate)."""
    keys = be_uint(data, width)
    if width == 4:
        keys = keys.astype(np.uint32).view(np.int32).astype(np.int64)  # a Java int: the high bit is the sign
    tk = page.timestamp_keys
    out = _values_buffer(page, np.dtype(np.int64))
    np.multiply(keys - 2, tk.granularity_ms * 1000, out=out)
    out += tk.cutoff_ms * 1000
    nulls = keys == NULL_KEY
    validity = pa.py_buffer(np.packbits(~nulls, bitorder="little")) if nulls.any() else None
    return pa.Array.from_buffers(TIMESTAMP_TYPE, page.rows, [validity, pa.py_buffer(out)])


def _sign_flipped(page: Page, data: np.ndarray) -> pa.Array:
    """Primitive no-dictionary dimensions without meta: LV entries holding big-endian values with the sign
    bit flipped (so byte order is numeric order); an empty entry is null."""
    col = page.column
    typ = arrow_type_of(col)
    raw = lv_array(page, data, 2, pa.binary(), page.rows)
    lens = np.diff(np.frombuffer(raw.buffers()[1], np.int32)[: page.rows + 1])
    width = {DataType.BOOLEAN: 1, DataType.BYTE: 1, DataType.SHORT: 2, DataType.INT: 4}.get(col.data_type, 8)
    if col.data_type not in (
        DataType.BOOLEAN,
        DataType.BYTE,
        DataType.SHORT,
        DataType.INT,
        DataType.LONG,
        DataType.TIMESTAMP,
    ):
        raise page.fail(f"no-dictionary dimension of type {DataType(col.data_type).name} without encoder meta")
    mask = lens == 0
    if ((lens != width) & ~mask).any():
        raise page.fail(f"no-dictionary values must be {width} bytes")
    full = np.zeros((page.rows, width), np.uint8)
    body = np.frombuffer(raw.buffers()[2], np.uint8) if raw.buffers()[2] is not None else np.zeros(0, np.uint8)
    full[~mask] = body[: int((~mask).sum()) * width].reshape(-1, width)
    if col.data_type == DataType.BOOLEAN:
        return pa.array(full[:, 0] != 0, pa.bool_(), mask=mask)
    v = full.astype(np.uint64)
    acc = np.zeros(page.rows, np.uint64)
    for k in range(width):
        acc = (acc << np.uint64(8)) | v[:, k]
    acc ^= np.uint64(1) << np.uint64(8 * width - 1)
    shift = np.uint64(64 - 8 * width)
    values = ((acc << shift).view(np.int64)) >> np.int64(shift)
    return _finish_numeric(page, values, typ, mask)


# ------------------------------------------------------------------ old (1.1/1.2) measures


def _legacy_measure(page: Page) -> pa.Array:
    """DELTA measures of CarbonData 1.1/1.2: meta = char type, max, min, unique, int decimals, byte."""
    metas = page.chunk.encoder_meta or []
    if not metas:
        raise page.fail("DELTA page without encoder meta")
    m = bytes(metas[0])
    if len(m) < 2 or m[:2] != b"\x00d" or len(m) < 31:
        kind = m[:2].decode("utf-16-be", "replace") if len(m) >= 2 else "?"
        raise page.fail(f"DELTA measure with value type {kind!r} is not supported (only integral 'd')")
    vmax, vmin, _unique, _decimals = struct.unpack(">qqqi", m[2:30])
    data = page.data(page.rows * 8 + 64)
    if page.rows == 0 or data.shape[0] % page.rows:
        raise page.fail(f"page holds {data.shape[0]} bytes for {page.rows} rows")
    width = data.shape[0] // page.rows
    adaptive, delta = _fit(vmax), (_fit(vmax - vmin) if _fit(vmax) != 8 else 8)
    use_delta = adaptive > delta
    if width != (delta if use_delta else adaptive):
        raise page.fail(f"DELTA page stores {width}-byte values where {delta if use_delta else adaptive} expected")
    stored = data.view({1: "<i1", 2: "<i2", 4: "<i4", 8: "<i8"}[width]).astype(np.int64)
    values = vmax - stored if use_delta else stored
    return _finish_numeric(page, values, arrow_type_of(page.column), null_mask(page))


def _fit(v: int) -> int:
    for width in (1, 2, 4):
        if -(1 << (8 * width - 1)) <= v < 1 << (8 * width - 1):
            return width
    return 8


# ------------------------------------------------------------------ entry points


def decode_page(
    page: Page, dictionary: pa.Array | None = None, global_dictionary: pa.Array | None = None
) -> pa.Array:
    """Decode a primitive column's page into ``page.rows`` values of the column's Arrow type.

    ``dictionary`` is the blocklet's local dictionary, ``global_dictionary`` the table's dictionary of a
    global-dictionary column (see carbon_ds.format.dictionary), each indexed by surrogate key."""
    if not 0 <= page.rows <= MAX_PAGE_ROWS:
        raise page.fail(f"page row count {page.rows} is out of range")
    try:
        encs = page.encodings
        if encs & META_ENCODINGS:
            arr = decode_meta_page(page, dictionary)
        elif E.DELTA in encs and not page.column.dimension:
            arr = _legacy_measure(page)
        else:
            arr = decode_legacy_page(page, dictionary, global_dictionary)
    except CarbonFormatError:
        raise
    except (ValueError, IndexError, OverflowError, struct.error, pa.ArrowException) as e:
        raise page.fail(f"corrupt page: {type(e).__name__}: {e}") from None
    if len(arr) != page.rows:
        raise page.fail(f"decoded {len(arr)} values, expected {page.rows}")
    if page.rows:
        page_checks.check_page(page, arr)
    return arr


class KeysOnly:
    """Stands in for a local dictionary so that dictionary pages decode to their int32 keys: the pages of
    a chunk then need one lookup in the real dictionary instead of one each and a concatenation."""

    def __init__(self, dictionary: pa.Array):
        self.size = len(dictionary)

    def __len__(self) -> int:
        return self.size

    def take(self, keys: pa.Array) -> pa.Array:
        return keys


def decode_parent_page(page: Page) -> tuple[np.ndarray, np.ndarray | None]:
    """An ARRAY/MAP parent page: per row big-endian (int count, int start). Returns counts and nulls."""
    try:
        data = page.data(page.rows * 8 + 64)
        if data.shape[0] != page.rows * 8:
            raise page.fail(f"array parent page holds {data.shape[0]} bytes, expected {page.rows} x 8")
        pairs = data.view(">i4").reshape(-1, 2).astype(np.int64)
    except CarbonFormatError:
        raise
    except (ValueError, IndexError) as e:
        raise page.fail(f"corrupt page: {e}") from None
    counts = pairs[:, 0]
    if counts.size and counts.min() < 0:
        raise page.fail("array parent page holds a negative element count")
    return counts, null_mask(page)
