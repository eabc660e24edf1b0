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
    Compare,
    Expr,
    ExprVisitor,
    In,
    IsNull,
    NotIn,
    NotNull,
    Predicate,
    StartsWith,
    push_not,
    visit,
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


class _MightMatch(ExprVisitor[bool]):
    """Never negates a "might match": it runs on the ``push_not`` form, where the only Not left is NOT LIKE."""

    def __init__(self, stats: StatsLookup):
        self.stats = stats

    def _leaf(self, column: str, check: Callable[[ColumnStats], bool], nulls_match: bool = False) -> bool:
        """``check`` on the column's stats; True when they are unknown or not comparable. Unless the
        predicate can hold on NULL (``nulls_match``), a unit of only nulls cannot match."""
        s = self.stats(column)
        if s is None:
            return True
        try:
            if not nulls_match and s.all_null:
                return False  # a comparison with NULL is never true
            return check(s)
        except TypeError:
            return True

    def visit_true(self) -> bool:
        return True

    def visit_false(self) -> bool:
        return False

    def visit_and(self, left: bool, right: bool) -> bool:
        return left and right

    def visit_or(self, left: bool, right: bool) -> bool:
        return left or right

    def visit_not(self, child: bool) -> bool:
        return True  # NOT LIKE or NOT of a computed predicate: we cannot reason about it

    def visit_compare(self, node: Compare) -> bool:
        return self._leaf(node.column, lambda s: not _usable(node.value) or _compare(s, node.op, node.value))

    def visit_in(self, node: In) -> bool:
        return self._leaf(node.column, lambda s: any(not _usable(v) or _compare(s, "=", v) for v in node.values))

    def visit_not_in(self, node: NotIn) -> bool:
        def check(s: ColumnStats) -> bool:
            # cannot match only when every value in the unit is one single excluded value
            if _usable(s.min) and _usable(s.max) and _le(s.max, s.min):
                return not any(_usable(v) and _le(s.min, v) and _le(v, s.min) for v in node.values)
            return True

        return self._leaf(node.column, check)

    def visit_is_null(self, node: IsNull) -> bool:
        return self._leaf(node.column, lambda s: s.null_count is None or s.null_count > 0, nulls_match=True)

    def visit_not_null(self, node: NotNull) -> bool:
        return self._leaf(node.column, lambda s: not s.all_null, nulls_match=True)

    def visit_starts_with(self, node: StartsWith) -> bool:
        return self._leaf(node.column, lambda s: _starts_with(s, node.prefix))

    def visit_predicate(self, node: Predicate) -> bool:
        return True  # computed values: min/max say nothing about them


_NOT_FREE: dict[int, tuple[Expr, Expr]] = {}  # id(e) -> (e, push_not(e)); holding e keeps its id its own


def _not_free(e: Expr) -> Expr:
    """``push_not(e)``, remembered for the last few expressions: pruning asks about one filter for every
    segment, file and blocklet."""
    hit = _NOT_FREE.get(id(e))
    if hit is None or hit[0] is not e:
        if len(_NOT_FREE) >= 16:
            _NOT_FREE.clear()
        hit = _NOT_FREE[id(e)] = (e, push_not(e))
    return hit[1]


def might_match(e: Expr, stats: StatsLookup) -> bool:
    """False only when no row of the unit described by ``stats`` can satisfy the bound predicate ``e``.

    Raises:
        UnsupportedExpressionError: ``e`` holds a node type outside the predicate model.
    """
    return visit(_not_free(e), _MightMatch(stats))
