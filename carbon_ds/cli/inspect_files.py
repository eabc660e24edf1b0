"""Human-readable dump of a table folder or a .carbondata / .carbonindex / .carbonindexmerge file: the tool
for a file that looks wrong."""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Iterator

from carbon_ds.errors import CarbonFormatError, CarbonTableError
from carbon_ds.format import stream, v3_file
from carbon_ds.format.pages import direct_dictionary, encoder_meta
from carbon_ds.format.thrift.structs import (
    BlockIndex,
    BlockletMinMaxIndex,
    ColumnSchema,
    DataChunk3,
    DataType,
    Encoding,
    FileFooter3,
    FileHeader,
    IndexHeader,
    MergedBlockIndex,
    MergedBlockIndexHeader,
)
from carbon_ds.fs import Storage, basename
from carbon_ds.readers.column_stats import decoded_value
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.schema import guards
from carbon_ds.table.meta.status import status_versions
from carbon_ds.table.read.snapshot import bare_files
from carbon_ds.table.table import CarbonTable


def _enc(codes: list[int] | None) -> str:
    names = []
    for c in codes or []:
        try:
            names.append(Encoding(c).name)
        except ValueError:
            names.append(f"UNKNOWN({c})")
    return ",".join(names) or "-"


def _type(c: ColumnSchema) -> str:
    try:
        name = DataType(c.data_type).name
    except ValueError:
        name = f"UNKNOWN({c.data_type})"
    if c.data_type == DataType.DECIMAL:
        name += f"({c.precision},{c.scale})"
    return name


def _bytes(b: bytes, limit: int = 24) -> str:
    b = bytes(b)
    if b and all(32 <= x < 127 for x in b):
        text = b.decode("ascii")
        return repr(text if len(text) <= limit else text[:limit] + "...")
    h = b.hex()
    return "0x" + (h if len(h) <= 2 * limit else h[: 2 * limit] + "...")


def _shown(column: ColumnSchema | None, b: bytes) -> str:
    """A min/max value decoded by the column's type (numbers, dates, timestamps, strings), else its bytes."""
    value = decoded_value(column, b) if column is not None else None
    if value is None or isinstance(value, bytes):
        return _bytes(b)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ").replace("+00:00", "Z")
    if isinstance(value, str):
        return repr(value if len(value) <= 24 else value[:24] + "...")
    return str(value)


def _minmax(mm: BlockletMinMaxIndex | None, i: int, column: ColumnSchema | None = None) -> str:
    if mm is None or i >= len(mm.min_values or []):
        return "min/max: none"
    present = mm.min_max_presence[i] if mm.min_max_presence and i < len(mm.min_max_presence) else True
    if not present:
        return "min/max: absent (must scan)"
    return f"min={_shown(column, mm.min_values[i])} max={_shown(column, mm.max_values[i])}"


def _columns(cols: list[ColumnSchema]) -> Iterator[str]:
    for i, c in enumerate(cols):
        kind = "dimension" if c.dimension else "measure"
        extra = f" children={c.num_child}" if c.num_child else ""
        if c.data_type == DataType.TIMESTAMP and Encoding.DIRECT_DICTIONARY in (c.encoders or []):
            tk = direct_dictionary.current()
            extra += (f" (direct-dictionary keys: (key - 2) * {tk.granularity_ms} + {tk.cutoff_ms} ms, key 1 null; "
                      "see set_timestamp_keys)")
        yield (
            f"  [{i}] {c.column_name}: {_type(c)} {kind} ordinal={c.schemaOrdinal} "
            f"encoders={_enc(c.encoders)}{extra}"
        )


def describe_data_file(path: str, pages: bool = True) -> Iterator[str]:
    storage, p = Storage.for_path(path)
    data = storage.read_bytes(p)
    if len(data) < 8:
        raise CarbonFormatError(f"file of {len(data)} bytes is too short for a CarbonData V3 file", path, 0)
    footer_at = struct.unpack(">q", data[-8:])[0]
    try:
        header, hlen = FileHeader.from_bytes(data, path)
    except CarbonFormatError:
        if 0 <= footer_at < len(data) - 8:  # V1/V2 files have no header: name their format instead
            v3_file.check_footer(data[footer_at:-8], path, footer_at)
        raise
    if stream.is_stream_header(header):
        yield from _describe_stream(data, path, header)
        return
    if not hlen <= footer_at < len(data) - 8:
        raise CarbonFormatError(f"footer offset {footer_at} outside the file body [{hlen}, {len(data) - 8})", path,
                                len(data) - 8)
    footer, _ = FileFooter3.from_bytes(data[footer_at:-8], path, footer_at)
    yield f"file: {path}"
    yield f"size: {len(data)} bytes; header {hlen} bytes; footer at {footer_at}"
    yield (
        f"header: version={header.version} time_stamp={header.time_stamp} "
        f"compressor={header.compressor_name or '(per page)'} footer_present={header.is_footer_present}"
    )
    yield f"columns ({len(header.column_schema)}, physical order):"
    yield from _columns(header.column_schema)
    yield f"footer: rows={footer.num_rows} blocklets={len(footer.blocklet_info_list3 or [])} is_sort={footer.is_sort}"
    for k, v in sorted((footer.extra_info or {}).items()):
        yield f"  extra_info {k} = {v}"
    cols = header.column_schema
    for b, info in enumerate(footer.blocklet_info_list3 or []):
        idx = footer.blocklet_index_list[b] if b < len(footer.blocklet_index_list) else None
        mm = idx.min_max_index if idx else None
        yield f"blocklet {b}: rows={info.num_rows} pages={info.number_number_of_pages} rows/page={info.row_count_in_page}"
        for ci, (off, ln) in enumerate(zip(info.column_data_chunks_offsets, info.column_data_chunks_length, strict=False)):
            name = cols[ci].column_name if ci < len(cols) else f"#{ci}"
            col = cols[ci] if ci < len(cols) else None
            yield f"  column {name}: chunk at {off} (+{ln} bytes)  {_minmax(mm, ci, col)}"
            if not pages:
                continue
            if not 0 <= off <= off + ln <= len(data):
                yield f"    chunk range {off}+{ln} lies outside the file"
                continue
            chunk, _ = DataChunk3.from_bytes(data[off : off + ln], path, off)
            if chunk.local_dictionary is not None:
                yield (
                    f"    local dictionary: {len(chunk.local_dictionary.dictionary_data)} bytes, "
                    f"encoders={_enc(chunk.local_dictionary.dictionary_meta.encoders)}"
                )
            for pi, page in enumerate(chunk.data_chunk_list):
                start = off + ln + (chunk.page_offset[pi] if chunk.page_offset and pi < len(chunk.page_offset) else 0)
                meta = ""
                if page.encoder_meta:
                    try:
                        m = encoder_meta.parse(page.encoder_meta[0])
                        meta = f" stored={encoder_meta.MetaType(m.store_type).name} values=[{m.min}, {m.max}]"
                        if m.decimal_count:
                            meta += f" decimals={m.decimal_count}"
                    except (CarbonFormatError, ValueError):
                        meta = " meta=unreadable"
                yield (
                    f"    page {pi}: at {start} data={page.data_page_length} rowid={page.rowid_page_length or 0} "
                    f"rle={page.rle_page_length or 0} rows={page.numberOfRowsInpage} "
                    f"codec={page.chunk_meta.compressor_name or 'snappy'} encoders={_enc(page.encoders)}{meta} "
                    f"page {_minmax(page.min_max, 0, col)}"
                )


def _describe_stream(data: bytes, path: str, header: FileHeader) -> Iterator[str]:
    _h, found = stream.blocklets(data, path)
    yield f"file: {path}"
    yield (f"ROW_V1 stream file (a Streaming segment's row format): {len(data)} bytes, "
           f"compressor={header.compressor_name or 'snappy'}, {len(found)} complete blocklet(s)")
    yield f"columns ({len(header.column_schema)}, row order):"
    yield from _columns(list(header.column_schema))
    for i, (at, bh, _start, length) in enumerate(found):
        yield (f"blocklet {i}: at {at} rows={bh.blocklet_info.num_rows} "
               f"bytes={bh.blocklet_length} compressed={length}")
    end = found[-1][2] + found[-1][3] if found else None
    if end is not None and end < len(data):
        yield f"trailing {len(data) - end} bytes: an unfinished append (not read)"


def describe_index_file(path: str) -> Iterator[str]:
    storage, p = Storage.for_path(path)
    data = storage.read_bytes(p)
    yield f"file: {path} ({len(data)} bytes)"
    if p.endswith(".carbonindexmerge"):
        head, n = MergedBlockIndexHeader.from_bytes(data, path)
        body, _ = MergedBlockIndex.from_bytes(data[n:], path, n)
        yield f"merged index of {len(head.file_names)} index files"
        for name, blob in zip(head.file_names, body.fileData, strict=False):
            yield f"-- {name}"
            yield from ("  " + line for line in _index_entries(bytes(blob), f"{path}:{name}"))
        return
    yield from _index_entries(data, path)


def _index_entries(data: bytes, path: str) -> Iterator[str]:
    header, pos = IndexHeader.from_bytes(data, path)
    v3_file.check_index_version(header.version, path)
    yield f"index header: version={header.version} is_sort={header.is_sort} schema_time_stamp={header.schema_time_stamp}"
    yield from _columns(header.table_columns)
    n = 0
    while pos < len(data):
        entry, used = BlockIndex.from_bytes(data[pos:], path, pos)
        pos += used
        mm = entry.block_index.min_max_index if entry.block_index else None
        rows = entry.blocklet_info.num_rows if entry.blocklet_info else "?"
        yield (
            f"entry {n}: file={entry.file_name} file_rows={entry.num_rows} blocklet_rows={rows} "
            f"footer_offset={entry.offset} file_size={entry.file_size}"
        )
        for ci, c in enumerate(header.table_columns):
            yield f"  {c.column_name}: {_minmax(mm, ci, c)}"
        n += 1


def describe_table(path: str) -> Iterator[str]:
    """A table folder: its schema, properties, segments and data files."""
    table = CarbonTable.open(path)
    yield f"table {table.uri}"
    yield "schema:"
    for f in table.schema:
        marks = [m for m, on in (("sort column", f.name in table.sort_columns),
                                 ("partition column", f.name in table.partition_columns)) if on]
        yield f"  {f.name}: {f.type}" + (f"  ({', '.join(marks)})" if marks else "")
    for k, v in sorted(table.properties.items()):
        yield f"property {k} = {v}"
    live = table.live_status()
    yield f"segment list: {table.storage.uri(live.path)} (live: {live.source})"
    if live.versioned:
        others = [v for v in status_versions.versions(table.storage, table.path) if str(v) != live.version]
        yield (f"  versioned table status: version {live.version}; {len(others)} other version file(s)"
               + (f", newest other {others[-1]}" if others else ""))
    for reason in guards.write_blockers(table.info):
        yield f"writes refused: {reason}"
    yield "segments:"
    yield from ("  " + line for line in table.show_segments().splitlines())
    try:
        files = table.files()
    except CarbonTableError as e:  # e.g. streaming segments: say why instead of failing the whole dump
        yield f"data files: not listed: {e}"
        return
    yield "data files of readable segments:"
    for f in files:
        yield f"  segment {f.segment_id}: {f.path} ({f.size:,} bytes, {f.file_format})"
    yield f"rows: {table.count():,}"


def describe_folder(path: str) -> Iterator[str]:
    """A folder without Metadata/: its .carbondata files, or what it holds instead."""
    storage, folder, files = bare_files(path)
    if not files:
        others = sorted({basename(f.path).rsplit(".", 1)[-1] for f in storage.list(folder, recursive=True)
                         if "." in basename(f.path)})
        found = f"files ending in {', '.join('.' + o for o in others)}" if others else "no files"
        raise CarbonFormatError(f"{path} is not a CarbonData table (no Metadata/schema) and holds no "
                                f".carbondata files ({found})")
    yield f"folder {storage.uri(folder)}: {len(files)} .carbondata file(s)"
    for p, size in files:
        yield f"  {p} ({size:,} bytes)"


def describe(path: str, pages: bool = True) -> Iterator[str]:
    """Lines describing a data file, an index file, a table folder or a folder of data files.

    Raises:
        CarbonFormatError: ``path`` does not exist or is not CarbonData.
    """
    storage, fs_path = Storage.for_path(path)
    if not storage.exists(fs_path):
        raise CarbonFormatError(f"{path} does not exist")
    if storage.is_dir(fs_path):
        return describe_table(path) if TableHandle.exists(path) else describe_folder(path)
    if path.endswith((".carbonindex", ".carbonindexmerge")):
        return describe_index_file(path)
    if not path.endswith(".carbondata") and not _looks_like_data_file(storage, fs_path):
        raise CarbonFormatError(f"{path} is not a CarbonData file: expected a .carbondata, .carbonindex or "
                                ".carbonindexmerge file, or a table folder")
    return describe_data_file(path, pages)


def _looks_like_data_file(storage: Storage, path: str) -> bool:
    """Whether a file without the usual name starts like a V3 data file (a thrift FileHeader)."""
    try:
        with storage.open(path) as f:
            head = f.read(1 << 20)
        FileHeader.from_bytes(head, path, 0)
        return True
    except (CarbonFormatError, OSError, ValueError):
        return False
