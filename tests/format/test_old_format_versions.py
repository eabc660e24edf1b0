"""CarbonData 1.0-1.2 (format V1/V2) files are refused with their version named.

The file is laid out as CarbonData's V2 writer (CarbonFactDataWriterImplV2) lays it out: column data from
byte 0 (no file header), then a Thrift-compact ``FileFooter`` (format/src/main/thrift/carbondata.thrift:
1 version i32, 2 num_rows i64, 3 table_columns, 4 segment_info, 5 blocklet_index_list), then the footer's
offset as an 8-byte big-endian long.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from carbon_ds.errors import CarbonFormatError
from carbon_ds.format.structs import ColumnSchema, DataType, SegmentInfo
from carbon_ds.format.thrift import Struct
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


def old_file(tmp_path: Path, version: int) -> Path:
    col = ColumnSchema(data_type=int(DataType.INT), column_name="a", column_id="a", columnar=True, encoders=[],
                       dimension=False)
    footer = FileFooter(version=version, num_rows=1, table_columns=[col],
                        segment_info=SegmentInfo(num_cols=1, column_cardinalities=[]), blocklet_index_list=[])
    body = b"\x00" * 16  # column pages
    path = tmp_path / f"part-0-0_batchno0-0-1500000000000.v{version}.carbondata"
    path.write_bytes(body + footer.to_bytes() + struct.pack(">q", len(body)))
    return path


@pytest.mark.parametrize("version", [1, 2])
def test_v1_v2_file_names_its_version(tmp_path: Path, version: int):
    path = old_file(tmp_path, version)
    with pytest.raises(CarbonFormatError, match=rf"format V{version} file .*CarbonData 1\.0-1\.2") as info:
        CarbonDataFile(str(path))
    assert str(path) in str(info.value)
