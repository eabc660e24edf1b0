"""A folder belongs to one managed table: CREATE TABLE ... LOCATION over another table's folder is refused
(CREATE EXTERNAL TABLE reads it under a second name), and DROP TABLE never deletes another table's data."""

from __future__ import annotations

import pyarrow as pa
import pytest

import carbon_ds
import carbon_ds.api as api
from carbon_ds.errors import CarbonTableError
from carbon_ds.spark import catalog
from carbon_ds.table.table import CarbonTable


def _sql(spark, text):
    return carbon_ds.sql(spark, text)


def _ids(spark, name):
    return sorted(r.id for r in spark.sql(f"SELECT id FROM {name}").collect())


def _forget(spark, name):
    """What a new session looks like: no registry entry, no view."""
    catalog.drop_view(spark, name)
    catalog.unregister(spark, "default", name)


def test_location_of_a_live_table_is_refused_and_external_is_kept(spark, tmp_path):
    loc = tmp_path / "owned"
    _sql(spark, f"CREATE TABLE lo_t (id BIGINT) STORED AS carbondata LOCATION '{loc}'")
    _sql(spark, "INSERT INTO lo_t VALUES (1), (2), (3)")
    link = tmp_path / "alias_link"
    link.symlink_to(loc, target_is_directory=True)
    for text in (f"CREATE TABLE lo_alias (id BIGINT) STORED AS carbondata LOCATION '{loc}'",
                 f"CREATE TABLE IF NOT EXISTS lo_alias (id BIGINT) STORED AS carbondata LOCATION '{loc}'",
                 f"CREATE TABLE lo_alias (id BIGINT) STORED AS carbondata LOCATION '{link}'"):
        with pytest.raises(CarbonTableError, match=r"is the folder of table default\.lo_t .*CREATE EXTERNAL TABLE "
                                                   r"lo_alias"):
            _sql(spark, text)
    assert catalog.lookup(spark, catalog.TableName(None, "lo_alias")) is None
    # the route the message names: a second, external name; dropping it keeps lo_t's data
    _sql(spark, f"CREATE EXTERNAL TABLE lo_alias (id BIGINT) STORED AS carbondata LOCATION '{link}'")
    assert _ids(spark, "lo_alias") == [1, 2, 3]
    _sql(spark, "DROP TABLE lo_alias")
    assert CarbonTable.exists(loc) and _ids(spark, "lo_t") == [1, 2, 3]
    _sql(spark, "DROP TABLE lo_t")
    assert not CarbonTable.exists(loc)


def test_warehouse_folder_of_another_name_is_refused_in_a_new_session(spark):
    _sql(spark, "CREATE TABLE lo_wh (id BIGINT) STORED AS carbondata")
    _sql(spark, "INSERT INTO lo_wh VALUES (7)")
    wh = catalog.default_location(spark, "default", "lo_wh")
    _forget(spark, "lo_wh")
    with pytest.raises(CarbonTableError, match=r"is the folder of table default\.lo_wh"):
        _sql(spark, f"CREATE TABLE lo_wh_alias (id BIGINT) STORED AS carbondata LOCATION '{wh}'")
    assert api.read_table(wh).column("id").to_pylist() == [7]
    _sql(spark, "DROP TABLE lo_wh")  # found in the warehouse again by name
    assert not CarbonTable.exists(wh)


def test_if_not_exists_location_still_adopts_a_table_no_other_name_has(spark, tmp_path):
    loc = tmp_path / "adopt"
    api.write_table(pa.table({"id": pa.array([4, 5], pa.int64())}), loc)
    _sql(spark, f"CREATE TABLE IF NOT EXISTS lo_adopt (id BIGINT) STORED AS carbondata LOCATION '{loc}'")
    _forget(spark, "lo_adopt")  # a new session re-declares it
    _sql(spark, f"CREATE TABLE IF NOT EXISTS lo_adopt (id BIGINT) STORED AS carbondata LOCATION '{loc}'")
    assert _ids(spark, "lo_adopt") == [4, 5]
    _sql(spark, "DROP TABLE lo_adopt")
    assert not CarbonTable.exists(loc)


def test_drop_never_deletes_a_folder_another_managed_name_has(spark, tmp_path):
    loc = tmp_path / "shared"
    _sql(spark, f"CREATE TABLE lo_own (id BIGINT) STORED AS carbondata LOCATION '{loc}'")
    _sql(spark, "INSERT INTO lo_own VALUES (9)")
    # a second managed name for the folder, as an older version or a hand-edited registry could leave
    catalog.create_view(spark, catalog.register(spark, "default", "lo_twin", str(loc)))
    _sql(spark, "DROP TABLE lo_twin")
    assert CarbonTable.exists(loc) and _ids(spark, "lo_own") == [9]
    _sql(spark, "DROP TABLE lo_own")
    assert not CarbonTable.exists(loc)


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
