"""Reading one CarbonData V3 data file (``.carbondata``) into Arrow, and a bare folder of them.

Opening a file reads only its tail (footer) and head (header); ``read_blocklet`` then reads just the byte
ranges of the requested columns. The bytes are format.v3_file's work (which checks every offset and length
against the file size); this module opens the file through a Storage, spreads a whole-file read over
threads, and reads many files' columns together.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from carbon_ds.errors import CarbonError, CarbonMissingFileError, CarbonSchemaError, CarbonTableError
from carbon_ds.format.arrow_types import ColumnNode, arrow_type
from carbon_ds.format.dictionary import is_global_dictionary
from carbon_ds.format.pages.chunk_decode import decode_dictionary_chunks, decode_pages
from carbon_ds.format.thrift.structs import BlockletInfo3, ColumnSchema, DataChunk3, DataType, FileFooter3, FileHeader
from carbon_ds.format.v3_file import V3File
from carbon_ds.fs import Storage

READ_THREADS = os.cpu_count() or 1  # threads one ``read`` of a whole file may use
# Below this many values (rows x columns) a whole-file read decodes in the caller's thread: handing pieces to
# threads costs more than decoding them (a table of many small segments read one file after another)
PARALLEL_MIN_VALUES = 1 << 18
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _shared_pool() -> ThreadPoolExecutor:
    """One pool for every whole-file read of the process (threads are started once, not per file)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(READ_THREADS, thread_name_prefix="carbon-file-read")
        return _pool


def _forget_pool_after_fork() -> None:
    """A forked child has none of its parent's threads: work handed to the parent's pool would wait for
    ever (a process that reads, then forks workers that read). The child starts its own pool when it reads."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool_after_fork)


class CarbonDataFile:
    """One ``.carbondata`` file: header and footer on open, column chunks on demand.

    Example:
        >>> data_file = carbon_ds.CarbonTable.open(path).files()[0].path
        >>> f = carbon_ds.CarbonDataFile(data_file)
        >>> f.read(["vin", "speed"]).column_names
        ['vin', 'speed']
    """

    def __init__(self, path: str, storage: Storage | None = None,
                 table_columns: list[ColumnSchema] | None = None):
        """``table_columns``: present the file in a table's current columns (see format.column_view)."""
        if storage is None:
            storage, inner = Storage.for_path(path)
        else:
            inner = path
        try:
            file = storage.open(inner)
        except FileNotFoundError as e:  # also a FileNotFoundError: callers may look for a moved copy
            raise CarbonMissingFileError(f"cannot open {path}: {e}") from None
        except (OSError, pa.ArrowException) as e:
            raise CarbonError(f"cannot open {path}: {e}") from None
        try:
            # the file's bytes: one object shared by every thread decoding its (blocklet, column) pieces
            self._v3 = V3File(file, str(path), storage, inner, table_columns)
        except BaseException:
            file.close()
            raise

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        self._v3.close()

    def __enter__(self) -> CarbonDataFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ metadata
    @property
    def path(self) -> str:
        """The file's path, as errors name it."""
        return self._v3.path

    @path.setter
    def path(self, shown: str) -> None:
        self._v3.path = shown

    @property
    def size(self) -> int:
        """The file's size in bytes."""
        return self._v3.size

    @property
    def footer(self) -> FileFooter3:
        """The parsed footer (blocklets, their index entries, rows)."""
        return self._v3.footer

    @property
    def header(self) -> FileHeader:
        """The parsed file header (columns as written, compressor)."""
        return self._v3.header

    @property
    def columns(self) -> list[ColumnSchema]:
        """The file's columns (in the table's current columns when opened with them)."""
        return self._v3.columns

    @property
    def absent(self) -> list[ColumnSchema]:
        """Table columns this file does not hold (read as their default)."""
        return self._v3.absent

    @property
    def nodes(self) -> list[ColumnNode]:
        """The file's top-level columns as read (nested, in the table's columns when opened with them)."""
        return self._v3.nodes

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema a read returns."""
        return self._v3.schema

    @property
    def num_rows(self) -> int:
        """Rows in the file, from its footer."""
        return self._v3.num_rows

    @property
    def num_blocklets(self) -> int:
        """Blocklets in the file."""
        return self._v3.num_blocklets

    @property
    def compressor(self) -> str:
        """The name of the compressor of its pages (e.g. snappy, zstd)."""
        return self._v3.compressor

    @property
    def footer_offset(self) -> int:
        """Where the footer starts (index entries record it)."""
        return self._v3.footer_at

    @property
    def blocklet_row_counts(self) -> tuple[int, ...]:
        """Rows of each blocklet, from the footer: the shape claims and deletes are checked against."""
        return self._v3.blocklet_row_counts

    @property
    def page_row_counts(self) -> tuple[tuple[int, ...], ...]:
        """Rows of each page of each blocklet, from the footer."""
        return self._v3.page_row_counts

    def blocklet_rows(self, i: int) -> int:
        self._v3.footer_blocklet(i)  # an IndexError naming the file when out of range
        return self._v3.blocklet_row_counts[i]

    def blocklet_info(self, i: int) -> BlockletInfo3:
        """The footer's description of blocklet ``i`` (rows, pages, column chunk offsets)."""
        return self._v3.footer_blocklet(i)

    def page_count(self, i: int) -> int:
        """Pages of blocklet ``i``: from the footer, or from the first column chunk when it does not say."""
        pages = self.blocklet_info(i).number_number_of_pages
        if pages is not None:
            return int(pages)
        return len(self.read_column_chunk(i, 0).data_chunk_list or [])

    def page_rows(self, i: int) -> list[int]:
        """Rows of each page of blocklet ``i`` from the footer (no page is decoded)."""
        counts = self._v3.page_row_counts
        if not 0 <= i < len(counts):
            raise IndexError(f"blocklet {i} out of range: {self.path} has {len(counts)}")
        return list(counts[i])

    # ------------------------------------------------------------------ column chunks
    def read_column_chunk(self, blocklet: int, column_index: int, hold: bool = False) -> DataChunk3:
        """The DataChunk3 header of a column chunk; with ``hold`` its header (and on remote storage its
        bytes) are kept for the next decode of that chunk, which then neither reads nor parses them again
        (``release`` drops them)."""
        return self._v3.chunk_header(blocklet, column_index, hold)

    def release(self, blocklet: int) -> None:
        """Drop the chunks of ``blocklet`` held by ``read_column_chunk(hold=True)`` and not decoded since."""
        self._v3.drop_held(blocklet)

    # ------------------------------------------------------------------ reading
    def read_blocklet(
        self, i: int, columns: list[str] | None = None, pages: list[int] | None = None
    ) -> pa.RecordBatch:
        """Blocklet ``i``; with ``pages`` only those pages' rows (every column shares page boundaries)."""
        return self._v3.decode_blocklet(i, columns, pages)

    def iter_batches(
        self, columns: list[str] | None = None, blocklets: list[int] | None = None
    ) -> Iterator[pa.RecordBatch]:
        for i in range(self.num_blocklets) if blocklets is None else blocklets:
            yield self.read_blocklet(i, columns)

    def read(self, columns: list[str] | None = None) -> pa.Table:
        v = self._v3
        nodes = v.column_nodes(columns)
        schema = pa.schema([v.schema.field(n.name) for n in nodes])
        threads = min(READ_THREADS, v.num_blocklets * len(nodes))
        if threads < 2 or v.num_rows * len(nodes) < PARALLEL_MIN_VALUES:
            return pa.Table.from_batches(list(self.iter_batches(columns)), schema=schema)
        # column chunks decode independently and the heavy work (decompression, numba kernels, Arrow
        # take) releases the GIL: spread (blocklet, column) pieces over threads
        names = [n.name for n in nodes]
        pieces = [(b, name) for b in range(v.num_blocklets) for name in names]
        arrays = list(_shared_pool().map(lambda piece: self.read_blocklet(piece[0], [piece[1]]).column(0), pieces))
        k = len(names)
        batches = [pa.RecordBatch.from_arrays(arrays[i : i + k], schema=schema) for i in range(0, len(arrays), k)]
        return pa.Table.from_batches(batches, schema=schema)


def shares_view(a: CarbonDataFile, b: CarbonDataFile) -> bool:
    """Whether two open files present the same columns alike (one shared column view: their stored column
    lists had the same bytes and they were opened in the same table columns), so ``read_files`` may decode
    them together."""
    return a.nodes is b.nodes


_FLAT = frozenset(set(DataType) - {DataType.ARRAY, DataType.MAP, DataType.STRUCT})


def read_files(files: list[CarbonDataFile], columns: list[str] | None = None) -> pa.Table:
    """Every row of ``files`` (which must all ``shares_view`` the first), file after file, as one table: the
    rows and types of concatenating each file's ``read(columns)``, but each column's pages of all the files
    decode in one call (local dictionaries: one lookup in them laid end to end). A file of a few hundred
    rows costs its decode's fixed steps more than its values; many such files then pay them once.
    Columns of nested types or a global dictionary, and any file whose pages disagree with its footer's row
    counts, are read file by file (which names the problem)."""
    first = files[0]
    nodes = first._v3.column_nodes(columns)
    schema = pa.schema([first.schema.field(n.name) for n in nodes])
    if len(files) == 1 or any(not shares_view(first, f) for f in files):
        return pa.concat_tables([f.read(columns) for f in files]) if len(files) > 1 else first.read(columns)
    total = sum(f.num_rows for f in files)
    arrays = []
    for node in nodes:
        arr = _column_of_files(files, node, total)
        if arr is None:
            arr = pa.concat_arrays([f.read([node.name]).column(0).combine_chunks() for f in files])
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, schema=schema)


def _column_of_files(files: list[CarbonDataFile], node: ColumnNode, total: int) -> pa.Array | None:
    """One column of ``files`` decoded together (``read_files``); None when it must be read file by file."""
    first = files[0]
    if not total:
        return None
    value = first._v3.virtual.get(id(node.schema))
    if value is not None:  # a table column added after these files were written
        return pa.repeat(value, total)
    if node.data_type not in _FLAT or is_global_dictionary(node.schema):
        return None
    chunks = [chunk for f in files for chunk in f._v3.plain_chunks(node)]
    with_dictionary = sum(d is not None for d, _ in chunks)
    if with_dictionary == len(chunks):
        arr = decode_dictionary_chunks(chunks)  # type: ignore[arg-type]
    elif not with_dictionary:
        every = [p for _d, pages in chunks for p in pages]
        arr = decode_pages(every) if every else pa.array([], arrow_type(node))  # type: ignore[arg-type]
    else:
        arr = pa.concat_arrays([decode_pages(pages, d) for d, pages in chunks if pages])  # type: ignore[arg-type]
    return arr if len(arr) == total else None


def read_folder(path: str, columns: list[str] | None = None) -> pa.Table:
    """Every ``*.carbondata`` under a folder of SDK output (recursive), or one data file, in one table.

    The schema is the first file's header; every other file must carry the same one.
    """
    storage, folder = Storage.for_path(path)
    if storage.exists(folder) and not storage.is_dir(folder):
        files = [folder]  # one data file
    else:
        files = [f.path for f in storage.list(folder, recursive=True) if f.path.endswith(".carbondata")]
    if not files:
        raise CarbonTableError(f"no .carbondata files under {path}")
    tables = []
    first_schema = None
    for name in files:
        shown = storage.uri(name) if not storage.is_local else name
        with CarbonDataFile(name, storage) as f:
            f.path = shown
            if first_schema is None:
                first_schema = (shown, f.schema)
            elif not f.schema.equals(first_schema[1]):
                raise CarbonSchemaError(
                    f"schema of {shown} ({_describe(f.schema)}) differs from {first_schema[0]} "
                    f"({_describe(first_schema[1])})"
                )
            tables.append(f.read(columns))
    return pa.concat_tables(tables)


def _describe(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name}: {f.type}" for f in schema)


__all__ = ["CarbonDataFile", "read_files", "read_folder", "shares_view"]
