"""Filters given as Python objects: an expression tree, a pyarrow.compute.Expression, or (column, op, value) tuples in the style of
pyarrow/pandas ``filters`` (a list of tuples is ANDed; a list of such lists is ORed)."""

from __future__ import annotations

from typing import Any

import pyarrow.compute as pc

from carbon_ds.errors import CarbonOptionError
from carbon_ds.expressions.pyarrow_filter import from_pyarrow
from carbon_ds.expressions.tree import OPS, Compare, Expr, In, IsNull, NotIn, NotNull, and_, or_

_ALIASES = {"==": "=", "<>": "!="}


def _one(t: Any) -> Expr:
    if isinstance(t, Expr):
        return t
    if not isinstance(t, tuple | list) or len(t) != 3 or not isinstance(t[0], str):
        raise CarbonOptionError(f"a filter condition must be (column, op, value), found {t!r}")
    col, op, value = t
    op = _ALIASES.get(str(op).lower(), str(op).lower())
    if op in OPS:
        if value is None:
            raise CarbonOptionError(f"filter on column {col!r}: comparison with None is never true; use 'is null'")
        return Compare(col, op, value)
    if op in ("in", "not in"):
        if not isinstance(value, list | tuple | set | frozenset):
            raise CarbonOptionError(f"filter on column {col!r}: {op!r} needs a list of values, found {value!r}")
        values = tuple(value)
        return In(col, values) if op == "in" else NotIn(col, values)
    if op in ("is null", "is not null"):
        return IsNull(col) if op == "is null" else NotNull(col)
    raise CarbonOptionError(
        f"filter on column {col!r}: unknown operator {op!r}; use one of {', '.join(OPS)}, in, not in, "
        "is null, is not null"
    )


def to_expr(obj: Any) -> Expr:
    if isinstance(obj, Expr):
        return obj
    if isinstance(obj, pc.Expression):
        return from_pyarrow(obj)
    if isinstance(obj, tuple):
        return _one(obj)
    if isinstance(obj, list):
        if obj and all(isinstance(x, list) for x in obj):
            return or_(*(and_(*(_one(t) for t in conj)) for conj in obj))
        return and_(*(_one(t) for t in obj))
    raise CarbonOptionError(
        f"filter must be a SQL string, an expression, a pyarrow.compute.Expression or (column, op, value) tuples, found {type(obj).__name__}"
    )
