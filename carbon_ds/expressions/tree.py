"""One predicate model: filters from SQL text, Spark and Python objects all become these nodes.

Nodes are immutable. Column references are by name until bound to a schema (see ``bind``), after which
literals have the column's Python type (int, float, str, bytes, bool, Decimal, date, datetime).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OPS = ("=", "!=", "<", "<=", ">", ">=")
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NEGATE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


class Expr:
    def __and__(self, other: Expr) -> Expr:
        return and_(self, other)

    def __or__(self, other: Expr) -> Expr:
        return or_(self, other)

    def __invert__(self) -> Expr:
        return Not(self)

    def columns(self) -> set[str]:
        out: set[str] = set()
        for child in self.children():
            out |= child.columns()
        return out

    def children(self) -> tuple[Expr, ...]:
        return ()


@dataclass(frozen=True)
class AlwaysTrue(Expr):
    def __str__(self) -> str:
        return "TRUE"


@dataclass(frozen=True)
class AlwaysFalse(Expr):
    def __str__(self) -> str:
        return "FALSE"


@dataclass(frozen=True)
class Compare(Expr):
    column: str
    op: str
    value: Any

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"unknown comparison {self.op!r}; expected one of {OPS}")

    def columns(self) -> set[str]:
        return {self.column}

    def __str__(self) -> str:
        return f"{self.column} {self.op} {self.value!r}"


@dataclass(frozen=True)
class In(Expr):
    column: str
    values: tuple[Any, ...]

    def columns(self) -> set[str]:
        return {self.column}

    def __str__(self) -> str:
        return f"{self.column} IN ({', '.join(map(repr, self.values))})"


@dataclass(frozen=True)
class NotIn(Expr):
    column: str
    values: tuple[Any, ...]

    def columns(self) -> set[str]:
        return {self.column}

    def __str__(self) -> str:
        return f"{self.column} NOT IN ({', '.join(map(repr, self.values))})"


@dataclass(frozen=True)
class IsNull(Expr):
    column: str

    def columns(self) -> set[str]:
        return {self.column}

    def __str__(self) -> str:
        return f"{self.column} IS NULL"


@dataclass(frozen=True)
class NotNull(Expr):
    column: str

    def columns(self) -> set[str]:
        return {self.column}

    def __str__(self) -> str:
        return f"{self.column} IS NOT NULL"


@dataclass(frozen=True)
class StartsWith(Expr):
    """``LIKE 'prefix%'``: the only LIKE form that min/max can prune."""

    column: str
    prefix: str

    def columns(self) -> set[str]:
        return {self.column}

    def __str__(self) -> str:
        return f"{self.column} LIKE {self.prefix + '%'!r}"


@dataclass(frozen=True)
class And(Expr):
    left: Expr
    right: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.left, self.right)

    def __str__(self) -> str:
        return f"({self.left} AND {self.right})"


@dataclass(frozen=True)
class Or(Expr):
    left: Expr
    right: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.left, self.right)

    def __str__(self) -> str:
        return f"({self.left} OR {self.right})"


@dataclass(frozen=True)
class Not(Expr):
    child: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.child,)

    def __str__(self) -> str:
        return f"NOT {self.child}"


def and_(*exprs: Expr) -> Expr:
    out: Expr = AlwaysTrue()
    for e in exprs:
        if isinstance(e, AlwaysFalse) or isinstance(out, AlwaysFalse):
            return AlwaysFalse()
        if isinstance(e, AlwaysTrue):
            continue
        out = e if isinstance(out, AlwaysTrue) else And(out, e)
    return out


def or_(*exprs: Expr) -> Expr:
    out: Expr = AlwaysFalse()
    for e in exprs:
        if isinstance(e, AlwaysTrue) or isinstance(out, AlwaysTrue):
            return AlwaysTrue()
        if isinstance(e, AlwaysFalse):
            continue
        out = e if isinstance(out, AlwaysFalse) else Or(out, e)
    return out


def between(column: str, low: Any, high: Any) -> Expr:
    return And(Compare(column, ">=", low), Compare(column, "<=", high))


def flip(op: str) -> str:
    """The operator with its operands swapped: ``5 < x`` is ``x > 5``."""
    return _FLIP[op]


def push_not(e: Expr) -> Expr:
    """Rewrite without Not nodes (De Morgan), so the min/max visitor never has to negate a 'might match'.

    SQL three-valued logic: NOT (x < 5) keeps rows where x >= 5 and drops nulls, which is exactly x >= 5.
    """
    if isinstance(e, Not):
        c = e.child
        if isinstance(c, Not):
            return push_not(c.child)
        if isinstance(c, And):
            return or_(push_not(Not(c.left)), push_not(Not(c.right)))
        if isinstance(c, Or):
            return and_(push_not(Not(c.left)), push_not(Not(c.right)))
        if isinstance(c, Compare):
            return Compare(c.column, _NEGATE[c.op], c.value)
        if isinstance(c, In):
            return NotIn(c.column, c.values)
        if isinstance(c, NotIn):
            return In(c.column, c.values)
        if isinstance(c, IsNull):
            return NotNull(c.column)
        if isinstance(c, NotNull):
            return IsNull(c.column)
        if isinstance(c, AlwaysTrue):
            return AlwaysFalse()
        if isinstance(c, AlwaysFalse):
            return AlwaysTrue()
        return e  # NOT LIKE: kept, treated as "might match" by pruning
    if isinstance(e, And):
        return and_(push_not(e.left), push_not(e.right))
    if isinstance(e, Or):
        return or_(push_not(e.left), push_not(e.right))
    return e
