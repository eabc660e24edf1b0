"""``pyarrow.compute.Expression`` filters as our expression tree.

pyarrow offers no public walk over an expression, but it pickles one as an Arrow IPC file whose schema
metadata lists the tree in prefix order (``call`` name ... ``end`` name, ``field_ref`` name, ``literal`` /
``options`` column index) and whose columns hold the literals and the function options. The metadata keys
repeat, and ``Schema.metadata`` is a dict that would merge them, so the pairs are read in order from the
schema's Arrow C Data Interface export.

Translated: ``pc.field(...)`` compared (``== != < <= > >=``) with a literal, ``isin``, ``is_null``,
``is_valid``, ``&``, ``|``, ``~``. pyarrow's ``is_in`` and ``is_null`` never return null, so they become
two-valued predicates here too (``~pc.field("a").isin([1])`` keeps the rows where ``a`` is null, as pyarrow
does). Any other expression of top-level fields (arithmetic, string functions, ...) is kept whole as a
:class:`~carbon_ds.expressions.tree.Predicate` that pyarrow itself evaluates on the rows read (no pruning by
it); a nested field reference raises :class:`~carbon_ds.errors.CarbonFilterError`.
"""

from __future__ import annotations

import ctypes
import math
import struct
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from carbon_ds.errors import CarbonFilterError
from carbon_ds.expressions.scalar_eval import ArrowExpr
from carbon_ds.expressions.tree import AlwaysFalse, Compare, Expr, In, IsNull, Not, NotNull, Predicate, and_, or_

_COMPARE = {"equal": "=", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
            "greater_equal": ">="}
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_MATCH, _SKIP = 0, 1  # SetLookupOptions.null_matching_behavior


class _ArrowSchema(ctypes.Structure):
    _fields_ = [("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_void_p),
                ("flags", ctypes.c_int64), ("n_children", ctypes.c_int64), ("children", ctypes.c_void_p),
                ("dictionary", ctypes.c_void_p), ("release", ctypes.c_void_p), ("private_data", ctypes.c_void_p)]


_RELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(_ArrowSchema))


def _metadata_pairs(schema: pa.Schema) -> list[tuple[str, str]]:
    """The schema's metadata as ordered (key, value) pairs, duplicates kept."""
    c = _ArrowSchema()
    schema._export_to_c(ctypes.addressof(c))
    try:
        if not c.metadata:
            return []
        (n,) = struct.unpack("=i", ctypes.string_at(c.metadata, 4))
        pos, out = c.metadata + 4, []
        for _ in range(n):
            pair = []
            for _k in range(2):
                (size,) = struct.unpack("=i", ctypes.string_at(pos, 4))
                pair.append(ctypes.string_at(pos + 4, size).decode("utf-8"))
                pos += 4 + size
            out.append((pair[0], pair[1]))
        return out
    finally:
        if c.release:
            _RELEASE(c.release)(ctypes.pointer(c))


class _Node:
    """One node of the serialised tree: a call with arguments and options, a field, or a literal."""

    def __init__(self, kind: str, value: Any, args: list[_Node] | None = None, options: Any = None):
        self.kind, self.value, self.args, self.options = kind, value, args or [], options

    def __str__(self) -> str:
        if self.kind == "field":
            return f"field {self.value!r}"
        if self.kind == "literal":
            return f"literal {self.value!r}"
        return f"{self.value}({', '.join(str(a) for a in self.args)})"


def _parse(expr: pc.Expression) -> _Node:
    try:
        buf = expr.__reduce__()[1][0]
        table = ipc.open_file(buf).read_all()
        pairs = _metadata_pairs(table.schema)
    except Exception as e:  # a pyarrow that serialises differently: say so instead of guessing
        raise CarbonFilterError(f"cannot read the pyarrow expression {expr}: {e}") from None

    def column(index: str) -> Any:
        return table.column(int(index))[0]

    pos = 0

    def node() -> _Node:
        nonlocal pos
        key, value = pairs[pos]
        pos += 1
        if key == "field_ref":
            return _Node("field", value)
        if key == "literal":
            return _Node("literal", column(value))
        if key == "nested_field_ref":
            raise CarbonFilterError(f"the nested field reference in the filter {expr} cannot be translated; "
                                    "use pc.field('name') of a top-level column")
        if key != "call":
            raise CarbonFilterError(f"unexpected {key!r} in the pyarrow expression {expr}")
        call = _Node("call", value)
        while pairs[pos][0] != "end":
            if pairs[pos][0] == "options":
                call.options = column(pairs[pos][1])
                pos += 1
            else:
                call.args.append(node())
        pos += 1
        return call

    if not pairs:
        raise CarbonFilterError(f"the pyarrow expression {expr} refers to a nested field or holds nothing to read; "
                                "use pc.field('name') of a top-level column")
    return node()


def from_pyarrow(expr: pc.Expression) -> Expr:
    """Our predicate for a pyarrow filter expression (see the module docstring for what translates)."""
    tree = _parse(expr)
    try:
        return _translate(tree, expr)
    except CarbonFilterError:
        return Predicate(ArrowExpr(expr, frozenset(_fields(tree))))


def _fields(n: _Node) -> set[str]:
    out, todo = set(), [n]
    while todo:
        node = todo.pop()
        if node.kind == "field":
            out.add(node.value)
        todo.extend(node.args)
    return out


def _field(n: _Node, whole: pc.Expression) -> str:
    if n.kind != "field":
        raise CarbonFilterError(f"{n} in the filter {whole} is not a column (pc.field('name')); "
                                "only columns can be tested")
    return n.value


def _literal(n: _Node, whole: pc.Expression) -> Any:
    if n.kind != "literal":
        raise CarbonFilterError(f"{n} in the filter {whole} is not a value; a column can only be compared "
                                "with a value")
    value = n.value.as_py()
    if value is None:
        raise CarbonFilterError(f"the filter {whole} compares with null, which is never true; "
                                "use pc.field(...).is_null()")
    return value


def _translate(n: _Node, whole: pc.Expression) -> Expr:
    if n.kind == "field":
        raise CarbonFilterError(f"{n} alone in the filter {whole} is not a condition; compare it with a value")
    if n.kind == "literal":
        raise CarbonFilterError(f"the constant {n.value} in the filter {whole} cannot be translated; "
                                "write a condition on a column")
    name, args = n.value, n.args
    if name in ("and_kleene", "or_kleene"):
        parts = [_translate(a, whole) for a in args]
        return and_(*parts) if name == "and_kleene" else or_(*parts)
    if name == "invert":
        return Not(_translate(args[0], whole))
    if name in _COMPARE:
        a, b = args
        op = _COMPARE[name]
        if a.kind == "literal" and b.kind == "field":
            a, b, op = b, a, _FLIP[op]
        return Compare(_field(a, whole), op, _literal(b, whole))
    if name in ("is_null", "is_valid"):
        col = _field(args[0], whole)
        if name == "is_null" and n.options is not None and n.options["nan_is_null"].as_py():
            raise CarbonFilterError(f"is_null(nan_is_null=True) in the filter {whole} cannot be translated; "
                                    "test NaN separately")
        return IsNull(col) if name == "is_null" else NotNull(col)
    if name == "is_in":
        col = _field(args[0], whole)
        values = n.options["value_set"].as_py() if n.options is not None else []
        behavior = n.options["null_matching_behavior"].as_py() if n.options is not None else _MATCH
        if behavior not in (_MATCH, _SKIP):
            raise CarbonFilterError(f"is_in with null_matching_behavior={behavior} in the filter {whole} cannot "
                                    "be translated; use the default (MATCH) or SKIP")
        present = tuple(v for v in values if v is not None)
        found = and_(NotNull(col), _in(col, present)) if present else AlwaysFalse()
        if behavior == _MATCH and len(present) != len(values):
            return or_(IsNull(col), found)
        return found
    if name == "if_else":
        return _sql_in(args, whole)
    raise CarbonFilterError(
        f"{name}(...) in the filter {whole} cannot be translated; a pyarrow filter may use pc.field(...) "
        "compared with a value (== != < <= > >=), isin, is_null, is_valid, &, | and ~"
    )


def _in(col: str, values: tuple) -> Expr:
    """``col`` in ``values`` as pyarrow's is_in means it: a NaN value matches NaN, where our IN (as ``=``)
    holds on no NaN. For a NaN among the values: ``NOT (col <= inf)``, which under IEEE comparisons holds on
    NaN alone (and is null on null)."""
    numbers = tuple(v for v in values if not (isinstance(v, float) and math.isnan(v)))
    if len(numbers) == len(values):
        return In(col, values)
    nan = Not(Compare(col, "<=", math.inf))
    return or_(In(col, numbers), nan) if numbers else nan


def _sql_in(args: list[_Node], whole: pc.Expression) -> Expr:
    """DuckDB 2 spells SQL's ``k IN (...)`` as ``if_else(is_valid(k), is_in(k, values), null)``: null for a
    null ``k``, as our ``In`` is. Only that shape translates (with no null among the values, where SQL's IN
    would be null rather than false)."""
    cond, then, other = args
    shape = (cond.kind == "call" and cond.value == "is_valid" and then.kind == "call" and then.value == "is_in"
             and other.kind == "literal" and other.value.as_py() is None and then.options is not None)
    if shape:
        col = _field(cond.args[0], whole)
        values = then.options["value_set"].as_py()
        if _field(then.args[0], whole) == col and values and None not in values:
            return _in(col, tuple(values))
    raise CarbonFilterError(f"if_else(...) in the filter {whole} cannot be translated; only SQL's IN "
                            "(if_else(is_valid(k), is_in(k, values), null)) does")
