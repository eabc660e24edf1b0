"""carbondata tables of Spark's session catalog (the extension's CarbonCatalogTables rule and STORED AS
parser): created by carbon_ds.sql, plain ``spark.sql`` (``STORED AS carbondata`` / ``USING carbondata``),
CTAS and ``saveAsTable``; with a persistent metastore a new process finds them by name.

The oracle is pyarrow: the rows written, filtered and aggregated with pyarrow.compute."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import carbon_ds

pytestmark = pytest.mark.spark

ROWS = 2000


def _data() -> pa.Table:
    ids = list(range(ROWS))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": [None if i % 17 == 0 else f"n{i % 50}" for i in ids],
        "v": pa.array([None if i % 23 == 0 else i * 0.5 for i in ids], pa.float64()),
    })


def _rows(table: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


def _spark_rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


@pytest.fixture
def src(ext, tmp_path):
    data = _data()
    pq.write_table(data, tmp_path / "src.parquet")
    ext.read.parquet(str(tmp_path / "src.parquet")).createOrReplaceTempView("cat_src")
    yield data
    ext.catalog.dropTempView("cat_src")


def _drop(spark, *names):
    for name in names:
        carbon_ds.sql(spark, f"DROP TABLE IF EXISTS {name}")


def test_plain_spark_sql_stored_as_insert_select(ext, src):
    spark = ext
    _drop(spark, "cat_plain")
    try:
        spark.sql("CREATE TABLE cat_plain (id BIGINT, name STRING, v DOUBLE) STORED AS carbondata "
                  "TBLPROPERTIES ('SORT_COLUMNS'='id')")
        assert spark.sql("SELECT * FROM cat_plain").count() == 0  # no folder before the first write
        spark.sql("INSERT INTO cat_plain SELECT * FROM cat_src")
        assert _spark_rows(spark.table("cat_plain")) == _rows(src)
        got = _spark_rows(spark.sql("SELECT id, name FROM cat_plain WHERE id BETWEEN 100 AND 180"))
        want = src.filter(pc.and_(pc.greater_equal(src["id"], 100), pc.less_equal(src["id"], 180)))
        assert got == _rows(want.select(["id", "name"]))
        # the table Spark made is a CarbonData table in the warehouse, sorted as its TBLPROPERTIES say
        path = os.path.join(carbon_ds.spark.statements.catalog.warehouse_dir(spark), "cat_plain")
        assert carbon_ds.CarbonTable.open(path).sort_columns == ["id"]
        # the scan of a catalog table declares only the columns the query needs (the extension pruned it)
        plan = spark.sql("SELECT name FROM cat_plain WHERE id > 1900")._jdf.queryExecution().executedPlan().toString()
        scan = next(line for line in plan.splitlines() if "BatchScan carbondata" in line)
        assert "name#" in scan and "v#" not in scan
        # carbon_ds.sql finds the table Spark made by name; INSERT OVERWRITE replaces its rows
        assert [r[0] for r in carbon_ds.sql(spark, "SHOW SEGMENTS FOR TABLE cat_plain").collect()] == ["0"]
        spark.sql("INSERT OVERWRITE cat_plain SELECT * FROM cat_src WHERE id < 5")
        assert _spark_rows(spark.table("cat_plain")) == _rows(src.slice(0, 5))
    finally:
        _drop(spark, "cat_plain")


def test_ctas_and_save_as_table(ext, src):
    spark = ext
    _drop(spark, "cat_ctas", "cat_saved", "cat_using")
    try:
        spark.sql("CREATE TABLE cat_ctas STORED AS carbondata AS SELECT id, v * 2 AS w FROM cat_src WHERE id % 3 = 0")
        keep = src.filter(pa.array([i % 3 == 0 for i in src["id"].to_pylist()]))
        want = pa.table({"id": keep["id"], "w": pc.multiply(keep["v"], 2.0)})
        assert _spark_rows(spark.table("cat_ctas")) == _rows(want)

        part = spark.table("cat_src")
        part.filter("id < 500").write.format("carbondata").saveAsTable("cat_saved")
        part.filter("id >= 500").write.format("carbondata").mode("append").saveAsTable("cat_saved")
        assert _spark_rows(spark.table("cat_saved")) == _rows(src)
        assert spark.sql("SELECT count(*) FROM cat_saved WHERE name IS NULL").first()[0] == src["name"].null_count

        # USING carbondata over an existing table folder: Spark takes the columns from the table
        path = os.path.join(carbon_ds.spark.statements.catalog.warehouse_dir(spark), "cat_saved")
        spark.sql(f"CREATE TABLE cat_using USING carbondata LOCATION '{path}'")
        assert spark.table("cat_using").columns == ["id", "name", "v"]
        assert spark.table("cat_using").count() == ROWS
    finally:
        spark.sql("DROP TABLE IF EXISTS cat_using")  # Spark's table over cat_saved's folder: metadata only
        _drop(spark, "cat_ctas", "cat_saved")


def test_carbon_ds_sql_table_is_a_catalog_table(ext, src):
    spark = ext
    _drop(spark, "cat_c")
    try:
        carbon_ds.sql(spark, "CREATE TABLE cat_c (id BIGINT, name STRING, v DOUBLE) STORED AS carbondata")
        assert [t.name for t in spark.catalog.listTables() if t.name == "cat_c" and not t.isTemporary] == ["cat_c"]
        carbon_ds.sql(spark, "INSERT INTO cat_c SELECT * FROM cat_src")
        spark.sql("INSERT INTO cat_c SELECT * FROM cat_src WHERE id < 10")  # plain Spark writes the same table
        want = pa.concat_tables([src, src.slice(0, 10)])
        assert _spark_rows(spark.table("cat_c")) == _rows(want)
        carbon_ds.sql(spark, "ALTER TABLE cat_c ADD COLUMNS (extra INT)")  # the catalog gets the new column
        assert spark.table("cat_c").columns == ["id", "name", "v", "extra"]
        path = os.path.join(carbon_ds.spark.statements.catalog.warehouse_dir(spark), "cat_c")
        carbon_ds.sql(spark, "DROP TABLE cat_c")
        assert not spark.catalog.tableExists("cat_c") and not os.path.exists(path)
    finally:
        _drop(spark, "cat_c")


def test_add_columns_to_a_partitioned_catalog_table(ext):
    """Spark's catalog keeps partition columns last (InMemoryCatalog asserts it): the added column goes before
    them there, and the rows read back under the names, old rows with null in the new column."""
    spark = ext
    _drop(spark, "cat_p")
    try:
        spark.sql("CREATE TABLE cat_p (vin STRING, speed DOUBLE) PARTITIONED BY (day INT) STORED AS carbondata")
        spark.sql("INSERT INTO cat_p VALUES ('a', 1.5, 20211122)")
        spark.sql("ALTER TABLE cat_p ADD COLUMNS (soc INT)")
        assert spark.table("cat_p").columns == ["vin", "speed", "soc", "day"]
        assert [c.name for c in spark.catalog.listColumns("cat_p") if c.isPartition] == ["day"]
        spark.sql("INSERT INTO cat_p (vin, speed, soc, day) VALUES ('b', 2.5, 40, 20211123)")
        got = sorted((r.asDict() for r in spark.table("cat_p").collect()), key=lambda r: r["vin"])
        assert got == [{"vin": "a", "speed": 1.5, "soc": None, "day": 20211122},
                       {"vin": "b", "speed": 2.5, "soc": 40, "day": 20211123}]
    finally:
        _drop(spark, "cat_p")


def test_stored_as_outside_a_create_clause_is_left_alone(ext):
    assert (ext.sql("SELECT 'x STORED AS carbondata' AS s /* STORED AS carbondata */").first()[0] ==
        "x STORED AS carbondata")
    row = ext.sql("SELECT stored AS carbondata FROM (SELECT 7 AS stored)").first()  # a column alias
    assert row.asDict() == {"carbondata": 7}


_PROCESS = textwrap.dedent('''
    import json, os, sys
    from pyspark.sql import SparkSession
    import carbon_ds
    mode, warehouse, metastore, src = sys.argv[1:5]
    builder = (carbon_ds.configure_spark(SparkSession.builder.master("local[1]"))
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.warehouse.dir", warehouse)
               .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                       f"jdbc:derby:;databaseName={metastore};create=true")
               .enableHiveSupport())
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    out = {}
    if mode == "create":
        spark.read.parquet(src).createOrReplaceTempView("src")
        carbon_ds.sql(spark, "CREATE TABLE emp (id BIGINT, name STRING, v DOUBLE) STORED AS carbondata "
                             "TBLPROPERTIES ('SORT_COLUMNS'='id')")
        carbon_ds.sql(spark, "INSERT INTO emp SELECT * FROM src")
        spark.sql("CREATE TABLE plain_t (id BIGINT, name STRING) STORED AS carbondata")
        spark.sql("INSERT INTO plain_t SELECT id, name FROM src WHERE id < 300")
        spark.sql("CREATE TABLE ctas_t STORED AS carbondata AS SELECT name, count(*) AS n FROM src GROUP BY name")
        spark.table("src").write.format("carbondata").saveAsTable("saved_t")
    else:
        rows = lambda df: sorted([list(r) for r in df.collect()], key=repr)
        out["tables"] = sorted(t.name for t in spark.catalog.listTables())
        out["emp"] = rows(spark.sql("SELECT id, name FROM emp WHERE id >= 1500 AND v IS NOT NULL"))
        out["plain"] = rows(spark.table("plain_t"))
        out["ctas"] = rows(spark.sql("SELECT * FROM ctas_t"))
        out["saved"] = rows(spark.table("saved_t").filter("v > 900"))
        out["carbon_sql"] = rows(carbon_ds.sql(spark, "SELECT count(*) FROM emp WHERE name = 'n7'"))
        plan = spark.sql("SELECT name FROM emp WHERE id > 10")._jdf.queryExecution().executedPlan().toString()
        out["scan"] = [line for line in plan.splitlines() if "BatchScan carbondata" in line]
    print("RESULT " + json.dumps(out))
    spark.stop()
''')


def _process(tmp_path, mode: str) -> dict:
    script = tmp_path / "catalog_process.py"
    script.write_text(_PROCESS)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    args = [sys.executable, str(script), mode, str(tmp_path / "warehouse"), str(tmp_path / "metastore_db"),
            str(tmp_path / "src.parquet")]
    done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


@pytest.mark.slow
def test_tables_persist_in_the_metastore_for_a_new_process(ext, tmp_path):
    data = _data()
    pq.write_table(data, tmp_path / "src.parquet")
    _process(tmp_path, "create")
    got = _process(tmp_path, "read")  # a new Python process and JVM, the same warehouse and metastore

    assert {"emp", "plain_t", "ctas_t", "saved_t"} <= set(got["tables"])
    emp = data.filter(pc.and_(pc.greater_equal(data["id"], 1500), pc.is_valid(data["v"]))).select(["id", "name"])
    assert sorted(got["emp"], key=repr) == sorted([list(r.values()) for r in emp.to_pylist()], key=repr)
    plain = data.filter(pc.less(data["id"], 300)).select(["id", "name"])
    assert sorted(got["plain"], key=repr) == sorted([list(r.values()) for r in plain.to_pylist()], key=repr)
    counts = data.group_by("name").aggregate([([], "count_all")])
    want_counts = [[n, c] for n, c in zip(counts["name"].to_pylist(), counts["count_all"].to_pylist(), strict=True)]
    assert sorted(got["ctas"], key=repr) == sorted(want_counts, key=repr)
    saved = data.filter(pc.greater(data["v"], 900))
    assert sorted(got["saved"], key=repr) == sorted([list(r.values()) for r in saved.to_pylist()], key=repr)
    assert got["carbon_sql"] == [[pc.sum(pc.equal(data["name"], "n7")).as_py()]]
    assert len(got["scan"]) == 1 and "name#" in got["scan"][0] and "v#" not in got["scan"][0]
