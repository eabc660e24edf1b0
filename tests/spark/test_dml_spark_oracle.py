"""Seeded random INSERT / INSERT OVERWRITE / UPDATE / DELETE sequence on a partitioned table through
carbon_ds.sql, checked against the same operations applied to a plain Spark DataFrame."""

from __future__ import annotations

import random
import re

import pytest

import carbon_ds

STEPS = 56
PARTS = [0, 1, 2, 3]
NAMES = ["a", "b", "c", None]


def _conditions(rng: random.Random) -> str:
    """A Spark SQL predicate; some evaluate to NULL (name = ... on a null name)."""
    kind = rng.randrange(5)
    if kind == 0:
        return f"id % {rng.randint(2, 5)} = {rng.randrange(2)}"
    if kind == 1:
        return f"p = {rng.choice(PARTS)} AND value > {rng.randrange(50)}"
    if kind == 2:
        return f"name = '{rng.choice(NAMES[:-1])}'"
    if kind == 3:
        return "name IS NULL" if rng.random() < 0.5 else f"value < {rng.randrange(40)}"
    lo = rng.randrange(100)
    return f"value >= {lo} AND value < {lo + 20} OR name <> 'b'"


def _check(spark, path, oracle, step):
    got = spark.read.format("carbondata").load(path).select("id", "name", "value", "p")
    want = oracle.select("id", "name", "value", "p")
    extra, missing = got.exceptAll(want).collect(), want.exceptAll(got).collect()
    assert (extra, missing) == ([], []), f"step {step}: carbon has extra {extra}, misses {missing}"
    assert got.count() == want.count(), f"step {step}"


@pytest.mark.slow  # 55-90 s: every one of the 56 statements is a Spark job
def test_random_dml_sequence_matches_spark_dataframe(spark, tmp_path):
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType

    uniq = re.sub(r"\W", "_", f"{tmp_path.parent.name}_{tmp_path.name}").lower()
    table, src = f"dso_{uniq}", f"dso_src_{uniq}"
    path = str(tmp_path / "t")
    schema = StructType([StructField("id", LongType()), StructField("name", StringType()),
                         StructField("value", DoubleType()), StructField("p", IntegerType())])

    def sql(text):
        return carbon_ds.sql(spark, text)

    sql(f"CREATE TABLE {table} (id BIGINT, name STRING, value DOUBLE) PARTITIONED BY (p INT) "
        f"STORED AS carbondata LOCATION '{path}'")
    rng = random.Random(20240611)
    oracle = spark.createDataFrame([], schema)
    next_id = 0
    counts: dict[str, int] = {}
    try:
        for step in range(STEPS):
            op = "insert" if step < 3 else rng.choice(
                ["insert", "insert", "insert", "overwrite_part", "overwrite_part", "overwrite_all",
                 "update", "update", "delete", "delete"])
            if op == "overwrite_all" and rng.random() < 0.5:
                op = "insert"  # keep whole-table overwrites rare
            counts[op] = counts.get(op, 0) + 1
            if op.startswith(("insert", "overwrite")):
                n = rng.randint(1, 5)
                k = rng.choice(PARTS)
                rows = [(next_id + i, rng.choice(NAMES), float(rng.randrange(100)) / 2,
                         k if op == "overwrite_part" else rng.choice(PARTS)) for i in range(n)]
                next_id += n
                new = spark.createDataFrame(rows, schema)
                new.createOrReplaceTempView(src)
                if op == "insert":
                    sql(f"INSERT INTO {table} SELECT id, name, value, p FROM {src}")
                    oracle = oracle.union(new)
                elif op == "overwrite_all":
                    sql(f"INSERT OVERWRITE {table} SELECT id, name, value, p FROM {src}")
                    oracle = new
                else:
                    sql(f"INSERT OVERWRITE TABLE {table} PARTITION (p = {k}) SELECT id, name, value FROM {src}")
                    oracle = oracle.filter(F.col("p") != k).union(new)
            elif op == "update":
                cond = _conditions(rng)
                sql(f"UPDATE {table} SET value = value + 1 WHERE {cond}")
                oracle = oracle.withColumn(
                    "value", F.when(F.expr(cond), F.col("value") + 1).otherwise(F.col("value")))
            else:
                cond = _conditions(rng)
                sql(f"DELETE FROM {table} WHERE {cond}")
                # SQL DELETE keeps rows whose predicate is NULL
                oracle = oracle.filter(~F.coalesce(F.expr(cond), F.lit(False)))
            if step % 10 == 9:
                _check(spark, path, oracle, step)
                oracle = oracle.localCheckpoint()  # keep the oracle's plan short
        _check(spark, path, oracle, STEPS)
        assert set(counts) == {"insert", "overwrite_part", "overwrite_all", "update", "delete"}, counts
    finally:
        spark.catalog.dropTempView(src)
        sql(f"DROP TABLE IF EXISTS {table}")
