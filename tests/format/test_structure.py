"""Our files have the shape of real CarbonData files, and their offsets and lengths add up."""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from carbon_ds.format.index import read_index
from carbon_ds.format.thrift.codec import Struct
from carbon_ds.format.thrift.structs import DataChunk3, FileFooter3, FileHeader
from carbon_ds.writers import WriterOptions, write_files

REAL = Path(__file__).resolve().parents[3] / "shared/compat/carbondata-real"


def present(obj: Struct) -> set[str]:
    return {name for name, _t, _r in obj.FIELDS.values() if getattr(obj, name) is not None}


def walk(path: Path) -> dict:
    """Every struct of a data file with its offsets checked; returns field sets for comparison."""
    data = path.read_bytes()
    header, hlen = FileHeader.from_bytes(data)
    at = struct.unpack(">q", data[-8:])[0]
    footer, flen = FileFooter3.from_bytes(data[at:-8])
    assert at + flen + 8 == len(data), "footer runs to the 8-byte offset at the end"
    shapes: dict[str, set[str]] = {"header": present(header), "footer": present(footer), "chunk3": set(),
                                   "chunk2": set(), "info": set(), "index": set()}
    expected = hlen
    for info, idx in zip(footer.blocklet_info_list3, footer.blocklet_index_list, strict=True):
        shapes["info"] |= present(info)
        shapes["index"] |= present(idx) | present(idx.min_max_index)
        assert len(idx.min_max_index.min_values) == len(header.column_schema)
        assert info.number_number_of_pages >= 1
        for off, ln in zip(info.column_data_chunks_offsets, info.column_data_chunks_length, strict=True):
            assert off == expected, "column chunks are contiguous, starting right after the header"
            chunk, used = DataChunk3.from_bytes(data[off : off + ln])
            assert used == ln
            shapes["chunk3"] |= present(chunk)
            pos = 0
            for page, poff, plen in zip(chunk.data_chunk_list, chunk.page_offset, chunk.page_length, strict=True):
                shapes["chunk2"] |= present(page)
                assert poff == pos
                assert plen == page.data_page_length + (page.rle_page_length or 0) + (page.rowid_page_length or 0)
                pos += plen
            column = header.column_schema[info.column_data_chunks_offsets.index(off)]
            if column.schemaOrdinal != -1:  # complex children hold one value per element, not per row
                assert sum(p.numberOfRowsInpage for p in chunk.data_chunk_list) == info.num_rows
            expected = off + ln + pos
        assert info.measure_offsets == expected
    assert expected == at, "the footer follows the last blocklet"
    return shapes


def test_real_file_is_self_consistent():
    if not REAL.is_dir():
        pytest.skip("real corpus missing")
    walk(next((REAL / "sdk-1.6-all-types").glob("*.carbondata")))
    walk(next((REAL / "sdk-2.0-arrays").glob("*.carbondata")))


@pytest.fixture
def ours(tmp_path) -> Path:
    n = 10
    t = pa.table({
        "stringfield": [f"robot{i}" for i in range(n)],
        "shortfield": pa.array(range(n), pa.int16()),
        "intfield": pa.array(range(n), pa.int32()),
        "longfield": pa.array(range(n), pa.int64()),
        "doublefield": [i / 2 for i in range(n)],
        "boolfield": [True] * n,
        "datefield": pa.array([dt.date(2019, 3, 2)] * n),
        "timefield": pa.array([dt.datetime(2019, 2, 11, tzinfo=dt.UTC)] * n, pa.timestamp("us", tz="UTC")),
        "decimalfield": pa.array([Decimal("12.35")] * n, pa.decimal128(8, 2)),
        "varcharfield": ["varchar"] * n,
        "arrayfield": [["Hello", "World", "From", "Carbon"]] * n,
    })
    write_files(t, str(tmp_path), options=WriterOptions(long_string_columns=["varcharfield"]))
    return tmp_path


def test_our_file_has_the_real_shape(ours):
    if not REAL.is_dir():
        pytest.skip("real corpus missing")
    mine = walk(next(ours.glob("*.carbondata")))
    real = walk(next((REAL / "sdk-1.6-all-types").glob("*.carbondata")))
    real20 = walk(next((REAL / "sdk-2.0-arrays").glob("*.carbondata")))
    # differences by design: we name the compressor in the header (2.x readers use it when present) and
    # list rows per page like the 2.0 writer does
    assert mine["header"] == real["header"] | {"compressor_name"}
    assert mine["footer"] == real["footer"] == real20["footer"]
    assert mine["info"] == real["info"] | {"row_count_in_page"} == real20["info"]
    assert mine["index"] == real["index"]
    assert mine["chunk3"] == real["chunk3"]
    # the real varchar page is RLE'd (all values equal); we write no RLE pages
    assert mine["chunk2"] == real["chunk2"] - {"rle_page_length"}


def test_index_entries_match_footers(ours):
    idx = next(ours.glob("*.carbonindex"))
    header, entries = read_index(str(idx))
    data_file = next(ours.glob("*.carbondata"))
    data = data_file.read_bytes()
    fh, _ = FileHeader.from_bytes(data)
    at = struct.unpack(">q", data[-8:])[0]
    footer, _ = FileFooter3.from_bytes(data[at:-8])
    assert present(header) == {"version", "table_columns", "segment_info", "bucket_id", "schema_time_stamp", "is_sort"}
    assert header.table_columns == fh.column_schema
    assert [e.blocklet_info for e in entries] == footer.blocklet_info_list3
    assert all(present(e) == {"num_rows", "file_name", "offset", "block_index", "blocklet_info", "file_size"}
               for e in entries)
    assert {e.file_size for e in entries} == {len(data)}
