"""Polars predicates as our expression tree, for pruning only.

Polars hands an IO source its predicate as a ``polars.Expr``; ``expr.meta.serialize(format="json")`` spells
the tree out (``Column``, ``Literal``, ``BinaryExpr``, ``Function``, ``Cast`` nodes). :func:`from_polars_json`
reads that text, so this module needs no Polars itself. (Polars converts predicates to pyarrow expressions
only for its private ``LazyFrame._scan_python_function``; the JSON form is public. Polars does not promise
that form stays the same between releases: a node this module does not know only means no pruning, and
the tests assert pruning, so a changed form shows there.)

The result is a *necessary* condition: every row the Polars predicate keeps also satisfies it, and Polars'
own predicate is applied to what the scan returns, unless the translation is also *exact*
(:func:`translate_polars_json`): then the scan's row filter keeps exactly Polars' rows. So a part that does not translate is dropped from
an AND (the rest still prunes), makes an OR or a NOT untranslatable, and a predicate with nothing left
gives ``None`` (no pruning, same result). Translated: ``== != < <= > >=`` between a column and a literal,
``is_between``, ``is_in``, ``is_null``, ``is_not_null``, ``str.starts_with``, ``&``, ``|``, ``~``, and the
widening casts Polars puts on a column (``k.cast(Int64)``). Float columns are left out: Polars orders NaN
above every number and calls NaN equal to NaN, Arrow does neither.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc

from carbon_ds.expressions.tree import (
    Compare,
    Expr,
    In,
    IsNull,
    Not,
    NotNull,
    StartsWith,
    and_,
    flip,
    or_,
)

_OPS = {"Eq": "=", "NotEq": "!=", "Lt": "<", "LtEq": "<=", "Gt": ">", "GtEq": ">="}
_UNITS = {"Milliseconds": 1_000, "Microseconds": 1, "Nanoseconds": None}  # to microseconds
_INTS = {"Int8": 8, "Int16": 16, "Int32": 32, "Int64": 64, "UInt8": 8, "UInt16": 16, "UInt32": 32, "UInt64": 64}
_EPOCH = dt.date(1970, 1, 1)
_OWNED = {"StringOwned": "String", "DatetimeOwned": "Datetime"}  # Polars 1.x names of the same scalars


class _Untranslatable(Exception):
    """A node outside what this module reads; the caller drops the part it belongs to."""


@dataclass(frozen=True)
class _Part:
    expr: Expr
    exact: bool  # True: keeps exactly the rows Polars keeps; False: a superset of them


def from_polars_json(text: str, schema: pa.Schema) -> Expr | None:
    """A condition every row kept by the Polars predicate ``text`` (its JSON serialisation) satisfies, over
    the columns of ``schema``; ``None`` when nothing of it translates."""
    got = translate_polars_json(text, schema)
    return got[0] if got is not None else None


def translate_polars_json(text: str, schema: pa.Schema) -> tuple[Expr, bool] | None:
    """``from_polars_json``'s condition and whether it is exact: true for exactly the rows the Polars
    predicate keeps (every part translated; each comparison between a column and a literal of the column's
    own kind, where Polars and our row filter agree value for value, nulls included)."""
    try:
        tree = json.loads(text)
    except ValueError:
        return None
    part = _Translator(schema).predicate(tree)
    return (part.expr, part.exact) if part is not None else None


class _Translator:
    def __init__(self, schema: pa.Schema):
        self.types = {f.name: f.type for f in schema}

    # ---------------------------------------------------------------- boolean structure
    def predicate(self, node: Any) -> _Part | None:
        try:
            return self._predicate(node)
        except (_Untranslatable, KeyError, TypeError, ValueError, IndexError, pa.ArrowException):
            return None

    def _predicate(self, node: Any) -> _Part | None:
        kind, body = _one(node)
        if kind == "BinaryExpr":
            op = body["op"]
            if op in ("And", "LogicalAnd"):
                return self._and(body["left"], body["right"])
            if op in ("Or", "LogicalOr"):
                left, right = self.predicate(body["left"]), self.predicate(body["right"])
                if left is None or right is None:
                    return None
                return _Part(or_(left.expr, right.expr), left.exact and right.exact)
            if op in _OPS:
                return self._compare(body["left"], _OPS[op], body["right"])
            raise _Untranslatable(op)
        if kind == "Function":
            return self._function(body["function"], body["input"])
        if kind == "Column":  # a boolean column used as the predicate
            if pa.types.is_boolean(self._type(body)):
                return _Part(Compare(body, "=", True), True)
        raise _Untranslatable(kind)

    def _and(self, a: Any, b: Any) -> _Part | None:
        parts = [self.predicate(a), self.predicate(b)]
        kept = [p for p in parts if p is not None]
        if not kept:
            return None
        return _Part(and_(*(p.expr for p in kept)), len(kept) == 2 and all(p.exact for p in kept))

    def _function(self, function: Any, inputs: list) -> _Part | None:
        kind, body = _one(function) if isinstance(function, dict) else (function, None)
        if kind == "StringExpr" and body == "StartsWith":
            column = self._column(inputs[0])
            prefix = self._literal(inputs[1], column)
            if (not isinstance(prefix, str) or not pa.types.is_string(self._type(column))
                    and not pa.types.is_large_string(self._type(column))):
                raise _Untranslatable("starts_with")
            return _Part(StartsWith(column, prefix), True)
        if kind != "Boolean":
            raise _Untranslatable(kind)
        name, options = _one(body) if isinstance(body, dict) else (body, None)
        if name == "Not":
            inner = self.predicate(inputs[0])
            if inner is None or not inner.exact:  # NOT of a superset is no superset of the NOT
                return None
            return _Part(Not(inner.expr), True)
        if name in ("IsNull", "IsNotNull"):
            column = self._column(inputs[0], nulls_only=True)
            return _Part(IsNull(column) if name == "IsNull" else NotNull(column), True)
        if name == "IsBetween":
            closed = options["closed"]
            low = self._compare(inputs[0], ">=" if closed in ("Both", "Left") else ">", inputs[1])
            high = self._compare(inputs[0], "<=" if closed in ("Both", "Right") else "<", inputs[2])
            return _Part(and_(low.expr, high.expr), low.exact and high.exact)
        if name == "IsIn":
            return self._is_in(inputs, bool(options.get("nulls_equal", False)))
        raise _Untranslatable(name)

    # ---------------------------------------------------------------- leaves
    def _compare(self, left: Any, op: str, right: Any) -> _Part:
        if _one(left)[0] == "Literal":
            left, right, op = right, left, flip(op)
        column = self._column(left)
        value = self._literal(right, column)
        if value is None:  # a comparison with null keeps no row; say nothing rather than guess
            raise _Untranslatable("null literal")
        return _Part(Compare(column, op, value), _same_kind(self._type(column), value))

    def _is_in(self, inputs: list, nulls_equal: bool) -> _Part:
        column = self._column(inputs[0])
        kind, lit = _one(inputs[1])
        if kind != "Literal":
            raise _Untranslatable("is_in of an expression")
        kind, value = _one(lit)
        if isinstance(value, dict) and set(value) == {"dtype", "value"}:  # Polars 1.x
            value = value["value"]
        data = (value.get("List") if kind == "Scalar" and isinstance(value, dict) else value if kind == "Series"
            else None)
        if data is None:
            raise _Untranslatable("is_in literal")
        values = ipc.open_stream(bytes(data)).read_all().column(0).to_pylist()
        present = tuple(v for v in values if v is not None)
        found = In(column, present)
        exact = all(_same_kind(self._type(column), v) for v in present)
        if nulls_equal and len(present) != len(values):
            return _Part(or_(IsNull(column), found), exact)
        return _Part(found, exact)

    def _column(self, node: Any, nulls_only: bool = False) -> str:
        """The column a node reads, through the value-preserving casts Polars adds before comparing."""
        kind, body = _one(node)
        if kind == "Column":
            t = self._type(body)
            if pa.types.is_floating(t) and not nulls_only:
                raise _Untranslatable("float column")
            return body
        if kind == "Cast":
            column = self._column(body["expr"], nulls_only)
            if not _widens(self._type(column), body["dtype"]):
                raise _Untranslatable("cast")
            return column
        raise _Untranslatable(kind)

    def _type(self, column: str) -> pa.DataType:
        if column not in self.types:
            raise _Untranslatable(f"column {column}")
        return self.types[column]

    def _literal(self, node: Any, column: str) -> Any:
        kind, body = _one(node)
        if kind != "Literal":
            raise _Untranslatable(kind)
        kind, body = _one(body)
        if kind == "Dyn":
            kind, value = _one(body)
            if kind in ("Int", "Float", "Str"):
                return value
            raise _Untranslatable(kind)
        if kind != "Scalar":
            raise _Untranslatable(kind)
        if isinstance(body, dict) and set(body) == {"dtype", "value"}:  # Polars 1.x: the value beside its dtype
            body = body["value"]
        if body == "Null" or (isinstance(body, dict) and "Null" in body):
            return None
        kind, value = _one(body)
        kind = _OWNED.get(kind, kind)
        if kind in _INTS or kind in ("Float32", "Float64", "String", "Boolean"):
            return value
        if kind == "Date":
            return _EPOCH + dt.timedelta(days=value)
        if kind == "Datetime":
            return _datetime(*value)
        if kind == "Decimal":  # Polars 2: [unscaled, precision, scale]; Polars 1.x: [unscaled, scale]
            unscaled, scale = value[0], value[-1]
            return Decimal(unscaled).scaleb(-scale)
        raise _Untranslatable(kind)


def _same_kind(column: pa.DataType, value: Any) -> bool:
    """Whether a literal is of the column's own kind (an integer for an integer or decimal column, a
    string for a string column, a date for a date column, a Decimal for a decimal column, a bool for a
    boolean one): then Polars and our row filter compare alike. Floats, timestamps and mixed kinds
    (a datetime against a date column) only prune."""
    if isinstance(value, bool):
        return pa.types.is_boolean(column)
    if isinstance(value, int):
        return pa.types.is_integer(column) or pa.types.is_decimal(column)
    if isinstance(value, str):
        return pa.types.is_string(column) or pa.types.is_large_string(column)
    if isinstance(value, Decimal):
        return pa.types.is_decimal(column)
    if type(value) is dt.date:
        return pa.types.is_date32(column)
    return False


def _one(node: Any) -> tuple[str, Any]:
    """The single (key, value) of a JSON node such as ``{"Column": "k"}``."""
    if isinstance(node, str):
        return node, None
    if not isinstance(node, dict) or len(node) != 1:
        raise _Untranslatable(str(node)[:60])
    return next(iter(node.items()))


def _datetime(value: int, unit: str, tz: Any) -> dt.datetime:
    zone = tz.get("inner") if isinstance(tz, dict) else tz
    if zone not in (None, "UTC") or unit not in _UNITS:
        raise _Untranslatable(f"datetime in zone {zone}")  # other zones: not worth a guess at their rules
    per_us = _UNITS[unit]
    if per_us is None:
        if value % 1_000:
            raise _Untranslatable("nanoseconds")
        micros = value // 1_000
    else:
        micros = value * per_us
    moment = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros)
    return moment if zone is None else moment.replace(tzinfo=dt.UTC)


def _widens(source: pa.DataType, target: Any) -> bool:
    """Whether casting the column type ``source`` to the Polars dtype ``target`` keeps every value, so that
    comparing the cast column equals comparing the column."""
    kind, body = _one(target)
    if kind != "Literal":
        return False
    name, args = _one(body)
    if pa.types.is_integer(source):
        bits, signed = source.bit_width, pa.types.is_signed_integer(source)
        if name in _INTS:
            to_signed = name.startswith("Int")
            return (_INTS[name] > bits or (_INTS[name] == bits and to_signed == signed)) and (to_signed or not signed)
        if name == "Float64":
            return bits <= 32
        if name == "Decimal":
            precision, scale = args
            return precision - scale >= 20
        return False
    if pa.types.is_decimal(source) and name == "Decimal":
        precision, scale = args
        return scale >= source.scale and precision - scale >= source.precision - source.scale
    if pa.types.is_date32(source) and name == "Date":
        return True
    return False
