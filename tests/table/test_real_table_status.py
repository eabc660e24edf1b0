"""Segment lists as CarbonData 2.3 keeps them, built on the real CarbonData 1.1 table of the corpus.

* Versioned table status (CarbonData 2.3.1+, carbon.enable.multi.version.table.status): the live list is
  ``Metadata/tablestatus_<v>`` where ``v`` is the table property ``latestversion``
  (CarbonTable.getTableStatusVersion, CarbonTablePath.getTableStatusFilePath(tablePath, version)); the plain
  ``tablestatus`` left beside it is stale.

The table's 10 rows are CarbonData's examples/spark/src/main/resources/data.csv (see
tests/format/test_global_dictionary.py); their ids are 1..10.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import carbon_ds
from carbon_ds.cli import main
from carbon_ds.cli.inspect_files import _columns
from carbon_ds.errors import CarbonFormatError, CarbonTableError
from carbon_ds.format.thrift.structs import BucketingInfo, ColumnSchema, DataType, Encoding
from carbon_ds.fs import Storage
from carbon_ds.table.meta.schema import schema_file

SOURCE = Path(__file__).resolve().parents[3] / "shared/compat/carbondata-real/table-1.1-global-dictionary"
if not SOURCE.is_dir():
    SOURCE = Path("/work/shared/compat/carbondata-real/table-1.1-global-dictionary")
if not SOURCE.is_dir():
    pytest.skip(f"CarbonData 1.1 table not found at {SOURCE}", allow_module_level=True)
VERSION = "1700000000000"


@pytest.fixture
def table(tmp_path: Path) -> Path:
    root = tmp_path / "t"
    shutil.copytree(SOURCE, root)
    return root


def status(root: Path, name: str = "tablestatus") -> list[dict]:
    return json.loads((root / "Metadata" / name).read_text())


def set_property(root: Path, key: str, value: str) -> None:
    storage = Storage.for_path(str(root))[0]
    path = str(root / "Metadata" / "schema")
    info = schema_file.read(storage, path)
    props = dict(info.fact_table.tableProperties or {})
    props[key] = value
    info.fact_table.tableProperties = props
    schema_file.write(storage, path, info)


def versioned(root: Path) -> None:
    """The live list in tablestatus_<VERSION>; the plain file says segment 0 was deleted (stale)."""
    live = status(root)
    (root / "Metadata" / f"tablestatus_{VERSION}").write_text(json.dumps(live))
    stale = [dict(live[0], loadStatus="Marked for Delete")]
    (root / "Metadata" / "tablestatus").write_text(json.dumps(stale))
    set_property(root, "latestversion", VERSION)


def test_versioned_status_is_the_live_list(table: Path):
    versioned(table)
    got = carbon_ds.read_table(str(table), columns=["id"])
    assert sorted(got.column("id").to_pylist()) == list(range(1, 11))
    assert [s.status for s in carbon_ds.CarbonTable.open(str(table)).segments()] == ["Success"]


def test_without_the_property_the_plain_file_counts(table: Path):
    versioned(table)
    set_property(table, "latestversion", "")
    assert carbon_ds.read_table(str(table), columns=["id"]).num_rows == 0


def test_writes_to_a_versioned_table_refuse_naming_the_property(table: Path):
    versioned(table)
    before = sorted(p.name for p in (table / "Metadata").iterdir())
    t = carbon_ds.CarbonTable.open(str(table))
    with pytest.raises(CarbonTableError, match="latestversion"):
        t.delete_segments(["0"])
    with pytest.raises(CarbonTableError, match="latestversion"):
        carbon_ds.write_table(carbon_ds.read_table(str(table)), str(table), mode="append")
    assert sorted(p.name for p in (table / "Metadata").iterdir()) == before
    assert status(table, f"tablestatus_{VERSION}")[0]["loadStatus"] == "Success"


# ------------------------------------------------------------------ file validity by name timestamp
# CarbonUtil.isInvalidTableBlock, for a table with a table update status (CarbonTableInputFormat's isIUDTable):
# fact = loadStartTime; start/end = updateDeltaStart/EndTimestamp; a data file whose name timestamp
# (CarbonTablePath.DataFileUtil.getTimeStampFromFileName: after the last '-') lies in (fact, start) or past
# end is skipped.
FACT = 1492585716607  # the timestamp in the real data file's name (part-0-0_batchno0-0-1492585716607)
BLOCK = "part-0-0_batchno0-0-1492585716607"
UPDATE_START = FACT + 60_000
UPDATE_END = FACT + 120_000


def updated(root: Path) -> None:
    """An UPDATE committed at UPDATE_START..UPDATE_END deleted the row of id 9 (file row 0, page 0 of
    blocklet 0) through a delete delta (CarbonUpdateUtil / SegmentUpdateDetails fields)."""
    seg = root / "Fact/Part0/Segment_0"
    delta = {"blockletDetailsMap": {"0_0": {"id": "0", "pageId": 0, "deletedRows": [0]}}, "blockName": BLOCK}
    (seg / f"{BLOCK}-{UPDATE_END}.deletedelta").write_text(json.dumps(delta))
    name = f"tableupdatestatus-{UPDATE_END}"
    (root / "Metadata" / name).write_text(json.dumps([{
        "segmentName": "0", "blockName": BLOCK, "segmentStatus": "Success",
        "deleteDeltaStartTimestamp": str(UPDATE_END), "deleteDeltaEndTimestamp": str(UPDATE_END),
        "actualBlockName": BLOCK + ".carbondata", "deletedRowsInBlock": "1"}]))
    entries = status(root)
    entries[0].update(loadStartTime=str(FACT), updateDeltaStartTimestamp=str(UPDATE_START),
                      updateDeltaEndTimestamp=str(UPDATE_END), updateStatusFileName=name)
    (root / "Metadata" / "tablestatus").write_text(json.dumps(entries))


def leftover(root: Path, stamp: int) -> None:
    """A data file an aborted UPDATE left in the segment folder (a copy of the real file: 10 more rows)."""
    seg = root / "Fact/Part0/Segment_0"
    shutil.copy(seg / f"{BLOCK}.carbondata", seg / f"part-0-1_batchno0-0-{stamp}.carbondata")


def ids(root: Path) -> list[int]:
    return sorted(carbon_ds.read_table(str(root), columns=["id"]).column("id").to_pylist())


def test_updated_table_reads_its_delete_delta(table: Path):
    updated(table)
    assert ids(table) == list(range(1, 9)) + [10]


@pytest.mark.parametrize("stamp", [UPDATE_END + 1, FACT + 1])  # past end; between fact and start
def test_aborted_update_leftover_is_skipped(table: Path, stamp: int):
    updated(table)
    leftover(table, stamp)
    assert ids(table) == list(range(1, 9)) + [10]


def test_file_of_the_committed_update_counts(table: Path):
    # a file stamped within [start, end] is the committed UPDATE's own output
    updated(table)
    leftover(table, UPDATE_START)
    assert ids(table) == sorted(list(range(1, 9)) + [10] + list(range(1, 11)))


@pytest.mark.parametrize("start, end", [(UPDATE_START, 0), (UPDATE_START, FACT - 1), (UPDATE_END, UPDATE_START)])
def test_an_update_range_carbondata_cannot_write_is_refused(table: Path, start: int, end: int):
    # read by isInvalidTableBlock, an end before the load (or a range ending before it starts) would skip
    # every data file of the segment: 0 rows from a damaged number, so it is refused naming the file
    updated(table)
    entries = status(table)
    entries[0].update(updateDeltaStartTimestamp=str(start), updateDeltaEndTimestamp=str(end))
    (table / "Metadata" / "tablestatus").write_text(json.dumps(entries))
    with pytest.raises(CarbonFormatError, match=r"tablestatus entry '0' has updateDeltaStartTimestamp .* expected an "
                       r"update range .*Metadata/tablestatus"):
        ids(table)


def test_without_update_status_names_are_not_checked(table: Path):
    # no update status file: CarbonTableInputFormat does not call isInvalidTableBlock at all
    leftover(table, FACT + 1)
    assert ids(table) == sorted(list(range(1, 11)) * 2)


def test_valid_entry_with_merged_load_name_reads_the_merged_segment(table: Path):
    # SegmentStatusManager.getValidAndInvalidSegments: a valid entry naming mergedLoadName "0.1" stands for
    # segment 0.1 (folder Segment_0.1); Segment_0 is not read
    (table / "Fact/Part0/Segment_0").rename(table / "Fact/Part0/Segment_0.1")
    entries = status(table)
    entries[0]["mergedLoadName"] = "0.1"
    (table / "Metadata" / "tablestatus").write_text(json.dumps(entries))
    assert ids(table) == list(range(1, 11))
    assert {f.segment_id for f in carbon_ds.CarbonTable.open(str(table)).files()} == {"0.1"}


# ------------------------------------------------------------------ tables with indexes, buckets, layouts
def _table_id(root: Path) -> str:
    return schema_file.read(Storage.for_path(str(root))[0], str(root / "Metadata" / "schema")).fact_table.table_id


def _data_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "Fact").rglob("*.carbondata"))


def test_bloom_indexed_table_reads_and_refuses_writes(table: Path):
    # CarbonData 2.x keeps index metadata in the table property named by the table id (CarbonTable
    # .deserializeIndexMetadata) and sets indexexists=true (CarbonIndexUtil.isIndexExists)
    meta = json.dumps({"indexProviderMap": {"bloomfilter": {"idx_name": {"index_columns": "name"}}},
                       "isIndexTable": False})
    set_property(table, "indexexists", "true")
    set_property(table, _table_id(table), meta)
    assert ids(table) == list(range(1, 11))
    before = _data_files(table)
    data = carbon_ds.read_table(str(table))
    with pytest.raises(CarbonTableError, match="indexexists='true'.*bloom"):
        carbon_ds.write_table(data, str(table), mode="append")
    outside = table.parent / "outside"
    shutil.copytree(table / "Fact/Part0/Segment_0", outside)
    with pytest.raises(CarbonTableError, match="index metadata under the table id"):
        carbon_ds.CarbonTable.open(str(table)).add_segment(str(outside))
    assert _data_files(table) == before and [e["loadName"] for e in status(table)] == ["0"]


@pytest.mark.parametrize("key,value", [("sort_scope", "GLOBAL_SORT"), ("spatial_index", "mygeohash"),
                                       ("indextableexists", "true"), ("mv_related_tables", "default.t")])
def test_features_carbon_ds_cannot_keep_refuse_by_name(table: Path, key: str, value: str):
    set_property(table, key, value)
    data = carbon_ds.read_table(str(table))
    with pytest.raises(CarbonTableError, match=f"{key}={value!r}"):
        carbon_ds.write_table(data, str(table), mode="append")
    assert [e["loadName"] for e in status(table)] == ["0"]
    # dropping a segment writes no data: CarbonData's own DELETE SEGMENT leaves indexes and buckets valid
    assert carbon_ds.CarbonTable.open(str(table)).delete_segments(["0"]) is not None
    assert status(table)[0]["loadStatus"] == "Marked for Delete"


def test_bucketed_table_reads_every_bucket_file_and_refuses_writes(table: Path):
    # BucketingInfo (schema.thrift) with 2 buckets on `country`; the data file name carries its bucket
    # number after batchno (CarbonTablePath.getCarbonDataFileName: part-0-<task>_batchno0-<bucket>-<ts>)
    storage = Storage.for_path(str(table))[0]
    path = str(table / "Metadata" / "schema")
    info = schema_file.read(storage, path)
    country = [c for c in info.fact_table.table_columns if c.column_name == "country"]
    info.fact_table.bucketingInfo = BucketingInfo(table_columns=country, number_of_buckets=2)
    schema_file.write(storage, path, info)
    assert ids(table) == list(range(1, 11))
    with pytest.raises(CarbonTableError, match="bucketingInfo with 2 buckets"):
        carbon_ds.write_table(carbon_ds.read_table(str(table)), str(table), mode="append")


# ------------------------------------------------------------------ carbon-ds inspect
def test_inspect_shows_versioned_status_streaming_and_refusals(table: Path, capsys):
    versioned(table)
    set_property(table, "sort_scope", "global_sort")
    entries = status(table, f"tablestatus_{VERSION}")
    entries.append({"loadStatus": "Streaming Finish", "loadName": "1", "visibility": "true"})
    (table / "Metadata" / f"tablestatus_{VERSION}").write_text(json.dumps(entries))
    assert main(["inspect", str(table)]) == 0
    out = capsys.readouterr().out
    assert f"tablestatus_{VERSION} (live: table property latestversion in Metadata/schema)" in out
    assert f"versioned table status: version {VERSION}; 0 other version file(s)" in out
    assert "writes refused: sort_scope='global_sort'" in out
    assert "|1 |Streaming Finish|" in out


def test_inspect_names_direct_dictionary_timestamps(tmp_path: Path, capsys):
    col = ColumnSchema(data_type=int(DataType.TIMESTAMP), column_name="ts", column_id="ts", columnar=True,
                       encoders=[Encoding.DICTIONARY, Encoding.DIRECT_DICTIONARY], dimension=True)
    (line,) = _columns([col])
    assert "encoders=DICTIONARY,DIRECT_DICTIONARY" in line and "(key - 2) * 1000 + 0 ms" in line


@pytest.mark.parametrize("column,why", [("country", "global-dictionary"), (None, "direct-dictionary TIMESTAMP")])
def test_dictionary_columns_refuse_data_writes(table: Path, column, why):
    # the 1.1 table's strings are global-dictionary columns (DICTIONARY without DIRECT_DICTIONARY); a table
    # created through CarbonData's Spark SQL has TIMESTAMP columns with DICTIONARY + DIRECT_DICTIONARY
    storage = Storage.for_path(str(table))[0]
    path = str(table / "Metadata" / "schema")
    info = schema_file.read(storage, path)
    if column is None:
        date = next(c for c in info.fact_table.table_columns if c.column_name == "date")
        date.data_type = int(DataType.TIMESTAMP)
        for c in info.fact_table.table_columns:  # only the timestamp is left dictionary-encoded
            if c is not date:
                c.encoders = [e for e in c.encoders or [] if e != Encoding.DICTIONARY]
        schema_file.write(storage, path, info)
        column = "date"
    data = carbon_ds.read_table(str(table))
    with pytest.raises(CarbonTableError, match=rf"column '{column}' is a? ?{why}"):
        carbon_ds.write_table(data, str(table), mode="append")
    assert [e["loadName"] for e in status(table)] == ["0"]


def test_flat_folder_table_reads_files_in_the_table_root(table: Path):
    # FLAT_FOLDER=true (CarbonCommonConstants.FLAT_FOLDER): data and index files sit in the table folder and
    # the segment file (SegmentFileStore.SegmentFile) maps location "/" (relative) to the index files
    seg = table / "Fact/Part0/Segment_0"
    for f in seg.iterdir():
        f.rename(table / f.name)
    shutil.rmtree(table / "Fact")
    index = "0_batchno0-0-1492585716607.carbonindex"
    segment_file = f"0_{FACT}.segment"
    (table / "Metadata" / "segments").mkdir()
    (table / "Metadata" / "segments" / segment_file).write_text(json.dumps(
        {"locationMap": {"/": {"files": [index], "partitions": [], "status": "Success", "isRelative": True}}}))
    entries = status(table)
    entries[0]["segmentFile"] = segment_file
    (table / "Metadata" / "tablestatus").write_text(json.dumps(entries))
    set_property(table, "flat_folder", "true")
    assert ids(table) == list(range(1, 11))
