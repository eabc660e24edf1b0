"""Binding: resolve column names against a schema and give every literal the column's Python type,
and turn a bound expression into a pyarrow compute expression for exact row filtering."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal, InvalidOperation
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonOptionError
from carbon_ds.expressions.tree import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Compare,
    Expr,
    In,
    IsNull,
    Not,
    NotIn,
    NotNull,
    Or,
    StartsWith,
)


def _coerce(value: Any, t: pa.DataType, column: str) -> Any:
    def bad(expected: str) -> CarbonOptionError:
        return CarbonOptionError(
            f"filter on column {column!r} ({t}): expected {expected}, found {value!r} ({type(value).__name__})"
        )

    if isinstance(value, bool) and not pa.types.is_boolean(t):
        raise bad(str(t))
    if pa.types.is_integer(t):
        if isinstance(value, int):
            return value
        if isinstance(value, Decimal | float):
            # keep fractional literals: x > 2.5 on an int column is still meaningful
            return value if not (isinstance(value, float) and math.isnan(value)) else value
        raise bad("a number")
    if pa.types.is_floating(t):
        if isinstance(value, int | float | Decimal):
            return float(value)
        raise bad("a number")
    if pa.types.is_decimal(t):
        if isinstance(value, int | Decimal):
            return Decimal(value)
        if isinstance(value, float):
            return Decimal(repr(value))
        raise bad("a number")
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if isinstance(value, str):
            return value
        raise bad("a string")
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        if isinstance(value, bytes):
            return value
        if isinstance(value, str):
            return value.encode("utf-8")
        raise bad("a string or bytes")
    if pa.types.is_boolean(t):
        if isinstance(value, bool):
            return value
        raise bad("TRUE or FALSE")
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        if isinstance(value, dt.datetime):
            raise bad("a date")
        if isinstance(value, dt.date):
            return value
        if isinstance(value, str):
            try:
                return dt.date.fromisoformat(value)
            except ValueError:
                raise bad("a date 'yyyy-mm-dd'") from None
        raise bad("a date")
    if pa.types.is_timestamp(t):
        if isinstance(value, dt.datetime):
            return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        if isinstance(value, dt.date):
            return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
        if isinstance(value, str):
            try:
                v = dt.datetime.fromisoformat(value)
            except ValueError:
                raise bad("a timestamp 'yyyy-mm-dd hh:mm:ss'") from None
            return v if v.tzinfo else v.replace(tzinfo=dt.UTC)
        raise bad("a timestamp")
    raise CarbonOptionError(f"filter on column {column!r}: columns of type {t} cannot be filtered")


def bind(e: Expr, schema: pa.Schema) -> Expr:
    """Resolve names case-insensitively to the schema's spelling and coerce literals; errors name the column."""
    lookup = {f.name.lower(): f for f in schema}

    def field(name: str) -> pa.Field:
        f = lookup.get(name.lower())
        if f is None:
            raise CarbonOptionError(f"filter names column {name!r}, which is not in the table ({', '.join(schema.names)})")
        return f

    def go(x: Expr) -> Expr:
        if isinstance(x, And):
            return And(go(x.left), go(x.right))
        if isinstance(x, Or):
            return Or(go(x.left), go(x.right))
        if isinstance(x, Not):
            return Not(go(x.child))
        if isinstance(x, Compare):
            f = field(x.column)
            return Compare(f.name, x.op, _coerce(x.value, f.type, f.name))
        if isinstance(x, In | NotIn):
            f = field(x.column)
            return type(x)(f.name, tuple(_coerce(v, f.type, f.name) for v in x.values))
        if isinstance(x, IsNull | NotNull):
            return type(x)(field(x.column).name)
        if isinstance(x, StartsWith):
            f = field(x.column)
            if not (pa.types.is_string(f.type) or pa.types.is_large_string(f.type)):
                raise CarbonOptionError(f"LIKE needs a string column; {f.name!r} is {f.type}")
            return StartsWith(f.name, x.prefix)
        return x

    return go(e)


def _scalar(value: Any, t: pa.DataType) -> pa.Scalar | Any:
    if isinstance(value, Decimal | float) and pa.types.is_integer(t):
        # a fractional literal on an int column compares in floating point (pa.scalar(2.5, int32) is 2)
        return float(value)
    if pa.types.is_timestamp(t) and isinstance(value, dt.datetime):
        return pa.scalar(value, pa.timestamp("us", tz="UTC")).cast(t) if t.tz else pa.scalar(
            value.astimezone(dt.UTC).replace(tzinfo=None), pa.timestamp("us")).cast(t)
    if pa.types.is_decimal(t) and isinstance(value, Decimal):
        return pa.scalar(value)
    try:
        return pa.scalar(value, t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, InvalidOperation, OverflowError):
        return pa.scalar(value)


def _value_set(values: tuple, t: pa.DataType) -> pa.Array:
    """The IN list as an array of the column's type. A value that is not exactly representable in that
    type (2.5 for an int column, 1.234 for DECIMAL(10,2), out of range) equals no value of the column,
    so it is left out; that is right for IN and for NOT IN alike."""
    out = []
    for v in values:
        try:
            s = _scalar(v, t)
            s = (s if isinstance(s, pa.Scalar) else pa.scalar(s)).cast(t, safe=True)
            if s.as_py() == v:  # pyarrow may round silently; only exact values can be equal
                out.append(s.as_py())
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, InvalidOperation,
                OverflowError, TypeError, ValueError):
            continue
    return pa.array(out, t)


def to_arrow(e: Expr, schema: pa.Schema) -> pc.Expression:
    """A pyarrow compute expression with SQL semantics: rows where the predicate is NULL are dropped."""
    types = {f.name: f.type for f in schema}

    def go(x: Expr) -> pc.Expression:
        if isinstance(x, AlwaysTrue):
            return pc.scalar(True)
        if isinstance(x, AlwaysFalse):
            return pc.scalar(False)
        if isinstance(x, And):
            return go(x.left) & go(x.right)
        if isinstance(x, Or):
            return go(x.left) | go(x.right)
        if isinstance(x, Not):
            return ~go(x.child)
        if isinstance(x, IsNull):
            return pc.field(x.column).is_null()
        if isinstance(x, NotNull):
            return pc.field(x.column).is_valid()
        if isinstance(x, StartsWith):
            return pc.starts_with(pc.field(x.column), pattern=x.prefix)
        t = types[x.column]  # type: ignore[attr-defined]
        if isinstance(x, In | NotIn):
            inside = pc.is_in(pc.field(x.column), value_set=_value_set(x.values, t))
            # is_in says False for a null input; SQL says NULL, which matters once the result is negated
            inside = pc.if_else(pc.field(x.column).is_valid(), inside, pc.scalar(pa.scalar(None, pa.bool_())))
            return inside if isinstance(x, In) else ~inside
        assert isinstance(x, Compare)
        f, v = pc.field(x.column), _scalar(x.value, t)
        return {
            "=": f == v,
            "!=": f != v,
            "<": f < v,
            "<=": f <= v,
            ">": f > v,
            ">=": f >= v,
        }[x.op]

    return go(e)


def filter_table(table: pa.Table, e: Expr) -> pa.Table:
    """Rows of ``table`` for which the bound predicate is TRUE."""
    if isinstance(e, AlwaysTrue):
        return table
    return table.filter(to_arrow(e, table.schema))
