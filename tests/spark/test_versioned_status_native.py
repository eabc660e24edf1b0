"""The Spark extension on tables whose segment list is versioned (CarbonData 2.3.1+ with
carbon.enable.multi.version.table.status: ``Metadata/tablestatus_<epoch ms>``, no plain file): it picks the
live file by the rule carbon_ds.table.meta.status.status_versions follows (jvm/src LiveStatus), so a mixed table's
external segments are Spark's own scans and its plans are kept, as for a table of plain status.

Oracles: Spark's own Parquet reader over the rows written, the same table with a plain ``tablestatus``, and
the Python side's choice of the live file (``TableHandle.live_status``)."""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from spark_confs import confs

import carbon_ds
from carbon_ds.errors import CarbonStatusVersionWarning
from carbon_ds.fs import Storage
from carbon_ds.spark.bridge.extension import extension_active
from carbon_ds.spark.local import CONF_LOCAL_BYTES
from carbon_ds.table import CarbonTable
from carbon_ds.table.meta.schema import schema_file
from carbon_ds.table.meta.status import status_versions

OLD, NEW = "1700000000000", "1700000000500"


def _rows(lo: int, hi: int) -> pa.Table:
    ids = list(range(lo, hi))
    return pa.table({"id": pa.array(ids, pa.int64()), "s": pa.array(["abc"[i % 3] for i in ids], pa.string())})


def _extension(spark) -> None:
    if not extension_active(spark):
        if os.environ.get("CI"):
            pytest.fail("the Spark extension jar was not built (scripts/setup.sh runs scripts/build-jvm.sh)")
        pytest.skip("the Spark extension jar is not built (needs a JDK: scripts/build-jvm.sh)")


def _versioned(path: Path) -> None:
    """Moves the table's segment list to the newest of two version files (the older lists no segment)."""
    meta = path / "Metadata"
    (meta / f"tablestatus_{OLD}").write_text("[]")
    os.rename(meta / "tablestatus", meta / f"tablestatus_{NEW}")


def _mixed(root: Path, name: str, parquet: Path) -> Path:
    """Carbondata rows 0-99 and the Parquet folder ``parquet`` (rows 100-199) added as a segment."""
    path = root / name
    carbon_ds.write_table(_rows(0, 100), str(path))
    CarbonTable.open(str(path)).add_segment(str(parquet), format="parquet")
    return path


def _scans(df) -> list[str]:
    plan = df._jdf.queryExecution().executedPlan().toString()
    return [line[line.index("FileScan"):].split()[1] for line in plan.splitlines() if "FileScan" in line]


def _jvm_live(spark, path: Path) -> str:
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    return spark._jvm.carbonds.spark.LiveStatus.path(conf, str(path))


def _python_live(path: Path) -> str:
    return CarbonTable.open(str(path)).live_status().path


def test_the_jvm_and_python_pick_the_same_live_status_file(spark, tmp_path):
    """Plain file; versions only (the newest); plain beside versions (the plain one); a version the schema's
    latestversion names (the older one, though a newer exists); a named version without its file."""
    _extension(spark)
    path = tmp_path / "t"
    carbon_ds.write_table(_rows(0, 10), str(path))
    meta = path / "Metadata"
    seen = []

    def agree(expected: str) -> None:
        python, jvm = _python_live(path), _jvm_live(spark, path)
        assert jvm == python == str(meta / expected)
        seen.append(expected)

    agree("tablestatus")
    _versioned(path)
    (meta / "tablestatus.history").write_text("[]")  # not a version
    (meta / "tablestatus_12x").write_text("[]")  # nor this
    agree(f"tablestatus_{NEW}")
    shutil.copy(meta / f"tablestatus_{NEW}", meta / "tablestatus")
    agree("tablestatus")
    storage = Storage.for_path(str(path))[0]
    info = schema_file.read(storage, str(meta / "schema"))
    for named in (OLD, "1699"):
        info.fact_table.tableProperties = {**(info.fact_table.tableProperties or {}),
                                           status_versions.VERSION_PROPERTY: named}
        schema_file.write(storage, str(meta / "schema"), info)
        agree(f"tablestatus_{named}")
    assert seen == ["tablestatus", f"tablestatus_{NEW}", "tablestatus", f"tablestatus_{OLD}", "tablestatus_1699"]


def test_a_column_named_like_the_property_names_no_version(spark, tmp_path):
    """The JVM finds latestversion in the schema's bytes: a column of that name is not the property."""
    _extension(spark)
    path = tmp_path / "t"
    carbon_ds.write_table(pa.table({status_versions.VERSION_PROPERTY: pa.array([1, 2], pa.int64())}), str(path))
    _versioned(path)
    assert _jvm_live(spark, path) == _python_live(path) == str(path / "Metadata" / f"tablestatus_{NEW}")


@pytest.fixture
def tables(spark, tmp_path):
    """(versioned mixed table, its plain-status twin, Parquet oracle path), as views v_mixed, p_mixed, o_mixed."""
    _extension(spark)
    (tmp_path / "pq").mkdir()
    pq.write_table(_rows(100, 200), tmp_path / "pq" / "a.parquet")
    versioned = _mixed(tmp_path, "versioned", tmp_path / "pq")
    _versioned(versioned)
    plain = _mixed(tmp_path, "plain", tmp_path / "pq")
    pq.write_table(_rows(0, 200), tmp_path / "oracle.parquet")
    spark.read.format("carbondata").load(str(versioned)).createOrReplaceTempView("v_mixed")
    spark.read.format("carbondata").load(str(plain)).createOrReplaceTempView("p_mixed")
    spark.read.parquet(str(tmp_path / "oracle.parquet")).createOrReplaceTempView("o_mixed")
    try:
        with confs(spark, **{CONF_LOCAL_BYTES: "0"}):  # no driver-side local relations: Spark's scans run
            yield versioned, plain, tmp_path / "oracle.parquet"
    finally:
        for view in ("v_mixed", "p_mixed", "o_mixed"):
            spark.catalog.dropTempView(view)


QUERIES = [
    "SELECT id, s FROM {t}",
    "SELECT id FROM {t} WHERE id BETWEEN 90 AND 120 AND s = 'b'",
    "SELECT s, count(*), max(id) FROM {t} GROUP BY s",
]


def test_external_segments_of_a_versioned_table_are_spark_scans(spark, tables):
    for query in QUERIES:
        oracle = sorted(tuple(r) for r in spark.sql(query.format(t="o_mixed")).collect())
        assert oracle
        for view in ("v_mixed", "p_mixed"):
            df = spark.sql(query.format(t=view))
            assert set(_scans(df)) == {"parquet"}, (view, query)  # Spark's own scan of the added folder
            assert sorted(tuple(r) for r in df.collect()) == oracle, (view, query)
        assert sorted(tuple(r) for r in carbon_ds.sql(spark, query.format(t="v_mixed")).collect()) == oracle


def test_a_new_versioned_commit_is_seen_by_the_next_query(spark, tables, tmp_path):
    """The kept union plan and the kept read plan answer while the live file is unchanged, and never after
    a commit wrote a newer version."""
    versioned, _plain, _oracle = tables
    hits = spark._jvm.carbonds.spark.PlanCache.hits
    read_hits = spark._jvm.carbonds.spark.PlanCache.readHits

    def ids() -> list[int]:
        return sorted(r.id for r in spark.sql("SELECT id FROM v_mixed WHERE id >= 0").collect())

    assert ids() == list(range(200))
    before, reads_before = hits(), read_hits()
    assert ids() == list(range(200))
    assert hits() == before + 1 and read_hits() == reads_before + 1  # unchanged: both kept plans answered
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CarbonStatusVersionWarning)  # the hint to point the metastore at it
        carbon_ds.write_table(_rows(200, 210), str(versioned), mode="append")
    assert not (versioned / "Metadata" / "tablestatus").exists()  # still versioned: a newer version file
    assert ids() == list(range(210))
    (tmp_path / "pq2").mkdir()
    pq.write_table(_rows(300, 305), tmp_path / "pq2" / "a.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CarbonStatusVersionWarning)
        CarbonTable.open(str(versioned)).add_segment(str(tmp_path / "pq2"), format="parquet")
    before = hits()
    assert ids() == [*range(210), *range(300, 305)]
    assert hits() == before  # planned afresh
    assert _scans(spark.sql("SELECT id FROM v_mixed")) == ["parquet", "parquet"]
