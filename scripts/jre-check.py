"""Run by scripts/test-jre.sh and scripts/test-oldest.sh on a JRE-only setup (scripts/jre-env.sh): the
installed carbon-ds (not the checkout) starts Spark on that runtime with its extension, and the extension
prunes a query's read."""

import json
import os
import sys
import tempfile

import pyarrow as pa
import pyspark
from pyspark.sql import SparkSession

import carbon_ds
from carbon_ds.spark.bridge.extension import jar_path

assert "site-packages" in carbon_ds.__file__ or "wheel-" in carbon_ds.__file__, carbon_ds.__file__
jar = jar_path()
assert jar is not None and os.path.dirname(carbon_ds.__file__) in str(jar), (jar, carbon_ds.__file__)
os.environ["PYSPARK_PYTHON"] = sys.executable
spark = carbon_ds.configure_spark(SparkSession.builder.master("local[1]")).config("spark.ui.enabled", "false")
spark = spark.getOrCreate()
try:
    jvm = spark.sparkContext._jvm
    home = jvm.java.lang.System.getProperty("java.home")
    assert os.path.realpath(home) == os.path.realpath(os.environ["JAVA_HOME"]), (home, os.environ["JAVA_HOME"])
    assert jvm.javax.tools.ToolProvider.getSystemJavaCompiler() is None, "the runtime has a Java compiler"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t")
        carbon_ds.write_table(pa.table({"id": list(range(100)), "name": [f"n{i}" for i in range(100)],
                                        "x": [1.0] * 100}), path)
        spark.sql(f"CREATE TEMPORARY VIEW t USING carbondata OPTIONS (path '{path}')")
        df = spark.sql("SELECT name FROM t WHERE id = 7")
        assert [r.name for r in df.collect()] == ["n7"]
        # the extension's own account of what the query reads: one column, filtered
        (read,) = json.loads(jvm.carbonds.spark.PlannedQueries.reads(df._jdf))
        assert read["pruned"] and sorted(read["columns"]) == ["id", "name"], read
        assert "id = 7" in read["filter"].replace("`", ""), read
finally:
    spark.stop()
print(f">> JRE-only: PySpark {pyspark.__version__} on {home} (no compiler), extension jar {jar}: pruned")
