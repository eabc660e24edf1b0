"""Write with CarbonWriter, read back with the reader: every type, nulls, boundaries, compressors."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from carbon_ds.readers.carbon_file import read_folder
from carbon_ds.writers import WriterOptions, write_files

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])
UTC = dt.UTC

# CarbonData's null marker @NU#LL$! is an ordinary value in carbon-ds files (see test_null_marker.py)
NULL_TEXT = "@NU#LL$!"
text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12) | st.just(NULL_TEXT)
i64 = st.integers(-(2**63), 2**63 - 1)
dates = st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31))
# whole milliseconds: CarbonData stores epoch ms
stamps = st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1)).map(
    lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000, tzinfo=UTC)
)

SCALARS: dict[str, tuple[pa.DataType, st.SearchStrategy]] = {
    "s": (pa.string(), text),
    "vc": (pa.string(), st.text(max_size=40) | st.just(NULL_TEXT)),
    "bin": (pa.binary(), st.binary(max_size=20) | st.just(NULL_TEXT.encode())),
    "b": (pa.bool_(), st.booleans()),
    "i8": (pa.int8(), st.integers(-128, 127)),
    "i16": (pa.int16(), st.integers(-(2**15), 2**15 - 1)),
    "i32": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "i64": (pa.int64(), i64 | st.sampled_from([-(2**63), 2**63 - 1, 0])),
    "f32": (pa.float32(), st.floats(width=32, allow_nan=False) | st.sampled_from([0.5, -1.25, 3.0])),
    "f64": (pa.float64(), st.floats(allow_nan=False) | st.sampled_from([0.1, -0.0, 2.5, 1e300])),
    "d9": (pa.decimal128(9, 2), st.decimals(min_value=-9999999, max_value=9999999, places=2)),
    "d18": (pa.decimal128(18, 4), st.decimals(min_value=-(10**13), max_value=10**13, places=4)),
    "d30": (pa.decimal128(30, 5), st.decimals(min_value=-(10**22), max_value=10**22, places=5)),
    "date": (pa.date32(), dates),
    "ts": (pa.timestamp("us", tz="UTC"), stamps),
}
NESTED: dict[str, tuple[pa.DataType, st.SearchStrategy]] = {
    "ls": (pa.list_(pa.string()), st.lists(st.none() | text, max_size=4)),
    "li": (pa.list_(pa.int32()), st.lists(st.none() | st.integers(-(2**31), 2**31 - 1), max_size=4)),
    "ld": (pa.list_(pa.float64()), st.lists(st.none() | st.floats(allow_nan=False), max_size=3)),
    "st": (
        pa.struct([("a", pa.int64()), ("b", pa.string()), ("c", pa.date32())]),
        st.fixed_dictionaries({"a": st.none() | i64, "b": st.none() | text, "c": st.none() | dates}),
    ),
    "m": (pa.map_(pa.string(), pa.int64()), st.dictionaries(text, st.none() | i64, max_size=3).map(lambda d: list(d.items()))),
    "nest": (
        pa.list_(pa.struct([("x", pa.list_(pa.int16())), ("y", pa.timestamp("us", tz="UTC"))])),
        st.lists(st.fixed_dictionaries({"x": st.none() | st.lists(st.integers(-5, 5), max_size=3),
                                        "y": st.none() | stamps}), max_size=3),
    ),
}
ALL = {**SCALARS, **NESTED}


def _table(rows: list[dict]) -> pa.Table:
    cols = {k: pa.array([r[k] for r in rows], t) for k, (t, _) in ALL.items()}
    return pa.table(cols)


def row_strategy(nullable: bool = True) -> st.SearchStrategy:
    return st.fixed_dictionaries({k: (st.none() | s) if nullable else s for k, (_, s) in ALL.items()})


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return _same(list(a), list(b))
    return a == b


def roundtrip(tmp_path, table: pa.Table, **opts) -> pa.Table:
    opts.setdefault("long_string_columns", ["vc"] if "vc" in table.column_names else [])
    files = write_files(table, str(tmp_path), options=WriterOptions(**opts))
    if table.num_rows == 0:
        assert files == []
        return table
    return read_folder(str(tmp_path))


def carbondata_keeps(value):
    """A nested value as CarbonData keeps it: innermost first, an array of one null element
    (ArrayQueryType.fillData) and a struct of only null fields (StructQueryType.getDataBasedOnDataType) read as
    null. Map entries (tuples) always have a key."""
    if isinstance(value, list):
        items = [carbondata_keeps(v) for v in value]
        return None if len(items) == 1 and items[0] is None else items
    if isinstance(value, dict):
        fields = {k: carbondata_keeps(v) for k, v in value.items()}
        return None if all(v is None for v in fields.values()) else fields
    if isinstance(value, tuple):
        return tuple(carbondata_keeps(v) for v in value)
    return value


def assert_equal_tables(want: pa.Table, got: pa.Table) -> None:
    got = got.select(want.column_names)
    assert got.num_rows == want.num_rows
    for name in want.column_names:
        w = [carbondata_keeps(v) for v in want.column(name).to_pylist()]
        g = got.column(name).to_pylist()
        for i, (x, y) in enumerate(zip(w, g, strict=True)):
            assert _same(x, y), f"column {name} row {i}: wrote {x!r}, read {y!r}"


@SETTINGS
@given(rows=st.lists(row_strategy(), min_size=0, max_size=30), comp=st.sampled_from(["snappy", "zstd", "gzip"]),
       dictionary=st.booleans())
def test_every_type_round_trips(tmp_path_factory, rows, comp, dictionary):
    table = _table(rows)
    got = roundtrip(tmp_path_factory.mktemp("rt"), table, compressor=comp, local_dictionary_enable=dictionary)
    assert_equal_tables(table, got)


@SETTINGS
@given(rows=st.lists(row_strategy(nullable=False), min_size=1, max_size=40),
       page_rows=st.integers(1, 7), threshold=st.integers(2, 8))
def test_pages_blocklets_and_dictionary_fallback(tmp_path_factory, rows, page_rows, threshold):
    table = _table(rows)
    got = roundtrip(tmp_path_factory.mktemp("rt"), table, page_rows=page_rows, blocklet_size_mb=0.0005,
                    local_dictionary_threshold=threshold)
    assert_equal_tables(table, got)


@pytest.mark.parametrize("values", [
    [-(2**63), 2**63 - 1, 0, None],
    [5, 5, 5],
    [1, 200, 70000, 2**40],
])
def test_extreme_integers(tmp_path, values):
    t = pa.table({"v": pa.array(values, pa.int64())})
    assert_equal_tables(t, roundtrip(tmp_path, t))


def test_special_floats(tmp_path):
    vals = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1.5, None]
    t = pa.table({"d": pa.array(vals, pa.float64()), "f": pa.array(vals, pa.float32())})
    assert_equal_tables(t, roundtrip(tmp_path, t))


def test_page_boundary_exact_32000(tmp_path):
    n = 64001
    t = pa.table({"i": pa.array(range(n), pa.int32()), "s": pa.array([str(i % 97) for i in range(n)])})
    got = roundtrip(tmp_path, t)
    assert got.column("i").to_pylist() == list(range(n))
    assert got.column("s").to_pylist() == [str(i % 97) for i in range(n)]


def test_long_strings_as_varchar(tmp_path):
    big = "x" * 70000
    t = pa.table({"vc": [big, None, "short"]})
    assert_equal_tables(t, roundtrip(tmp_path, t))


def test_empty_input_writes_nothing(tmp_path):
    t = pa.table({"a": pa.array([], pa.int32())})
    assert write_files(t, str(tmp_path)) == []


def test_decimal_wide_values(tmp_path):
    vals = [Decimal("12345678901234567890.12345"), Decimal("-0.00001"), None, Decimal(0)]
    t = pa.table({"d": pa.array(vals, pa.decimal128(30, 5))})
    assert_equal_tables(t, roundtrip(tmp_path, t))
