"""Page compressors: raw snappy (no framing), zstd (standard frame) and gzip, as CarbonData writes them.

Decompression is bounded: a corrupt or hostile length can never make us allocate more than ``limit``
bytes, and snappy's declared length is checked against the most any snappy stream can expand to.
"""

from __future__ import annotations

import zlib

import cramjam
import numpy as np

from carbon_ds.errors import CarbonFormatError

COMPRESSORS = ("snappy", "zstd", "gzip")
_NORMALIZED: dict[str | None, str] = {None: "snappy", **{v: n for n in COMPRESSORS for v in (n, n.upper())}}
# a snappy copy element of 3 bytes yields at most 64 bytes
_SNAPPY_MAX_RATIO = 22
# Snappy decodes a stream of short copies at ~1.3 GB/s but literals at memcpy speed (~20x faster). A page
# that compresses by less than a third (random 4-byte date keys, wide random integers) is stored as literals:
# at worst 1.5x the compressed bytes, which costs less than the decode it saves on storage reading faster
# than ~0.5 GB/s a core (local disks, HDFS), and every snappy reader decodes it unchanged.
_SNAPPY_MIN_SAVING = 1 / 3
_SNAPPY_LITERAL = 1 << 16  # literal elements of at most 64 KiB, as snappy's own compressor cuts its input
DEFAULT_LIMIT = 1 << 30


def normalize(name: str | None) -> str:
    """The compressor a page or option names; ``None`` (files before 1.5) means snappy."""
    known = _NORMALIZED.get(name)
    if known is not None:  # asked on every page: the names a table uses are few
        return known
    n = (name or "snappy").strip().lower()
    if n not in COMPRESSORS:
        raise CarbonFormatError(f"unsupported compressor {name!r}; expected one of {', '.join(COMPRESSORS)}")
    return n


def compress(name: str, data: bytes | memoryview | np.ndarray) -> bytes:
    if name == "snappy":
        packed = bytes(cramjam.snappy.compress_raw(data))
        raw = memoryview(data).cast("B")
        return packed if len(packed) <= (1 - _SNAPPY_MIN_SAVING) * raw.nbytes else snappy_literal(raw)
    if name == "zstd":
        return bytes(cramjam.zstd.compress(data, level=3))
    if name == "gzip":
        return bytes(cramjam.gzip.compress(data))
    raise CarbonFormatError(f"unsupported compressor {name!r}; expected one of {', '.join(COMPRESSORS)}")


def snappy_literal(raw: memoryview) -> bytes:
    """``raw`` as a valid raw-snappy stream of literal elements only: any snappy reader decodes it as a copy."""
    n = raw.nbytes
    out = bytearray()
    v = n
    while True:  # the uncompressed length, a little-endian base-128 varint
        out.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
        v >>= 7
        if not v:
            break
    for start in range(0, n, _SNAPPY_LITERAL):
        size = min(_SNAPPY_LITERAL, n - start) - 1  # a literal tag stores its length less one
        if size < 60:
            out.append(size << 2)
        elif size < 1 << 8:
            out += bytes((60 << 2, size))
        else:
            out += bytes((61 << 2, size & 0xFF, size >> 8))
        out += raw[start : start + size + 1]
    return bytes(out)


def decompress(
    name: str, data: bytes | memoryview, limit: int = DEFAULT_LIMIT, into: np.ndarray | None = None
) -> np.ndarray:
    """Decompress to a read-only uint8 array of at most ``limit`` bytes; raises CarbonFormatError when
    corrupt.

    ``into`` (a uint8 array) receives the data when the stream declares exactly its size, saving a copy.
    Read-only like an uncompressed page's bytes, so each numba kernel compiles once for page data, not once
    per writability (about 0.85 s a compilation on 2 cores).
    """
    out = _decompress(name, data, limit, into)
    view = out.view()
    view.flags.writeable = False
    return view


def _decompress(name: str, data: bytes | memoryview, limit: int, into: np.ndarray | None) -> np.ndarray:
    try:
        if name == "snappy":
            n = cramjam.snappy.decompress_raw_len(data)
            if n > limit or n > _SNAPPY_MAX_RATIO * len(data) + 32:
                raise CarbonFormatError(
                    f"snappy block declares {n} bytes from {len(data)} compressed (limit {limit})"
                )
            out = into if into is not None and into.shape[0] == n else np.empty(n, np.uint8)
            got = cramjam.snappy.decompress_raw_into(data, out)
            return out[:got]
        if name == "zstd":
            n = _zstd_content_size(bytes(data[:18]))
            if n is not None and n > limit:
                raise CarbonFormatError(f"zstd frame declares {n} bytes (limit {limit})")
            if n is not None:
                out = into if into is not None and into.shape[0] == n else np.empty(n, np.uint8)
                got = cramjam.zstd.decompress_into(data, out)
                return out[:got]
            return _bounded_zstd(data, limit)
        if name == "gzip":
            d = zlib.decompressobj(wbits=47)  # gzip or zlib header
            out_b = d.decompress(bytes(data), limit)
            if d.unconsumed_tail:
                raise CarbonFormatError(f"gzip data expands beyond the limit of {limit} bytes")
            return np.frombuffer(out_b, np.uint8)
    except CarbonFormatError:
        raise
    except (cramjam.DecompressionError, zlib.error, ValueError) as e:
        raise CarbonFormatError(f"{name} data is corrupt: {e}") from None
    raise CarbonFormatError(f"unsupported compressor {name!r}; expected one of {', '.join(COMPRESSORS)}")


def _bounded_zstd(data: bytes | memoryview, limit: int) -> np.ndarray:
    size = min(limit, max(1 << 16, 8 * len(data)))
    while True:
        out = np.empty(size, np.uint8)
        try:
            got = cramjam.zstd.decompress_into(data, out)
            return out[:got]
        except cramjam.DecompressionError:
            if size >= limit:
                raise
            size = min(limit, size * 4)


def _zstd_content_size(head: bytes) -> int | None:
    """Frame content size from a zstd frame header, or None when the header does not carry it."""
    if len(head) < 6 or head[:4] != b"\x28\xb5\x2f\xfd":
        return None
    fhd = head[4]
    fcs_flag = fhd >> 6
    single = (fhd >> 5) & 1
    did = fhd & 3
    pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[did]
    width = (1 if single else 0, 2, 4, 8)[fcs_flag]
    if width == 0 or pos + width > len(head):
        return None
    v = int.from_bytes(head[pos : pos + width], "little")
    return v + 256 if width == 2 else v
