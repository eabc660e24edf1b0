"""MERGE INTO through carbon_ds.sql (the join in Spark, or for a plain key equality with unconditional
UPDATE SET * / DELETE / INSERT * and a small source, in pyarrow: carbon_ds.spark.statements.merge_into), against DuckDB's
own MERGE INTO on copies of the same rows."""

from __future__ import annotations

import random

import duckdb
import pyarrow as pa
import pytest

import carbon_ds
from carbon_ds.ddl.statement_parser import MergeInto, parse
from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.spark.statements import catalog, merge_into

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string()), ("p", pa.int32())])
COLS = ["id", "v", "s", "p"]
ALL_SET = "id = s.id, v = s.v, s = s.s, p = s.p"
ALL_VALUES = "(id, v, s, p) VALUES (s.id, s.v, s.s, s.p)"


def _rows(ids, rng: random.Random) -> pa.Table:
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "v": pa.array([rng.randrange(100) for _ in ids], pa.int64()),
        "s": pa.array([rng.choice(["a", "b", "c", None]) for _ in ids], pa.string()),
        "p": pa.array([rng.randrange(3) for _ in ids], pa.int32()),
    }, schema=SCHEMA)


def _sorted(rows) -> list[tuple]:
    return sorted((tuple(r) for r in rows), key=lambda r: tuple((x is None, x) for x in r))


# (our statement's WHEN clauses, DuckDB's equivalent)
CASES = [
    ("WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
     f"WHEN MATCHED THEN UPDATE SET {ALL_SET} WHEN NOT MATCHED THEN INSERT {ALL_VALUES}"),
    ("WHEN MATCHED AND s.s = 'a' THEN DELETE WHEN MATCHED AND s.v > t.v THEN UPDATE SET v = s.v + t.v, "
     "s = CASE WHEN s.v > 90 THEN 'big' ELSE 'when' END WHEN NOT MATCHED AND s.v < 40 THEN INSERT *",
     "WHEN MATCHED AND s.s = 'a' THEN DELETE WHEN MATCHED AND s.v > t.v THEN UPDATE SET v = s.v + t.v, "
     f"s = CASE WHEN s.v > 90 THEN 'big' ELSE 'when' END WHEN NOT MATCHED AND s.v < 40 THEN INSERT {ALL_VALUES}"),
    ("WHEN MATCHED THEN DELETE", "WHEN MATCHED THEN DELETE"),
    ("WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, -1)",
     "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, -1)"),
]


@pytest.fixture
def join_in(spark, request, monkeypatch):
    """Where the MERGE joins: "pyarrow" (the default route for the statements that qualify) or "spark"
    (carbon_ds.merge.driverJoinRows=0); yields the list of statements the pyarrow route took."""
    taken: list[bool] = []
    real = merge_into._driver_merge

    def spy(*args, **kwargs):
        got = real(*args, **kwargs)
        taken.append(got is not None)
        return got

    monkeypatch.setattr(merge_into, "_driver_merge", spy)
    if request.param == "spark":
        spark.conf.set(merge_into.CONF_DRIVER_ROWS, "0")
    try:
        yield request.param, taken
    finally:
        spark.conf.unset(merge_into.CONF_DRIVER_ROWS)


@pytest.mark.parametrize("join_in", ["pyarrow", "spark"], indirect=True)
@pytest.mark.parametrize("partitioned", [False, True])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_sql_merge_matches_duckdb(spark, partitioned, case, join_in):
    ours, theirs = CASES[case]
    rng = random.Random(case * 2 + partitioned)
    before = _rows(list(range(60)) + [None], rng)
    src = _rows(list(range(40, 90, 2)) + list(range(3, 20, 4)) + [None], rng)
    name = f"mrg_{case}_{int(partitioned)}"
    carbon_ds.sql(spark, f"DROP TABLE IF EXISTS {name}")
    part = " PARTITIONED BY (p INT)" if partitioned else ""
    carbon_ds.sql(spark, f"CREATE TABLE {name} (id BIGINT, v BIGINT, s STRING{'' if partitioned else ', p INT'}){part} "
                  "STORED AS carbondata")
    spark.createDataFrame(before.to_pandas()).createOrReplaceTempView("mrg_before")
    carbon_ds.sql(spark, f"INSERT INTO {name} SELECT id, v, s, p FROM mrg_before")
    spark.createDataFrame(src.to_pandas(), "id bigint, v bigint, s string, p int").createOrReplaceTempView("mrg_src")

    out = carbon_ds.sql(spark, f"MERGE INTO {name} t USING mrg_src AS s ON t.id = s.id {ours}").collect()[0]

    con = duckdb.connect()
    con.sql("CREATE TABLE t (id BIGINT, v BIGINT, s VARCHAR, p INTEGER)")
    con.register("b", before)
    con.register("src", src)
    con.sql("INSERT INTO t SELECT * FROM b")
    con.sql(f"MERGE INTO t USING src AS s ON t.id = s.id {theirs}")
    want = con.sql("SELECT id, v, s, p FROM t").fetchall()
    path = catalog.default_location(spark, "default", name)
    got = carbon_ds.read_table(path).select(COLS)
    assert _sorted(zip(*[got[c].to_pylist() for c in COLS], strict=True)) == _sorted(want)
    through_spark = spark.sql(f"SELECT id, v, s, p FROM {name}").collect()
    assert _sorted(through_spark) == _sorted(want)
    assert out.num_affected_rows == out.num_updated_rows + out.num_deleted_rows + out.num_inserted_rows > 0
    where, taken = join_in
    # the unconditional * and DELETE cases qualify for the pyarrow join; conditions and SET lists need Spark SQL
    assert taken == [where == "pyarrow" and case in (0, 2)]


def test_sql_merge_query_source_and_duplicate_error(spark):
    carbon_ds.sql(spark, "DROP TABLE IF EXISTS mrg_q")
    carbon_ds.sql(spark, "CREATE TABLE mrg_q (id BIGINT, v BIGINT) STORED AS carbondata")
    carbon_ds.sql(spark, "INSERT INTO mrg_q VALUES (1, 10), (2, 20), (3, 30)")
    out = carbon_ds.sql(spark, "MERGE INTO mrg_q AS t USING (SELECT id, v * 100 AS v FROM VALUES (2, 1), (4, 2) "
                               "AS x(id, v)) src ON t.id = src.id WHEN MATCHED THEN UPDATE SET t.v = src.v "
                               "WHEN NOT MATCHED THEN INSERT *").collect()[0]
    assert (out.num_updated_rows, out.num_inserted_rows) == (1, 1)
    assert sorted(spark.sql("SELECT id, v FROM mrg_q").collect()) == [(1, 10), (2, 100), (3, 30), (4, 200)]
    with pytest.raises(CarbonTableError, match="id=3 is matched by 2 source rows"):
        carbon_ds.sql(spark, "MERGE INTO mrg_q t USING (SELECT * FROM VALUES (3, 1), (3, 2) AS x(id, v)) s "
                             "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v")
    assert sorted(spark.sql("SELECT id, v FROM mrg_q").collect()) == [(1, 10), (2, 100), (3, 30), (4, 200)]
    # the same through the pyarrow join (bigint keys and values, UPDATE SET *): the same error, nothing changed
    with pytest.raises(CarbonTableError, match="id=3 is matched by 2 source rows"):
        carbon_ds.sql(spark, "MERGE INTO mrg_q t USING (SELECT CAST(id AS BIGINT) id, CAST(v AS BIGINT) v FROM "
                             "VALUES (3, 1), (3, 2) AS x(id, v)) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *")
    assert sorted(spark.sql("SELECT id, v FROM mrg_q").collect()) == [(1, 10), (2, 100), (3, 30), (4, 200)]


def test_parse_merge_forms():
    m = parse("merge into db.t using (select * from x where a = 'when') as s on t.id = s.id "
              "when matched and s.op = 'D' then delete when matched then update set t.v = s.v, w = 'a, b' "
              "when not matched then insert *")
    assert isinstance(m, MergeInto) and (m.table.db, m.table.name, m.target_alias) == ("db", "t", "t")
    assert m.source_is_query and m.source == "select * from x where a = 'when'" and m.source_alias == "s"
    assert [(c.matched, c.action, c.condition) for c in m.clauses] == [
        (True, "delete", "s.op = 'D'"), (True, "update", None), (False, "insert", None)]
    assert m.clauses[1].sets == (("v", "s.v"), ("w", "'a, b'")) and m.clauses[2].sets is None
    with pytest.raises(CarbonOptionError, match="only the last WHEN MATCHED"):
        parse("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE WHEN MATCHED AND s.x THEN DELETE")
    with pytest.raises(CarbonOptionError, match="expects THEN INSERT"):
        parse("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN DELETE")


@pytest.mark.parametrize("point", ["merge.joined", "dml.deltas_written", "dml.before_status"])
def test_killed_sql_merge_leaves_table_as_before(spark, point):
    from carbon_ds import faults

    carbon_ds.sql(spark, "DROP TABLE IF EXISTS mrg_kill")
    carbon_ds.sql(spark, "CREATE TABLE mrg_kill (id BIGINT, v BIGINT) PARTITIONED BY (p INT) STORED AS carbondata")
    carbon_ds.sql(spark, "INSERT INTO mrg_kill VALUES (1, 10, 0), (2, 20, 1), (3, 30, 0)")
    before = sorted(spark.sql("SELECT id, v, p FROM mrg_kill").collect())

    def crash(name):
        if name == point:
            raise RuntimeError(f"killed at {name}")

    stmt = ("MERGE INTO mrg_kill t USING (SELECT * FROM VALUES (2, 200, 1), (9, 900, 2) AS x(id, v, p)) s "
            "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    spark.conf.set(merge_into.CONF_DRIVER_ROWS, "0")  # the join in Spark (the pyarrow one: tests/table)
    try:
        with faults.inject(crash), pytest.raises(Exception, match="killed"):
            carbon_ds.sql(spark, stmt)
    finally:
        spark.conf.unset(merge_into.CONF_DRIVER_ROWS)
    assert sorted(spark.sql("SELECT id, v, p FROM mrg_kill").collect()) == before
    carbon_ds.sql(spark, stmt)  # the lock was released
    assert sorted(spark.sql("SELECT id, v, p FROM mrg_kill").collect()) == [(1, 10, 0), (2, 200, 1), (3, 30, 0),
                                                                           (9, 900, 2)]
