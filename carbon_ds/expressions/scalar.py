"""Value expressions inside a predicate: arithmetic, CASE, COALESCE, string, date and cast functions.

A filter such as ``id % 2 = 1`` or ``lower(name) LIKE 'a%'`` is a :class:`~carbon_ds.expressions.tree.Predicate`
leaf holding a tree of these nodes (``Col``, ``Lit``, ``Call``, ``Case``, ``Cast``). They mean what they mean
in Spark SQL with ANSI mode on (Spark 4's default): ``/`` divides as double, ``%`` takes the dividend's sign,
integer overflow, division by zero and a bad cast are errors.

``check`` resolves column names against a schema and gives every node its Arrow type, refusing an unknown
function (with the nearest known name), a wrong argument count or a type mismatch (naming the column);
``carbon_ds.expressions.scalar_eval`` evaluates a checked tree on a table with pyarrow's kernels.
"""

from __future__ import annotations

import datetime as dt
import difflib
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pyarrow as pa

from carbon_ds.errors import CarbonFilterError


class Scalar:
    """A value expression node."""

    def columns(self) -> set[str]:
        out: set[str] = set()
        todo: list[Scalar] = [self]
        while todo:
            node = todo.pop()
            if isinstance(node, Col):
                out.add(node.name)
            todo.extend(node.operands())
        return out

    def operands(self) -> tuple[Scalar, ...]:
        return ()


@dataclass(frozen=True)
class Col(Scalar):
    name: str

    def __str__(self) -> str:
        return self.name if self.name.isidentifier() else "`" + self.name.replace("`", "``") + "`"


@dataclass(frozen=True)
class Lit(Scalar):
    value: Any  # None is SQL's NULL

    def __str__(self) -> str:
        v = self.value
        if v is None:
            return "NULL"
        if isinstance(v, bool):
            return "TRUE" if v else "FALSE"
        if isinstance(v, str):
            return "'" + v.replace("'", "''") + "'"
        if isinstance(v, dt.datetime):
            return f"TIMESTAMP '{v.isoformat(sep=' ')}'"
        if isinstance(v, dt.date):
            return f"DATE '{v.isoformat()}'"
        if isinstance(v, float):
            return repr(v) + "D"
        return str(v)


@dataclass(frozen=True)
class Call(Scalar):
    """An operator (``+``, ``=``, ``and``, ``in``, ``like``, ...) or a function by its lower-case name."""

    name: str
    args: tuple[Scalar, ...]

    def operands(self) -> tuple[Scalar, ...]:
        return self.args

    def __str__(self) -> str:
        a = self.args
        if self.name in _INFIX:
            return f"({a[0]} {self.name.upper()} {a[1]})"
        if self.name == "neg":
            return f"(- {a[0]})"
        if self.name == "not":
            return f"(NOT {a[0]})"
        if self.name in ("is_null", "is_not_null"):
            return f"({a[0]} IS {'NOT ' if self.name == 'is_not_null' else ''}NULL)"
        if self.name == "in":
            return f"({a[0]} IN ({', '.join(map(str, a[1:]))}))"
        return f"{self.name}({', '.join(map(str, a))})"


@dataclass(frozen=True)
class Case(Scalar):
    whens: tuple[tuple[Scalar, Scalar], ...]
    otherwise: Scalar
    type: Any = field(default=None, compare=False)  # the result's Arrow type, set by ``check``

    def operands(self) -> tuple[Scalar, ...]:
        return tuple(x for pair in self.whens for x in pair) + (self.otherwise,)

    def __str__(self) -> str:
        body = " ".join(f"WHEN {c} THEN {v}" for c, v in self.whens)
        return f"CASE {body} ELSE {self.otherwise} END"


@dataclass(frozen=True)
class Cast(Scalar):
    arg: Scalar
    to: pa.DataType

    def operands(self) -> tuple[Scalar, ...]:
        return (self.arg,)

    def __str__(self) -> str:
        return f"CAST({self.arg} AS {sql_type_name(self.to)})"


_COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
_ARITHMETIC = ("+", "-", "*", "/", "%")
_INFIX = _COMPARISONS + _ARITHMETIC + ("and", "or", "like")

# function name -> (fewest arguments, most arguments; None for any number)
FUNCTIONS: dict[str, tuple[int, int | None]] = {
    "abs": (1, 1), "coalesce": (1, None), "nullif": (2, 2),
    "lower": (1, 1), "lcase": (1, 1), "upper": (1, 1), "ucase": (1, 1),
    "length": (1, 1), "char_length": (1, 1), "character_length": (1, 1),
    "substring": (2, 3), "substr": (2, 3), "trim": (1, 1), "ltrim": (1, 1), "rtrim": (1, 1),
    "concat": (1, None), "startswith": (2, 2), "endswith": (2, 2), "contains": (2, 2),
    "year": (1, 1), "quarter": (1, 1), "month": (1, 1), "day": (1, 1), "dayofmonth": (1, 1),
    "dayofweek": (1, 1), "hour": (1, 1), "minute": (1, 1), "second": (1, 1),
    "to_date": (1, 1), "date_trunc": (2, 2),
}
ALIASES = {"lcase": "lower", "ucase": "upper", "char_length": "length", "character_length": "length",
           "substr": "substring", "dayofmonth": "day"}

# SQL type names CAST accepts
_TYPES = {
    "boolean": pa.bool_(), "tinyint": pa.int8(), "byte": pa.int8(), "smallint": pa.int16(), "short": pa.int16(),
    "int": pa.int32(), "integer": pa.int32(), "bigint": pa.int64(), "long": pa.int64(), "float": pa.float32(),
    "real": pa.float32(), "double": pa.float64(), "string": pa.string(), "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
}
CAST_TYPES = tuple(_TYPES) + ("decimal(p, s)",)


def sql_type(name: str, precision: int | None = None, scale: int | None = None) -> pa.DataType | None:
    """The Arrow type of a CAST target; None for a name CAST does not know."""
    name = name.lower()
    if name in ("decimal", "dec", "numeric"):
        p = 10 if precision is None else precision
        s = 0 if scale is None else scale
        if not 1 <= p <= 38 or not 0 <= s <= p:
            raise CarbonFilterError(f"DECIMAL({p}, {s}): expected a precision of 1 to 38 and a scale of 0 to "
                                    "the precision")
        return pa.decimal128(p, s)
    return _TYPES.get(name)


def sql_type_name(t: pa.DataType) -> str:
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision}, {t.scale})"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP"
    for name, known in _TYPES.items():
        if known == t:
            return name.upper()
    return str(t)


def did_you_mean(name: str, known: list[str] | tuple[str, ...]) -> str:
    close = difflib.get_close_matches(name.lower(), [k.lower() for k in known], n=1)
    return f"; did you mean {close[0]}?" if close else ""


# ------------------------------------------------------------------------------------------ types
def is_int(t: pa.DataType) -> bool:
    return pa.types.is_integer(t)


def is_number(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def is_temporal(t: pa.DataType) -> bool:
    return pa.types.is_date(t) or pa.types.is_timestamp(t)


def literal_type(v: Any) -> pa.DataType:
    """The type Spark gives the literal: ``1`` INT, ``3000000000`` BIGINT, ``1.5`` DECIMAL(2, 1), ``1.5D`` DOUBLE."""
    if v is None:
        return pa.null()
    if isinstance(v, bool):
        return pa.bool_()
    if isinstance(v, int):
        if -(1 << 31) <= v < (1 << 31):
            return pa.int32()
        return pa.int64() if -(1 << 63) <= v < (1 << 63) else pa.decimal128(38, 0)
    if isinstance(v, Decimal):
        sign, digits, exp = v.as_tuple()
        scale = max(0, -int(exp))
        return pa.decimal128(min(38, max(len(digits), scale, 1)), scale)
    if isinstance(v, float):
        return pa.float64()
    if isinstance(v, str):
        return pa.string()
    if isinstance(v, dt.datetime):
        return pa.timestamp("us", tz="UTC")
    if isinstance(v, dt.date):
        return pa.date32()
    raise CarbonFilterError(f"a literal of type {type(v).__name__} ({v!r}) cannot be used in a filter expression")


def common_type(types: list[pa.DataType], what: str) -> pa.DataType:
    """The one type values of ``types`` are brought to (CASE branches, COALESCE arguments)."""
    known = [t for t in types if not pa.types.is_null(t)]
    if not known:
        return pa.null()
    if all(t == known[0] for t in known):
        return known[0]
    if all(is_number(t) for t in known):
        if any(pa.types.is_floating(t) for t in known):
            return pa.float64()
        if any(pa.types.is_decimal(t) for t in known):
            scale = max(t.scale for t in known if pa.types.is_decimal(t))
            return pa.decimal128(38, scale)
        return max(known, key=lambda t: t.bit_width)
    if all(is_string(t) for t in known):
        return pa.string()
    if all(is_temporal(t) for t in known):
        return next((t for t in known if pa.types.is_timestamp(t)), known[0])
    raise CarbonFilterError(f"{what} mixes values of types {', '.join(sql_type_name(t) for t in known)}; "
                            "expected one type (use CAST)")


class _Checker:
    """Resolves names and types a value expression; every error names the part of the filter it is about."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema
        self.lookup = {f.name.lower(): f for f in schema}

    def fail(self, node: Scalar, msg: str) -> CarbonFilterError:
        cols = sorted(node.columns())
        where = f" (column {', '.join(repr(c) for c in cols)})" if cols else ""
        return CarbonFilterError(f"filter expression {node}{where}: {msg}")

    def check(self, node: Scalar) -> tuple[Scalar, pa.DataType]:
        if isinstance(node, Col):
            f = self.lookup.get(node.name.lower())
            if f is None:
                raise CarbonFilterError(
                    f"filter names column {node.name!r}, which is not in the table ({', '.join(self.schema.names)})"
                    + did_you_mean(node.name, self.schema.names))
            t = f.type
            if not (is_number(t) or is_string(t) or is_temporal(t) or pa.types.is_boolean(t)):
                raise CarbonFilterError(f"filter expression on column {f.name!r} ({t}): columns of this type can "
                                        "only be compared with IS NULL")
            return Col(f.name), t
        if isinstance(node, Lit):
            return node, literal_type(node.value)
        if isinstance(node, Cast):
            arg, t = self.check(node.arg)
            self.castable(node, t, node.to)
            return Cast(arg, node.to), node.to
        if isinstance(node, Case):
            whens = []
            for cond, value in node.whens:
                c, ct = self.check(cond)
                if not (pa.types.is_boolean(ct) or pa.types.is_null(ct)):
                    raise self.fail(cond, f"a CASE condition must be TRUE or FALSE, found {sql_type_name(ct)}")
                whens.append((c, self.check(value)))
            otherwise = self.check(node.otherwise)
            t = common_type([v[1] for _, v in whens] + [otherwise[1]], f"CASE {node}")
            return Case(tuple((c, v[0]) for c, v in whens), otherwise[0], t), t
        if isinstance(node, Call):
            return self.call(node)
        raise CarbonFilterError(f"unknown value expression node {type(node).__name__}")

    def castable(self, node: Cast, src: pa.DataType, to: pa.DataType) -> None:
        ok = (pa.types.is_null(src) or src == to or is_string(src)
              or (is_number(src) or pa.types.is_boolean(src)) and (is_number(to) or pa.types.is_boolean(to))
              or is_temporal(src) and is_temporal(to)
              or (is_int(src) or pa.types.is_decimal(src) or pa.types.is_boolean(src) or pa.types.is_date(src))
              and is_string(to))
        if not ok:
            raise self.fail(node, f"cannot cast {sql_type_name(src)} to {sql_type_name(to)} here; supported: "
                            "between numbers and BOOLEAN, between DATE and TIMESTAMP, STRING to any type, and "
                            "integers, decimals, BOOLEAN and DATE to STRING")

    def call(self, node: Call) -> tuple[Scalar, pa.DataType]:
        name = node.name
        checked = [self.check(a) for a in node.args]
        args = tuple(a for a, _ in checked)
        types = [t for _, t in checked]
        out = Call(name, args)

        def need(i: int, test, what: str) -> None:
            if not (test(types[i]) or pa.types.is_null(types[i])):
                raise self.fail(node.args[i], f"{name.upper() if name in _INFIX else name} expects {what}, found "
                                f"{sql_type_name(types[i])}")

        if name in ("and", "or", "not"):
            for i in range(len(args)):
                need(i, pa.types.is_boolean, "TRUE or FALSE")
            return out, pa.bool_()
        if name in ("is_null", "is_not_null"):
            return out, pa.bool_()
        if name in _COMPARISONS or name == "in":
            args = self.comparable(node, list(args), types)
            return Call(name, tuple(args)), pa.bool_()
        if name == "like":
            need(0, is_string, "a string")
            need(1, is_string, "a string pattern")
            return out, pa.bool_()
        if name in _ARITHMETIC or name == "neg":
            for i in range(len(args)):
                need(i, is_number, "numbers (for dates use date functions)")
            if name == "/":
                return out, pa.float64()
            return out, (types[0] if name == "neg" else common_type(types, str(node)))
        return self.function(node, out, types, need)

    def comparable(self, node: Call, args: list[Scalar], types: list[pa.DataType]) -> list[Scalar]:
        """Arguments of a comparison or IN in types that compare; a string literal next to a number, date or
        timestamp is cast to that type first, as Spark does."""
        known = [t for t in types if not pa.types.is_null(t)]
        target = next((t for t in known if not is_string(t)), None)
        for i, (a, t) in enumerate(zip(args, types, strict=True)):
            if target is not None and is_string(t) and isinstance(a, Lit):
                cast = Cast(a, target if not is_int(target) else pa.int64())
                self.castable(cast, t, cast.to)
                args[i], types[i] = cast, cast.to
        kinds = {("number" if is_number(t) else "string" if is_string(t) else "temporal" if is_temporal(t)
                  else "boolean" if pa.types.is_boolean(t) else str(t)) for t in types if not pa.types.is_null(t)}
        if len(kinds) > 1:
            shown = " and ".join(f"{a} ({sql_type_name(t)})" for a, t in zip(args, types, strict=True))
            raise self.fail(node, f"cannot compare {shown}; expected values of one kind (use CAST)")
        return args

    def function(self, node: Call, out: Call, types: list[pa.DataType], need) -> tuple[Scalar, pa.DataType]:
        name = ALIASES.get(node.name, node.name)
        out = Call(name, out.args)
        if name == "coalesce":  # a CASE, so that an argument is evaluated only where those before are NULL
            t = common_type(types, str(node))
            a = out.args
            return Case(tuple((Call("is_not_null", (x,)), x) for x in a[:-1]), a[-1], t), t
        if name == "nullif":
            cond = Call("=", tuple(self.comparable(node, list(out.args), list(types))))
            return Case(((cond, Lit(None)),), out.args[0], types[0]), types[0]
        if name == "abs":
            need(0, is_number, "a number")
            return out, types[0]
        if name in ("lower", "upper", "trim", "ltrim", "rtrim"):
            need(0, is_string, "a string")
            return out, pa.string()
        if name == "length":
            need(0, is_string, "a string")
            return out, pa.int32()
        if name == "concat":
            for i in range(len(types)):
                need(i, is_string, "strings (use CAST(x AS STRING))")
            return out, pa.string()
        if name in ("startswith", "endswith", "contains"):
            need(0, is_string, "a string")
            if not (isinstance(out.args[1], Lit) and isinstance(out.args[1].value, str | None)):
                raise self.fail(node, f"{name} expects a string literal as its second argument")
            return out, pa.bool_()
        if name == "substring":
            need(0, is_string, "a string")
            for a in out.args[1:]:
                if not (isinstance(a, Lit) and isinstance(a.value, int | None) and not isinstance(a.value, bool)):
                    raise self.fail(node, "substring expects integer literals as its position and length")
            return out, pa.string()
        if name in ("year", "quarter", "month", "day", "dayofweek"):
            need(0, is_temporal, "a DATE or TIMESTAMP")
            return out, pa.int32()
        if name in ("hour", "minute", "second"):
            need(0, pa.types.is_timestamp, "a TIMESTAMP")
            return out, pa.int32()
        if name == "to_date":
            need(0, lambda t: is_temporal(t) or is_string(t), "a DATE, TIMESTAMP or 'yyyy-mm-dd' string")
            return out, pa.date32()
        if name == "date_trunc":
            unit = out.args[0]
            if not (isinstance(unit, Lit) and isinstance(unit.value, str)):
                raise self.fail(node, "date_trunc expects a unit literal first, such as 'MONTH'")
            need(1, is_temporal, "a DATE or TIMESTAMP")
            t = types[1] if pa.types.is_timestamp(types[1]) else pa.timestamp("us", tz="UTC")
            return out, t
        raise self.fail(node, f"unknown function {node.name}")


def check(node: Scalar, schema: pa.Schema) -> tuple[Scalar, pa.DataType]:
    """``node`` with column names in the schema's spelling and string literals cast where compared, and
    its type.

    Raises:
        CarbonFilterError: a column is not in ``schema``, or a function or operator is given values of a
            type it does not take; the message names the expression and its column.
    """
    return _Checker(schema).check(node)


def check_function(name: str, count: int) -> str:
    """``name`` lower-cased when it is a known function taking ``count`` arguments.

    Raises:
        CarbonFilterError: an unknown function (with the nearest known name) or a wrong number of arguments.
    """
    low = name.lower()
    if low not in FUNCTIONS:
        raise CarbonFilterError(f"unknown function {name!r} in filter{did_you_mean(low, list(FUNCTIONS))}; "
                                f"known: {', '.join(sorted(FUNCTIONS))}, CAST(x AS type) and CASE")
    least, most = FUNCTIONS[low]
    if count < least or most is not None and count > most:
        want = f"{least}" if least == most else f"{least} or more" if most is None else f"{least} to {most}"
        raise CarbonFilterError(f"function {low} takes {want} arguments, found {count}")
    return low
