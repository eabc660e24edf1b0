"""Compiled loops for the page layouts that numpy cannot vectorise.

Every kernel validates lengths against its input and reports problems with a negative status instead of
raising, so callers can turn them into a CarbonFormatError that names the file and offset.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# the marker CarbonData writes in place of a null string value
NULL_MARKER = np.frombuffer(b"@NU#LL$!", np.uint8)


@njit(cache=True)
def lv_scan(data, width, limit):
    """Count the values of a length-value page and the bytes they hold.

    ``width`` is 2 or 4 (big-endian length prefix). Returns (rows, value_bytes, bad_pos) where
    bad_pos >= 0 is the offset of a length running past the page, or of a row beyond ``limit``.
    """
    n = data.shape[0]
    pos = 0
    rows = 0
    total = 0
    while pos < n:
        if pos + width > n or rows >= limit:
            return rows, total, pos
        if width == 2:
            ln = (np.int64(data[pos]) << 8) | np.int64(data[pos + 1])
        else:
            ln = (
                (np.int64(data[pos]) << 24)
                | (np.int64(data[pos + 1]) << 16)
                | (np.int64(data[pos + 2]) << 8)
                | np.int64(data[pos + 3])
            )
            if ln >= 0x80000000:  # Java int: a negative length is corrupt
                return rows, total, pos
        if pos + width + ln > n:
            return rows, total, pos
        pos += width + ln
        total += ln
        rows += 1
    return rows, total, -1


@njit(cache=True)
def lv_split(data, width, rows, total, marker, check_marker):
    """Split a length-value page (already checked by ``lv_scan``) into Arrow offsets, values and validity.

    Values equal to ``marker`` become nulls (their bytes are dropped) when ``check_marker`` is set.
    """
    offsets = np.empty(rows + 1, np.int64)
    values = np.empty(total, np.uint8)
    valid = np.ones(rows, np.bool_)
    pos = 0
    out = 0
    mlen = marker.shape[0]
    offsets[0] = 0
    for r in range(rows):
        if width == 2:
            ln = (np.int64(data[pos]) << 8) | np.int64(data[pos + 1])
        else:
            ln = (
                (np.int64(data[pos]) << 24)
                | (np.int64(data[pos + 1]) << 16)
                | (np.int64(data[pos + 2]) << 8)
                | np.int64(data[pos + 3])
            )
        pos += width
        is_null = False
        if check_marker and ln == mlen:
            is_null = True
            for k in range(mlen):
                if data[pos + k] != marker[k]:
                    is_null = False
                    break
        if is_null:
            valid[r] = False
        else:
            values[out : out + ln] = data[pos : pos + ln]
            out += ln
        pos += ln
        offsets[r + 1] = out
    return offsets, values[:out], valid


@njit(cache=True)
def rle_integral_scan(data, width, limit):
    """Row count of a RLE_INTEGRAL page: runs of (short BE header, values); -1 - pos when corrupt."""
    n = data.shape[0]
    pos = 0
    rows = 0
    while pos < n:
        if pos + 2 > n:
            return -1 - pos
        hdr = (np.int64(data[pos]) << 8) | np.int64(data[pos + 1])
        count = hdr & 0x7FFF
        pos += 2
        need = count * width if hdr & 0x8000 else width
        if pos + need > n or rows + count > limit:
            return -1 - (pos - 2)
        pos += need
        rows += count
    return rows


@njit(cache=True)
def rle_integral_expand(data, width, rows):
    """Expand a RLE_INTEGRAL page checked by ``rle_integral_scan`` into big-endian signed int64 values."""
    out = np.empty(rows, np.int64)
    pos = 0
    r = 0
    n = data.shape[0]
    while pos < n:
        hdr = (np.int64(data[pos]) << 8) | np.int64(data[pos + 1])
        count = hdr & 0x7FFF
        pos += 2
        literal = hdr & 0x8000
        for _ in range(count):
            v = np.int64(0)
            for k in range(width):
                v = (v << 8) | np.int64(data[pos + k])
            shift = 64 - 8 * width
            if shift > 0:
                v = (v << shift) >> shift  # sign-extend the narrow big-endian value
            out[r] = v
            r += 1
            if literal:
                pos += width
        if not literal:
            pos += width
    return out


@njit(cache=True)
def expand_row_ids(index_data, index_map, limit):
    """CarbonData's compressed row-id list: ``index_map`` names positions in ``index_data`` where an
    inclusive range (start, end) is stored instead of two single ids. Returns an empty array when corrupt."""
    n = index_data.shape[0]
    m = index_map.shape[0]
    total = n
    for i in range(m):
        p = index_map[i]
        if p < 0 or p + 1 >= n:
            return np.empty(0, np.int64)
        span = index_data[p + 1] - index_data[p] - 1
        if span < -1:
            return np.empty(0, np.int64)
        total += span
        if total > limit:
            return np.empty(0, np.int64)
    out = np.empty(total, np.int64)
    k = 0
    j = 0
    i = 0
    while i < n:
        if j < m and index_map[j] == i:
            for v in range(index_data[i], index_data[i + 1] + 1):
                out[k] = v
                k += 1
            j += 1
            i += 2
        else:
            out[k] = index_data[i]
            k += 1
            i += 1
    if k != total:
        return np.empty(0, np.int64)
    return out
