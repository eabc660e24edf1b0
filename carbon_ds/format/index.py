"""``.carbonindex`` and ``.carbonindexmerge`` files: read and write.

A ``.carbonindex`` is an IndexHeader followed by one BlockIndex per blocklet of every data file one task
wrote. A ``.carbonindexmerge`` is a MergedBlockIndexHeader (the index file names) followed by a
MergedBlockIndex whose ``fileData`` holds each original index file's complete bytes, in the same order.
"""

from __future__ import annotations

import os

from carbon_ds.errors import CarbonFormatError
from carbon_ds.format.thrift.structs import BlockIndex, IndexHeader, MergedBlockIndex, MergedBlockIndexHeader
from carbon_ds.format.v3_file import check_index_version
from carbon_ds.fs import Storage


def _load(source: str | os.PathLike | bytes | bytearray | memoryview, storage: Storage | None) -> tuple[bytes, str]:
    if isinstance(source, bytes | bytearray | memoryview):
        return bytes(source), "<bytes>"
    if storage is None:
        storage, path = Storage.for_path(source)
    else:
        path = os.fspath(source)
    return storage.read_bytes(path), path


def parse_index(data: bytes, path: str = "<bytes>") -> tuple[IndexHeader, list[BlockIndex]]:
    header, pos = IndexHeader.from_bytes(data, path)
    check_index_version(header.version, path)
    entries: list[BlockIndex] = []
    while pos < len(data):
        entry, used = BlockIndex.from_bytes(data[pos:], path, pos)
        if used <= 0:
            raise CarbonFormatError("index entry of zero bytes", path, pos)
        entries.append(entry)
        pos += used
    return header, entries


def read_index(
    source: str | os.PathLike | bytes, storage: Storage | None = None
) -> tuple[IndexHeader, list[BlockIndex]]:
    """The header and the per-blocklet entries of a ``.carbonindex`` (a path or its bytes)."""
    data, path = _load(source, storage)
    return parse_index(data, path)


def read_merge_index(
    source: str | os.PathLike | bytes, storage: Storage | None = None
) -> list[tuple[str, IndexHeader, list[BlockIndex]]]:
    """Each merged index file as (original index file name, header, entries)."""
    data, path = _load(source, storage)
    head, pos = MergedBlockIndexHeader.from_bytes(data, path)
    body, _ = MergedBlockIndex.from_bytes(data[pos:], path, pos)
    names, blobs = head.file_names or [], body.fileData or []
    if len(names) != len(blobs):
        raise CarbonFormatError(f"merge index names {len(names)} files but holds {len(blobs)}", path, pos)
    return [(name, *parse_index(bytes(blob), f"{path}:{name}")) for name, blob in zip(names, blobs, strict=True)]


def index_bytes(header: IndexHeader, entries: list[BlockIndex]) -> bytes:
    return header.to_bytes() + b"".join(e.to_bytes() for e in entries)




def merge_index_bytes(files: list[tuple[str, bytes]]) -> bytes:
    head = MergedBlockIndexHeader(file_names=[name for name, _ in files])
    body = MergedBlockIndex(fileData=[blob for _, blob in files])
    return head.to_bytes() + body.to_bytes()


def write_merge_index(path: str, files: list[tuple[str, bytes]], storage: Storage | None = None) -> bytes:
    """Write a ``.carbonindexmerge`` of (index file name, index file bytes); returns the bytes written."""
    if storage is None:
        storage, path = Storage.for_path(path)
    data = merge_index_bytes(files)
    storage.write_bytes(path, data)
    return data
