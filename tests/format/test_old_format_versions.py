"""CarbonData 0.x-1.2 (format V1/V2) files are refused with their version named, by every way in.

The file is laid out as CarbonData's V1/V2 writers lay it out (CarbonFactDataWriterImplV1/V2, CarbonFooterWriter):
column data from byte 0 (no file header), then a Thrift-compact ``FileFooter`` (format/src/main/thrift/
carbondata.thrift: 1 version i32, 2 num_rows i64, 3 table_columns, 4 segment_info, 5 blocklet_index_list;
6 blocklet_info_list (V1) / 7 blocklet_info_list2 (V2) optional and left out here), then the footer's offset
(the file's size before the footer: 0 for a file of no rows) as an 8-byte big-endian long. 0.x writers set
version 0 or 1 (ColumnarFormatVersion.valueOf reads 0 as V1). Their ``.carbonindex`` files carry the format
number in ``IndexHeader.version`` (CarbonMetadataUtil.getIndexHeader).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow as pa
import pytest

import carbon_ds
from carbon_ds.cli.inspect_files import describe_data_file, describe_index_file
from carbon_ds.errors import CarbonFormatError
from carbon_ds.format.index import index_bytes, read_index
from carbon_ds.format.thrift.codec import Struct
from carbon_ds.format.thrift.structs import ColumnSchema, DataType, SegmentInfo
from carbon_ds.readers.carbon_file import CarbonDataFile


class FileFooter(Struct):
    """carbondata.thrift's V1/V2 footer (fields 6-8 optional and left out)."""

    FIELDS = {
        1: ("version", "i32", True),
        2: ("num_rows", "i64", True),
        3: ("table_columns", ("list", ColumnSchema), True),
        4: ("segment_info", SegmentInfo, True),
        5: ("blocklet_index_list", ("list", "i32"), True),
    }


def old_file(tmp_path: Path, version: int, rows: int = 1) -> Path:
    col = ColumnSchema(data_type=int(DataType.INT), column_name="a", column_id="a", columnar=True, encoders=[],
                       dimension=False)
    footer = FileFooter(version=version, num_rows=rows, table_columns=[col],
                        segment_info=SegmentInfo(num_cols=1, column_cardinalities=[]), blocklet_index_list=[])
    body = b"\x00" * 16 * rows  # column pages
    path = tmp_path / f"part-0-0_batchno0-0-1500000000000.v{version}.carbondata"
    path.write_bytes(body + footer.to_bytes() + struct.pack(">q", len(body)))
    return path


def named(version: int, what: str = "file") -> str:
    return rf"format V{max(version, 1)} {what} \(version field {version}, .*CarbonData 0\.x-1\.2\).*CARBONDATA-3650"


@pytest.mark.parametrize("version", [0, 1, 2])
def test_v1_v2_file_names_its_version(tmp_path: Path, version: int):
    path = old_file(tmp_path, version)
    with pytest.raises(CarbonFormatError, match=named(version)) as info:
        CarbonDataFile(str(path))
    assert str(path) in str(info.value)


@pytest.mark.parametrize("version", [1, 2])
def test_a_file_of_no_rows_names_its_version(tmp_path: Path, version: int):
    """Its footer starts at byte 0, which no V3 file's does."""
    path = old_file(tmp_path, version, rows=0)
    with pytest.raises(CarbonFormatError, match=named(version)):
        CarbonDataFile(str(path))


@pytest.mark.parametrize("version", [1, 2])
def test_inspect_and_folder_reads_name_the_version(tmp_path: Path, version: int):
    path = old_file(tmp_path, version)
    with pytest.raises(CarbonFormatError, match=named(version)):
        list(describe_data_file(str(path)))
    with pytest.raises(CarbonFormatError, match=named(version)):
        carbon_ds.read_table(str(tmp_path))


def old_table(tmp_path: Path, version: int) -> tuple[Path, Path]:
    """A table whose one segment holds a V1/V2 data file and index file (the index's entries as a 1.0 writer
    left them: no blocklet_info)."""
    root = tmp_path / "t"
    carbon_ds.write_table(pa.table({"a": pa.array([1], pa.int32())}), str(root))
    seg = root / "Fact" / "Part0" / "Segment_0"
    (data,) = seg.glob("*.carbondata")
    (index,) = seg.glob("*.carbonindex")
    data.write_bytes(old_file(tmp_path, version).read_bytes())
    header, entries = read_index(str(index))
    header.version = version
    for e in entries:
        e.blocklet_info = None
    index.write_bytes(index_bytes(header, entries))
    return root, index


@pytest.mark.parametrize("version", [1, 2])
def test_tables_of_old_files_name_the_version_on_every_read(tmp_path: Path, version: int):
    root, index = old_table(tmp_path, version)
    for read in (lambda: carbon_ds.read_table(str(root)),
                 lambda: carbon_ds.read_table(str(root), filter="a = 1"),
                 lambda: carbon_ds.scan(str(root)).count()):  # index row counts alone: no data file opened
        with pytest.raises(CarbonFormatError, match=rf"format V{version} (index )?file"):
            read()
    with pytest.raises(CarbonFormatError, match=named(version, "index file")):
        read_index(str(index))
    with pytest.raises(CarbonFormatError, match=named(version, "index file")):
        list(describe_index_file(str(index)))
