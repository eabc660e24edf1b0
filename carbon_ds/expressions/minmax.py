"""The one visitor that decides "rows might match" from min/max statistics, at every level.

Segments, files, blocklets, pages, Parquet row groups and ORC stripes all describe themselves with
:class:`ColumnStats`; the same visitor answers for each. It may say "might match" for a unit with no
matching row (that costs a read), but it must never say "cannot match" for a unit holding one (that would
lose a row). Whenever a bound is missing, NaN, or not comparable, the answer is "might match".
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from carbon_ds.expressions.tree import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Compare,
    Expr,
    In,
    IsNull,
    NotIn,
    NotNull,
    Or,
    StartsWith,
    push_not,
)


@dataclass(frozen=True)
class ColumnStats:
    """What a unit of data knows about one column. ``None`` means unknown."""

    min: Any = None
    max: Any = None
    null_count: int | None = None
    row_count: int | None = None

    @property
    def all_null(self) -> bool:
        return self.null_count is not None and self.row_count is not None and self.null_count >= self.row_count


StatsLookup = Callable[[str], ColumnStats | None]


def _usable(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def _aligned(a: Any, b: Any) -> tuple[Any, Any]:
    # timestamps: compare aware with aware (naive counts as UTC)
    if isinstance(a, dt.datetime) and isinstance(b, dt.datetime):
        if a.tzinfo is None:
            a = a.replace(tzinfo=dt.UTC)
        if b.tzinfo is None:
            b = b.replace(tzinfo=dt.UTC)
    return a, b


def _lt(a: Any, b: Any) -> bool:
    a, b = _aligned(a, b)
    return a < b


def _le(a: Any, b: Any) -> bool:
    a, b = _aligned(a, b)
    return a <= b


def _compare(s: ColumnStats, op: str, v: Any) -> bool:
    lo, hi = s.min, s.max
    if op == "=":
        return (not _usable(lo) or _le(lo, v)) and (not _usable(hi) or _le(v, hi))
    if op == "!=":
        return not (_usable(lo) and _usable(hi) and _le(lo, v) and _le(v, lo) and _le(hi, v) and _le(v, hi))
    if op == "<":
        return not _usable(lo) or _lt(lo, v)
    if op == "<=":
        return not _usable(lo) or _le(lo, v)
    if op == ">":
        return not _usable(hi) or _lt(v, hi)
    if op == ">=":
        return not _usable(hi) or _le(v, hi)
    return True


def _starts_with(s: ColumnStats, prefix: str) -> bool:
    lo, hi = s.min, s.max
    if isinstance(lo, bytes | bytearray) or isinstance(hi, bytes | bytearray):
        return True
    if _usable(hi) and hi < prefix:
        return False
    if _usable(lo) and lo[: len(prefix)] > prefix:
        return False
    return True


def might_match(e: Expr, stats: StatsLookup) -> bool:
    """False only when no row of the unit described by ``stats`` can satisfy the bound predicate ``e``."""
    return _visit(push_not(e), stats)


def _visit(e: Expr, stats: StatsLookup) -> bool:
    if isinstance(e, AlwaysTrue):
        return True
    if isinstance(e, AlwaysFalse):
        return False
    if isinstance(e, And):
        return _visit(e.left, stats) and _visit(e.right, stats)
    if isinstance(e, Or):
        return _visit(e.left, stats) or _visit(e.right, stats)
    if not isinstance(e, Compare | In | NotIn | IsNull | NotNull | StartsWith):
        return True  # NOT LIKE and anything else we cannot reason about
    s = stats(e.column)
    if s is None:
        return True
    try:
        if isinstance(e, IsNull):
            return s.null_count is None or s.null_count > 0
        if isinstance(e, NotNull):
            return not s.all_null
        if s.all_null:
            return False  # a comparison with NULL is never true
        if isinstance(e, Compare):
            if not _usable(e.value):
                return True
            return _compare(s, e.op, e.value)
        if isinstance(e, In):
            return any(not _usable(v) or _compare(s, "=", v) for v in e.values)
        if isinstance(e, NotIn):
            # cannot match only when every value in the unit is one single excluded value
            if _usable(s.min) and _usable(s.max) and _le(s.max, s.min):
                return not any(_usable(v) and _le(s.min, v) and _le(v, s.min) for v in e.values)
            return True
        if isinstance(e, StartsWith):
            return _starts_with(s, e.prefix)
    except TypeError:
        return True
    return True
