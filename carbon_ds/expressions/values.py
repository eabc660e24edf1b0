"""SET-clause value expressions (UPDATE ... SET c = <expr>) evaluated with Arrow on the old rows.

Supported: literals (numbers, 'strings', NULL, TRUE, FALSE), column names, + - * /, unary minus and
parentheses. Anything else is a CarbonOptionError naming the position.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonOptionError
from carbon_ds.expressions.lexer import SET_VALUE, LexError, tokens

MAX_DEPTH = 200  # parentheses and unary minus nest at most this deep


@dataclass(frozen=True)
class SqlExpr:
    """A SET right-hand side in SQL: literals, column names, + - * /, parentheses.

    Example:
        >>> t = carbon_ds.CarbonTable.open(path)
        >>> changed = t.update({"speed": carbon_ds.SqlExpr("speed / 2")}, "speed > 200")
        >>> bool(pc.all(pc.less_equal(t.to_arrow()["speed"], 200)).as_py())
        True
    """

    text: str


_KINDS = {"number": "num", "string": "str", "word": "name", "ident": "name", "op": "op", "punct": "op"}


def _tokens(text: str) -> list[tuple[str, str]]:
    try:
        return [(_KINDS[t.kind], t.text) for t in tokens(text, SET_VALUE)]
    except LexError as e:
        raise CarbonOptionError(f"SET expression {text!r}: {e}; supported: literals, column names, + - * / and "
                                "parentheses") from None


def evaluate(text: str, data: pa.Table):
    """Value of a SET expression on every row of ``data`` (an Arrow array or a scalar)."""
    toks = _tokens(text)
    pos = 0
    by_lower = {n.lower(): n for n in data.schema.names}

    def fail(what):
        return CarbonOptionError(f"SET expression {text!r}: expected {what} at token {pos + 1}; supported: "
                                 "literals, column names, + - * / and parentheses")

    depth = 0

    def atom():
        nonlocal pos, depth
        if pos >= len(toks):
            raise fail("a value")
        kind, v = toks[pos]
        pos += 1
        if kind == "num":
            return pa.scalar(float(v) if "." in v else int(v))
        if kind == "str":
            return pa.scalar(v)
        if kind == "op" and v in "(-":
            depth += 1
            if depth > MAX_DEPTH:
                raise CarbonOptionError(f"SET expression {text[:80]!r}...: nests deeper than {MAX_DEPTH} levels")
        if kind == "op" and v == "(":
            val = add()
            depth -= 1
            if pos >= len(toks) or toks[pos] != ("op", ")"):
                raise fail("')'")
            pos += 1
            return val
        if kind == "op" and v == "-":
            val = pc.negate(atom())
            depth -= 1
            return val
        if kind == "name":
            low = v.lower()
            if low == "null":
                return pa.scalar(None)
            if low in ("true", "false"):
                return pa.scalar(low == "true")
            if low not in by_lower:
                raise CarbonOptionError(f"SET expression {text!r}: no column {v!r}; columns: {', '.join(data.schema.names)}")
            return data.column(by_lower[low])
        raise fail("a value")

    def mul():
        nonlocal pos
        val = atom()
        while pos < len(toks) and toks[pos] in (("op", "*"), ("op", "/")):
            op = toks[pos][1]
            pos += 1
            val = pc.multiply(val, atom()) if op == "*" else pc.divide(val, atom())
        return val

    def add():
        nonlocal pos
        val = mul()
        while pos < len(toks) and toks[pos] in (("op", "+"), ("op", "-")):
            op = toks[pos][1]
            pos += 1
            val = pc.add(val, mul()) if op == "+" else pc.subtract(val, mul())
        return val

    val = add()
    if pos != len(toks):
        raise fail("the end")
    return val


def apply_set(old: pa.Table, sets: dict[str, Any], schema: pa.Schema) -> pa.Table:
    """``old`` with the assigned columns replaced (values cast to the column types)."""
    cols = []
    for name in schema.names:
        if name not in sets:
            cols.append(old.column(name))
            continue
        v = sets[name]
        t = schema.field(name).type
        val = evaluate(v.text, old) if isinstance(v, SqlExpr) else pa.scalar(v)
        try:
            if isinstance(val, pa.Scalar):
                # one value converted first, so that a value of the wrong type is refused on no rows too
                one = pa.array([val.as_py()], type=t) if val.is_valid else pa.nulls(1, t)
                arr = pa.repeat(one[0], old.num_rows)
            else:
                arr = val.cast(t)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError) as e:
            shown = v.text if isinstance(v, SqlExpr) else repr(v)
            raise CarbonOptionError(f"SET {name} = {shown}: cannot make a {t} value: {e}") from None
        cols.append(arr)
    return pa.Table.from_arrays(cols, schema=schema)
