"""The predicate model: parsing, binding, exact filtering against a hand-written SQL oracle, and the
min/max visitor's one promise: it never rules out a unit that holds a matching row."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from carbon_ds.errors import CarbonOptionError
from carbon_ds.expressions import (
    And,
    ColumnStats,
    Compare,
    In,
    IsNull,
    Not,
    NotIn,
    NotNull,
    Or,
    StartsWith,
    and_,
    bind,
    filter_table,
    might_match,
    or_,
    parse,
    push_not,
)

SCHEMA = pa.schema([("i", pa.int64()), ("f", pa.float64()), ("s", pa.string()), ("d", pa.date32())])


@pytest.mark.parametrize(
    "text, expected",
    [
        ("i = 1", Compare("i", "=", 1)),
        ("I <> 1", Compare("I", "!=", 1)),
        ("3 <= i", Compare("i", ">=", 3)),
        ("i in (1, 2)", In("i", (1, 2))),
        ("i not in (1)", NotIn("i", (1,))),
        ("s is null", IsNull("s")),
        ("s IS NOT NULL", NotNull("s")),
        ("s like 'ab%'", StartsWith("s", "ab")),
        ("s = 'it''s'", Compare("s", "=", "it's")),
        ("i between 1 and 2", And(Compare("i", ">=", 1), Compare("i", "<=", 2))),
        ("not i = 1 or (s = 'a' and f > 1.5)",
         Or(Not(Compare("i", "=", 1)), And(Compare("s", "=", "a"), Compare("f", ">", Decimal("1.5"))))),
        ("d = DATE '2021-11-23'", Compare("d", "=", dt.date(2021, 11, 23))),
        ("`a b` = 1e3", Compare("a b", "=", 1000.0)),
    ],
)
def test_parse(text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("i = ", "expected a value"),
        ("i = NULL", "IS NULL"),
        ("s like ", "expected a value"),
        ("i = 1 extra", "unexpected 'extra'"),
        ("(i = 1", r"expected \)"),
        ("i ~ 1", "unexpected '~"),
        ("i = j +", "expected a value"),
        ("cast(i as nonsense)", "unknown type 'nonsense'"),
        ("d = DATE 'yesterday'", "invalid DATE"),
    ],
)
def test_parse_errors(text, message):
    with pytest.raises(CarbonOptionError, match=message) as e:
        parse(text)
    assert "position" in str(e.value)


def test_bind_errors_name_the_column():
    with pytest.raises(CarbonOptionError, match="'nope', which is not in the table"):
        bind(parse("nope = 1"), SCHEMA)
    with pytest.raises(CarbonOptionError, match=r"column 'i' \(int64\): expected a number, found 'x'"):
        bind(parse("i = 'x'"), SCHEMA)
    with pytest.raises(CarbonOptionError, match="LIKE needs a string column"):
        bind(parse("i like 'a%'"), SCHEMA)


def test_bind_is_case_insensitive_and_coerces():
    e = bind(parse("I = 2.0 and D = '2021-01-02'"), SCHEMA)
    assert e == And(Compare("i", "=", Decimal("2.0")), Compare("d", "=", dt.date(2021, 1, 2)))


# ---------------------------------------------------------------- an independent oracle: SQL 3VL by hand


def _oracle(e, row) -> bool | None:
    if isinstance(e, And):
        a, b = _oracle(e.left, row), _oracle(e.right, row)
        return False if a is False or b is False else (None if a is None or b is None else True)
    if isinstance(e, Or):
        a, b = _oracle(e.left, row), _oracle(e.right, row)
        return True if a is True or b is True else (None if a is None or b is None else False)
    if isinstance(e, Not):
        v = _oracle(e.child, row)
        return None if v is None else not v
    x = row[e.column]
    if isinstance(e, IsNull):
        return x is None
    if isinstance(e, NotNull):
        return x is not None
    if x is None:
        return None
    if isinstance(e, StartsWith):
        return x.startswith(e.prefix)
    if isinstance(e, In):
        return any(x == v for v in e.values)
    if isinstance(e, NotIn):
        return all(x != v for v in e.values)
    v = e.value
    return {"=": x == v, "!=": x != v, "<": x < v, "<=": x <= v, ">": x > v, ">=": x >= v}[e.op]


ints = st.one_of(st.none(), st.integers(-5, 5))
strs = st.one_of(st.none(), st.sampled_from(["", "a", "ab", "abc", "b", "ba", "é", "z"]))
rows = st.lists(st.tuples(ints, strs), min_size=0, max_size=12)
int_leaf = st.one_of(
    st.builds(Compare, st.just("i"), st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), st.integers(-6, 6)),
    st.builds(In, st.just("i"), st.lists(st.integers(-6, 6), min_size=1, max_size=3).map(tuple)),
    st.builds(NotIn, st.just("i"), st.lists(st.integers(-6, 6), min_size=1, max_size=3).map(tuple)),
    st.builds(IsNull, st.just("i")),
    st.builds(NotNull, st.just("i")),
)
str_leaf = st.one_of(
    st.builds(Compare, st.just("s"), st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
              st.sampled_from(["", "a", "ab", "b", "c", "é"])),
    st.builds(StartsWith, st.just("s"), st.sampled_from(["", "a", "ab", "b", "x"])),
    st.builds(IsNull, st.just("s")),
)
predicates = st.recursive(
    st.one_of(int_leaf, str_leaf),
    lambda inner: st.one_of(st.builds(And, inner, inner), st.builds(Or, inner, inner), st.builds(Not, inner)),
    max_leaves=6,
)
SMALL = pa.schema([("i", pa.int64()), ("s", pa.string())])


def _stats(table: pa.Table):
    def lookup(col: str) -> ColumnStats:
        arr = table[col]
        mm = pc.min_max(arr)
        return ColumnStats(mm["min"].as_py(), mm["max"].as_py(), arr.null_count, table.num_rows)

    return lookup


@settings(max_examples=400, deadline=None)
@given(data=rows, pred=predicates)
def test_exact_filter_matches_oracle_and_pruning_never_loses_rows(data, pred):
    table = pa.table({"i": [r[0] for r in data], "s": [r[1] for r in data]}, schema=SMALL)
    e = bind(pred, SMALL)
    got = filter_table(table, e).to_pylist()
    want = [r for r in table.to_pylist() if _oracle(pred, r) is True]
    assert got == want
    if want:
        assert might_match(e, _stats(table)), f"{pred} pruned a unit holding {want}"


@settings(max_examples=50, deadline=None)
@given(data=rows, pred=predicates)
def test_a_predicate_too_large_for_one_arrow_expression_filters_the_same(data, pred):
    # (i IS NULL OR i IS NOT NULL) is TRUE on every row, so ANDing 600 of them changes no answer; it only takes
    # the tree past the size at which filter_table evaluates node by node instead of as one pyarrow expression
    table = pa.table({"i": [r[0] for r in data], "s": [r[1] for r in data]}, schema=SMALL)
    big = and_(pred, or_(*[IsNull("i"), NotNull("i")] * 600))
    want = [r for r in table.to_pylist() if _oracle(pred, r) is True]
    assert filter_table(table, bind(big, SMALL)).to_pylist() == want


@settings(max_examples=200, deadline=None)
@given(pred=predicates)
def test_push_not_keeps_meaning(pred):
    table = pa.table({"i": [None, -3, 0, 2, 5], "s": [None, "a", "ab", "b", "é"]}, schema=SMALL)
    assert filter_table(table, bind(push_not(pred), SMALL)).to_pylist() == filter_table(table, bind(pred, SMALL)).to_pylist()


def test_min_max_rules_by_hand():
    s = {"x": ColumnStats(min=10, max=20, null_count=0, row_count=5)}.get
    assert not might_match(Compare("x", "<", 10), s)
    assert might_match(Compare("x", "<=", 10), s)
    assert not might_match(Compare("x", ">", 20), s)
    assert not might_match(Compare("x", "=", 21), s)
    assert might_match(Compare("x", "!=", 15), s)
    assert not might_match(In("x", (1, 2, 30)), s)
    assert not might_match(IsNull("x"), s)
    assert might_match(Compare("unknown", "=", 1), s)
    same = {"x": ColumnStats(min=7, max=7, null_count=0, row_count=3)}.get
    assert not might_match(Compare("x", "!=", 7), same)
    assert not might_match(NotIn("x", (7,)), same)
    nulls = {"x": ColumnStats(min=None, max=None, null_count=3, row_count=3)}.get
    assert not might_match(Compare("x", "=", 1), nulls) and might_match(IsNull("x"), nulls)
    assert not might_match(NotNull("x"), nulls)
    absent = {"x": ColumnStats()}.get  # presence false: must scan
    assert might_match(Compare("x", "=", 1), absent) and might_match(NotNull("x"), absent)


def test_nan_and_signed_zero_never_prune():
    s = {"f": ColumnStats(min=-1.0, max=math.nan, null_count=0, row_count=2)}.get
    assert might_match(Compare("f", ">", 100.0), s)
    z = {"f": ColumnStats(min=-0.0, max=0.0)}.get
    assert might_match(Compare("f", "=", 0.0), z) and might_match(Compare("f", "=", -0.0), z)
    assert might_match(Compare("f", "=", math.nan), z)


def test_string_prefix_pruning():
    s = {"s": ColumnStats(min="apple", max="banana")}.get
    assert might_match(StartsWith("s", "b"), s) and might_match(StartsWith("s", "ap"), s)
    assert not might_match(StartsWith("s", "c"), s) and not might_match(StartsWith("s", "aa"), s)


def test_timestamps_and_dates():
    ts = dt.datetime(2021, 11, 23, 12, tzinfo=dt.UTC)
    s = {"t": ColumnStats(min=ts, max=ts + dt.timedelta(hours=1))}.get
    e = bind(parse("t > TIMESTAMP '2021-11-23 13:00:01'"), pa.schema([("t", pa.timestamp("us", tz="UTC"))]))
    assert not might_match(e, s)
    e = bind(parse("t >= '2021-11-23 13:00:00'"), pa.schema([("t", pa.timestamp("us", tz="UTC"))]))
    assert might_match(e, s)
