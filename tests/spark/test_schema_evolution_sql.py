"""ALTER TABLE ADD / DROP COLUMNS, CHANGE and SET / UNSET TBLPROPERTIES through carbon_ds.sql, checked
against a pyarrow oracle after every step; a DataFrame planned before a change fails clearly."""

from __future__ import annotations

from decimal import Decimal

import pytest

import carbon_ds
from carbon_ds.ddl import statement_parser as p
from carbon_ds.errors import CarbonError
from carbon_ds.table import CarbonTable


def _rows(spark, text):
    return sorted(tuple(r) for r in carbon_ds.sql(spark, text).collect())


def test_parse_alter_schema_forms():
    add = p.parse("ALTER TABLE db.t ADD COLUMNS (a int, b decimal(10,2)) TBLPROPERTIES('DEFAULT.VALUE.a'='5')")
    assert add == p.AlterSchema(p.TableName("db", "t"), "add", columns=[("a", "int"), ("b", "decimal(10,2)")],
                                properties={"default.value.a": "5"})
    assert p.parse("alter table t drop columns (a, b)").names == ["a", "b"]
    ch = p.parse("ALTER TABLE t CHANGE a b BIGINT")
    assert (ch.action, ch.names, ch.new_name, ch.type_text.upper()) == ("change", ["a"], "b", "BIGINT")
    assert p.parse("ALTER TABLE t UNSET TBLPROPERTIES ('comment')").names == ["comment"]
    assert p.parse("ALTER TABLE t SET TBLPROPERTIES ('table_blocksize'='64')").properties == {
        "table_blocksize": "64"}


def test_alter_sequence_sql(spark, tmp_path):
    run = lambda text: carbon_ds.sql(spark, text)  # noqa: E731
    run("DROP TABLE IF EXISTS evo_t")
    run(f"CREATE TABLE evo_t (id INT, name STRING, amt DECIMAL(5,2)) STORED AS carbondata "
        f"LOCATION '{tmp_path / 'evo'}'")
    run("INSERT INTO evo_t VALUES (1, 'a', 1.50), (2, 'b', 2.25)")
    planned = spark.table("evo_t")

    run("ALTER TABLE evo_t ADD COLUMNS (qty BIGINT, note STRING) TBLPROPERTIES('DEFAULT.VALUE.qty'='7')")
    assert _rows(spark, "SELECT * FROM evo_t") == [(1, "a", Decimal("1.50"), 7, None),
                                                   (2, "b", Decimal("2.25"), 7, None)]
    try:  # planned before the change: the old columns, consistently, or a clear refusal; never a mix
        old = sorted(tuple(r) for r in planned.collect())
        assert old == [(1, "a", Decimal("1.50")), (2, "b", Decimal("2.25"))]
    except Exception as e:  # noqa: BLE001
        assert "changed after this DataFrame was planned" in str(e)
    run("INSERT INTO evo_t VALUES (3, 'c', 3.00, 30, 'n')")
    assert _rows(spark, "SELECT id FROM evo_t WHERE qty = 7") == [(1,), (2,)]

    run("ALTER TABLE evo_t CHANGE id ident BIGINT")
    run("ALTER TABLE evo_t CHANGE amt amt DECIMAL(8,2)")
    assert _rows(spark, "SELECT ident, amt FROM evo_t") == [(1, Decimal("1.50")), (2, Decimal("2.25")),
                                                            (3, Decimal("3.00"))]
    run("DELETE FROM evo_t WHERE ident = 2")
    run("ALTER TABLE evo_t DROP COLUMNS (note)")
    assert _rows(spark, "SELECT * FROM evo_t") == [(1, "a", Decimal("1.50"), 7), (3, "c", Decimal("3.00"), 30)]
    t = CarbonTable.open(str(tmp_path / "evo"))
    history = t.info.fact_table.schema_evolution.schema_evolution_history
    assert [[c.column_name for c in e.added or []] for e in history] == [[], ["qty", "note"], ["ident"], ["amt"],
                                                                        []]
    assert [c.column_name for c in history[-1].removed] == ["note"]

    with pytest.raises(CarbonError, match="only INT to BIGINT"):
        run("ALTER TABLE evo_t CHANGE name name INT")
    with pytest.raises(CarbonError, match="sort_columns.*cannot be changed"):
        run("ALTER TABLE evo_t SET TBLPROPERTIES ('sort_columns'='name')")
    run("ALTER TABLE evo_t SET TBLPROPERTIES ('table_blocksize'='64')")
    run("ALTER TABLE evo_t UNSET TBLPROPERTIES ('table_blocksize')")
    assert "table_blocksize" not in CarbonTable.open(str(tmp_path / "evo")).properties
    run("DROP TABLE evo_t")


def test_spark_reads_evolved_mixed_table(spark, tmp_path):
    """The data source and the Spark-native read of external segments both follow renames and defaults."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = CarbonTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int32()), ("name", pa.string())]))
    (tmp_path / "pq").mkdir()
    pq.write_table(pa.table({"id": pa.array([10], pa.int32()), "name": ["x"]}), tmp_path / "pq" / "a.parquet")
    t.add_segment(str(tmp_path / "pq"), format="parquet")
    carbon_ds.write_table(pa.table({"id": pa.array([1], pa.int32()), "name": ["a"]}), str(tmp_path / "t"))
    with t.update_schema() as u:
        u.rename_column("name", "nm").add_column("q", pa.int64(), default=5).widen_column("id", pa.int64())
    want = [(1, "a", 5), (10, "x", 5)]
    for native in (False, True):
        df = carbon_ds.read(spark, str(tmp_path / "t"), native=native)
        assert df.columns == ["id", "nm", "q"]
        assert sorted(tuple(r) for r in df.collect()) == want, native
