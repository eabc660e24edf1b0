"""Who owns a table's files: a table created with LOCATION (or declared EXTERNAL) keeps them on DROP, so
several names may read one folder and dropping any of them loses nothing; only a managed table (made in the
warehouse folder) has its folder deleted by DROP. Oracle: the folder on disk and pyarrow reading it."""

from __future__ import annotations

import pyarrow as pa
import pytest

import carbon_ds
import carbon_ds.api as api
from carbon_ds.errors import CarbonTableError
from carbon_ds.spark.statements import catalog
from carbon_ds.table.table import CarbonTable


def _sql(spark, text):
    return carbon_ds.sql(spark, text)


def _ids(spark, name):
    return sorted(r.id for r in spark.sql(f"SELECT id FROM {name}").collect())


def _forget(spark, name):
    """What a new process without a persistent metastore looks like: the name unknown, the folder kept."""
    entry = catalog.lookup(spark, catalog.TableName(None, name))
    if catalog.in_spark_catalog(spark):
        catalog.set_managed(spark, entry, False)  # so that forgetting the entry keeps the folder
        catalog.spark_only(spark, f"DROP TABLE {name}")
    catalog.drop_view(spark, name)
    catalog.unregister(spark, "default", name)


def test_location_tables_are_external_and_any_name_of_a_folder_may_go(spark, tmp_path):
    loc = tmp_path / "owned"
    _sql(spark, f"CREATE TABLE lo_t (id BIGINT) STORED AS carbondata LOCATION '{loc}'")
    _sql(spark, "INSERT INTO lo_t VALUES (1), (2), (3)")
    link = tmp_path / "alias_link"
    link.symlink_to(loc, target_is_directory=True)
    _sql(spark, f"CREATE TABLE lo_alias (id BIGINT) STORED AS carbondata LOCATION '{link}'")
    _sql(spark, f"CREATE EXTERNAL TABLE lo_alias2 (id BIGINT) STORED AS carbondata LOCATION '{loc}'")
    assert _ids(spark, "lo_alias") == _ids(spark, "lo_alias2") == [1, 2, 3]
    for name in ("lo_alias", "lo_alias2", "lo_t"):
        _sql(spark, f"DROP TABLE {name}")
        assert api.read_table(loc).column("id").to_pylist() == [1, 2, 3], f"DROP TABLE {name} lost rows"
    with pytest.raises(CarbonTableError, match="not found"):
        _sql(spark, "SHOW SEGMENTS FOR TABLE lo_t")


def test_a_second_name_of_a_managed_folder_never_deletes_it(spark):
    _sql(spark, "CREATE TABLE lo_wh (id BIGINT) STORED AS carbondata")
    _sql(spark, "INSERT INTO lo_wh VALUES (7)")
    wh = catalog.default_location(spark, "default", "lo_wh")
    _forget(spark, "lo_wh")
    _sql(spark, f"CREATE TABLE lo_wh_alias (id BIGINT) STORED AS carbondata LOCATION '{wh}'")
    _sql(spark, "DROP TABLE lo_wh_alias")
    assert api.read_table(wh).column("id").to_pylist() == [7]
    assert [r[0] for r in _sql(spark, "SHOW SEGMENTS FOR TABLE lo_wh").collect()] == ["0"]  # found by name
    _sql(spark, "DROP TABLE lo_wh")  # the managed table: its folder goes
    assert not CarbonTable.exists(wh)


def test_if_not_exists_location_still_adopts_a_table_no_other_name_has(spark, tmp_path):
    loc = tmp_path / "adopt"
    api.write_table(pa.table({"id": pa.array([4, 5], pa.int64())}), loc)
    _sql(spark, f"CREATE TABLE IF NOT EXISTS lo_adopt (id BIGINT) STORED AS carbondata LOCATION '{loc}'")
    _forget(spark, "lo_adopt")  # a new session re-declares it
    _sql(spark, f"CREATE TABLE IF NOT EXISTS lo_adopt (id BIGINT) STORED AS carbondata LOCATION '{loc}'")
    assert _ids(spark, "lo_adopt") == [4, 5]
    _sql(spark, "DROP TABLE lo_adopt")
    assert api.read_table(loc).column("id").to_pylist() == [4, 5]


def test_add_segment_of_a_link_to_the_table_is_refused(spark, tmp_path):
    loc = tmp_path / "base"
    _sql(spark, f"CREATE TABLE lo_seg (id BIGINT) STORED AS carbondata LOCATION '{loc}'")
    _sql(spark, "INSERT INTO lo_seg VALUES (1), (2)")
    link = tmp_path / "to_base"
    link.symlink_to(loc, target_is_directory=True)
    with pytest.raises(CarbonTableError, match=r"a symbolic link to .*base\) lies inside table"):
        _sql(spark, f"ALTER TABLE lo_seg ADD SEGMENT OPTIONS('path'='{link}', 'format'='carbondata')")
    assert _ids(spark, "lo_seg") == [1, 2]
    _sql(spark, "DROP TABLE lo_seg")
    assert CarbonTable.exists(loc)  # a LOCATION table keeps its files
