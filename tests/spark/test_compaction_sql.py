"""ALTER TABLE ... COMPACT through carbon_ds.sql: the merged segment in SHOW SEGMENTS, rows unchanged."""

from __future__ import annotations

import carbon_ds
from carbon_ds.table import CarbonTable


def test_sql_compact_minor_major_custom(spark, tmp_path):
    def sql(text):
        return carbon_ds.sql(spark, text)

    sql("DROP TABLE IF EXISTS compact_t")
    sql(f"CREATE TABLE compact_t (id BIGINT, name STRING) STORED AS carbondata "
        f"TBLPROPERTIES ('sort_columns'='name') LOCATION '{tmp_path / 'ct'}'")
    for i in range(6):
        sql(f"INSERT INTO compact_t VALUES ({i}, 'n{5 - i}'), ({i + 10}, 'm{i}')")
    sql("DELETE FROM compact_t WHERE id = 3")
    expected = sorted(r["id"] for r in sql("SELECT id FROM compact_t").collect())
    assert len(expected) == 11

    out = sql("ALTER TABLE compact_t COMPACT 'MINOR'").collect()
    assert [(r["Merged Segment"], r["Source Segments"]) for r in out] == [("0.1", "0,1,2,3")]
    segs = {r["ID"]: r["Status"] for r in sql("SHOW SEGMENTS FOR TABLE compact_t").collect()}
    assert segs == {"0.1": "Success", "0": "Compacted", "1": "Compacted", "2": "Compacted", "3": "Compacted",
                    "4": "Success", "5": "Success"}
    sql("ALTER TABLE compact_t COMPACT 'CUSTOM' WHERE SEGMENT.ID IN (4, 5)")
    sql("ALTER TABLE compact_t COMPACT 'MAJOR'")
    assert sorted(r["id"] for r in sql("SELECT id FROM compact_t").collect()) == expected
    t = CarbonTable.open(str(tmp_path / "ct"))
    assert [(e.name, e.status, e.merged_load_name) for e in t.load_details() if "." in e.name] == [
        ("0.1", "Compacted", "0.2"), ("4.1", "Compacted", "0.2"), ("0.2", "Success", None)]
    sql("DROP TABLE compact_t")
