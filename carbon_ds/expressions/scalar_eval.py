"""Evaluation of checked value expressions (``carbon_ds.expressions.scalar``) on a table, with pyarrow's
kernels over whole columns (no per-row Python).

Spark SQL with ANSI mode (Spark 4's default) is the reference: integer overflow, division by zero and a
cast of a value that does not fit are errors; ``/`` divides as double; ``%`` takes the dividend's sign;
NaN equals NaN and is larger than any other number. As in Spark, a CASE branch, a COALESCE argument and the
right side of AND / OR are evaluated only on the rows that reach them (the rows are selected first, then the
kernels run on those), so ``CASE WHEN b = 0 THEN NULL ELSE a / b END`` never divides by zero.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.acero as acero
import pyarrow.compute as pc

from carbon_ds.errors import CarbonFilterError
from carbon_ds.expressions.scalar import (
    Call,
    Case,
    Cast,
    Col,
    Lit,
    Scalar,
    common_type,
    is_int,
    is_number,
    is_string,
    literal_type,
    sql_type_name,
)

Value = pa.Array | pa.Scalar


class ArrowExpr(Scalar):
    """A ``pyarrow.compute.Expression`` kept as it is (the parts of a pyarrow filter with no equivalent
    here); pyarrow evaluates it."""

    def __init__(self, expr: pc.Expression, columns: frozenset[str]):
        self.expr, self.names = expr, columns

    def columns(self) -> set[str]:
        return set(self.names)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ArrowExpr) and self.expr.equals(other.expr)

    def __hash__(self) -> int:
        return hash(str(self.expr))

    def __str__(self) -> str:
        return str(self.expr)

    def __repr__(self) -> str:
        return f"ArrowExpr({self.expr})"


def evaluate(node: Scalar, table: pa.Table) -> pa.Array:
    """The value of the checked ``node`` on every row of ``table`` (an array of ``table.num_rows``).

    Raises:
        CarbonFilterError: integer overflow, division by zero or a value a CAST cannot convert, on a row
            the expression reaches (the message names the expression).
    """
    return _full(_Eval(table).eval(node), table.num_rows)


def _full(v: Value | pa.ChunkedArray, n: int) -> pa.Array:
    if isinstance(v, pa.Scalar):
        return pa.repeat(v, n)
    if isinstance(v, pa.ChunkedArray):
        return v.combine_chunks()
    return v


def _type(v: Value) -> pa.DataType:
    return v.type


def _nan(v: Value) -> Value:
    return pc.is_nan(v)


class _Eval:
    def __init__(self, table: pa.Table):
        self.table = table
        self.n = table.num_rows

    # ---------------------------------------------------------------------------- rows reached
    def on(self, node: Scalar, mask: pa.Array, t: pa.DataType | None = None) -> pa.Array:
        """``node`` on the rows where ``mask`` (no nulls) is true, null elsewhere."""
        count = pc.sum(mask).as_py() or 0
        if count == self.n:
            out = _full(self.eval(node), self.n)
            return out if t is None else _cast_plain(out, t)
        if count == 0:
            return pa.nulls(self.n, t or pa.null())
        sub = _Eval(self.table.filter(mask)).eval(node)
        sub = _full(sub, count)
        t = t or sub.type
        sub = _cast_plain(sub, t)
        return pc.replace_with_mask(pa.nulls(self.n, t), mask, sub)

    # ---------------------------------------------------------------------------- nodes
    def eval(self, node: Scalar) -> Value:
        try:
            return self._eval(node)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise CarbonFilterError(f"filter expression {node}: {_reason(e)}") from None

    def _eval(self, node: Scalar) -> Value:
        if isinstance(node, Col):
            return _full(self.table.column(node.name), self.n)
        if isinstance(node, Lit):
            return pa.scalar(node.value, literal_type(node.value))
        if isinstance(node, Cast):
            return cast(self.eval(node.arg), node.to, node)
        if isinstance(node, Case):
            return self.case(node)
        if isinstance(node, ArrowExpr):
            return _arrow(node, self.table)
        if isinstance(node, Call):
            return self.call(node)
        raise CarbonFilterError(f"unknown value expression node {type(node).__name__}")

    def case(self, node: Case) -> Value:
        t = node.type if node.type is not None else pa.null()
        left = pa.repeat(pa.scalar(True), self.n)  # rows no condition has taken yet
        result = pa.nulls(self.n, t)
        for cond, value in node.whens:
            hit = pc.and_(left, pc.fill_null(self.on(cond, left, pa.bool_()), False))
            result = _put(result, hit, self.on(value, hit, t))
            left = pc.and_(left, pc.invert(hit))
        return _put(result, left, self.on(node.otherwise, left, t))

    def call(self, node: Call) -> Value:
        name, args = node.name, node.args
        if name in ("and", "or"):
            left = _full(self.eval(args[0]), self.n)
            # Spark evaluates the right side only where the left does not decide
            reach = pc.fill_null(left, True) if name == "and" else pc.invert(pc.fill_null(left, False))
            right = self.on(args[1], reach, pa.bool_())
            return pc.and_kleene(left, right) if name == "and" else pc.or_kleene(left, right)
        vals = [self.eval(a) for a in args]
        if name == "not":
            return pc.invert(vals[0])
        if name == "is_null":
            return pc.is_null(vals[0], nan_is_null=False)
        if name == "is_not_null":
            return pc.is_valid(vals[0])
        if name in _COMPARE:
            return compare(name, *align(vals[0], vals[1]))
        if name == "in":
            return self.inside(vals)
        if name == "like":
            return _like(vals[0], vals[1])
        if name in ("+", "-", "*", "/", "%", "neg"):
            return arithmetic(name, vals, node)
        return function(name, vals, args)

    def inside(self, vals: list[Value]) -> Value:
        x, values = vals[0], vals[1:]
        t = common_type([_type(x)] + [_type(v) for v in values], "IN")
        x = _cast_plain(x, t)
        present = [v for v in values if v.is_valid]
        found = pc.is_in(x, value_set=pa.array([_cast_plain(v, t).as_py() for v in present], t))
        # SQL: NULL for a null x, and NULL rather than FALSE when the list holds a NULL
        miss = pa.scalar(None, pa.bool_()) if len(present) != len(values) else pa.scalar(False)
        found = pc.if_else(found, True, miss)
        return pc.if_else(pc.is_valid(x), found, pa.scalar(None, pa.bool_()))


# ------------------------------------------------------------------------------------------ helpers
def _reason(e: Exception) -> str:
    text = str(e).split("\n")[0]
    if "overflow" in text.lower():
        return f"arithmetic overflow ({text}); Spark's ANSI mode refuses it too: use CAST to a wider type"
    return text


def _put(result: pa.Array, mask: pa.Array, values: pa.Array) -> pa.Array:
    """``result`` with ``values`` (full length) taken where ``mask`` is true."""
    if pc.sum(mask).as_py() in (0, None):
        return result
    return pc.if_else(mask, values, result)


def _arrow(node: ArrowExpr, table: pa.Table) -> pa.Array:
    plan = acero.Declaration.from_sequence([
        acero.Declaration("table_source", acero.TableSourceNodeOptions(table)),
        acero.Declaration("project", acero.ProjectNodeOptions([node.expr], ["m"])),
    ])
    return _full(plan.to_table(use_threads=False).column("m"), table.num_rows)


def _cast_plain(v: Value, t: pa.DataType) -> Value:
    """A value already checked to fit ``t`` (branches of one CASE, IN values) in that type."""
    if v.type == t:
        return v
    if pa.types.is_null(v.type):
        return pa.scalar(None, t) if isinstance(v, pa.Scalar) else pa.nulls(len(v), t)
    if pa.types.is_timestamp(v.type) and pa.types.is_timestamp(t) or pa.types.is_date(v.type):
        return pc.cast(v, t, safe=False)
    return pc.cast(v, t)


def align(a: Value, b: Value) -> tuple[Value, Value]:
    """Two values of comparable kinds in types pyarrow compares."""
    ta, tb = a.type, b.type
    if pa.types.is_null(ta) or pa.types.is_null(tb):
        t = tb if pa.types.is_null(ta) else ta
        return _cast_plain(a, t), _cast_plain(b, t)
    if pa.types.is_date(ta) and pa.types.is_timestamp(tb):
        return _cast_plain(a, tb), b
    if pa.types.is_timestamp(ta) and pa.types.is_date(tb):
        return a, _cast_plain(b, ta)
    if pa.types.is_timestamp(ta) and pa.types.is_timestamp(tb) and ta != tb:
        return a, pc.cast(b, ta)
    if is_number(ta) and is_number(tb) and (pa.types.is_floating(ta) or pa.types.is_floating(tb)):
        return _cast_plain(a, pa.float64()), _cast_plain(b, pa.float64())
    if pa.types.is_decimal(ta) != pa.types.is_decimal(tb) and is_number(ta) and is_number(tb):
        t = common_type([ta, tb], "comparison")
        return _cast_plain(a, t), _cast_plain(b, t)
    return a, b


_COMPARE = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
            ">=": pc.greater_equal}


def compare(op: str, a: Value, b: Value) -> Value:
    if not pa.types.is_floating(a.type):
        return _COMPARE[op](a, b)
    # Spark orders NaN above every number and says NaN = NaN
    na, nb = _nan(a), _nan(b)
    eq = pc.or_kleene(pc.equal(a, b), pc.and_kleene(na, nb))
    if op in ("=", "!="):
        return eq if op == "=" else pc.invert(eq)
    lt = pc.or_kleene(pc.less(a, b), pc.and_kleene(pc.invert(na), nb))
    gt = pc.or_kleene(pc.greater(a, b), pc.and_kleene(na, pc.invert(nb)))
    return {"<": lt, ">": gt, "<=": pc.or_kleene(lt, eq), ">=": pc.or_kleene(gt, eq)}[op]


def _like(x: Value, pattern: Value) -> Value:
    if not pattern.is_valid:
        return pa.scalar(None, pa.bool_()) if isinstance(x, pa.Scalar) else pa.nulls(len(x), pa.bool_())
    return pc.match_like(x, pattern=pattern.as_py())


def _zero_divisor(b: Value, node: Scalar) -> None:
    zero = pc.equal(b, pa.scalar(0, b.type) if not pa.types.is_decimal(b.type) else 0)
    if pc.any(zero).as_py() if isinstance(zero, pa.Array) else zero.as_py():
        raise CarbonFilterError(f"filter expression {node}: division by zero (Spark's ANSI mode refuses it too); "
                                "guard it with CASE WHEN ... = 0 THEN NULL ELSE ... END or NULLIF(divisor, 0)")


def arithmetic(name: str, vals: list[Value], node: Scalar) -> Value:
    if name == "neg":
        return pc.negate_checked(vals[0])
    a, b = vals
    if pa.types.is_null(a.type) or pa.types.is_null(b.type):
        t = pa.float64() if name == "/" else common_type([a.type, b.type], str(node))
        t = pa.int32() if pa.types.is_null(t) else t
        return pa.scalar(None, t) if isinstance(a, pa.Scalar) and isinstance(b, pa.Scalar) else pa.nulls(
            len(a if isinstance(a, pa.Array) else b), t)
    if name == "/":
        a, b = _cast_plain(a, pa.float64()), _cast_plain(b, pa.float64())
        _zero_divisor(b, node)
        return pc.divide(a, b)
    if pa.types.is_floating(a.type) or pa.types.is_floating(b.type):
        a, b = _cast_plain(a, pa.float64()), _cast_plain(b, pa.float64())
    if name == "%":
        _zero_divisor(b, node)
        return _remainder(a, b)
    kernel = {"+": pc.add_checked, "-": pc.subtract_checked, "*": pc.multiply_checked}[name]
    try:
        return kernel(a, b)
    except pa.ArrowInvalid as e:
        if "precision out of range" not in str(e):
            raise
        # Spark caps a decimal result at 38 digits; past that pyarrow refuses, so compute in double
        return kernel(_cast_plain(a, pa.float64()), _cast_plain(b, pa.float64()))


def _remainder(a: Value, b: Value) -> Value:
    """Java's ``%``: the sign of the dividend (pyarrow has no remainder kernel)."""
    if is_int(a.type) and is_int(b.type):
        # truncating division, then a - q * b in wrapping arithmetic: exact for every pair, MIN % -1 included
        return pc.subtract(a, pc.multiply(pc.divide(a, b), b))
    t = common_type([a.type, b.type], "%")
    n = len(a) if isinstance(a, pa.Array) else len(b) if isinstance(b, pa.Array) else 1
    fa = _full(_cast_plain(a, pa.float64()), n)
    fb = _full(_cast_plain(b, pa.float64()), n)
    valid = pc.and_(pc.is_valid(fa), pc.is_valid(fb))
    out = np.fmod(fa.fill_null(1.0).to_numpy(zero_copy_only=False), fb.fill_null(1.0).to_numpy(zero_copy_only=False))
    arr = pc.if_else(valid, pa.array(out), pa.scalar(None, pa.float64()))
    if pa.types.is_decimal(t):
        arr = pc.cast(arr, t, safe=False)
    return arr[0] if isinstance(a, pa.Scalar) and isinstance(b, pa.Scalar) else arr


_TRUNC_UNITS = {"year": "year", "yyyy": "year", "yy": "year", "quarter": "quarter", "month": "month",
                "mm": "month", "mon": "month", "week": "week", "day": "day", "dd": "day", "hour": "hour",
                "minute": "minute", "second": "second", "millisecond": "millisecond",
                "microsecond": "microsecond"}


def function(name: str, vals: list[Value], args: tuple[Scalar, ...]) -> Value:
    x = vals[0]
    if pa.types.is_null(x.type) and name not in ("concat", "date_trunc"):
        return pa.scalar(None)
    if name == "abs":
        return pc.abs_checked(x)
    if name == "lower":
        return pc.utf8_lower(x)
    if name == "upper":
        return pc.utf8_upper(x)
    if name == "length":
        return pc.cast(pc.utf8_length(x), pa.int32())
    if name in ("trim", "ltrim", "rtrim"):
        kernel = {"trim": pc.utf8_trim, "ltrim": pc.utf8_ltrim, "rtrim": pc.utf8_rtrim}[name]
        return kernel(x, characters=" ")  # Spark trims spaces only
    if name == "concat":
        if any(pa.types.is_null(v.type) for v in vals):
            return pa.scalar(None, pa.string())
        return pc.binary_join_element_wise(*vals, "", null_handling="emit_null")
    if name in ("startswith", "endswith", "contains"):
        pattern = vals[1].as_py()
        if pattern is None:
            return pa.scalar(None, pa.bool_())
        kernel = {"startswith": pc.starts_with, "endswith": pc.ends_with, "contains": pc.match_substring}[name]
        return kernel(x, pattern=pattern)
    if name == "substring":
        return _substring(x, *(v.as_py() for v in vals[1:]))
    if name in ("year", "quarter", "month", "day", "hour", "minute", "second"):
        kernel = {"year": pc.year, "quarter": pc.quarter, "month": pc.month, "day": pc.day, "hour": pc.hour,
                  "minute": pc.minute, "second": pc.second}[name]
        return pc.cast(kernel(x), pa.int32())
    if name == "dayofweek":  # Sunday is 1, as Spark counts
        return pc.cast(pc.day_of_week(x, count_from_zero=False, week_start=7), pa.int32())
    if name == "to_date":
        return cast(x, pa.date32(), args[0])
    if name == "date_trunc":
        unit = _TRUNC_UNITS.get(str(vals[0].as_py()).lower())
        y = vals[1]
        t = y.type if pa.types.is_timestamp(y.type) else pa.timestamp("us", tz="UTC")
        if unit is None or pa.types.is_null(y.type):  # Spark: NULL for a unit it does not know
            return pa.scalar(None, t) if isinstance(y, pa.Scalar) else pa.nulls(len(y), t)
        y = _cast_plain(y, t)
        return pc.floor_temporal(y, unit=unit, week_starts_monday=True)
    raise CarbonFilterError(f"unknown function {name}")


def _substring(x: Value, pos: int | None, length: int | None = 2**31 - 1) -> Value:
    """Spark's ``substring(x, pos, len)``: 1-based, 0 is 1, a negative ``pos`` counts from the end."""
    if pos is None or length is None:
        return pa.scalar(None, pa.string()) if isinstance(x, pa.Scalar) else pa.nulls(len(x), pa.string())
    if length <= 0:
        return pc.utf8_slice_codeunits(x, start=0, stop=0)
    if pos > 0:
        return pc.utf8_slice_codeunits(x, start=pos - 1, stop=pos - 1 + length)
    if pos == 0:
        return pc.utf8_slice_codeunits(x, start=0, stop=length)
    # from the end: Spark's end is (len + pos) + length, which is past the end once pos + length >= 0
    stop = pos + length
    if stop >= 0:
        return pc.utf8_slice_codeunits(x, start=pos)
    return pc.utf8_slice_codeunits(x, start=pos, stop=stop)


# ------------------------------------------------------------------------------------------ CAST
_TRUE = pa.array(["t", "true", "y", "yes", "1"])
_FALSE = pa.array(["f", "false", "n", "no", "0"])
_INT_RANGE = {8: (-(1 << 7), (1 << 7) - 1), 16: (-(1 << 15), (1 << 15) - 1), 32: (-(1 << 31), (1 << 31) - 1),
              64: (-(1 << 63), (1 << 63) - 1)}


def cast(v: Value, to: pa.DataType, node: Scalar) -> Value:
    """Spark's ANSI CAST for the pairs ``scalar.check`` allows: a value that does not convert is an error."""
    src = v.type
    if src == to:
        return v
    if pa.types.is_null(src):
        return _cast_plain(v, to)

    def bad(detail: str = "") -> CarbonFilterError:
        return CarbonFilterError(f"filter expression {node}: a value cannot be cast to {sql_type_name(to)}"
                                 f"{detail} (Spark's ANSI mode refuses it too)")

    try:
        if is_string(src):
            if is_string(to):
                return v
            s = pc.utf8_trim_whitespace(v)
            if pa.types.is_boolean(to):
                low = pc.utf8_lower(s)
                t, f = pc.is_in(low, value_set=_TRUE), pc.is_in(low, value_set=_FALSE)
                if pc.any(pc.and_(pc.is_valid(low), pc.invert(pc.or_(t, f)))).as_py():
                    raise bad(": expected one of t, true, y, yes, 1, f, false, n, no, 0")
                return pc.if_else(pc.is_valid(low), t, pa.scalar(None, pa.bool_()))
            if pa.types.is_timestamp(to) and to.tz is not None:
                return pc.cast(pc.cast(s, pa.timestamp(to.unit)), to)
            return pc.cast(s, to)
        if pa.types.is_boolean(to):
            return pc.not_equal(v, pa.scalar(0, src) if not pa.types.is_decimal(src) else 0)
        if is_int(to):
            if pa.types.is_boolean(src):
                return pc.cast(v, to)
            if pa.types.is_floating(src):
                lo, hi = _INT_RANGE[to.bit_width]
                out_of_range = pc.or_(pc.is_nan(v), pc.or_(pc.less(v, float(lo)), pc.greater_equal(v, float(hi) + 1)))
                if (pc.any(out_of_range).as_py() if isinstance(out_of_range, pa.Array) else out_of_range.as_py()):
                    raise bad(f": out of the range of {sql_type_name(to)}")
                return pc.cast(pc.trunc(v), to, safe=False)
            if pa.types.is_decimal(src):
                return pc.cast(pc.cast(v, pa.decimal128(38, 0), safe=False), to)
            return pc.cast(v, to)
        if pa.types.is_floating(to):
            return pc.cast(v, to, safe=False)
        if pa.types.is_decimal(to):
            if pa.types.is_decimal(src):
                return pc.cast(pc.round(v, ndigits=to.scale, round_mode="half_up"), to)
            if pa.types.is_floating(src):
                if pc.any(pc.is_nan(v)).as_py() if isinstance(v, pa.Array) else v.as_py() != v.as_py():
                    raise bad(": NaN")
                return pc.cast(pc.round(v, ndigits=to.scale, round_mode="half_up"), to, safe=False)
            return pc.cast(v, to)
        if is_string(to):
            return pc.cast(v, to)
        if pa.types.is_timestamp(to) and pa.types.is_date(src):
            return pc.cast(pc.cast(v, pa.timestamp(to.unit)), to)
        return pc.cast(v, to, safe=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise bad(f": {str(e).splitlines()[0]}") from None
