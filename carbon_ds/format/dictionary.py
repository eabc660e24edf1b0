"""CarbonData's table-level global dictionary (tables written before 2.0).

A dimension whose ColumnSchema lists the DICTIONARY encoding without DIRECT_DICTIONARY stores surrogate
keys in its pages; the values live beside the table, not in the data file:

- ``<table>/Metadata/<column_id>.dict``: thrift-compact ``ColumnDictionaryChunk {1: list<binary> values}``
  structs back to back. Every load appends its new distinct values as one or more chunks.
- ``<table>/Metadata/<column_id>.dictmeta``: one ``ColumnDictionaryChunkMeta`` per load, back to back:
  the surrogate range the load added (min/max), the byte range of its chunks in the ``.dict`` file
  (start/end offset) and how many chunks it wrote.
- ``<column_id>_<end_offset>.sortindex``: value-order permutations for filters; a reader does not need it.

Surrogates number the values from 1 in file order; the first value the first load writes is the member
default ``@NU#LL$!``, so surrogate 1 is null. Java reads a dictionary only up to the last ``.dictmeta``
entry's end offset (bytes past it are an interrupted load, which the next writer truncates), and treats a
``.dict`` without ``.dictmeta`` as never committed (the next writer deletes it); this reader does the same.
"""

from __future__ import annotations

import posixpath

import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonFormatError
from carbon_ds.format.thrift.structs import ColumnDictionaryChunk, ColumnDictionaryChunkMeta, ColumnSchema, Encoding
from carbon_ds.fs import Storage

NULL_MEMBER = b"@NU#LL$!"  # CarbonCommonConstants.MEMBER_DEFAULT_VAL: the dictionary's null value
# an Arrow string array addresses its bytes with int32 offsets; a larger dictionary cannot be one array
MAX_DICTIONARY_BYTES = (1 << 31) - 1
MAX_META_BYTES = 64 << 20  # one ~12-byte entry per load: far beyond any real table


def is_global_dictionary(column: ColumnSchema) -> bool:
    """True when the column's values are surrogates into the table's ``Metadata/<column_id>.dict``.

    DIRECT_DICTIONARY (DATE, TIMESTAMP) keys are computed from the value and need no file."""
    encoders = set(column.encoders or [])
    return Encoding.DICTIONARY in encoders and Encoding.DIRECT_DICTIONARY not in encoders


def table_root(data_file: str) -> str | None:
    """The table folder of a data file at ``<root>/Fact/Part<n>/Segment_<id>/<file>``, else None."""
    segment = posixpath.dirname(data_file)
    part = posixpath.dirname(segment)
    fact = posixpath.dirname(part)
    if (
        posixpath.basename(segment).startswith("Segment_")
        and posixpath.basename(part).startswith("Part")
        and posixpath.basename(fact) == "Fact"
    ):
        return posixpath.dirname(fact)
    return None


def dictionary_path(root: str, column_id: str) -> str:
    return posixpath.join(root, "Metadata", f"{column_id}.dict")


def _read_whole(storage: Storage, path: str, limit: int, what: str) -> bytes:
    size = storage.size(path)
    if size > limit:
        raise CarbonFormatError(f"{what} of {size} bytes exceeds the {limit} bytes this reader accepts", path, 0)
    with storage.open(path) as f:
        data = f.read_at(size, 0) if size else b""
    if len(data) != size:
        raise CarbonFormatError(f"short read: {len(data)} of {size} bytes", path, 0)
    return data


def read_dictionary_meta(storage: Storage, path: str) -> list[ColumnDictionaryChunkMeta]:
    """Every ColumnDictionaryChunkMeta of a ``.dictmeta`` file, in load order."""
    data = _read_whole(storage, path, MAX_META_BYTES, "dictionary meta file")
    shown = storage.uri(path)
    view = memoryview(data)
    entries = []
    pos = 0
    while pos < len(data):
        entry, used = ColumnDictionaryChunkMeta.from_bytes(view[pos:], shown, pos)
        entries.append(entry)
        pos += used
    return entries


def read_global_dictionary(storage: Storage, path: str, column_name: str | None = None) -> pa.Array:
    """The values of a ``.dict`` file as a string array indexed by surrogate key.

    Position 0 (no surrogate) and the null member (surrogate 1) are null. The ``.dictmeta`` beside the
    file bounds what is read and is checked against it, so a dictionary that disagrees with its own
    metadata raises CarbonFormatError instead of silently shifting every value.
    """
    shown = storage.uri(path)
    who = f"column {column_name!r} global dictionary" if column_name else "global dictionary"
    meta_path = path + "meta"  # <column_id>.dict -> <column_id>.dictmeta
    if not storage.exists(meta_path):
        raise CarbonFormatError(
            f"{who}: {storage.uri(meta_path)} is missing; without it CarbonData treats the dictionary as "
            "never committed",
            shown,
        )
    try:
        entries = read_dictionary_meta(storage, meta_path)
    except CarbonFormatError as e:
        raise _prefixed(who, e) from None
    if not entries:
        raise CarbonFormatError(f"{who}: dictionary meta file {storage.uri(meta_path)} holds no entries", shown)
    data = _read_whole(storage, path, MAX_DICTIONARY_BYTES, who)
    view = memoryview(data)
    values: list[bytes | None] = [None]  # surrogate 0 is never assigned
    end = prev_max = 0
    for k, meta in enumerate(entries):
        # each load's chunks follow the previous load's exactly; a gap or overlap means a torn file
        if meta.start_offset != end or not meta.start_offset <= meta.end_offset <= len(data):
            raise CarbonFormatError(
                f"{who}: load {k} claims bytes {meta.start_offset}..{meta.end_offset} of a {len(data)}-byte "
                f"file whose previous load ends at {end}",
                shown,
                meta.start_offset,
            )
        pos, chunks, before = meta.start_offset, 0, len(values)
        while pos < meta.end_offset:
            # slicing at the load's end offset keeps a corrupt chunk from reading into the next load
            try:
                chunk, used = ColumnDictionaryChunk.from_bytes(view[pos : meta.end_offset], shown, pos)
            except CarbonFormatError as e:
                raise _prefixed(who, e) from None
            values.extend(chunk.values or [])
            chunks += 1
            pos += used
        added = len(values) - before
        if chunks != meta.chunk_count or meta.max_surrogate_key != prev_max + added:
            raise CarbonFormatError(
                f"{who}: load {k} holds {chunks} chunks with {added} values, its meta says {meta.chunk_count} "
                f"chunks and surrogates up to {meta.max_surrogate_key} (previous load ended at {prev_max})",
                shown,
                meta.start_offset,
            )
        end, prev_max = meta.end_offset, meta.max_surrogate_key
    arr = pa.array(values, pa.binary())
    arr = pc.if_else(pc.equal(arr, pa.scalar(NULL_MEMBER, pa.binary())), pa.scalar(None, pa.binary()), arr)
    try:
        out = arr.cast(pa.string())
        out.validate(full=True)
    except (pa.ArrowInvalid, ValueError) as e:
        bad = _first_invalid_utf8(values)
        raise CarbonFormatError(f"{who}: surrogate {bad} is not valid UTF-8: {e}", shown) from None
    return out


def _prefixed(who: str, e: CarbonFormatError) -> CarbonFormatError:
    """The thrift codec's error with the column named in front; its file and offset kept."""
    err = CarbonFormatError(f"{who}: {e.args[0]}")
    err.path, err.offset = e.path, e.offset
    return err


def _first_invalid_utf8(values: list[bytes | None]) -> int:
    for i, v in enumerate(values):
        if v is not None:
            try:
                v.decode("utf-8")
            except UnicodeDecodeError:
                return i
    return -1
