"""The Catalyst extension (jvm/src, ``carbon_ds.configure_spark``): plain Spark plans over carbondata
relations read only the columns and blocklets they need, and give the rows Spark gives without it.

The oracle is the same statement with the extension's rule switched off (conf
``carbon_ds.extension.enabled=false``), where Spark reads every column of every row and evaluates every
predicate itself, and row counts computed with pyarrow from the data written."""

from __future__ import annotations

import contextlib
import json
import os
import random
import warnings
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from plan_reads import reads
from pyspark import TaskContext
from pyspark.sql.functions import udf
from spark_confs import confs

import carbon_ds
from carbon_ds.spark import session as session_module
from carbon_ds.spark.bridge import extension
from carbon_ds.spark.bridge.extension import extension_active, jar_path
from carbon_ds.spark.source import query_version

pytestmark = pytest.mark.spark

ENABLED = "carbon_ds.extension.enabled"
LOCAL_BYTES = "carbon_ds.sql.localRelationBytes"
ROWS = 3000  # three loads of 1,000 rows sorted on id: three files of one blocklet each


@pytest.fixture(scope="module")
def emp(spark, tmp_path_factory):
    if jar_path() is None:
        if os.environ.get("CI"):
            pytest.fail("the Spark extension jar was not built (scripts/setup.sh runs scripts/build-jvm.sh)")
        pytest.skip("the Spark extension jar is not built (needs a JDK: scripts/build-jvm.sh)")
    assert extension_active(spark)
    path = str(tmp_path_factory.mktemp("ext") / "emp")
    rnd = random.Random(5)
    parts = []
    for seg in range(3):
        ids = list(range(seg * 1000, (seg + 1) * 1000))
        part = pa.table({
            "id": pa.array(ids, pa.int64()),
            "dept": [f"d{rnd.randrange(8)}" if rnd.random() > 0.05 else None for _ in ids],
            "salary": pa.array([rnd.uniform(0, 10000) for _ in ids], pa.float64()),
            "note": [rnd.choice(["alpha", "beta", "it's", "gamma_1", None]) for _ in ids],
            "x": pa.array([rnd.choice([float("nan"), -0.0, 0.0, 1.5, None]) for _ in ids], pa.float64()),
        })
        carbon_ds.write_table(part, path, sort_columns="id")
        parts.append(part)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW ext_emp USING carbondata OPTIONS (path '{path}')")
    # these tests look at the pruned relations: no small read becomes a local relation (test_small_reads_...)
    spark.conf.set(LOCAL_BYTES, "0")
    try:
        yield path, pa.concat_tables(parts)
    finally:
        spark.conf.unset(LOCAL_BYTES)
        spark.catalog.dropTempView("ext_emp")


@contextlib.contextmanager
def _rule_off(spark):
    spark.conf.set(ENABLED, "false")
    try:
        yield
    finally:
        spark.conf.unset(ENABLED)


def _reads(df) -> list[tuple[list[str], str | None]]:
    """(declared columns, filter option) of each carbondata relation Spark's tasks will read for ``df`` (rows
    read at planning left out)."""
    return [(list(r.columns), r.filter) for r in reads(df) if not r.local]


def _same(spark, make) -> list:
    """``make()`` (a new DataFrame each call) gives the same rows with and without the rule."""
    got = sorted(make().collect(), key=repr)
    with _rule_off(spark):
        want = sorted(make().collect(), key=repr)
    assert got == want
    return got


def test_dataframe_reads_only_needed_columns_and_blocklets(spark, emp):
    path, data = emp
    def q():  # a new DataFrame each time: a DataFrame keeps the plan it was optimized to
        return (spark.read.format("carbondata").load(path).filter("id >= 1200 AND id < 1300 AND dept = 'd1'")
            .select("salary"))

    ((columns, text),) = _reads(q())
    assert columns == ["id", "dept", "salary"]
    assert "`id` >= 1200" in text and "`id` < 1300" in text and "`dept` = 'd1'" in text
    report = carbon_ds.explain(path, text)
    assert (report["blocklets"]["read"], report["blocklets"]["total"]) == (1, 3)
    want = pc.sum(pc.and_(pc.and_(pc.greater_equal(data["id"], 1200), pc.less(data["id"], 1300)),
                          pc.equal(data["dept"], "d1"))).as_py()
    assert len(_same(spark, q)) == want
    with _rule_off(spark):
        ((columns, text),) = _reads(q())
    assert columns == ["id", "dept", "salary", "note", "x"] and text is None


def test_the_users_filter_option_holds_exactly_beside_sparks_loose_filters(spark, emp):
    """The extension joins the Filters Spark keeps above a relation to its filter option; Spark evaluates those
    again, so a unit whose rows nearly all pass them may come whole (``Names.EXACT_FILTER_OPTION`` says which
    part must hold: the user's own option). Here nearly every row passes Spark's filter, and the user's drops a
    tenth of the last file's rows, too few to make that file's copy pay: they must still go. pyarrow's filter of
    the written rows is the oracle."""
    path, data = emp
    def q(user: bool):
        reader = spark.read.format("carbondata")
        reader = reader.option("filter", "id < 2900") if user else reader
        return reader.load(path).where("dept IS NOT NULL").select("id")

    ((with_user,), (spark_only,)) = reads(q(True)), reads(q(False))
    assert with_user.exact_filter == "id < 2900" and "id < 2900" in with_user.filter
    assert "`dept` IS NOT NULL" in with_user.filter
    assert spark_only.exact_filter == "" and "`dept` IS NOT NULL" in spark_only.filter
    dept = pc.is_valid(data["dept"])  # 95% of the rows
    for user in (True, False):
        keep = pc.and_(dept, pc.less(data["id"], 2900)) if user else dept
        got = sorted(r.id for r in q(user).collect())
        assert got == sorted(data.filter(keep)["id"].to_pylist())


def test_reused_dataframe_never_loses_rows(spark, emp):
    """The shape that loses rows with pushFilters on PySpark 4.1-4.3: one DataFrame, several queries."""
    path, data = emp
    df = spark.read.format("carbondata").load(path)
    assert df.filter("id < 10").count() == 10
    assert df.filter("id >= 2990").count() == 10
    assert df.count() == ROWS
    assert df.filter("dept = 'd3'").count() == pc.sum(pc.equal(data["dept"], "d3")).as_py()
    assert df.select("id").distinct().count() == ROWS
    spark.sql("SELECT count(*) FROM ext_emp WHERE id < 5").collect()
    assert spark.sql("SELECT count(*) FROM ext_emp").first()[0] == ROWS


def _optimized(df) -> str:
    return df._jdf.queryExecution().optimizedPlan().toString()


def test_count_star_reads_no_column(spark, emp):
    df = spark.sql("SELECT count(*) FROM ext_emp")
    # counted from the index files at planning: a one-slice range of empty rows, no carbondata read
    assert _reads(df) == [] and f"Range (0, {ROWS}, step=1, splits=Some(1))" in _optimized(df)
    assert df.first()[0] == ROWS
    spark.conf.set(PLAN_READS, "false")
    try:
        df = spark.sql("SELECT count(*) FROM ext_emp")
        assert _reads(df) == [([], None)]  # read as rows only, counted in a Python task
        assert df.first()[0] == ROWS
    finally:
        spark.conf.unset(PLAN_READS)
    df = spark.sql("SELECT count(*) FROM ext_emp WHERE id >= 2500")
    ((columns, text),) = _reads(df)
    assert columns == ["id"] and "`id` >= 2500" in text
    assert df.first()[0] == 500


PLAN_READS = "carbon_ds.extension.planReads"


def _planned_partitions(df) -> list[int | None]:
    """Per carbondata relation of ``df``'s optimized plan: how many input partitions its source already
    holds (planned by the extension's one Python call for all of them, jvm/src ReadPlans), or None where
    Spark's own planning calls will make them."""
    return [r.partitions for r in reads(df) if not r.local]


def test_a_read_planning_proves_empty_runs_no_task(spark, emp):
    """Every blocklet ruled out by the filter: the read becomes an empty relation of the same columns at
    planning (no Python task), and the answer is the one Spark gives reading everything."""
    queries = ["SELECT id, salary FROM ext_emp WHERE id > 5000",
               "SELECT a.dept, count(*) FROM ext_emp a JOIN ext_emp b ON a.id = b.id WHERE b.id < -1 GROUP BY a.dept",
               "SELECT count(*) FROM ext_emp WHERE id > 5000"]
    for text in queries:
        df = spark.sql(text)
        assert _reads(df) == [] and "LocalRelation" in _optimized(df)  # no carbondata read is left
        assert sorted(df.collect(), key=repr) == _same(spark, lambda t=text: spark.sql(t))
    assert spark.sql(queries[0]).collect() == [] and spark.sql(queries[2]).first()[0] == 0
    # one blocklet may hold the key: read as before, and the row is there
    df = spark.sql("SELECT id, salary FROM ext_emp WHERE id = 2999")
    assert [c for c, _ in _reads(df)] == [["id", "salary"]] and [r.id for r in df.collect()] == [2999]
    spark.conf.set(PLAN_READS, "false")
    try:
        ((columns, text),) = _reads(spark.sql(queries[0]))
        assert columns == ["id", "salary"] and "`id` > 5000" in text
    finally:
        spark.conf.unset(PLAN_READS)


def test_count_star_from_metadata_follows_commits_and_deletes(spark, tmp_path):
    """Each query counts the table as it is when planned: loads and a DELETE since a DataFrame was made
    show in its next count, as pyarrow counts the rows written (CarbonTable.count less deleted rows)."""
    path = str(tmp_path / "counted")
    first = pa.table({"id": pa.array(range(500), pa.int64()), "v": pa.array([i % 7 for i in range(500)], pa.int64())})
    carbon_ds.write_table(first, path)
    df = spark.read.format("carbondata").load(path)
    spark.read.format("carbondata").load(path).createOrReplaceTempView("counted")
    try:
        assert df.count() == 500 and spark.sql("SELECT count(*) FROM counted").first()[0] == 500
        carbon_ds.write_table(first, path)
        assert df.count() == 1000 and spark.sql("SELECT count(*) FROM counted").first()[0] == 1000
        deleted = carbon_ds.CarbonTable.open(path).delete("v = 3")
        assert deleted == 2 * pc.sum(pc.equal(first["v"], 3)).as_py()
        assert "Range (0, " + str(1000 - deleted) in _optimized(spark.sql("SELECT count(*) FROM counted"))
        assert df.count() == 1000 - deleted == spark.sql("SELECT count(*) FROM counted").first()[0]
        # a filter still reads its column: the count of matching rows, not the table's
        assert df.filter("v = 3").count() == 0 and df.filter("v = 2").count() == 2 * pc.sum(
            pc.equal(first["v"], 2)).as_py()
    finally:
        spark.catalog.dropTempView("counted")


def test_reads_of_a_query_are_planned_in_one_call(spark, emp):
    path, data = emp
    text = ("SELECT a.dept, count(*), sum(b.salary) FROM ext_emp a JOIN ext_emp b ON a.id = b.id "
            "WHERE a.id >= 1500 GROUP BY a.dept")
    planned = _planned_partitions(spark.sql(text))
    assert len(planned) == 2 and None not in planned
    got = sorted(spark.sql(text).collect(), key=repr)
    single = spark.read.format("carbondata").load(path).filter("id < 2000").select("id", "note")
    spark.conf.set(PLAN_READS, "false")
    try:
        assert _planned_partitions(spark.sql(text)) == [None, None]
        assert sorted(spark.sql(text).collect(), key=repr) == got
        unbatched = spark.read.format("carbondata").load(path).filter("id < 2000").select("id", "note")
        want_partitions = unbatched.rdd.getNumPartitions()
    finally:
        spark.conf.unset(PLAN_READS)
    # the same input partitions as Spark's own planning call makes, and the rows pyarrow counts
    assert _planned_partitions(single) == [want_partitions] and single.rdd.getNumPartitions() == want_partitions
    assert sum(r[1] for r in got) == pc.sum(pc.greater_equal(data["id"], 1500)).as_py()


def test_a_read_failing_in_the_shared_call_fails_as_spark_plans_it(spark, emp):
    """A relation whose planning fails gets no answer from the shared call: Spark plans it itself and reports
    the data source's own error, naming the option."""
    path, _ = emp
    errors = []
    for value in ("true", "false"):
        spark.conf.set(PLAN_READS, value)
        try:
            df = spark.read.format("carbondata").option("filter", "id >>> 3").load(path).select("id")
            assert _planned_partitions(df) == [None]
            with pytest.raises(Exception) as caught:
                df.collect()
            errors.append(str(caught.value))
        finally:
            spark.conf.unset(PLAN_READS)
    assert all("filter" in e for e in errors)


QUERIES = [
    "SELECT a.id, b.salary FROM ext_emp a JOIN ext_emp b ON a.id = b.id + 1 WHERE a.dept = 'd1' AND b.id < 500",
    "SELECT dept, count(*), sum(salary) FROM ext_emp WHERE note IN ('it''s', 'alpha') OR note LIKE 'gam%' GROUP BY dept",
    "SELECT id FROM ext_emp WHERE x > 1 OR x = 0.0 OR NOT (x < 1) OR x IN (1.5, 0.0) OR x = -0.0 OR x <=> NULL",
    "SELECT id FROM ext_emp WHERE dept IS NULL AND id NOT IN (1, 2, 3) OR upper(note) = 'BETA' AND id % 7 = 0",
    "SELECT count(*) FROM ext_emp WHERE rand(3) < 0.5 AND id < 100",
    "SELECT id FROM ext_emp e WHERE salary > (SELECT avg(salary) + 4000 FROM ext_emp x WHERE x.dept = e.dept) "
    "AND EXISTS (SELECT 1 FROM ext_emp y WHERE y.id = e.id + 1000)",
    "WITH c AS (SELECT id, dept FROM ext_emp WHERE salary > 9000) SELECT c1.id, c2.id FROM c c1 JOIN c c2 "
    "ON c1.dept = c2.dept AND c1.id < c2.id WHERE c1.id < 1000",
    "SELECT id FROM ext_emp WHERE id BETWEEN 990 AND 1010 UNION SELECT id + 1 FROM ext_emp WHERE id > 2995",
    "SELECT CAST(id AS INT) FROM ext_emp WHERE CAST(id AS DECIMAL(20, 0)) = 17 OR CAST(id AS DOUBLE) < 2.5",
]


@pytest.mark.parametrize("q", QUERIES, ids=[f"q{i}" for i in range(len(QUERIES))])
def test_plain_spark_sql_equals_unpruned(spark, emp, q):
    _same(spark, lambda: spark.sql(q))


def test_translated_filters(spark, emp):
    """Predicates the filter text can say exactly (or weaker) go in; others stay with Spark alone (Spark's
    own inferred IS NOT NULL conjuncts come along)."""
    def parts(q):
        ((_columns, text),) = _reads(spark.sql(q))
        return set() if text is None else set(text.split(" AND ")) - {f"(`{c}` IS NOT NULL)" for c in
                                                                     ("id", "dept", "note", "x")}

    assert parts("SELECT id FROM ext_emp WHERE note = 'it''s' AND upper(dept) = 'D1'") == {"(`note` = 'it''s')"}
    assert parts("SELECT id FROM ext_emp WHERE x > 1") == set()  # NaN orders above every number in Spark only
    assert parts("SELECT id FROM ext_emp WHERE x <= 1.5") == {"(`x` <= 1.5D)"}
    assert parts("SELECT id FROM ext_emp WHERE id IN (1, 5, NULL)") == {"(`id` IN (1, 5))"}
    assert parts("SELECT id FROM ext_emp WHERE id NOT IN (1, 2)") == {"(NOT (`id` IN (1, 2)))"}
    assert parts("SELECT id FROM ext_emp WHERE NOT (x IN (1.5, 2.5))") == set()  # -0.0 / NaN under a NOT
    assert parts("SELECT id FROM ext_emp WHERE note LIKE 'al%' OR id = 3") == {"((`note` LIKE 'al%') OR (`id` = 3))"}
    assert parts("SELECT id FROM ext_emp WHERE note LIKE 'a_%' OR id = 3") == set()
    assert parts("SELECT id FROM ext_emp WHERE CAST(id AS INT) = 3") == set()  # a narrowing cast
    assert parts("SELECT id FROM ext_emp WHERE rand() < 0.5 AND id = 3") == set()


def test_decimals_travel_unscaled_and_equal_pyarrow(spark, emp, tmp_path):
    """Decimals of at most 18 digits reach Spark as their unscaled bigint and are rebuilt by MakeDecimal
    (values from pyarrow's decimal128: 12.34 in a decimal(15,2) is the unscaled 1234); a user schema of
    another scale gets the value cast to its own decimal first; 38-digit decimals stay decimals."""
    from decimal import Decimal

    path = str(tmp_path / "dec")
    vals = [Decimal("12.34"), Decimal("-0.05"), None, Decimal("9999999999999.99"), Decimal("-9999999999999.99")]
    big = [Decimal("12345678901234567890.123456"), None, Decimal("-1.000001"), Decimal("0"), Decimal("1")]
    data = pa.table({"id": pa.array(range(5), pa.int64()), "d": pa.array(vals, pa.decimal128(15, 2)),
                     "b": pa.array(big, pa.decimal128(38, 6))})
    carbon_ds.write_table(data, path)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW ext_dec USING carbondata OPTIONS (path '{path}')")
    df = spark.sql("SELECT id, d, b FROM ext_dec WHERE d < 100 OR d IS NULL")
    assert "MakeDecimal(d#" in df._jdf.queryExecution().optimizedPlan().toString()
    (read,) = reads(df)
    assert read.unscaled == ("d:15:2",) and read.types == ("bigint", "bigint", "decimal(38,6)")
    assert sorted((r.id, r.d, r.b) for r in df.collect()) == [
        (i, vals[i], big[i]) for i in range(5) if vals[i] is None or vals[i] < 100]
    assert spark.sql("SELECT sum(d), min(d), max(d) FROM ext_dec").first() == (
        Decimal("12.29"), Decimal("-9999999999999.99"), Decimal("9999999999999.99"))
    # a user schema of another decimal: each value cast to it, as the data source casts without the rule
    schema = "id BIGINT, d DECIMAL(16, 3)"
    got = spark.read.format("carbondata").schema(schema).load(path).where("d > 0").collect()
    assert sorted((r.id, r.d) for r in got) == [(0, Decimal("12.340")), (3, Decimal("9999999999999.990"))]
    with _rule_off(spark):
        assert (sorted(spark.read.format("carbondata").schema(schema).load(path).where("d > 0").collect()) ==
            sorted(got))
    spark.conf.set("carbon_ds.extension.unscaledDecimals", "false")
    try:
        plain = spark.sql("SELECT id, d FROM ext_dec")
        assert "MakeDecimal" not in plain._jdf.queryExecution().optimizedPlan().toString()
        assert sorted((r.id, r.d) for r in plain.collect()) == [(i, vals[i]) for i in range(5)]
    finally:
        spark.conf.unset("carbon_ds.extension.unscaledDecimals")


def test_writes_and_deletes_keep_their_relations(spark, emp, tmp_path):
    path = str(tmp_path / "copy")
    spark.sql("SELECT id, dept FROM ext_emp WHERE id < 100").write.format("carbondata").mode("append").save(path)
    back = spark.read.format("carbondata").load(path)
    assert back.count() == 100 and sorted(back.columns) == ["dept", "id"]
    carbon_ds.sql(spark, f"CREATE TABLE IF NOT EXISTS ext_copy (id bigint, dept string) STORED AS carbondata LOCATION '{path}'")
    try:
        carbon_ds.sql(spark, "DELETE FROM ext_copy WHERE id < 10")
        assert spark.sql("SELECT count(*), min(id) FROM ext_copy").first() == (90, 10)
    finally:
        spark.catalog.dropTempView("ext_copy")


def test_small_side_is_broadcast(spark, emp, tmp_path):
    """Without a size, Spark sizes a Python source at Long.MaxValue and sort-merge joins even 8 rows; the
    extension sizes each scan from tablestatus (data + index bytes, scaled to the columns read)."""
    path = str(tmp_path / "dept")
    carbon_ds.write_table(pa.table({"dept": [f"d{i}" for i in range(8)], "region": ["n", "s"] * 4}), path)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW ext_dept USING carbondata OPTIONS (path '{path}')")
    q = "SELECT e.id, d.region FROM ext_emp e JOIN ext_dept d ON e.dept = d.dept WHERE e.salary > 9000"
    try:
        plan = spark.sql(q)._jdf.queryExecution().executedPlan().toString()
        assert "BroadcastHashJoin" in plan and "SortMergeJoin" not in plan, plan
        with _rule_off(spark):
            plan = spark.sql(q)._jdf.queryExecution().executedPlan().toString()
        assert "SortMergeJoin" in plan and "BroadcastHashJoin" not in plan, plan
        _same(spark, lambda: spark.sql(q))
    finally:
        spark.catalog.dropTempView("ext_dept")


def test_carbon_ds_sql_of_a_table_read_twice_with_decimals_equals_unpruned(spark, emp, tmp_path):
    """A table read twice (once aggregated) with integer decimals: carbon_ds.sql, planned by the extension's
    rules, gives the rows Spark gives reading everything (found by the differential check, seed 20251125
    query 168, when carbon_ds.sql matched relations to optimized occurrences the rules had renamed)."""
    path = str(tmp_path / "cte")
    carbon_ds.write_table(pa.table({"id": pa.array(range(400), pa.int64()),
                                    "tag": [("zz", "aa", "bb")[i % 3] for i in range(400)],
                                    "m": pa.array([Decimal(i) / 4 for i in range(400)], pa.decimal128(10, 2))}), path)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW ext_cte USING carbondata OPTIONS (path '{path}')")
    q = "SELECT tag, sum(m) FROM ext_cte WHERE id < 10 GROUP BY tag UNION ALL SELECT tag, m FROM ext_cte WHERE id > 5"
    with _rule_off(spark):
        want = sorted(spark.sql(q).collect(), key=repr)
    try:
        df = carbon_ds.sql(spark, q)
        assert [r.unscaled for r in reads(df)] == [("m:10:2",), ("m:10:2",)]  # the rules planned it
        assert sorted(df.collect(), key=repr) == want
    finally:
        spark.catalog.dropTempView("ext_cte")


def test_size_estimate_follows_tablestatus(spark, emp):
    path, _data = emp
    stored = sum(int(d["dataSize"]) + int(d["indexSize"]) for d in json.load(
        open(os.path.join(path, "Metadata", "tablestatus"))))
    # Spark's default widths: 8 a row + bigint 8, string 20, double 8, string 20, double 8
    full, narrow = 8 + 8 + 20 + 8 + 20 + 8, 8 + 8
    df = spark.sql("SELECT id FROM ext_emp")
    size = int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    assert size == stored * narrow // full


REAL_1_1 = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "compat", "carbondata-real",
                        "table-1.1-global-dictionary")


def _stats_size(df) -> int:
    return int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))


def test_size_estimate_of_versioned_status_tables(spark, emp, tmp_path):
    """CarbonData 2.3.1+ keeps the segment list in Metadata/tablestatus_<epoch ms> (no plain tablestatus):
    the size comes from the Python side's read plan, so it is the stored bytes of the segments that file
    lists. Oracles: the data and index files on disk (a table whose status records dataSize/indexSize), and
    the data file of the real CarbonData 1.1 table (whose status records no sizes)."""
    import shutil

    path = str(tmp_path / "versioned")
    for lo in (0, 300):
        carbon_ds.write_table(pa.table({"id": pa.array(range(lo, lo + 300), pa.int64()),
                                        "s": [f"v{i}" for i in range(lo, lo + 300)]}), path)
    meta = os.path.join(path, "Metadata")
    os.rename(os.path.join(meta, "tablestatus"), os.path.join(meta, "tablestatus_1700000000500"))
    on_disk = sum(os.path.getsize(os.path.join(root, f)) for root, _d, files in os.walk(os.path.join(path, "Fact"))
                  for f in files if f.endswith((".carbondata", ".carbonindex", ".carbonindexmerge")))
    # Spark's default widths: 8 a row + bigint 8, string 20
    df = spark.read.format("carbondata").load(path).select("id")
    assert df.count() == 600
    assert _stats_size(df) == on_disk * (8 + 8) // (8 + 8 + 20)

    if not os.path.isdir(REAL_1_1):
        pytest.skip(f"CarbonData 1.1 table not found at {REAL_1_1}")
    real = tmp_path / "real"
    shutil.copytree(REAL_1_1, real)
    os.chmod(real / "Metadata", 0o755)
    live = (real / "Metadata" / "tablestatus").read_text()
    os.remove(real / "Metadata" / "tablestatus")
    (real / "Metadata" / "tablestatus_1700000000000").write_text("[]")
    (real / "Metadata" / "tablestatus_1700000000500").write_text(live)
    data = sum(os.path.getsize(os.path.join(root, f)) for root, _d, files in os.walk(real / "Fact")
               for f in files if f.endswith(".carbondata"))
    # id int 4 of 8 + int 4 + date 4 + four strings 20 + int 4
    df = spark.read.format("carbondata").load(str(real)).select("id")
    assert sorted(r.id for r in df.collect()) == list(range(1, 11))
    assert _stats_size(df) == data * (8 + 4) // (8 + 4 + 4 + 4 * 20 + 4)


class _Builder:
    """The part of SparkSession.Builder configure_spark uses."""

    def __init__(self, **options):
        self._options = dict(options)

    def config(self, key, value):
        self._options[key] = value
        return self


def test_configure_spark_appends_jar_and_extension(monkeypatch, tmp_path):
    jar = tmp_path / "carbon-ds-spark.jar"
    jar.write_bytes(b"PK")
    monkeypatch.setattr(extension, "JAR", jar)
    b = carbon_ds.configure_spark(_Builder(**{"spark.jars": "/x/delta.jar",
                                              "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension"}))
    assert b._options["spark.jars"] == f"/x/delta.jar,{jar}"
    assert b._options["spark.sql.extensions"] == f"io.delta.sql.DeltaSparkSessionExtension,{extension.EXTENSION_CLASS}"
    assert carbon_ds.configure_spark(b)._options == b._options  # twice: nothing added twice


def test_configure_spark_without_jar_warns_once(monkeypatch, tmp_path):
    monkeypatch.setattr(extension, "JAR", tmp_path / "missing.jar")
    monkeypatch.setattr(extension, "_warned", False)
    with pytest.warns(UserWarning, match="extension jar .* is missing .*javac"):
        b = carbon_ds.configure_spark(_Builder())
    # neither the jar nor the extension: only the task workers' daemon, which needs no jar
    assert b._options == {extension.DAEMON_CONF: "carbon_ds.spark.worker_daemon"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        carbon_ds.configure_spark(_Builder())


class _Conf:
    def __init__(self, **values):
        self.values = values

    def get(self, key, default=None):
        return self.values.get(key, default)


class _Session:
    """The part of a SparkSession the warning reads: a classic session has a JVM session."""

    def __init__(self, classic: bool, **conf):
        self.conf = _Conf(**conf)
        if classic:
            self._jsparkSession = object()


def test_a_session_without_the_extension_is_told_once_what_it_misses(monkeypatch):
    monkeypatch.setattr(session_module, "_warned_without_extension", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # started with the extension, or a Spark Connect client (the server decides): nothing to say
        assert not session_module.warn_without_extension(
            _Session(True, **{"spark.sql.extensions": "x.Other, carbonds.spark.CarbonExtensions"}))
        assert not session_module.warn_without_extension(_Session(False))
    with pytest.warns(UserWarning, match=r"without the carbon-ds extension.*configure_spark") as got:
        assert session_module.warn_without_extension(_Session(True, **{"spark.sql.extensions": "x.Other"}))
    assert "every column of every row" in str(got[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not session_module.warn_without_extension(_Session(True))  # once per process


def test_a_kept_read_plan_answers_only_while_the_table_is_unchanged(spark, tmp_path):
    """A repeated query of an unchanged table reuses the read plan the Python side marked as kept (jvm/src
    ReadPlans, PlanCache): no Python planning call, the same rows; a load or DELETE since is seen at once.
    The oracle is pyarrow over the rows written."""
    path = str(tmp_path / "kept_reads")
    first = pa.table({"id": pa.array(range(2000), pa.int64()), "v": pa.array([i % 13 for i in range(2000)], pa.int64())})
    carbon_ds.write_table(first, path, sort_columns="id")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW kept_reads USING carbondata OPTIONS (path '{path}')")
    read_hits = spark._jvm.carbonds.spark.PlanCache.readHits
    text = "SELECT id, v FROM kept_reads WHERE id >= 1500"

    def ids() -> list[int]:
        return sorted(r.id for r in spark.sql(text).collect())

    try:
        assert ids() == list(range(1500, 2000))
        before = read_hits()
        assert ids() == list(range(1500, 2000)) and read_hits() == before + 1  # unchanged: kept plan
        carbon_ds.write_table(first, path, mode="append")
        before = read_hits()
        assert ids() == sorted([*range(1500, 2000)] * 2) and read_hits() == before  # planned again
        deleted = carbon_ds.CarbonTable.open(path).delete("v = 3")
        assert deleted == 2 * pc.sum(pc.equal(first["v"], 3)).as_py()
        want = sorted(i for i in [*range(1500, 2000)] * 2 if i % 13 != 3)
        assert ids() == want and ids() == want
        # another filter is another plan, planned by Python
        before = read_hits()
        assert sorted(r.id for r in spark.sql("SELECT id FROM kept_reads WHERE id < 3").collect()) == [0, 0, 1, 1, 2, 2]
        assert read_hits() == before
    finally:
        spark.catalog.dropTempView("kept_reads")


def test_a_read_of_external_files_through_the_source_is_not_kept(spark, tmp_path):
    """A CSV segment read by the data source itself (the native union off): its files can change without a
    commit, so its plan is asked for on every query, and a file rewritten in place is read as it is now."""
    path = str(tmp_path / "kept_csv")
    carbon_ds.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), path)
    folder = tmp_path / "csv"
    folder.mkdir()
    pcsv.write_csv(pa.table({"id": pa.array([10, 11], pa.int64())}), folder / "a.csv")
    carbon_ds.CarbonTable.open(path).add_segment(str(folder), format="csv")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW kept_csv USING carbondata OPTIONS (path '{path}')")
    read_hits = spark._jvm.carbonds.spark.PlanCache.readHits
    spark.conf.set("carbon_ds.spark.nativeExternal", "false")
    try:
        assert sorted(r.id for r in spark.sql("SELECT id FROM kept_csv").collect()) == [1, 2, 10, 11]
        before = read_hits()
        pcsv.write_csv(pa.table({"id": pa.array([10, 11, 12], pa.int64())}), folder / "a.csv")
        assert sorted(r.id for r in spark.sql("SELECT id FROM kept_csv").collect()) == [1, 2, 10, 11, 12]
        assert read_hits() == before
    finally:
        spark.conf.unset("carbon_ds.spark.nativeExternal")
        spark.catalog.dropTempView("kept_csv")


def test_a_reused_read_plan_reads_the_version_its_query_began_with(spark, tmp_path):
    """A query that reuses a kept plan and sees a DELETE commit between its planning and its tasks reads the
    rows of the version it was planned against, as a freshly planned query does (the JVM tells the tasks
    when it found the table unchanged: the local property carbon_ds.names.VERIFIED_PLANS), instead of failing."""
    path = str(tmp_path / "kept_delete")
    rows = pa.table({"id": pa.array(range(1000), pa.int64()), "v": pa.array([i % 7 for i in range(1000)], pa.int64())})
    carbon_ds.write_table(rows, path)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW kept_delete USING carbondata OPTIONS (path '{path}')")
    read_hits = spark._jvm.carbonds.spark.PlanCache.readHits
    text = "SELECT id FROM kept_delete WHERE id >= 0"
    try:
        assert spark.sql(text).count() == 1000
        before = read_hits()
        df = spark.sql(text)
        df._jdf.queryExecution().executedPlan()  # planned: the kept plan is reused
        assert read_hits() == before + 1
        deleted = carbon_ds.CarbonTable.open(path).delete("v = 3")
        assert deleted == pc.sum(pc.equal(rows["v"], 3)).as_py()
        if _spark_stamps_queries(spark):
            assert sorted(r.id for r in df.collect()) == list(range(1000))
        else:  # PySpark 4.1: no query start to read a version at, so the tasks read the table as it is now
            assert sorted(r.id for r in df.collect()) == [i for i in range(1000) if i % 7 != 3]
        assert spark.sql(text).count() == 1000 - deleted  # the next query sees the DELETE
    finally:
        spark.catalog.dropTempView("kept_delete")


def _spark_stamps_queries(spark) -> bool:
    """Whether this Spark gives each query's tasks its id as a UUIDv7 (carbon_ds.spark.source.query_version.QUERY_ID):
    PySpark 4.2 on, not 4.1."""

    @udf("string")
    def query_id(_):
        return TaskContext.get().getLocalProperty(query_version.QUERY_ID)

    return query_version.uuid7_ms(spark.range(1).select(query_id("id")).first()[0]) is not None


def _physical_nodes(df, subqueries: bool = False) -> list:
    """Every node of ``df``'s executed physical plan, inside adaptive plans and query stages too (and its
    subqueries' plans with ``subqueries``: a reused subquery or exchange is a node without children)."""
    out, stack = [], [df._jdf.queryExecution().executedPlan()]
    while stack:
        node = stack.pop()
        kind = node.getClass().getSimpleName()
        if kind == "AdaptiveSparkPlanExec":
            stack.append(node.executedPlan())
            continue
        if kind.endswith("QueryStageExec"):
            stack.append(node.plan())
            continue
        out.append(node)
        for seq in (node.children(), node.subqueries()) if subqueries else (node.children(),):
            stack.extend(seq.apply(i) for i in range(seq.size()))
    return out


def _copied_scans(df) -> int:
    """Project nodes that sit directly on a carbondata scan (through a codegen stage's input adapter or the
    conversion of a columnar scan's batches)."""
    def below(node):
        child = node.child()
        while child.getClass().getSimpleName() in ("InputAdapter", "ColumnarToRowExec"):
            child = child.child()
        return child

    return sum(n.getClass().getSimpleName() == "ProjectExec"
               and below(n).getClass().getSimpleName() == "BatchScanExec" for n in _physical_nodes(df))


def test_scan_rows_reach_their_consumer_without_a_second_copy(spark, emp, tmp_path):
    """A Python source's rows are UnsafeRows already; the identity Project Spark puts over the scan copied each
    row again. Without it, a writer that keeps rows (Spark's Parquet writer), a shuffle (which serializes
    UnsafeRows only) and collect give the written table; any other projection stays."""
    path, data = emp
    want = sorted(repr(r) for r in data.to_pylist())

    def rows(table: pa.Table) -> list[str]:
        return sorted(repr(r) for r in table.select(data.column_names).to_pylist())

    with _rule_off(spark):  # Spark's own plan: a Project copying every row
        assert _copied_scans(spark.read.format("carbondata").load(path)) == 1
    full = spark.read.format("carbondata").load(path)  # a DataFrame keeps the plan it was first given
    assert _copied_scans(full) == 0
    full.write.parquet(str(tmp_path / "pq"))
    assert rows(pq.read_table(str(tmp_path / "pq"))) == want
    shuffled = full.repartition(3)
    got = shuffled.collect()
    assert _copied_scans(shuffled) == 0
    assert sorted(repr(r.asDict()) for r in got) == want

    renamed = spark.read.format("carbondata").load(path).selectExpr("id AS k", "salary * 2 AS s")
    assert _copied_scans(renamed) == 1
    assert sorted(r.k for r in renamed.collect()) == sorted(data["id"].to_pylist())


def _run_scans(df, fmt: str) -> tuple[int, int]:
    """(scans of ``fmt`` run, exchanges reused) in ``df``'s executed plan, after it ran."""
    nodes = _physical_nodes(df)
    scans = sum(fmt in str(n.simpleString(200)).lower() and n.getClass().getSimpleName() in
                ("BatchScanExec", "FileSourceScanExec") for n in nodes)
    return scans, sum(n.getClass().getSimpleName() == "ReusedExchangeExec" for n in nodes)


def test_a_table_read_twice_alike_runs_one_exchange_as_parquet_does(spark, emp, tmp_path):
    """A CTE referenced twice reads its table twice alike: Spark reuses one exchange for both over Parquet
    (its file scans are equal) and now over carbondata too (SizedScan's batches are equal by what they read),
    where every such read ran again (TPC-DS Q47, Q57 read store_sales three times). Two tables of the same
    columns and an identical plan above are not one read: each is read, and the rows stay right."""
    path, data = emp
    pq.write_table(data, str(tmp_path / "emp.parquet"))
    spark.read.parquet(str(tmp_path / "emp.parquet")).createOrReplaceTempView("ext_emp_pq")
    other = str(tmp_path / "emp2")
    carbon_ds.write_table(data.filter(pc.less(data["id"], 500)), other)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW ext_emp2 USING carbondata OPTIONS (path '{other}')")
    twice = ("WITH d AS (SELECT dept, sum(id) AS s FROM {t} WHERE id > 100 GROUP BY dept) "
             "SELECT a.dept, a.s, b.s AS s2 FROM d a JOIN d b ON a.dept = b.dept")
    try:
        pq_df = spark.sql(twice.format(t="ext_emp_pq"))
        want = sorted(pq_df.collect(), key=repr)
        pq_scans, pq_reused = _run_scans(pq_df, "parquet")
        assert pq_reused >= 1 and pq_scans == 1, (pq_scans, pq_reused)
        df = spark.sql(twice.format(t="ext_emp"))
        got = sorted(df.collect(), key=repr)
        assert got == want
        assert _run_scans(df, "carbondata") == (pq_scans, pq_reused)
        # the same plan over two tables: both read, nothing reused
        union = ("SELECT dept, count(*) AS n FROM ext_emp GROUP BY dept "
                 "UNION ALL SELECT dept, count(*) AS n FROM ext_emp2 GROUP BY dept")
        df = spark.sql(union)
        got = sorted(df.collect(), key=repr)
        assert _run_scans(df, "carbondata") == (2, 0)
        assert got == _same(spark, lambda: spark.sql(union))
    finally:
        spark.catalog.dropTempView("ext_emp_pq")
        spark.catalog.dropTempView("ext_emp2")


def _scans_with_subqueries(df, fmt: str) -> list[list[str]]:
    """The columns of each scan of ``fmt`` that runs for ``df`` (after it ran), its subqueries' included."""
    scans = [n.output() for n in _physical_nodes(df, subqueries=True)
             if n.getClass().getSimpleName() in ("BatchScanExec", "FileSourceScanExec")
             and fmt in str(n.simpleString(200)).lower()]
    return sorted(sorted(out.apply(i).name() for i in range(out.size())) for out in scans)


def test_scalar_subqueries_of_one_read_merge_into_one_scan_as_parquet_does(spark, emp, tmp_path):
    """Scalar subqueries over one table with one filter merge into one scan over Parquet (Spark's
    MergeScalarSubqueries). Spark optimizes each subquery on its own first, so the extension declared each
    one's own columns and none merged: TPC-DS Q9 scanned store_sales 15 times, not 5. The subqueries' reads
    of one table and filter now share a table of the union of their columns, and merge as Parquet's do; a
    subquery with another filter, or that Spark will not merge, reads its own columns as before."""
    path, data = emp
    pq.write_table(data, str(tmp_path / "emp.parquet"))
    spark.read.parquet(str(tmp_path / "emp.parquet")).createOrReplaceTempView("ext_emp_pq")
    query = ("SELECT (SELECT count(*) FROM {t} WHERE id > 100) AS n, (SELECT avg(id) FROM {t} WHERE id > 100) AS a, "
             "(SELECT max(dept) FROM {t} WHERE id > 100) AS m, (SELECT min(note) FROM {t} WHERE id > 100) AS o, "
             "(SELECT max(salary) FROM {t} WHERE id <= 100) AS s, (SELECT count(x) FROM {t} WHERE id <= 100) AS c")
    try:
        pq_df = spark.sql(query.format(t="ext_emp_pq"))
        want = pq_df.collect()
        pq_scans = _scans_with_subqueries(pq_df, "parquet")
        # 3 on Spark 4.1-4.3: the max and min of strings (sorted aggregates) do not merge with the others
        assert len(pq_scans) < 6, pq_scans
        df = spark.sql(query.format(t="ext_emp"))
        assert df.collect() == want
        assert _scans_with_subqueries(df, "carbondata") == pq_scans
        with _rule_off(spark):  # the oracle for the rows: Spark reading every column itself
            assert spark.sql(query.format(t="ext_emp")).collect() == want
    finally:
        spark.catalog.dropTempView("ext_emp_pq")


def test_a_small_table_read_twice_alike_reuses_one_exchange_as_parquet_does(spark, emp, tmp_path):
    """A small table's reads are rows read at planning (local table scans): two alike are equal, so Spark
    reuses one exchange for them as it does for two equal Parquet file scans of the same rows."""
    _, data = emp
    small = data.filter(pc.less(data["id"], 400))
    path = str(tmp_path / "small")
    carbon_ds.write_table(small, path)
    pq.write_table(small, str(tmp_path / "small.parquet"))
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW ext_small USING carbondata OPTIONS (path '{path}')")
    spark.read.parquet(str(tmp_path / "small.parquet")).createOrReplaceTempView("ext_small_pq")
    twice = ("WITH d AS (SELECT dept, sum(id) AS s FROM {t} WHERE id > 100 GROUP BY dept) "
             "SELECT a.dept, a.s, b.s AS s2 FROM d a JOIN d b ON a.dept = b.dept")

    def counts(df, scan: str) -> tuple[int, int]:
        kinds = [n.getClass().getSimpleName() for n in _physical_nodes(df)]
        return kinds.count(scan), kinds.count("ReusedExchangeExec")

    try:
        with confs(spark, **{LOCAL_BYTES: str(4 << 20)}):
            pq_df, df = spark.sql(twice.format(t="ext_small_pq")), spark.sql(twice.format(t="ext_small"))
            assert sorted(df.collect(), key=repr) == sorted(pq_df.collect(), key=repr)
            # no carbondata relation left for tasks: both reads are rows read at planning
            assert [r.local for r in reads(df)] == [True, True]
            pq_counts = counts(pq_df, "FileSourceScanExec")
            assert pq_counts[1] >= 1 and counts(df, "CheckedLocalTableScanExec") == pq_counts, pq_counts
    finally:
        spark.catalog.dropTempView("ext_small")
        spark.catalog.dropTempView("ext_small_pq")


def _scan_reads(df) -> list[str]:
    """How each carbondata scan of ``df``'s executed plan hands its rows on: "batches" (Arrow batches into a
    ColumnarToRow conversion) or "rows"."""
    nodes = _physical_nodes(df)

    def carbon(node) -> bool:
        return node.getClass().getSimpleName() == "BatchScanExec" and str(node.table().name()) == "carbondata"

    def below(node):
        child = node.child()
        return child.child() if child.getClass().getSimpleName() == "InputAdapter" else child

    batches = [below(n) for n in nodes if n.getClass().getSimpleName() == "ColumnarToRowExec" and carbon(below(n))]
    assert all(b.supportsColumnar() for b in batches)
    rows = [n for n in nodes if carbon(n) and not n.supportsColumnar()]
    return ["batches"] * len(batches) + ["rows"] * len(rows)


@pytest.fixture(scope="module")
def typed(spark, tmp_path_factory):
    """Two loads of every column type the columnar hand-over must carry, and their Parquet twin (pyarrow)."""
    root = tmp_path_factory.mktemp("typed")
    rnd = random.Random(11)
    parts = []
    for load in range(2):
        n = 1500
        ids = list(range(load * n, (load + 1) * n))

        def maybe(v, p=0.1):
            return None if rnd.random() < p else v

        parts.append(pa.table({
            "id": pa.array(ids, pa.int64()),
            "i8": pa.array([maybe(rnd.randrange(-128, 128)) for _ in ids], pa.int8()),
            "i16": pa.array([maybe(rnd.randrange(-32768, 32768)) for _ in ids], pa.int16()),
            "i32": pa.array([maybe(rnd.randrange(-2**31, 2**31)) for _ in ids], pa.int32()),
            "f32": pa.array([maybe(rnd.choice([1.5, -2.25, 0.0, 3e38])) for _ in ids], pa.float32()),
            "d": pa.array([maybe(rnd.choice([float("nan"), -0.0, 0.0, rnd.uniform(-1e9, 1e9)])) for _ in ids]),
            "dec": pa.array([maybe(Decimal(rnd.randrange(-10**9, 10**9)).scaleb(-2)) for _ in ids],
                            pa.decimal128(10, 2)),
            "big": pa.array([maybe(Decimal(rnd.randrange(-10**30, 10**30)).scaleb(-6)) for _ in ids],
                            pa.decimal128(38, 6)),
            "s": [maybe(rnd.choice(["", "a", "ünï", "it's", "x" * 300])) for _ in ids],
            "flag": pa.array([maybe(rnd.random() < 0.5) for _ in ids], pa.bool_()),
            "day": pa.array([maybe(rnd.randrange(-1000, 30000)) for _ in ids], pa.int32()).cast(pa.date32()),
            # CarbonData keeps timestamps to the millisecond
            "ts": pa.array([maybe(rnd.randrange(-2**30, 2**41) * 1000) for _ in ids], pa.timestamp("us", tz="UTC")),
            "arr": pa.array([maybe([rnd.randrange(100) for _ in range(rnd.randrange(4))]) for _ in ids],
                            pa.list_(pa.int32())),
        }))
        carbon_ds.write_table(parts[-1], str(root / "carbon"))
    pq.write_table(pa.concat_tables(parts), str(root / "twin.parquet"))
    old = spark.conf.get(LOCAL_BYTES, None)
    spark.conf.set(LOCAL_BYTES, "0")  # scans, not reads made local relations
    try:
        yield str(root / "carbon"), str(root / "twin.parquet")
    finally:
        if old is None:
            spark.conf.unset(LOCAL_BYTES)
        else:
            spark.conf.set(LOCAL_BYTES, old)


COLUMNAR = "carbon_ds.extension.columnarScan"
TYPED_QUERIES = [
    "SELECT s, count(*), sum(i32), min(d), max(dec), sum(big), min(day), max(ts), count(DISTINCT i8), "
    "max(f32), min(i16), count(flag) FROM {t} GROUP BY s",
    "SELECT to_date(ts) AS dd, count(*) FROM {t} WHERE id % 3 = 0 GROUP BY 1",
    "SELECT id, arr, flag, f32, i16, s, big FROM {t} WHERE i32 > 0",
    "SELECT a.id, b.s, a.dec + b.dec FROM {t} a JOIN {t} b ON a.id = b.id + 1 WHERE a.d > 0",
]


@pytest.mark.parametrize("query", TYPED_QUERIES)
def test_generated_code_reads_arrow_batches_of_every_type(spark, typed, query):
    """Aggregates, filters and joins take the Python worker's Arrow batches straight into generated code
    (jvm/src ArrowBatchReads); the rows equal Spark's own Parquet reader over the twin, and equal again with
    the columnar hand-over switched off."""
    path, twin = typed
    spark.read.format("carbondata").load(path).createOrReplaceTempView("typed_carbon")
    spark.read.parquet(twin).createOrReplaceTempView("typed_twin")
    want = sorted(repr(r) for r in spark.sql(query.format(t="typed_twin")).collect())
    df = spark.sql(query.format(t="typed_carbon"))
    assert sorted(repr(r) for r in df.collect()) == want
    assert "batches" in _scan_reads(df)
    spark.conf.set(COLUMNAR, "false")
    try:
        df = spark.sql(query.format(t="typed_carbon"))
        assert sorted(repr(r) for r in df.collect()) == want
        assert set(_scan_reads(df)) == {"rows"}
    finally:
        spark.conf.unset(COLUMNAR)


def test_rows_that_only_leave_the_plan_are_read_as_rows(spark, typed, tmp_path):
    """A collect, a shuffle and a write of the bare scan would pay generated code per row for nothing: those
    scans read rows, and give the twin's rows. (An integer decimal column would add a computed projection
    of its unscaled integers, which reads batches.)"""
    path, twin = typed
    want = sorted(repr(r) for r in spark.read.parquet(twin).drop("dec").collect())
    full = spark.read.format("carbondata").load(path).drop("dec")
    assert sorted(repr(r) for r in full.collect()) == want
    assert _scan_reads(full) == ["rows"]
    shuffled = full.repartition(3)
    assert sorted(repr(r) for r in shuffled.collect()) == want
    assert _scan_reads(shuffled) == ["rows"]
    full.write.parquet(str(tmp_path / "out"))
    assert sorted(repr(r) for r in spark.read.parquet(str(tmp_path / "out")).collect()) == want
