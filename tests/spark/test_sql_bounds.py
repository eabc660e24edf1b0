"""carbon_ds.sql with hostile input: huge IN lists, statements it passes to Spark, scripts, long names.

The oracle is Spark's own Parquet reader over the same rows (or Spark's own statement)."""

from __future__ import annotations

import datetime as dt
import math
import random
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from plan_reads import reads, statement_reads
from spark_confs import confs

import carbon_ds
from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.names import CONF_LOCAL_BYTES
from carbon_ds.table import CarbonTable

pytestmark = pytest.mark.spark

ROWS = 3000
MAX_IN_VALUES = 1000  # jvm/src FilterText.MAX_IN_VALUES: a longer IN list prunes by its values' range


def _rows(seg: int) -> pa.Table:
    rnd = random.Random(seg)
    ids = range(seg * ROWS, (seg + 1) * ROWS)
    return pa.table({
        "id": pa.array(list(ids), pa.int64()),
        "s": pa.array([None if i % 97 == 0 else "null" if i % 89 == 0 else f"k{i:06d}" for i in ids]),
        "d": pa.array([dt.date(2000, 1, 1) + dt.timedelta(days=i) for i in ids]),
        "ts": pa.array([dt.datetime(2020, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=7 * i) for i in ids],
                       pa.timestamp("us", tz="UTC")),
        "amount": pa.array([Decimal(rnd.randrange(-10**6, 10**6)) / 100 for _ in ids], pa.decimal128(10, 2)),
        "small": pa.array([i % 30000 for i in ids], pa.int32()),
    })


@pytest.fixture(scope="module")
def twins(spark, tmp_path_factory):
    """The same rows as a carbondata table (three loads sorted on id) and as Parquet."""
    root = tmp_path_factory.mktemp("sql_bounds")
    path, parquet = str(root / "big_in"), root / "big_in_parquet"
    parquet.mkdir()
    for seg in range(3):
        carbon_ds.write_table(_rows(seg), path, sort_columns="id")
        pq.write_table(_rows(seg), parquet / f"part-{seg}.parquet")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW big_in USING carbondata OPTIONS (path '{path}')")
    spark.read.parquet(str(parquet)).createOrReplaceTempView("big_in_pq")
    yield path
    spark.catalog.dropTempView("big_in")
    spark.catalog.dropTempView("big_in_pq")


def _same_as_parquet(spark, select: str, where: str) -> list:
    got = sorted(carbon_ds.sql(spark, f"{select} FROM big_in WHERE {where}").collect())
    want = sorted(spark.sql(f"{select} FROM big_in_pq WHERE {where}").collect())
    assert got == want
    return got


@pytest.mark.slow
def test_in_with_100000_literals_equals_parquet_and_prunes_by_the_sets_range(spark, twins):
    # 100,000 values, a fifth of them in the table (ids 2,000..6,000 step 5 hit rows of segments 0 and 1)
    values = [2000 + 5 * k for k in range(800)] + [10**6 + 3 * k for k in range(99_200)]
    where = f"id IN ({', '.join(map(str, values))})"
    reads = statement_reads(spark, f"SELECT id, s FROM big_in WHERE {where}")
    got = _same_as_parquet(spark, "SELECT id, s", where)
    assert [r.id for r in got] == [2000 + 5 * k for k in range(800)]
    # the list is never spelled into the relation's filter: its min/max prune, Spark matches exactly
    assert [r.filter for r in reads] == [f"((`id` >= 2000) AND (`id` <= {10**6 + 3 * 99_199}))"]


def test_long_in_lists_of_every_kind_equal_parquet(spark, twins):
    n = MAX_IN_VALUES + 500
    rnd = random.Random(3)
    # distinct values: a set of more than MAX_IN_VALUES
    strings = [f"'k{v:06d}'" for v in rnd.sample(range(3000, 9000), n)] + ["'null'", "NULL", "'a''b;c'"]
    dates = [f"DATE '{dt.date(2000, 1, 1) + dt.timedelta(days=v)}'" for v in rnd.sample(range(5000, 9000), n)]
    stamps = [f"TIMESTAMP '{dt.datetime(2020, 1, 1) + dt.timedelta(microseconds=7001 * k)}'" for k in range(n)]
    amounts = [f"{Decimal(v) / 100}" for v in rnd.sample(range(-10**6, 10**6), n)]
    # one beyond int (Spark's optimizer drops it); the rest overlap the table's 0..8999, so a relation is left
    longs = [str(v) for v in range(-500, n - 500)] + ["99999999999"]
    ranged = {}
    for column, items in (("s", strings), ("d", dates), ("ts", stamps), ("amount", amounts),
                          ("CAST(small AS BIGINT)", longs)):
        where = f"{column} IN ({', '.join(items)})"
        reads = statement_reads(spark, f"SELECT id FROM big_in WHERE {where}")
        # the filter is the list's range (a bound or two), not the list
        ranged[column] = [r.filter is not None and ">=" in r.filter and len(r.filter) < 200 for r in reads]
        _same_as_parquet(spark, "SELECT id", where)
        _same_as_parquet(spark, "SELECT count(*)", f"NOT ({where}) OR id < 10")
    assert ranged == dict.fromkeys(ranged, [True]), ranged


LONG = 1500  # distinct values: more than the extension spells out (1,000), so only their min/max prune


# Spark's optimizer unwraps a widening cast of an IN's column (dropping the values the column cannot hold);
# with that rule excluded the cast stays, and the extension bounds the column through it
KEEP_CASTS = {
    "spark.sql.optimizer.excludedRules": "org.apache.spark.sql.catalyst.optimizer.UnwrapCastInBinaryComparison"}


def _long_lists() -> list[tuple[str, list[str], str, dict[str, str]]]:
    """(column, IN items, the range the carbondata relation must be filtered by, confs) of each kind of column."""
    rnd = random.Random(7)
    ids = rnd.sample(range(1000, 20000), LONG)
    # code point order (CarbonData's and Spark's byte order): UTF-16 order would put the emoji first
    strings = [f"k{v:06d}" for v in rnd.sample(range(3000, 9000), LONG)] + ["null", "a'b;c", "\ufffd", "\U0001f600"]
    days = [dt.date(2000, 1, 1) + dt.timedelta(days=v) for v in rnd.sample(range(5000, 9000), LONG)]
    start = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    # the table's stamps, and two with microseconds CarbonData cannot hold: the bounds round outwards to ms
    stamps = [start + dt.timedelta(milliseconds=7 * k) for k in range(LONG)] + [
        start - dt.timedelta(microseconds=999), start + dt.timedelta(microseconds=7000 * LONG + 1)]
    amounts = [Decimal(v) / 100 for v in rnd.sample(range(-10**6, 10**6), LONG)]
    halves = [Decimal(v) / 2 for v in range(-3001, 3002)]  # the int column is cast to DECIMAL(11,1)
    smalls = [str(v) for v in range(LONG)]

    def ts(t: dt.datetime) -> str:
        return f"TIMESTAMP '{t.strftime('%Y-%m-%d %H:%M:%S.%f')}+00:00'"

    def ms(t: dt.datetime, up: bool) -> dt.datetime:
        rest = t.microsecond % 1000
        return t - dt.timedelta(microseconds=rest) + dt.timedelta(milliseconds=1 if up and rest else 0)

    cent = Decimal("0.01")
    return [
        ("id", [str(v) for v in ids], f"((`id` >= {min(ids)}) AND (`id` <= {max(ids)}))", {}),
        ("s", ["'" + v.replace("'", "''") + "'" for v in strings] + ["NULL"],
         f"((`s` >= '{min(strings).replace(chr(39), 2 * chr(39))}') AND (`s` <= '{max(strings)}'))", {}),
        ("d", [f"DATE '{v}'" for v in days], f"((`d` >= DATE '{min(days)}') AND (`d` <= DATE '{max(days)}'))", {}),
        ("ts", [ts(t) for t in stamps],
         f"((`ts` >= {ts(ms(min(stamps), False))}) AND (`ts` <= {ts(ms(max(stamps), True))}))", {}),
        ("amount", [str(v) for v in amounts],
         f"((`amount` >= {min(amounts).quantize(cent)}) AND (`amount` <= {max(amounts).quantize(cent)}))", {}),
        ("small", [str(v) for v in halves],
         f"((`small` >= {math.floor(min(halves))}) AND (`small` <= {math.ceil(max(halves))}))", KEEP_CASTS),
        # a bound beyond the int column's range is left out, the other one kept
        ("CAST(small AS BIGINT)", [*smalls, "99999999999"], "(`small` >= 0)", KEEP_CASTS),
        ("CAST(small AS BIGINT)", ["-99999999999", *smalls], f"(`small` <= {LONG - 1})", KEEP_CASTS),
        ("CAST(small AS BIGINT)", [*smalls, "99999999999"], f"((`small` >= 0) AND (`small` <= {LONG - 1}))", {}),
    ]


@pytest.mark.parametrize("case", range(9))
def test_long_in_prunes_by_its_range_under_the_extension(ext, twins, case):
    """Plain spark.sql with the extension's rules on: a long IN list's relation is filtered by the list's
    min/max, rounded outwards into the column's domain, and the rows are Spark's over Parquet."""
    column, items, want, settings = _long_lists()[case]
    where = f"{column} IN ({', '.join(items)})"
    with confs(ext, **settings, **{CONF_LOCAL_BYTES: "0"}):  # the relation stays a scan: its filter can be read
        assert [r.filter for r in reads(ext.sql(f"SELECT id FROM big_in WHERE {where}"))] == [want]
    with confs(ext, **settings):
        for select, condition in (("SELECT id", where), ("SELECT count(*)", f"NOT ({where}) OR id < 10")):
            got = sorted(ext.sql(f"{select} FROM big_in WHERE {condition}").collect())
            assert got == sorted(ext.sql(f"{select} FROM big_in_pq WHERE {condition}").collect())
            if select == "SELECT id" and column != "amount":
                assert got  # the list hits rows: the range must not prune them away


# ------------------------------------------------------------------------ statements passed to Spark


def test_create_temporary_view_using_carbondata_goes_to_spark(spark, twins):
    for text in (f"CREATE TEMPORARY VIEW tv_plain USING carbondata OPTIONS (path '{twins}')",
                 f"CREATE OR REPLACE TEMPORARY VIEW tv_replaced USING carbondata OPTIONS (path '{twins}')",
                 f"create or replace temporary view tv_replaced using carbondata options (path '{twins}');"):
        carbon_ds.sql(spark, text)
    try:
        for view in ("tv_plain", "tv_replaced"):
            assert spark.sql(f"SELECT count(*) FROM {view}").collect()[0][0] == 3 * ROWS
    finally:
        spark.catalog.dropTempView("tv_plain")
        spark.catalog.dropTempView("tv_replaced")


# ------------------------------------------------------------------------------------------ scripts


def test_script_runs_statement_by_statement(spark):
    out = carbon_ds.sql(spark, """
        DROP TABLE IF EXISTS scripted;  -- a comment; with a semicolon
        CREATE TABLE scripted (id INT, note STRING) STORED AS carbondata;
        INSERT INTO scripted VALUES (1, 'a;b'), (2, 'it''s; here'), (3, "x;y");
        /* a block; comment */ DELETE FROM scripted WHERE note = 'a;b';
        SELECT id, note FROM scripted ORDER BY id;
    """)
    assert [tuple(r) for r in out.collect()] == [(2, "it's; here"), (3, "x;y")]
    out = carbon_ds.sql(spark, "DELETE FROM scripted WHERE id = 2; DROP TABLE scripted")
    assert out.collect() == [] and not spark.catalog.tableExists("scripted")


def test_script_error_names_the_statement(spark):
    with pytest.raises(CarbonOptionError, match="expected TABLE") as e:
        carbon_ds.sql(spark, "SELECT 1; SHOW SEGMENTS FOR nowhere; SELECT 2")
    assert any("statement 2 of 3, at character 10" in n for n in e.value.__notes__)


# ------------------------------------------------------------------------------------------ long names


def test_table_name_longer_than_a_folder_name_is_refused(spark, tmp_path):
    with pytest.raises(CarbonTableError, match="table name too long: at most 255 characters .*found 300"):
        carbon_ds.sql(spark, f"CREATE TABLE {'t' * 300} (a INT) STORED AS carbondata")
    path = str(tmp_path / ("x" * 300) / "t")
    data = pa.table({"a": pa.array([1], pa.int32())})
    for call in (lambda: carbon_ds.write_table(data, path), lambda: CarbonTable.create(path, data.schema),
                 lambda: carbon_ds.read_table(f"file://{path}")):
        with pytest.raises(CarbonOptionError, match="at most 255 bytes, found 300"):
            call()
