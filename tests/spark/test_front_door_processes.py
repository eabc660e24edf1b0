"""The front door across processes, with a Hive metastore and without: tables made through ``spark.sql`` and
``carbon_ds.sql`` in one process are found by name by plain ``spark.sql`` in the next, the catalog says what
they are, schema changes keep every row, and DROP deletes only the managed table's folder.

Each phase is its own Python process and JVM (a metastore-backed session cannot share the suite's JVM). The
oracle is pyarrow reading the folders on disk and the rows written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

import carbon_ds

pytestmark = [pytest.mark.spark, pytest.mark.slow]

_SCRIPT = textwrap.dedent('''
    import json, os, sys
    from pyspark.sql import SparkSession
    import carbon_ds
    phase, mode, warehouse, metastore, external = sys.argv[1:6]
    builder = (carbon_ds.configure_spark(SparkSession.builder.master("local[1]"))
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.warehouse.dir", warehouse))
    if mode == "hive":
        builder = builder.config("spark.hadoop.javax.jdo.option.ConnectionURL",
                                 f"jdbc:derby:;databaseName={metastore};create=true").enableHiveSupport()
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    rows = lambda df: sorted([list(r) for r in df.collect()], key=repr)
    kind = lambda t: {r[0]: r[1] for r in spark.sql(f"DESCRIBE TABLE EXTENDED {t}").collect()}.get("Type")
    out = {}
    if phase == "create":
        spark.sql("CREATE TABLE m (id BIGINT, name STRING) STORED AS carbondata")
        spark.sql("INSERT INTO m SELECT id, concat('n', id) FROM range(100)")
        carbon_ds.sql(spark, "ALTER TABLE m ADD COLUMNS (z INT)")
        spark.sql("ALTER TABLE m RENAME COLUMN name TO label")
        spark.sql("CREATE TABLE p (id INT) PARTITIONED BY (day INT) STORED AS carbondata")
        spark.sql("INSERT INTO p VALUES (1, 10), (2, 10), (3, 11)")
        spark.sql("CREATE DATABASE IF NOT EXISTS sales")
        carbon_ds.sql(spark, "CREATE TABLE sales.s (k STRING) STORED AS carbondata")
        spark.sql("INSERT INTO sales.s VALUES ('a'), ('b')")
        spark.sql(f"CREATE EXTERNAL TABLE e STORED AS carbondata LOCATION '{external}'")
        out["types"] = [kind(t) for t in ("m", "p", "sales.s", "e")]
    else:
        out["tables"] = sorted(t.name for t in spark.catalog.listTables())
        if mode != "hive":  # no metastore: a table outside the warehouse folder is declared again
            spark.sql(f"CREATE EXTERNAL TABLE IF NOT EXISTS e STORED AS carbondata LOCATION '{external}'")
        out["m"] = rows(spark.sql("SELECT id, label, z FROM m WHERE id < 3"))
        out["m_count"] = spark.table("m").count()
        out["p"] = rows(carbon_ds.sql(spark, "SELECT count(*), sum(day) FROM p"))
        out["s"] = rows(spark.table("sales.s"))
        out["types"] = [kind(t) for t in ("m", "p", "sales.s", "e")]
        out["segments"] = len(spark.sql("SHOW SEGMENTS FOR TABLE p").collect())
        spark.sql("DROP TABLE e")
        spark.sql("DROP TABLE m")
        carbon_ds.sql(spark, "DROP TABLE sales.s")
        out["left"] = sorted(t.name for t in spark.catalog.listTables())
    print("RESULT " + json.dumps(out))
    spark.stop()
''')


def _run(tmp_path, phase: str, mode: str) -> dict:
    script = tmp_path / "door.py"
    script.write_text(_SCRIPT)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    args = [sys.executable, str(script), phase, mode, str(tmp_path / "warehouse"), str(tmp_path / "metastore_db"),
            str(tmp_path / "external")]
    done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


@pytest.mark.parametrize("mode", ["hive", "in_memory"])
def test_tables_through_both_doors_in_a_new_process(tmp_path, mode, extension_jar):
    external = tmp_path / "external"
    carbon_ds.write_table(pa.table({"x": pa.array([1, 2, 3], pa.int64())}), str(external))
    made = _run(tmp_path, "create", mode)
    assert made["types"] == ["MANAGED", "MANAGED", "MANAGED", "EXTERNAL"]
    got = _run(tmp_path, "read", mode)  # a new Python process and JVM: same warehouse (and metastore)

    assert {"m", "p"} <= set(got["tables"]) and (mode != "hive" or "e" in got["tables"])
    assert got["m"] == [[0, "n0", None], [1, "n1", None], [2, "n2", None]] and got["m_count"] == 100
    assert got["p"] == [[3, 31]] and got["s"] == [["a"], ["b"]] and got["segments"] == 1
    assert got["types"] == made["types"]
    # DROP: the external table's files stay, the managed tables' folders go, the partitioned one is untouched
    assert carbon_ds.read_table(str(external)).column("x").to_pylist() == [1, 2, 3]
    assert not os.path.exists(tmp_path / "warehouse" / "m")
    assert not os.path.exists(tmp_path / "warehouse" / "sales.db" / "s")
    assert sorted(carbon_ds.read_table(str(tmp_path / "warehouse" / "p")).column("id").to_pylist()) == [1, 2, 3]
    assert "p" in got["left"] and not {"m", "e", "s"} & set(got["left"])
