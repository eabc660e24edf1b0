"""The one-pass decode kernels against an independent oracle: Python integers and Decimals computed by hand
from the stored values, for single pages and for whole chunks decoded into one buffer (decode_pages)."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from carbon_ds.format.pages import compress, encoder_meta, kernels
from carbon_ds.format.pages.chunk_decode import decode_pages
from carbon_ds.format.pages.decode import Page, decode_page
from carbon_ds.format.pages.encoder_meta import ColumnType, EncoderMeta, MetaType
from carbon_ds.format.thrift.structs import (
    ChunkCompressionMeta,
    ColumnSchema,
    DataChunk2,
    DataType,
    Encoding,
    PresenceMeta,
)

E = Encoding
WIDTH = {MetaType.BYTE: 1, MetaType.SHORT: 2, MetaType.SHORT_INT: 3, MetaType.INT: 4, MetaType.LONG: 8}
LIMIT = 10**17  # |unscaled| bound that keeps base - stored inside DECIMAL(18, s)


def stored_bytes(values: list[int], store: MetaType) -> bytes:
    width = WIDTH[store]
    if width == 3:  # SHORT_INT: 3-byte big-endian, the one big-endian adaptive layout
        return b"".join(v.to_bytes(3, "big", signed=True) for v in values)
    return np.array(values, dtype=f"<i{width}").tobytes()


def java_bitset(positions: set[int]) -> bytes:
    out = bytearray(max(positions) // 8 + 1)
    for p in positions:
        out[p // 8] |= 1 << (p % 8)
    return bytes(out)


def decimal_page(col: ColumnSchema, stored: list[int], store: MetaType, base: int | None, nulls: set[int]) -> Page:
    scale = col.scale
    top = Decimal(base).scaleb(-scale) if base is not None else Decimal(0)
    meta = encoder_meta.serialize(EncoderMeta("c", int(MetaType.DECIMAL), int(ColumnType.MEASURE), scale,
                                              col.precision, int(store), 0, 0, top, top))
    body = compress.compress("snappy", stored_bytes(stored, store))
    presence = None
    if nulls:
        presence = PresenceMeta(represents_presence=False,
                                present_bit_stream=compress.compress("snappy", java_bitset(nulls)))
    dc2 = DataChunk2(
        chunk_meta=ChunkCompressionMeta(compression_codec=1, total_uncompressed_size=0,
                                        total_compressed_size=len(body), compressor_name="snappy"),
        rowMajor=False, data_page_length=len(body), presence=presence,
        encoders=[E.ADAPTIVE_DELTA_INTEGRAL if base is not None else E.ADAPTIVE_INTEGRAL],
        encoder_meta=[meta], numberOfRowsInpage=len(stored),
    )
    return Page(col, dc2, memoryview(body), len(stored), "mem.carbondata", 0)


def store_values(store: MetaType):
    width = WIDTH[store]
    bound = min(1 << (8 * width - 1), LIMIT)
    return st.integers(-bound, bound - 1)


@st.composite
def decimal_chunks(draw):
    store = draw(st.sampled_from(list(WIDTH)))
    scale = draw(st.integers(0, 6))
    base = draw(st.one_of(st.none(), st.integers(-LIMIT, LIMIT)))
    pages = draw(st.lists(st.lists(store_values(store), min_size=1, max_size=40), min_size=1, max_size=4))
    nulls = [draw(st.sets(st.integers(0, len(p) - 1), max_size=3)) for p in pages]
    return store, scale, base, pages, nulls


@given(decimal_chunks())
@settings(max_examples=150, deadline=None)
def test_decimal_pages_equal_hand_computed_decimals(chunk):
    store, scale, base, pages, nulls = chunk
    col = ColumnSchema(data_type=int(DataType.DECIMAL), column_name="c", column_id="c", columnar=True,
                       encoders=[], dimension=False, scale=scale, precision=18)
    typ = pa.decimal128(18, scale)
    expected = []
    for values, null in zip(pages, nulls, strict=True):
        for i, v in enumerate(values):
            unscaled = base - v if base is not None else v
            expected.append(None if i in null else Decimal(unscaled).scaleb(-scale))
    built = [decimal_page(col, values, store, base, null) for values, null in zip(pages, nulls, strict=True)]
    one_by_one = pa.concat_arrays([decode_page(p) for p in built])
    whole = decode_pages(built)
    oracle = pa.array(expected, typ)
    assert one_by_one.type == whole.type == typ
    assert one_by_one.equals(oracle)
    assert whole.equals(oracle)
    whole.validate(full=True)


def test_decimal_page_hand_bytes():
    # DECIMAL(15,2) as ADAPTIVE_INTEGRAL over SHORT: 12.34, -0.01, 327.67; as delta from max 1.00 over BYTE
    col = ColumnSchema(data_type=int(DataType.DECIMAL), column_name="c", column_id="c", columnar=True,
                       encoders=[], dimension=False, scale=2, precision=15)
    p = decimal_page(col, [1234, -1, 32767], MetaType.SHORT, None, set())
    assert decode_page(p).to_pylist() == [Decimal("12.34"), Decimal("-0.01"), Decimal("327.67")]
    p = decimal_page(col, [0, 100, -28], MetaType.BYTE, 100, {1})
    assert decode_page(p).to_pylist() == [Decimal("1.00"), None, Decimal("1.28")]


@settings(max_examples=80, deadline=None)
@given(values=st.lists(st.one_of(st.binary(max_size=40), st.just(b"@NU#LL$!")), max_size=60),
       width=st.sampled_from([2, 4]))
def test_lv_decode_splits_values_and_bounds_their_prefixes(values, width):
    """A length-value page (CarbonData's LV layout: big-endian length, then the bytes) split by hand:
    offsets, bytes, the null marker, and each value's first 8 bytes as a big-endian key, zero-padded (short
    values and values at the very end of the page take the byte-by-byte path, the rest 8-byte loads)."""
    page = b"".join(len(v).to_bytes(width, "big") + v for v in values)
    data = np.frombuffer(page, np.uint8)
    rows = len(values)
    offsets = np.zeros(rows + 1, np.int32)
    out = np.zeros(len(page), np.uint8)
    valid = np.ones(rows, np.bool_)
    got_rows, end, nulls, bad, hi, kmin, kmax = kernels.lv_decode(
        data, width, rows, kernels.NULL_MARKER, True, offsets, 0, out, 0, valid)
    kept = [v for v in values if v != b"@NU#LL$!"]
    assert (got_rows, bad, nulls) == (rows, -1, rows - len(kept))
    assert out[:end].tobytes() == b"".join(kept)
    assert valid.tolist() == [v != b"@NU#LL$!" for v in values]
    lengths = [0 if v == b"@NU#LL$!" else len(v) for v in values]
    assert offsets.tolist() == [0, *np.cumsum(lengths).tolist()]
    keys = [int.from_bytes(v[:8].ljust(8, b"\0"), "big") for v in kept]
    if keys:
        assert (int(kmin), int(kmax)) == (min(keys), max(keys))
    joined = b"".join(kept)
    assert hi == (int(np.bitwise_or.reduce(np.frombuffer(joined, np.uint8))) if joined else 0)


def test_mark_keys_sets_exactly_the_entries_numpy_indexing_sets():
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 50, 1000).astype(np.int32)
    valid = rng.random(60) > 0.2  # entries that are not null
    for entries in (np.empty(0, np.bool_), valid):
        used = np.zeros(60, np.bool_)
        kernels.mark_keys(keys, entries, used)
        want = np.zeros(60, np.bool_)
        want[keys] = True
        want &= entries if entries.size else True
        assert used.tolist() == want.tolist() and not used[50:].any()
