"""One predicate model: filters from SQL text, Spark and Python objects all become these nodes.

Nodes are immutable. Column references are by name until bound to a schema (see ``bind``), after which
literals have the column's Python type (int, float, str, bytes, bool, Decimal, date, datetime).

Every analysis of a tree (binding, min/max pruning, the Arrow conversion, ``push_not``, ``columns`` and the
SQL text of ``str``) is an :class:`ExprVisitor` run by :func:`visit`, which refuses a node type it does not
know with :class:`UnsupportedExpressionError` instead of letting it fall through.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, NewType, TypeVar

from carbon_ds.errors import CarbonError, CarbonOptionError

OPS = ("=", "!=", "<", "<=", ">", ">=")
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NEGATE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}

T = TypeVar("T")


class UnsupportedExpressionError(CarbonError, NotImplementedError):
    """A visitor met a node type that is not part of the predicate model (see :func:`visit`)."""


class Expr:
    def __and__(self, other: Expr) -> Expr:
        return and_(self, other)

    def __or__(self, other: Expr) -> Expr:
        return or_(self, other)

    def __invert__(self) -> Expr:
        return Not(self)

    def columns(self) -> set[str]:
        """The column names the predicate reads."""
        return visit(self, _Columns())

    def children(self) -> tuple[Expr, ...]:
        return ()

    def __str__(self) -> str:
        try:
            return visit(self, _SqlText())
        except UnsupportedExpressionError:
            return repr(self)  # display only: a foreign node still prints


BoundExpr = NewType("BoundExpr", Expr)
"""An expression that :func:`~carbon_ds.expressions.bind` has resolved against a schema (a typing marker only:
at run time it is the same node)."""


@dataclass(frozen=True)
class AlwaysTrue(Expr):
    pass


@dataclass(frozen=True)
class AlwaysFalse(Expr):
    pass


@dataclass(frozen=True)
class Compare(Expr):
    column: str
    op: str
    value: Any

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"unknown comparison {self.op!r}; expected one of {OPS}")


@dataclass(frozen=True)
class In(Expr):
    column: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class NotIn(Expr):
    column: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class IsNull(Expr):
    column: str


@dataclass(frozen=True)
class NotNull(Expr):
    column: str


@dataclass(frozen=True)
class StartsWith(Expr):
    """``LIKE 'prefix%'``: the only LIKE form that min/max can prune."""

    column: str
    prefix: str


@dataclass(frozen=True)
class Predicate(Expr):
    """A condition on computed values (``id % 2 = 1``, ``lower(s) = 'x'``): ``value`` is a boolean value
    expression (:mod:`carbon_ds.expressions.scalar`). Pruning cannot reason about it (every unit might
    match); the rows read are filtered by it exactly."""

    value: Any


@dataclass(frozen=True)
class And(Expr):
    left: Expr
    right: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.left, self.right)


@dataclass(frozen=True)
class Or(Expr):
    left: Expr
    right: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.left, self.right)


@dataclass(frozen=True)
class Not(Expr):
    child: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.child,)


# ------------------------------------------------------------------------------------------ the visitor
class ExprVisitor(ABC, Generic[T]):
    """One method per node type; :func:`visit` calls them bottom-up (post-order).

    ``And``, ``Or`` and ``Not`` never see their child nodes, only the results the visitor already returned
    for them (``visit_and(left, right)``), so every analysis is a fold and none recurses. Leaves get the node.
    There is no short-circuit: both children of an And are visited even when the left one decides it.
    A visitor must implement every method, so adding a node type (and its abstract method here) makes every
    visitor that does not handle it fail to instantiate.
    """

    @abstractmethod
    def visit_true(self) -> T: ...

    @abstractmethod
    def visit_false(self) -> T: ...

    @abstractmethod
    def visit_and(self, left: T, right: T) -> T: ...

    @abstractmethod
    def visit_or(self, left: T, right: T) -> T: ...

    @abstractmethod
    def visit_not(self, child: T) -> T: ...

    @abstractmethod
    def visit_compare(self, node: Compare) -> T: ...

    @abstractmethod
    def visit_in(self, node: In) -> T: ...

    @abstractmethod
    def visit_not_in(self, node: NotIn) -> T: ...

    @abstractmethod
    def visit_is_null(self, node: IsNull) -> T: ...

    @abstractmethod
    def visit_not_null(self, node: NotNull) -> T: ...

    @abstractmethod
    def visit_starts_with(self, node: StartsWith) -> T: ...

    @abstractmethod
    def visit_predicate(self, node: Predicate) -> T: ...


# node type -> (what the visitor method takes, its name). Branches take their children's results.
_CONSTANT, _LEAF, _UNARY, _BINARY = 0, -1, 1, 2
_RULES: dict[type, tuple[int, str]] = {
    AlwaysTrue: (_CONSTANT, "visit_true"),
    AlwaysFalse: (_CONSTANT, "visit_false"),
    Compare: (_LEAF, "visit_compare"),
    In: (_LEAF, "visit_in"),
    NotIn: (_LEAF, "visit_not_in"),
    IsNull: (_LEAF, "visit_is_null"),
    NotNull: (_LEAF, "visit_not_null"),
    StartsWith: (_LEAF, "visit_starts_with"),
    Predicate: (_LEAF, "visit_predicate"),
    And: (_BINARY, "visit_and"),
    Or: (_BINARY, "visit_or"),
    Not: (_UNARY, "visit_not"),
}
_NODE_TYPES = tuple(_RULES)


def _rule_of(node: Expr) -> tuple[int, str]:
    """The rule for a type not in ``_RULES`` itself: a subclass is visited as its nearest known base (a
    subclass of Compare is a Compare, and is remembered as one). Anything else is refused."""
    for base in type(node).__mro__:
        if base in _NODE_TYPES:
            rule = _RULES[type(node)] = _RULES[base]
            return rule
    # a node with its own __str__ shows that; otherwise repr (Expr.__str__ would come back here)
    text = repr(node) if type(node).__str__ is Expr.__str__ else str(node)
    raise UnsupportedExpressionError(
        f"cannot visit expression node {type(node).__qualname__} ({text}): the predicate model knows only "
        f"{', '.join(t.__name__ for t in _NODE_TYPES)}"
    )


def visit(expr: Expr, visitor: ExprVisitor[T]) -> T:
    """Run ``visitor`` over ``expr`` bottom-up and return its result for the root.

    The walk keeps its own stack, so a deep tree (a long left-deep chain built with ``&``) never hits
    Python's recursion limit. Children are visited left to right, so the first error is the leftmost one.

    Raises:
        UnsupportedExpressionError: a node (at any depth) is not of a known node type; the message names
            its type and its text.
    """
    results: list[Any] = []
    calls: dict[type, tuple[int, Callable[..., Any]]] = {}  # node type -> (kind, bound visitor method)
    # a node still to visit, or the (kind, method) of a branch whose children's results are on ``results``
    todo: list[Any] = [expr]
    while todo:
        item = todo.pop()
        if type(item) is tuple:
            if item[0] == _BINARY:
                right = results.pop()
                results[-1] = item[1](results[-1], right)
            else:
                results[-1] = item[1](results[-1])
            continue
        call = calls.get(type(item))
        if call is None:
            kind, name = _RULES.get(type(item)) or _rule_of(item)
            call = calls[type(item)] = (kind, getattr(visitor, name))
        if call[0] == _LEAF:
            results.append(call[1](item))
        elif call[0] == _CONSTANT:
            results.append(call[1]())
        else:
            todo.append(call)
            todo.extend(reversed(item.children()))
    return results[0]


# ------------------------------------------------------------------------------------------ depth bound
MAX_TREE_DEPTH = 200  # Arrow's expression evaluation recurses in C++: deeper trees could overflow its stack


def depth(expr: Expr) -> int:
    """Levels of the tree (a leaf is 1), counted without recursion."""
    deepest, todo = 0, [(expr, 1)]
    while todo:
        node, d = todo.pop()
        deepest = max(deepest, d)
        todo.extend((c, d + 1) for c in node.children())
    return deepest


def _terms(expr: Expr, cls: type) -> list[Expr]:
    out, todo = [], [expr]
    while todo:
        node = todo.pop()
        if type(node) is cls:
            todo.extend(reversed(node.children()))
        else:
            out.append(node)
    return out


def _rebalance(expr: Expr) -> Expr:
    if type(expr) in (And, Or):
        return _balanced(type(expr), [_rebalance(t) for t in _terms(expr, type(expr))])
    if type(expr) is Not:
        return Not(_rebalance(expr.child))
    return expr


def bounded(expr: Expr) -> Expr:
    """``expr`` with long AND / OR chains rebalanced, so evaluation stays within ``MAX_TREE_DEPTH`` levels.

    Raises:
        CarbonOptionError: the tree still nests deeper (NOT or alternating AND / OR levels).
    """
    levels = depth(expr)
    if levels <= MAX_TREE_DEPTH:
        return expr
    try:
        expr = _rebalance(expr)
        levels = depth(expr)
    except RecursionError:
        pass
    if levels > MAX_TREE_DEPTH:
        raise CarbonOptionError(
            f"filter nests {levels} levels deep, more than {MAX_TREE_DEPTH}: NOT and alternating AND / OR "
            "nest a level each; long AND / OR chains of any length are fine"
        )
    return expr


# ------------------------------------------------------------------------------------------ builders
def _balanced(cls: type[And] | type[Or], parts: list[Expr]) -> Expr:
    # depth log2(n), so a 10,000-term chain is 14 levels deep; for 2 and 3 terms it is the left-deep chain
    if len(parts) <= 2:
        return parts[0] if len(parts) == 1 else cls(parts[0], parts[1])
    mid = (len(parts) + 1) // 2
    return cls(_balanced(cls, parts[:mid]), _balanced(cls, parts[mid:]))


def and_(*exprs: Expr) -> Expr:
    """The conjunction of ``exprs``: TRUE for none, FALSE if any is FALSE, TRUE terms dropped.

    More than three terms become a balanced tree of ``And`` nodes, not a left-deep chain.
    """
    parts: list[Expr] = []
    for e in exprs:
        if isinstance(e, AlwaysFalse):
            return AlwaysFalse()
        if not isinstance(e, AlwaysTrue):
            parts.append(e)
    return _balanced(And, parts) if parts else AlwaysTrue()


def or_(*exprs: Expr) -> Expr:
    """The disjunction of ``exprs``: FALSE for none, TRUE if any is TRUE, FALSE terms dropped.

    More than three terms become a balanced tree of ``Or`` nodes, not a left-deep chain.
    """
    parts: list[Expr] = []
    for e in exprs:
        if isinstance(e, AlwaysTrue):
            return AlwaysTrue()
        if not isinstance(e, AlwaysFalse):
            parts.append(e)
    return _balanced(Or, parts) if parts else AlwaysFalse()


def _and2(a: Expr, b: Expr) -> Expr:
    """``and_(a, b)``, without its loop (``push_not`` calls it for every node)."""
    if type(a) is AlwaysFalse or type(b) is AlwaysFalse:
        return AlwaysFalse()
    if type(a) is AlwaysTrue:
        return b
    return a if type(b) is AlwaysTrue else And(a, b)


def _or2(a: Expr, b: Expr) -> Expr:
    """``or_(a, b)``, without its loop."""
    if type(a) is AlwaysTrue or type(b) is AlwaysTrue:
        return AlwaysTrue()
    if type(a) is AlwaysFalse:
        return b
    return a if type(b) is AlwaysFalse else Or(a, b)


def between(column: str, low: Any, high: Any) -> Expr:
    return And(Compare(column, ">=", low), Compare(column, "<=", high))


def flip(op: str) -> str:
    """The operator with its operands swapped: ``5 < x`` is ``x > 5``."""
    return _FLIP[op]


# ------------------------------------------------------------------------------------------ small visitors
class _Columns(ExprVisitor[set[str]]):
    def visit_true(self) -> set[str]:
        return set()

    def visit_false(self) -> set[str]:
        return set()

    def visit_and(self, left: set[str], right: set[str]) -> set[str]:
        return left | right

    def visit_or(self, left: set[str], right: set[str]) -> set[str]:
        return left | right

    def visit_not(self, child: set[str]) -> set[str]:
        return child

    def visit_compare(self, node: Compare) -> set[str]:
        return {node.column}

    def visit_in(self, node: In) -> set[str]:
        return {node.column}

    def visit_not_in(self, node: NotIn) -> set[str]:
        return {node.column}

    def visit_is_null(self, node: IsNull) -> set[str]:
        return {node.column}

    def visit_not_null(self, node: NotNull) -> set[str]:
        return {node.column}

    def visit_starts_with(self, node: StartsWith) -> set[str]:
        return {node.column}

    def visit_predicate(self, node: Predicate) -> set[str]:
        return node.value.columns()


class _SqlText(ExprVisitor[str]):
    """The text of ``str(expr)``: SQL-like, every And/Or in parentheses, literals as Python reprs."""

    def visit_true(self) -> str:
        return "TRUE"

    def visit_false(self) -> str:
        return "FALSE"

    def visit_and(self, left: str, right: str) -> str:
        return f"({left} AND {right})"

    def visit_or(self, left: str, right: str) -> str:
        return f"({left} OR {right})"

    def visit_not(self, child: str) -> str:
        return f"NOT {child}"

    def visit_compare(self, node: Compare) -> str:
        return f"{node.column} {node.op} {node.value!r}"

    def visit_in(self, node: In) -> str:
        return f"{node.column} IN ({', '.join(map(repr, node.values))})"

    def visit_not_in(self, node: NotIn) -> str:
        return f"{node.column} NOT IN ({', '.join(map(repr, node.values))})"

    def visit_is_null(self, node: IsNull) -> str:
        return f"{node.column} IS NULL"

    def visit_not_null(self, node: NotNull) -> str:
        return f"{node.column} IS NOT NULL"

    def visit_starts_with(self, node: StartsWith) -> str:
        return f"{node.column} LIKE {node.prefix + '%'!r}"

    def visit_predicate(self, node: Predicate) -> str:
        return str(node.value)


_Pair = tuple[Expr, Expr]


class _PushNot(ExprVisitor[_Pair]):
    """For every node, the pair (its Not-free form, the Not-free form of its negation); ``Not`` swaps them."""

    def visit_true(self) -> _Pair:
        return AlwaysTrue(), AlwaysFalse()

    def visit_false(self) -> _Pair:
        return AlwaysFalse(), AlwaysTrue()

    def visit_and(self, left: _Pair, right: _Pair) -> _Pair:
        return _and2(left[0], right[0]), _or2(left[1], right[1])

    def visit_or(self, left: _Pair, right: _Pair) -> _Pair:
        return _or2(left[0], right[0]), _and2(left[1], right[1])

    def visit_not(self, child: _Pair) -> _Pair:
        return child[1], child[0]

    def visit_compare(self, node: Compare) -> _Pair:
        if isinstance(node.value, float):
            # a comparison with NaN is false and so is its opposite: NOT (f > v) holds on a NaN row where
            # f <= v does not, so the negation stays a Not (pruning then keeps the unit)
            return node, Not(node)
        return node, Compare(node.column, _NEGATE[node.op], node.value)

    def visit_in(self, node: In) -> _Pair:
        return node, NotIn(node.column, node.values)

    def visit_not_in(self, node: NotIn) -> _Pair:
        return node, In(node.column, node.values)

    def visit_is_null(self, node: IsNull) -> _Pair:
        return node, NotNull(node.column)

    def visit_not_null(self, node: NotNull) -> _Pair:
        return node, IsNull(node.column)

    def visit_starts_with(self, node: StartsWith) -> _Pair:
        return node, Not(node)  # NOT LIKE: kept, treated as "might match" by pruning

    def visit_predicate(self, node: Predicate) -> _Pair:
        return node, Not(node)


def push_not(e: Expr) -> Expr:
    """Rewrite without Not nodes (De Morgan), so the min/max visitor never has to negate a 'might match'.

    SQL three-valued logic: NOT (x < 5) keeps rows where x >= 5 and drops nulls, which is exactly x >= 5.
    The Nots left are over LIKE and computed predicates, which have no Not-free form.

    Raises:
        UnsupportedExpressionError: ``e`` holds a node type outside the predicate model.
    """
    return visit(e, _PushNot())[0]
