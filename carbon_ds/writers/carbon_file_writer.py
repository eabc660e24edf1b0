"""The ``.carbondata`` writer: pages into blocklets into files, plus one ``.carbonindex`` per writer.

File layout (format V3): FileHeader; per blocklet, per physical column, a DataChunk3 then its pages;
FileFooter3; the footer offset as an 8-byte big-endian long. Rows arrive in any batch sizes; they are cut
into ``page_rows`` pages, a blocklet closes once its encoded pages pass ``blocklet_size_mb`` and a new
file starts when the next blocklet would take the current one past ``block_size_mb``.

Data files get their final names inside the caller's folder straight away: making a segment visible is
the caller's commit, and :meth:`CarbonWriter.abort` removes everything this writer created.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa

from carbon_ds.errors import CarbonError, CarbonOptionError, CarbonSchemaError
from carbon_ds.format.arrow_types import columns_for, in_schema_order, nest
from carbon_ds.format.index import index_bytes
from carbon_ds.format.pages import compress as compress_mod
from carbon_ds.format.pages.complex_nulls import COMPLEX_NULLS_KEY
from carbon_ds.format.pages.decode import NULL_BITSETS_KEY
from carbon_ds.format.pages.encode import to_chunk2
from carbon_ds.format.thrift.structs import (
    BlockIndex,
    BlockletBTreeIndex,
    BlockletIndex,
    BlockletInfo3,
    BlockletMinMaxIndex,
    ColumnSchema,
    DataChunk3,
    FileFooter3,
    FileHeader,
    IndexHeader,
    SegmentInfo,
)
from carbon_ds.fs import Storage
from carbon_ds.progress import advance
from carbon_ds.writers.columns import ColumnEncoder

FORMAT_VERSION = 3
WRITER_VERSION = "2.3.0"  # footer extra_info version; >= 2.2.0 tells readers not to rebase timestamps
MB = 1 << 20
_BTREE_KEY = b"\x00" * 8


@dataclass
class WriterOptions:
    """How :class:`CarbonWriter` encodes its files; the defaults are CarbonData's.

    Attributes:
        compressor: "snappy", "zstd" or "gzip".
        blocklet_size_mb: encoded megabytes per blocklet (the unit of min/max pruning).
        block_size_mb: megabytes per data file before the writer starts another.
        page_rows: rows per page (CarbonData: 32,000).
        sort_columns: columns each file's rows are sorted by; they become the leading dimensions.
        long_string_columns: string columns stored as VARCHAR (values over 32,000 bytes).
        local_dictionary_enable: dictionary-encode string columns per blocklet.
        local_dictionary_threshold: distinct values above which a column falls back to plain pages.
        is_sort: what the footer records about the rows' order.
        written_by: the footer's ``written_by``.

    Example:
        >>> options = carbon_ds.WriterOptions(compressor="zstd", sort_columns=["vin"])
        >>> with carbon_ds.CarbonWriter(f"{tmp}/zstd_files", arrow_table.schema, options) as writer:
        ...     writer.write(arrow_table)
        >>> carbon_ds.read_table(f"{tmp}/zstd_files").num_rows == arrow_table.num_rows
        True
    """

    compressor: str = "snappy"
    blocklet_size_mb: float = 64
    block_size_mb: float = 1024
    page_rows: int = 32000
    sort_columns: list[str] = field(default_factory=list)
    long_string_columns: list[str] = field(default_factory=list)
    local_dictionary_enable: bool = True
    local_dictionary_threshold: int = 10000
    is_sort: bool = False
    written_by: str = "carbon-ds"


@dataclass
class WrittenFile:
    path: str
    file_name: str
    num_rows: int
    file_size: int
    footer_offset: int
    blocklets: list[BlockIndex] = field(default_factory=list)  # this file's .carbonindex entries


@dataclass
class _Blocklet:
    info: BlockletInfo3
    index: BlockletIndex


class CarbonWriter:
    """Writes bare ``.carbondata`` files and their ``.carbonindex`` into ``folder``, as Apache CarbonData's
    SDK writer does (no table metadata: ``read_table(folder)`` reads them by their file headers). For a
    table with segments use :func:`carbon_ds.write_table`.

    ``write(data)`` takes pyarrow Tables or RecordBatches of ``schema``; ``close()`` finishes the last file
    and the index and returns the files written; ``abort()`` removes them. As a context manager it closes on
    success and aborts on an exception.

    Example:
        >>> with carbon_ds.CarbonWriter(f"{tmp}/sdk_files", arrow_table.schema) as writer:
        ...     writer.write(arrow_table)
        >>> carbon_ds.read_table(f"{tmp}/sdk_files").num_rows == arrow_table.num_rows
        True
    """

    def __init__(
        self,
        folder: str,
        schema: pa.Schema,
        options: WriterOptions | None = None,
        *,
        task_no: int | str = 0,
        segment_no: str = "0",
        timestamp: int | None = None,
        storage: Storage | None = None,
        columns: list[ColumnSchema] | None = None,
        batch_no: int = 0,
    ):
        self.options = opts = options or WriterOptions()
        self.compressor = compress_mod.normalize(opts.compressor)
        if opts.page_rows <= 0 or opts.blocklet_size_mb <= 0 or opts.block_size_mb <= 0:
            raise CarbonOptionError("page_rows, blocklet_size_mb and block_size_mb must be positive")
        if storage is None:
            storage, folder = Storage.for_path(folder)
        self.storage, self.folder = storage, folder
        self.schema = schema
        self.columns = columns or columns_for(schema, opts.sort_columns, opts.long_string_columns)
        self.task_no, self.segment_no = str(task_no), str(segment_no)
        # batchno tells apart files of one CarbonData partition id written by several tasks of one load
        self.batch_no = int(batch_no)
        self.timestamp = int(timestamp if timestamp is not None else time.time() * 1000)
        nodes = nest(self.columns)
        by_name = {f.name.lower(): i for i, f in enumerate(schema)}
        self._field_of: list[int] = []
        for node in nodes:
            if node.name.lower() not in by_name:
                raise CarbonSchemaError(
                    f"column {node.name!r} of the table is missing from the data schema ({', '.join(schema.names)})"
                )
            self._field_of.append(by_name[node.name.lower()])
        if len(nodes) != len(schema):
            extra = set(schema.names) - {n.name for n in nodes}
            raise CarbonSchemaError(f"data columns {sorted(extra)} are not in the table schema")
        self._encoders = [
            ColumnEncoder(n, self.compressor, opts.local_dictionary_enable, opts.local_dictionary_threshold)
            for n in nodes
        ]
        self._user_order = [n.name for n in in_schema_order(nodes)]
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._blocklet_rows: list[int] = []
        self._stream = None
        self._pos = 0
        self._file_blocklets: list[_Blocklet] = []
        self._file_rows = 0
        self._file_name = ""
        self._part = 0
        self.files: list[WrittenFile] = []
        self._created: list[str] = []
        self.index_path: str | None = None
        self._closed = False

    # ------------------------------------------------------------------ public
    def write(self, data: pa.RecordBatch | pa.Table) -> None:
        if self._closed:
            raise CarbonError("writer is closed")
        table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        if table.num_rows == 0:
            return
        self._pending.append(self._conform(table))
        self._pending_rows += table.num_rows
        if self._pending_rows >= self.options.page_rows:
            self._drain(final=False)

    def close(self) -> list[WrittenFile]:
        if self._closed:
            return self.files
        try:
            self._drain(final=True)
            self._flush_blocklet()
            self._finish_file()
            if self.files:
                self._write_index()
        except BaseException:
            self.abort()
            raise
        self._closed = True
        return self.files

    def abort(self) -> None:
        """Remove every file this writer created (data and index)."""
        self._closed = True
        if self._stream is not None:
            try:
                self._stream.close()
            except Exception:  # noqa: BLE001 - cleaning up after a failure already in flight
                pass
            self._stream = None
        for path in self._created:
            self.storage.delete(path)
        self._created.clear()

    def __enter__(self) -> CarbonWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    # ------------------------------------------------------------------ rows to pages
    def _conform(self, table: pa.Table) -> pa.Table:
        names = {n.lower(): n for n in table.column_names}
        cols = []
        for name, i in zip([e.node.name for e in self._encoders], self._field_of, strict=True):
            key = name.lower()
            if key not in names:
                raise CarbonSchemaError(f"data has no column {name!r} (has {', '.join(table.column_names)})")
            col = table.column(names[key])
            want = self.schema.field(i).type
            if col.type != want:
                try:
                    col = col.cast(want)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                    raise CarbonSchemaError(f"column {name!r}: cannot store {col.type} as {want}: {e}") from None
            cols.append(col)
        return pa.table(cols, names=[e.node.name for e in self._encoders])

    def _drain(self, final: bool) -> None:
        if not self._pending:
            return
        table = pa.concat_tables(self._pending) if len(self._pending) > 1 else self._pending[0]
        rows = self.options.page_rows
        full = table.num_rows if final else table.num_rows - table.num_rows % rows
        for start in range(0, full, rows):
            self._add_page(table.slice(start, min(rows, full - start)))
        rest = table.slice(full)
        self._pending = [rest] if rest.num_rows else []
        self._pending_rows = rest.num_rows

    def _add_page(self, page: pa.Table) -> None:
        for enc, col in zip(self._encoders, page.columns, strict=True):
            enc.add(col.combine_chunks())
        self._blocklet_rows.append(page.num_rows)
        advance(page.num_rows)
        if sum(e.nbytes for e in self._encoders) >= self.options.blocklet_size_mb * MB:
            self._flush_blocklet()

    # ------------------------------------------------------------------ blocklets and files
    def _flush_blocklet(self) -> None:
        if not self._blocklet_rows:
            return
        per_column = []
        for enc in self._encoders:
            pages, chunk = enc.take()
            for info, col_pages in zip(enc.infos, pages, strict=True):
                per_column.append((info, col_pages, chunk))
                chunk = None  # the dictionary belongs to the column's first (only) physical column
        rows, self._blocklet_rows = self._blocklet_rows, []
        size = sum(len(p.data) for _, ps, _ in per_column for p in ps)
        limit = self.options.block_size_mb * MB
        if self._stream is not None and self._file_blocklets and self._pos + size > limit:
            self._finish_file()
        if self._stream is None:
            self._start_file()
        offsets, lengths, mins, maxs, present = [], [], [], [], []
        dims_end = None
        for info, pages, chunk in per_column:
            if not info.is_dimension and dims_end is None:
                dims_end = self._pos
            stats = [self._page_stats(info, p) for p in pages]
            page_offsets, acc = [], 0
            for p in pages:
                page_offsets.append(acc)
                acc += len(p.data)
            dc3 = DataChunk3(
                data_chunk_list=[to_chunk2(p, self.compressor, *s) for p, s in zip(pages, stats, strict=True)],
                page_offset=page_offsets,
                page_length=[len(p.data) for p in pages],
                local_dictionary=chunk,
            )
            head = dc3.to_bytes()
            offsets.append(self._pos)
            lengths.append(len(head))
            self._emit(head)
            for p in pages:
                self._emit(p.data)
            lo, hi, ok = self._blocklet_stats(info, pages)
            mins.append(lo)
            maxs.append(hi)
            present.append(ok)
        end = self._pos
        info3 = BlockletInfo3(
            num_rows=sum(rows),
            column_data_chunks_offsets=offsets,
            column_data_chunks_length=lengths,
            dimension_offsets=dims_end if dims_end is not None else end,
            measure_offsets=end,
            number_number_of_pages=len(rows),
            row_count_in_page=rows,
        )
        index = BlockletIndex(
            min_max_index=BlockletMinMaxIndex(min_values=mins, max_values=maxs, min_max_presence=present),
            b_tree_index=BlockletBTreeIndex(start_key=_BTREE_KEY, end_key=_BTREE_KEY),
        )
        self._file_blocklets.append(_Blocklet(info3, index))
        self._file_rows += sum(rows)

    @staticmethod
    def _page_stats(info, page) -> tuple[bytes, bytes, bool]:
        if info.to_stat is None or not page.stats_present:
            return b"", b"", False
        return info.to_stat(page.min), info.to_stat(page.max), True

    @staticmethod
    def _blocklet_stats(info, pages) -> tuple[bytes, bytes, bool]:
        if info.to_stat is None:
            return b"", b"", False
        with_stats = [p for p in pages if p.stats_present]
        # a page without statistics that is not all null (long strings, only NaN) makes the blocklet unprunable
        if not with_stats or any(not p.stats_present and not p.extra.get("all_null") for p in pages):
            return b"", b"", False
        lo = min(p.min for p in with_stats)
        hi = max(p.max for p in with_stats)
        return info.to_stat(lo), info.to_stat(hi), True

    def _emit(self, data: bytes) -> None:
        self._stream.write(data)
        self._pos += len(data)

    def _start_file(self) -> None:
        self._file_name = (
            f"part-{self._part}-{self.task_no}_batchno{self.batch_no}-0-{self.segment_no}-{self.timestamp}"
            f".{self.compressor}.carbondata"
        )
        self._part += 1
        path = Storage.join(self.folder, self._file_name)
        if self.storage.exists(path):
            raise CarbonError(f"refusing to overwrite existing data file {self.storage.uri(path)}")
        self._created.append(path)
        self._stream = self.storage.open_output(path)
        self._pos = 0
        self._file_blocklets = []
        self._file_rows = 0
        header = FileHeader(
            version=FORMAT_VERSION,
            column_schema=self.columns,
            is_footer_present=True,
            time_stamp=self.timestamp,
            compressor_name=self.compressor,
        )
        self._emit(header.to_bytes())

    def _segment_info(self) -> SegmentInfo:
        return SegmentInfo(num_cols=len(self.columns), column_cardinalities=[])

    def _finish_file(self) -> None:
        if self._stream is None:
            return
        footer_offset = self._pos
        footer = FileFooter3(
            num_rows=self._file_rows,
            segment_info=self._segment_info(),
            blocklet_index_list=[b.index for b in self._file_blocklets],
            blocklet_info_list3=[b.info for b in self._file_blocklets],
            is_sort=self.options.is_sort,
            # string nulls are exact in the presence bitsets, so a stored "@NU#LL$!" reads back as that string
            # complex nulls in CarbonData's shape: read as CarbonData reads them (older carbon-ds files: by null bits)
            extra_info={"written_by": self.options.written_by, "version": WRITER_VERSION, NULL_BITSETS_KEY: "exact",
                        COMPLEX_NULLS_KEY: "carbondata"},
        )
        self._emit(footer.to_bytes())
        self._emit(struct.pack(">q", footer_offset))
        self._stream.close()
        self._stream = None
        entries = [
            BlockIndex(
                num_rows=self._file_rows,
                file_name=self._file_name,
                offset=footer_offset,
                block_index=b.index,
                blocklet_info=b.info,
                file_size=self._pos,
            )
            for b in self._file_blocklets
        ]
        path = Storage.join(self.folder, self._file_name)
        self.files.append(WrittenFile(path, self._file_name, self._file_rows, self._pos, footer_offset, entries))

    def _write_index(self) -> None:
        header = IndexHeader(
            version=FORMAT_VERSION,
            table_columns=self.columns,
            segment_info=self._segment_info(),
            bucket_id=0,
            schema_time_stamp=self.timestamp,
            is_sort=self.options.is_sort,
        )
        name = f"{self.task_no}_batchno{self.batch_no}-0-{self.segment_no}-{self.timestamp}.carbonindex"
        path = Storage.join(self.folder, name)
        self._created.append(path)
        self.storage.write_bytes(path, index_bytes(header, [e for f in self.files for e in f.blocklets]))
        self.index_path = path


def write_files(
    data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch],
    folder: str,
    schema: pa.Schema | None = None,
    options: WriterOptions | None = None,
    **kw,
) -> list[WrittenFile]:
    """Write data as one task's ``.carbondata`` files and ``.carbonindex`` in ``folder`` (SDK-style output)."""
    if isinstance(data, pa.Table | pa.RecordBatch):
        schema = schema or data.schema
        batches: Iterable = [data]
    else:
        it = iter(data)
        first = next(it, None)
        if schema is None:
            if first is None:
                raise CarbonSchemaError("no data and no schema: cannot infer the columns to write")
            schema = first.schema
        batches = _chain(first, it)
    writer = CarbonWriter(folder, schema, options, **kw)
    try:
        for b in batches:
            writer.write(b)
    except BaseException:
        writer.abort()
        raise
    return writer.close()


def _chain(first, rest):
    if first is not None:
        yield first
    yield from rest
