"""Null arrays, maps and structs in CarbonData's shape (carbon_ds/format/pages/complex_nulls.py), and files of older
carbon-ds versions that kept them as null bits in the parent page.

The shape is CarbonData's load (``ArrayDataType.writeByteArray``: a null array is one null element;
``StructDataType.writeByteArray``: every field of a null struct is null); CarbonData's readers cannot decode a
parent page with null bits (tests/oracle reads these files with CarbonData itself).
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.format.pages import encode as E
from carbon_ds.format.pages.complex_nulls import COMPLEX_NULLS_KEY
from carbon_ds.format.pages.compress import decompress
from carbon_ds.format.thrift.structs import DataChunk3, DataType, FileFooter3, FileHeader
from carbon_ds.readers.carbon_file import read_folder
from carbon_ds.writers import columns, write_files

ST = pa.struct([("a", pa.string()), ("b", pa.int32())])
TABLE = pa.table({
    "arr": pa.array([["x"], None, [], ["y", None], None], pa.list_(pa.string())),
    "st": pa.array([{"a": "p", "b": None}, None, {"a": None, "b": 2}, None, {"a": "r", "b": 3}], ST),
    "mp": pa.array([[("k", 1)], None, [], [("k1", None), ("k2", 5)], None], pa.map_(pa.string(), pa.int32())),
    "nest": pa.array([[{"a": "1", "b": None}], None, [None, {"a": "2", "b": 3}], [], None], pa.list_(ST)),
})


def _file(folder: Path) -> tuple[bytes, FileFooter3, int]:
    path = next(folder.glob("*.carbondata"))
    data = path.read_bytes()
    at = struct.unpack(">q", data[-8:])[0]
    return data, FileFooter3.from_bytes(data[at:-8])[0], at


def _chunks(data: bytes, footer: FileFooter3) -> list[DataChunk3]:
    info = footer.blocklet_info_list3[0]
    return [DataChunk3.from_bytes(data[o:o + n])[0]
            for o, n in zip(info.column_data_chunks_offsets, info.column_data_chunks_length, strict=True)]


def test_null_rows_are_stored_in_carbondata_shape(tmp_path):
    write_files(TABLE.select(["arr", "st"]), str(tmp_path))
    data, footer, _ = _file(tmp_path)
    assert footer.extra_info[COMPLEX_NULLS_KEY] == "carbondata"
    header, _ = FileHeader.from_bytes(data)
    chunks = _chunks(data, footer)
    names = [c.column_name for c in header.column_schema]
    for name in ("arr", "st"):  # parent pages: no null bit
        page = chunks[names.index(name)].data_chunk_list[0]
        assert not bytes(decompress("snappy", page.presence.present_bit_stream)).strip(b"\x00")
    i = names.index("arr")
    info = footer.blocklet_info_list3[0]
    page_at = info.column_data_chunks_offsets[i] + info.column_data_chunks_length[i]
    page = data[page_at: page_at + chunks[i].data_chunk_list[0].data_page_length]
    pairs = np.frombuffer(decompress("snappy", page), ">i4").reshape(-1, 2)
    assert pairs[:, 0].tolist() == [1, 1, 0, 2, 1]  # a null array: one element, which is null
    child = chunks[i + 1].data_chunk_list[0]
    nulls = np.unpackbits(np.frombuffer(decompress("snappy", child.presence.present_bit_stream), np.uint8),
                          bitorder="little")
    assert np.flatnonzero(nulls).tolist() == [1, 3, 4]  # null row 1, the written null, null row 4


def test_null_rows_read_back_as_null(tmp_path):
    write_files(TABLE, str(tmp_path))
    got = read_folder(str(tmp_path))
    for name in TABLE.column_names:
        assert got.column(name).to_pylist() == TABLE.column(name).to_pylist(), name


def test_lone_null_element_and_empty_struct_read_as_null_like_carbondata(tmp_path):
    # what CarbonData keeps: it cannot tell these from null either
    table = pa.table({"arr": pa.array([[None], ["x"]], pa.list_(pa.string())),
                      "st": pa.array([{"a": None, "b": None}, {"a": "x", "b": None}], ST)})
    write_files(table, str(tmp_path))
    got = read_folder(str(tmp_path))
    assert got.column("arr").to_pylist() == [None, ["x"]]
    assert got.column("st").to_pylist() == [None, {"a": "x", "b": None}]


def _older_complex(self, node, arr, infos, out):
    """How carbon-ds wrote complex pages before: null rows as null bits in the parent page."""
    info = next(infos)
    nulls = E.null_mask(arr)
    if node.data_type in (DataType.ARRAY, DataType.MAP):
        arr = columns.map_as_list(arr) if node.data_type == DataType.MAP else arr
        counts = np.asarray(pc.list_value_length(arr).fill_null(0).to_numpy(zero_copy_only=False), np.int64)
        starts = np.where(counts == 0, 0, np.cumsum(counts) - counts)
        raw = np.stack([counts, starts], axis=1).astype(">i4").tobytes()
        out.append(E.encode_complex_parent(info, raw, len(arr), nulls, self.compressor))
        self._complex(node.children[0], arr.flatten(), infos, out)
    elif node.data_type == DataType.STRUCT:
        raw = np.full(len(arr), len(node.children), dtype=">i2").tobytes()
        out.append(E.encode_complex_parent(info, raw, len(arr), nulls, self.compressor))
        for ch_node, ch_arr in zip(node.children, arr.flatten(), strict=True):
            self._complex(ch_node, ch_arr, infos, out)
    else:
        out.append(columns.encode_primitive(info, arr, self.compressor))


def test_files_of_older_versions_read_by_their_null_bits(tmp_path, monkeypatch):
    table = pa.concat_tables([TABLE, pa.table({
        "arr": pa.array([[None]], pa.list_(pa.string())), "st": pa.array([{"a": None, "b": None}], ST),
        "mp": pa.array([[("k", None)]], pa.map_(pa.string(), pa.int32())),
        "nest": pa.array([[None]], pa.list_(ST))})])
    monkeypatch.setattr(columns.ColumnEncoder, "_complex", _older_complex)
    write_files(table, str(tmp_path))
    data, footer, at = _file(tmp_path)
    del footer.extra_info[COMPLEX_NULLS_KEY]  # the footer those versions wrote
    tail = footer.to_bytes()
    path = next(tmp_path.glob("*.carbondata"))
    path.write_bytes(data[:at] + tail + struct.pack(">q", at))
    got = read_folder(str(tmp_path))
    for name in table.column_names:  # a lone null element and a struct of null fields stay as written
        assert got.column(name).to_pylist() == table.column(name).to_pylist(), name
