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
# a snappy copy element of 3 bytes yields at most 64 bytes
_SNAPPY_MAX_RATIO = 22
DEFAULT_LIMIT = 1 << 30


def normalize(name: str | None) -> str:
    """The compressor a page or option names; ``None`` (files before 1.5) means snappy."""
    n = (name or "snappy").strip().lower()
    if n not in COMPRESSORS:
        raise CarbonFormatError(f"unsupported compressor {name!r}; expected one of {', '.join(COMPRESSORS)}")
    return n


def compress(name: str, data: bytes | memoryview | np.ndarray) -> bytes:
    if name == "snappy":
        return bytes(cramjam.snappy.compress_raw(data))
    if name == "zstd":
        return bytes(cramjam.zstd.compress(data, level=3))
    if name == "gzip":
        return bytes(cramjam.gzip.compress(data))
    raise CarbonFormatError(f"unsupported compressor {name!r}; expected one of {', '.join(COMPRESSORS)}")


def decompress(
    name: str, data: bytes | memoryview, limit: int = DEFAULT_LIMIT, into: np.ndarray | None = None
) -> np.ndarray:
    """Decompress to a uint8 array of at most ``limit`` bytes; raises CarbonFormatError when corrupt.

    ``into`` (a uint8 array) receives the data when the stream declares exactly its size, saving a copy.
    """
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
