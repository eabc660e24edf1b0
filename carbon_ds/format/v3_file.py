"""One CarbonData V3 data file's bytes: its tail, head and footer read and checked on opening, column chunks
and their pages read on demand and decoded to Arrow.

Every offset and length taken from the file is checked against the file size before it is used, so a corrupt
file raises CarbonFormatError instead of reading or allocating wildly. The reader users see
(readers.carbon_file.CarbonDataFile) opens the file through a Storage and hands the open handle here.

carbon-ds reads format V3 only, as CarbonData 2.x does (its V1/V2 readers were removed in 2.0,
CARBONDATA-3650); files of formats V1 and V2 (CarbonData 0.x-1.2) are recognised so they are refused by name.
They are told apart by their first thrift field:

* a V1/V2 data file has no file header and ends in a ``FileFooter`` whose field 1 is the i32 ``version``
  (0 before CarbonData 1.0 numbered the formats, which ColumnarFormatVersion.valueOf reads as V1); V3's
  ``FileFooter3`` starts with the i64 ``num_rows``. In thrift's compact protocol the first field header is
  then 0x15 (field 1, i32), not 0x16 (field 1, i64);
* a V1/V2 ``.carbonindex`` has an ``IndexHeader`` whose ``version`` is 1 or 2 (CarbonMetadataUtil.getIndexHeader
  writes the file format's number there).
"""

from __future__ import annotations

import bisect
import posixpath
import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonFormatError, CarbonSchemaError
from carbon_ds.format.arrow_types import ColumnNode, arrow_type
from carbon_ds.format.column_view import shared_view
from carbon_ds.format.dictionary import dictionary_path, is_global_dictionary, read_global_dictionary, table_root
from carbon_ds.format.pages import compress, direct_dictionary
from carbon_ds.format.pages.chunk_decode import decode_pages
from carbon_ds.format.pages.chunk_header import parse_data_chunk3
from carbon_ds.format.pages.complex_nulls import COMPLEX_NULLS_KEY, all_fields_null, drop_rows, one_null_element_rows
from carbon_ds.format.pages.decode import (
    MAX_PAGE_ROWS,
    NULL_BITSETS_KEY,
    Page,
    decode_page,
    decode_parent_page,
    local_dictionary,
    null_mask,
)
from carbon_ds.format.pages.page_checks import STATS_CHECKED
from carbon_ds.format.stream import SYNC_MARKER
from carbon_ds.format.thrift.codec import CompactReader
from carbon_ds.format.thrift.parse_cache import BytesCache
from carbon_ds.format.thrift.structs import (
    BlockletInfo3,
    ColumnSchema,
    DataChunk3,
    DataType,
    Encoding,
    FileFooter3,
    FileHeader,
)
from carbon_ds.fs import Storage

_I32_FIELD_1 = 0x15


def footer_version(footer: bytes) -> int | None:
    """The ``version`` of a V1/V2 ``FileFooter`` (these bytes start one), None for anything else."""
    if len(footer) < 2 or footer[0] != _I32_FIELD_1:
        return None
    raw, shift = 0, 0
    for b in footer[1:6]:
        raw |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    return (raw >> 1) ^ -(raw & 1)  # zigzag


def refusal(what: str, version: int, path: str, offset: int | None) -> CarbonFormatError:
    """The error for an old file: ``what`` ("file", "index file") of format ``version`` (0 counts as V1)."""
    name = 1 if version == 0 else version
    return CarbonFormatError(
        f"CarbonData format V{name} {what} (version field {version}, written by CarbonData 0.x-1.2): carbon-ds reads "
        "format V3 only, as CarbonData 2.x does (its V1/V2 readers were removed in 2.0, CARBONDATA-3650); rewrite "
        "the segment with CarbonData 1.3-1.6 (e.g. ALTER TABLE ... COMPACT 'MAJOR') to read it", path, offset)


def check_footer(footer: bytes, path: str, offset: int) -> None:
    """Raise the named refusal when ``footer`` is a V1/V2 ``FileFooter``."""
    version = footer_version(footer)
    if version is not None and 0 <= version <= 2:
        raise refusal("file", version, path, offset)


def check_index_version(version: int | None, path: str) -> None:
    """Raise the named refusal for an ``IndexHeader`` of format V1/V2."""
    if version is not None and 0 <= version <= 2:
        raise refusal("index file", version, path, 0)


class _KeptPages:
    """The kept pages of a pruned read of one column, already decoded as one array."""

    __slots__ = ("array",)

    def __init__(self, array: pa.Array):
        self.array = array


_NO_BYTES = memoryview(b"")  # a page a pruned read skips: never decoded
MIN_CHUNK_BYTES = 8  # a column chunk's DataChunk3 header with one page header: never fewer bytes
DEFAULT_PAGE_ROWS = 32000  # CarbonData's page size when a file does not record per-page row counts
# A file up to this size is read in one call when opened, and its footer, header and chunks are sliced from
# those bytes: a small file otherwise costs seven reads (tail, footer, header, a chunk per column), each a
# system call and Python around it, more than reading the rest of its bytes.
WHOLE_FILE_BYTES = 1 << 20

# Parsed footers, headers and column-chunk headers by their exact bytes: a query re-opens the same files
# query after query (Spark reuses its Python workers), and parsing a chunk's page headers or a footer of many
# blocklets costs more than decoding a point lookup's pages. Within 16 MiB of keys (parsed objects take
# roughly ten times their bytes); footers over 4 MiB are parsed every time rather than kept. A small file
# keeps about 0.8 KiB (footer, header, chunk headers): 8 MiB held a little less than 10,000 such files, so a
# repeated scan of 10,000 segments parsed every one again (least recently used first out); with 16 MiB the
# warm full read of 10,000 segments took 12-14 s instead of 25-31 s, at the same process size.
_PARSED = BytesCache(budget_bytes=16 << 20, max_item_bytes=4 << 20)


def _parse_cached(kind, data: bytes, path: str, offset: int):
    """``kind.from_bytes(data)``'s struct, from the cache when these bytes were parsed before."""
    return _PARSED.get_or_parse(data, lambda: kind.from_bytes(data, path, offset)[0], kind=kind)


def _parse_chunk_header(data: bytes, path: str, offset: int) -> DataChunk3:
    """A column chunk's header, from the cache or by the compiled pass (a first read of a column parses
    dozens of page headers)."""
    return _PARSED.get_or_parse(data, lambda: parse_data_chunk3(data, path, offset), kind=DataChunk3)


_HEADER_AND_COLUMNS = (FileHeader, "column list bytes")


def _parse_header(data: bytes, path: str) -> tuple[FileHeader, bytes | None]:
    """A file header and the stored bytes of its column list (files whose lists have the same bytes share
    one view of them: format.column_view.shared_view)."""
    header = FileHeader.from_bytes(data, path, 0)[0]
    span = CompactReader(data, path, 0).field_span(2)
    return header, bytes(data[span[0]:span[1]]) if span is not None else None


class V3File:
    """The bytes of one open V3 data file: footer and header parsed and checked on construction, column
    chunks read on demand. One object serves every thread decoding (blocklet, column) pieces of the file."""

    def __init__(self, file: pa.NativeFile, path: str, storage: Storage, inner: str,
                 table_columns: list[ColumnSchema] | None = None):
        """``file``: the open handle (``Storage.open(inner)``), closed by ``close``; ``table_columns``: present
        the file in a table's current columns (see format.column_view)."""
        self.path = path
        self._file = file
        self._storage = storage
        self._timestamp_keys = direct_dictionary.current()  # fixed for the file's life, as Java's are per JVM
        self._inner = inner
        self._table_columns = table_columns
        self.absent: list[ColumnSchema] = []  # table columns this file does not hold (read as their default)
        self.virtual: dict[int, pa.Scalar] = {}
        # global dictionaries are table-wide and read whole: load each once per file object
        self._global_dicts: dict[tuple[str, str], pa.Array] = {}
        # (blocklet, column) -> chunk bytes (remote storage), place and parsed DataChunk3 kept by
        # ``chunk_header(hold=True)`` (page pruning reads the filter columns' headers first) for the
        # decode that follows
        self._held: dict[tuple[int, int], tuple[memoryview | None, int, int, int, DataChunk3]] = {}
        self._whole: bytes | None = None  # every byte of a small file (WHOLE_FILE_BYTES), read on opening
        self._open()

    # ------------------------------------------------------------------ opening
    def _read(self, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise CarbonFormatError(
                f"range {offset}+{length} lies outside the file of {self.size} bytes", self.path, offset
            )
        whole = self._whole
        data = whole[offset : offset + length] if whole is not None else self._file.read_at(length, offset)
        if len(data) != length:
            raise CarbonFormatError(f"short read: {len(data)} of {length} bytes", self.path, offset)
        return data

    def _open(self) -> None:
        self.size = self._file.size()
        if self.size < 16:
            raise CarbonFormatError(f"file of {self.size} bytes is too short for CarbonData V3", self.path, 0)
        if self.size <= WHOLE_FILE_BYTES:
            self._whole = self._read(0, self.size)
        (footer_at,) = struct.unpack(">q", self._read(self.size - 8, 8))
        if 0 <= footer_at < self.size - 8:  # a V1/V2 file of no rows has its footer at 0
            check_footer(self._read(footer_at, min(8, self.size - 8 - footer_at)), self.path, footer_at)
        if not 0 < footer_at < self.size - 8:
            if SYNC_MARKER in self._read(0, min(self.size, 4096)):
                raise CarbonFormatError("a ROW_V1 stream file (CarbonData Streaming segment): it has no footer and "
                                        "is read through its table", self.path, 0)
            # the last 8 bytes of a whole file give where its footer starts: anything else means they are not
            # the end the writer wrote, the usual cause being a copy or upload cut short
            raise CarbonFormatError(
                f"truncated or not a CarbonData V3 file: expected its last 8 bytes to give the footer offset "
                f"(between 1 and {self.size - 9}), found {footer_at}; the file is {self.size} bytes",
                self.path, self.size - 8)
        self.footer_at = footer_at
        tail = self._read(footer_at, self.size - 8 - footer_at)
        self._refuse_blocklets_beyond_the_body(tail, footer_at)
        self.footer = _parse_cached(FileFooter3, tail, self.path, footer_at)
        self._blocklets: list[BlockletInfo3] = list(self.footer.blocklet_info_list3 or [])
        extra = self.footer.extra_info or {}
        self._exact_nulls = extra.get(NULL_BITSETS_KEY) == "exact"
        # CarbonData's null arrays and structs (format/pages/complex_nulls.py): all files but older carbon-ds ones
        self._carbondata_complex_nulls = not self._exact_nulls or extra.get(COMPLEX_NULLS_KEY) == "carbondata"
        starts = [o for b in self._blocklets for o in (b.column_data_chunks_offsets or [])]
        header_end = min(starts) if starts else footer_at
        if not 0 < header_end <= footer_at:
            raise CarbonFormatError(
                f"first column chunk offset {header_end} is outside the file body", self.path, footer_at
            )
        head = self._read(0, header_end)
        self.header, columns_bytes = _PARSED.get_or_parse(head, lambda: _parse_header(head, self.path),
                                                          kind=_HEADER_AND_COLUMNS)
        if self.header.version != 3:
            raise CarbonFormatError(f"format version {self.header.version} is not supported (only V3)", self.path, 0)
        self.columns: list[ColumnSchema] = list(self.header.column_schema)
        self._check_footer(header_end)
        self.num_rows = int(self.footer.num_rows)
        self.num_blocklets = len(self._blocklets)
        self.compressor = self._compressor_name()
        try:  # in the table's current columns when opened with them
            v = shared_view(columns_bytes, self.columns, self._table_columns)
        except (CarbonSchemaError, ValueError) as e:
            raise CarbonFormatError(f"file header schema is unusable: {e}", self.path, 0) from None
        self.columns, self.absent, self.nodes, self.virtual, self.schema = (
            v.columns, v.absent, v.nodes, v.virtual, v.schema)
        self._index = {id(c): i for i, c in enumerate(self.columns)}

    def _refuse_blocklets_beyond_the_body(self, footer: bytes, footer_at: int) -> None:
        """Refuse a footer declaring more blocklets than the bytes before it could hold, from the list's header
        (a blocklet has at least one column chunk, whose header takes at least MIN_CHUNK_BYTES), before the
        footer is parsed: a footer repeating its blocklet 200,000 times would otherwise be 20 MB of objects."""
        if len(footer) < 1 << 16:
            return  # a few thousand blocklets at most: parsed and checked one by one
        for field in (3, 4):  # blocklet_index_list, then blocklet_info_list3 (reached past a list that passed)
            try:
                declared = CompactReader(footer, self.path, footer_at).declared_length(field)
            except CarbonFormatError:
                return  # the parser says what is wrong
            if declared is not None and declared * MIN_CHUNK_BYTES > footer_at:
                raise CarbonFormatError(f"footer declares {declared} blocklets, more than the {footer_at} bytes "
                                        f"before it can hold (a blocklet takes at least {MIN_CHUNK_BYTES} bytes)",
                                        self.path, footer_at)

    def _check_footer(self, header_end: int) -> None:
        ncols = len(self.columns)
        total = 0
        for b, info in enumerate(self._blocklets):
            offs, lens = info.column_data_chunks_offsets or [], info.column_data_chunks_length or []
            if len(offs) != ncols or len(lens) != ncols:
                raise CarbonFormatError(
                    f"blocklet {b} lists {len(offs)} column chunks for {ncols} columns", self.path, self.footer_at
                )
            for o, n in zip(offs, lens, strict=True):
                if not (header_end <= o and n >= 0 and o + n <= self.footer_at):
                    raise CarbonFormatError(
                        f"blocklet {b} column chunk {o}+{n} lies outside the data region", self.path, self.footer_at
                    )
            if info.num_rows < 0:
                raise CarbonFormatError(f"blocklet {b} has {info.num_rows} rows", self.path, self.footer_at)
            self._check_pages(b, info)
            total += info.num_rows
        # the footer's shape as data: what a reader checks planned claims and deletes against, with no call back
        self.blocklet_row_counts: tuple[int, ...] = tuple(int(info.num_rows) for info in self._blocklets)
        self.page_row_counts: tuple[tuple[int, ...], ...] = tuple(_rows_of_pages(info) for info in self._blocklets)
        if total != self.footer.num_rows:
            raise CarbonFormatError(
                f"blocklets hold {total} rows but the footer says {self.footer.num_rows}", self.path, self.footer_at
            )
        starts = [o for b in self._blocklets for o in b.column_data_chunks_offsets]
        self._chunk_starts = sorted(set(starts))
        if len(self._chunk_starts) != len(starts):
            # every column chunk of every blocklet is written once: a shared offset is a blocklet listed twice
            # (or a damaged offset), and reading it would return the same rows again
            seen: dict[int, tuple[int, int]] = {}
            for b, info in enumerate(self._blocklets):
                for c, o in enumerate(info.column_data_chunks_offsets):
                    if o in seen:
                        b0, c0 = seen[o]
                        raise CarbonFormatError(
                            f"footer lists blocklet {b} column {c} at offset {o}, where blocklet {b0} column {c0} "
                            "lies: a column chunk is stored once, so the footer is damaged", self.path, self.footer_at)
                    seen[o] = (b, c)

    def _check_pages(self, b: int, info: BlockletInfo3) -> None:
        """The footer's page counts against its row counts and the file: a blocklet has 1 to ``rows`` pages of at
        most MAX_PAGE_ROWS rows each (their counts, when given, add up to its rows), and no more pages than the
        file has bytes."""
        rows, pages, per_page = info.num_rows, info.number_number_of_pages, info.row_count_in_page
        where = f"blocklet {b} of {rows} rows"
        if pages is not None and (pages < 0 or pages > max(rows, 1) or 0 < pages and pages * MAX_PAGE_ROWS < rows):
            raise CarbonFormatError(f"{where} has {pages} pages in the footer, expected 1 to {max(rows, 1)} pages "
                                    f"of at most {MAX_PAGE_ROWS} rows", self.path, self.footer_at)
        if pages and pages > self.footer_at:
            raise CarbonFormatError(f"{where}: {pages} pages cannot fit in a file of {self.size} bytes",
                                    self.path, self.footer_at)
        if per_page:
            if pages is not None and pages and len(per_page) != pages:
                raise CarbonFormatError(f"{where}: the footer gives {len(per_page)} page row counts for {pages} "
                                        "pages", self.path, self.footer_at)
            if sum(per_page) != rows or min(per_page) < 0 or max(per_page) > MAX_PAGE_ROWS:
                raise CarbonFormatError(f"{where}: the footer's page row counts add up to {sum(per_page)} "
                                        f"(each must be 0 to {MAX_PAGE_ROWS})", self.path, self.footer_at)

    def _compressor_name(self) -> str:
        if self.header.compressor_name:
            try:
                return compress.normalize(self.header.compressor_name)
            except CarbonFormatError as e:
                raise CarbonFormatError(f"file header: {e}", self.path, 0) from None
        base = posixpath.basename(self.path).lower()
        for name in compress.COMPRESSORS:
            if base.endswith(f".{name}.carbondata"):
                return name
        return "snappy"  # files before 1.5 did not record it anywhere: they were always snappy

    def close(self) -> None:
        self._whole = None
        self._file.close()

    # ------------------------------------------------------------------ metadata
    def footer_blocklet(self, i: int) -> BlockletInfo3:
        """The footer's description of blocklet ``i``; an IndexError naming the file when out of range."""
        if not 0 <= i < len(self._blocklets):
            raise IndexError(f"blocklet {i} out of range: {self.path} has {len(self._blocklets)}")
        return self._blocklets[i]

    def column_nodes(self, columns: list[str] | None) -> list[ColumnNode]:
        """The column trees of ``columns`` (names in any case; None: every column), or a CarbonSchemaError
        listing the columns there are."""
        if columns is None:
            return list(self.nodes)
        by_name = {n.name.lower(): n for n in self.nodes}
        out = []
        for c in columns:
            node = by_name.get(str(c).lower())
            if node is None:
                raise CarbonSchemaError(
                    f"unknown column {c!r} in {self.path}; available: {', '.join(self.schema.names)}"
                )
            out.append(node)
        return out

    # ------------------------------------------------------------------ column chunks
    def _chunk_span(self, b: int, c: int) -> tuple[int, int, int]:
        """Where column ``c`` of blocklet ``b`` lies: its offset, the offset where it ends, its header size."""
        info = self.footer_blocklet(b)
        if not 0 <= c < len(self.columns):
            raise IndexError(f"column index {c} out of range: {self.path} has {len(self.columns)} columns")
        start = info.column_data_chunks_offsets[c]
        k = bisect.bisect_right(self._chunk_starts, start)
        end = self._chunk_starts[k] if k < len(self._chunk_starts) else self.footer_at
        hlen = info.column_data_chunks_length[c]
        if not 0 < hlen <= end - start:
            raise CarbonFormatError(f"column {self.columns[c].column_name!r}: chunk header of {hlen} bytes in a "
                                    f"chunk of {end - start}", self.path, start)
        return start, end, hlen

    def _chunk_at(self, b: int, c: int, whole: bool) -> tuple[memoryview | None, int, int, int, DataChunk3]:
        """(the chunk's bytes when ``whole``, else None; its offset, end and header size; its header). Local
        files read only the header unless ``whole``: a pruned read then reads just its pages."""
        start, end, hlen = self._chunk_span(b, c)
        if whole:
            buf = memoryview(self._read(start, end - start))
            head = bytes(buf[:hlen])
        else:
            buf, head = None, self._read(start, hlen)
        pages = self.footer_blocklet(b).number_number_of_pages
        declared = _declared_pages(head)
        if pages and declared is not None and declared != pages:
            # refused from the list's header, before its page headers become objects (a few KB each)
            raise CarbonFormatError(f"column {self.columns[c].column_name!r} of blocklet {b} has {declared} page "
                                    f"headers, the footer says {pages} pages", self.path, start)
        return buf, start, end, hlen, _parse_chunk_header(head, self.path, start)

    def chunk_header(self, blocklet: int, column_index: int, hold: bool = False) -> DataChunk3:
        """The DataChunk3 header of a column chunk; with ``hold`` its header (and on remote storage its
        bytes) are kept for the next decode of that chunk, which then neither reads nor parses them again
        (``drop_held`` drops them)."""
        held = self._chunk_at(blocklet, column_index, whole=hold and not self._storage.is_local)
        if hold:
            self._held[(blocklet, column_index)] = held
        return held[-1]

    def drop_held(self, blocklet: int) -> None:
        """Drop the chunks of ``blocklet`` held by ``chunk_header(hold=True)`` and not decoded since."""
        for key in [k for k in list(self._held) if k[0] == blocklet]:
            self._held.pop(key, None)

    def _pages(self, b: int, c: int, expected: list[int] | None, need: set[int] | None = None
               ) -> tuple[DataChunk3, list[Page | None]]:
        """The chunk's header and its pages; with ``need`` only those pages' bytes are read (local files)
        and only they are returned, the others are None."""
        held = self._held.pop((b, c), None)
        if held is None:
            held = self._chunk_at(b, c, whole=need is None or not self._storage.is_local)
        buf, start, end, hlen, chunk = held
        col = self.columns[c]
        info = self.footer_blocklet(b)
        pages_meta = chunk.data_chunk_list or []
        n = len(pages_meta)
        if expected is not None and len(expected) != n:
            raise CarbonFormatError(
                f"column {col.column_name!r} has {n} pages where its parent has {len(expected)}", self.path, start
            )
        if expected is None and info.number_number_of_pages and n != info.number_number_of_pages:
            raise CarbonFormatError(
                f"column {col.column_name!r} of blocklet {b} has {n} page headers, the footer says "
                f"{info.number_number_of_pages} pages", self.path, start)
        pos = 0
        pages = []
        remaining = info.num_rows
        # stored page statistics are checked for top-level plain columns: not global-dictionary surrogate
        # keys (direct-dictionary DATE/TIMESTAMP keys are values), not complex children
        encoders = col.encoders or []
        check = (expected is None and col.data_type in STATS_CHECKED
                 and (Encoding.DICTIONARY not in encoders or Encoding.DIRECT_DICTIONARY in encoders))
        spans = []
        for j, dc2 in enumerate(pages_meta):
            plen = _at(chunk.page_length, j)
            if plen is None:
                plen = (dc2.data_page_length or 0) + (dc2.rowid_page_length or 0) + (dc2.rle_page_length or 0)
            poff = _at(chunk.page_offset, j)
            poff = pos if poff is None else poff
            pos = poff + plen
            lo = hlen + poff
            if poff < 0 or plen < 0 or lo + plen > end - start:
                raise CarbonFormatError(
                    f"column {col.column_name!r} page {j} ({poff}+{plen}) runs past its chunk", self.path, start
                )
            spans.append((lo, plen))
        raws = self._page_bytes(buf, start, spans, need)
        for j, dc2 in enumerate(pages_meta):
            lo, plen = spans[j]
            rows = dc2.numberOfRowsInpage
            if expected is not None:
                # a complex child's row count comes from its parent's element counts: 2.0 writes the
                # parent's row count into the child's numberOfRowsInpage, 1.6 the child's own
                rows = expected[j]
            if rows is None:
                rows = _at(info.row_count_in_page, j)
            if rows is None:
                rows = remaining if n == 1 else min(DEFAULT_PAGE_ROWS, remaining)
            elif expected is None and not 0 <= rows <= remaining:
                # checked before any page is decoded: the pages' rows must add up to the blocklet's
                raise CarbonFormatError(
                    f"column {col.column_name!r} page {j} of blocklet {b} holds {rows} rows, but only {remaining} "
                    f"of the footer's {info.num_rows} are left for it", self.path, start)
            remaining -= rows
            if need is not None and j not in need:
                pages.append(None)  # no bytes read: never decoded
                continue
            pages.append(
                Page(col, dc2, raws[j], int(rows), self.path, start + lo, exact_nulls=self._exact_nulls,
                     check_stats=check, timestamp_keys=self._timestamp_keys)
            )
        if expected is None and remaining:
            raise CarbonFormatError(
                f"column {col.column_name!r} of blocklet {b}: its pages hold {info.num_rows - remaining} rows, the "
                f"footer says {info.num_rows}", self.path, start)
        return chunk, pages

    def _page_bytes(self, buf: memoryview | None, start: int, spans: list[tuple[int, int]],
                    need: set[int] | None) -> list[memoryview]:
        """Each page's bytes (``spans``: offset in the chunk, length): from ``buf`` (the whole chunk) when
        read, else one read from the first to the last needed page; pages not needed get none."""
        if buf is not None:
            return [buf[lo : lo + n] for lo, n in spans]
        wanted = [j for j in range(len(spans)) if need is None or j in need]
        if not wanted:
            return [_NO_BYTES] * len(spans)
        first = spans[wanted[0]][0]
        last = max(spans[j][0] + spans[j][1] for j in wanted)
        data = memoryview(self._read(start + first, last - first))
        out = [_NO_BYTES] * len(spans)
        for j in wanted:
            lo, n = spans[j]
            out[j] = data[lo - first : lo - first + n]
        return out

    def _decode(
        self, b: int, node: ColumnNode, expected: list[int] | None, keep: set[int] | None = None
    ) -> list[pa.Array | None] | list[_KeptPages]:
        """One array per page; with ``keep`` pages outside it are None (plain columns skip decoding them), or
        a plain column's kept pages as one ``_KeptPages`` when more than one is kept."""
        value = self.virtual.get(id(node.schema))
        if value is not None:  # a table column added after this file was written
            return [pa.repeat(value, n) for n in self.page_row_counts[b]]
        c = self._index[id(node.schema)]
        dt = node.data_type
        plain = dt not in (DataType.ARRAY, DataType.MAP, DataType.STRUCT) and expected is None
        chunk, pages = self._pages(b, c, expected, keep if plain else None)
        if dt in (DataType.ARRAY, DataType.MAP):
            parents = [decode_parent_page(p) for p in pages]
            children = self._decode(b, node.children[0], [int(counts.sum()) for counts, _ in parents])
            typ = arrow_type(node)
            out = []
            for (counts, mask), child in zip(parents, children, strict=True):
                if self._carbondata_complex_nulls:
                    null_rows = one_null_element_rows(counts, child)
                    counts, child = drop_rows(counts, child, null_rows)
                    if null_rows.any():
                        mask = null_rows if mask is None else mask | null_rows
                offsets = np.zeros(len(counts) + 1, np.int32)
                np.cumsum(counts, out=offsets[1:])
                m = pa.array(mask) if mask is not None else None
                if dt == DataType.ARRAY:
                    out.append(pa.ListArray.from_arrays(pa.array(offsets), child, type=typ, mask=m))
                else:
                    keys, items = child.field(0), child.field(1)
                    arr = pa.MapArray.from_arrays(pa.array(offsets), keys, items, type=typ)
                    out.append(arr if m is None else _with_nulls(arr, m))
            return out
        if dt == DataType.STRUCT:
            rows = [p.rows for p in pages]
            kids = [self._decode(b, ch, rows) for ch in node.children]
            typ = arrow_type(node)
            out = []
            for j, p in enumerate(pages):
                mask = null_mask(p)
                empty = all_fields_null([k[j] for k in kids]) if self._carbondata_complex_nulls else None
                if empty is not None:
                    mask = empty if mask is None else mask | empty
                out.append(
                    pa.StructArray.from_arrays(
                        [k[j] for k in kids], fields=list(typ), mask=pa.array(mask) if mask is not None else None
                    )
                )
            return out
        dictionary = self._local_dictionary(b, c, chunk, node.schema)
        global_dict = None
        if dictionary is None and is_global_dictionary(node.schema):
            global_dict = self._global_dictionary(node.schema)
        if expected is None and (keep is None or keep):
            # the whole chunk, or the kept pages, as one array: decoded into a single buffer, no
            # concatenation afterwards
            if keep is None:
                return [decode_pages(pages, dictionary, global_dict)]
            if all(j < len(pages) for j in keep):
                return [_KeptPages(decode_pages([pages[j] for j in sorted(keep)], dictionary, global_dict))]
        return [decode_page(p, dictionary, global_dict) if keep is None or j in keep else None
                for j, p in enumerate(pages)]

    def _local_dictionary(self, b: int, c: int, chunk: DataChunk3, col: ColumnSchema) -> pa.Array | None:
        """The local dictionary of column ``c`` of blocklet ``b`` (header ``chunk``), None without one."""
        if chunk.local_dictionary is None:
            return None
        return local_dictionary(chunk, col, self.path, self.footer_blocklet(b).column_data_chunks_offsets[c],
                                self._exact_nulls)

    def plain_chunks(self, node: ColumnNode) -> list[tuple[pa.Array | None, list[Page]]]:
        """Every blocklet's pages of a plain column stored in this file, each with its local dictionary (None
        without one): what decoding the column of many files together needs (readers.carbon_file.read_files)."""
        c = self._index[id(node.schema)]
        out = []
        for b in range(self.num_blocklets):
            chunk, pages = self._pages(b, c, None)
            out.append((self._local_dictionary(b, c, chunk, node.schema), pages))
        return out  # type: ignore[return-value]

    def _global_dictionary(self, col: ColumnSchema) -> pa.Array:
        """The table-level dictionary of a global-dictionary column (CarbonData before 2.0)."""
        name = col.column_name
        if col.data_type not in (DataType.STRING, DataType.VARCHAR):
            # the .dict file keeps every type's values as text; only strings are mapped so far
            raise CarbonFormatError(
                f"column {name!r}: global dictionary of data type {DataType(col.data_type).name} is not supported",
                self.path,
            )
        root = table_root(self._inner)
        if root is None:
            raise CarbonFormatError(
                f"column {name!r} holds global dictionary surrogate keys whose values live in "
                f"<table>/Metadata/{col.column_id}.dict, but this file is not inside a table's "
                "Fact/Part0/Segment_<n> folder",
                self.path,
            )
        key = (root, col.column_id)
        cached = self._global_dicts.get(key)
        if cached is not None:
            return cached
        path = dictionary_path(root, col.column_id)
        if not self._storage.exists(path):
            raise CarbonFormatError(
                f"column {name!r} holds global dictionary surrogate keys, but its dictionary file "
                f"{self._storage.uri(path)} does not exist",
                self.path,
            )
        self._global_dicts[key] = read_global_dictionary(self._storage, path, name)
        return self._global_dicts[key]

    # ------------------------------------------------------------------ reading
    def decode_blocklet(
        self, i: int, columns: list[str] | None = None, pages: list[int] | None = None
    ) -> pa.RecordBatch:
        """Blocklet ``i``; with ``pages`` only those pages' rows (every column shares page boundaries)."""
        nodes = self.column_nodes(columns)
        self.footer_blocklet(i)  # an IndexError naming the file when out of range
        rows = self.blocklet_row_counts[i]
        keep = set(pages) if pages is not None else None
        arrays = []
        for node in nodes:
            parts = self._decode(i, node, None, keep)
            if len(parts) == 1 and isinstance(parts[0], _KeptPages):
                parts = [parts[0].array]
                rows = len(parts[0]) if not arrays else rows
            elif keep is not None:
                if any(j >= len(parts) for j in keep):
                    raise IndexError(f"page out of range in blocklet {i} of {self.path}: {sorted(keep)}")
                parts = [parts[j] for j in sorted(keep)]
                rows = sum(len(p) for p in parts) if not arrays else rows
            arr = pa.concat_arrays(parts) if len(parts) != 1 else parts[0]
            if len(arr) != rows:
                raise CarbonFormatError(
                    f"column {node.name!r} holds {len(arr)} rows in blocklet {i}, expected {rows}",
                    self.path,
                    self.footer_blocklet(i).column_data_chunks_offsets[self._index[id(node.schema)]],
                )
            arrays.append(arr)
        schema = pa.schema([self.schema.field(n.name) for n in nodes])
        if not arrays:
            return pa.RecordBatch.from_struct_array(pa.array([{}] * rows, pa.struct([])))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _rows_of_pages(info: BlockletInfo3) -> tuple[int, ...]:
    """Rows of each page of a blocklet by its footer entry: the counts it gives, else full pages of
    DEFAULT_PAGE_ROWS but the last (footers without per-page counts)."""
    if info.row_count_in_page:
        return tuple(int(r) for r in info.row_count_in_page)
    n = int(info.num_rows)
    pages = int(info.number_number_of_pages or max(1, -(-n // DEFAULT_PAGE_ROWS)))
    size = -(-n // pages) if pages else n
    return tuple(min(size, n - k * size) for k in range(pages))


def _declared_pages(head: bytes) -> int | None:
    """How many page headers a DataChunk3 declares, from its first field's list header (Thrift compact:
    field 1 a list of structs); None when it does not start that way (the parser then says what is wrong)."""
    if len(head) < 2 or head[0] != 0x19 or head[1] & 0x0F != 0x0C:
        return None
    if head[1] >> 4 != 0x0F:
        return head[1] >> 4
    n, shift = 0, 0
    for byte in head[2:12]:
        n |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return n
        shift += 7
    return None


def _at(values: list[int] | None, j: int) -> int | None:
    return values[j] if values is not None and j < len(values) else None


def _with_nulls(arr: pa.Array, mask: pa.Array) -> pa.Array:
    return pc.if_else(mask, pa.nulls(len(arr), arr.type), arr)

