"""Spark's pushed filters (``pyspark.sql.datasource`` Filter objects) into the one expression tree.

Only what min/max can use is converted; everything else is left for Spark to evaluate. Matching is by
class name so that importing this module never needs pyspark.
"""

from __future__ import annotations

from typing import Any

from carbon_ds.expressions.tree import Compare, Expr, In, IsNull, Not, NotNull, StartsWith

_COMPARE = {
    "EqualTo": "=",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
}


def _column(f: Any) -> str | None:
    path = getattr(f, "attribute", None)
    if isinstance(path, tuple) and len(path) == 1 and isinstance(path[0], str):
        return path[0]
    return None  # nested field paths are not pruned


def from_spark_filter(f: Any) -> Expr | None:
    """The expression for one Spark filter, or None when it is not one we use."""
    nots = 0  # counted in a loop: a hostile chain of NOTs must not exhaust the stack
    while type(f).__name__ == "Not":
        f, nots = getattr(f, "child", None), nots + 1
    leaf = _leaf(f)
    if leaf is None or (nots and isinstance(leaf, StartsWith)):
        return None
    return Not(leaf) if nots % 2 else leaf


def _leaf(f: Any) -> Expr | None:
    kind = type(f).__name__
    col = _column(f)
    if col is None:
        return None
    if kind in _COMPARE:
        return None if f.value is None else Compare(col, _COMPARE[kind], f.value)
    if kind == "In":
        values = tuple(v for v in f.value if v is not None)
        return In(col, values) if values else None
    if kind == "IsNull":
        return IsNull(col)
    if kind == "IsNotNull":
        return NotNull(col)
    if kind == "StringStartsWith":
        return StartsWith(col, f.value)
    return None
