"""The one visitor protocol over the predicate model: unknown nodes are refused by every analysis, the
walk never recurses (so depth and length cost no stack), and the parser bounds nesting."""

from __future__ import annotations

import functools
import operator
import sys
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from carbon_ds.errors import CarbonError, CarbonOptionError
from carbon_ds.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    ColumnStats,
    Compare,
    Expr,
    ExprVisitor,
    In,
    IsNull,
    Not,
    NotIn,
    NotNull,
    Or,
    StartsWith,
    UnsupportedExpressionError,
    and_,
    bind,
    filter_table,
    might_match,
    or_,
    parse,
    push_not,
    to_arrow,
    visit,
)
from carbon_ds.expressions.bind import ARROW_EXPRESSION_LEAVES
from carbon_ds.expressions.filter_parser import MAX_DEPTH
from carbon_ds.expressions.tree import MAX_TREE_DEPTH, depth

SCHEMA = pa.schema([("a", pa.int64()), ("s", pa.string())])


@dataclass(frozen=True)
class EndsWith(Expr):
    """A node the predicate model does not know."""

    column: str
    suffix: str


def _depth(e: Expr) -> int:
    return 1 + max((_depth(c) for c in e.children()), default=0)


# ------------------------------------------------------------------------------------------ unknown nodes
UNKNOWN = EndsWith("s", "x")
ANALYSES = {
    "bind": lambda e: bind(e, SCHEMA),
    "might_match": lambda e: might_match(e, {"s": ColumnStats(min="a", max="z")}.get),
    "to_arrow": lambda e: to_arrow(e, SCHEMA),
    "filter_table": lambda e: filter_table(pa.table({"a": [1], "s": ["x"]}, schema=SCHEMA), e),
    "push_not": push_not,
    "columns": lambda e: e.columns(),
}


@pytest.mark.parametrize("analysis", sorted(ANALYSES))
@pytest.mark.parametrize(
    "expr", [UNKNOWN, And(Compare("a", "=", 1), UNKNOWN), Not(Or(UNKNOWN, IsNull("a")))], ids=["alone", "and", "not-or"]
)
def test_every_analysis_refuses_an_unknown_node(analysis, expr):
    with pytest.raises(UnsupportedExpressionError, match=r"EndsWith \(EndsWith\(column='s', suffix='x'\)\)"):
        ANALYSES[analysis](expr)


def test_the_error_is_a_carbon_error_and_not_implemented():
    with pytest.raises(CarbonError):
        bind(UNKNOWN, SCHEMA)
    with pytest.raises(NotImplementedError):
        bind(UNKNOWN, SCHEMA)


def test_an_unknown_node_with_its_own_str_is_shown_by_it():
    class Custom(Expr):
        def __str__(self) -> str:
            return "custom thing"

    with pytest.raises(UnsupportedExpressionError, match=r"Custom \(custom thing\)"):
        bind(Custom(), SCHEMA)


def test_str_of_an_unknown_node_falls_back_to_repr():
    assert str(UNKNOWN) == repr(UNKNOWN)
    assert str(And(Compare("a", "=", 1), UNKNOWN)) == repr(And(Compare("a", "=", 1), UNKNOWN))


def test_a_subclass_of_a_known_node_is_visited_as_that_node():
    @dataclass(frozen=True)
    class Equals(Compare):
        pass

    e = Equals("A", "=", 1)
    assert bind(e, SCHEMA) == Compare("a", "=", 1)
    assert not might_match(e, {"A": ColumnStats(min=2, max=3)}.get)
    assert str(e) == "A = 1" and e.columns() == {"A"}


def test_a_visitor_must_handle_every_node_type():
    class Partial(ExprVisitor[int]):
        def visit_compare(self, node: Compare) -> int:
            return 1

    with pytest.raises(TypeError, match="abstract"):
        Partial()  # type: ignore[abstract]


class _Trace(ExprVisitor[str]):
    """Records the order of calls, to pin down the walk."""

    def __init__(self):
        self.calls: list[str] = []

    def _note(self, text: str) -> str:
        self.calls.append(text)
        return text

    def visit_true(self) -> str:
        return self._note("T")

    def visit_false(self) -> str:
        return self._note("F")

    def visit_and(self, left: str, right: str) -> str:
        return self._note(f"and({left},{right})")

    def visit_or(self, left: str, right: str) -> str:
        return self._note(f"or({left},{right})")

    def visit_not(self, child: str) -> str:
        return self._note(f"not({child})")

    def visit_compare(self, node: Compare) -> str:
        return self._note(f"{node.column}{node.op}{node.value}")

    def visit_in(self, node: In) -> str:
        return self._note(f"{node.column} in")

    def visit_not_in(self, node: NotIn) -> str:
        return self._note(f"{node.column} not in")

    def visit_is_null(self, node: IsNull) -> str:
        return self._note(f"{node.column} null")

    def visit_not_null(self, node: NotNull) -> str:
        return self._note(f"{node.column} not null")

    def visit_starts_with(self, node: StartsWith) -> str:
        return self._note(f"{node.column} like {node.prefix}")

    def visit_predicate(self, node) -> str:
        return self._note(str(node.value))


def test_visit_is_post_order_left_to_right():
    t = _Trace()
    e = Or(And(Compare("a", "=", 1), Not(IsNull("b"))), And(AlwaysTrue(), StartsWith("s", "x")))
    assert visit(e, t) == "or(and(a=1,not(b null)),and(T,s like x))"
    assert t.calls == ["a=1", "b null", "not(b null)", "and(a=1,not(b null))", "T", "s like x",
                       "and(T,s like x)", "or(and(a=1,not(b null)),and(T,s like x))"]


# ------------------------------------------------------------------------------------------ same results
def test_to_arrow_builds_the_expected_pyarrow_expression():
    e = bind(parse("a = 1 and not (s is null or s like 'x%')"), SCHEMA)
    want = (pc.field("a") == pa.scalar(1, pa.int64())) & ~(
        pc.field("s").is_null() | pc.starts_with(pc.field("s"), pattern="x"))
    assert to_arrow(e, SCHEMA).equals(want)
    assert to_arrow(AlwaysFalse(), SCHEMA).equals(pc.scalar(False))


def test_push_not_results():
    assert push_not(Not(And(Compare("a", "<", 1), In("a", (1, 2))))) == Or(Compare("a", ">=", 1), NotIn("a", (1, 2)))
    assert push_not(Not(Or(IsNull("a"), Not(NotNull("a"))))) == And(NotNull("a"), NotNull("a"))
    assert push_not(Not(StartsWith("s", "x"))) == Not(StartsWith("s", "x"))
    assert push_not(Not(Not(StartsWith("s", "x")))) == StartsWith("s", "x")
    assert push_not(Not(And(AlwaysTrue(), IsNull("a")))) == NotNull("a")
    assert push_not(Not(AlwaysFalse())) == AlwaysTrue()


def test_might_match_never_answers_for_an_earlier_filter():
    # might_match remembers push_not per filter object; new objects (which may reuse an old id) must not hit it
    stats = {"a": ColumnStats(min=5, max=5)}.get
    for i in range(100):
        e = Not(Compare("a", "!=", i % 10))
        assert might_match(e, stats) is (i % 10 == 5)


def test_str_and_columns():
    e = parse("a in (1, 2) and not s like 'x%' or s is not null and a not in (3)")
    assert str(e) == "((a IN (1, 2) AND NOT s LIKE 'x%') OR (s IS NOT NULL AND a NOT IN (3)))"
    assert e.columns() == {"a", "s"}
    assert AlwaysTrue().columns() == set() and str(AlwaysFalse()) == "FALSE"


def test_and_or_keep_short_chains_left_deep_and_balance_long_ones():
    a, b, c, d = (Compare("a", "=", i) for i in range(4))
    assert and_(a, b, c) == And(And(a, b), c)
    assert or_(a, b, c) == Or(Or(a, b), c)
    assert and_(a, b, c, d) == And(And(a, b), And(c, d))
    assert and_() == AlwaysTrue() and or_() == AlwaysFalse()
    assert and_(a, AlwaysTrue(), b) == And(a, b) and or_(a, AlwaysFalse()) == a
    assert and_(a, AlwaysFalse(), b) == AlwaysFalse() and or_(a, AlwaysTrue()) == AlwaysTrue()
    assert _depth(or_(*(Compare("a", "=", i) for i in range(10_000)))) == 15


# ------------------------------------------------------------------------------------------ depth and length
@pytest.mark.parametrize(
    "text",
    ["(" * 5000 + "a = 1" + ")" * 5000, "NOT " * 5000 + "a = 1", "(" * (MAX_DEPTH + 1) + "a = 1" + ")" * (MAX_DEPTH + 1),
     "(NOT " * 60 + "a = 1" + ")" * 60],
    ids=["5000-parens", "5000-nots", "limit+1", "mixed"],
)
def test_deep_nesting_is_an_option_error(text):
    with pytest.raises(CarbonOptionError, match=f"filter nests deeper than {MAX_DEPTH} levels") as e:
        parse(text)
    assert len(str(e.value)) < 500  # a huge filter is not repeated whole in the message


def test_nesting_up_to_the_limit_parses_even_with_the_stack_half_used():
    text = "(" * MAX_DEPTH + "a = 1" + ")" * MAX_DEPTH
    text_not = "NOT " * MAX_DEPTH + "a = 1"

    def at_depth(n: int):
        return at_depth(n - 1) if n else (parse(text), parse(text_not))

    used = sys.getrecursionlimit() // 2
    e, e_not = at_depth(used)
    assert e == Compare("a", "=", 1)
    assert push_not(e_not) == Compare("a", "=", 1)  # an even number of NOTs


@pytest.mark.parametrize("op", ["OR", "AND"])
def test_a_long_chain_parses_into_a_shallow_tree_and_evaluates(op):
    n = 10_000
    e = bind(parse(f" {op} ".join(f"a {'=' if op == 'OR' else '!='} {i}" for i in range(n))), SCHEMA)
    assert _depth(e) <= 20
    table = pa.table({"a": [None, -1, 0, 5, n - 1, n, n + 3], "s": ["x"] * 7}, schema=SCHEMA)
    want = [0, 5, n - 1] if op == "OR" else [-1, n, n + 3]
    assert filter_table(table, e)["a"].to_pylist() == want
    assert might_match(e, {"a": ColumnStats(min=n + 1, max=n + 5)}.get) is (op == "AND")
    assert e.columns() == {"a"} and str(e).count(op) == n - 1


def test_twenty_thousand_terms_parse_without_recursion():
    e = parse(" OR ".join(f"a = {i}" for i in range(20_000)))
    assert _depth(e) <= 20
    assert not might_match(bind(e, SCHEMA), {"a": ColumnStats(min=-9, max=-1)}.get)


def test_a_left_deep_chain_from_operators_needs_no_recursion():
    n = 5_000
    e = functools.reduce(operator.or_, (Compare("a", "=", i) for i in range(n)))
    assert isinstance(e, Or) and isinstance(e.left, Or)  # built left-deep, n - 1 levels
    b = bind(e, SCHEMA)
    table = pa.table({"a": [None, -1, 0, n - 1, n], "s": ["x"] * 5}, schema=SCHEMA)
    assert filter_table(table, b)["a"].to_pylist() == [0, n - 1]
    assert not might_match(b, {"a": ColumnStats(min=n, max=n + 1)}.get)
    assert b.columns() == {"a"} and str(e).startswith("(" * (n - 1) + "a = 0 OR a = 1)")
    assert depth(b) <= MAX_TREE_DEPTH  # bind rebalances the chain, so Arrow evaluates it within its stack
    assert filter_table(table, bind(push_not(Not(b)), SCHEMA))["a"].to_pylist() == [-1, n]
    assert not might_match(Not(b), {"a": ColumnStats(min=7, max=7)}.get)
    assert might_match(Not(b), {"a": ColumnStats(min=n, max=n)}.get)


def test_to_arrow_refuses_more_terms_than_pyarrow_can_evaluate():
    e = or_(*(Compare("a", "=", i) for i in range(ARROW_EXPRESSION_LEAVES + 1)))
    with pytest.raises(CarbonOptionError, match=f"at most {ARROW_EXPRESSION_LEAVES}"):
        to_arrow(e, SCHEMA)
    table = pa.table({"a": [1, None], "s": ["x", None]}, schema=SCHEMA)
    assert filter_table(table, e)["a"].to_pylist() == [1]


def test_a_large_constant_tree_filters():
    # built by hand: and_/or_ would fold the constants away
    table = pa.table({"a": [1, 2], "s": ["x", None]}, schema=SCHEMA)
    t = functools.reduce(lambda x, y: And(x, y), [AlwaysTrue()] * 1_500)
    f = functools.reduce(lambda x, y: Or(x, y), [AlwaysFalse()] * 1_500)
    assert filter_table(table, t).num_rows == 2 and filter_table(table, f).num_rows == 0


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_an_empty_filter_is_an_option_error(text):
    with pytest.raises(CarbonOptionError, match="empty filter"):
        parse(text)


@pytest.mark.parametrize("make", [lambda: pa.Table.from_batches([], SCHEMA), lambda: SCHEMA.empty_table(),
                                  lambda: pa.table({"a": [1], "s": ["x"]}, schema=SCHEMA).slice(1)])
def test_a_table_without_rows_filters_to_itself(make):
    # a table of no chunks at all gives pyarrow's kernels nothing to type their result by
    table = make()
    for e in (Compare("a", ">", 1), In("a", (1, 2)), Not(In("s", ("x",))), IsNull("s"), StartsWith("s", "x"),
              Or(Compare("a", "=", 1), Not(NotNull("s")))):
        got = filter_table(table, bind(e, SCHEMA))
        assert got.num_rows == 0 and got.schema == SCHEMA

    @dataclass(frozen=True)
    class Foreign(Expr):
        pass

    with pytest.raises(CarbonError):
        filter_table(table, Foreign())
