"""Queries read only what they need, planned by the Spark extension (jvm/src PruneCarbonRelations): through
``carbon_ds.sql``, each relation occurrence declares only the columns the query reads and carries the
query's predicates as its ``filter`` option. Every check runs the same statement through ``carbon_ds.sql``
and through plain ``spark.sql`` with the extension's rules off (Spark reading every column of every row) and
compares the sorted rows; what each relation reads is checked too (tests/spark/plan_reads.py), since a query
the rules left alone would prove nothing."""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import os
import random
import warnings
from decimal import Decimal

import pyarrow as pa
import pytest
from plan_reads import reads, statement_reads
from spark_confs import confs

import carbon_ds
from carbon_ds.names import CONF_EXTENSION, CONF_LOCAL_BYTES
from carbon_ds.table.read.planned_reads import scan_bytes

pytestmark = pytest.mark.spark

DEPTS = [f"d{i}" for i in range(8)]
SEGMENT_ROWS = 600  # emp: 3 loads of 600 rows, sorted on id: 3 files of one blocklet each


def _emp(rnd: random.Random, ids: range) -> pa.Table:
    n = len(ids)

    def some(make, p_null):
        return [make() if rnd.random() > p_null else None for _ in range(n)]

    return pa.table({
        "id": pa.array(list(ids), pa.int32()),
        "dept": pa.array(some(lambda: rnd.choice(DEPTS), 0.03)),
        "Salary": pa.array(some(lambda: round(rnd.uniform(0, 10000), 2), 0.05)),
        "hired": pa.array([dt.date(2019, 1, 1) + dt.timedelta(days=rnd.randrange(1200)) for _ in range(n)]),
        "ts": pa.array([dt.datetime(2021, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=rnd.randrange(10**7))
                        for _ in range(n)], pa.timestamp("us", tz="UTC")),
        "flag": pa.array(some(lambda: rnd.random() > 0.5, 0.1)),
        "mgr": pa.array(some(lambda: rnd.randrange(0, 3 * SEGMENT_ROWS), 0.2), pa.int64()),
        "amount": pa.array([Decimal(rnd.randrange(-10**6, 10**6)) / 100 for _ in range(n)], pa.decimal128(10, 2)),
        "note": pa.array([rnd.choice(["alpha", "beta", "it's", "gamma_1", "100%", "Alpha"]) for _ in range(n)]),
    })


@pytest.fixture(scope="module")
def tables(ext, tmp_path_factory):
    spark = ext
    root = tmp_path_factory.mktemp("query_aware")
    paths = {k: str(root / k) for k in ("emp", "dept", "nan", "target_a", "target_b")}
    rnd = random.Random(7)
    for seg in range(3):
        carbon_ds.write_table(_emp(rnd, range(seg * SEGMENT_ROWS, (seg + 1) * SEGMENT_ROWS)), paths["emp"],
                              sort_columns="id")
    carbon_ds.write_table(pa.table({
        "dept": [*DEPTS, None],
        "region": ["north", "south", "east", "west", "north", "south", None, "east", "west"],
        "budget": pa.array([100, 250, 300, 50, 900, 120, 75, 640, 10], pa.int64()),
    }), paths["dept"])
    # floating edge cases; the second load's only values are -0.0 (min = max = -0.0)
    carbon_ds.write_table(pa.table({"x": pa.array([math.nan, 1.0, 7.0, None, 0.0], pa.float64()),
                                    "i": pa.array([1, 2, 3, 4, 5], pa.int32())}), paths["nan"])
    carbon_ds.write_table(pa.table({"x": pa.array([-0.0, -0.0], pa.float64()), "i": pa.array([6, 7], pa.int32())}),
                          paths["nan"])
    for k in ("target_a", "target_b"):
        carbon_ds.write_table(pa.table({"id": pa.array([-1], pa.int32()), "dept": ["seed"],
                                        "total": pa.array([0.0], pa.float64())}), paths[k])

    for name in ("emp", "dept", "nan", "target_a", "target_b"):
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {name} USING carbondata OPTIONS (path '{paths[name]}')")
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW rich AS SELECT * FROM emp WHERE salary > 5000")
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW rich_recent AS SELECT id, dept, hired FROM rich "
              "WHERE hired >= DATE '2020-01-01'")
    spark.read.format("carbondata").load(paths["emp"]).createOrReplaceTempView("emp_df")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW emp_f USING carbondata OPTIONS (path '{paths['emp']}', "
              "filter 'id < 1000')")
    (spark.read.format("carbondata").schema("ID bigint, dept string, salary double").load(paths["emp"])
        .createOrReplaceTempView("emp_wide"))
    yield paths
    for name in ("emp", "dept", "nan", "target_a", "target_b", "rich", "rich_recent", "emp_df", "emp_f",
                 "emp_wide"):
        spark.catalog.dropTempView(name)


def _norm(rows) -> list:
    def cell(v):
        if isinstance(v, float):
            return ("f", None) if math.isnan(v) else ("f", round(v, 6))
        return (type(v).__name__, v)

    return sorted((tuple(cell(v) for v in r) for r in rows), key=repr)


def _tasks_read(spark):
    """Every read left to the relations' tasks (no small read's rows read at planning), so what each relation
    declares shows as the relation Spark runs."""
    return confs(spark, **{CONF_LOCAL_BYTES: "0"})


@contextlib.contextmanager
def _rules_off(spark):
    """Plain Spark: the extension's rules off, every column of every row read."""
    with confs(spark, **{CONF_EXTENSION: "false"}):
        yield


def _check(spark, q: str) -> list:
    """carbon_ds.sql(q) == plain Spark's answer, and the extension's rules planned q: some relation was pruned,
    or answered at planning (fewer relations left than plain Spark reads). Returns the reads of q."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        df = carbon_ds.sql(spark, q)
        got = _norm(df.collect())
    planned = reads(df)
    with _rules_off(spark):
        want = _norm(spark.sql(q).collect())
        plain = statement_reads(spark, q)
    assert any(r.pruned for r in planned) or len(planned) < len(plain), (planned, plain)
    assert not any(r.pruned for r in plain)
    assert got == want, (q, got[:5], want[:5])
    return planned


QUERIES = {
    "self join, different columns":
        "SELECT a.id, b.salary FROM emp a JOIN emp b ON a.mgr = b.id "
        "WHERE a.dept = 'd1' AND b.hired >= DATE '2020-06-01'",
    "subqueries: correlated scalar, IN, uncorrelated scalar, EXISTS, NOT EXISTS":
        "SELECT id FROM emp e WHERE salary > (SELECT avg(salary) + 4000 FROM emp x WHERE x.dept = e.dept) "
        "AND e.dept IN (SELECT dept FROM dept WHERE budget > (SELECT min(budget) FROM dept)) "
        "AND EXISTS (SELECT 1 FROM dept d WHERE d.dept = e.dept AND d.region = 'north') "
        "AND NOT EXISTS (SELECT 1 FROM emp e2 WHERE e2.mgr = e.id AND e2.amount > 9000)",
    "CTE used twice":
        "WITH c AS (SELECT id, dept, salary FROM emp WHERE flag) SELECT c1.id, c2.id FROM c c1 JOIN c c2 "
        "ON c1.dept = c2.dept AND c1.id < c2.id WHERE c1.salary > 9900 AND c2.salary < 50",
    "UNION, UNION ALL, views over views":
        "SELECT id FROM emp WHERE dept = 'd2' AND id < 300 UNION SELECT mgr FROM emp WHERE id < 10 "
        "UNION ALL SELECT budget FROM dept WHERE region IN ('north', 'south') "
        "UNION ALL SELECT count(*) FROM rich_recent WHERE hired < DATE '2021-01-01' GROUP BY dept",
    "nulls, NOT IN, IS NULL, untranslatable predicates":
        "SELECT count(*), count(mgr), count(dept) FROM emp WHERE mgr IS NULL OR mgr NOT IN (1, 2, 3) "
        "OR dept IS NULL UNION ALL SELECT count(*), sum(id), 0 FROM emp WHERE upper(dept) = 'D1' "
        "AND salary + 1 > 9000 AND id % 7 = 0 AND note LIKE '%a'",
    "DATE and TIMESTAMP literals, sub-millisecond timestamp, string date, NOT LIKE, NOT IN":
        "SELECT id FROM emp WHERE ts >= TIMESTAMP '2021-03-01 10:00:00' AND ts < TIMESTAMP '2021-03-09 00:00:00' "
        "AND hired BETWEEN DATE '2020-02-01' AND DATE '2021-12-31' UNION ALL SELECT id FROM emp "
        "WHERE (hired = '2020-03-01' OR ts > TIMESTAMP '2021-04-01 00:00:00.0005') AND note NOT LIKE 'be%' "
        "AND hired NOT IN (DATE '2020-01-01', DATE '2020-01-02', DATE '2020-01-03')",
    "IN lists, quotes, LIKE prefix, case-insensitive names, boolean column, decimal, <=>":
        "SELECT id FROM emp WHERE id IN (1, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 601, 603) "
        "AND note IN ('it''s', 'alpha', '100%', 'gamma_1') OR note LIKE 'Alp%' AND id < 40 "
        "UNION ALL SELECT ID FROM EMP WHERE Dept <=> 'd3' AND FLAG AND Amount >= -100.5 AND NOT flag IS NULL",
    "count(*) from metadata, with a filter option, with a predicate":
        "SELECT (SELECT count(*) FROM emp) AS total, (SELECT count(*) FROM emp_f) AS first_1000, "
        "(SELECT count(*) FROM emp WHERE mgr > 100) AS with_mgr",
    "LEFT JOIN with ON predicates, EXCEPT, window":
        "SELECT a.id, d.region FROM emp a LEFT JOIN dept d ON a.dept = d.dept AND a.salary > 5000 "
        "AND d.region = 'north' WHERE a.id < 50 EXCEPT SELECT id, 'x' FROM (SELECT id, row_number() OVER "
        "(PARTITION BY dept ORDER BY id) rn FROM emp) WHERE rn <= 3",
    "double column: NaN and -0.0":
        "SELECT i, x FROM nan WHERE x > 5 OR x = 0.0 OR NOT (x < 1) OR x IN (7.0, 1.0) OR x IN (0.0) "
        "UNION ALL SELECT i, x FROM nan WHERE x = -0.0 OR x < 1.5 OR x <= -0.0 AND i > 5",
    "DataFrame view, filter-option view, user schema of wider types":
        "SELECT e.id, f.dept, w.salary FROM emp_df e JOIN emp_f f ON e.id = f.id JOIN emp_wide w ON w.id = e.id "
        "WHERE e.id BETWEEN 590 AND 610 AND w.salary IS NOT NULL",
    # rand() values depend on which rows reach it in which partition: no row may be pruned before it
    "non-deterministic expressions":
        "SELECT count(*), 0.0 FROM emp WHERE rand(3) < 0.5 AND id < 100 "
        "UNION ALL SELECT id, rand(1) FROM emp WHERE id >= 1000 AND id < 1010",
}


@pytest.mark.parametrize("title", list(QUERIES))
def test_query_equals_unpruned_spark_sql(spark, tables, title):
    _check(spark, QUERIES[title])


def test_each_occurrence_reads_only_its_columns_and_rows(spark, tables):
    q = QUERIES["self join, different columns"]
    with _tasks_read(spark):
        planned = sorted(reads(carbon_ds.sql(spark, q)), key=lambda r: r.columns)
    assert [r.columns for r in planned] == [("id", "Salary", "hired"), ("id", "dept", "mgr")]
    assert "`hired` >= DATE '2020-06-01'" in planned[0].filter and "`dept` = 'd1'" in planned[1].filter
    assert all(r.path == tables["emp"] and r.pruned and not r.local for r in planned)
    with _rules_off(spark):
        plain = statement_reads(spark, q)
    assert [len(r.columns) for r in plain] == [9, 9] and all(r.filter is None for r in plain)

    # a point lookup on the sort column reads one of the three files' blocklets
    with _tasks_read(spark):
        (read,) = statement_reads(spark, "SELECT salary FROM emp WHERE id = 700")
    assert read.columns == ("id", "Salary")
    report = carbon_ds.explain(read.path, read.filter)
    assert (report["blocklets"]["read"], report["blocklets"]["total"]) == (1, 3)
    assert carbon_ds.explain(read.path)["blocklets"]["read"] == 3


def test_count_star_reads_no_column(spark, tables):
    q = "SELECT count(*) FROM emp"
    # counted from the index files at planning: a one-slice range of empty rows, no carbondata read
    assert _check(spark, q) == []
    assert f"Range (0, {3 * SEGMENT_ROWS}, step=1, splits=Some(1))" in (
        carbon_ds.sql(spark, q)._jdf.queryExecution().optimizedPlan().toString())
    with _tasks_read(spark):
        (read,) = statement_reads(spark, "SELECT count(*) FROM emp WHERE id >= 1000")
    assert read.columns == ("id",) and "`id` >= 1000" in read.filter


def test_column_less_read_counts_rows(spark, tmp_path):
    """A relation declaring no column still has rows: count(*) over it must see them all."""
    path = str(tmp_path / "t")
    carbon_ds.write_table(pa.table({"a": list(range(1000)), "s": [str(i) for i in range(1000)]}), path)
    carbon_ds.write_table(pa.table({"a": list(range(500)), "s": [str(i) for i in range(500)]}), path)
    df = carbon_ds.read(spark, path, columns=[])
    assert df.columns == [] and df.count() == 1500
    assert carbon_ds.read(spark, path, columns=[], filter="a < 10").count() == 20
    assert carbon_ds.read(spark, path, columns=[], segments="1").count() == 500
    carbon_ds.CarbonTable.open(path).delete("a >= 990")
    assert df.count() == 1490  # deleted rows are not counted, also by a DataFrame made before
    assert carbon_ds.read(spark, path, columns=[], filter="s = '995'").count() == 0


def _same_writes(spark, statement: str) -> None:
    """``statement`` into target_a through carbon_ds.sql (its query pruned by the extension's rules) and into
    target_b through spark.sql with the rules off leave the two tables equal."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        assert any(r.pruned for r in statement_reads(spark, statement.format(t="target_a")))
        carbon_ds.sql(spark, statement.format(t="target_a"))
    with _rules_off(spark):
        spark.sql(statement.format(t="target_b"))
    a = _norm(spark.sql("SELECT * FROM target_a").collect())
    assert a == _norm(spark.sql("SELECT * FROM target_b").collect()) and a


def test_insert_select(spark, tables):
    ins = ("INSERT INTO {t} SELECT e.id, d.region, e.salary FROM emp e JOIN dept d ON e.dept = d.dept "
           "WHERE e.id < 200 AND d.budget > 100")
    assert {r.columns for r in statement_reads(spark, ins.format(t="target_a"))} == {
        ("id", "dept", "Salary"), ("dept", "region", "budget")}
    _same_writes(spark, ins)
    # read and write the same view in one statement
    _same_writes(spark, "INSERT INTO {t} SELECT id + 10000, dept, total FROM {t} WHERE id < 50")
    _same_writes(spark, "INSERT OVERWRITE {t} SELECT id, note, salary FROM emp WHERE id BETWEEN 5 AND 9")
    assert spark.sql("SELECT count(*) FROM target_a").first()[0] == 5


def test_insert_into_parquet_table(spark, tables):
    spark.sql("CREATE TABLE qa_pq (id INT, dept STRING) USING parquet")
    try:
        q = "INSERT INTO qa_pq SELECT id, dept FROM emp WHERE id < 10"
        assert [r.columns for r in statement_reads(spark, q)] == [("id", "dept")]
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            carbon_ds.sql(spark, q)
        assert sorted(r.id for r in spark.sql("SELECT id FROM qa_pq").collect()) == list(range(10))
    finally:
        spark.sql("DROP TABLE qa_pq")


def test_freshness_same_views_different_filters(spark, tables):
    """One session, the same views and shapes with changing filters, unfiltered queries in between, an
    append on the way, and a DataFrame kept and collected again at the end."""
    rnd = random.Random(1)
    kept = []
    for step in range(5):
        lo = rnd.randrange(0, 3 * SEGMENT_ROWS - 100)
        q = [f"SELECT count(*), sum(id) FROM emp WHERE id >= {lo} AND id < {lo + 37}",
             "SELECT count(*), sum(id) FROM emp",
             f"SELECT count(*) FROM emp a JOIN emp b ON a.id = b.mgr WHERE a.id < {lo} AND b.dept = 'd{step}'",
             f"SELECT dept, count(*) FROM rich WHERE dept IN ('d{step}', 'd{(step + 1) % 8}') GROUP BY dept",
             ][step % 4]
        kept.append((q, carbon_ds.sql(spark, q)))
        with _rules_off(spark):
            want = _norm(spark.sql(q).collect())
        assert _norm(kept[-1][1].collect()) == want, q
        if step == 1:
            spark.sql("INSERT INTO emp SELECT id + 100000, dept, salary, hired, ts, flag, mgr, amount, note "
                      "FROM emp WHERE id < 20")
    q, df = kept[-1]  # the same shape as the first, another filter
    assert q.startswith("SELECT count(*), sum(id) FROM emp WHERE") and q != kept[0][0]
    with _rules_off(spark):
        want = _norm(spark.sql(q).collect())
    assert _norm(df.collect()) == want, q
    _check(spark, "SELECT count(*) FROM emp")  # a new statement sees the append


def test_what_passes_through(spark, tables):
    # a command runs once, through spark.sql; its view keeps the original relation
    carbon_ds.sql(spark, "CREATE OR REPLACE TEMPORARY VIEW qa_cmd AS SELECT id, dept FROM emp WHERE id < 10")
    assert spark.sql("SELECT count(*), count(dept) FROM qa_cmd").first()[0] == 10
    spark.catalog.dropTempView("qa_cmd")
    assert "emp" in {r.tableName for r in carbon_ds.sql(spark, "SHOW TABLES").collect()}
    # the user's errors come from spark.sql as usual
    with pytest.raises(Exception, match="PARSE_SYNTAX_ERROR|Syntax error"):
        carbon_ds.sql(spark, "SELEC 1")
    with pytest.raises(Exception, match="no_such_column|UNRESOLVED_COLUMN"):
        carbon_ds.sql(spark, "SELECT no_such_column FROM emp")
    # cached data is read from the cache, so the plan stays as it is
    q = "SELECT region, sum(budget) FROM dept WHERE budget > 60 GROUP BY region"
    carbon_ds.sql(spark, "CACHE TABLE dept")
    try:
        assert spark.catalog.isCached("dept")
        df = carbon_ds.sql(spark, q)
        assert reads(df) == []
        assert _norm(df.collect()) == _norm(spark.sql(q).collect())
    finally:
        spark.sql("UNCACHE TABLE dept")
    # the switch: without the extension's rules, Spark's own plan, answered alike
    q = "SELECT id FROM emp WHERE id = 3"
    with _rules_off(spark):
        assert [len(r.columns) for r in statement_reads(spark, q)] == [9]
        assert [r.id for r in carbon_ds.sql(spark, q).collect()] == [3]
    with _tasks_read(spark):
        assert [r.columns for r in reads(carbon_ds.sql(spark, q))] == [("id",)]


def test_optimize_dataframe(spark, tables):
    emp = spark.read.format("carbondata").load(tables["emp"])
    dept = spark.read.format("carbondata").load(tables["dept"])
    df = (emp.where("id < 300 AND salary < 2000").join(dept, "dept")
          .groupBy("region").agg({"salary": "max", "id": "count"}))
    assert _norm(carbon_ds.optimize(df).collect()) == _norm(df.collect())
    # the DataFrame itself is planned by the extension's rules
    planned = reads(df)
    assert sorted(r.columns for r in planned) == [("dept", "region"), ("id", "dept", "Salary")]
    assert "`id` < 300" in next(r.filter for r in planned if "id" in r.columns)
    plain = spark.range(3)
    assert carbon_ds.optimize(plain) is plain  # nothing to rewrite: the same DataFrame


def _data_files(path: str) -> dict[str, int]:
    return {os.path.join(root, f): os.path.getsize(os.path.join(root, f))
            for root, _d, files in os.walk(path) for f in files if f.endswith(".carbondata")}


def test_scan_bytes_counts_only_surviving_files(tmp_path):
    path = str(tmp_path / "t")
    for seg in range(3):  # one file per load, ids 0-599, 600-1199, 1200-1799
        carbon_ds.write_table(pa.table({"id": pa.array(range(seg * 600, (seg + 1) * 600), pa.int32())}), path,
                              sort_columns="id")
    files = _data_files(path)
    assert len(files) == 3
    assert scan_bytes(path) == sum(files.values())
    assert scan_bytes(path, "id < 0") == 0
    first = scan_bytes(path, "id < 600")
    assert first in set(files.values()), (first, files)


def test_small_relations_are_broadcast(spark, tables):
    """Spark sizes a Python data source at Long.MaxValue, so plain Spark sort-merge joins even a 9-row table;
    the extension gives Spark an estimate (read by the tasks, not rows read at planning), and the small side
    is broadcast."""
    q = "SELECT e.id, d.region FROM emp e JOIN dept d ON e.dept = d.dept WHERE e.salary > 9000"
    with _rules_off(spark):
        plain = spark.sql(q)._jdf.queryExecution().executedPlan().toString()
    assert "SortMergeJoin" in plain and "BroadcastHashJoin" not in plain
    with _tasks_read(spark):
        planned = carbon_ds.sql(spark, q)._jdf.queryExecution().executedPlan().toString()
        assert "BroadcastHashJoin" in planned and "SortMergeJoin" not in planned
        _check(spark, q)


def test_decimals_travel_unscaled_and_are_rebuilt_by_spark(spark, tables):
    """A decimal of at most 18 digits reaches Spark as its unscaled bigint and MakeDecimal rebuilds it in
    the JVM (Spark converts Arrow decimals value by value through BigDecimal); the answers are unchanged."""
    q = ("SELECT dept, sum(amount), min(amount), max(amount), count(amount) FROM emp "
         "WHERE amount > -5000.5 OR amount IS NULL GROUP BY dept")
    with _tasks_read(spark):
        df = carbon_ds.sql(spark, q)
        plan = df._jdf.queryExecution().optimizedPlan().toString().lower()
        assert "makedecimal(" in plan and [r.unscaled for r in reads(df)] == [("amount:10:2",)], plan
        _check(spark, q)


def test_unscaled_decimals_option(spark, tables):
    path = tables["emp"]
    base = spark.read.format("carbondata").load(path).select("id", "amount").collect()
    want = {r.id: None if r.amount is None else int(r.amount * 100) for r in base}
    got = (spark.read.format("carbondata").schema("id int, amount bigint").option("unscaled_decimals", "AMOUNT")
           .load(path).collect())
    assert {r.id: r.amount for r in got} == want
    assert any(v is not None and v % 100 for v in want.values())  # cents survive: not a rounded cast
    for column, schema, message in [
        ("dept", "id int, dept bigint", "unscaled_decimals: column 'dept' is string; expected a decimal"),
        ("amount", "id int, amount decimal(10,2)", "unscaled_decimals: column 'amount' must be declared bigint"),
    ]:
        with pytest.raises(Exception, match=message):
            spark.read.format("carbondata").schema(schema).option("unscaled_decimals", column).load(path).collect()


def test_small_read_runs_on_the_driver(spark, tables):
    """carbon_ds.read of a read touching at most carbon_ds.sql.localRelationBytes is done on the driver and
    handed to Spark as a local relation (no Python data source task); its rows equal the data source's."""
    cols, flt = ["id", "amount", "ts", "note"], "id >= 100 AND id < 160 AND note <> 'beta'"
    local = carbon_ds.read(spark, tables["emp"], columns=cols, filter=flt)
    assert "LocalRelation" in local._jdf.queryExecution().analyzed().toString()
    spark.conf.set(CONF_LOCAL_BYTES, "0")
    try:
        remote = carbon_ds.read(spark, tables["emp"], columns=cols, filter=flt)
        assert "LocalRelation" not in remote._jdf.queryExecution().analyzed().toString()
        assert local.schema == remote.schema
        assert _norm(local.collect()) == _norm(remote.collect())
        assert 0 < local.count() < 60
    finally:
        spark.conf.unset(CONF_LOCAL_BYTES)
