"""A compiled parse of a column chunk's header (DataChunk3 and its page headers).

A first read of a column spends more time in the generic thrift codec than in decoding its pages (a 2M-row
column has about 63 page headers, each four nested structs). The header's shape is fixed, so one numba pass
walks the compact-protocol bytes into flat integer tables and Python only builds the objects. Anything outside
the shape this pass knows (an unknown or repeated field, a wire type other than the IDL's,
a value past its limit, bytes that run out) makes it give up, and the generic codec parses the same bytes:
either to the same objects or to its error naming the file and offset. The fast path therefore never answers
differently from ``DataChunk3.from_bytes``; it is only faster when the header is well formed.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit

from carbon_ds.format.thrift.codec import MAX_STRING_BYTES
from carbon_ds.format.thrift.structs import (
    MAX_COLUMNS,
    BlockletMinMaxIndex,
    ChunkCompressionMeta,
    DataChunk2,
    DataChunk3,
    LocalDictionaryChunk,
    LocalDictionaryChunkMeta,
    PresenceMeta,
)

# compact-protocol wire types (thrift/codec.py has the same numbers)
_TRUE, _FALSE, _I16, _I32, _I64, _BINARY, _LIST, _STRUCT = 1, 2, 4, 5, 6, 8, 9, 12

# one row per page; spans index the span table, pool entries index the integer pool
(_SEEN, _CODEC, _UNCOMPRESSED, _COMPRESSED, _NAME_AT, _NAME_LEN, _ROW_MAJOR, _DATA_LEN, _ROWID_LEN, _RLE_LEN,
 _PRESENCE, _BITS_AT, _BITS_LEN, _SORT, _ENC_AT, _ENC_N, _META_AT, _META_N, _MIN_AT, _MIN_N, _MAX_AT, _MAX_N,
 _MMP_AT, _MMP_N, _ROWS, _WIDTH) = range(26)
# the local dictionary's row: fields seen, its encoders (pool), encoder metas, data and values (spans)
_LD_SEEN, _LD_ENC_AT, _LD_ENC_N, _LD_META_AT, _LD_META_N, _LD_DATA_AT, _LD_DATA_LEN, _LD_VALUES_AT, _LD_VALUES_LEN = range(9)


@njit(cache=True, nogil=True, inline="always")
def _varint(buf, pos, end):
    """(value, next position); position -1 when the bytes run out or the number needs more than 63 bits."""
    result = np.uint64(0)
    shift = 0
    while pos < end and shift < 63:
        b = buf[pos]
        pos += 1
        result |= np.uint64(b & 0x7F) << np.uint64(shift)
        if b < 0x80:
            return np.int64(result), pos
        shift += 7
    return 0, -1


@njit(cache=True, nogil=True, inline="always")
def _zigzag(buf, pos, end):
    u, pos = _varint(buf, pos, end)
    return (u >> 1) ^ -(u & 1), pos


@njit(cache=True, nogil=True, inline="always")
def _field(buf, pos, end, last):
    """(wire type, field id, next position) of a field header; wire 0 is the struct's stop, -1 gave up."""
    if pos >= end:
        return -1, 0, -1
    head = buf[pos]
    pos += 1
    wire = head & 0x0F
    if wire == 0:
        return 0, 0, pos
    delta = head >> 4
    if delta:
        return wire, last + delta, pos
    fid, pos = _zigzag(buf, pos, end)
    return wire, fid, pos


@njit(cache=True, nogil=True, inline="always")
def _next(buf, pos, end, last, seen, most):
    """The next field of a struct whose field ids run 1..``most``: (wire type, field id, next position, the
    ids seen with it); wire 0 is the struct's stop; position -1 gave up (a bad header, an id outside the
    struct's, a field seen twice)."""
    wire, fid, pos = _field(buf, pos, end, last)
    if pos < 0 or wire < 0:
        return -1, 0, -1, seen
    if wire == 0:
        return 0, last, pos, seen
    if fid < 1 or fid > most or seen & (1 << fid):
        return -1, 0, -1, seen
    return wire, fid, pos, seen | (1 << fid)


@njit(cache=True, nogil=True, inline="always")
def _bytes(buf, pos, end):
    """(start, length, next position) of a length-prefixed byte string; position -1 gave up."""
    ln, pos = _varint(buf, pos, end)
    if pos < 0 or ln > end - pos:
        return 0, 0, -1
    return pos, ln, pos + ln


@njit(cache=True, nogil=True, inline="always")
def _list_head(buf, pos, end, elem_wire, limit):
    """(element count, next position) of a list of ``elem_wire`` elements; position -1 gave up."""
    if pos >= end:
        return 0, -1
    head = buf[pos]
    pos += 1
    n = np.int64(head >> 4)
    if (head & 0x0F) != elem_wire:
        return 0, -1
    if n == 15:
        n, pos = _varint(buf, pos, end)
        if pos < 0:
            return 0, -1
    if n > limit or n > end - pos:
        return 0, -1
    return n, pos


@njit(cache=True, nogil=True, inline="always")
def _binaries(buf, pos, end, spans, ns, limit):
    """A list of byte strings into ``spans`` from row ``ns``: (count, next position, next row)."""
    n, pos = _list_head(buf, pos, end, _BINARY, limit)
    if pos < 0:
        return 0, -1, ns
    for _ in range(n):
        at, ln, pos = _bytes(buf, pos, end)
        if pos < 0:
            return 0, -1, ns
        spans[ns, 0] = at
        spans[ns, 1] = ln
        ns += 1
    return n, pos, ns


@njit(cache=True, nogil=True, inline="always")
def _integers(buf, pos, end, pool, ni, elem_wire, limit):
    """A list of zigzag integers (or of bools, as bytes) into ``pool`` from ``ni``: (count, position, next)."""
    n, pos = _list_head(buf, pos, end, elem_wire, limit)
    if pos < 0:
        return 0, -1, ni
    for _ in range(n):
        if elem_wire == _TRUE:
            if pos >= end:
                return 0, -1, ni
            pool[ni] = 1 if buf[pos] == _TRUE else 0
            pos += 1
        else:
            v, pos = _zigzag(buf, pos, end)
            if pos < 0:
                return 0, -1, ni
            pool[ni] = v
        ni += 1
    return n, pos, ni


@njit(cache=True, nogil=True)
def _compression(buf, pos, end, row):
    """ChunkCompressionMeta into the page's row; the next position, -1 gave up."""
    fid = 0
    seen = 0
    while True:
        wire, fid, pos, seen = _next(buf, pos, end, fid, seen, 4)
        if pos < 0:
            return -1
        if wire == 0:
            break
        if fid == 4:
            if wire != _BINARY:
                return -1
            at, ln, pos = _bytes(buf, pos, end)
            if pos < 0 or ln > MAX_STRING_BYTES:
                return -1
            row[_NAME_AT] = at
            row[_NAME_LEN] = ln
        else:
            if wire != (_I32 if fid == 1 else _I64):
                return -1
            v, pos = _zigzag(buf, pos, end)
            if pos < 0:
                return -1
            row[_CODEC + fid - 1] = v
    if (seen & 0b1110) != 0b1110:
        return -1
    return pos


@njit(cache=True, nogil=True)
def _presence(buf, pos, end, row):
    fid = 0
    seen = 0
    while True:
        wire, fid, pos, seen = _next(buf, pos, end, fid, seen, 2)
        if pos < 0:
            return -1
        if wire == 0:
            break
        if fid == 1:
            if wire != _TRUE and wire != _FALSE:
                return -1
            row[_PRESENCE] = 1 if wire == _TRUE else 0
        else:
            if wire != _BINARY:
                return -1
            at, ln, pos = _bytes(buf, pos, end)
            if pos < 0:
                return -1
            row[_BITS_AT] = at
            row[_BITS_LEN] = ln
    if seen != 0b110:
        return -1
    return pos


@njit(cache=True, nogil=True)
def _min_max(buf, pos, end, row, spans, ns, pool, ni):
    """BlockletMinMaxIndex: (next position or -1, next span row, next pool entry)."""
    fid = 0
    seen = 0
    while True:
        wire, fid, pos, seen = _next(buf, pos, end, fid, seen, 3)
        if pos < 0:
            return -1, ns, ni
        if wire == 0:
            break
        if wire != _LIST:
            return -1, ns, ni
        if fid == 3:
            row[_MMP_AT] = ni
            n, pos, ni = _integers(buf, pos, end, pool, ni, _TRUE, MAX_COLUMNS)
            row[_MMP_N] = n
        else:
            at = _MIN_AT if fid == 1 else _MAX_AT
            row[at] = ns
            n, pos, ns = _binaries(buf, pos, end, spans, ns, MAX_COLUMNS)
            row[at + 1] = n
        if pos < 0:
            return -1, ns, ni
    if (seen & 0b110) != 0b110:
        return -1, ns, ni
    return pos, ns, ni


@njit(cache=True, nogil=True)
def _local_dictionary(buf, pos, end, row, spans, ns, pool, ni):
    """LocalDictionaryChunk (with its LocalDictionaryChunkMeta) into ``row``: (next position or -1, next span
    row, next pool entry)."""
    fid = 0
    seen = 0
    while True:
        wire, fid, pos, seen = _next(buf, pos, end, fid, seen, 3)
        if pos < 0:
            return -1, ns, ni
        if wire == 0:
            break
        if fid == 1:
            if wire != _STRUCT:
                return -1, ns, ni
            inner = 0
            inner_seen = 0
            while True:
                wire, inner, pos, inner_seen = _next(buf, pos, end, inner, inner_seen, 2)
                if pos < 0:
                    return -1, ns, ni
                if wire == 0:
                    break
                if wire != _LIST:
                    return -1, ns, ni
                if inner == 1:
                    row[_LD_ENC_AT] = ni
                    n, pos, ni = _integers(buf, pos, end, pool, ni, _I32, end)
                    row[_LD_ENC_N] = n
                else:
                    row[_LD_META_AT] = ns
                    n, pos, ns = _binaries(buf, pos, end, spans, ns, end)
                    row[_LD_META_N] = n
                if pos < 0:
                    return -1, ns, ni
            if inner_seen != 0b110:
                return -1, ns, ni
        else:
            if wire != _BINARY:
                return -1, ns, ni
            at, ln, pos = _bytes(buf, pos, end)
            if pos < 0:
                return -1, ns, ni
            k = _LD_DATA_AT if fid == 2 else _LD_VALUES_AT
            row[k] = at
            row[k + 1] = ln
    if seen != 0b1110:
        return -1, ns, ni
    row[_LD_SEEN] = seen
    return pos, ns, ni


@njit(cache=True, nogil=True)
def _page(buf, pos, end, row, spans, ns, pool, ni):
    """One DataChunk2 into ``row``: (next position or -1, next span row, next pool entry)."""
    fid = 0
    seen = 0
    while True:
        wire, fid, pos, seen = _next(buf, pos, end, fid, seen, 11)
        if pos < 0:
            return -1, ns, ni
        if wire == 0:
            break
        if fid == 2:
            if wire != _TRUE and wire != _FALSE:
                return -1, ns, ni
            row[_ROW_MAJOR] = 1 if wire == _TRUE else 0
        elif fid == 1 or fid == 6 or fid == 10:
            if wire != _STRUCT:
                return -1, ns, ni
            if fid == 1:
                pos = _compression(buf, pos, end, row)
            elif fid == 6:
                pos = _presence(buf, pos, end, row)
            else:
                pos, ns, ni = _min_max(buf, pos, end, row, spans, ns, pool, ni)
        elif fid == 8:
            if wire != _LIST:
                return -1, ns, ni
            row[_ENC_AT] = ni
            n, pos, ni = _integers(buf, pos, end, pool, ni, _I32, end)
            row[_ENC_N] = n
        elif fid == 9:
            if wire != _LIST:
                return -1, ns, ni
            row[_META_AT] = ns
            n, pos, ns = _binaries(buf, pos, end, spans, ns, end)
            row[_META_N] = n
        else:
            if wire != _I32:
                return -1, ns, ni
            v, pos = _zigzag(buf, pos, end)
            if fid == 11:
                row[_ROWS] = v
            else:
                row[_DATA_LEN + fid - 3 if fid <= 5 else _SORT] = v
        if pos < 0:
            return -1, ns, ni
    if (seen & 0b1110) != 0b1110:  # chunk_meta, rowMajor, data_page_length
        return -1, ns, ni
    row[_SEEN] = seen
    return pos, ns, ni


@njit(cache=True, nogil=True)
def _chunk3(buf):
    """(pages, spans, pool, [page_offset at, n, page_length at, n], the local dictionary's row, consumed
    bytes or -1 gave up)."""
    end = buf.size
    pages = np.zeros((0, _WIDTH), np.int64)
    spans = np.zeros((end, 2), np.int64)  # every byte string takes at least its length byte
    pool = np.zeros(end, np.int64)
    lists = np.full(4, -1, np.int64)
    ld = np.full(9, -1, np.int64)
    ns = 0
    ni = 0
    pos = 0
    fid = 0
    seen = 0
    while True:
        wire, fid, pos, seen = _next(buf, pos, end, fid, seen, 4)
        if pos < 0:
            return pages, spans, pool, lists, ld, -1
        if wire == 0:
            break
        if wire != (_STRUCT if fid == 4 else _LIST):
            return pages, spans, pool, lists, ld, -1
        if fid == 4:
            pos, ns, ni = _local_dictionary(buf, pos, end, ld, spans, ns, pool, ni)
            if pos < 0:
                return pages, spans, pool, lists, ld, -1
        elif fid == 1:
            n, pos = _list_head(buf, pos, end, _STRUCT, end // 8)  # a page header takes at least 8 bytes
            if pos < 0:
                return pages, spans, pool, lists, ld, -1
            pages = np.full((n, _WIDTH), -1, np.int64)
            for p in range(n):
                pos, ns, ni = _page(buf, pos, end, pages[p], spans, ns, pool, ni)
                if pos < 0:
                    return pages, spans, pool, lists, ld, -1
        else:
            k = 2 * (fid - 2)
            lists[k] = ni
            n, pos, ni = _integers(buf, pos, end, pool, ni, _I32, end)
            lists[k + 1] = n
            if pos < 0:
                return pages, spans, pool, lists, ld, -1
    if not seen & 0b10:
        return pages, spans, pool, lists, ld, -1
    return pages, spans[:ns], pool[:ni], lists, ld, pos


def _new(cls, attrs: dict):
    obj = cls.__new__(cls)
    obj.__dict__ = attrs
    return obj


def parse_data_chunk3(data: bytes, path: str | None = None, offset: int = 0) -> DataChunk3:
    """``DataChunk3.from_bytes(data, path, offset)[0]``, parsed by the compiled pass when it can."""
    pages, spans, pool, lists, ld, used = _chunk3(np.frombuffer(data, np.uint8))
    if used < 0:
        return DataChunk3.from_bytes(data, path, offset)[0]
    cuts = [data[a : a + n] for a, n in spans.tolist()]
    ints = pool.tolist()
    try:
        chunk_list = [_data_chunk2(row, cuts, ints, data) for row in pages.tolist()]
    except UnicodeDecodeError:  # a compressor name that is not UTF-8: the codec's error says where
        return DataChunk3.from_bytes(data, path, offset)[0]
    offsets_at, offsets_n, lengths_at, lengths_n = lists.tolist()
    return _new(DataChunk3, {
        "data_chunk_list": chunk_list,
        "page_offset": ints[offsets_at : offsets_at + offsets_n] if offsets_n >= 0 else None,
        "page_length": ints[lengths_at : lengths_at + lengths_n] if lengths_n >= 0 else None,
        "local_dictionary": _local_dictionary_chunk(ld.tolist(), cuts, ints, data),
    })


def _local_dictionary_chunk(row: list[int], cuts: list[bytes], ints: list[int], data: bytes
                            ) -> LocalDictionaryChunk | None:
    if row[_LD_SEEN] < 0:
        return None
    enc, meta = row[_LD_ENC_AT], row[_LD_META_AT]
    at, values_at = row[_LD_DATA_AT], row[_LD_VALUES_AT]
    return _new(LocalDictionaryChunk, {
        "dictionary_meta": _new(LocalDictionaryChunkMeta, {
            "encoders": ints[enc : enc + row[_LD_ENC_N]],
            "encoder_meta": cuts[meta : meta + row[_LD_META_N]],
        }),
        "dictionary_data": data[at : at + row[_LD_DATA_LEN]],
        "dictionary_values": data[values_at : values_at + row[_LD_VALUES_LEN]],
    })


def _data_chunk2(row: list[int], cuts: list[bytes], ints: list[int], data: bytes, new=object.__new__
                 ) -> DataChunk2:
    # one unpacking and local names: this runs once per page of every first read
    (seen, codec, uncompressed, compressed, name_at, name_len, row_major, data_len, rowid_len, rle_len,
     represents, bits_at, bits_len, sort, enc_at, enc_n, meta_at, meta_n, min_at, min_n, max_at, max_n,
     mmp_at, mmp_n, rows) = row
    meta = new(ChunkCompressionMeta)
    meta.__dict__ = {
        "compression_codec": codec,
        "total_uncompressed_size": uncompressed,
        "total_compressed_size": compressed,
        "compressor_name": None if name_at < 0 else _name(data[name_at : name_at + name_len]),
    }
    presence = None
    if seen & 0x40:
        presence = new(PresenceMeta)
        presence.__dict__ = {"represents_presence": represents == 1,
                             "present_bit_stream": data[bits_at : bits_at + bits_len]}
    min_max = None
    if seen & 0x400:
        min_max = new(BlockletMinMaxIndex)
        min_max.__dict__ = {
            "min_values": cuts[min_at : min_at + min_n],
            "max_values": cuts[max_at : max_at + max_n],
            "min_max_presence": None if mmp_at < 0 else [v == 1 for v in ints[mmp_at : mmp_at + mmp_n]],
        }
    page = new(DataChunk2)
    page.__dict__ = {
        "chunk_meta": meta,
        "rowMajor": row_major == 1,
        "data_page_length": data_len,
        "rowid_page_length": rowid_len if seen & 0x10 else None,
        "rle_page_length": rle_len if seen & 0x20 else None,
        "presence": presence,
        "sort_state": sort if seen & 0x80 else None,
        "encoders": ints[enc_at : enc_at + enc_n] if enc_at >= 0 else None,
        "encoder_meta": cuts[meta_at : meta_at + meta_n] if meta_at >= 0 else None,
        "min_max": min_max,
        "numberOfRowsInpage": rows if seen & 0x800 else None,
    }
    return page


@functools.lru_cache(maxsize=64)
def _name(raw: bytes) -> str:
    """A compressor's name (a handful per table, on every page)."""
    return raw.decode("utf-8")
