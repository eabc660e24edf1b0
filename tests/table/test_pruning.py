"""Pruning at every level never loses a row: random tables with tiny pages and blocklets, random
predicates, the pruned read against the oracle ``filter_table(read everything)``; the statistic byte
rules; real CarbonData files; explain / count; sort_scope."""

from __future__ import annotations

import datetime as dt
import math
import shutil
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import carbon_ds
from carbon_ds.api import explain as api_explain
from carbon_ds.cli import main as cli_main
from carbon_ds.errors import CarbonOptionError
from carbon_ds.expressions import (
    Compare,
    In,
    IsNull,
    Not,
    NotIn,
    NotNull,
    StartsWith,
    and_,
    between,
    bind,
    filter_table,
    or_,
    parse,
)
from carbon_ds.format import v3_file
from carbon_ds.format.arrow_types import nest
from carbon_ds.format.pages.stat_bytes import dimension_bytes, measure_bytes
from carbon_ds.format.thrift.structs import ColumnSchema, DataType, Encoding
from carbon_ds.format.v3_file import V3File
from carbon_ds.readers import column_stats as S
from carbon_ds.readers.carbon_file import CarbonDataFile
from carbon_ds.table.loads import plain
from carbon_ds.table.read import planned_reads, pruning
from carbon_ds.table.table import CarbonTable
from carbon_ds.writers.carbon_file_writer import CarbonWriter, WriterOptions

UTC = dt.UTC
SCHEMA = pa.schema(
    [
        ("k", pa.int64()),
        ("i", pa.int32()),
        ("f", pa.float64()),
        ("s", pa.string()),
        ("d", pa.date32()),
        ("t", pa.timestamp("us", tz="UTC")),
        ("m", pa.decimal128(10, 2)),
        ("b", pa.bool_()),
    ]
)
T0 = dt.datetime(2021, 11, 15, tzinfo=UTC)


def _rows(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)

    def nulls(p=0.15):
        return rng.random(n) < p

    k = np.sort(rng.integers(-50, 50, n))
    f = rng.normal(0, 10, n).round(1)
    f[rng.random(n) < 0.05] = np.nan
    words = ["", "a", "ab", "abc", "b", "ba", "zz", "é", "中文", "a\x00b"]
    s = [words[j] for j in rng.integers(0, len(words), n)]
    return pa.table(
        {
            "k": pa.array(k),
            "i": pa.array(rng.integers(-1000, 1000, n).astype(np.int32), mask=nulls()),
            "f": pa.array(f, mask=nulls(0.05)),
            "s": pa.array(s, mask=nulls()),
            "d": pa.array((rng.integers(-400, 400, n) + 18900).astype(np.int32), pa.date32()).cast(pa.date32()),
            "t": pa.array(
                (1_636_934_400_000 + rng.integers(-10**9, 10**9, n)) * 1000, pa.timestamp("us", tz="UTC"),
                mask=nulls(),
            ),
            "m": pa.array([Decimal(int(v)).scaleb(-2) for v in rng.integers(-10**5, 10**5, n)], pa.decimal128(10, 2)),
            "b": pa.array(rng.random(n) < 0.5, mask=nulls()),
        },
        schema=SCHEMA,
    )


def _write_folder(folder, table: pa.Table, page_rows: int, blocklet_mb: float, sort: bool) -> None:
    opts = WriterOptions(page_rows=page_rows, blocklet_size_mb=blocklet_mb, block_size_mb=blocklet_mb * 10,
                         sort_columns=["k"] if sort else [], is_sort=sort)
    w = CarbonWriter(str(folder), SCHEMA, opts)
    w.write(table)
    w.close()


def _same(a: pa.Table, b: pa.Table) -> bool:
    def norm(t):
        return [[("nan" if isinstance(v, float) and math.isnan(v) else v) for v in c.to_pylist()] for c in t.columns]

    return a.schema.equals(b.schema) and norm(a) == norm(b)


# ------------------------------------------------------------------------------ random predicates
def _literal(col: str, draw):
    if col == "k":
        return draw(st.integers(-60, 60))
    if col == "i":
        return draw(st.integers(-1100, 1100) | st.decimals(-1100, 1100, places=1, allow_nan=False))
    if col == "f":
        return draw(st.floats(-40, 40, allow_nan=False).map(lambda v: round(v, 1)))
    if col == "s":
        return draw(st.sampled_from(["", "a", "ab", "abd", "b", "c", "zz", "é", "中", "a\x00"]))
    if col == "d":
        return dt.date(2021, 10, 1) + dt.timedelta(days=draw(st.integers(-500, 500)))
    if col == "t":
        return T0 + dt.timedelta(milliseconds=draw(st.integers(-11**9, 11**9)))
    if col == "m":
        return Decimal(draw(st.integers(-1100, 1100)))
    return draw(st.booleans())


@st.composite
def predicates(draw, depth=2):
    col = draw(st.sampled_from(SCHEMA.names))
    kind = draw(st.sampled_from(["cmp", "cmp", "in", "notin", "null", "notnull", "between", "like", "bool"]))
    if depth > 0 and kind == "bool":
        op = draw(st.sampled_from(["and", "or", "not"]))
        a = draw(predicates(depth=depth - 1))
        if op == "not":
            return Not(a)
        b = draw(predicates(depth=depth - 1))
        return and_(a, b) if op == "and" else or_(a, b)
    if kind == "in":
        return In(col, tuple(_literal(col, draw) for _ in range(draw(st.integers(1, 3)))))
    if kind == "notin":
        return NotIn(col, tuple(_literal(col, draw) for _ in range(draw(st.integers(1, 2)))))
    if kind == "null":
        return IsNull(col)
    if kind == "notnull":
        return NotNull(col)
    if kind == "between":
        lo, hi = sorted([_literal(col, draw), _literal(col, draw)], key=lambda v: (str(type(v)), v))
        return between(col, lo, hi)
    if kind == "like" and col == "s":
        return StartsWith("s", draw(st.sampled_from(["", "a", "ab", "b", "z", "é", "中"])))
    op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
    return Compare(col, op, _literal(col, draw))


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    out = []
    for seed, (n, page, blocklet_mb, sort) in enumerate([(700, 13, 0.002, True), (500, 7, 0.001, False)]):
        folder = tmp_path_factory.mktemp(f"prune{seed}")
        _write_folder(folder, _rows(n, seed), page, blocklet_mb, sort)
        out.append(folder)
    return out


@pytest.fixture(scope="module")
def table_path(tmp_path_factory, folders):
    """A table with several segments (appends), tiny pages and blocklets."""
    path = tmp_path_factory.mktemp("prune_table") / "t"
    mp = pytest.MonkeyPatch()
    original = plain.writer_options

    def small(table, load):
        o = original(table, load)
        o.page_rows, o.blocklet_size_mb = 11, 0.002
        return o

    mp.setattr(plain, "writer_options", small)
    try:
        for seed in range(4):
            carbon_ds.write_table(_rows(300, 10 + seed), path, sort_columns="k")
    finally:
        mp.undo()
    return path


@settings(max_examples=45, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_pruned_read_equals_oracle(folders, table_path, data):
    path = data.draw(st.sampled_from([*folders, table_path]))
    expr = data.draw(predicates())
    full = carbon_ds.read_table(path)
    bound = bind(expr, full.schema)
    expected = filter_table(full, bound)
    counts = planned_reads.pruning.Counts()
    got = planned_reads.read(path, filter=expr, counts=counts)
    assert _same(got, expected), str(expr)
    assert planned_reads.count(path, expr) == expected.num_rows
    report = planned_reads.explain(path, expr)
    for level in ("files", "blocklets", "pages", "rows"):
        r = report[level]
        assert 0 <= r["read"] <= r["total"], (level, r)
    assert report["rows"]["total"] == full.num_rows
    assert report["rows"]["read"] >= expected.num_rows
    assert report["pages"]["read"] == counts.pages_read
    cols = data.draw(st.lists(st.sampled_from(SCHEMA.names), min_size=1, max_size=3, unique=True))
    projected = carbon_ds.read_table(path, columns=cols, filter=str(expr) if _sql_safe(expr) else expr)
    assert _same(projected, expected.select(cols)), str(expr)


def _sql_safe(expr) -> bool:
    text = str(expr)
    return "datetime" not in text and "Decimal" not in text and "date(" not in text and "\\x00" not in text


def test_count_without_filter_reads_no_data(table_path, monkeypatch):
    def boom(*a, **k):
        raise AssertionError("a data page was read")

    monkeypatch.setattr(CarbonDataFile, "read_blocklet", boom)
    assert CarbonTable.open(table_path).count() == 1200
    assert CarbonTable.open(table_path).count("k > 1000") == 0  # every blocklet pruned


def test_point_lookup_skips_most_units(table_path):
    full = carbon_ds.read_table(table_path)
    report = api_explain(table_path, "k = 7")
    assert report["segments"]["total"] == 4
    assert report["blocklets"]["skipped"] > 0.6 * report["blocklets"]["total"]
    assert report["pages"]["read"] <= report["pages"]["total"]
    assert carbon_ds.read_table(table_path, filter="k = 7").num_rows == filter_table(
        full, bind(parse("k = 7"), full.schema)).num_rows


def test_cli_explain(table_path, capsys):
    assert cli_main(["explain", str(table_path), "--filter", "k < -45"]) == 0
    out = capsys.readouterr().out
    assert "blocklets" in out and "skipped" in out
    assert cli_main(["explain", str(table_path), "--filter", "nope ="]) == 2


def test_filter_errors_name_the_problem(table_path):
    with pytest.raises(CarbonOptionError, match="zzz"):
        carbon_ds.read_table(table_path, filter="zzz = 1")
    with pytest.raises(CarbonOptionError, match="LIKE expects a string"):
        carbon_ds.read_table(table_path, filter="k like '%a'")
    with pytest.raises(CarbonOptionError, match="operator"):
        carbon_ds.read_table(table_path, filter=[("k", "~", 1)])


def test_python_object_filters(table_path):
    full = carbon_ds.read_table(table_path)
    a = carbon_ds.read_table(table_path, filter=[("k", ">=", 3), ("s", "in", ["a", "b"])])
    b = carbon_ds.read_table(table_path, filter="k >= 3 AND s IN ('a', 'b')")
    assert _same(a, b) and a.num_rows == filter_table(full, bind(parse("k >= 3 AND s IN ('a','b')"), full.schema)).num_rows
    c = carbon_ds.read_table(table_path, filter=[[("k", "<", -40)], [("k", ">", 40)]])
    assert c.num_rows == filter_table(full, bind(parse("k < -40 OR k > 40"), full.schema)).num_rows


# ------------------------------------------------------------------------------ byte rules
def _col(t: DataType, dim: bool, encoders=(), name="c", scale=None) -> ColumnSchema:
    return ColumnSchema(data_type=t, column_name=name, column_id=name, columnar=True, encoders=list(encoders),
                        dimension=dim, scale=scale, precision=10 if scale is not None else None, num_child=0)


@pytest.mark.parametrize(
    "t, dim, lo, hi",
    [
        (DataType.INT, True, -5, 7),
        (DataType.LONG, True, -(2**62), 2**62),
        (DataType.SHORT, True, -300, -2),
        (DataType.INT, False, -5, 7),
        (DataType.LONG, False, -(2**62), 3),
        (DataType.BYTE, False, -3, 9),
        (DataType.DECIMAL, False, Decimal("-1.25"), Decimal("99.50")),
    ],
)
def test_stats_round_trip(t, dim, lo, hi):
    if dim:
        lo_b, hi_b = dimension_bytes(t, lo), dimension_bytes(t, hi)
    else:
        lo_b, hi_b = measure_bytes(t, lo, 2), measure_bytes(t, hi, 2)
    s = S.column_stats(_col(t, dim), lo_b, hi_b, True, 10)
    assert (s.min, s.max) == (lo, hi)
    assert s.null_count is None  # CarbonData keeps no null counts


def test_stats_timestamp_date_string_float():
    ts = S.column_stats(_col(DataType.TIMESTAMP, True), dimension_bytes(DataType.TIMESTAMP, -1500),
                        dimension_bytes(DataType.TIMESTAMP, 1_636_934_400_123), True, 1)
    assert ts.min == dt.datetime(1969, 12, 31, 23, 59, 58, 500000, tzinfo=UTC)
    assert ts.max == dt.datetime(2021, 11, 15, 0, 0, 0, 123000, tzinfo=UTC)
    key = 18_000 + 1_073_741_823
    d = S.column_stats(_col(DataType.DATE, True, [Encoding.DIRECT_DICTIONARY, Encoding.DICTIONARY]),
                       key.to_bytes(4, "big"), (key + 1).to_bytes(4, "big"), True, 1)
    assert d.min == dt.date(1970, 1, 1) + dt.timedelta(days=18_000)
    s = S.column_stats(_col(DataType.STRING, True), "é".encode(), "中".encode(), True, 1)
    assert (s.min, s.max) == ("é", "中")
    bad = S.column_stats(_col(DataType.STRING, True), b"\xff", b"\xff\xfe", True, 1)
    assert (bad.min, bad.max) == (None, None)
    f = S.column_stats(_col(DataType.DOUBLE, False), measure_bytes(DataType.DOUBLE, 1.0),
                       measure_bytes(DataType.DOUBLE, 2.0), True, 1)
    assert (f.min, f.max) == (1.0, None)  # NaN may hide above the max
    nan = S.column_stats(_col(DataType.DOUBLE, False), measure_bytes(DataType.DOUBLE, float("nan")),
                         measure_bytes(DataType.DOUBLE, 2.0), True, 1)
    assert nan.min is None
    absent = S.column_stats(_col(DataType.INT, False), measure_bytes(DataType.INT, 1),
                            measure_bytes(DataType.INT, 2), False, 1)
    assert (absent.min, absent.max) == (None, None)
    empty = S.column_stats(_col(DataType.STRING, True), b"", b"x", True, 1)
    assert empty.min is None and empty.max == "x"
    odd = S.column_stats(_col(DataType.LONG, False), b"\x00\x01", b"\x00\x02", True, 1)
    assert (odd.min, odd.max) == (None, None)


def test_untrusted_columns():
    cols = [
        _col(DataType.ARRAY, True, name="a"),
        _col(DataType.STRING, True, name="a.val"),
        _col(DataType.STRING, True, [Encoding.DICTIONARY], name="g"),
        _col(DataType.BINARY, True, name="bin"),
        _col(DataType.TIMESTAMP, True, [Encoding.DIRECT_DICTIONARY, Encoding.DICTIONARY], name="oldts"),
        _col(DataType.INT, False, name="ok"),
    ]
    cols[0].num_child = 1
    assert S.trusted_columns(cols) == [False, False, False, False, False, True]
    # from an open file's nested columns: the same answer, and a table column the file lacks is no column
    added = _col(DataType.INT, False, name="added")
    nodes = nest(cols) + nest([added])
    assert S.trusted_nodes(nodes, cols) == [False, False, False, False, False, True]


def test_merge_unknown_stays_unknown():
    a = {"x": S.ColumnStats(1, 5, None, 3)}
    b = {"x": S.ColumnStats(None, 9, None, 2)}
    m = S.merge([a, b])["x"]
    assert (m.min, m.max, m.row_count) == (None, 9, 5)
    assert S.merge([a, {}]) == {}


# ------------------------------------------------------------------------------ real files
REAL_FILTERS = {
    "sdk-1.3-name-age-a": ["age > 50", "age = 0", "name = 'robot7'", "name like 'robot9%'", "age < 0"],
    "sdk-1.6-all-types": [
        "stringfield = 'robot3'", "stringfield > 'robot5'", "shortfield >= 5", "intfield < 2",
        "longfield > 9223372036854775800", "doublefield > 4.4", "doublefield < 0", "boolfield = true",
        "boolfield = false", "decimalfield = 12.35", "decimalfield > 12.35", "datefield = DATE '2019-03-02'",
        "datefield > DATE '2019-03-02'", "timefield < TIMESTAMP '2019-02-01 00:00:00'",
        "timefield >= TIMESTAMP '2019-02-01 00:00:00'", "varcharfield = 'varchar'", "varcharfield <> 'varchar'",
        "intfield is null", "intfield is not null",
    ],
    "sdk-1.6-mnist-test": ["digit = 3", "idx between 100 and 110", "digit > 9", "idx < 0"],
    "sdk-2.0-arrays": ["name = 'bob'", "age = 10", "age > 10", "name like 'b%'"],
    "sdk-1.6-binary": ["age > 3", "name = 'robot1'"],
}


@pytest.mark.parametrize("folder", sorted(REAL_FILTERS))
def test_real_files_prune_exactly(corpus, folder):
    path = corpus / folder
    full = carbon_ds.read_table(path)
    for text in REAL_FILTERS[folder]:
        expected = filter_table(full, bind(parse(text), full.schema))
        got = carbon_ds.read_table(path, filter=text)
        assert _same(got, expected), text
        assert planned_reads.count(path, text) == expected.num_rows, text


def test_real_files_prune_skips(corpus):
    report = api_explain(corpus / "sdk-1.3-name-age-b", "age > 500")
    assert report["files"]["read"] == 0 and report["files"]["total"] == 2
    assert carbon_ds.read_table(corpus / "sdk-1.3-name-age-b", filter="age > 500").num_rows == 0


def test_real_global_dictionary_table_prunes_measures_only(corpus, tmp_path):
    src = corpus / "table-1.1-global-dictionary"
    path = tmp_path / "t"
    shutil.copytree(src, path)
    full = carbon_ds.read_table(path)
    for text in ["salary > 15000", "id = 3", "id < 0"]:
        expected = filter_table(full, bind(parse(text), full.schema))
        assert _same(carbon_ds.read_table(path, filter=text), expected), text
    for col in [f.name for f in full.schema if pa.types.is_string(f.type)]:
        value = full.column(col)[0].as_py()
        text = f"{col} = '{value}'"
        expected = filter_table(full, bind(parse(text), full.schema))
        assert expected.num_rows > 0
        assert _same(carbon_ds.read_table(path, filter=text), expected), text


# ------------------------------------------------------------------------------ sort scope
def _footers(path):
    table = CarbonTable.open(path)
    out = []
    for f in table.files():
        with CarbonDataFile(f.path) as cf:
            out.append(cf)
    return out


@pytest.mark.parametrize("scope, sorted_", [("LOCAL_SORT", True), ("no_sort", False), (None, True)])
def test_sort_scope(tmp_path, scope, sorted_):
    rng = np.random.default_rng(3)
    data = pa.table({"a": pa.array(rng.integers(0, 1000, 5000)), "z": pa.array(rng.integers(0, 9, 5000))})
    opts = {"sort_columns": "z,a"}
    if scope:
        opts["sort_scope"] = scope
    carbon_ds.write_table(data, tmp_path / "t", **opts)
    got = carbon_ds.read_table(tmp_path / "t")
    (f,) = _footers(tmp_path / "t")
    assert [c.column_name for c in f.columns][:2] == ["z", "a"]  # sort columns lead
    assert bool(f.footer.is_sort) is sorted_
    if sorted_:
        assert got.equals(data.sort_by([("z", "ascending"), ("a", "ascending")]))
        assert CarbonTable.open(tmp_path / "t").properties["sort_scope"] == (scope or "local_sort").lower()
    else:
        assert got.equals(data)


def test_sort_scope_option_is_validated(tmp_path):
    with pytest.raises(CarbonOptionError, match="sort_scope"):
        carbon_ds.write_table(pa.table({"a": [1]}), tmp_path / "t", sort_columns="a", sort_scope="global_sort")


def test_sort_scope_per_load(tmp_path):
    data = pa.table({"a": pa.array([3, 1, 2])})
    carbon_ds.write_table(data, tmp_path / "t", sort_columns="a")
    carbon_ds.write_table(data, tmp_path / "t", sort_scope="no_sort")
    assert carbon_ds.read_table(tmp_path / "t").column("a").to_pylist() == [1, 2, 3, 3, 1, 2]


def test_index_files_prune_without_opening_data_files(table_path, monkeypatch):
    """Planning takes file and blocklet min/max from the .carbonindex files: a filter no index entry can match
    opens no data file at all (a footer fallback would open every file)."""
    opened = []
    real = pruning._footer_entry

    def counting(storage, path, table_columns=None):
        opened.append(path)
        return real(storage, path, table_columns)

    monkeypatch.setattr(pruning, "_footer_entry", counting)
    monkeypatch.setattr(CarbonDataFile, "read_blocklet", lambda *a, **k: pytest.fail("a data page was read"))
    report = api_explain(table_path, "k > 1000")
    assert opened == []
    assert report["files"]["read"] == 0 and report["files"]["total"] > 0


def test_a_pruned_read_of_a_local_file_reads_only_its_pages(tmp_path, monkeypatch):
    # one blocklet of 20 pages sorted by k: a lookup keeps one page, so it reads the chunk headers and that
    # page's bytes of each column, not the whole chunks
    n = 20 * 500
    table = pa.table({"k": pa.array(range(n), pa.int64()), "v": pa.array([f"value {i}" for i in range(n)])})
    original = plain.writer_options

    def pages_of_500(t, load):
        o = original(t, load)
        o.page_rows = 500
        return o

    monkeypatch.setattr(plain, "writer_options", pages_of_500)
    carbon_ds.write_table(table, tmp_path / "t", sort_columns="k")
    monkeypatch.undo()
    [path] = (tmp_path / "t").rglob("*.carbondata")
    read: list[int] = []
    real_read = V3File._read

    def counting(self, offset, length):
        read.append(length)
        return real_read(self, offset, length)

    monkeypatch.setattr(V3File, "_read", counting)
    # a file up to WHOLE_FILE_BYTES is read in one call on opening (one read costs less than seven)
    got = carbon_ds.read_table(tmp_path / "t", filter="k = 7001")
    assert got.to_pylist() == [{"k": 7001, "v": "value 7001"}]
    assert read[0] == path.stat().st_size  # the later calls slice those bytes
    # past that size, a lookup reads the chunk headers and its page's bytes, not the whole chunks
    monkeypatch.setattr(v3_file, "WHOLE_FILE_BYTES", 0)
    read.clear()
    got = carbon_ds.read_table(tmp_path / "t", filter="k = 7001")
    assert got.to_pylist() == [{"k": 7001, "v": "value 7001"}]
    with CarbonDataFile(str(path)) as f:
        chunks = sum(f._v3._chunk_span(0, c)[1] - f._v3._chunk_span(0, c)[0] for c in range(len(f.columns)))
    assert sum(read) < path.stat().st_size - chunks + chunks / 5, (sum(read), chunks)
    assert carbon_ds.read_table(tmp_path / "t", filter="k >= 2990 and k < 3010")["k"].to_pylist() == list(
        range(2990, 3010))  # two neighbouring pages, one read


def test_not_of_a_float_comparison_keeps_pages_with_nan(tmp_path):
    """NOT (f > v) holds on NaN (a comparison with NaN is false) where f <= v does not: a page whose
    numbers are all above v but which holds a NaN must be read. Oracle: filter_table over the full read."""
    folder = tmp_path / "nan"
    rows = _rows(60, 3).set_column(2, "f", pa.array([float("nan") if j % 13 == 5 else 1.0 + j for j in range(60)]))
    _write_folder(folder, rows, 7, 0.001, False)
    for expr in (Not(Compare("f", ">", 0.5)), Not(Compare("f", ">=", 1))):
        full = carbon_ds.read_table(str(folder))
        expected = filter_table(full, bind(expr, full.schema))
        got = planned_reads.read(str(folder), filter=expr)
        assert _same(got, expected), str(expr)
        assert any(v != v for v in expected.column("f").to_pylist() if v is not None), str(expr)
