"""ROW_V1 stream files: the row-format ``.carbondata`` files of CarbonData's Streaming segments.

Layout (streaming module ``CarbonStreamRecordWriter``, ``StreamBlockletWriter``; read by hadoop's
``StreamBlockletReader`` / ``StreamRecordReader``):

* a Thrift-compact ``FileHeader`` at byte 0 (no length prefix) with ``is_footer_present`` false, the
  ``sync_marker`` ``@carbondata_sync`` and ``compressor_name``; its ``column_schema`` lists the dimensions,
  then the measures;
* blocklets, each: the 16-byte sync marker, a big-endian int length and a Thrift ``BlockletHeader``
  (``blocklet_length`` = uncompressed bytes, ``blocklet_info.num_rows``), a big-endian int length and the
  rows compressed as one block;
* a row: a big-endian short ``n`` and ``n`` bytes of a ``java.util.BitSet`` of null columns (in the order
  primitive dimensions, complex dimensions, measures), then each non-null column: a no-dictionary dimension
  as a short length (int for VARCHAR) and its bytes, a dictionary dimension (DATE, direct-dictionary
  TIMESTAMP) as its int key, measures big-endian (BOOLEAN 1 byte, SHORT 2, INT 4, LONG 8, DOUBLE 8,
  DECIMAL a short length and ``DataTypeUtil.bigDecimalToByte``: a scale byte and the unscaled value).

A null string is stored as the bytes ``@NU#LL$!`` (the converter's MEMBER_DEFAULT_VAL), a null key as 1.
The rows are split into columns by one compiled pass (``_split_rows``), then each column is built with numpy.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

from carbon_ds.errors import CarbonFormatError
from carbon_ds.format.arrow_types import TIMESTAMP_TYPE
from carbon_ds.format.pages import compress
from carbon_ds.format.pages.decode import DATE_OFFSET, arrow_type_of
from carbon_ds.format.pages.direct_dictionary import NULL_KEY, TimestampKeys
from carbon_ds.format.thrift.codec import Struct
from carbon_ds.format.thrift.structs import ENUM, ColumnSchema, DataType, Encoding, FileHeader

SYNC_MARKER = b"@carbondata_sync"  # CarbonStreamOutputFormat.CARBON_SYNC_MARKER
NULL_MARKER = b"@NU#LL$!"
MAX_BLOCKLET = 1 << 30
# column kinds of the row kernel
_SHORT_LV, _INT_LV, _KEY, _BOOL, _SHORT, _INT, _LONG, _DOUBLE, _DECIMAL = range(9)
_WIDTH = {_KEY: 4, _BOOL: 1, _SHORT: 2, _INT: 4, _LONG: 8, _DOUBLE: 8}
_MEASURE_KIND = {DataType.BOOLEAN: _BOOL, DataType.SHORT: _SHORT, DataType.INT: _INT, DataType.LONG: _LONG,
                 DataType.DOUBLE: _DOUBLE, DataType.DECIMAL: _DECIMAL}


class StreamBlockletInfo(Struct):
    """carbondata.thrift ``BlockletInfo`` (the V1 blocklet info; stream writers set only num_rows)."""

    FIELDS = {1: ("num_rows", "i32", True)}


class BlockletHeader(Struct):
    FIELDS = {
        1: ("blocklet_length", "i32", True),
        2: ("mutation", ENUM, True),
        4: ("blocklet_info", StreamBlockletInfo, True),
    }


def _kind(col: ColumnSchema, path: str) -> int:
    dt = DataType(col.data_type)
    enc = set(col.encoders or [])
    if not col.dimension:
        if dt not in _MEASURE_KIND:
            raise CarbonFormatError(f"stream file column {col.column_name!r}: measure type {dt.name} is not "
                                    "written by CarbonStreamRecordWriter", path)
        return _MEASURE_KIND[dt]
    if Encoding.DICTIONARY in enc:
        if Encoding.DIRECT_DICTIONARY not in enc or dt not in (DataType.DATE, DataType.TIMESTAMP):
            raise CarbonFormatError(f"stream file column {col.column_name!r}: global-dictionary keys are not read",
                                    path)
        return _KEY
    if dt not in (DataType.STRING, DataType.VARCHAR):
        raise CarbonFormatError(f"stream file column {col.column_name!r}: no-dictionary {dt.name} dimensions in "
                                "stream files are not supported yet", path)
    return _INT_LV if dt == DataType.VARCHAR else _SHORT_LV


@njit(cache=True, nogil=True)
def _split_rows(data, rows, kinds, starts, lengths, nulls):
    """Walk ``rows`` rows: for each column its value's start and length in ``data``, or a null flag.
    Returns the bytes consumed, or -1 when a row runs past the data."""
    pos = 0
    end = data.shape[0]
    ncols = kinds.shape[0]
    for r in range(rows):
        if pos + 2 > end:
            return -1
        nlen = (np.int64(data[pos]) << 8) | np.int64(data[pos + 1])
        pos += 2
        bits = pos
        pos += nlen
        if pos > end:
            return -1
        for c in range(ncols):
            byte = c >> 3
            if byte < nlen and (data[bits + byte] >> (c & 7)) & 1:
                nulls[r, c] = True
                continue
            k = kinds[c]
            if k == 0 or k == 8:
                if pos + 2 > end:
                    return -1
                n = (np.int64(data[pos]) << 8) | np.int64(data[pos + 1])
                pos += 2
            elif k == 1:
                if pos + 4 > end:
                    return -1
                n = ((np.int64(data[pos]) << 24) | (np.int64(data[pos + 1]) << 16)
                     | (np.int64(data[pos + 2]) << 8) | np.int64(data[pos + 3]))
                pos += 4
            elif k == 3:
                n = 1
            elif k == 4:
                n = 2
            elif k == 2 or k == 5:
                n = 4
            else:
                n = 8
            if pos + n > end:
                return -1
            starts[r, c] = pos
            lengths[r, c] = n
            pos += n
    return pos


@njit(cache=True, nogil=True)
def _be_signed(data, starts, width, out):
    """Big-endian signed integers of ``width`` bytes at ``starts``."""
    shift = 64 - 8 * width
    for i in range(starts.shape[0]):
        p = starts[i]
        v = np.int64(0)
        for k in range(width):
            v = (v << 8) | np.int64(data[p + k])
        out[i] = (v << shift) >> shift


def _fixed(data: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """Big-endian signed integers of ``width`` bytes at ``starts`` (int64)."""
    out = np.empty(starts.shape[0], np.int64)
    _be_signed(data, np.ascontiguousarray(starts), width, out)
    return out


def _var(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Offsets and concatenated bytes of variable-length values."""
    offsets = np.zeros(starts.shape[0] + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    idx = np.repeat(starts - offsets[:-1], lengths) + np.arange(int(offsets[-1]))
    return offsets, data[idx]


def _column(col: ColumnSchema, kind: int, data: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
            nulls: np.ndarray, keys: TimestampKeys) -> pa.Array:
    typ = arrow_type_of(col)
    if kind in (_SHORT_LV, _INT_LV):
        offsets, body = _var(data, starts, lengths)
        arr = pa.Array.from_buffers(pa.binary(), len(starts), [None, pa.py_buffer(offsets.astype(np.int32)),
                                                               pa.py_buffer(body)])
        marker = pc.equal(arr, pa.scalar(NULL_MARKER, pa.binary()))
        mask = nulls | marker.to_numpy(zero_copy_only=False)
        return pc.if_else(pa.array(mask), pa.scalar(None, typ), arr.cast(typ))
    if kind == _DECIMAL:
        return _decimals(data, starts, lengths, nulls, typ)
    values = _fixed(data, starts * ~nulls, _WIDTH[kind])
    if kind == _KEY:
        mask = nulls | (values == NULL_KEY)
        if col.data_type == DataType.DATE:
            return pa.array((values - DATE_OFFSET).astype(np.int32), pa.date32(), mask=mask)
        micros = ((values - 2) * keys.granularity_ms + keys.cutoff_ms) * 1000
        return pa.array(micros, pa.int64(), mask=mask).cast(TIMESTAMP_TYPE)
    if kind == _BOOL:
        return pa.array(values != 0, pa.bool_(), mask=nulls)
    if kind == _DOUBLE:
        return pa.array(values.view(np.float64), pa.float64(), mask=nulls)
    return pa.array(values, pa.int64(), mask=nulls).cast(typ)


def _decimals(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, nulls: np.ndarray,
              typ: pa.DataType) -> pa.Array:
    """Scale byte + big-endian unscaled value per row, brought to the column's scale (values of up to 18
    digits: wider stream decimals are refused)."""
    n = starts.shape[0]
    live = ~nulls
    width = np.where(live, lengths - 1, 0)
    if n and (width[live] < 1).any():
        raise CarbonFormatError("stream file decimal shorter than its scale byte and one value byte")
    if n and width.max(initial=0) > 8:
        raise CarbonFormatError("stream file decimals wider than 8 bytes are not supported yet")
    unscaled = np.zeros(n, np.int64)
    for w in np.unique(width[live]):
        rows = np.flatnonzero((width == w) & live)
        unscaled[rows] = _fixed(data, starts[rows] + 1, int(w))
    shift = typ.scale - data[starts * live].astype(np.int64)
    if (shift[live] < 0).any() or (shift[live] > 18).any():
        raise CarbonFormatError(f"stream file decimal scale does not fit the column's {typ}")
    unscaled *= (10 ** np.where(live, shift, 0)).astype(np.int64)
    out = np.zeros((n, 2), np.int64)
    out[:, 0] = np.where(live, unscaled, 0)
    out[:, 1] = out[:, 0] >> 63  # sign extension of the 128-bit little-endian value
    validity = pa.array(live).buffers()[1] if nulls.any() else None
    return pa.Array.from_buffers(typ, n, [validity, pa.py_buffer(out.tobytes())])


def is_stream_header(header: FileHeader) -> bool:
    return not header.is_footer_present and bytes(header.sync_marker or b"") == SYNC_MARKER


def blocklets(data: bytes | memoryview, path: str) -> tuple[FileHeader, list[tuple[int, BlockletHeader, int, int]]]:
    """The file header and each complete blocklet as (offset, header, compressed start, compressed length);
    a blocklet cut off by an unfinished append ends the list, as StreamBlockletReader stops at the length the
    segment's index records."""
    buf = memoryview(data)
    header, pos = FileHeader.from_bytes(buf, path, 0)
    if not is_stream_header(header):
        raise CarbonFormatError("not a ROW_V1 stream file (no sync marker in the file header)", path, 0)
    out = []
    while pos + len(SYNC_MARKER) + 4 <= len(buf):
        at = pos
        if bytes(buf[pos : pos + len(SYNC_MARKER)]) != SYNC_MARKER:
            raise CarbonFormatError("blocklet does not start with the sync marker", path, pos)
        pos += len(SYNC_MARKER)
        (hlen,) = struct.unpack(">i", buf[pos : pos + 4])
        if hlen <= 0 or pos + 4 + hlen + 4 > len(buf):
            break
        bh, _ = BlockletHeader.from_bytes(buf[pos + 4 : pos + 4 + hlen], path, pos + 4)
        pos += 4 + hlen
        (dlen,) = struct.unpack(">i", buf[pos : pos + 4])
        if dlen < 0 or pos + 4 + dlen > len(buf):
            break
        if not 0 <= bh.blocklet_length <= MAX_BLOCKLET:
            raise CarbonFormatError(f"blocklet length {bh.blocklet_length} out of range", path, pos)
        out.append((at, bh, pos + 4, dlen))
        pos += 4 + dlen
    return header, out


def read_stream_file(data: bytes | memoryview, path: str, keys: TimestampKeys) -> pa.Table:
    """Every row of a stream file's complete blocklets."""
    buf = memoryview(data)
    header, found = blocklets(buf, path)
    columns = [c for c in header.column_schema if c.column_name and "." not in c.column_name]
    kinds = np.array([_kind(c, path) for c in columns], np.int64)
    compressor = compress.normalize(header.compressor_name or "snappy")
    parts = []
    for at, bh, start, length in found:
        rows_bytes = compress.decompress(compressor, buf[start : start + length], bh.blocklet_length + 64)
        parts.append(_rows_table(rows_bytes, bh.blocklet_info.num_rows, columns, kinds, path, at, keys))
    if not parts:
        return pa.table({c.column_name: pa.array([], arrow_type_of(c)) for c in columns})
    return pa.concat_tables(parts)


def _rows_table(data: np.ndarray, rows: int, columns: list[ColumnSchema], kinds: np.ndarray, path: str,
                at: int, keys: TimestampKeys) -> pa.Table:
    if rows < 0 or rows > data.shape[0]:
        raise CarbonFormatError(f"blocklet declares {rows} rows in {data.shape[0]} bytes", path, at)
    starts = np.zeros((rows, len(columns)), np.int64)
    lengths = np.zeros((rows, len(columns)), np.int64)
    nulls = np.zeros((rows, len(columns)), np.bool_)
    used = _split_rows(data, rows, kinds, starts, lengths, nulls)
    if used != data.shape[0]:
        raise CarbonFormatError(f"blocklet rows do not fill its {data.shape[0]} bytes", path, at)
    return pa.table({c.column_name: _column(c, int(kinds[i]), data, starts[:, i], lengths[:, i], nulls[:, i], keys)
                     for i, c in enumerate(columns)})
