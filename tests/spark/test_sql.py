"""carbon_ds.sql: the statement parser (no Spark) and the statements on one shared SparkSession."""

from __future__ import annotations

import pyarrow as pa
import pytest

import carbon_ds
import carbon_ds.api as api
from carbon_ds.ddl import statement_parser as p
from carbon_ds.ddl.types import arrow_type
from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.table import CarbonTable

SEED_ADD = (
    "alter table default.log_carbon_par add segment options (‘path’= "
    "‘hdfs://bieremayi/user/hive/warehouse/log_parquet_par/’,‘format’=‘parquet’,‘partition’=‘day:int,hour:int,type:int’);"
)


# ------------------------------------------------------------------------------------------ parser
def test_parse_add_segment_typographic_quotes_from_the_seed():
    stmt = p.parse(SEED_ADD)
    assert stmt == p.AddSegment(
        p.TableName("default", "log_carbon_par"),
        {
            "path": "hdfs://bieremayi/user/hive/warehouse/log_parquet_par/",
            "format": "parquet",
            "partition": "day:int,hour:int,type:int",
        },
    )
    mixed = p.parse("ALTER TABLE t ADD SEGMENT OPTIONS(‘PATH’='/x', “format”=”orc”, 'k'='it’s')")
    assert mixed.options == {"path": "/x", "format": "orc", "k": "it’s"}


def test_parse_create_table_forms():
    stmt = p.parse(
        """CREATE TABLE IF NOT EXISTS default.log_carbon_par (
        event_time BIGINT COMMENT 'ms', price decimal(10, 2), tags array<string>,
        )PARTITIONED BY (day INT, hour INT, type INT)
        STORED AS carbondata TBLPROPERTIES ('sort_columns'='event_time')
        LOCATION 'hdfs://bieremayi/user/hive/warehouse/log_carbon_par';"""
    )
    assert stmt.table == p.TableName("default", "log_carbon_par") and stmt.if_not_exists
    assert stmt.columns == [("event_time", "BIGINT"), ("price", "decimal(10, 2)"), ("tags", "array<string>")]
    assert [c for c, _ in stmt.partition_columns] == ["day", "hour", "type"]
    assert stmt.properties == {"sort_columns": "event_time"}
    assert stmt.location == "hdfs://bieremayi/user/hive/warehouse/log_carbon_par"
    assert p.parse("create external table `t x` (a int) stored as carbondata location '/d'").external
    assert p.parse("CREATE TABLE t (a INT) USING parquet") is None  # Spark's own
    assert arrow_type("decimal(10, 2)") == pa.decimal128(10, 2)
    assert arrow_type("STRUCT<a:INT, b:ARRAY<STRING>>") == pa.struct(
        [pa.field("a", pa.int32()), pa.field("b", pa.list_(pa.string()))]
    )


def test_parse_segment_statements():
    assert p.parse("show segments for table db.t limit 3") == p.ShowSegments(p.TableName("db", "t"), 3)
    assert p.parse("SHOW SEGMENTS FOR TABLE t") == p.ShowSegments(p.TableName(None, "t"), None)
    assert p.parse("DELETE FROM TABLE t WHERE SEGMENT.ID IN (0, 1, '2.1')").ids == ["0", "1", "2.1"]
    assert p.parse("delete from table t where segment.starttime before ‘2021-11-29 16:30:00’").before == (
        "2021-11-29 16:30:00"
    )
    assert p.parse("CLEAN FILES FOR TABLE t OPTIONS('force'='true')").options == {"force": "true"}
    assert p.parse("DROP TABLE IF EXISTS db.t") == p.DropTable(p.TableName("db", "t"), True)
    ins = p.parse("INSERT OVERWRITE TABLE db.t SELECT 1")
    assert ins.table == p.TableName("db", "t") and ins.overwrite
    assert "INSERT OVERWRITE TABLE db.t SELECT 1"[slice(*ins.span)] == "db.t"
    assert p.parse("SELECT * FROM t") is None
    assert type(p.parse("DELETE FROM t WHERE a = 1")).__name__ == "DeleteRows"  # row delete: tests/table/test_dml.py


def test_parse_leaves_views_and_other_creates_to_spark():
    for text in ("CREATE TEMPORARY VIEW v USING carbondata OPTIONS (path '/x')",
                 "CREATE OR REPLACE TEMPORARY VIEW v USING carbondata OPTIONS (path '/x')",
                 "CREATE GLOBAL TEMPORARY VIEW v USING carbondata OPTIONS (path '/x')",
                 "CREATE TEMPORARY TABLE v USING carbondata OPTIONS (path '/x')",
                 "CREATE OR REPLACE VIEW v AS SELECT * FROM carbondata.`/x`"):
        assert p.parse(text) is None, text
    assert isinstance(p.parse("CREATE EXTERNAL TABLE t (a INT) USING carbondata"), p.CreateTable)


def test_split_statements_minds_strings_and_comments():
    from carbon_ds.ddl.script import split_statements

    def texts(script):
        return [(s.text, s.start) for s in split_statements(script)]

    assert texts("SELECT 1;") == [("SELECT 1", 0)]
    assert texts("DELETE FROM t WHERE a = ';'; DROP TABLE t") == [("DELETE FROM t WHERE a = ';'", 0),
                                                                    ("DROP TABLE t", 29)]
    assert texts("-- a;b\nSELECT 'it\\'s;', \"x;y\", `c;d` /* e; /* f; */ ; */ ;; -- g;") == [
        ("SELECT 'it\\'s;', \"x;y\", `c;d` /* e; /* f; */ ; */", 7)]
    assert texts("ALTER TABLE t ADD SEGMENT OPTIONS(‘path’=‘/a;b’, 'k'='it’s;'); SHOW SEGMENTS FOR TABLE t") == [
        ("ALTER TABLE t ADD SEGMENT OPTIONS(‘path’=‘/a;b’, 'k'='it’s;')", 0), ("SHOW SEGMENTS FOR TABLE t", 63)]
    assert texts("lbl: BEGIN SELECT 1; SELECT 2; END;") == [("lbl: BEGIN SELECT 1; SELECT 2; END", 0)]
    assert texts("SELECT 'open; SELECT 2") == [("SELECT 'open; SELECT 2", 0)]  # Spark says what is wrong
    assert texts(" ; -- only a comment") == []


@pytest.mark.parametrize(
    "text, expected",
    [
        ("SHOW SEGMENTS FOR t", "expected TABLE, found 't'"),
        ("SHOW SEGMENTS FOR TABLE t LIMIT x", "expected a whole number after LIMIT"),
        ("DELETE FROM TABLE t WHERE SEGMENT.ID IN ()", "expected a segment id"),
        ("DELETE FROM TABLE t WHERE SEGMENT.NAME = 1", "SEGMENT.ID IN (...) or SEGMENT.STARTTIME BEFORE"),
        ("ALTER TABLE t ADD SEGMENT OPTIONS('path'='/x'", "expected ','"),
        ("ALTER TABLE t ADD SEGMENT OPTIONS('path'='/x) ", "unterminated string"),
        ("CREATE TABLE t (a INT) STORED AS carbondata EXTRA", "expected STORED AS carbondata, PARTITIONED BY"),
        ("CLEAN FILES FOR TABLE t junk", "expected end of statement, found 'junk'"),
    ],
)
def test_parse_errors_say_what_was_expected(text, expected):
    with pytest.raises(CarbonOptionError, match="expected") as e:
        p.parse(text)
    assert expected in str(e.value)


# ------------------------------------------------------------------------------------------ Spark
def _run(spark, text):
    return carbon_ds.sql(spark, text)


def test_sql_create_insert_show_delete_clean_drop(spark):
    sql = lambda text: _run(spark, text)  # noqa: E731
    sql("DROP TABLE IF EXISTS sqlt1")
    sql("CREATE TABLE sqlt1 (id BIGINT, name STRING) STORED AS carbondata TBLPROPERTIES ('sort_columns'='id')")
    from carbon_ds.spark.statements import catalog

    path = catalog.default_location(spark, "default", "sqlt1")
    assert CarbonTable.open(path).sort_columns == ["id"]
    with pytest.raises(CarbonTableError, match="already exists"):
        sql("CREATE TABLE sqlt1 (id BIGINT) STORED AS carbondata")
    sql("CREATE TABLE IF NOT EXISTS sqlt1 (id BIGINT) STORED AS carbondata")
    sql("INSERT INTO sqlt1 VALUES (1, 'a'), (2, 'b')")
    sql("INSERT INTO TABLE default.sqlt1 SELECT 3, 'c'")
    assert sorted(r.id for r in spark.sql("SELECT id FROM sqlt1").collect()) == [1, 2, 3]
    seg = sql("SHOW SEGMENTS FOR TABLE sqlt1")
    assert seg.columns == ["ID", "Status", "Load Start Time", "Load Time Taken", "Partition", "Data Size",
                           "Index Size", "File Format", "Path"]
    assert [r.ID for r in seg.collect()] == ["1", "0"]
    assert [r.ID for r in sql("show segments for table sqlt1 limit 1").collect()] == ["1"]
    assert [r[0] for r in sql("DELETE FROM TABLE sqlt1 WHERE SEGMENT.ID IN (0)").collect()] == ["0"]
    assert [r.id for r in spark.sql("SELECT id FROM sqlt1").collect()] == [3]
    with pytest.raises(CarbonTableError, match="Invalid ID is: 0"):
        sql("DELETE FROM TABLE sqlt1 WHERE SEGMENT.ID IN (0)")
    assert sql("CLEAN FILES FOR TABLE sqlt1").collect()[0].Action == "moved to trash"
    with pytest.raises(CarbonOptionError, match="valid options: force"):
        sql("CLEAN FILES FOR TABLE sqlt1 OPTIONS('forced'='true')")
    sql("INSERT OVERWRITE sqlt1 SELECT 9, 'z'")
    assert [tuple(r) for r in spark.sql("SELECT * FROM sqlt1").collect()] == [(9, "z")]
    assert sql("SELECT count(*) AS n FROM sqlt1").collect()[0].n == 1  # anything else: spark.sql
    sql("DROP TABLE sqlt1")
    assert not CarbonTable.exists(path) and not spark.catalog.tableExists("sqlt1")
    with pytest.raises(CarbonTableError, match="table default.sqlt1 not found"):
        sql("SHOW SEGMENTS FOR TABLE sqlt1")


def test_sql_location_tables_add_segment_and_new_session_lookup(spark, tmp_path):
    sql = lambda text: _run(spark, text)  # noqa: E731
    loc = tmp_path / "loc"
    sql(f"CREATE TABLE sqlt2 (a INT) STORED AS carbondata LOCATION '{loc}'")
    api.write_table(pa.table({"a": pa.array([1, 2], pa.int32())}), loc)
    assert spark.sql("SELECT count(*) AS n FROM sqlt2").collect()[0].n == 2
    if not hasattr(CarbonTable, "add_segment"):
        with pytest.raises(CarbonTableError, match="ADD SEGMENT is not available yet"):
            sql("ALTER TABLE sqlt2 ADD SEGMENT OPTIONS(‘path’=‘/nowhere’, ‘format’=‘parquet’)")
    with pytest.raises(CarbonOptionError, match="needs option 'path'"):
        sql("ALTER TABLE sqlt2 ADD SEGMENT OPTIONS('format'='parquet')")
    with pytest.raises(CarbonOptionError, match="format must be one of"):
        sql("ALTER TABLE sqlt2 ADD SEGMENT OPTIONS('path'='/x', 'format'='avro')")
    # EXTERNAL over the same folder: DROP keeps the data
    sql(f"CREATE EXTERNAL TABLE sqlt2x (a INT) STORED AS carbondata LOCATION '{loc}'")
    sql("DROP TABLE sqlt2x")
    assert CarbonTable.exists(loc)
    # a managed table made in the warehouse is found by name when the session registry misses it
    from carbon_ds.spark.statements import catalog

    wh = catalog.default_location(spark, "default", "sqlt3")
    api.write_table(pa.table({"a": pa.array([7], pa.int64())}), wh)
    assert [r.ID for r in sql("SHOW SEGMENTS FOR TABLE sqlt3").collect()] == ["0"]
    assert spark.sql("SELECT a FROM sqlt3").collect()[0].a == 7  # the view now exists too
    sql("DROP TABLE sqlt3")  # a managed (warehouse) table: its folder goes
    sql("DROP TABLE sqlt2")  # a LOCATION table keeps its files, as Spark's and CarbonData's do
    assert CarbonTable.exists(loc) and not CarbonTable.exists(wh)
    assert api.read_table(loc).column("a").to_pylist() == [1, 2]


def test_create_table_never_replaces_a_temp_view(spark):
    sql = lambda text: _run(spark, text)  # noqa: E731
    spark.range(2000).createOrReplaceTempView("user_view")
    with pytest.raises(CarbonTableError, match="already exists as a temporary view"):
        sql("CREATE TABLE user_view (id BIGINT) STORED AS carbondata")
    sql("CREATE TABLE IF NOT EXISTS user_view (id BIGINT) STORED AS carbondata")  # Spark's no-op
    assert spark.sql("SELECT count(*) AS n FROM user_view").collect()[0].n == 2000
    spark.catalog.dropTempView("user_view")


@pytest.mark.parametrize("name", ["`..`", "`.`", "`a/b`", "`x y`"])
def test_table_names_that_are_not_identifiers_are_refused(spark, name):
    with pytest.raises(CarbonTableError, match="invalid table name"):
        _run(spark, f"CREATE TABLE {name} (id BIGINT) STORED AS carbondata")


def test_location_must_be_empty_or_a_table_and_drop_keeps_every_file(spark, tmp_path):
    sql = lambda text: _run(spark, text)  # noqa: E731
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "precious.txt").write_text("mine")
    with pytest.raises(CarbonTableError, match="non-empty folder that is not a CarbonData table"):
        sql(f"CREATE TABLE loc_t (id BIGINT) STORED AS carbondata LOCATION '{busy}'")
    assert (busy / "precious.txt").read_text() == "mine"
    loc = tmp_path / "loc"
    sql(f"CREATE TABLE loc_t (id BIGINT) STORED AS carbondata LOCATION '{loc}'")
    sql("INSERT INTO loc_t VALUES (1)")
    (loc / "notes.txt").write_text("not a table file")
    before = sorted(p.name for p in loc.iterdir())
    sql("DROP TABLE loc_t")
    assert sorted(p.name for p in loc.iterdir()) == before and "notes.txt" in before
    assert api.read_table(loc).column("id").to_pylist() == [1]


@pytest.mark.parametrize("text, what", [("alter table db.t rename to u", "RENAME TO"),
                                        ("ALTER TABLE t RENAME TO u", "RENAME TO")])
def test_not_yet_supported_carbondata_statements_are_recognised(text, what):
    stmt = p.parse(text)
    assert type(stmt).__name__ == "Unsupported" and stmt.what == what


def test_not_yet_supported_statement_on_a_carbondata_table_says_so(spark):
    _run(spark, "DROP TABLE IF EXISTS unsup_t")
    _run(spark, "CREATE TABLE unsup_t (id BIGINT) STORED AS carbondata")
    with pytest.raises(CarbonOptionError, match="ALTER TABLE ... RENAME TO is not supported on carbondata table"):
        _run(spark, "ALTER TABLE unsup_t RENAME TO unsup_u")
    _run(spark, "DROP TABLE unsup_t")
