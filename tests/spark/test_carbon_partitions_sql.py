"""HASH / RANGE / LIST partitions through carbon_ds.sql: CREATE TABLE, INSERT (Spark's writer), SHOW
PARTITIONS, pruned queries equal to Spark's own filter, ALTER TABLE ADD / SPLIT / DROP PARTITION."""

from __future__ import annotations

import pytest

import carbon_ds
from carbon_ds.errors import CarbonOptionError
from carbon_ds.spark.statements import catalog
from carbon_ds.table.table import CarbonTable


def test_sql_list_range_hash_partitions(spark):
    sql = lambda text: carbon_ds.sql(spark, text)  # noqa: E731
    for name in ("cp_list", "cp_range", "cp_hash", "cp_hive"):
        sql(f"DROP TABLE IF EXISTS {name}")
    sql("CREATE TABLE cp_list (id INT, name STRING) PARTITIONED BY (country STRING) STORED AS carbondata "
        "TBLPROPERTIES ('PARTITION_TYPE'='LIST', 'LIST_INFO'='China, (UK, US)')")
    assert [r[0] for r in sql("SHOW PARTITIONS cp_list").collect()] == [
        "0, country = DEFAULT", "1, country = China", "2, country = UK, US"]
    sql("INSERT INTO cp_list VALUES (1, 'a', 'China'), (2, 'b', 'UK'), (3, 'c', 'France'), (4, 'd', 'US')")
    path = catalog.default_location(spark, "default", "cp_list")
    assert carbon_ds.explain(path, "country = 'UK'")["partitions"]["read"] == [2]
    got = sorted(r.id for r in sql("SELECT id FROM cp_list WHERE country IN ('UK', 'US')").collect())
    plain = spark.createDataFrame([(1, "China"), (2, "UK"), (3, "France"), (4, "US")], "id INT, country STRING")
    assert got == sorted(r.id for r in plain.where("country IN ('UK', 'US')").collect())
    sql("ALTER TABLE cp_list ADD PARTITION('France')")
    sql("ALTER TABLE cp_list SPLIT PARTITION(2) INTO('UK', 'US')")
    assert [r[0] for r in sql("SHOW PARTITIONS cp_list").collect()] == [
        "0, country = DEFAULT", "1, country = China", "4, country = UK", "5, country = US", "3, country = France"]
    sql("ALTER TABLE cp_list DROP PARTITION(1)")
    assert sorted(r.id for r in spark.sql("SELECT id FROM cp_list").collect()) == [1, 2, 3, 4]
    sql("ALTER TABLE cp_list DROP PARTITION(3) WITH DATA")
    assert sorted(r.id for r in spark.sql("SELECT id FROM cp_list").collect()) == [1, 2, 4]
    with pytest.raises(CarbonOptionError, match="Cannot drop default partition"):
        sql("ALTER TABLE cp_list DROP PARTITION(0)")

    sql("CREATE TABLE cp_range (id INT) PARTITIONED BY (logdate TIMESTAMP) STORED AS carbondata "
        "TBLPROPERTIES ('PARTITION_TYPE'='RANGE', 'RANGE_INFO'='2014/01/01, 2015/01/01', "
        "'timestampformat'='yyyy/MM/dd')")
    assert [r[0] for r in sql("SHOW PARTITIONS cp_range").collect()] == [
        "0, logdate = DEFAULT", "1, logdate < 2014/01/01", "2, 2014/01/01 <= logdate < 2015/01/01"]

    sql("CREATE TABLE cp_hash (id INT) PARTITIONED BY (vin STRING) STORED AS carbondata "
        "TBLPROPERTIES ('PARTITION_TYPE'='HASH', 'PARTITION_NUM'='5')")
    assert [r[0] for r in sql("SHOW PARTITIONS cp_hash").collect()] == ["vin = HASH_NUMBER(5)"]

    # Hive-style partitions keep their own ADD / DROP PARTITION
    sql("CREATE TABLE cp_hive (id INT) PARTITIONED BY (day INT) STORED AS carbondata")
    sql("INSERT INTO cp_hive VALUES (1, 1), (2, 2)")
    sql("ALTER TABLE cp_hive DROP PARTITION (day = 1)")
    assert [r.id for r in spark.sql("SELECT id FROM cp_hive").collect()] == [2]
    with pytest.raises(CarbonOptionError, match="needs a RANGE or LIST partitioned table"):
        sql("ALTER TABLE cp_hive DROP PARTITION(1)")
    assert CarbonTable.open(catalog.default_location(spark, "default", "cp_hive")).id_layout is None
    for name in ("cp_list", "cp_range", "cp_hash", "cp_hive"):
        sql(f"DROP TABLE {name}")
