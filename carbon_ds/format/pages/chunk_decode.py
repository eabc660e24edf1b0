"""All pages of a primitive column's chunk into one Arrow array (carbon_ds.format.pages.decode decodes one page).

Fixed-width values are decoded straight into one buffer for the chunk, the most common pages (measures of
integers, decimals and doubles stored by one adaptive or direct encoding, and dates, without nulls) in a
few calls each; strings go into one arena; dictionary pages share one lookup.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonFormatError
from carbon_ds.format.pages import encoder_meta, kernels, page_checks
from carbon_ds.format.pages.decode import (
    DATE_OFFSET,
    DECIMAL_SLOT,
    INT64_MAX,
    INT64_MIN,
    LE_INT,
    Arena,
    KeysOnly,
    Page,
    arrow_type_of,
    decode_page,
    int_meta,
    integer_dtype,
    pooled,
    take_entries,
)
from carbon_ds.format.pages.encoder_meta import STORE_WIDTH, MetaType
from carbon_ds.format.thrift.structs import DataType, Encoding

E = Encoding


def _buffer_dtype(typ: pa.DataType) -> np.dtype | None:
    """The numpy type of a fixed-width column's values buffer (None for other layouts)."""
    if pa.types.is_floating(typ):
        return np.dtype(typ.to_pandas_dtype())
    if pa.types.is_decimal128(typ):
        return DECIMAL_SLOT
    return integer_dtype(typ)


def decode_pages(
    pages: list[Page], dictionary: pa.Array | None = None, global_dictionary: pa.Array | None = None
) -> pa.Array:
    """All pages of a primitive column's chunk as one array, the same as concatenating ``decode_page`` of
    each, but fixed-width values are decoded straight into one buffer and dictionary pages share one
    lookup."""
    if not pages:
        raise ValueError("decode_pages needs at least one page")
    typ = arrow_type_of(pages[0].column)
    plain = global_dictionary is None and (pa.types.is_integer(typ) or pa.types.is_float64(typ)
                                           or pa.types.is_date32(typ) or pa.types.is_decimal128(typ))
    if len(pages) == 1 and dictionary is None and not plain:
        return decode_page(pages[0], dictionary, global_dictionary)
    if dictionary is not None:
        # one page or many: keys first, then one lookup; each page's statistics are checked against the
        # dictionary entries it uses (a small file's one page costs a pass over its values otherwise)
        keys = [decode_page(p, KeysOnly(dictionary), global_dictionary) for p in pages]  # type: ignore[arg-type]
        if all(k.type == pa.int32() for k in keys):
            page_checks.check_dictionary_stats(pages, keys, dictionary)
            return take_entries(dictionary, keys[0] if len(keys) == 1 else pa.concat_arrays(keys))
        return pa.concat_arrays([decode_page(p, dictionary, global_dictionary) for p in pages])
    total = sum(p.rows for p in pages)
    if pa.types.is_string(typ) or pa.types.is_binary(typ):
        return _lv_pages(pages, typ, total, global_dictionary)
    dtype = _buffer_dtype(typ)
    if dtype is None:
        return pa.concat_arrays([decode_page(p, dictionary, global_dictionary) for p in pages])
    values = pooled(total, dtype)
    address = None  # where ``values`` lies, found only for a page decoded apart (numpy's ctypes view is slow)
    bitmap = None
    pos = 0
    for p in pages:
        n = p.rows
        slot = values[pos : pos + n]
        if plain and _plain_into(p, slot):
            pos += n
            continue
        p.out = slot
        try:
            arr = decode_page(p, dictionary, global_dictionary)
        finally:
            p.out = None
        data = arr.buffers()[1]
        if address is None:
            address = values.ctypes.data
        if n and (arr.offset or data.address != address + pos * dtype.itemsize):
            slot[:] = np.frombuffer(data, dtype, count=n, offset=arr.offset * dtype.itemsize)
        if arr.null_count:
            if bitmap is None:
                bitmap = np.full((total + 7) // 8, 0xFF, np.uint8)
            _put_validity(bitmap, pos, arr)
        pos += n
    validity = pa.py_buffer(bitmap) if bitmap is not None else None
    return pa.Array.from_buffers(typ, total, [validity, pa.py_buffer(values)])


def _put_validity(bitmap: np.ndarray, at: int, arr: pa.Array) -> None:
    """``arr``'s validity written into the packed ``bitmap`` from bit ``at`` on. Pages hold a multiple of 8
    rows but the last, so the bytes are copied whole; a page that starts inside a byte is merged bit by bit."""
    n = len(arr)
    if at % 8 == 0 and arr.offset % 8 == 0:
        first = arr.offset // 8
        src = np.frombuffer(arr.buffers()[0], np.uint8)[first : first + (n + 7) // 8]
        whole, tail = divmod(n, 8)
        bitmap[at // 8 : at // 8 + whole] = src[:whole]
        if tail:
            keep = np.uint8((1 << tail) - 1)  # the bits of this page in the last byte; the rest stay set
            bitmap[at // 8 + whole] = (bitmap[at // 8 + whole] & ~keep) | (src[whole] & keep)
        return
    lo, hi = at // 8, (at + n + 7) // 8
    bits = np.unpackbits(bitmap[lo:hi], bitorder="little")
    bits[at - 8 * lo : at - 8 * lo + n] = page_checks.valid_of(arr)
    bitmap[lo:hi] = np.packbits(bits, bitorder="little")


def decode_dictionary_chunks(chunks: list[tuple[pa.Array, list[Page]]]) -> pa.Array:
    """The pages of several chunks of one column, each chunk with its own local dictionary, as one array:
    the same values as concatenating ``decode_pages(pages, dictionary)`` of each, but with one lookup in the
    dictionaries laid end to end (each chunk's keys moved past the dictionaries before it). Many small
    files' string columns then pay the lookup's fixed cost once, not once a file. Each page's statistics
    are checked as ``decode_pages`` checks them."""
    keys: list[pa.Array] = []
    dictionaries: list[pa.Array] = []
    base = 0
    for dictionary, pages in chunks:
        if not pages:
            continue
        ks = [decode_page(p, KeysOnly(dictionary)) for p in pages]  # type: ignore[arg-type]
        if not all(k.type == pa.int32() for k in ks) or base + len(dictionary) >= 1 << 31:
            return pa.concat_arrays([decode_pages(ps, d) for d, ps in chunks if ps])
        page_checks.check_dictionary_stats(pages, ks, dictionary)
        keys.extend(ks if not base else [_moved(k, base) for k in ks])
        dictionaries.append(dictionary)
        base += len(dictionary)
    if not keys:
        raise ValueError("decode_dictionary_chunks needs at least one page")
    whole = dictionaries[0] if len(dictionaries) == 1 else pa.concat_arrays(dictionaries)
    return take_entries(whole, keys[0] if len(keys) == 1 else pa.concat_arrays(keys))


def _moved(keys: pa.Array, base: int) -> pa.Array:
    """int32 ``keys`` plus ``base`` (nulls stay null)."""
    if keys.null_count:
        return pc.add(keys, pa.scalar(base, pa.int32()))
    moved = np.frombuffer(keys.buffers()[1], np.int32, count=len(keys), offset=keys.offset * 4) + np.int32(base)
    return pa.Array.from_buffers(pa.int32(), len(keys), [None, pa.py_buffer(moved)])


_INTEGRAL_ONLY = ([E.ADAPTIVE_INTEGRAL], [E.ADAPTIVE_DELTA_INTEGRAL])
_FLOATING_ONLY = ([E.ADAPTIVE_FLOATING], [E.ADAPTIVE_DELTA_FLOATING], [E.DIRECT_COMPRESS])


def _plain_into(page: Page, out: np.ndarray) -> bool:
    """The most common pages, decoded straight into ``out`` (the column's values buffer) and checked in a
    few calls: measures of integers, decimals or doubles stored by one adaptive or direct encoding, and
    dates; without nulls. A chunk of 2M rows has 63 pages, and ``decode_page``'s general steps cost more
    per page than these pages' decoding. Returns False, with nothing decided, for any other page or any
    problem: ``decode_page`` then decodes it and names the error."""
    if not page.rows:
        return False
    try:
        if page.validity_bits is not None:  # a page with nulls
            return False
        col = page.column
        if col.data_type == DataType.DATE:
            return _plain_dates(page, out)
        chunk = page.chunk
        if col.dimension or not chunk.encoder_meta:
            return False
        meta = encoder_meta.parse(chunk.encoder_meta[0])
        encs = chunk.encoders
        if encs in _INTEGRAL_ONLY:
            return _plain_integers(page, meta, encs[0] == E.ADAPTIVE_DELTA_INTEGRAL, out)
        if encs in _FLOATING_ONLY and out.dtype == np.float64:
            return _plain_doubles(page, meta, encs[0], out)
    except (CarbonFormatError, ValueError, TypeError, OverflowError):
        pass
    return False


def _plain_integers(page: Page, meta, delta: bool, out: np.ndarray) -> bool:
    """Adaptive integral pages (``delta``: stored as the page max minus the value) of integer or decimal
    columns."""
    width = STORE_WIDTH.get(meta.store_type)
    if width is None:
        return False
    base = int_meta(page, meta.max) if delta else 0
    data = page.data(page.rows * width)
    if not INT64_MIN <= base <= INT64_MAX or data.shape[0] != page.rows * width:
        return False
    src = data if width == 3 else data.view(LE_INT[width])  # SHORT_INT: 3 bytes big-endian
    if out.dtype == DECIMAL_SLOT:
        pairs = out.view(np.int64)
        lo, hi = (kernels.decimal_integral_be3 if width == 3 else kernels.decimal_integral)(src, base, delta, pairs)
        page_checks.check_unscaled_bounds(page, int(lo), int(hi), arrow_type_of(page.column))
        return True
    if out.dtype.kind != "i":
        return False
    if width == 3:
        lo, hi = kernels.integral_be3_bounded(src, base, delta, out)
    else:
        lo, hi = kernels.integral_bounded(src, base, delta, out)
    if page.check_stats:
        page_checks.check_measure_bounds(page, int(lo), int(hi))
    return True


def _plain_doubles(page: Page, meta, encoding: int, out: np.ndarray) -> bool:
    """Doubles stored as they are (DIRECT_COMPRESS) or as scaled integers (ADAPTIVE_(DELTA_)FLOATING)."""
    rows = page.rows
    if encoding == E.DIRECT_COMPRESS:
        target = out.view(np.uint8)
        data = page.data(rows * 8, target)  # snappy decompresses into the target, the others do not
        if meta.store_type != MetaType.DOUBLE or data.shape[0] != rows * 8:
            return False
        if not np.may_share_memory(data, target):
            target[:] = data
        found, lo, hi = kernels.double_bounds(out)
        bounds = (float(lo), float(hi)) if found else (None, None)
    else:
        width = STORE_WIDTH.get(meta.store_type)
        negate = encoding == E.ADAPTIVE_DELTA_FLOATING
        top = int(float(meta.max) * int(10**meta.decimal_count)) if negate else 0
        if width not in (1, 2, 4, 8) or not INT64_MIN <= top <= INT64_MAX:
            return False
        data = page.data(rows * width)
        if data.shape[0] != rows * width:
            return False
        lo, hi = kernels.floating_bounded(data.view(LE_INT[width]), top, negate, 10.0**meta.decimal_count, out)
        bounds = (float(lo), float(hi))
    if page.check_stats:
        page_checks.check_measure_bounds(page, *bounds)
    return True


_DATE_KEYS = frozenset({E.DICTIONARY, E.DIRECT_DICTIONARY, E.RLE})


def _plain_dates(page: Page, out: np.ndarray) -> bool:
    """``_plain_into`` for DATE pages: 4-byte direct-dictionary surrogates, not run-length encoded, not
    reordered by an inverted index, no key of null."""
    chunk = page.chunk
    encs = page.encodings
    if (out.dtype != np.int32 or not encs <= _DATE_KEYS or not encs & {E.DICTIONARY, E.DIRECT_DICTIONARY}
            or chunk.rle_page_length or chunk.rowid_page_length):
        return False
    data = page.data(page.rows * 4)
    if data.shape[0] != page.rows * 4:
        return False
    nulls, lo, hi = kernels.date_surrogates(data, 4, DATE_OFFSET, out)
    if nulls:
        return False
    page_checks.check_day_bounds(page, int(lo), int(hi))
    return True


def _lv_pages(pages: list[Page], typ: pa.DataType, total: int, global_dictionary: pa.Array | None) -> pa.Array:
    """String/binary pages into one arena; any page that decodes another way (or a chunk that outgrows it)
    falls back to concatenating the page arrays."""
    compressed = sum(p.chunk.data_page_length or 0 for p in pages)
    hint = sum((p.chunk.chunk_meta.total_uncompressed_size or 0) for p in pages)
    # the writer's uncompressed size when plausible, else a guess; the arena grows when short
    capacity = hint if 0 < hint <= 8 * compressed + 4096 else 3 * compressed + 4096
    arena = Arena(total, min(capacity, (1 << 31) - 1))
    parts = []
    in_arena = True
    for p in pages:
        row0 = arena.rows
        p.out = arena
        try:
            arr = decode_page(p, None, global_dictionary)
        finally:
            p.out = None
        parts.append(arr)
        in_arena = in_arena and arena.rows == row0 + p.rows and arr.offset == 0 and (
            arr.buffers()[1].address == arena.offsets[row0:].ctypes.data
        )
    if not in_arena:
        return pa.concat_arrays(parts)
    validity = pa.py_buffer(np.packbits(arena.valid, bitorder="little")) if arena.nulls else None
    return pa.Array.from_buffers(
        typ, total, [validity, pa.py_buffer(arena.offsets), pa.py_buffer(arena.values[: arena.used])]
    )
