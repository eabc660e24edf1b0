"""Catalog tables where another catalog replaces Spark's session catalog (``spark.sql.catalog.spark_catalog``,
as Delta Lake's setup asks for ``DeltaCatalog``).

Such a catalog extends Spark's ``DelegatingCatalogExtension`` and hands tables of other formats to Spark's own
catalog, which then returns the stored description instead of the data source's table: without the
extension's rule every read and INSERT of a carbondata table fails. The catalog here is the plainest such
extension (tests/spark/java/PassThroughCatalog.java, compiled with ``javac`` against the installed PySpark),
in its own Python process and JVM. The oracle is pyarrow reading the table folders, and the rows written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pyspark
import pytest

import carbon_ds

pytestmark = [pytest.mark.spark, pytest.mark.slow]

_SCRIPT = textwrap.dedent('''
    import json, sys
    from pyspark.sql import SparkSession
    import carbon_ds
    warehouse, classes = sys.argv[1:3]
    spark = (carbon_ds.configure_spark(SparkSession.builder.master("local[1]"))
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.warehouse.dir", warehouse).config("spark.driver.extraClassPath", classes)
             .config("spark.sql.catalog.spark_catalog", "carbonds.test.PassThroughCatalog").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    rows = lambda df: sorted(list(r) for r in df.collect())
    out = {}
    out["catalog"] = spark._jsparkSession.sessionState().catalogManager().v2SessionCatalog().getClass().getName()
    spark.sql("CREATE TABLE t (id INT, name STRING) USING carbondata")
    spark.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    spark.sql("INSERT INTO t SELECT id + 10, concat('n', id) FROM range(3)")
    spark.createDataFrame([(20, "w")], "id int, name string").write.insertInto("t")
    out["read"] = rows(spark.sql("SELECT * FROM t"))
    out["qualified"] = rows(spark.sql("SELECT count(*) FROM spark_catalog.default.t WHERE id > 1"))
    out["table"] = spark.table("default.t").count()
    spark.sql("DELETE FROM t WHERE id = 1")
    spark.sql("UPDATE t SET name = 'u' WHERE id = 2")
    out["dml"] = rows(spark.sql("SELECT id, name FROM t WHERE id < 11"))
    spark.sql("CREATE TABLE p (id INT) USING parquet")
    spark.sql("INSERT INTO p VALUES (2), (20)")
    out["join"] = rows(spark.sql("SELECT t.id, t.name FROM t JOIN p ON t.id = p.id"))
    spark.sql("INSERT OVERWRITE t VALUES (7, 'z')")
    out["overwrite"] = rows(spark.table("t"))
    spark.sql("CREATE TEMPORARY VIEW t AS SELECT 99 AS id")  # a temporary view still hides the table
    out["shadowed"] = rows(spark.sql("SELECT * FROM t"))
    print("RESULT " + json.dumps(out))
    spark.stop()
''')


@pytest.fixture
def catalog_classes(tmp_path_factory, extension_jar) -> Path:
    javac = shutil.which("javac")
    if javac is None:
        pytest.skip("no javac: the pass-through catalog cannot be compiled")
    out = tmp_path_factory.mktemp("catalog_classes")
    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")
    source = Path(__file__).parent / "java" / "PassThroughCatalog.java"
    subprocess.run([javac, "--release", "17", "-cp", jars, "-d", str(out), str(source)], check=True, timeout=300)
    return out


def test_carbondata_tables_work_under_a_replacing_session_catalog(tmp_path, catalog_classes):
    script = tmp_path / "replaced.py"
    script.write_text(_SCRIPT)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    warehouse = tmp_path / "warehouse"
    done = subprocess.run([sys.executable, str(script), str(warehouse), str(catalog_classes)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    got = json.loads(next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))[len("RESULT "):])

    assert got["catalog"] == "carbonds.test.PassThroughCatalog"
    written = [[1, "a"], [2, "b"], [10, "n0"], [11, "n1"], [12, "n2"], [20, "w"]]
    assert got["read"] == written
    assert got["qualified"] == [[5]] and got["table"] == 6
    assert got["dml"] == [[2, "u"], [10, "n0"]]
    assert got["join"] == [[2, "u"], [20, "w"]]
    assert got["overwrite"] == [[7, "z"]]
    assert got["shadowed"] == [[99]]
    # the rows are where the catalog says: the managed table's folder, read without Spark
    assert carbon_ds.read_table(str(warehouse / "t")).to_pylist() == [{"id": 7, "name": "z"}]
    assert pq.read_table(str(warehouse / "p")).column("id").to_pylist() in ([2, 20], [20, 2])
