"""conform.unscaled_decimals: a decimal of at most 18 digits as its unscaled int64, checked against the
decimal arithmetic of Python's own Decimal (value * 10**scale) on random values, nulls and slices."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from carbon_ds.errors import CarbonSchemaError
from carbon_ds.table.meta.schema.conform import unscaled_decimals


@st.composite
def decimal_columns(draw):
    precision = draw(st.integers(1, 18))
    scale = draw(st.integers(0, precision))
    bound = 10**precision - 1
    ints = draw(st.lists(st.one_of(st.none(), st.integers(-bound, bound)), max_size=60))
    start = draw(st.integers(0, len(ints)))
    length = draw(st.integers(0, len(ints) - start))
    return precision, scale, ints, start, length


@settings(max_examples=200, deadline=None)
@given(decimal_columns())
def test_unscaled_value_is_value_times_ten_to_the_scale(case):
    precision, scale, ints, start, length = case
    values = [None if i is None else Decimal(i).scaleb(-scale) for i in ints]
    arr = pa.array(values, pa.decimal128(precision, scale))
    # a sliced chunk beside a whole one: offsets and validity bitmaps must line up
    other = pa.chunked_array([pa.array(range(len(ints)), pa.int32()), pa.array(range(length), pa.int32())])
    table = pa.table({"d": pa.chunked_array([arr, arr.slice(start, length)], arr.type), "k": other})
    out = unscaled_decimals(table, ["D"])
    expected = [None if v is None else int(v.scaleb(scale)) for v in values + values[start : start + length]]
    assert out.column("d").type == pa.int64()
    assert out.column("d").to_pylist() == expected
    assert out.column("k").equals(table.column("k"))


@pytest.mark.parametrize("t", [pa.decimal128(19, 2), pa.decimal128(38, 0), pa.int64(), pa.float64()])
def test_only_decimals_of_at_most_18_digits(t):
    table = pa.table({"x": pa.array([None], t)})
    with pytest.raises(CarbonSchemaError, match="'x'.*at most 18 digits"):
        unscaled_decimals(table, ["x"])
