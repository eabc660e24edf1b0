"""Comparisons of decimal columns of up to 18 digits with a literal, evaluated on their unscaled int64
values, give pyarrow's answers (the oracle: pyarrow's decimal comparison kernels) for every operator, with
nulls, sliced chunks and literals the column's scale cannot hold exactly."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from carbon_ds.expressions import Compare, bind, filter_table
from carbon_ds.expressions.bind import _decimal_compare, unscaled_int64

OPS = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
       ">=": pc.greater_equal}


def column(seed: int, typ: pa.Decimal128Type) -> pa.ChunkedArray:
    rng = np.random.default_rng(seed)
    values = [None if rng.random() < 0.1 else Decimal(int(v)).scaleb(-typ.scale)
              for v in rng.integers(-3000, 3000, 700)]
    arr = pa.array(values, typ)
    # a sliced chunk without nulls, a whole one with them, a sliced one starting mid-byte with them
    return pa.chunked_array([arr.slice(0, 3).fill_null(0), arr.slice(3, 400), arr.slice(403, 297)])


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("typ", [pa.decimal128(15, 2), pa.decimal128(18, 0), pa.decimal128(9, 4)])
def test_decimal_compare_equals_pyarrow(op, typ):
    col = column(3, typ)
    unscaled = unscaled_int64(col)
    assert unscaled.to_pylist() == [None if v is None else int(v.scaleb(typ.scale)) for v in col.to_pylist()]
    for literal in (Decimal("0"), Decimal(17).scaleb(-typ.scale), Decimal(-2999).scaleb(-typ.scale), 5):
        want = OPS[op](col, pa.scalar(Decimal(literal)))
        got = _decimal_compare(unscaled, op, literal, typ.scale)
        assert got.equals(want), (op, literal)


def test_literals_and_values_it_does_not_take_go_to_pyarrow():
    col = pa.chunked_array([pa.array([Decimal("1.25"), Decimal("1.30")], pa.decimal128(15, 2))])
    unscaled = unscaled_int64(col)
    assert _decimal_compare(unscaled, "<", Decimal("1.255"), 2) is None  # not exact at scale 2
    assert _decimal_compare(unscaled, "<", Decimal(2) ** 70, 2) is None  # beyond int64 unscaled
    assert _decimal_compare(unscaled, "<", 1.5, 2) is None  # a float literal
    # a slot whose 16 bytes hold more than int64 (its high word is not the low word's sign)
    wide = pa.Array.from_buffers(pa.decimal128(18, 0), 2, [None, pa.py_buffer(np.array([5, 0, 7, 1], np.int64))])
    assert unscaled_int64(pa.chunked_array([wide])) is None
    wide_table = pa.table({"w": pa.chunked_array([wide])})
    assert filter_table(wide_table, bind(Compare("w", ">", 6), wide_table.schema))["w"].to_pylist() == [
        wide.to_pylist()[1]]
    # and the filter still answers those exactly, through pyarrow
    table = pa.table({"d": col})
    got = filter_table(table, bind(Compare("d", "<", Decimal("1.255")), table.schema))
    assert got["d"].to_pylist() == [Decimal("1.25")]


def test_filter_table_with_decimal_ranges_equals_pyarrow():
    typ = pa.decimal128(15, 2)
    table = pa.table({"d": column(5, typ).combine_chunks(), "e": column(6, typ).combine_chunks()})
    assert unscaled_int64(table["d"]) is not None  # compared as int64
    expr = bind(Compare("d", ">=", Decimal("0.05")) & Compare("d", "<=", Decimal("7.00"))
                & Compare("e", "<", Decimal("24")), table.schema)
    want = table.filter((pc.field("d") >= Decimal("0.05")) & (pc.field("d") <= Decimal("7.00"))
                        & (pc.field("e") < Decimal("24")))
    assert filter_table(table, expr).equals(want)
