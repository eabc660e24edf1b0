"""Computed filters (arithmetic, CASE, COALESCE, string, date and CAST functions) against Spark SQL itself:
the same rows as a Parquet file, each predicate evaluated by Spark (ANSI mode, Spark 4's default, session
time zone UTC) and by carbon-ds' filter; the rows where it is TRUE must be the same, and where Spark raises
(division by zero, overflow, a bad cast) carbon-ds must raise too.

Hand-written cases pin each construct; a seeded random sample combines them. Reproduce with the seed:
CARBON_DS_PRED_SEED=<seed> pytest tests/expressions/test_predicates_vs_spark.py
"""

from __future__ import annotations

import datetime as dt
import os
import random
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import carbon_ds
from carbon_ds.errors import CarbonError, CarbonFilterError, CarbonOptionError
from carbon_ds.expressions import bind, filter_table, parse

pytestmark = pytest.mark.spark
SEED = int(os.environ.get("CARBON_DS_PRED_SEED", "51"))

ROWS = pa.table({
    "id": pa.array(range(12), pa.int32()),
    "i": pa.array([7, -7, 0, None, 99, -100, 3, 10, -1, 5, 100, 12], pa.int32()),
    "l": pa.array([3, -2, 5, 9, None, 1, -4, 6, 8, 2, 1000, 7], pa.int64()),
    "d": pa.array([1.5, -2.25, 0.0, float("nan"), None, -0.0, 10.0, 3.75, 1e10, -1e-3, 2.5, 7.0], pa.float64()),
    "m": pa.array([Decimal(x) if x else None for x in ["1.10", "-2.00", "3.33", None, "0.00", "7.50", "12.25",
                                                       "-0.05", "99.99", "1.00", "5.55", "2.50"]], pa.decimal128(9, 2)),
    "s": pa.array(["Apple", " pear ", "", None, "banana", "Cherry", "a_b", "100", " 42", "x%y", "Ünïcode", "7"]),
    "dt": pa.array([dt.date(2020, 1, 1), dt.date(2021, 12, 31), dt.date(1999, 6, 15), None, dt.date(2024, 2, 29),
                    dt.date(2000, 3, 5), dt.date(2023, 7, 9), dt.date(2022, 10, 2), dt.date(1970, 1, 1),
                    dt.date(2030, 5, 20), dt.date(2016, 8, 8), dt.date(2011, 11, 11)]),
    "ts": pa.array([dt.datetime(2020, 1, 1, 0, 0, 1), dt.datetime(2021, 6, 30, 23, 59, 59), None,
                    dt.datetime(1999, 12, 31, 12, 30), dt.datetime(2024, 2, 29, 6, 7, 8),
                    dt.datetime(2000, 1, 2, 3, 4, 5), dt.datetime(2023, 7, 9, 18, 0), dt.datetime(2022, 10, 2, 1, 2, 3),
                    dt.datetime(1970, 1, 1), dt.datetime(2030, 5, 20, 9, 9, 9), dt.datetime(2016, 8, 8, 8, 8, 8),
                    dt.datetime(2011, 11, 11, 11, 11, 11)], pa.timestamp("us", tz="UTC")),
    "b": pa.array([True, False, None, True, False, True, None, False, True, True, False, True]),
})

HAND = [
    # arithmetic: types, signs, promotion
    "id % 2 = 1", "i % 3 = -1", "l % -3 = 2", "d % 2 = 1.5", "d % 2 = -0.25", "-i > 5", "i + 1 > 0", "i * l > 50",
    "l * 2 > 10", "i / 2 > 1", "i / 2 = 3.5", "d / 4 > 0.3", "i * 1.5 > 5", "m + 1 > 2.1", "m * 2 = 6.66",
    "m - i < 0", "l + i > 5", "abs(i) > 6", "abs(m) < 1", "i + d > 3", "-(d) < 0", "id % 5 + id / 5 > 2",
    # CASE, COALESCE, NULLIF
    "CASE WHEN i > 5 THEN 'big' WHEN i < 0 THEN 'neg' ELSE 'other' END = 'neg'",
    "CASE WHEN i > 5 THEN 1 END IS NULL", "CASE i WHEN 7 THEN TRUE WHEN 3 THEN TRUE ELSE FALSE END",
    "CASE WHEN i = 0 THEN NULL ELSE 100 / i END > 10", "coalesce(i, l, 0) > 4", "coalesce(d, 0) = 0",
    "coalesce(s, 'none') = 'none'", "nullif(i, 7) IS NULL", "CASE WHEN b THEN d ELSE m END > 2",
    "CASE WHEN d > 1 THEN i ELSE l END % 2 = 0",
    # strings
    "lower(s) = 'apple'", "upper(s) LIKE 'CH%'", "length(s) = 0", "length(s) > 5", "trim(s) = 'pear'",
    "ltrim(s) = '42'", "rtrim(s) = ' pear'", "substring(s, 2, 3) = 'ppl'", "substr(s, -3) = 'ana'",
    "substring(s, -3, 2) = 'an'", "substring(s, 0, 2) = 'Ap'", "substring(s, 2) = 'pple'",
    "substring(s, -10, 3) = ''", "concat(s, '!') = 'Apple!'", "s || 'x' = 'a_bx'", "concat(s, NULL) IS NULL",
    "startswith(s, 'ba')", "endswith(s, 'y')", "contains(s, '_')", "s LIKE 'a\\_b'", "s LIKE '%an%'",
    "s LIKE '_pple'", "s NOT LIKE '%a%'", "lower(s) IN ('apple', 'cherry')", "length(s) BETWEEN 2 AND 5",
    "lcase(s) = 'x%y'", "ucase(s) = 'ÜNÏCODE'",
    # dates and timestamps
    "year(dt) = 2020", "month(dt) > 6", "day(dt) = 31", "dayofmonth(ts) = 9", "quarter(dt) = 4",
    "dayofweek(dt) = 1", "dayofweek(ts) = 7", "year(ts) < 2000", "hour(ts) > 10", "minute(ts) = 59",
    "second(ts) = 8", "to_date(ts) = DATE '2023-07-09'", "to_date('2020-01-01') = dt",
    "date_trunc('MONTH', ts) = TIMESTAMP '2021-06-01 00:00:00'", "date_trunc('year', dt) < TIMESTAMP '2001-01-01'",
    "date_trunc('WEEK', ts) = TIMESTAMP '2023-07-03 00:00:00'", "date_trunc('nonsense', ts) IS NULL",
    "dt < ts", "ts > '2020-06-01'", "dt = '2024-02-29'",
    # CAST
    "CAST(CASE WHEN d < 100 THEN d END AS INT) = 3", "CAST(CASE WHEN d < 100 THEN d END AS BIGINT) = -2", "CAST(m AS INT) = 12", "CAST(i AS STRING) = '7'",
    "CAST(CASE WHEN id IN (7, 8, 11) THEN s END AS INT) = 42", "CAST(m AS STRING) = '1.10'", "CAST(i AS DOUBLE) / 2 = 3.5",
    "CAST(m AS DECIMAL(5, 1)) = 12.3", "CAST(CASE WHEN d < 100 THEN d END AS DECIMAL(10, 1)) = 3.8", "CAST(b AS INT) = 1",
    "CAST(i AS BOOLEAN)", "CAST(dt AS STRING) = '2020-01-01'", "CAST(ts AS DATE) = DATE '2021-06-30'",
    "CAST(dt AS TIMESTAMP) = TIMESTAMP '2020-01-01 00:00:00'", "CAST(b AS STRING) = 'true'",
    "CAST('2020-01-01' AS DATE) < dt", "CAST(l AS INT) = 7", "CAST(i AS TINYINT) = 7",
    # NaN and -0.0 as Spark orders them, comparisons of two computed sides, pruning-friendly parts mixed in
    "d = CAST('NaN' AS DOUBLE)", "d + 0 > 1e9", "d * 1 < 0", "d + 0 = 0", "d * 1 >= 10", "i > 0 AND i % 2 = 1",
    "id < 3 OR lower(s) = 'cherry'", "NOT (i % 2 = 0)", "i + 0 NOT IN (7, 3)", "i = l + 4", "i <> id",
    "b AND id % 3 = 0", "NOT b OR d * 2 > 0",
]

# Spark raises on these rows (ANSI), and so must carbon-ds
RAISES = [
    "i / 0 > 1", "i % (id - id) = 0", "d / (id - id) > 0", "i * 100000000 > 0", "i + 2147483647 > 0",
    "l * 9223372036854775807 > 0", "abs(i - 2147483647 - 1) > 0", "CAST(s AS INT) > 0", "CAST(d AS INT) > 0",
    "CAST(l * 10000000 AS INT) > 0", "CAST(s AS DATE) IS NULL", "CAST(s AS BOOLEAN)", "CAST(i + 100 AS TINYINT) > 0",
    "CAST(d AS DECIMAL(10, 1)) > 0",
]


@pytest.fixture(scope="module")
def view(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("predicates") / "rows.parquet")
    pq.write_table(ROWS, path)
    old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"  # Spark 4's default: the meaning matched here
    spark.read.parquet(path).createOrReplaceTempView("pred_rows")
    yield "pred_rows"
    spark.conf.set("spark.sql.session.timeZone", old)


def _ours(text: str) -> list[int]:
    return sorted(filter_table(ROWS, bind(parse(text), ROWS.schema)).column("id").to_pylist())


def _spark_many(spark, view: str, texts: list[str]) -> list[list[int]]:
    """Each predicate's TRUE rows, from one Spark query (one column per predicate)."""
    cols = ", ".join(f"({t}) AS p{k}" for k, t in enumerate(texts))
    rows = spark.sql(f"SELECT id, {cols} FROM {view}").collect()
    return [sorted(r["id"] for r in rows if r[f"p{k}"] is True) for k in range(len(texts))]


def _random_predicates(rng: random.Random, count: int) -> list[str]:
    ints = ["i", "l", "id", "3", "-4", "7", "(i % 5)", "coalesce(i, 1)", "length(s)", "year(dt)", "month(ts)",
            "abs(id - 6)", "day(dt)"]
    nums = ints + ["d", "m", "1.5", "0.25D", "CASE WHEN b THEN 2 ELSE -1 END"]
    strs = ["s", "lower(s)", "upper(s)", "trim(s)", "substring(s, 2, 2)", "concat(s, 'z')", "coalesce(s, '')",
            "CAST(id AS STRING)", "CASE WHEN id > 4 THEN s ELSE 'k' END", "'Apple'", "'an'"]

    def num(depth: int) -> str:
        if depth == 0 or rng.random() < 0.3:
            return rng.choice(nums)
        a, b = num(depth - 1), num(depth - 1)
        op = rng.choice(["+", "-", "*", "%"])
        if op == "%":  # divide only by what cannot be zero, so that the sample checks values, not errors
            b = rng.choice(["3", "-4", "7", "(abs(id) + 1)"])
        if op == "*" and "l" in (a, b):
            a = "id"  # keep the products of BIGINTs inside their range
        return f"({a} {op} {b})"

    out = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.55:
            left = num(2)
            left = f"{left} * 1" if left in nums else left  # computed: a bare column is the pruning path's
            right = rng.choice([num(1), str(rng.randint(-20, 20)), f"{rng.randint(-50, 50) / 4}"])
            out.append(f"{left} {rng.choice(['=', '!=', '<', '<=', '>', '>='])} {right}")
        elif kind < 0.85:
            a, b = rng.choice(strs), rng.choice(strs)
            out.append(rng.choice([f"{a} {rng.choice(['=', '<', '>='])} {b}", f"{a} LIKE '%{rng.choice('aeps')}%'",
                                   f"startswith({a}, '{rng.choice('aAbp ')}')", f"length({a}) > {rng.randint(0, 5)}"]))
        else:
            out.append(f"CASE WHEN {num(1)} > {rng.randint(-5, 5)} THEN {rng.choice(strs)} ELSE {rng.choice(strs)} "
                       f"END {rng.choice(['=', '<'])} {rng.choice(strs)}")
    return out


def test_each_construct_agrees_with_spark(spark, view):
    expected = _spark_many(spark, view, HAND)
    wrong = [(t, _ours(t), e) for t, e in zip(HAND, expected, strict=True) if _ours(t) != e]
    assert not wrong, "\n".join(f"{t}: ours {o}, Spark {e}" for t, o, e in wrong)


def test_a_seeded_random_sample_agrees_with_spark(spark, view):
    texts = _random_predicates(random.Random(SEED), 150)
    expected = _spark_many(spark, view, texts)
    wrong = [(t, _ours(t), e) for t, e in zip(texts, expected, strict=True) if _ours(t) != e]
    assert not wrong, f"seed {SEED}\n" + "\n".join(f"{t}: ours {o}, Spark {e}" for t, o, e in wrong[:10])


@pytest.mark.parametrize("text", RAISES)
def test_what_spark_refuses_is_refused(spark, view, text):
    with pytest.raises(Exception, match="SQLSTATE: 22"):
        spark.sql(f"SELECT id FROM {view} WHERE {text}").collect()
    with pytest.raises(CarbonFilterError):
        _ours(text)


def test_guards_spark_honours_are_honoured():
    # CASE, COALESCE and the right side of AND reach only the rows the left side lets through
    assert _ours("CASE WHEN i = 0 THEN FALSE ELSE 10 / i > 1 END") == [0, 6, 9]
    assert _ours("i <> 0 AND 10 / i > 1") == [0, 6, 9]
    assert _ours("i = 0 OR 10 % i = 0") == [2, 7, 8, 9]
    assert _ours("coalesce(id, 1 / 0) >= 0") == list(range(12))  # id is never null: 1 / 0 is never reached
    with pytest.raises(CarbonFilterError, match="division by zero"):
        _ours("coalesce(i, 1) / (id - id) > 0")


@pytest.mark.parametrize(("text", "message"), [
    ("lowr(s) = 'a'", "unknown function 'lowr'.*did you mean lower"),
    ("substring(s) = 'a'", "substring takes 2 to 3 arguments, found 1"),
    ("upper(i) = 'A'", r"column 'i'.*upper expects a string, found INT"),
    ("s + 1 > 2", r"column 's'.*\+ expects numbers"),
    ("lower(s) = 1", r"column 's'.*cannot compare lower\(s\) \(STRING\) and 1 \(INT\)"),
    ("year(s) = 2020", r"column 's'.*year expects a DATE or TIMESTAMP, found STRING"),
    ("CAST(ts AS INT) = 1", r"column 'ts'.*cannot cast TIMESTAMP to INT"),
    ("i % 2", "is a INT value, not a condition"),
    ("CASE WHEN i THEN 1 END = 1", "CASE condition must be TRUE or FALSE, found INT"),
    ("coalesce(i, s) = 1", "mixes values of types INT, STRING"),
    ("lower(nope) = 'a'", "'nope', which is not in the table"),
])
def test_errors_name_the_function_and_the_column(text, message):
    with pytest.raises(CarbonOptionError, match=message):
        _ours(text)


def test_delete_by_a_computed_predicate(tmp_path):
    path = str(tmp_path / "t")
    carbon_ds.write_table(ROWS, path, sort_columns="id")
    table = carbon_ds.CarbonTable.open(path)
    assert table.delete("id % 2 = 1") == 6
    assert sorted(carbon_ds.read_table(path).column("id").to_pylist()) == [0, 2, 4, 6, 8, 10]
    # pruning still uses the translatable part: a filter that only the computed part could narrow reads all
    assert carbon_ds.read_table(path, filter="id >= 6 AND lower(s) LIKE '%a%'").column("id").to_pylist() == [6]
    assert isinstance(CarbonFilterError("x"), CarbonError)
