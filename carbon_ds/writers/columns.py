"""Column encoders: one top-level column's page of Arrow data to encoded pages of its physical columns.

A top-level column owns one physical column, or, when complex, its parent and every flattened child in
depth-first order. String columns keep a local dictionary across the writer (as CarbonData's per-task
generator does): keys 2, 3, ... in order of first appearance, key 1 for null. Once the dictionary would
pass the threshold the column falls back to plain pages, re-encoding the current blocklet's pages, and
stays plain for the rest of the writer.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonSchemaError
from carbon_ds.format.arrow_types import COMPLEX, ColumnNode
from carbon_ds.format.pages import encode as E
from carbon_ds.format.pages.complex_nulls import null_as_one_null_element
from carbon_ds.format.pages.compress import compress
from carbon_ds.format.pages.encoder_meta import ColumnType, EncoderMeta, MetaType, decimal_to_bytes, serialize
from carbon_ds.format.pages.stat_bytes import DATE_OFFSET, dimension_bytes, measure_bytes
from carbon_ds.format.thrift.structs import DataType, Encoding, LocalDictionaryChunk, LocalDictionaryChunkMeta

_INTEGRAL = (DataType.BYTE, DataType.SHORT, DataType.INT, DataType.LONG)


def column_info(node: ColumnNode, complex_child: bool) -> E.ColumnInfo:
    c = node.schema
    dt = DataType(c.data_type)
    if dt in COMPLEX:
        ct = ColumnType.COMPLEX_STRUCT if dt == DataType.STRUCT else ColumnType.COMPLEX_ARRAY
    elif complex_child:
        ct = ColumnType.COMPLEX_PRIMITIVE
    elif not c.dimension:
        ct = ColumnType.MEASURE
    elif dt == DataType.DATE:
        ct = ColumnType.DIRECT_DICTIONARY
    elif dt == DataType.VARCHAR:
        ct = ColumnType.PLAIN_LONG_VALUE
    else:
        ct = ColumnType.PLAIN_VALUE
    scale = c.scale if c.scale is not None and c.scale >= 0 else 0
    info = E.ColumnInfo(
        c.column_name,
        dt,
        bool(c.dimension),
        ct,
        c.scale if c.scale is not None else -1,
        c.precision if c.precision is not None else -1,
        complex_child,
    )
    if dt in COMPLEX or complex_child or dt == DataType.BINARY:
        info.to_stat = None  # no trusted statistics
    elif c.dimension:
        info.to_stat = (
            (lambda v: bytes(v))
            if dt in (DataType.STRING, DataType.VARCHAR)
            else (lambda v, dt=dt: dimension_bytes(dt, v))
        )
    else:
        info.to_stat = lambda v, dt=dt, scale=scale: measure_bytes(dt, v, scale)
    return info


def timestamp_ms(arr: pa.Array) -> np.ndarray:
    """Epoch milliseconds, floored (toward negative infinity) from finer units; nulls as 0."""
    unit = arr.type.unit
    raw = np.asarray(arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    if unit == "s":
        return raw * 1000
    if unit == "ms":
        return raw
    return np.floor_divide(raw, 1000 if unit == "us" else 1_000_000)


def _ints(arr: pa.Array) -> np.ndarray:
    return np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)


def _floats(arr: pa.Array, dtype: type) -> np.ndarray:
    return np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False), dtype=dtype)


def as_binary(arr: pa.Array) -> pa.Array:
    """Any string/binary flavour as plain ``binary`` (32-bit offsets), the form the LV builders read."""
    t = arr.type
    if pa.types.is_binary(t):
        return arr
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        arr = arr.cast(pa.string())
    return arr.cast(pa.binary())


def _fixed_lv(fixed: np.ndarray, nulls: np.ndarray | None) -> bytes:
    """Int-length LV records of fixed-width values; a null row is a zero length."""
    n, w = fixed.shape
    rec = np.empty((n, 4 + w), dtype=np.uint8)
    rec[:, :4] = np.frombuffer(int(w).to_bytes(4, "big"), np.uint8)
    rec[:, 4:] = fixed
    if nulls is None:
        return rec.tobytes()
    keep = np.ones(rec.shape, dtype=bool)
    keep[nulls, 4:] = False
    rec[nulls, :4] = 0
    return rec[keep].tobytes()


def encode_primitive(info: E.ColumnInfo, arr: pa.Array, compressor: str) -> E.EncodedPage:
    """A non-string primitive page (top level or complex child)."""
    dt = info.data_type
    nulls = E.null_mask(arr)
    if dt in _INTEGRAL:
        return E.encode_integral(info, _ints(arr), nulls, compressor)
    if dt == DataType.TIMESTAMP and not info.complex_child:
        return E.encode_integral(info, timestamp_ms(arr), nulls, compressor)
    if dt in (DataType.FLOAT, DataType.DOUBLE):
        return E.encode_floating(
            info, _floats(arr, np.float32 if dt == DataType.FLOAT else np.float64), nulls, compressor
        )
    if not info.complex_child:
        if dt == DataType.BOOLEAN:
            return E.encode_boolean(info, arr, compressor)
        if dt == DataType.DECIMAL:
            return E.encode_decimal(info, arr, compressor)
        if dt == DataType.DATE:
            return E.encode_date(info, arr, compressor)
        if dt == DataType.BINARY:
            return E.encode_plain_bytes(info, arr, compressor)
        raise CarbonSchemaError(f"column {info.name!r}: no page encoder for {dt.name}")
    # complex children without an adaptive codec: int-length LV of their value bytes
    if dt in (DataType.STRING, DataType.VARCHAR):
        return E.encode_complex_bytes(info, as_binary(arr), compressor, E.NULL_BYTES)
    if dt == DataType.BINARY:
        return E.encode_complex_bytes(info, as_binary(arr), compressor, E.NULL_BYTES)
    if dt == DataType.BOOLEAN:
        fixed = np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.uint8).reshape(-1, 1)
    elif dt == DataType.DATE:
        keys = _ints(arr.cast(pa.int32())) + DATE_OFFSET
        fixed = keys.astype(">i4").view(np.uint8).reshape(-1, 4)
    elif dt == DataType.TIMESTAMP:
        fixed = timestamp_ms(arr).astype(">i8").view(np.uint8).reshape(-1, 8)
    elif dt == DataType.DECIMAL:
        scale = arr.type.scale
        vals = [None if d is None else decimal_to_bytes(d, scale) for d in arr.to_pylist()]
        return E.encode_complex_bytes(info, pa.array(vals, pa.binary()), compressor)
    else:
        raise CarbonSchemaError(f"column {info.name!r}: no page encoder for {dt.name} inside a complex column")
    page = E.encode_complex_bytes(info, pa.array([], pa.binary()), compressor)
    raw = _fixed_lv(fixed, nulls)
    data = compress(compressor, raw)
    page.data, page.data_page_length, page.uncompressed_size, page.rows = data, len(data), len(raw), len(arr)
    page.null_bits = E.bitset_bytes(nulls)
    return page


def map_as_list(arr: pa.Array) -> pa.Array:
    """A map array as list<struct<key, value>> (CarbonData's storage of MAP)."""
    entry = pa.struct([pa.field("key", arr.type.key_type), pa.field("value", arr.type.item_type)])
    return arr.cast(pa.list_(entry))


class LocalDictionary:
    """A writer-wide string dictionary and the keys the current blocklet used."""

    def __init__(self, threshold: int):
        self.threshold = threshold
        self.values = pa.array([], pa.binary())
        self.used = np.zeros(2, dtype=bool)

    def keys(self, arr: pa.Array) -> np.ndarray | None:
        """3-byte surrogate keys of a page, or None when the dictionary would pass the threshold."""
        uniq = pc.unique(arr.drop_null())
        if len(self.values):
            uniq = uniq.filter(pc.invert(pc.is_in(uniq, value_set=self.values)))
        if len(uniq):
            if len(self.values) + len(uniq) + 1 > self.threshold:
                return None
            self.values = pa.concat_arrays([self.values, uniq])
        idx = pc.index_in(arr, value_set=self.values) if len(self.values) else pa.nulls(len(arr), pa.int32())
        keys = np.asarray(idx.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64) + 2
        if len(self.used) < len(self.values) + 2:
            grown = np.zeros(len(self.values) + 2, dtype=bool)
            grown[: len(self.used)] = self.used
            self.used = grown
        self.used[keys] = True
        return keys

    def chunk(self, info: E.ColumnInfo, compressor: str) -> LocalDictionaryChunk:
        """The blocklet's dictionary: used values in key order (key 1 is the null value) and the key BitSet."""
        used = np.flatnonzero(self.used)
        vals = self.values.take(pa.array(used[used >= 2] - 2))
        if self.used[1]:
            vals = pa.concat_arrays([pa.array([E.NULL_BYTES], pa.binary()), vals])
        wide = info.data_type == DataType.VARCHAR
        data = E.lv_bytes(vals, 4 if wide else 2)
        meta = serialize(
            EncoderMeta(
                info.name,
                MetaType.BYTE_ARRAY,
                ColumnType.PLAIN_LONG_VALUE if wide else ColumnType.PLAIN_VALUE,
                -1,
                -1,
                MetaType.BYTE_ARRAY,
                0,
                0,
                None,
                None,
                compressor,
            )
        )
        self.used = np.zeros(len(self.values) + 2, dtype=bool)
        return LocalDictionaryChunk(
            dictionary_meta=LocalDictionaryChunkMeta(encoders=[int(Encoding.DIRECT_COMPRESS)], encoder_meta=[meta]),
            dictionary_data=compress(compressor, data),
            dictionary_values=compress(compressor, E.bitset_bytes(_mask(used))),
        )


def _mask(positions: np.ndarray) -> np.ndarray:
    m = np.zeros(int(positions.max()) + 1 if len(positions) else 0, dtype=bool)
    m[positions] = True
    return m


class ColumnEncoder:
    """Encodes one top-level column page by page and holds its pages until the blocklet closes."""

    def __init__(self, node: ColumnNode, compressor: str, local_dict: bool, threshold: int):
        self.node = node
        self.compressor = compressor
        self.infos: list[E.ColumnInfo] = []
        self._collect(node, False)
        dt = node.data_type
        self.dictionary = (
            LocalDictionary(threshold) if local_dict and dt in (DataType.STRING, DataType.VARCHAR) else None
        )
        self.pages: list[list[E.EncodedPage]] = [[] for _ in self.infos]
        self.raw: list[pa.Array] = []  # this blocklet's input while the dictionary is on (for fallback)
        self.nbytes = 0

    def _collect(self, node: ColumnNode, child: bool) -> None:
        self.infos.append(column_info(node, child))
        for ch in node.children:
            self._collect(ch, True)

    def add(self, arr: pa.Array) -> None:
        encoded = self._encode(arr)
        for i, p in enumerate(encoded):
            p.extra["all_null"] = p.rows > 0 and len(p.null_bits) > 0 and _count_bits(p.null_bits) == p.rows
            self.pages[i].append(p)
            self.nbytes += len(p.data)

    def _encode(self, arr: pa.Array) -> list[E.EncodedPage]:
        info = self.infos[0]
        dt = info.data_type
        if dt in (DataType.STRING, DataType.VARCHAR):
            b = as_binary(arr)
            if dt == DataType.STRING and len(b) and E.byte_lengths_max(b) > 32000:
                raise CarbonSchemaError(
                    f"column {info.name!r}: a STRING value is {E.byte_lengths_max(b)} bytes, over the 32000-byte "
                    "limit; list the column in long_string_columns to store it as VARCHAR"
                )
            if self.dictionary is not None:
                keys = self.dictionary.keys(b)
                if keys is not None:
                    self.raw.append(b)
                    return [E.encode_dict_keys(info, keys, b, self.compressor)]
                self._fallback()
            return [E.encode_plain_bytes(info, b, self.compressor)]
        if dt in COMPLEX:
            out: list[E.EncodedPage] = []
            self._complex(self.node, arr, iter(self.infos), out)
            return out
        return [encode_primitive(info, arr, self.compressor)]

    def _fallback(self) -> None:
        """The dictionary passed the threshold: plain pages from now on, also for this blocklet so far."""
        info = self.infos[0]
        self.dictionary = None
        self.pages[0] = [E.encode_plain_bytes(info, b, self.compressor) for b in self.raw]
        for p in self.pages[0]:
            p.extra["all_null"] = p.rows > 0 and len(p.null_bits) > 0 and _count_bits(p.null_bits) == p.rows
        self.nbytes = sum(len(p.data) for p in self.pages[0])
        self.raw = []

    def _complex(self, node: ColumnNode, arr: pa.Array, infos, out: list[E.EncodedPage]) -> None:
        # a null array, map or struct is stored in CarbonData's shape, without null bits in the parent page
        # (see format/pages/complex_nulls.py)
        info = next(infos)
        dt = node.data_type
        if dt in (DataType.ARRAY, DataType.MAP):
            if dt == DataType.MAP:
                arr = map_as_list(arr)
            arr = null_as_one_null_element(arr)
            counts = np.asarray(pc.list_value_length(arr).to_numpy(zero_copy_only=False), np.int64)
            starts = np.cumsum(counts) - counts
            starts[counts == 0] = 0  # Java writes start 0 for an empty array
            raw = np.stack([counts, starts], axis=1).astype(">i4").tobytes()
            out.append(E.encode_complex_parent(info, raw, len(arr), None, self.compressor))
            self._complex(node.children[0], arr.flatten(), infos, out)
        elif dt == DataType.STRUCT:
            raw = np.full(len(arr), len(node.children), dtype=">i2").tobytes()
            out.append(E.encode_complex_parent(info, raw, len(arr), None, self.compressor))
            for ch_node, ch_arr in zip(node.children, arr.flatten(), strict=True):  # fields of a null row: null
                self._complex(ch_node, ch_arr, infos, out)
        else:
            out.append(encode_primitive(info, arr, self.compressor))

    def take(self) -> tuple[list[list[E.EncodedPage]], LocalDictionaryChunk | None]:
        """This blocklet's pages per physical column and the dictionary chunk; resets for the next one."""
        pages = self.pages
        chunk = self.dictionary.chunk(self.infos[0], self.compressor) if self.dictionary is not None else None
        self.pages = [[] for _ in self.infos]
        self.raw = []
        self.nbytes = 0
        return pages, chunk


def _count_bits(b: bytes) -> int:
    return int(np.unpackbits(np.frombuffer(b, np.uint8)).sum())
