"""Compiled loops for the page layouts that numpy cannot vectorise.

Every kernel validates lengths against its input and reports problems with a negative status instead of
raising, so callers can turn them into a CarbonFormatError that names the file and offset. Kernels release
the GIL (``nogil``), so pages of different columns or files decode in parallel threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

# the marker CarbonData writes in place of a null string value
NULL_MARKER = np.frombuffer(b"@NU#LL$!", np.uint8)


@intrinsic
def _copy_bytes(typingctx, dst, dst_at, src, src_at, n):
    """``dst[dst_at:dst_at + n] = src[src_at:src_at + n]`` for uint8 arrays as one memcpy: a byte loop
    copies a short value at a fraction of the speed. The caller has checked both ranges."""
    sig = types.void(dst, types.intp, src, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        d, d_at, s_, s_at, count = args
        d_arr = context.make_array(signature.args[0])(context, builder, d)
        s_arr = context.make_array(signature.args[2])(context, builder, s_)
        cgutils.raw_memcpy(builder, builder.gep(d_arr.data, [d_at]), builder.gep(s_arr.data, [s_at]), count, 1)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _load_u64(typingctx, src, at):
    """The 8 bytes ``src[at:at + 8]`` of a uint8 array as one unaligned little-endian load (the caller has
    checked the range)."""
    sig = types.uint64(src, types.intp)

    def codegen(context, builder, signature, args):
        s_, s_at = args
        s_arr = context.make_array(signature.args[0])(context, builder, s_)
        ptr = builder.bitcast(builder.gep(s_arr.data, [s_at]), context.get_value_type(types.uint64).as_pointer())
        return builder.load(ptr, align=1)

    return sig, codegen


@intrinsic
def _store_u64(typingctx, dst, at, value):
    """``dst[at:at + 8] = value`` (little-endian) as one unaligned store (the caller has checked the range)."""
    sig = types.void(dst, types.intp, types.uint64)

    def codegen(context, builder, signature, args):
        d, d_at, v = args
        d_arr = context.make_array(signature.args[0])(context, builder, d)
        ptr = builder.bitcast(builder.gep(d_arr.data, [d_at]), context.get_value_type(types.uint64).as_pointer())
        builder.store(v, ptr, align=1)
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, nogil=True)
def _bswap64(v):
    v = ((v & np.uint64(0x00FF00FF00FF00FF)) << np.uint64(8)) | ((v >> np.uint64(8)) & np.uint64(0x00FF00FF00FF00FF))
    v = ((v & np.uint64(0x0000FFFF0000FFFF)) << np.uint64(16)) | ((v >> np.uint64(16)) & np.uint64(0x0000FFFF0000FFFF))
    return (v << np.uint64(32)) | (v >> np.uint64(32))


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
def lv_decode(data, width, limit, marker, check_marker, offsets, row0, values, out0, valid):
    """Split a length-value page into Arrow int32 offsets, values and validity in one pass.

    ``width`` is 2 or 4 (big-endian length prefix); values equal to ``marker`` become nulls (their bytes
    are dropped) when ``check_marker`` is set. Entries go to ``offsets[row0 + 1:]`` (``offsets[row0]``
    must hold ``out0``), ``values[out0:]`` and ``valid[row0:]``; the caller sizes them for at least
    ``min(limit, len(data) // width)`` rows and ``len(data)`` bytes (the output never exceeds the input).
    Returns (rows, end of the values written, nulls, bad_pos, or of all value bytes, least and greatest
    prefix key): bad_pos >= 0 is the offset of a length running past the page, or of a row beyond
    ``limit``; the output is then unusable. The or of all bytes tells whether any value needs UTF-8
    validation (>= 0x80). A prefix key is a value's first 8 bytes as a big-endian uint64, zero-padded:
    keys order as the values do, ties aside, so they bound the values for the page checks cheaply.
    """
    n = data.shape[0]
    vcap = values.shape[0]
    cap = min(limit, n // width)
    mlen = marker.shape[0]
    pos = 0
    out = out0
    rows = 0
    nulls = 0
    hi = 0
    kmin = np.uint64(0xFFFFFFFFFFFFFFFF)
    kmax = np.uint64(0)
    while pos < n:
        if pos + width > n or rows >= cap:
            return rows, out, nulls, pos, hi, kmin, kmax
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
                return rows, out, nulls, pos, hi, kmin, kmax
        start = pos + width
        end = start + ln
        if end > n:
            return rows, out, nulls, pos, hi, kmin, kmax
        is_null = False
        if check_marker and ln == mlen:
            is_null = True
            for k in range(mlen):
                if data[start + k] != marker[k]:
                    is_null = False
                    break
        if is_null:
            valid[row0 + rows] = False
            nulls += 1
        else:
            if start + 8 <= n:  # one load of the first 8 bytes, the bytes past the value masked off
                key = _bswap64(_load_u64(data, start))
                if ln < 8:
                    key = key & ~(np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(8 * ln)) if ln > 0 else np.uint64(0)
            else:
                key = np.uint64(0)
                for k in range(start, min(end, start + 8)):
                    key = (key << np.uint64(8)) | np.uint64(data[k])
                if 0 < ln < 8:  # (a shift by 64 is undefined)
                    key <<= np.uint64(8 * (8 - ln))
            kmin = min(kmin, key)
            kmax = max(kmax, key)
            if ln <= 16 and start + 16 <= n and out + 16 <= vcap:
                # a short value as two 8-byte moves; bytes past it are overwritten by the next values
                _store_u64(values, out, _load_u64(data, start))
                _store_u64(values, out + 8, _load_u64(data, start + 8))
            else:
                _copy_bytes(values, out, data, start, ln)
            out += ln
        pos = end
        rows += 1
        offsets[row0 + rows] = out
    for k in range(out0, out):  # one pass the compiler vectorises
        hi |= values[k]
    return rows, out, nulls, -1, hi, kmin, kmax


@njit(cache=True, nogil=True)
def be_unsigned(data, width, out):
    """Unsigned big-endian integers of ``width`` bytes (1-4) packed back to back, into ``out``."""
    if width == 3:  # local dictionary keys: the common case gets a loop of its own
        for i in range(out.shape[0]):
            p = 3 * i
            out[i] = (np.int64(data[p]) << 16) | (np.int64(data[p + 1]) << 8) | np.int64(data[p + 2])
        return
    for i in range(out.shape[0]):
        p = i * width
        v = np.int64(0)
        for k in range(width):
            v = (v << 8) | np.int64(data[p + k])
        out[i] = v


@njit(cache=True, nogil=True)
def date_surrogates(data, width, offset, out):
    """Big-endian DATE surrogates (``width`` bytes each) to days since the epoch (key - ``offset``) in
    ``out``; key 1 is null. Returns the null count (``date_nulls`` then marks them) and the least and
    greatest day written, nulls included (the page checks use them when there is no null)."""
    nulls = 0
    null_value = 1 - offset
    lo = np.int64(np.iinfo(np.int64).max)
    hi = np.int64(np.iinfo(np.int64).min)
    if width == 4:  # the usual layout gets a loop the compiler can vectorise
        for i in range(out.shape[0]):
            p = 4 * i
            v = (
                (np.int64(data[p]) << 24)
                | (np.int64(data[p + 1]) << 16)
                | (np.int64(data[p + 2]) << 8)
                | np.int64(data[p + 3])
            ) - offset
            out[i] = v
            nulls += v == null_value
            lo = min(lo, v)
            hi = max(hi, v)
        return nulls, lo, hi
    for i in range(out.shape[0]):
        p = i * width
        v = np.int64(0)
        for k in range(width):
            v = (v << 8) | np.int64(data[p + k])
        out[i] = v - offset
        nulls += v == 1
        lo = min(lo, v - offset)
        hi = max(hi, v - offset)
    return nulls, lo, hi


@njit(cache=True, nogil=True)
def date_nulls(data, width, valid):
    """Clear ``valid`` where the big-endian DATE surrogate is 1 (null)."""
    for i in range(valid.shape[0]):
        p = i * width
        v = np.int64(0)
        for k in range(width):
            v = (v << 8) | np.int64(data[p + k])
        if v == 1:
            valid[i] = False


@njit(cache=True, nogil=True)
def integral(src, base, negate, mul, out):
    """Stored integers (any integer view) to the column's values: ``(base - v if negate else v) * mul``,
    with int64 wrap-around, narrowed into ``out`` (as numpy's astype would)."""
    for i in range(src.shape[0]):
        v = np.int64(src[i])
        if negate:
            v = base - v
        out[i] = v * mul


@njit(cache=True, nogil=True)
def integral_bounded(src, base, negate, out):
    """``integral`` (no scaling) that also returns the min and max of the values written, as narrowed into
    ``out`` (0, 0 for no value): the page checks need them, and a second pass over the page would cost as
    much."""
    n = src.shape[0]
    if n == 0:
        return np.int64(0), np.int64(0)
    lo = np.int64(np.iinfo(np.int64).max)
    hi = np.int64(np.iinfo(np.int64).min)
    for i in range(n):
        v = np.int64(src[i])
        if negate:
            v = base - v
        out[i] = v
        w = np.int64(out[i])
        lo = min(lo, w)
        hi = max(hi, w)
    return lo, hi


@njit(cache=True, nogil=True, inline="always")
def _is_set(bits, i):
    """Bit ``i`` of an Arrow validity bitmap (LSB first)."""
    return (bits[i >> 3] >> (i & 7)) & 1


@njit(cache=True, nogil=True)
def integral_bounded_valid(src, be3, base, negate, out, bits):
    """``integral_bounded`` (``be3``: of CarbonData's 3-byte SHORT_INT bytes, as ``integral_be3_bounded``)
    whose min and max count only the values whose bit is set in the validity bitmap ``bits`` (a null slot
    holds no value): (status, min, max), status 2 when none is set."""
    lo = np.int64(np.iinfo(np.int64).max)
    hi = np.int64(np.iinfo(np.int64).min)
    seen = False
    for i in range(out.shape[0]):
        v = _be3(src, i) if be3 else np.int64(src[i])
        if negate:
            v = base - v
        out[i] = v
        if _is_set(bits, i):
            w = np.int64(out[i])
            lo = min(lo, w)
            hi = max(hi, w)
            seen = True
    return (0 if seen else 2), lo, hi


@njit(cache=True, nogil=True, inline="always")
def _be3(data, i):
    """Value ``i`` of a 3-byte big-endian signed (SHORT_INT) page."""
    p = 3 * i
    v = (np.int64(data[p]) << 16) | (np.int64(data[p + 1]) << 8) | np.int64(data[p + 2])
    return v - 0x1000000 if v >= 0x800000 else v


@njit(cache=True, nogil=True)
def integral_be3(data, base, negate, mul, out):
    """Like ``integral`` for CarbonData's SHORT_INT: 3-byte big-endian signed values."""
    for i in range(out.shape[0]):
        v = _be3(data, i)
        if negate:
            v = base - v
        out[i] = v * mul


@njit(cache=True, nogil=True)
def integral_be3_bounded(data, base, negate, out):
    """``integral_be3`` (no scaling) that also returns the min and max written, as ``integral_bounded``."""
    lo = np.int64(np.iinfo(np.int64).max)
    hi = np.int64(np.iinfo(np.int64).min)
    for i in range(out.shape[0]):
        v = _be3(data, i)
        if negate:
            v = base - v
        out[i] = v
        w = np.int64(out[i])
        lo = min(lo, w)
        hi = max(hi, w)
    return lo, hi


@njit(cache=True, nogil=True)
def floating(src, top, negate, factor, out):
    """ADAPTIVE_(DELTA_)FLOATING: ``(top - v if negate else v) / factor`` in double, narrowed into ``out``."""
    for i in range(src.shape[0]):
        v = np.int64(src[i])
        if negate:
            v = top - v
        out[i] = np.float64(v) / factor


@njit(cache=True, nogil=True)
def floating_bounded(src, top, negate, factor, out):
    """``floating`` into a float64 ``out`` that also returns the min and max of the values written (the
    page checks need them). The bounds are taken on the integers before the division: converting and
    dividing by a positive factor never reorders values, and integer min/max vectorises where float's,
    with its NaN rules, does not."""
    n = src.shape[0]
    if n == 0:
        return 0.0, 0.0
    lo = np.int64(np.iinfo(np.int64).max)
    hi = np.int64(np.iinfo(np.int64).min)
    for i in range(n):
        v = np.int64(src[i])
        if negate:
            v = top - v
        out[i] = np.float64(v) / factor
        lo = min(lo, v)
        hi = max(hi, v)
    return np.float64(lo) / factor, np.float64(hi) / factor


@njit(cache=True, nogil=True)
def double_bounds(values):
    """(found, min, max) of doubles, NaN skipped (a NaN is never below or above anything), in one pass;
    found is False when no value is a number."""
    lo = np.inf
    hi = -np.inf
    for i in range(values.shape[0]):
        v = values[i]
        lo = v if v < lo else lo
        hi = v if v > hi else hi
    return lo <= hi, lo, hi  # any number leaves lo <= it <= hi


@njit(cache=True, nogil=True)
def floating_be3(data, top, negate, factor, out):
    """Like ``floating`` for 3-byte big-endian stored values."""
    for i in range(out.shape[0]):
        v = _be3(data, i)
        if negate:
            v = top - v
        out[i] = np.float64(v) / factor


@njit(cache=True, nogil=True, inline="always")
def _put_decimal(out, i, v, lo, hi):
    """Value ``i`` as a sign-extended decimal128 slot of ``out``; the running min and max with it."""
    out[2 * i] = v
    out[2 * i + 1] = v >> 63
    if i == 0:
        return v, v
    return min(lo, v), max(hi, v)


@njit(cache=True, nogil=True)
def decimal_integral(src, base, negate, out):
    """Stored integers (any integer view) to Arrow decimal128 values: ``base - v if negate else v`` as
    the unscaled value, sign-extended to 128 bits. ``out`` is int64 with two slots per value (low word,
    then high word, little-endian as Arrow lays decimal128 out). Returns the min and max unscaled value
    written (the page checks need them; 0, 0 for no value)."""
    lo = np.int64(0)
    hi = np.int64(0)
    for i in range(src.shape[0]):
        v = np.int64(src[i])
        lo, hi = _put_decimal(out, i, base - v if negate else v, lo, hi)
    return lo, hi


@njit(cache=True, nogil=True)
def decimal_integral_be3(data, base, negate, out):
    """Like ``decimal_integral`` for 3-byte big-endian signed (SHORT_INT) stored values."""
    lo = np.int64(0)
    hi = np.int64(0)
    for i in range(out.shape[0] // 2):
        v = _be3(data, i)
        lo, hi = _put_decimal(out, i, base - v if negate else v, lo, hi)
    return lo, hi


@njit(cache=True, nogil=True)
def int_bounds(values, valid):
    """Min and max of integer ``values`` whose ``valid`` byte is set (an empty ``valid``: every value), as
    int64. Status 0, or 2 when no value is set."""
    n = values.shape[0]
    if valid.shape[0] == 0:
        if n == 0:
            return 2, np.int64(0), np.int64(0)
        lo = np.int64(values[0])
        hi = lo
        for i in range(1, n):  # branch-free min/max: the compiler vectorises it
            v = np.int64(values[i])
            lo = min(lo, v)
            hi = max(hi, v)
        return 0, lo, hi
    return _bounds(values, valid, np.int64(0))


@njit(cache=True, nogil=True)
def int_bounds_bits(values, bits):
    """Like ``int_bounds`` for the values whose bit is set in the validity bitmap ``bits``."""
    return _bounds(values, bits, np.int64(0), True)


@njit(cache=True, nogil=True, inline="always")
def _bounds(values, valid, zero, packed=False):
    """Min and max, in ``zero``'s type, of the ``values`` whose ``valid`` byte (``packed``: bit of a validity
    bitmap) is set (an empty ``valid``: every value), NaN skipped; status 0, or 2 when no value counts."""
    lo = zero
    hi = zero
    seen = False
    masked = valid.shape[0] > 0
    for i in range(values.shape[0]):
        if masked and not (_is_set(valid, i) if packed else valid[i]):
            continue
        v = zero + values[i]
        if v != v:  # NaN (never true of an integer)
            continue
        if not seen:
            lo = v
            hi = v
            seen = True
        else:
            lo = min(lo, v)
            hi = max(hi, v)
    return (0 if seen else 2), lo, hi


@njit(cache=True, nogil=True)
def decimal_bounds(pairs, valid):
    """Like ``int_bounds`` for the unscaled values of decimal128 slots (``pairs``: int64 low, high words per
    value), or status 1 when a set slot holds a value beyond int64 (its high word is not its low word's sign)."""
    masked = valid.shape[0] > 0
    for i in range(pairs.shape[0] // 2):
        if (not masked or valid[i]) and pairs[2 * i + 1] != pairs[2 * i] >> 63:
            return 1, np.int64(0), np.int64(0)
    return int_bounds(pairs[0::2], valid)


@njit(cache=True, nogil=True)
def float_bounds(values, valid):
    """Like ``int_bounds`` for floating ``values``, as float64, NaN skipped (a NaN bounds nothing):
    status 2 when no value is set and not NaN."""
    return _bounds(values, valid, np.float64(0.0))


@njit(cache=True, nogil=True)
def fits_int64(pairs):
    """Whether every decimal128 slot (``pairs``: int64 low, high words per value) holds an int64: its high
    word is its low word's sign."""
    bad = 0
    for i in range(pairs.shape[0] // 2):  # branch-free: the compiler vectorises it
        bad |= pairs[2 * i + 1] ^ (pairs[2 * i] >> 63)
    return bad == 0


@njit(cache=True, nogil=True)
def mark_keys(keys, valid, used):
    """Set ``used[k]`` for every key ``k`` (checked against ``used``'s size by the caller) whose entry is
    not null (``valid``: a byte per entry, empty when none is null): numpy's ``used[keys] = True`` costs
    ten times this pass on a page of keys."""
    masked = valid.shape[0] > 0
    for i in range(keys.shape[0]):
        k = keys[i]
        if not masked or valid[k]:
            used[k] = True


@njit(cache=True, nogil=True)
def take_sizes(offsets, valid, keys):
    """Bytes that ``take_bytes`` writes for ``keys`` into a string/binary dictionary (``offsets``: its
    int32 Arrow offsets; ``valid``: a byte per entry, empty when none is null), and how many keys name a
    null entry. The caller has checked every key against the dictionary's size."""
    total = 0
    nulls = 0
    masked = valid.shape[0] > 0
    for i in range(keys.shape[0]):
        k = keys[i]
        if masked and not valid[k]:
            nulls += 1
        else:
            total += offsets[k + 1] - offsets[k]
    return total, nulls


@njit(cache=True, nogil=True)
def take_bytes(offsets, values, valid, keys, out_offsets, out_values, out_valid):
    """The dictionary entries ``keys`` name, as Arrow offsets, values and validity bytes (sized by
    ``take_sizes``): one memcpy per value, where pyarrow's take of strings costs about twice as much."""
    masked = valid.shape[0] > 0
    pos = 0
    out_offsets[0] = 0
    for i in range(keys.shape[0]):
        k = keys[i]
        if masked and not valid[k]:
            out_valid[i] = False
        else:
            a = offsets[k]
            n = offsets[k + 1] - a
            _copy_bytes(out_values, pos, values, a, n)
            pos += n
        out_offsets[i + 1] = pos


@njit(cache=True, nogil=True, inline="always")
def _bytes_less(values, a0, a1, b0, b1):
    """Whether ``values[a0:a1]`` orders before ``values[b0:b1]`` as unsigned bytes (a prefix first)."""
    n = min(a1 - a0, b1 - b0)
    for k in range(n):
        x, y = values[a0 + k], values[b0 + k]
        if x != y:
            return x < y
    return a1 - a0 < b1 - b0


@njit(cache=True, nogil=True)
def bytes_bounds(offsets, values, valid):
    """Entries of the least and greatest value of a string/binary array (``offsets``: its int32 Arrow
    offsets, from its own offset on; ``valid``: a byte per entry, empty when none is null), compared as
    unsigned bytes, as Arrow's min_max of binary compares them; (-1, -1) when every value is null."""
    masked = valid.shape[0] > 0
    lo = -1
    hi = -1
    for i in range(offsets.shape[0] - 1):
        if masked and not valid[i]:
            continue
        if lo < 0:
            lo = i
            hi = i
            continue
        a0, a1 = offsets[i], offsets[i + 1]
        if _bytes_less(values, a0, a1, offsets[lo], offsets[lo + 1]):
            lo = i
        elif _bytes_less(values, offsets[hi], offsets[hi + 1], a0, a1):
            hi = i
    return lo, hi
