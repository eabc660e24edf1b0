"""Rows read on the driver reach Spark whole.

PySpark 4.1-4.3's ``createDataFrame`` drops every record batch after the first empty chunk of a chunked Arrow
table; a filtered scan over several segments yields such chunks. The oracle is the row set computed by hand
from what was written (and pyarrow's filter over the same rows)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql.types import StructType

import carbon_ds
from carbon_ds.spark.local import arrow_frame

pytestmark = pytest.mark.spark


def _six_appends(tmp_path) -> tuple[str, list[int]]:
    """Six appends sorted by tag, each segment's tag min/max brackets 'hit'; 'hit' only in segments 1 and 4."""
    path = str(tmp_path / "t")
    hits: list[int] = []
    for s in range(6):
        ids = list(range(s * 100, s * 100 + 50))
        tags = ["a"] * 25 + ["z"] * 25
        if s in (1, 4):
            tags[10:20] = ["hit"] * 10
            hits += ids[10:20]
        carbon_ds.write_table(pa.table({"id": ids, "tag": tags}), path, sort_columns="tag")
    return path, sorted(hits)


def test_point_lookup_across_appends_keeps_every_row(spark, tmp_path):
    path, hits = _six_appends(tmp_path)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW local_rows_t USING carbondata OPTIONS (path '{path}')")
    got = sorted(r.id for r in carbon_ds.sql(spark, "SELECT id FROM local_rows_t WHERE tag = 'hit'").collect())
    assert got == hits
    df = carbon_ds.read(spark, path, columns=["id"], filter="tag = 'hit'")
    assert sorted(r.id for r in df.collect()) == hits


def test_chunked_table_with_empty_chunks(spark):
    table = pa.table({"x": pa.chunked_array([[1], [], [2, 3], [], [4]], pa.int32())})
    df = arrow_frame(spark, table, StructType.fromDDL("x int"))
    assert sorted(r.x for r in df.collect()) == [1, 2, 3, 4]


def test_local_read_equals_pyarrow_filter(spark, tmp_path):
    path, _ = _six_appends(tmp_path)
    whole = carbon_ds.read_table(path)
    want = sorted(whole.filter(pc.field("tag") >= "hit").column("id").to_pylist())
    df = carbon_ds.read(spark, path, columns=["id"], filter="tag >= 'hit'")
    assert sorted(r.id for r in df.collect()) == want


def test_a_table_of_no_chunk_becomes_an_empty_frame(spark, tmp_path):
    # a filter that keeps no row can leave columns of no chunk at all; PySpark's timestamp handling of a
    # nested column cannot build those (ArrowInvalid), so the frame is made from one empty chunk
    schema = pa.schema([("id", pa.int64()), ("arr", pa.list_(pa.int32())), ("ts", pa.timestamp("us", tz="UTC"))])
    df = arrow_frame(spark, pa.Table.from_batches([], schema), StructType.fromDDL("id bigint, arr array<int>, ts timestamp"))
    assert df.collect() == [] and df.columns == ["id", "arr", "ts"]
    path = str(tmp_path / "nested")
    carbon_ds.write_table(pa.table({"id": [1, 2], "arr": pa.array([[1], None], pa.list_(pa.int32())),
                                    "ts": pa.array([0, 1], pa.timestamp("us", tz="UTC"))}), path)
    assert carbon_ds.read(spark, path, columns=["id", "arr", "ts"], filter="id > 5").collect() == []
