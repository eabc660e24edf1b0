"""A small SQL predicate parser: the `filter` read option and the Python API's filter strings.

Grammar (case-insensitive keywords):
    expr      := or
    or        := and (OR and)*
    and       := not (AND not)*
    not       := NOT not | predicate
    predicate := '(' expr ')' | TRUE | FALSE
               | operand (cmp operand | [NOT] IN '(' literal, ... ')' | IS [NOT] NULL
                          | [NOT] BETWEEN literal AND literal | [NOT] LIKE 'text')
    operand   := column | literal        (one side of a comparison must be a column)
    literal   := number | 'string' | DATE 'yyyy-mm-dd' | TIMESTAMP 'yyyy-mm-dd hh:mm:ss[.ffffff]' | TRUE | FALSE | NULL
    column    := identifier | `quoted identifier` | "quoted identifier"

A chain of ORs or ANDs becomes a balanced tree (see ``and_``), so its length costs no depth. Nesting
(parentheses and NOTs) is limited to ``MAX_DEPTH`` levels, so no filter text can exhaust the stack.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import Any

from carbon_ds.errors import CarbonOptionError
from carbon_ds.expressions.lexer import FILTER, LexError, tokens
from carbon_ds.expressions.tree import (
    AlwaysFalse,
    AlwaysTrue,
    Compare,
    Expr,
    In,
    IsNull,
    Not,
    NotIn,
    NotNull,
    StartsWith,
    and_,
    between,
    flip,
    or_,
)

MAX_DEPTH = 100
"""How deeply parentheses and NOTs may nest in a filter."""

_KEYWORDS = {"AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "LIKE", "TRUE", "FALSE", "DATE", "TIMESTAMP"}


class _Col(str):
    """A column name token (distinguishes `x` from the string literal 'x')."""


class _Null:
    def __repr__(self) -> str:
        return "NULL"


NULL = _Null()


def _shown(text: str, most: int = 200) -> str:
    """The filter as quoted in an error message: whole up to ``most`` characters, else its two ends."""
    if len(text) <= most:
        return repr(text)
    return f"{text[:most // 2]!r} ... {text[-most // 4:]!r} ({len(text)} characters)"


_KINDS = {"number": "num", "string": "str", "ident": "qid", "word": "id", "op": "op", "punct": "punct"}


def _tokens(text: str) -> list[tuple[str, str, int]]:
    """(kind, value, position) with keywords told apart from column names."""
    try:
        toks = tokens(text, FILTER)
    except LexError as e:
        raise CarbonOptionError(f"cannot parse filter {_shown(text)}: {e}") from None
    out = []
    for t in toks:
        kind, value = _KINDS[t.kind], t.text
        if kind == "id" and value.upper() in _KEYWORDS:
            kind, value = "kw", value.upper()
        out.append((kind, value, t.pos))
    return out


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.depth = 0  # open parentheses and NOTs

    def error(self, msg: str) -> CarbonOptionError:
        where = self.toks[self.i][2] if self.i < len(self.toks) else len(self.text)
        return CarbonOptionError(f"cannot parse filter {_shown(self.text)}: {msg} at position {where}")

    def peek(self, k: int = 0) -> tuple[str, str, int] | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def accept(self, kind: str, value: str | None = None) -> str | None:
        t = self.peek()
        if t and t[0] == kind and (value is None or t[1] == value):
            self.i += 1
            return t[1]
        return None

    def expect(self, kind: str, value: str | None = None) -> str:
        got = self.accept(kind, value)
        if got is None:
            t = self.peek()
            raise self.error(f"expected {value or kind}, found {t[1] if t else 'end of text'!r}")
        return got

    def deeper(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.i -= 1  # point at the '(' or NOT that goes too deep
            raise self.error(f"filter nests deeper than {MAX_DEPTH} levels of parentheses and NOT")

    def parse(self) -> Expr:
        e = self.or_()
        if self.peek() is not None:
            raise self.error(f"unexpected {self.peek()[1]!r}")  # type: ignore[index]
        return e

    def or_(self) -> Expr:
        parts = [self.and_()]
        while self.accept("kw", "OR"):
            parts.append(self.and_())
        return or_(*parts) if len(parts) > 1 else parts[0]

    def and_(self) -> Expr:
        parts = [self.not_()]
        while self.accept("kw", "AND"):
            parts.append(self.not_())
        return and_(*parts) if len(parts) > 1 else parts[0]

    def not_(self) -> Expr:
        if self.accept("kw", "NOT"):
            self.deeper()
            e = Not(self.not_())
            self.depth -= 1
            return e
        return self.predicate()

    def predicate(self) -> Expr:
        if self.accept("punct", "("):
            self.deeper()
            e = self.or_()
            self.expect("punct", ")")
            self.depth -= 1
            return e
        t = self.peek()
        if t and t[0] == "kw" and t[1] in ("TRUE", "FALSE"):
            nxt = self.peek(1)
            if nxt is None or nxt[0] == "kw" and nxt[1] in ("AND", "OR") or nxt[1] == ")":
                self.i += 1
                return AlwaysTrue() if t[1] == "TRUE" else AlwaysFalse()
        left = self.operand()
        if self.accept("kw", "IS"):
            negated = bool(self.accept("kw", "NOT"))
            self.expect("kw", "NULL")
            col = self.column_of(left, "IS NULL")
            return NotNull(col) if negated else IsNull(col)
        negated = bool(self.accept("kw", "NOT"))
        if self.accept("kw", "IN"):
            col = self.column_of(left, "IN")
            self.expect("punct", "(")
            values = [self.literal()]
            while self.accept("punct", ","):
                values.append(self.literal())
            self.expect("punct", ")")
            if any(v is NULL for v in values):
                raise self.error("NULL inside IN (...) is not supported; use IS NULL")
            return NotIn(col, tuple(values)) if negated else In(col, tuple(values))
        if self.accept("kw", "BETWEEN"):
            col = self.column_of(left, "BETWEEN")
            low = self.literal()
            self.expect("kw", "AND")
            high = self.literal()
            e = between(col, low, high)
            return Not(e) if negated else e
        if self.accept("kw", "LIKE"):
            col = self.column_of(left, "LIKE")
            pattern = self.literal()
            if not isinstance(pattern, str):
                raise self.error("LIKE needs a string pattern")
            body = pattern[:-1] if pattern.endswith("%") else None
            if body is None or any(ch in body for ch in "%_\\"):
                raise self.error(f"only prefix patterns are supported by LIKE ('abc%'), found {pattern!r}")
            e = StartsWith(col, body)
            return Not(e) if negated else e
        if negated:
            raise self.error("NOT must be followed by IN, BETWEEN or LIKE here")
        op = self.accept("op")
        if op is None:
            t = self.peek()
            raise self.error(f"expected a comparison operator, found {t[1] if t else 'end of text'!r}")
        if op == "<=>":
            raise self.error("the null-safe operator <=> is not supported")
        op = {"==": "=", "<>": "!="}.get(op, op)
        right = self.operand()
        if isinstance(left, _Col) and not isinstance(right, _Col):
            col, value = str(left), right
        elif isinstance(right, _Col) and not isinstance(left, _Col):
            col, value, op = str(right), left, flip(op)
        else:
            raise self.error("a comparison needs one column and one literal")
        if value is NULL:
            # x = NULL is never true in SQL; say so rather than silently returning nothing
            raise self.error(f"comparison with NULL is never true; use {col} IS NULL / IS NOT NULL")
        return Compare(col, op, value)

    def column_of(self, operand: Any, what: str) -> str:
        if not isinstance(operand, _Col):
            raise self.error(f"{what} needs a column on its left")
        return str(operand)

    def operand(self) -> Any:
        t = self.peek()
        if t and t[0] == "id":
            self.i += 1
            return _Col(t[1])
        if t and t[0] == "qid":
            self.i += 1
            return _Col(t[1])
        return self.literal()

    def literal(self) -> Any:
        t = self.peek()
        if t is None:
            raise self.error("expected a value, found end of text")
        kind, value, _ = t
        self.i += 1
        if kind == "num":
            suffix = value[-1].upper()
            if suffix in "LD":
                value = value[:-1]
            if suffix == "D" or re.search(r"[eE]", value):
                return float(value)
            return Decimal(value) if "." in value else int(value)
        if kind == "str":
            return value
        if kind == "kw" and value in ("TRUE", "FALSE"):
            return value == "TRUE"
        if kind == "kw" and value == "NULL":
            return NULL
        if kind == "kw" and value in ("DATE", "TIMESTAMP"):
            text = self.expect("str")
            try:
                if value == "DATE":
                    return dt.date.fromisoformat(text)
                ts = dt.datetime.fromisoformat(text)
                return ts if ts.tzinfo else ts.replace(tzinfo=dt.UTC)
            except ValueError:
                raise self.error(f"invalid {value} literal {text!r}") from None
        self.i -= 1
        raise self.error(f"expected a value, found {value!r}")


def parse(text: str) -> Expr:
    """Parse a SQL predicate into the expression tree.

    Raises:
        CarbonOptionError: the text is empty, is not a predicate of the grammar above, or nests deeper than
            ``MAX_DEPTH`` levels; the message says what and where.
    """
    if not text.strip():
        raise CarbonOptionError(f"empty filter {text!r}: give a predicate such as \"a > 1\", or no filter at all")
    try:
        return _Parser(text).parse()
    except RecursionError:  # MAX_DEPTH keeps the parser well inside the limit; this is only a backstop
        raise CarbonOptionError(f"filter nests too deeply to parse ({len(text)} characters)") from None
