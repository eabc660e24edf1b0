"""Polars and DuckDB over carbon-ds equal the pyarrow oracle; pandas, Polars and DuckDB results write back."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import carbon_ds
import carbon_ds.duckdb as carbon_ds_duckdb
from carbon_ds.duckdb import CarbonDataset, register
from carbon_ds.errors import CarbonOptionError
from carbon_ds.expressions import Compare, In, IsNull, Not, NotNull, StartsWith, and_, or_
from carbon_ds.expressions.polars_filter import from_polars_json, translate_polars_json
from carbon_ds.format.v3_file import V3File
from carbon_ds.table.read import scan as scan_module
from carbon_ds.table.read.pruning import Counts

pl = pytest.importorskip("polars")
from carbon_ds.polars import scan_carbondata  # noqa: E402


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("engines") / "t")
    for seed in range(3):
        n = 200
        carbon_ds.write_table(pa.table({
            "id": pa.array(range(seed * 1000, seed * 1000 + n), pa.int64()),
            "k": pa.array([(i * 7) % 40 for i in range(n)], pa.int32()),
            "s": [None if i % 11 == 0 else f"v{i % 5}" for i in range(n)],
        }), path, sort_columns="k")
    return path


def test_polars_projection_predicate_and_limit(table):
    full = carbon_ds.read_table(table)
    lf = scan_carbondata(table)
    got = lf.filter((pl.col("k") > 30) & pl.col("s").is_not_null()).select(["s", "id"]).collect()
    mask = pc.and_(pc.greater(full["k"], 30), pc.is_valid(full["s"]))
    expected = full.filter(mask).select(["s", "id"])
    assert got.to_arrow().cast(expected.schema).equals(expected)
    assert scan_carbondata(table).head(5).collect().height == 5
    pruned = scan_carbondata(table, filter=pc.field("id") >= 2000).select("id").collect()
    assert pruned["id"].to_list() == [i for i in full["id"].to_pylist() if i >= 2000]


def test_duckdb_queries_equal_oracle(table):
    full = carbon_ds.read_table(table)
    con = duckdb.connect()
    register(con, "t", table)
    got = con.sql("select id, s from t where k between 5 and 9 order by id").arrow()
    got = got.read_all() if isinstance(got, pa.RecordBatchReader) else got
    mask = pc.and_(pc.greater_equal(full["k"], 5), pc.less_equal(full["k"], 9))
    expected = full.filter(mask).select(["id", "s"]).sort_by("id")
    assert got.cast(expected.schema).equals(expected)
    assert con.sql("select count(*) from t").fetchall()[0][0] == full.num_rows  # re-readable
    register(con, "recent", table, columns=["id"], filter="id >= 1000")
    assert con.sql("select count(*) from recent").fetchall()[0][0] == 400


def test_write_table_takes_engine_results(table, tmp_path):
    full = carbon_ds.read_table(table, columns=["id", "k"])
    con = duckdb.connect()
    register(con, "t", table)
    carbon_ds.write_table(con.sql("select id, k from t where k < 10"), str(tmp_path / "from_duckdb"))
    carbon_ds.write_table(scan_carbondata(table).select(["id", "k"]).collect(), str(tmp_path / "from_polars"))
    carbon_ds.write_table(pa.Table.from_pandas(carbon_ds.scan(table, ["id", "k"]).to_pandas()),
                          str(tmp_path / "from_pandas"))
    small = full.filter(pc.less(full["k"], 10))
    assert carbon_ds.read_table(str(tmp_path / "from_duckdb")).sort_by("id").cast(small.schema).equals(
        small.sort_by("id"))
    assert carbon_ds.read_table(str(tmp_path / "from_polars")).cast(full.schema).equals(full)
    assert carbon_ds.read_table(str(tmp_path / "from_pandas")).cast(full.schema).equals(full)


# ---------------------------------------------------------------------------------------------- pushdown
D0 = dt.date(2020, 1, 1)
T0 = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def sorted_table(tmp_path_factory):
    """Six segments of one blocklet each, over disjoint ranges of the sort column ``k`` (and so of ``s``
    and ``d``, which follow ``k``): a filter on them can skip blocklets by min/max."""
    path = str(tmp_path_factory.mktemp("pushdown") / "t")
    for seg in range(6):
        ks = [seg * 100 + i // 4 for i in range(200)]
        carbon_ds.write_table(pa.table({
            "id": pa.array(range(seg * 200, seg * 200 + 200), pa.int64()),
            "k": pa.array(ks, pa.int32()),
            "s": [None if i % 17 == 0 else f"s{k:04d}" for i, k in enumerate(ks)],
            "d": pa.array([D0 + dt.timedelta(days=k) for k in ks], pa.date32()),
            "f": pa.array([float("nan") if i % 7 == 0 else k / 2 for i, k in enumerate(ks)]),
            "x": pa.array([Decimal(k) / 4 for k in ks], pa.decimal128(10, 2)),
            "t": pa.array([T0 + dt.timedelta(hours=k) for k in ks], pa.timestamp("us", tz="UTC")),
        }), path, sort_columns="k")
    return path


def _blocklets(counts: Counts) -> tuple[int, int]:
    return counts.blocklets_read, counts.blocklets_total


# (Polars predicate, the same condition in pyarrow, prunes by min/max?). Polars 1.x wraps some literals in
# casts its JSON form spells differently: those shapes prune from Polars 2 on (same rows either way).
POLARS_2 = int(pl.__version__.split(".")[0]) >= 2
POLARS_SHAPES = [
    (pl.col("k") == 205, pc.field("k") == 205, True),
    (pl.col("k") < 50, pc.field("k") < 50, True),
    (pl.lit(50) > pl.col("k"), pc.field("k") < 50, True),
    (pl.col("k").is_between(120, 130), (pc.field("k") >= 120) & (pc.field("k") <= 130), True),
    (pl.col("k").is_between(120, 130, closed="none"), (pc.field("k") > 120) & (pc.field("k") < 130), True),
    (pl.col("k").is_in([5, 305]), pc.field("k").isin([5, 305]), POLARS_2),
    (pl.col("s").is_null() & (pl.col("k") < 100), pc.field("s").is_null() & (pc.field("k") < 100), True),
    ((pl.col("k") < 10) | (pl.col("k") > 540), (pc.field("k") < 10) | (pc.field("k") > 540), True),
    (~(pl.col("k") >= 100), ~(pc.field("k") >= 100), True),
    (pl.col("s") == "s0207", pc.field("s") == "s0207", True),
    (pl.col("s") > "s0500", pc.field("s") > "s0500", True),
    (pl.col("s").str.starts_with("s02"), pc.starts_with(pc.field("s"), "s02"), True),
    (pl.col("s").is_in(["s0001", None], nulls_equal=True), pc.field("s").isin(["s0001", None]), False),
    (pl.col("d") < D0 + dt.timedelta(days=50), pc.field("d") < D0 + dt.timedelta(days=50), True),
    (pl.col("d").is_between(D0 + dt.timedelta(days=300), D0 + dt.timedelta(days=310)),
     (pc.field("d") >= D0 + dt.timedelta(days=300)) & (pc.field("d") <= D0 + dt.timedelta(days=310)), True),
    pytest.param(pl.col("x") > 130, pc.field("x") > Decimal(130), POLARS_2, marks=pytest.mark.xfail(
        not POLARS_2, reason="Polars 1.x keeps rows of x > 130 on this decimal column that it should drop; "
                             "under investigation", strict=True)),
    (pl.col("t") >= T0 + dt.timedelta(hours=450), pc.field("t") >= T0 + dt.timedelta(hours=450), POLARS_2),
    (pl.col("k") > 540.5, pc.field("k") > 540.5, POLARS_2),
    # an untranslatable part of an AND is left to Polars; the rest still prunes
    ((pl.col("k") < 100) & (pl.col("k") * 2 > 10), (pc.field("k") < 100) & (pc.field("k") * 2 > 10), True),
    # untranslatable: arithmetic on the column, float columns (Polars orders NaN above every number), an OR
    # or a NOT with an untranslatable side: no pruning, same rows
    (pl.col("k") + 1 == 6, pc.field("k") + 1 == 6, False),
    ((pl.col("k") < 10) | (pl.col("k") * 2 == 1000), (pc.field("k") < 10) | (pc.field("k") * 2 == 1000), False),
    (~((pl.col("k") < 100) & (pl.col("k") * 2 > 10)), ~((pc.field("k") < 100) & (pc.field("k") * 2 > 10)), False),
]


@pytest.mark.parametrize("predicate, oracle, prunes", POLARS_SHAPES,
                         ids=[str(p.values[0] if hasattr(p, "values") else p[0]) for p in POLARS_SHAPES])
def test_polars_predicate_pushdown_prunes_and_equals_oracle(sorted_table, predicate, oracle, prunes):
    full = carbon_ds.read_table(sorted_table)
    counts = Counts()
    got = scan_carbondata(sorted_table, counts=counts).filter(predicate).select(["id", "k", "s"]).collect()
    expected = full.filter(oracle).select(["id", "k", "s"])
    assert got.to_arrow().cast(expected.schema).sort_by("id").equals(expected.sort_by("id"))
    read, total = _blocklets(counts)
    assert total == 6
    assert (read < total) if prunes else (read == total)


def test_polars_float_predicates_keep_polars_semantics(sorted_table):
    """Polars keeps NaN above every number; float predicates are not pruned, so nothing is lost."""
    full = pl.from_arrow(carbon_ds.read_table(sorted_table))
    for predicate in (pl.col("f") > 100, pl.col("f").is_nan(), pl.col("f") == float("nan")):
        counts = Counts()
        got = scan_carbondata(sorted_table, counts=counts).filter(predicate).collect()
        assert got.sort("id").equals(full.filter(predicate).sort("id"))
        assert _blocklets(counts) == (6, 6)


def test_polars_predicate_with_filter_and_limit(sorted_table):
    counts = Counts()
    lf = scan_carbondata(sorted_table, filter="k >= 200", counts=counts)
    got = lf.filter(pl.col("k") < 300).select("id").collect()["id"].to_list()
    assert got == list(range(400, 600))
    assert _blocklets(counts) == (1, 6)
    assert scan_carbondata(sorted_table).filter(pl.col("k") > 500).head(3).collect()["k"].to_list() == [501] * 3


def _polars_json(e) -> str:
    return e.meta.serialize(format="json")


def test_polars_json_translation(sorted_table):
    schema = carbon_ds.scan(sorted_table).schema
    cases = [
        (pl.col("k").is_between(1, 5), and_(Compare("k", ">=", 1), Compare("k", "<=", 5))),
        (pl.col("k").is_in([1, None]), In("k", (1,))),
        (pl.col("k").is_in([1, None], nulls_equal=True), or_(IsNull("k"), In("k", (1,)))),
        (~pl.col("s").is_not_null(), Not(NotNull("s"))),
        ((pl.col("k") > 1) & (pl.col("k").cast(pl.Int16) > 1), Compare("k", ">", 1)),  # a narrowing cast: dropped
        (pl.col("d") == dt.date(2020, 1, 2), Compare("d", "=", dt.date(2020, 1, 2))),
        (pl.col("x") <= Decimal("1.25"), Compare("x", "<=", Decimal("1.25"))),
        (pl.col("s").str.starts_with("s1"), StartsWith("s", "s1")),
    ]
    for e, expected in cases:
        assert from_polars_json(_polars_json(e), schema) == expected, e
    for e in (pl.col("k") + 1 > 2, pl.col("f") > 1, ~((pl.col("k") > 1) & (pl.col("k") * 2 > 1)),
              pl.col("nope") > 1, pl.col("k") == pl.col("id")):
        assert from_polars_json(_polars_json(e), schema) is None, e
    assert from_polars_json("not json", schema) is None


DUCKDB_2 = int(duckdb.__version__.split(".")[0]) >= 2
DUCKDB_QUERIES = [
    ("select id, s from t where k = 205", pc.field("k") == 205, True),
    ("select id from t where k between 120 and 130", (pc.field("k") >= 120) & (pc.field("k") <= 130), True),
    ("select id from t where k in (5, 305)", pc.field("k").isin([5, 305]), True),
    ("select id from t where k < 10 or k > 540", (pc.field("k") < 10) | (pc.field("k") > 540), True),
    ("select id from t where s = 's0207'", pc.field("s") == "s0207", True),
    # DuckDB 2 no longer pushes LIKE into Arrow scans: it filters itself, so nothing is pruned
    ("select id from t where s like 's02%'", pc.starts_with(pc.field("s"), "s02"), not DUCKDB_2),
    ("select id from t where d < date '2020-02-20'", pc.field("d") < dt.date(2020, 2, 20), True),
    ("select id from t where t < timestamptz '2020-01-03 00:00:00+00'", pc.field("t") < T0 + dt.timedelta(days=2),
     True),
    ("select id from t where s is null and k < 100", pc.field("s").is_null() & (pc.field("k") < 100), True),
    ("select id from t where isnan(f)", pc.is_nan(pc.field("f")), False),  # not pushed: DuckDB filters it
]


@pytest.mark.parametrize("query, oracle, prunes", DUCKDB_QUERIES, ids=[q[0] for q in DUCKDB_QUERIES])
def test_duckdb_pushdown_prunes_and_equals_oracle(sorted_table, query, oracle, prunes):
    full = carbon_ds.read_table(sorted_table)
    con = duckdb.connect()
    d = register(con, "t", sorted_table)
    got = sorted(r[0] for r in con.sql(query).fetchall())
    assert got == sorted(full.filter(oracle)["id"].to_pylist())
    read, total = _blocklets(d.counts)
    assert total == 6
    assert (read < total) if prunes else (read == total)
    assert (d.last_filter is not None) == prunes


def test_duckdb_in_with_nan_keeps_the_nan_rows(tmp_path):
    """DuckDB pushes ``f IN ('nan', v)`` as pyarrow's is_in, which matches NaN with NaN; the NaN rows sit
    in blocklets of their own (min/max NaN), so neither pruning nor the row filter may drop them."""
    path = str(tmp_path / "t")
    carbon_ds.write_table(pa.table({"k": pa.array(range(300), pa.int32()),
                                    "f": pa.array([float(k % 3) for k in range(300)])}), path, sort_columns="k")
    carbon_ds.write_table(pa.table({"k": pa.array(range(300, 320), pa.int32()),
                                    "f": pa.array([float("nan")] * 20)}), path, sort_columns="k")
    full = carbon_ds.read_table(path)
    con = duckdb.connect()
    d = register(con, "t", path)
    for values in ([float("nan"), 1.0], [float("nan")], [2.0]):
        listed = ", ".join(f"'{v}'::double" for v in values)
        for sql, oracle in ((f"f in ({listed})", pc.field("f").isin(values)),
                            (f"f not in ({listed})", ~pc.field("f").isin(values))):
            got = sorted(r[0] for r in con.sql(f"select k from t where {sql}").fetchall())
            assert got == sorted(full.filter(oracle)["k"].to_pylist()), (sql, d.last_filter)
            assert carbon_ds.read_table(path, filter=oracle).num_rows == len(got), sql


def test_duckdb_projection_pushdown(sorted_table):
    con = duckdb.connect()
    d = carbon_ds_duckdb.dataset(sorted_table)
    con.register("t", d)
    pushed, decoded = [], set()
    original, decode = CarbonDataset.scanner, V3File._decode

    def spy(self, columns=None, filter=None, **kw):
        pushed.append((columns, filter))
        return original(self, columns=columns, filter=filter, **kw)

    def spy_decode(self, b, node, *args, **kw):
        decoded.add(node.schema.column_name)
        return decode(self, b, node, *args, **kw)

    mp = pytest.MonkeyPatch()
    mp.setattr(CarbonDataset, "scanner", spy)
    mp.setattr(V3File, "_decode", spy_decode)
    try:
        total = con.sql("select sum(k) from t where d >= date '2021-01-01'").fetchall()[0][0]
    finally:
        mp.undo()
    full = carbon_ds.read_table(sorted_table)
    assert total == pc.sum(full.filter(pc.field("d") >= dt.date(2021, 1, 1))["k"]).as_py()
    # DuckDB 1.x asks for the filter column too, DuckDB 2 for the projected ones only; either way only the
    # query's columns are decoded
    assert "k" in pushed[0][0] and set(pushed[0][0]) <= {"d", "k"} and "d" in str(pushed[0][1])
    assert decoded == {"d", "k"} and len(full.column_names) > 2
    assert _blocklets(d.counts) == (2, 6)


def test_carbon_dataset_api(sorted_table):
    d = carbon_ds_duckdb.dataset(sorted_table)
    full = carbon_ds.read_table(sorted_table)
    f = (pc.field("k") >= 300) & (pc.field("k") < 310)
    assert d.to_table(columns=["k", "id"], filter=f).equals(full.filter(f).select(["k", "id"]))
    assert d.count_rows(filter=f) == 40 and d.count_rows() == 1200
    nan = pc.is_nan(pc.field("f"))  # not our predicate model: pyarrow filters the stream
    assert d.to_table(columns=["id"], filter=nan).equals(full.filter(nan).select(["id"]))
    assert d.count_rows(filter=nan) == full.filter(nan).num_rows
    assert d.head(2, columns=["id"], filter="k > 500")["id"].to_pylist() == [1004, 1005]
    with pytest.raises(CarbonOptionError, match="get_fragments is not supported"):
        d.get_fragments()
    with pytest.raises(CarbonOptionError, match="not in the dataset"):
        d.to_table(columns=["nope"])


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_polars_engines_push_the_predicate(sorted_table, engine):
    full = carbon_ds.read_table(sorted_table)
    counts = Counts()
    got = scan_carbondata(sorted_table, counts=counts).filter(pl.col("k") == 405).select("id").collect(engine=engine)
    assert sorted(got["id"].to_list()) == full.filter(pc.field("k") == 405)["id"].to_pylist()
    assert _blocklets(counts) == (1, 6)
    counts = Counts()
    head = scan_carbondata(sorted_table, counts=counts).filter(pl.col("k") >= 500).head(3).collect(engine=engine)
    assert head["k"].to_list() == [500, 500, 500]
    assert _blocklets(counts) == (1, 6)


def test_a_polars_frame_reads_the_segments_of_each_collect(tmp_path):
    """One LazyFrame collected again after a load and a DELETE gives the rows the table then holds (its
    tablestatus is read on every collect; the schema the frame was made with stays); oracle: read_table."""
    path = str(tmp_path / "again")
    rows = pa.table({"id": pa.array(range(100), pa.int64()), "k": pa.array([i % 5 for i in range(100)], pa.int32())})
    carbon_ds.write_table(rows, path)
    lf = scan_carbondata(path).filter(pl.col("k") < 3).select("id")
    assert sorted(lf.collect()["id"].to_list()) == [i for i in range(100) if i % 5 < 3]
    carbon_ds.write_table(rows, path, mode="append")
    carbon_ds.CarbonTable.open(path).delete("id >= 90")
    want = pc.filter(carbon_ds.read_table(path)["id"], pc.less(carbon_ds.read_table(path)["k"], 3)).to_pylist()
    assert sorted(lf.collect()["id"].to_list()) == sorted(want) and len(want) == 2 * 54


def test_a_polars_frame_checks_its_filter_and_segments_when_made(tmp_path, monkeypatch):
    """Only the schema file is read to make a frame over a table, and still a filter naming no column of it,
    an unknown segment, or a folder with no table are refused when the frame is made, naming what is wrong;
    a frame over given segments reads those alone (oracle: the rows written to each segment)."""
    path = str(tmp_path / "checked")
    first = pa.table({"id": pa.array(range(10), pa.int64())})
    carbon_ds.write_table(first, path)
    carbon_ds.write_table(pa.table({"id": pa.array(range(10, 15), pa.int64())}), path, mode="append")
    with pytest.raises(CarbonOptionError, match="nope"):
        scan_carbondata(path, filter="nope > 1")
    with pytest.raises(carbon_ds.errors.CarbonError, match="7"):
        scan_carbondata(path, segments="7")
    with pytest.raises(carbon_ds.errors.CarbonError):
        scan_carbondata(str(tmp_path / "missing"))
    assert sorted(scan_carbondata(path, segments="1").collect()["id"].to_list()) == list(range(10, 15))
    opened = []
    # the one entry that opens a table, as the scan calls it
    real = scan_module.open_source
    monkeypatch.setattr(scan_module, "open_source", lambda *a, **k: opened.append(a) or real(*a, **k))
    lf = scan_carbondata(path, filter="id >= 12")
    assert opened == []  # no tablestatus, segment file or index read until collected
    assert lf.collect()["id"].to_list() == [12, 13, 14] and len(opened) == 1


def test_polars_exact_translations_filter_in_the_scan_and_others_in_polars(sorted_table, monkeypatch):
    """A predicate whose every comparison is between a column and a literal of the column's own kind is
    exact (Polars and our row filter agree value for value): the scan filters the rows and Polars is not
    called per batch. A float literal against an integer column, or a datetime against a date column,
    only prunes; Polars then filters what is read."""
    schema = carbon_ds.scan(sorted_table).schema
    exact = [pl.col("k") == 205, pl.col("k").is_between(120, 130), pl.col("k").is_in([5, 305]),
             ~(pl.col("k") >= 100), pl.col("s").str.starts_with("s02"), pl.col("d") < D0 + dt.timedelta(days=50),
             pl.col("x") > Decimal("130.25"), pl.col("s").is_in(["s0001", None], nulls_equal=True),
             (pl.col("k") < 10) | pl.col("s").is_null()]
    superset = [pl.col("k") > 540.5, pl.col("d") < dt.datetime(2020, 2, 1, 12), pl.col("t") >= T0,
                (pl.col("k") < 100) & (pl.col("k") * 2 > 10)]
    # Polars 1.x spells some of these shapes in forms that do not translate (no pruning, Polars filters)
    for shapes, exactness in ((exact, True), (superset, False)):
        for e in shapes:
            got = translate_polars_json(_polars_json(e), schema)
            assert (got is not None and got[1] is exactness) if POLARS_2 else (got is None or got[1] is exactness), e
    full = pl.from_arrow(carbon_ds.read_table(sorted_table))
    calls = []
    matching = carbon_ds.polars._matching
    monkeypatch.setattr(carbon_ds.polars, "_matching", lambda *a: calls.append(a) or matching(*a))
    for e, polars_filters in [(exact[1], False), (exact[5], False), (superset[1], True)]:
        calls.clear()
        got = scan_carbondata(sorted_table).filter(e).select(["id", "k", "d"]).collect()
        assert got.sort("id").equals(full.filter(e).select(["id", "k", "d"]).sort("id")), e
        assert bool(calls) == polars_filters, e
