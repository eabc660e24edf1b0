"""A small SQL predicate parser: the `filter` read option and the Python API's filter strings.

Grammar (case-insensitive keywords), Spark SQL's precedence:
    expr      := or
    or        := and (OR and)*
    and       := not (AND not)*
    not       := NOT not | predicate
    predicate := sum [cmp sum | IS [NOT] NULL | [NOT] IN '(' literal, ... ')'
                      | [NOT] BETWEEN sum AND sum | [NOT] LIKE sum]
    sum       := product (('+' | '-' | '||') product)*
    product   := unary (('*' | '/' | '%') unary)*
    unary     := '-' unary | '+' unary | atom
    atom      := literal | column | '(' expr ')' | function '(' expr, ... ')'
               | CASE [value] (WHEN expr THEN expr)+ [ELSE expr] END | CAST '(' expr AS type ')'
    literal   := number | 'string' | DATE 'yyyy-mm-dd' | TIMESTAMP 'yyyy-mm-dd hh:mm:ss[.ffffff]' | TRUE | FALSE | NULL
    column    := identifier | `quoted identifier` | "quoted identifier"

What a column compared with a literal, IN, IS NULL, BETWEEN and a prefix LIKE say becomes the plain nodes
(Compare, In, ...) that pruning reasons about; anything computed (``id % 2 = 1``, ``lower(s) = 'x'``) is a
:class:`~carbon_ds.expressions.tree.Predicate` over :mod:`carbon_ds.expressions.scalar` nodes, evaluated
exactly after the read. A chain of ORs or ANDs becomes a balanced tree (see ``and_``), so its length costs
no depth. Nesting (parentheses, NOT, unary minus, functions, CASE) is limited to ``MAX_DEPTH`` levels, so no
filter text can exhaust the stack.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import Any

from carbon_ds.errors import CarbonFilterError, CarbonOptionError, see
from carbon_ds.expressions.lexer import FILTER, LexError, tokens
from carbon_ds.expressions.scalar import CAST_TYPES, Call, Case, Cast, Col, Lit, Scalar, check_function, sql_type
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
    Predicate,
    StartsWith,
    and_,
    between,
    flip,
    or_,
)

MAX_DEPTH = 100
"""How deeply parentheses and NOTs may nest in a filter."""

_KEYWORDS = {"AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "LIKE", "TRUE", "FALSE", "DATE", "TIMESTAMP"}


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
        raise CarbonOptionError(f"cannot parse filter {_shown(text)}: {e}" + see("pruning.md", "filter-syntax")) from None
    out = []
    for t in toks:
        kind, value = _KINDS[t.kind], t.text
        if kind == "id" and value.upper() in _KEYWORDS:
            kind, value = "kw", value.upper()
        out.append((kind, value, t.pos))
    return out


_OR, _AND, _NOT, _COMPARE, _ADD, _MULTIPLY, _SIGN = range(1, 8)
_PRECEDENCE = {"<=>": _COMPARE, "=": _COMPARE, "==": _COMPARE, "!=": _COMPARE, "<>": _COMPARE, "<": _COMPARE,
               "<=": _COMPARE, ">": _COMPARE, ">=": _COMPARE, "+": _ADD, "-": _ADD, "||": _ADD,
               "*": _MULTIPLY, "/": _MULTIPLY, "%": _MULTIPLY}
_PREDICATE_WORDS = ("IS", "IN", "BETWEEN", "LIKE", "NOT")


def _precedence(t: tuple[str, str, int] | None) -> int:
    """How tightly the operator ``t`` binds; 0 when ``t`` is no infix operator."""
    if t is None:
        return 0
    if t[0] == "op":
        return _PRECEDENCE.get(t[1], 0)
    if t[0] == "kw":
        if t[1] == "OR":
            return _OR
        if t[1] == "AND":
            return _AND
        if t[1] in _PREDICATE_WORDS:
            return _COMPARE
    return 0


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.depth = 0  # open parentheses, NOTs, signs, function calls, CASEs

    def error(self, msg: str) -> CarbonOptionError:
        where = self.toks[self.i][2] if self.i < len(self.toks) else len(self.text)
        return CarbonOptionError(f"cannot parse filter {_shown(self.text)}: {msg} at position {where}"
                                 + see("pruning.md", "filter-syntax"))

    def peek(self, k: int = 0) -> tuple[str, str, int] | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def accept(self, kind: str, value: str | None = None) -> str | None:
        t = self.peek()
        if t and t[0] == kind and (value is None or t[1] == value):
            self.i += 1
            return t[1]
        return None

    def accept_word(self, word: str) -> bool:
        """A contextual keyword (CASE, WHEN, AS, ...): still usable as a column name elsewhere."""
        t = self.peek()
        if t and t[0] == "id" and t[1].upper() == word:
            self.i += 1
            return True
        return False

    def expect(self, kind: str, value: str | None = None) -> str:
        got = self.accept(kind, value)
        if got is None:
            t = self.peek()
            raise self.error(f"expected {value or kind}, found {t[1] if t else 'end of text'!r}")
        return got

    def expect_word(self, word: str) -> None:
        if not self.accept_word(word):
            t = self.peek()
            raise self.error(f"expected {word}, found {t[1] if t else 'end of text'!r}")

    def deeper(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.i -= 1  # point at the '(' or NOT that goes too deep
            raise self.error(f"filter nests deeper than {MAX_DEPTH} levels of parentheses, NOT, signs, "
                             "functions and CASE")

    def parse(self) -> Scalar:
        e = self.expr()
        if self.peek() is not None:
            raise self.error(f"unexpected {self.peek()[1]!r}")  # type: ignore[index]
        return e

    # precedence climbing, so a level of parentheses costs three Python frames (expr, prefix, atom)
    def expr(self, least: int = _OR) -> Scalar:
        left = self.prefix(least)
        while True:
            t = self.peek()
            prec = _precedence(t)
            if t is None or prec < least:
                return left
            if prec in (_OR, _AND):
                parts = [left]
                while self.accept("kw", t[1]):
                    parts.append(self.expr(prec + 1))
                left = _chain(t[1].lower(), parts)
            elif prec == _COMPARE:
                left = self.comparison(left)
            else:
                self.i += 1
                right = self.expr(prec + 1)
                left = Call("concat", (left, right)) if t[1] == "||" else Call(t[1], (left, right))

    def prefix(self, least: int) -> Scalar:
        if self.accept("kw", "NOT"):
            if least > _NOT:
                self.i -= 1
                raise self.error("NOT here must be in parentheses")
            self.deeper()
            e = Call("not", (self.expr(_NOT),))
            self.depth -= 1
            return e
        sign = self.accept("op", "-") or self.accept("op", "+")
        if sign is None:
            return self.atom()
        self.deeper()
        e = self.prefix(_SIGN)
        self.depth -= 1
        if sign == "+":
            return e
        if isinstance(e, Lit) and isinstance(e.value, int | float | Decimal) and not isinstance(e.value, bool):
            return Lit(_negated(e.value))  # -1 is the literal -1, as Spark reads it
        return Call("neg", (e,))

    def comparison(self, left: Scalar) -> Scalar:
        if self.accept("kw", "IS"):
            negated = bool(self.accept("kw", "NOT"))
            self.expect("kw", "NULL")
            return Call("is_not_null" if negated else "is_null", (left,))
        negated = bool(self.accept("kw", "NOT"))
        if self.accept("kw", "IN"):
            self.expect("punct", "(")
            values = [self.literal_value()]
            while self.accept("punct", ","):
                values.append(self.literal_value())
            self.expect("punct", ")")
            if any(v.value is None for v in values):
                raise self.error("NULL inside IN (...) is not supported; use IS NULL")
            return Call("not_in" if negated else "in", (left, *values))
        if self.accept("kw", "BETWEEN"):
            low = self.expr(_COMPARE + 1)
            self.expect("kw", "AND")
            high = self.expr(_COMPARE + 1)
            e = Call("between", (left, low, high))
            return Call("not", (e,)) if negated else e
        if self.accept("kw", "LIKE"):
            e = Call("like", (left, self.expr(_COMPARE + 1)))
            return Call("not", (e,)) if negated else e
        if negated:
            raise self.error("NOT must be followed by IN, BETWEEN or LIKE here")
        op = self.expect("op")
        if op == "<=>":
            self.i -= 1
            raise self.error("the null-safe operator <=> is not supported")
        op = {"==": "=", "<>": "!="}.get(op, op)
        right = self.expr(_COMPARE + 1)
        for side, other in ((left, right), (right, left)):
            if isinstance(side, Lit) and side.value is None:
                # x = NULL is never true in SQL; say so rather than silently returning nothing
                col = other.name if isinstance(other, Col) else str(other)
                raise self.error(f"comparison with NULL is never true; use {col} IS NULL / IS NOT NULL")
        return Call(op, (left, right))

    def atom(self) -> Scalar:
        t = self.peek()
        if t is None:
            raise self.error("expected a value, found end of text")
        kind, value, _ = t
        if kind == "punct" and value == "(":
            self.i += 1
            self.deeper()
            e = self.expr()
            self.expect("punct", ")")
            self.depth -= 1
            return e
        if kind == "id":
            nxt = self.peek(1)
            upper = value.upper()
            if upper == "CASE" and nxt is not None and nxt[0] != "op":
                self.i += 1
                return self.case()
            if nxt is not None and nxt[:2] == ("punct", "("):
                self.i += 2
                if upper == "CAST":
                    return self.cast()
                return self.function(value, t[2])
            self.i += 1
            return Col(value)
        if kind == "qid":
            self.i += 1
            return Col(value)
        return Lit(self.literal())

    def function(self, name: str, pos: int) -> Scalar:
        self.deeper()
        args: list[Scalar] = []
        if not self.accept("punct", ")"):
            args.append(self.expr())
            while self.accept("punct", ","):
                args.append(self.expr())
            self.expect("punct", ")")
        self.depth -= 1
        try:
            low = check_function(name, len(args))
        except CarbonFilterError as e:
            raise CarbonFilterError(f"cannot parse filter {_shown(self.text)}: {e} at position {pos}"
                                       + see("pruning.md", "filter-syntax")) from None
        return Call(low, tuple(args))

    def case(self) -> Scalar:
        self.deeper()
        subject = None if self.peek() and self.peek()[0] == "id" and self.peek()[1].upper() == "WHEN" else self.expr()
        whens = []
        while self.accept_word("WHEN"):
            cond = self.expr()
            self.expect_word("THEN")
            whens.append((cond if subject is None else Call("=", (subject, cond)), self.expr()))
        if not whens:
            raise self.error("CASE needs at least one WHEN ... THEN ...")
        otherwise = self.expr() if self.accept_word("ELSE") else Lit(None)
        self.expect_word("END")
        self.depth -= 1
        return Case(tuple(whens), otherwise)

    def cast(self) -> Scalar:
        self.deeper()
        arg = self.expr()
        self.expect_word("AS")
        t = self.peek()
        if t is None or t[0] not in ("id", "kw"):  # DATE and TIMESTAMP are keywords of literals too
            raise self.error("expected a type name after AS")
        self.i += 1
        numbers: list[int] = []
        if self.accept("punct", "("):
            numbers.append(int(self.expect("num")))
            if self.accept("punct", ","):
                numbers.append(int(self.expect("num")))
            self.expect("punct", ")")
        try:
            to = sql_type(t[1], *numbers)
        except CarbonFilterError as e:
            raise self.error(str(e)) from None
        if to is None:
            raise self.error(f"unknown type {t[1]!r} in CAST; known: {', '.join(CAST_TYPES)}")
        self.expect("punct", ")")
        self.depth -= 1
        return Cast(arg, to)

    def literal_value(self) -> Lit:
        sign = self.accept("op", "-")
        value = self.literal()
        if sign:
            if not isinstance(value, int | float | Decimal) or isinstance(value, bool):
                raise self.error(f"expected a number after '-', found {value!r}")
            value = _negated(value)
        return Lit(value)

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
            return None
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




def _negated(value: Any) -> Any:
    """``-value`` keeping the sign of a zero: -0.0 is a value of its own for float columns."""
    return value.copy_negate() if isinstance(value, Decimal) else -value


def _chain(name: str, parts: list[Scalar]) -> Scalar:
    """A balanced tree of ``name`` calls, so a long chain costs log2(n) levels."""
    if len(parts) == 1:
        return parts[0]
    mid = (len(parts) + 1) // 2
    return Call(name, (_chain(name, parts[:mid]), _chain(name, parts[mid:])))


def _plain(node: Scalar) -> bool:
    return isinstance(node, Lit) and node.value is not None


def to_tree(node: Scalar) -> Expr:
    """The predicate tree of a parsed condition: the forms pruning understands as their own nodes, the
    rest as :class:`Predicate` leaves."""
    if isinstance(node, Lit) and isinstance(node.value, bool):
        return AlwaysTrue() if node.value else AlwaysFalse()
    if not isinstance(node, Call):
        return Predicate(node)
    name, a = node.name, node.args
    if name in ("and", "or"):
        parts = [to_tree(x) for x in a]
        return and_(*parts) if name == "and" else or_(*parts)
    if name == "not":
        return Not(to_tree(a[0]))
    if name in ("=", "!=", "<", "<=", ">", ">="):
        if isinstance(a[0], Col) and _plain(a[1]):
            return Compare(a[0].name, name, a[1].value)
        if isinstance(a[1], Col) and _plain(a[0]):
            return Compare(a[1].name, flip(name), a[0].value)
    if name in ("in", "not_in") and isinstance(a[0], Col) and all(_plain(x) for x in a[1:]):
        values = tuple(x.value for x in a[1:])  # type: ignore[attr-defined]
        return In(a[0].name, values) if name == "in" else NotIn(a[0].name, values)
    if name in ("is_null", "is_not_null") and isinstance(a[0], Col):
        return IsNull(a[0].name) if name == "is_null" else NotNull(a[0].name)
    if name == "between" and isinstance(a[0], Col) and _plain(a[1]) and _plain(a[2]):
        return between(a[0].name, a[1].value, a[2].value)  # type: ignore[attr-defined]
    if name == "like" and isinstance(a[0], Col) and _plain(a[1]) and isinstance(a[1].value, str):  # type: ignore[attr-defined]
        pattern = a[1].value  # type: ignore[attr-defined]
        body = pattern[:-1] if pattern.endswith("%") else None
        if body is not None and not any(ch in body for ch in "%_\\"):
            return StartsWith(a[0].name, body)
    return Predicate(_desugar(node))


def _desugar(node: Scalar) -> Scalar:
    """BETWEEN and NOT IN as the calls they stand for (value expressions know neither)."""
    if isinstance(node, Call):
        args = tuple(_desugar(a) for a in node.args)
        if node.name == "between":
            x, low, high = args
            return Call("and", (Call(">=", (x, low)), Call("<=", (x, high))))
        if node.name == "not_in":
            return Call("not", (Call("in", args),))
        return Call(node.name, args)
    if isinstance(node, Case):
        return Case(tuple((_desugar(c), _desugar(v)) for c, v in node.whens), _desugar(node.otherwise))
    if isinstance(node, Cast):
        return Cast(_desugar(node.arg), node.to)
    return node


def parse(text: str) -> Expr:
    """Parse a SQL predicate into the expression tree.

    Raises:
        CarbonOptionError: the text is empty, is not a predicate of the grammar above (an unknown function is
            a CarbonFilterError naming the nearest known one), or nests deeper than ``MAX_DEPTH`` levels; the
            message says what and where.
    """
    if not text.strip():
        raise CarbonOptionError(f"empty filter {text!r}: give a predicate such as \"a > 1\", or no filter at all")
    try:
        return to_tree(_Parser(text).parse())
    except RecursionError:  # MAX_DEPTH keeps the parser well inside the limit; this is only a backstop
        raise CarbonOptionError(f"filter nests too deeply to parse ({len(text)} characters)") from None
