"""The writer against hand-computed expectations: codecs, min/max bytes, names, footer, index, rolling, errors."""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from carbon_ds.errors import CarbonOptionError, CarbonSchemaError
from carbon_ds.format.index import read_index, read_merge_index, write_merge_index
from carbon_ds.format.pages import encoder_meta
from carbon_ds.format.pages.compress import decompress
from carbon_ds.format.pages.encode import (
    ColumnInfo,
    bitset_bytes,
    choose_integral,
    encode_floating,
    encode_integral,
)
from carbon_ds.format.pages.encoder_meta import ColumnType, MetaType
from carbon_ds.format.pages.stat_bytes import dimension_bytes, measure_bytes, value_from_bytes
from carbon_ds.format.thrift.structs import DataChunk3, DataType, Encoding, FileFooter3, FileHeader
from carbon_ds.writers import CarbonWriter, WriterOptions, write_files

E = Encoding
M = MetaType


def _footer(path: str) -> tuple[FileHeader, FileFooter3, bytes]:
    data = Path(path).read_bytes()
    header, _ = FileHeader.from_bytes(data)
    at = struct.unpack(">q", data[-8:])[0]
    footer, _ = FileFooter3.from_bytes(data[at:-8])
    return header, footer, data


def _chunks(data: bytes, footer: FileFooter3, blocklet: int = 0) -> list[DataChunk3]:
    info = footer.blocklet_info_list3[blocklet]
    return [DataChunk3.from_bytes(data[o : o + n])[0]
            for o, n in zip(info.column_data_chunks_offsets, info.column_data_chunks_length, strict=True)]


# ------------------------------------------------------------------ codec choice


@pytest.mark.parametrize("lo, hi, src, expect", [
    (0, 9, 4, (E.ADAPTIVE_INTEGRAL, M.BYTE)),
    (2**63 - 10, 2**63 - 1, 8, (E.ADAPTIVE_DELTA_INTEGRAL, M.BYTE)),
    (-(2**63), 2**63 - 1, 8, (E.DIRECT_COMPRESS, None)),
    (-5, 100, 1, (E.DIRECT_COMPRESS, None)),  # nothing narrower than a byte
    (100_000, 100_100, 4, (E.ADAPTIVE_DELTA_INTEGRAL, M.BYTE)),
    (0, 70_000, 4, (E.ADAPTIVE_INTEGRAL, M.SHORT_INT)),
    (-40_000, 40_000, 8, (E.ADAPTIVE_INTEGRAL, M.SHORT_INT)),
    (0, 2**31 - 1, 4, (E.DIRECT_COMPRESS, None)),
    (0, 2**31 - 1, 8, (E.ADAPTIVE_INTEGRAL, M.INT)),
    (-128, 127, 2, (E.ADAPTIVE_INTEGRAL, M.BYTE)),  # tie goes to adaptive
])
def test_integral_codec_choice(lo, hi, src, expect):
    assert choose_integral(lo, hi, src) == expect


def test_complex_children_never_direct():
    assert choose_integral(0, 2**31 - 1, 4, complex_child=True) == (E.ADAPTIVE_INTEGRAL, M.INT)


def _info(dt_: DataType, dim: bool = False) -> ColumnInfo:
    return ColumnInfo("c", dt_, dim, ColumnType.PLAIN_VALUE if dim else ColumnType.MEASURE)


def test_integral_page_bytes_little_endian_and_delta():
    page = encode_integral(_info(DataType.INT), np.array([100_000, 100_300, 100_100], np.int64), None, "snappy")
    assert page.encoders == [E.ADAPTIVE_DELTA_INTEGRAL]
    raw = bytes(decompress("snappy", page.data))
    assert raw == struct.pack("<hhh", 300, 0, 200)  # max - value, as SHORT
    meta = encoder_meta.parse(page.encoder_meta[0])
    assert (meta.store_type, meta.max, meta.min) == (M.SHORT, 100_300, 100_000)


def test_short_int_is_big_endian():
    page = encode_integral(_info(DataType.LONG), np.array([0, 70000], np.int64), None, "snappy")
    assert page.encoders == [E.ADAPTIVE_INTEGRAL]
    assert bytes(decompress("snappy", page.data)) == b"\x00\x00\x00" + (70000).to_bytes(3, "big")


@pytest.mark.parametrize("values, encoding, store, decimals", [
    ([0.0, 0.5, 4.5], E.ADAPTIVE_FLOATING, M.BYTE, 1),
    ([1.25, -3.75, 100.5], E.ADAPTIVE_FLOATING, M.SHORT, 2),
    ([1.0, 2.0, 300.0], E.ADAPTIVE_INTEGRAL, M.SHORT, 0),  # whole numbers go the integral way
    ([0.1 + 0.2], E.DIRECT_COMPRESS, M.DOUBLE, 0),  # 0.30000000000000004 has no short decimal form
    ([float("nan"), 1.0], E.DIRECT_COMPRESS, M.DOUBLE, 0),
    ([float("inf")], E.DIRECT_COMPRESS, M.DOUBLE, 0),
    ([-0.0], E.DIRECT_COMPRESS, M.DOUBLE, 0),
    ([1e300], E.DIRECT_COMPRESS, M.DOUBLE, 0),
])
def test_floating_codec_choice(values, encoding, store, decimals):
    page = encode_floating(_info(DataType.DOUBLE), np.array(values, np.float64), None, "snappy")
    meta = encoder_meta.parse(page.encoder_meta[0])
    assert (page.encoders[0], meta.store_type, meta.decimal_count) == (encoding, store, decimals)


def _float_page_java_reads(values: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """A FLOAT page of ``values`` as CarbonData's AdaptiveFloatingCodec decodes it: the row path
    (``decodeDouble``: stored / 10^k in double, then narrowed) and the vector path of a FLOAT page
    (``decodeAndFillVector``: (float) stored / (float) 10^k)."""
    page = encode_floating(_info(DataType.FLOAT), np.array(values, np.float32), None, "snappy")
    meta = encoder_meta.parse(page.encoder_meta[0])
    if page.encoders[0] != E.ADAPTIVE_FLOATING:
        return np.array(values, np.float32), np.array(values, np.float32)
    raw = bytes(decompress("snappy", page.data))
    if meta.store_type == M.SHORT_INT:
        stored = np.array([int.from_bytes(raw[i:i + 3], "big", signed=True) for i in range(0, len(raw), 3)])
    else:
        stored = np.frombuffer(raw, {M.BYTE: "<i1", M.SHORT: "<i2", M.INT: "<i4"}[meta.store_type]).astype(np.int64)
    factor = 10.0 ** meta.decimal_count
    return (stored / factor).astype(np.float32), stored.astype(np.float32) / np.float32(factor)


def test_float_pages_read_back_exactly_by_both_java_decoders():
    # -928694.4375 at two decimals stores -92869444, past 2^24: (float) of it loses the last digit, so the
    # vector path read 1 ulp low
    rng = np.random.default_rng(7)
    pages = [[-928694.4375], [0.1, 0.25, -3.5], [16777217.0 / 8], *(rng.uniform(-1e6, 1e6, 50).tolist() for _ in range(20)),
             *(rng.integers(-1000, 1000, 50).astype(float).tolist() for _ in range(5))]
    for values in pages:
        want = np.array(values, np.float32)
        row, vector = _float_page_java_reads(values)
        assert row.tobytes() == want.tobytes() and vector.tobytes() == want.tobytes(), values


def test_null_bitset_is_java_bitset_bytes():
    mask = np.zeros(20, bool)
    mask[[1, 9]] = True
    assert bitset_bytes(mask) == b"\x02\x02"
    assert bitset_bytes(np.zeros(5, bool)) == b""


# ------------------------------------------------------------------ min/max bytes


def test_minmax_bytes():
    assert measure_bytes(DataType.INT, 9) == b"\x00" * 7 + b"\x09"
    assert measure_bytes(DataType.LONG, -1) == b"\xff" * 8
    assert measure_bytes(DataType.DOUBLE, 4.5) == bytes.fromhex("4012000000000000")
    assert measure_bytes(DataType.FLOAT, 1.0) == bytes.fromhex("3f800000") + b"\x00" * 4
    assert measure_bytes(DataType.BYTE, -1) == b"\xff"
    assert measure_bytes(DataType.BOOLEAN, True) == b"\x01"
    assert measure_bytes(DataType.DECIMAL, Decimal("12.35"), 2) == bytes.fromhex("0204d3")
    assert dimension_bytes(DataType.TIMESTAMP, 1549911814000) == bytes.fromhex("80000168ddf16f70")
    assert dimension_bytes(DataType.INT, -1) == bytes.fromhex("7fffffff")
    assert dimension_bytes(DataType.SHORT, 0) == bytes.fromhex("8000")
    assert dimension_bytes(DataType.DATE, 1073741823 + 17957) == bytes.fromhex("40004624")
    assert dimension_bytes(DataType.BYTE, -7) == b"-7"  # Java's fallback: the decimal text
    for t, dim, v in [(DataType.LONG, True, -(2**63)), (DataType.LONG, False, 2**63 - 1), (DataType.FLOAT, False, 1.5),
                      (DataType.DECIMAL, False, Decimal("-0.01")), (DataType.BYTE, True, -7),
                      (DataType.STRING, True, "abc")]:
        b = dimension_bytes(t, v) if dim else measure_bytes(t, v, 2)
        assert value_from_bytes(t, dim, b) == v
    assert value_from_bytes(DataType.DATE, True, bytes.fromhex("40004624")) == dt.date(2019, 3, 2)


def test_long_strings_drop_minmax(tmp_path):
    files = write_files(pa.table({"s": ["a" * 201, "b"], "t": ["x", "y"]}), str(tmp_path))
    mm = files[0].blocklets[0].block_index.min_max_index
    assert mm.min_max_presence == [False, True]
    assert (mm.min_values[1], mm.max_values[1]) == (b"x", b"y")


def test_date_statistics_count_the_null_key(tmp_path):
    # KeyPageStatsCollector sees every row's key, a null's key 1 too: CarbonData's IS NULL on a DATE looks
    # for key 1 between min and max
    key = 1073741823 + 10957  # 2000-01-01
    files = write_files(pa.table({"d": pa.array([None, dt.date(2000, 1, 1)]), "e": pa.array([None, None], pa.date32())}),
                        str(tmp_path))
    mm = files[0].blocklets[0].block_index.min_max_index
    assert mm.min_max_presence == [True, True]
    assert (mm.min_values[0], mm.max_values[0]) == (struct.pack(">i", 1), struct.pack(">i", key))
    assert (mm.min_values[1], mm.max_values[1]) == (struct.pack(">i", 1), struct.pack(">i", 1))
    _, footer, data = _footer(files[0].path)
    page = _chunks(data, footer)[0].data_chunk_list[0].min_max
    assert (page.min_values[0], page.max_values[0]) == (struct.pack(">i", 1), struct.pack(">i", key))


@pytest.mark.parametrize("local_dictionary", [True, False])
def test_string_statistics_count_the_null_marker(tmp_path, local_dictionary):
    # CarbonData's load hands a null string to StringStatsCollector as its stored bytes @NU#LL$!, and its
    # IS NULL filter looks for them between min and max
    files = write_files(pa.table({"s": ["a", None, "b"], "t": pa.array([None, None, None], pa.string()),
                                  "u": ["x", "y", "!"]}), str(tmp_path),
                        options=WriterOptions(local_dictionary_enable=local_dictionary))
    mm = files[0].blocklets[0].block_index.min_max_index
    assert mm.min_max_presence == [True, True, True]
    assert list(zip(mm.min_values, mm.max_values, strict=True)) == [
        (b"@NU#LL$!", b"b"), (b"@NU#LL$!", b"@NU#LL$!"), (b"!", b"y")]


def test_null_only_page_has_no_minmax(tmp_path):
    files = write_files(pa.table({"i": pa.array([None, None], pa.int32())}), str(tmp_path))
    assert files[0].blocklets[0].block_index.min_max_index.min_max_presence == [False]


# ------------------------------------------------------------------ files, footer, index


def test_names_footer_and_index(tmp_path):
    t = pa.table({"name": ["a", "b", None], "age": pa.array([1, 2, 3], pa.int32())})
    w = CarbonWriter(str(tmp_path), t.schema, WriterOptions(compressor="zstd", is_sort=True, written_by="me"),
                     task_no=7, segment_no="3", timestamp=1234)
    w.write(t)
    files = w.close()
    assert [f.file_name for f in files] == ["part-0-7_batchno0-0-3-1234.zstd.carbondata"]
    assert w.index_path.endswith("/7_batchno0-0-3-1234.carbonindex")
    header, footer, data = _footer(files[0].path)
    assert header.version == 3 and header.is_footer_present and header.time_stamp == 1234
    assert header.compressor_name == "zstd"
    assert [c.column_name for c in header.column_schema] == ["name", "age"]
    assert footer.num_rows == 3 and footer.is_sort is True
    assert footer.extra_info["written_by"] == "me" and footer.extra_info["version"] >= "2.2.0"
    assert footer.segment_info.num_cols == 2 and footer.segment_info.column_cardinalities == []
    assert footer.blocklet_index_list[0].b_tree_index.start_key == b"\x00" * 8
    info = footer.blocklet_info_list3[0]
    at = struct.unpack(">q", data[-8:])[0]
    assert info.dimension_offsets == info.column_data_chunks_offsets[1]  # where the first measure starts
    assert info.measure_offsets == at == files[0].footer_offset
    idx_header, entries = read_index(w.index_path)
    assert idx_header.version == 3 and idx_header.is_sort is True
    assert [c.column_name for c in idx_header.table_columns] == ["name", "age"]
    assert len(entries) == 1
    e = entries[0]
    assert (e.num_rows, e.file_name, e.offset, e.file_size) == (3, files[0].file_name, at, len(data))
    assert e.block_index == footer.blocklet_index_list[0] and e.blocklet_info == info


def test_merge_index_round_trip(tmp_path):
    write_files(pa.table({"a": [1]}), str(tmp_path), task_no=1, timestamp=5)
    write_files(pa.table({"a": [2]}), str(tmp_path), task_no=2, timestamp=5)
    idx = sorted(tmp_path.glob("*.carbonindex"))
    merged = tmp_path / "0_5.carbonindexmerge"
    write_merge_index(str(merged), [(p.name, p.read_bytes()) for p in idx])
    got = read_merge_index(str(merged))
    assert [name for name, _, _ in got] == [p.name for p in idx]
    assert [entries[0].num_rows for _, _, entries in got] == [1, 1]


def test_pages_blocklets_and_file_rolling(tmp_path):
    n = 5000
    t = pa.table({"i": pa.array(np.arange(n), pa.int64()), "s": [f"v{i}" for i in range(n)]})
    opts = WriterOptions(page_rows=1000, blocklet_size_mb=0.004, block_size_mb=0.01)
    files = write_files(t, str(tmp_path), options=opts, timestamp=9)
    assert len(files) > 1
    assert [f.file_name.split("-")[1] for f in files] == [str(i) for i in range(len(files))]
    assert sum(f.num_rows for f in files) == n
    _, entries = read_index(str(next(tmp_path.glob("*.carbonindex"))))
    assert len(entries) == sum(len(f.blocklets) for f in files)
    for f in files:
        _, footer, _ = _footer(f.path)
        assert footer.num_rows == f.num_rows == sum(b.num_rows for b in footer.blocklet_info_list3)
        for b in footer.blocklet_info_list3:
            assert all(r == 1000 for r in b.row_count_in_page)
            assert b.number_number_of_pages == len(b.row_count_in_page)


def test_local_dictionary_and_fallback(tmp_path):
    t = pa.table({"s": ["x", None, "y", "x"]})
    f = write_files(t, str(tmp_path / "a"))[0]
    _, footer, data = _footer(f.path)
    chunk = _chunks(data, footer)[0]
    ld = chunk.local_dictionary
    assert bytes(decompress("snappy", ld.dictionary_values)) == b"\x0e"  # keys 1 (null), 2, 3
    assert bytes(decompress("snappy", ld.dictionary_data)) == b"\x00\x08@NU#LL$!\x00\x01x\x00\x01y"
    page = bytes(decompress("snappy", data[f.blocklets[0].blocklet_info.column_data_chunks_offsets[0]
                                           + f.blocklets[0].blocklet_info.column_data_chunks_length[0]:][
        : chunk.data_chunk_list[0].data_page_length]))
    assert page == bytes.fromhex("000002000001000003000002")
    f2 = write_files(t, str(tmp_path / "b"), options=WriterOptions(local_dictionary_threshold=2))[0]
    _, footer2, data2 = _footer(f2.path)
    assert _chunks(data2, footer2)[0].local_dictionary is None


def test_string_over_32000_bytes_is_an_error_and_abort_cleans_up(tmp_path):
    t = pa.table({"text": ["a" * 32001]})
    with pytest.raises(CarbonSchemaError, match="text.*long_string_columns"):
        write_files(t, str(tmp_path))
    assert list(tmp_path.iterdir()) == []
    write_files(t, str(tmp_path), options=WriterOptions(long_string_columns=["text"]))


def test_abort_removes_written_files(tmp_path):
    t = pa.table({"a": pa.array(np.arange(3000), pa.int64())})
    w = CarbonWriter(str(tmp_path), t.schema, WriterOptions(page_rows=1000, blocklet_size_mb=0.001))
    w.write(t)
    assert list(tmp_path.iterdir())  # a blocklet already went to disk
    w.abort()
    assert list(tmp_path.iterdir()) == []


def test_bad_options_and_schema(tmp_path):
    with pytest.raises(CarbonOptionError):
        CarbonWriter(str(tmp_path), pa.schema([("a", pa.int32())]), WriterOptions(page_rows=0))
    w = CarbonWriter(str(tmp_path), pa.schema([("a", pa.int32())]))
    with pytest.raises(CarbonSchemaError):
        w.write(pa.table({"b": [1]}))


# ------------------------------------------------------------------ against the real 1.6 file


def test_encoder_meta_matches_real_file(corpus, tmp_path):
    """Measures written like the real CarbonReaderExample file carry byte-identical encoder meta."""
    real = next((corpus / "sdk-1.6-all-types").glob("*.carbondata"))
    rh, rf, rdata = _footer(str(real))
    n = 10
    t = pa.table({
        "shortfield": pa.array(range(n), pa.int16()),
        "intfield": pa.array(range(n), pa.int32()),
        "longfield": pa.array([2**63 - 1 - i for i in range(n)], pa.int64()),
        "doublefield": [i / 2 for i in range(n)],
        "boolfield": [True] * n,
        "decimalfield": pa.array([Decimal("12.35")] * n, pa.decimal128(8, 2)),
    })
    f = write_files(t, str(tmp_path))[0]
    _, footer, data = _footer(f.path)
    ours = {c.data_chunk_list[0].encoder_meta[0] for c in _chunks(data, footer)}
    names = [c.column_name for c in rh.column_schema]
    theirs = {c.data_chunk_list[0].encoder_meta[0] for i, c in enumerate(_chunks(rdata, rf)) if names[i] in t.column_names}
    assert ours == theirs
    rmm = rf.blocklet_index_list[0].min_max_index
    mm = footer.blocklet_index_list[0].min_max_index
    real_mm = {names[i]: (rmm.min_values[i], rmm.max_values[i]) for i in range(len(names))}
    assert [(mm.min_values[i], mm.max_values[i]) for i in range(len(t.columns))] == [
        real_mm[c.column_name] for c in _footer(f.path)[0].column_schema]
