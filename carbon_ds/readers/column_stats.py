"""CarbonData min/max bytes into :class:`ColumnStats`: the one place where statistic bytes become values.

Every pruning level (segment, file, blocklet, page) describes itself through this module, so the byte
rules live here once:

* ``min_max_presence[i] = false`` or empty bytes: no statistic (the unit must be scanned);
* complex columns and their children, BINARY, and columns holding global dictionary surrogate keys
  (anything with DICTIONARY encoding except DATE's direct dictionary) are never trusted;
* strings are raw UTF-8 compared bytewise by Java; Python ``str`` order is code point order, which is the
  same order, so a value is decoded only when it is valid UTF-8 (else: no statistic);
* TIMESTAMP dimensions are sign-flipped epoch milliseconds, DATE its surrogate key, measures widened;
* FLOAT/DOUBLE: Java's min/max skip NaN, and NaN sorts above every number in Spark, so the maximum is
  never trusted (``x > v`` cannot prune a float column); the minimum still prunes ``<``, ``<=``, ``=``;
* CarbonData keeps no null counts, so ``null_count`` is always unknown (IS NULL never prunes).
A wrong value here could lose rows, so anything unexpected (odd length, overflow) gives "unknown".
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable

from carbon_ds.expressions.might_match import ColumnStats
from carbon_ds.format.arrow_types import COMPLEX, ColumnNode, nest
from carbon_ds.format.pages.stat_bytes import value_from_bytes
from carbon_ds.format.thrift.structs import BlockletMinMaxIndex, ColumnSchema, DataType, Encoding

EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

_MEASURE_WIDTH = {
    DataType.SHORT: 8, DataType.INT: 8, DataType.LONG: 8, DataType.DOUBLE: 8, DataType.FLOAT: 8,
    DataType.BYTE: 1, DataType.BOOLEAN: 1,
}
_DIMENSION_WIDTH = {DataType.SHORT: 2, DataType.INT: 4, DataType.LONG: 8, DataType.TIMESTAMP: 8, DataType.DATE: 4,
                    DataType.BOOLEAN: 1}
_STRINGS = (DataType.STRING, DataType.VARCHAR)

Stats = dict[str, ColumnStats]  # lower-cased column name -> statistics of one unit


def trusted_columns(columns: list[ColumnSchema]) -> list[bool]:
    """Per physical column: may its min/max be used? (Top-level, non-complex, no surrogate keys.)"""
    # asked for every blocklet pruned by its pages: remembered by what it depends on
    key = tuple((c.data_type, c.num_child, tuple(c.encoders or ())) for c in columns)
    got = _TRUSTED.get(key)
    if got is None:
        if len(_TRUSTED) >= 256:
            _TRUSTED.clear()
        got = _TRUSTED[key] = _trusted_columns(columns)
    return list(got)


_TRUSTED: dict[tuple, list[bool]] = {}


def _trusted_columns(columns: list[ColumnSchema]) -> list[bool]:
    try:
        nodes = nest(columns)
    except Exception:  # a broken header: trust nothing rather than guess
        return [False] * len(columns)
    return trusted_nodes(nodes, columns)


def trusted_nodes(nodes: Iterable[ColumnNode], columns: list[ColumnSchema]) -> list[bool]:
    """``trusted_columns`` of ``columns`` nested as ``nodes`` (an open file's, already built when it opened);
    a node whose column is not among ``columns`` (a table column the file does not hold) is skipped."""
    ok = [False] * len(columns)
    index = {id(c): i for i, c in enumerate(columns)}
    for node in nodes:
        c = node.schema
        i = index.get(id(c))
        dt_ = _dtype(c)
        if i is None or dt_ is None or dt_ in COMPLEX or dt_ == DataType.BINARY:
            continue
        enc = set(c.encoders or [])
        if Encoding.DICTIONARY in enc and dt_ != DataType.DATE:
            continue  # global dictionary (1.x): the bytes are surrogate keys, not values
        if dt_ == DataType.DATE and Encoding.DICTIONARY in enc and Encoding.DIRECT_DICTIONARY not in enc:
            continue
        if dt_ == DataType.TIMESTAMP and Encoding.DIRECT_DICTIONARY in enc:
            continue  # 1.x direct-dictionary timestamps store keys relative to a configured cut-off
        ok[i] = True
    return ok


def _dtype(c: ColumnSchema) -> DataType | None:
    try:
        return DataType(c.data_type)
    except ValueError:
        return None


def column_stats(column: ColumnSchema, lo: bytes | None, hi: bytes | None, present: bool | None,
                 rows: int | None) -> ColumnStats:
    """Statistics of one column in one unit; unknown bounds are None (never a guess)."""
    if present is False:
        return ColumnStats(row_count=rows)
    t = _dtype(column)
    if t is None:
        return ColumnStats(row_count=rows)
    low, high = _value(column, t, lo), _value(column, t, hi)
    if t in (DataType.FLOAT, DataType.DOUBLE):
        high = None  # NaN is not in Java's max but sorts above it in Spark
        if low is not None and math.isnan(low):
            low = None
    if low is not None and high is not None:
        try:
            if high < low:  # inconsistent bytes: use neither
                low = high = None
        except TypeError:
            low = high = None
    return ColumnStats(min=low, max=high, null_count=None, row_count=rows)


def decoded_value(column: ColumnSchema, b: bytes | None):
    """A min/max byte string of ``column`` as a Python value (None when it cannot be decoded exactly)."""
    t = _dtype(column)
    return None if t is None else _value(column, t, b)


def _value(column: ColumnSchema, t: DataType, b: bytes | None):
    if not b:
        return None
    b = bytes(b)
    dim = bool(column.dimension)
    try:
        if t in _STRINGS:
            return b.decode("utf-8") if dim else None
        if t == DataType.DECIMAL:
            return value_from_bytes(t, dim, b) if len(b) >= 2 else None
        if t == DataType.BYTE and dim:
            return value_from_bytes(t, dim, b)  # Java writes its decimal text
        width = (_DIMENSION_WIDTH if dim else _MEASURE_WIDTH).get(t)
        if width is None or len(b) != width:
            return None
        if t == DataType.FLOAT and not dim and b[4:] != b"\x00\x00\x00\x00":
            return None
        v = value_from_bytes(t, dim, b)
        if t == DataType.TIMESTAMP:
            return EPOCH_UTC + dt.timedelta(milliseconds=int(v))  # type: ignore[arg-type]
        return v
    except (ValueError, OverflowError, UnicodeDecodeError, TypeError, ArithmeticError):
        return None


def unit_stats(columns: list[ColumnSchema], trusted: list[bool], mm: BlockletMinMaxIndex | None,
               rows: int | None) -> Stats:
    """Statistics of every trusted column of one unit (a blocklet's index entry or a page's min_max)."""
    out: Stats = {}
    if mm is None:
        return out
    mins, maxs = mm.min_values or [], mm.max_values or []
    presence = mm.min_max_presence
    for i, c in enumerate(columns):
        if not trusted[i] or i >= len(mins) or i >= len(maxs):
            continue
        present = presence[i] if presence is not None and i < len(presence) else None
        out[c.column_name.lower()] = column_stats(c, mins[i], maxs[i], present, rows)
    return out


def _lo(a, b):
    if a is None or b is None:
        return None
    try:
        return a if a <= b else b
    except TypeError:
        return None


def _hi(a, b):
    if a is None or b is None:
        return None
    try:
        return a if a >= b else b
    except TypeError:
        return None


def merge(units: Iterable[Stats]) -> Stats:
    """Statistics of a union of units (blocklets of a file, files of a segment): a column unknown in
    any unit is unknown in the union."""
    out: Stats | None = None
    for s in units:
        if out is None:
            out = dict(s)
            continue
        merged: Stats = {}
        for name in out.keys() & s.keys():
            a, b = out[name], s[name]
            rows = a.row_count + b.row_count if a.row_count is not None and b.row_count is not None else None
            merged[name] = ColumnStats(_lo(a.min, b.min), _hi(a.max, b.max), None, rows)
        out = merged
    return out or {}


def lookup(stats: Stats):
    """A StatsLookup for the min/max visitor (column names matched case-insensitively)."""
    return lambda name: stats.get(name.lower())
