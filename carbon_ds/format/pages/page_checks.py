"""Checks of a decoded page's values against what the format allows and against the page's own min/max.

CarbonData pages carry no checksum, so damaged bytes usually decode to other values without complaint.
Two checks catch much of it at the cost of one min/max per page (a compiled pass over integer, date and
decimal values of up to 18 digits and floating values, the first 8 bytes of strings as the page decodes
them, pyarrow compute over the others; no per-row Python):

* ``check_possible`` (every page of a DATE, TIMESTAMP or DECIMAL column, statistics or not): a DATE lies
  in 0001-01-01..9999-12-31 (Java's ``DateDirectDictionaryGenerator`` refuses other dates); a TIMESTAMP
  is a whole number of milliseconds (CarbonData stores epoch ms, so a decoded microsecond value that is
  not one is a stored ms count the microsecond type cannot hold, wrapped around); a DECIMAL's unscaled
  value has at most the column's precision in digits.
* ``check_stats`` (top-level plain columns, see the reader): decoded values lie within the page's stored
  min/max. Java may widen the statistics (string statistics may count the null marker, a null measure
  counts as zero, a null DATE as key 1), never narrow them, so only values outside are an error. The
  statistics bytes per type are those of carbon_ds.format.pages.stat_bytes: DATE a 4-byte surrogate key, TIMESTAMP
  8 bytes of epoch ms with the sign bit flipped (direct-dictionary TIMESTAMP pages hold 4-byte surrogate
  keys in their statistics: not compared), DECIMAL a scale byte and the unscaled value. A plain string
  page is compared by its values' first 8 bytes, found while decoding (kernels.lv_decode): a value whose
  first 8 bytes already lie outside is caught, one that differs only further on is not.

The ``page`` argument is a carbon_ds.format.pages.decode.Page (its column, chunk and ``fail``).
"""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonFormatError
from carbon_ds.format.pages import kernels, stat_bytes
from carbon_ds.format.thrift.structs import DataType

STATS_CHECKED = (
    DataType.SHORT,
    DataType.INT,
    DataType.LONG,
    DataType.DOUBLE,
    DataType.STRING,
    DataType.DATE,
    DataType.TIMESTAMP,
    DataType.DECIMAL,
)
# a measure's statistics as stat_bytes.value_from_bytes reads them: 8 bytes, big-endian
_MEASURE_STATS = {
    DataType.SHORT: struct.Struct(">q").unpack,
    DataType.INT: struct.Struct(">q").unpack,
    DataType.LONG: struct.Struct(">q").unpack,
    DataType.DOUBLE: struct.Struct(">d").unpack,
}
_KEY = struct.Struct(">i")
MIN_DAYS = (dt.date(1, 1, 1) - stat_bytes.EPOCH).days  # -719162
MAX_DAYS = (dt.date(9999, 12, 31) - stat_bytes.EPOCH).days  # 2932896


def _fail(page: Any, what: str) -> CarbonFormatError:
    return page.fail(f"{what}: the page is corrupt")  # type: ignore[no-any-return]


def valid_of(arr: pa.Array) -> np.ndarray:
    """A byte per value, set where it is not null, unpacked from the validity bitmap by numpy (pyarrow's
    ``is_valid`` and its conversion cost 10x as much, once per page)."""
    bitmap = arr.buffers()[0]
    if bitmap is None:
        return arr.is_valid().to_numpy(zero_copy_only=False)
    start = arr.offset // 8
    bits = np.frombuffer(bitmap, np.uint8)[start : (arr.offset + len(arr) + 7) // 8]
    first = arr.offset - 8 * start
    return np.unpackbits(bits, bitorder="little")[first : first + len(arr)].view(np.bool_)


def _valid_bytes(arr: pa.Array) -> np.ndarray:
    """``valid_of``, or empty when none is null (the kernels' convention)."""
    return valid_of(arr) if arr.null_count else np.empty(0, np.bool_)


def _read_only(data: pa.Buffer, dtype: Any, count: int, offset: int) -> np.ndarray:
    """An Arrow buffer's values, always read-only: a kernel compiles once per writability of its input
    (about 0.85 s each on 2 cores), and Arrow hands out both mutable and immutable buffers."""
    values = np.frombuffer(data, dtype, count=count, offset=offset)
    values.flags.writeable = False
    return values


def integer_min_max(arr: pa.Array) -> tuple[int | None, int | None]:
    """Min and max of an integer array in one compiled pass (pyarrow's min_max and its scalars cost more
    per page than the pass itself)."""
    data = arr.buffers()[1]
    if data is None or not len(arr):
        return None, None
    values = _read_only(data, arr.type.to_pandas_dtype(), len(arr), arr.offset * arr.type.byte_width)
    status, lo, hi = kernels.int_bounds(values, _valid_bytes(arr))
    return (None, None) if status == 2 else (int(lo), int(hi))


def float_min_max(arr: pa.Array) -> tuple[float | None, float | None]:
    """Min and max of a floating array, NaN skipped, in one compiled pass (None, None when no value is
    set and not NaN)."""
    data = arr.buffers()[1]
    if data is None or not len(arr):
        return None, None
    values = _read_only(data, arr.type.to_pandas_dtype(), len(arr), arr.offset * arr.type.byte_width)
    if not arr.null_count:
        # numpy's min/max are vectorised, the NaN-skipping loop is not: it runs only when they meet a NaN
        lo, hi = values.min(), values.max()
        if lo == lo and hi == hi:
            return float(lo), float(hi)
    status, lo, hi = kernels.float_bounds(values, _valid_bytes(arr))
    return (None, None) if status == 2 else (float(lo), float(hi))


def check_page(page: Any, arr: pa.Array) -> None:
    """Both checks of a decoded page: ``check_possible`` always, ``check_stats`` when the page asks; a
    decimal or date page's min and max are found once for both, an integer or double page's come from its
    decode."""
    bounds = None
    if pa.types.is_decimal(arr.type):
        known = page.unscaled_bounds
        scale = -arr.type.scale
        bounds = ((Decimal(known[0]).scaleb(scale), Decimal(known[1]).scaleb(scale)) if known is not None
                  else decimal_min_max(arr))
    elif pa.types.is_date32(arr.type):
        bounds = page.int_bounds if page.int_bounds is not None else integer_min_max(arr.view(pa.int32()))
    elif pa.types.is_integer(arr.type):
        bounds = page.int_bounds
    elif pa.types.is_float64(arr.type):
        bounds = page.float_bounds
    check_possible(page, arr, bounds)
    if page.check_stats:
        check_stats(page, arr, bounds)


def check_possible(page: Any, arr: pa.Array, known: tuple[Any, Any] | None = None) -> None:
    """Raise when a decoded DATE, TIMESTAMP or DECIMAL value is one the format cannot hold (``known``: a
    decimal or date page's min and max when already found, as Decimals or days)."""
    typ = arr.type
    if pa.types.is_date32(typ):
        bounds = known if known is not None else integer_min_max(arr.view(pa.int32()))
        if bounds[0] is not None:
            _possible_days(page, *bounds)
    elif pa.types.is_timestamp(typ):
        n = len(arr)
        data = arr.buffers()[1]
        if data is None or n == 0:
            return
        us = np.frombuffer(data, np.int64, count=n, offset=arr.offset * 8)
        if arr.null_count:
            us = us[valid_of(arr)]
        off = np.flatnonzero(us % 1000)
        if off.size:
            raise _fail(page, f"decoded timestamp {int(us[off[0]])} us is not a whole number of milliseconds "
                              "(a stored epoch-ms value beyond what a microsecond timestamp holds)")
    elif pa.types.is_decimal(typ):
        lo, hi = known or decimal_min_max(arr)
        if lo is None:
            return
        limit = Decimal(10) ** (typ.precision - typ.scale)
        if lo <= -limit or hi >= limit:
            raise _fail(page, f"decoded decimals [{lo}, {hi}] do not fit the column's DECIMAL({typ.precision}, "
                              f"{typ.scale})")


def bytes_min_max(arr: pa.Array) -> tuple[bytes | None, bytes | None]:
    """Min and max of a binary array as bytes, as pyarrow's min_max gives them, in one compiled pass (its
    min_max of a page of strings costs more than decoding the page)."""
    bufs = arr.buffers()
    n = len(arr)
    if not n or bufs[1] is None:
        return None, None
    offsets = np.frombuffer(bufs[1], np.int32, count=n + 1, offset=arr.offset * 4)
    values = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
    lo, hi = kernels.bytes_bounds(offsets, values, _valid_bytes(arr))
    if lo < 0:
        return None, None
    return bytes(values[offsets[lo]:offsets[lo + 1]]), bytes(values[offsets[hi]:offsets[hi + 1]])


def decimal_min_max(arr: pa.Array) -> tuple[Decimal | None, Decimal | None]:
    """Min and max of a decimal array (None, None when all are null). Decimals of up to 18 digits (the
    int64 range) are compared as unscaled integers in one compiled pass: pyarrow's decimal min/max costs
    more than decoding the page."""
    typ = arr.type
    data = arr.buffers()[1]
    if not pa.types.is_decimal128(typ) or typ.precision > 18 or data is None:
        got = pc.min_max(arr)
        return got["min"].as_py(), got["max"].as_py()
    pairs = _read_only(data, np.int64, 2 * len(arr), arr.offset * 16)
    status, lo, hi = kernels.decimal_bounds(pairs, _valid_bytes(arr))
    if status == 2:
        return None, None
    if status == 1:  # a value beyond int64: pyarrow's min/max finds it, the precision check refuses it
        got = pc.min_max(arr)
        return got["min"].as_py(), got["max"].as_py()
    return Decimal(int(lo)).scaleb(-typ.scale), Decimal(int(hi)).scaleb(-typ.scale)


def _stat_bounds(page: Any, arr: pa.Array, lo_b: bytes, hi_b: bytes) -> tuple[Any, Any, pa.Array, str] | None:
    """The stored (min, max) in the terms of ``values`` (the returned array) and their unit, or None when
    the statistics cannot be compared with the decoded values."""
    dt_ = page.column.data_type
    if dt_ == DataType.STRING:
        if not pa.types.is_string(arr.type):
            return None  # local dictionary keys (decode_pages looks them up afterwards)
        return lo_b, hi_b, arr.view(pa.binary()), ""
    if dt_ == DataType.DATE:
        days = _stored_days(lo_b, hi_b) if pa.types.is_date32(arr.type) else None
        return None if days is None else (*days, arr.view(pa.int32()), _DAYS)
    if dt_ == DataType.TIMESTAMP:
        # 8 bytes: a no-dictionary page's epoch ms; 4 bytes: a direct-dictionary page's surrogate keys
        if len(lo_b) != 8 or len(hi_b) != 8 or not pa.types.is_timestamp(arr.type):
            return None
        ms = stat_bytes.value_from_bytes(dt_, True, lo_b), stat_bytes.value_from_bytes(dt_, True, hi_b)
        return ms[0] * 1000, ms[1] * 1000, arr.view(pa.int64()), " us since 1970-01-01"  # type: ignore[operator]
    if dt_ == DataType.DECIMAL and not pa.types.is_decimal(arr.type):
        return None
    bounds = _value_bounds(page, lo_b, hi_b)
    return None if bounds is None else (*bounds, arr, "")  # check_stats skips NaN values


_DAYS = " days since 1970-01-01"


def _possible_days(page: Any, lo: int, hi: int) -> None:
    if lo < MIN_DAYS or hi > MAX_DAYS:
        raise _fail(page, f"decoded dates span day {lo}..{hi} from 1970-01-01, outside CarbonData's range "
                          f"0001-01-01..9999-12-31 (days {MIN_DAYS}..{MAX_DAYS})")


def _stored_days(lo_b: bytes, hi_b: bytes) -> tuple[int, int] | None:
    """A DATE page's statistics (4-byte surrogate keys) as days since the epoch."""
    if len(lo_b) != 4 or len(hi_b) != 4:
        return None
    return _KEY.unpack(lo_b)[0] - stat_bytes.DATE_OFFSET, _KEY.unpack(hi_b)[0] - stat_bytes.DATE_OFFSET


def check_day_bounds(page: Any, lo: int, hi: int) -> None:
    """Both checks of a DATE page without nulls whose least and greatest day are known."""
    _possible_days(page, lo, hi)
    stored = _stored(page) if page.check_stats else None
    days = None if stored is None else _stored_days(*stored)
    if days is not None:
        _within(page, lo, hi, *days, _DAYS)


def _value_bounds(page: Any, lo_b: bytes, hi_b: bytes) -> tuple[Any, Any] | None:
    """The stored (min, max) of a page of numbers as values, or None when they say nothing (not
    readable, or NaN)."""
    dt_ = page.column.data_type
    unpack = None if page.column.dimension else _MEASURE_STATS.get(dt_)
    if unpack is not None and len(lo_b) == len(hi_b) == 8:  # every integer or double page: no detour
        lo, hi = unpack(lo_b)[0], unpack(hi_b)[0]
    else:
        try:
            lo = stat_bytes.value_from_bytes(dt_, bool(page.column.dimension), lo_b)
            hi = stat_bytes.value_from_bytes(dt_, bool(page.column.dimension), hi_b)
        except (ValueError, struct.error):
            return None
    if dt_ == DataType.DOUBLE and (lo != lo or hi != hi):  # NaN bounds say nothing
        return None
    return lo, hi


def _stored(page: Any) -> tuple[bytes, bytes] | None:
    """The page's stored (min, max) bytes, or None when it has none to check against."""
    mm = page.chunk.min_max
    if mm is None or not mm.min_values or not mm.max_values:
        return None
    if mm.min_max_presence and not mm.min_max_presence[0]:
        return None
    lo_b, hi_b = bytes(mm.min_values[0]), bytes(mm.max_values[0])
    return (lo_b, hi_b) if lo_b and hi_b else None


def check_unscaled_bounds(page: Any, lo: int, hi: int, typ: pa.Decimal128Type) -> None:
    """Both checks of a DECIMAL page without nulls whose least and greatest unscaled value are known,
    compared as integers when the statistics carry the column's scale."""
    limit = 10**typ.precision
    if lo <= -limit or hi >= limit:
        raise _fail(page, f"decoded unscaled decimals [{lo}, {hi}] do not fit the column's DECIMAL({typ.precision}, "
                          f"{typ.scale})")
    stored = _stored(page) if page.check_stats else None
    if stored is None:
        return
    lo_b, hi_b = stored
    if lo_b[0] == hi_b[0] == typ.scale:
        _within(page, lo, hi, int.from_bytes(lo_b[1:], "big", signed=True),
                int.from_bytes(hi_b[1:], "big", signed=True), " unscaled")
        return
    bounds = _value_bounds(page, lo_b, hi_b)
    if bounds is not None:
        _within(page, Decimal(lo).scaleb(-typ.scale), Decimal(hi).scaleb(-typ.scale), *bounds, "")


def check_measure_bounds(page: Any, vmin: float | None, vmax: float | None) -> None:
    """``check_stats`` for a measure page of integers or doubles whose decoded min and max are known
    (None when no value is a number)."""
    stored = _stored(page)
    bounds = None if stored is None or vmin is None else _value_bounds(page, *stored)
    if bounds is not None:
        _within(page, vmin, vmax, *bounds, "")


def check_dictionary_stats(pages: list[Any], keys: list[pa.Array], dictionary: pa.Array) -> None:
    """``check_stats`` for the STRING pages of a chunk decoded to local dictionary ``keys`` (one array a
    page): the least and greatest of the entries each page uses lie within its stored min/max (a page uses
    at most its dictionary's entries, so this costs less than a pass over its decoded values)."""
    if not pages or not pages[0].check_stats or pages[0].column.data_type != DataType.STRING:
        return
    if not (pa.types.is_string(dictionary.type) or pa.types.is_binary(dictionary.type)) or not len(dictionary):
        return
    bufs = dictionary.buffers()
    offsets = np.frombuffer(bufs[1], np.int32, count=len(dictionary) + 1, offset=dictionary.offset * 4)
    values = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
    valid = _valid_bytes(dictionary)
    for page, k in zip(pages, keys, strict=True):
        stored = _stored(page)
        if stored is None or not len(k):
            continue
        index = np.frombuffer(k.buffers()[1], np.int32, count=len(k), offset=k.offset * 4)
        if k.null_count:
            index = index[_valid_bytes(k)]
        used = np.zeros(len(dictionary), np.bool_)  # entries the page uses, null entries left out
        kernels.mark_keys(index, valid, used)
        lo, hi = kernels.bytes_bounds(offsets, values, used)
        if lo >= 0:
            _within(page, bytes(values[offsets[lo]:offsets[lo + 1]]), bytes(values[offsets[hi]:offsets[hi + 1]]),
                    *stored, "")


def _prefix_key(value: bytes) -> int:
    """A byte string's first 8 bytes as a big-endian integer, zero-padded (kernels.lv_decode's key)."""
    return int.from_bytes(value[:8].ljust(8, b"\0"), "big")


def _key_bytes(key: int) -> bytes:
    return key.to_bytes(8, "big").rstrip(b"\0")


def check_stats(page: Any, arr: pa.Array, known: tuple[Any, Any] | None = None) -> None:
    """Raise when a decoded value lies outside the page's stored min/max (``known`` as above)."""
    stored = _stored(page)
    if stored is None:
        return
    lo_b, hi_b = stored
    keys = page.prefix_bounds
    if keys is not None and page.column.data_type == DataType.STRING:
        # the values' 8-byte prefix keys order as the values do, so keys outside the statistics' keys mean
        # values outside them (equal keys prove nothing either way: they pass)
        if keys[0] < _prefix_key(lo_b) or keys[1] > _prefix_key(hi_b):
            raise _fail(page, f"decoded values beginning {_key_bytes(keys[0])!r}..{_key_bytes(keys[1])!r} lie "
                              f"outside the page's stored min/max [{lo_b!r}, {hi_b!r}]")
        return
    bounds = _stat_bounds(page, arr, lo_b, hi_b)
    if bounds is None:
        return
    lo, hi, values, unit = bounds
    if known is not None:
        vmin, vmax = known
    elif pa.types.is_decimal(values.type):
        vmin, vmax = decimal_min_max(values)
    elif pa.types.is_signed_integer(values.type):
        vmin, vmax = integer_min_max(values)
    elif pa.types.is_floating(values.type):
        vmin, vmax = float_min_max(values)
    elif pa.types.is_binary(values.type):
        vmin, vmax = bytes_min_max(values)
    else:
        got = pc.min_max(values)
        vmin, vmax = got["min"].as_py(), got["max"].as_py()
    if vmin is not None:
        _within(page, vmin, vmax, lo, hi, unit)


def _within(page: Any, vmin: Any, vmax: Any, lo: Any, hi: Any, unit: str) -> None:
    try:
        outside = vmin < lo or vmax > hi
    except TypeError:  # statistics of another kind than the values (a damaged column description)
        raise _fail(page, f"the page's stored min/max [{lo!r}, {hi!r}] are not of the kind of its decoded "
                          f"values [{vmin!r}, {vmax!r}]") from None
    if outside:
        raise _fail(page, f"decoded values [{vmin!r}, {vmax!r}] lie outside the page's stored min/max "
                          f"[{lo!r}, {hi!r}]{unit}")
