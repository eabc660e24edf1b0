"""One front door: CarbonData's statements through plain ``spark.sql`` (a session with the extension), the
same tables through ``carbon_ds.sql``, and no statement sequence across the two losing data.

Oracles: pyarrow reading the table folder (``carbon_ds.read_table`` is checked against pyarrow elsewhere) and
the rows written, Spark's own DESCRIBE / SHOW CREATE TABLE / catalog API, and the folder listing on disk.
"""

from __future__ import annotations

import os
import random
import threading
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import carbon_ds
from carbon_ds.spark.statements import catalog

pytestmark = pytest.mark.spark


def _rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _table_rows(path: str) -> list[tuple]:
    return sorted((tuple(r.values()) for r in carbon_ds.read_table(path).to_pylist()), key=repr)


def _describe(spark, name: str) -> dict[str, str]:
    return {r[0]: r[1] for r in spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()}


def _warehouse(spark, name: str) -> str:
    return catalog.default_location(spark, "default", name)


def _drop(spark, *names: str) -> None:
    for name in names:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def _hundred(spark, name: str) -> None:
    spark.sql(f"INSERT INTO {name} SELECT id, concat('n', id) FROM range(100)")


@pytest.mark.parametrize("make", ["stored_as", "ctas", "save_as_table", "carbon_ds_sql"])
def test_schema_changes_through_either_door_keep_every_row(ext, make):
    spark, name = ext, f"fd_keep_{make}"
    _drop(spark, name)
    try:
        if make == "stored_as":
            spark.sql(f"CREATE TABLE {name} (id BIGINT, name STRING) STORED AS carbondata")
            _hundred(spark, name)
        elif make == "ctas":
            spark.sql(f"CREATE TABLE {name} STORED AS carbondata AS SELECT id, concat('n', id) AS name FROM range(100)")
        elif make == "save_as_table":
            spark.range(100).selectExpr("id", "concat('n', id) AS name").write.format("carbondata").saveAsTable(name)
        else:
            carbon_ds.sql(spark, f"CREATE TABLE {name} (id BIGINT, name STRING) STORED AS carbondata")
            _hundred(spark, name)
        path = _warehouse(spark, name)
        want = [(i, f"n{i}") for i in range(100)]
        assert _table_rows(path) == sorted(want, key=repr)
        carbon_ds.sql(spark, f"ALTER TABLE {name} ADD COLUMNS (z INT)")
        assert spark.table(name).count() == 100 and os.path.isdir(path)
        assert spark.table(name).columns == ["id", "name", "z"]
        spark.sql(f"ALTER TABLE {name} ADD COLUMNS (w STRING)")  # the same through plain spark.sql
        carbon_ds.sql(spark, f"ALTER TABLE {name} DROP COLUMNS (z)")
        spark.sql(f"ALTER TABLE {name} RENAME COLUMN name TO label")
        carbon_ds.sql(spark, f"ALTER TABLE {name} CHANGE id id BIGINT")
        spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('comment'='kept')")
        carbon_ds.sql(spark, f"ALTER TABLE {name} SET TBLPROPERTIES ('compaction_level_threshold'='4,3')")
        # the CarbonData schema changed, Spark's catalog agrees, and no row went anywhere
        assert carbon_ds.CarbonTable.open(path).schema.names == ["id", "label", "w"]
        assert spark.table(name).columns == ["id", "label", "w"]
        assert _rows(spark.table(name)) == sorted([(i, f"n{i}", None) for i in range(100)], key=repr)
        assert _describe(spark, name)["Type"] == "MANAGED"
    finally:
        _drop(spark, name)
    assert not os.path.exists(_warehouse(spark, name))  # a managed table's DROP deletes its folder


def test_external_and_location_tables_keep_their_files_on_drop(ext, tmp_path):
    spark = ext
    prod = str(tmp_path / "prod" / "d2")
    data = pa.table({"x": pa.array(range(50), pa.int64()), "s": [f"v{i}" for i in range(50)]})
    carbon_ds.write_table(data, prod)
    before = _table_rows(prod)
    statements = [
        ("spark", f"CREATE EXTERNAL TABLE fd_d2 STORED AS carbondata LOCATION '{prod}'", "carbon", "DROP TABLE fd_d2"),
        ("spark", f"CREATE TABLE fd_d1 USING carbondata LOCATION '{prod}'", "carbon", "DROP TABLE fd_d1"),
        ("carbon", f"CREATE TABLE fd_d3 STORED AS carbondata LOCATION '{prod}'", "spark", "DROP TABLE fd_d3"),
        ("carbon", f"CREATE EXTERNAL TABLE fd_d4 STORED AS carbondata LOCATION '{prod}'", "spark", "DROP TABLE fd_d4"),
    ]
    doors = {"spark": ext.sql, "carbon": lambda text: carbon_ds.sql(spark, text)}
    for create_door, create, drop_door, drop in statements:
        name = create.split()[2] if create.split()[1] == "TABLE" else create.split()[3]
        doors[create_door](create)
        assert _describe(spark, name)["Type"] == "EXTERNAL"
        assert _describe(spark, name)["Location"].endswith(prod)
        assert spark.table(name).count() == 50
        doors[drop_door](drop)
        assert not spark.catalog.tableExists(name)
        assert _table_rows(prod) == before, f"{create!r} then {drop!r} changed the table's files"


def test_catalog_shows_what_the_table_is(ext, tmp_path):
    spark = ext
    _drop(spark, "fd_part", "fd_range", "fd_ext")
    try:
        spark.sql("CREATE TABLE fd_part (id BIGINT, name STRING, day INT) USING carbondata PARTITIONED BY (day) "
                  "TBLPROPERTIES ('sort_columns'='id')")
        spark.sql("INSERT INTO fd_part VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 2)")
        table = carbon_ds.CarbonTable.open(_warehouse(spark, "fd_part"))
        assert table.partition_columns == ["day"] and table.sort_columns == ["id"]
        assert {"Metadata", "day=1", "day=2"} <= set(os.listdir(_warehouse(spark, "fd_part")))
        info = _describe(spark, "fd_part")
        assert info["Type"] == "MANAGED" and info["Provider"] == "carbondata"
        assert info["Location"].endswith(_warehouse(spark, "fd_part"))
        assert "# Partition Information" in info
        listed = {t.name: t.tableType for t in spark.catalog.listTables() if t.name.startswith("fd_")}
        assert listed["fd_part"] == "MANAGED"

        # CarbonData's form: the partition column declared with its type in PARTITIONED BY, RANGE by id
        spark.sql("CREATE TABLE fd_range (id INT) PARTITIONED BY (hour INT) STORED AS carbondata "
                  "TBLPROPERTIES ('PARTITION_TYPE'='RANGE', 'RANGE_INFO'='6, 12, 18')")
        spark.sql("INSERT INTO fd_range VALUES (1, 3), (2, 13), (3, 23)")
        assert carbon_ds.CarbonTable.open(_warehouse(spark, "fd_range")).partitioning.flavour == "id"
        assert [r[0] for r in spark.sql("SHOW PARTITIONS fd_range").collect()][:2] == ["0, hour = DEFAULT",
                                                                                       "1, hour < 6"]

        # SHOW CREATE TABLE's text makes the same carbondata table again
        text = spark.sql("SHOW CREATE TABLE fd_part").first()[0]
        assert "USING carbondata" in text and "PARTITIONED BY (day)" in text and "LOCATION" not in text
        rows = _rows(spark.table("fd_part"))
        spark.sql("DROP TABLE fd_part")
        spark.sql(text)
        again = carbon_ds.CarbonTable.open(_warehouse(spark, "fd_part"))
        assert again.partition_columns == ["day"] and again.sort_columns == ["id"]
        assert spark.table("fd_part").count() == 0
        spark.sql("INSERT INTO fd_part VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 2)")
        assert _rows(spark.table("fd_part")) == rows

        prod = str(tmp_path / "ext")
        carbon_ds.write_table(pa.table({"k": [1, 2, 3]}), prod)
        spark.sql(f"CREATE EXTERNAL TABLE fd_ext STORED AS carbondata LOCATION '{prod}'")
        text = spark.sql("SHOW CREATE TABLE fd_ext").first()[0]
        assert "LOCATION" in text
        spark.sql("DROP TABLE fd_ext")
        spark.sql(text)
        assert _describe(spark, "fd_ext")["Type"] == "EXTERNAL" and spark.table("fd_ext").count() == 3
    finally:
        _drop(spark, "fd_part", "fd_range", "fd_ext")


def test_carbondata_statements_through_plain_spark_sql(ext, tmp_path):
    spark = ext
    _drop(spark, "fd_stmts")
    try:
        spark.sql("CREATE TABLE fd_stmts (id BIGINT, name STRING) STORED AS carbondata")
        _hundred(spark, "fd_stmts")
        _hundred(spark, "fd_stmts")
        parquet = tmp_path / "external"
        parquet.mkdir()
        pq.write_table(pa.table({"id": pa.array([1000, 1001], pa.int64()), "name": ["p0", "p1"]}),
                       parquet / "part.parquet")
        added = spark.sql(f"ALTER TABLE fd_stmts ADD SEGMENT OPTIONS ('path'='{parquet}', 'format'='parquet')")
        assert added.columns == ["Segment ID"] and [r[0] for r in added.collect()] == ["2"]
        segments = spark.sql("SHOW SEGMENTS FOR TABLE fd_stmts")
        assert segments.columns[:2] == ["ID", "Status"] and len(segments.collect()) == 3
        assert spark.table("fd_stmts").count() == 202
        deleted = spark.sql("DELETE FROM TABLE fd_stmts WHERE SEGMENT.ID IN (0)")
        assert [tuple(r) for r in deleted.collect()] == [("0", "Marked for Delete")]
        assert spark.sql("DELETE FROM fd_stmts WHERE id < 10").first()[0] == 10
        assert spark.sql("UPDATE fd_stmts SET name = 'updated' WHERE id = 50").first()[0] == 1
        merged = spark.sql("MERGE INTO fd_stmts t USING (SELECT 1001 AS id, 'merged' AS name UNION ALL "
                           "SELECT 2000, 'new') s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * "
                           "WHEN NOT MATCHED THEN INSERT *")
        assert merged.columns[0] == "num_affected_rows" and merged.first()[0] == 2
        spark.sql("CLEAN FILES FOR TABLE fd_stmts OPTIONS ('force'='true')")
        want = sorted([(i, "updated" if i == 50 else f"n{i}") for i in range(10, 100)]
                      + [(1000, "p0"), (1001, "merged"), (2000, "new")], key=repr)
        assert _rows(spark.table("fd_stmts")) == want
        assert _table_rows(_warehouse(spark, "fd_stmts")) == want
        assert carbon_ds.sql(spark, "SHOW SEGMENTS FOR TABLE fd_stmts").count() >= 2
    finally:
        _drop(spark, "fd_stmts")


def test_statements_carbon_ds_cannot_run_say_so(ext):
    spark = ext
    _drop(spark, "fd_refuse")
    try:
        spark.sql("CREATE TABLE fd_refuse (id BIGINT) STORED AS carbondata")
        with pytest.raises(Exception, match="REPLACE COLUMNS is not supported on carbondata table"):
            spark.sql("ALTER TABLE fd_refuse REPLACE COLUMNS (a INT)")
        assert spark.table("fd_refuse").columns == ["id"]  # neither the table nor the catalog changed
        with pytest.raises(Exception, match="did you mean SEGMENTS"):
            spark.sql("SHOW SEGMENT FOR TABLE fd_refuse")
        with pytest.raises(carbon_ds.CarbonOptionError, match="did you mean FILES"):
            carbon_ds.sql(spark, "CLEAN FILE FOR TABLE fd_refuse")
        with pytest.raises(Exception, match="CarbonTableError: CREATE EXTERNAL TABLE .* needs LOCATION"):
            spark.sql("CREATE EXTERNAL TABLE fd_refuse2 (a INT) STORED AS carbondata")
        with pytest.raises(carbon_ds.CarbonTableError, match="not found"):
            carbon_ds.sql(spark, "SHOW SEGMENTS FOR TABLE fd_nowhere")
    finally:
        _drop(spark, "fd_refuse")


def test_the_source_and_tables_from_any_thread(ext, tmp_path):
    spark = ext
    _drop(spark, "fd_threads")
    spark.sql("CREATE TABLE fd_threads (id BIGINT) STORED AS carbondata")

    def job(k: int) -> int:
        path = str(tmp_path / f"t{k}")
        spark.range(k * 10, k * 10 + 10).write.format("carbondata").mode("append").save(path)
        carbon_ds.write(spark.range(5), path, mode="append")
        spark.sql(f"INSERT INTO fd_threads SELECT id FROM range({k * 10}, {k * 10 + 10})")
        return spark.read.format("carbondata").load(path).count()

    try:
        with ThreadPoolExecutor(3) as pool:
            counts = list(pool.map(job, range(4)))
        assert counts == [15, 15, 15, 15]
        assert threading.active_count() >= 1
        assert sorted(r[0] for r in spark.table("fd_threads").collect()) == list(range(40))
    finally:
        _drop(spark, "fd_threads")


def test_stream_to_table_writes_the_catalog_table(ext, tmp_path):
    spark = ext
    _drop(spark, "fd_stream")
    try:
        spark.sql("CREATE TABLE fd_stream (id BIGINT, v STRING) STORED AS carbondata")
        source = tmp_path / "incoming"
        source.mkdir()
        pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]}), source / "a.parquet")
        stream = (spark.readStream.schema("id BIGINT, v STRING").parquet(str(source)).writeStream
                  .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True)
                  .toTable("fd_stream"))
        stream.awaitTermination(120)
        assert _rows(spark.table("fd_stream")) == [(1, "a"), (2, "b"), (3, "c")]
    finally:
        _drop(spark, "fd_stream")


# -- the same scripts through both doors ------------------------------------------------------------------

_POOL = [
    "INSERT INTO {t} SELECT id, concat('r', id % 7), id % 5 FROM range({a}, {b})",
    "DELETE FROM {t} WHERE k = {k}",
    "UPDATE {t} SET s = 'u{k}' WHERE id % 11 = {k}",
    "DELETE FROM TABLE {t} WHERE SEGMENT.ID IN ({seg})",
    "ALTER TABLE {t} COMPACT 'MINOR'",
    "CLEAN FILES FOR TABLE {t} OPTIONS ('force'='true')",
    "INSERT OVERWRITE {t} SELECT id, s, k FROM {t} WHERE id % 2 = {k2}",
    "MERGE INTO {t} t USING (SELECT id, 'm' AS s, k FROM range({a}, {b}) CROSS JOIN (SELECT 1 AS k)) s "
    "ON t.id = s.id WHEN MATCHED THEN UPDATE SET s = s.s WHEN NOT MATCHED THEN INSERT *",
]


def _script(seed: int) -> list[str]:
    rng = random.Random(seed)
    out = ["INSERT INTO {t} SELECT id, concat('r', id % 7), id % 5 FROM range(0, 40)"]
    for _ in range(10):
        a = rng.randrange(0, 80)
        out.append(rng.choice(_POOL).format(t="{t}", a=a, b=a + rng.randrange(1, 30), k=rng.randrange(5),
                                            k2=rng.randrange(2), seg=rng.randrange(4)))
    return out


# seed 1 by default, 2 and 3 with the slow cases (CI runs both)
@pytest.mark.parametrize("seed", [1, *(pytest.param(seed, marks=pytest.mark.slow) for seed in (2, 3))])
def test_both_doors_run_a_script_to_the_same_table(ext, seed):
    spark = ext
    names = {"spark": f"fd_door_s{seed}", "carbon": f"fd_door_c{seed}"}
    _drop(spark, *names.values())
    try:
        spark.sql(f"CREATE TABLE {names['spark']} (id BIGINT, s STRING, k BIGINT) STORED AS carbondata")
        carbon_ds.sql(spark, f"CREATE TABLE {names['carbon']} (id BIGINT, s STRING, k BIGINT) STORED AS carbondata")
        for k, template in enumerate(_script(seed)):
            outcomes = {}
            for door, name in names.items():
                text = template.format(t=name)
                try:
                    df = spark.sql(text) if door == "spark" else carbon_ds.sql(spark, text)
                    outcomes[door] = ("ok", [tuple(r) for r in df.collect()] if "SEGMENT" not in text else None)
                except Exception as exc:  # noqa: BLE001 - both doors must fail alike
                    outcomes[door] = ("error", type(exc).__name__ in ("CarbonTableError", "CarbonOptionError",
                                                                      "IllegalArgumentException"))
            assert outcomes["spark"][0] == outcomes["carbon"][0], (k, template, outcomes)
            spark_rows = _table_rows(_warehouse(spark, names["spark"]))
            carbon_rows = _table_rows(_warehouse(spark, names["carbon"]))
            assert spark_rows == carbon_rows, f"statement {k}: {template}"
            segs = [[(r[0], r[1]) for r in carbon_ds.sql(spark, f"SHOW SEGMENTS FOR TABLE {n}").collect()]
                    for n in names.values()]
            assert segs[0] == segs[1], f"statement {k}: {template}"
    finally:
        _drop(spark, *names.values())
