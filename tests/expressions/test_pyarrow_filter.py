"""pyarrow.compute.Expression filters: translated results equal pyarrow.dataset's own filtering, on a table
with nulls in every column; other expressions are evaluated by pyarrow, nested fields refused."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

import carbon_ds
from carbon_ds.errors import CarbonFilterError
from carbon_ds.expressions import bind, filter_table
from carbon_ds.expressions.objects import to_expr

f = pc.field

DATA = pa.table({
    "i": pa.array([1, 2, None, 4, 5, 6, None, 8], pa.int32()),
    "x": pa.array([0.5, None, 2.5, 3.5, -1.0, 0.0, float("nan"), None]),
    "s": pa.array(["a", "b", None, "it's", "b", "", "z", None]),
    "d": pa.array([dt.date(2020, 1, k) for k in range(1, 9)]),
    "t": pa.array([dt.datetime(2021, 5, 1, k, tzinfo=dt.UTC) for k in range(8)], pa.timestamp("us", tz="UTC")),
    "m": pa.array([Decimal("1.10"), None, Decimal("-2.00"), Decimal("3.33"), None, Decimal("0.00"),
                   Decimal("7.50"), Decimal("1.10")], pa.decimal128(9, 2)),
    "b": pa.array([True, False, None, True, True, False, None, False]),
})

FORMS = [
    f("i") == 4, f("i") != 4, f("i") < 5, f("i") <= 5, f("i") > 2, f("i") >= 6, 5 > f("i"), 2 <= f("i"),
    f("x") > 0.5, f("x") <= 2.5, f("s") == "b", f("s") != "b", f("s") > "b", f("s") == "it's",
    f("d") >= dt.date(2020, 1, 4), f("t") < dt.datetime(2021, 5, 1, 3, tzinfo=dt.UTC), f("m") == Decimal("1.10"),
    f("m") > Decimal("0"), f("b") == True,  # noqa: E712
    f("i").isin([1, 4, 8]), f("i").isin([1, None]), f("s").isin(["a", "z", None]), f("s").isin(pa.array([], pa.string())),
    ~f("i").isin([1, 4]), ~f("s").isin(["a", None]), f("i").is_null(), f("s").is_valid(), ~f("x").is_null(),
    (f("i") > 1) & (f("s") == "b"), (f("i") > 5) | f("s").is_null(), ~((f("i") > 1) & (f("x") < 3)),
    ~(f("i") > 4), ~~(f("i") == 2), ((f("i") < 3) | (f("i") > 6)) & ~f("s").isin(["a"]),
    (f("d") < dt.date(2020, 1, 3)) | (f("m") <= Decimal("-1")) | f("b").is_null(),
    f("i").isin([1, 4]) & f("x").is_valid() | (f("s") != "z"),
    # pyarrow's is_in matches NaN with NaN, where == does not
    f("x").isin([float("nan"), 0.5]), f("x").isin([float("nan")]), ~f("x").isin([float("nan"), None]),
    f("x") == float("nan"), f("x") > 1.0, ~(f("x") <= 1.0),
]


def _rows(table: pa.Table) -> list[tuple]:
    """The rows with NaN spelled out: Table.equals calls a NaN unequal to itself."""
    return [tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row.values())
            for row in table.to_pylist()]


@pytest.mark.parametrize("expr", FORMS, ids=[str(e) for e in FORMS])
def test_filter_equals_pyarrow_dataset(expr):
    expected = ds.dataset(DATA).to_table(filter=expr)
    got = filter_table(DATA, bind(to_expr(expr), DATA.schema))
    assert got.schema == expected.schema and _rows(got) == _rows(expected), (str(expr), str(to_expr(expr)))


def test_scan_and_read_table_take_pyarrow_filters(tmp_path):
    path = str(tmp_path / "t")
    carbon_ds.write_table(DATA, path, sort_columns="i")
    carbon_ds.write_table(DATA, path)
    oracle = ds.dataset(pa.concat_tables([DATA, DATA]))
    for expr in FORMS:
        expected = oracle.to_table(filter=expr)
        got = carbon_ds.scan(path, filter=expr).to_arrow()
        assert _rows(got.sort_by("t")) == _rows(expected.sort_by("t")), str(expr)
        assert carbon_ds.read_table(path, filter=expr).num_rows == expected.num_rows


# what has no node of our own is kept whole and evaluated by pyarrow: the rows are still pyarrow's
COMPUTED = [
    f("i") + 1 > 2, f("i") == f("x"), f("i") == None,  # noqa: E711
    f("x").is_null(nan_is_null=True), pc.starts_with(f("s"), "a"), f("i").cast(pa.int64()) > 1,
    (f("i") > 2) & (pc.utf8_length(f("s")) == 1), pc.multiply(f("i"), 2) >= f("m").cast(pa.float64()),
]


@pytest.mark.parametrize("expr", COMPUTED, ids=[str(e) for e in COMPUTED])
def test_other_pyarrow_expressions_are_evaluated_by_pyarrow(expr, tmp_path):
    expected = ds.dataset(DATA).to_table(filter=expr)
    got = filter_table(DATA, bind(to_expr(expr), DATA.schema))
    assert _rows(got) == _rows(expected), str(expr)
    path = str(tmp_path / "t")
    carbon_ds.write_table(DATA, path)
    assert _rows(carbon_ds.read_table(path, filter=expr)) == _rows(expected)


def test_nested_fields_and_unknown_columns_are_named():
    with pytest.raises(CarbonFilterError, match="nested"):
        to_expr(pc.field(("s", "y")) == 1)
    with pytest.raises(CarbonFilterError, match="'nope'.*did you mean"):
        bind(to_expr(pc.utf8_length(f("nope")) > 1), DATA.schema.append(pa.field("nop", pa.int32())))


@pytest.mark.parametrize(("expr", "whole"), [
    (f("i").is_valid(), True),  # keeps 6 of 8, at the line: 3/4 of the rows
    (f("i") > 1, False),  # 5 of 8: the rows are copied out
    (f("s").is_null(), False),
])
def test_a_loose_filter_copies_rows_out_only_below_its_share(expr, whole):
    """``copy_below`` (a caller that filters again downstream): the table comes back whole when the predicate
    keeps at least that share of its rows, else exactly pyarrow.dataset's rows."""
    e = bind(to_expr(expr), DATA.schema)
    exact = ds.dataset(DATA).to_table(filter=expr)
    rows = repr(exact.to_pydict())  # as text: a NaN equals itself
    got = filter_table(DATA, e, copy_below=0.75)
    if whole:
        assert got is DATA
    else:
        assert repr(got.to_pydict()) == rows
    assert repr(filter_table(DATA, e).to_pydict()) == rows
