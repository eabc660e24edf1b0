"""The Spark data source ``carbondata`` (Spark 4 Python Data Source API, Arrow in and out).

Reads: one input partition per data file of every readable segment (large files split into groups of
blocklets). Spark never pushes a projection to Python sources, so columns are only pruned when the user
gives ``.schema(...)``; batches are cast to exactly the declared schema, as Spark requires.

Writes: ``writer()`` runs once per write, before any task: it creates the table if needed and reserves the
new segment ("In Progress"); the reservation travels to the tasks inside the pickled writer. Each task
writes its own files into the segment folder and returns their names; ``commit()`` flips the segment to
"Success" (see carbon_ds.table.commit), ``abort()`` deletes the folder and marks it "Failure".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.fs import Storage
from carbon_ds.table import commit
from carbon_ds.table.options import normalize
from carbon_ds.table.planning import conform
from carbon_ds.table.table import CarbonTable, resolve_columns

SPLIT_BYTES = 128 * 1024 * 1024  # a file larger than this is read as several partitions


def _path(options) -> str:
    if options.get("path"):
        return options["path"]
    if options.get("paths"):
        paths = json.loads(options["paths"])
        if len(paths) == 1:
            return paths[0]
        raise CarbonOptionError(f"carbondata reads one table per load(), found {len(paths)} paths: {paths}")
    raise CarbonOptionError("carbondata needs a path: .load(path) / .save(path) or OPTIONS (path '...')")


def _bare_files(path: str) -> tuple[Storage, list[tuple[str, int]]]:
    storage, fs_path = Storage.for_path(path)
    files = [
        (f.path, f.size)
        for f in storage.list(fs_path, recursive=True)
        if f.path.endswith(".carbondata") and not f.path.rsplit("/", 1)[-1].startswith((".", "_"))
    ]
    return storage, files


def _arrow_schema_of(path: str) -> pa.Schema:
    if CarbonTable.exists(path):
        return CarbonTable.open(path).schema
    storage, files = _bare_files(path)
    if not files:
        raise CarbonTableError(
            f"{path} is neither a CarbonData table (no Metadata/schema) nor a folder with .carbondata files"
        )
    from carbon_ds.readers.carbondata import CarbonDataFile

    f = CarbonDataFile(files[0][0], storage=storage)
    f.close()
    return f.schema


class CarbonDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "carbondata"

    def __init__(self, options):
        super().__init__(options)
        normalize(dict(options))  # unknown options fail here, before any work

    def schema(self) -> StructType:
        return from_arrow_schema(_arrow_schema_of(_path(self.options)), prefer_timestamp_ntz=False)

    def reader(self, schema: StructType) -> CarbonReader:
        return CarbonReader(_path(self.options), schema, normalize(dict(self.options)))

    def writer(self, schema: StructType, overwrite: bool) -> CarbonArrowWriter:
        return CarbonArrowWriter(_path(self.options), schema, overwrite, dict(self.options))


# ---------------------------------------------------------------------------------------------- reads


class CarbonPartition(InputPartition):
    """Slot ``index`` of ``count``: the planned (path, blocklets) pieces, and the tablestatus they came from.

    Spark keeps planned partitions on a temporary view's relation and reuses them after INSERTs into the
    same view, so a plan can be stale. ``read`` notices (the tablestatus changed) and re-plans, reading
    every ``count``-th piece of the fresh plan, which still covers each current file exactly once.
    """

    def __init__(self, index: int, count: int, pieces: tuple, fingerprint: str | None):
        super().__init__(index)
        self.index = index
        self.count = count
        self.pieces = pieces  # ((file system path, tuple of blocklets or None), ...)
        self.fingerprint = fingerprint


class CarbonReader(DataSourceReader):
    def __init__(self, path: str, schema: StructType, options: dict[str, str]):
        self.path = path
        self.segments = options.get("segments")
        self.filter = options.get("filter")
        self.is_table = CarbonTable.exists(path)
        self.target = to_arrow_schema(schema, timezone="UTC")
        source_schema = _arrow_schema_of(path)
        # Names in the source's spelling; a user-given schema may be any subset, any case.
        self.columns = resolve_columns(source_schema, self.target.names, f"carbondata source {path}")
        if self.filter and self.columns != source_schema.names:
            self.read_columns = None  # the predicate may use columns outside the projection
        else:
            self.read_columns = self.columns
        if self.segments and not self.is_table:
            raise CarbonOptionError(f"option segments={self.segments!r} needs a table, {path} has no Metadata/schema")

    def _plan(self) -> tuple[Storage, list[tuple[str, tuple[int, ...] | None]], str | None]:
        if self.is_table:
            table = CarbonTable.open(self.path)
            fingerprint = _fingerprint(table)
            storage = table.storage
            files = [(f.path, f.size) for f in table.files(self.segments)]
        else:
            fingerprint = None
            storage, files = _bare_files(self.path)
        pieces = [p for fpath, size in files for p in _split(storage, fpath, size)]
        return storage, pieces, fingerprint

    def partitions(self) -> list[InputPartition]:
        _storage, pieces, fingerprint = self._plan()
        n = max(1, len(pieces))
        return [CarbonPartition(i, n, tuple(pieces[i : i + 1]), fingerprint) for i in range(n)]

    def read(self, partition: CarbonPartition) -> Iterator[pa.RecordBatch]:
        pieces = partition.pieces
        if partition.fingerprint is not None:
            if _fingerprint(CarbonTable.open(self.path)) != partition.fingerprint:
                _s, fresh, _f = self._plan()
                pieces = tuple(fresh[partition.index :: partition.count])
        storage, _ = Storage.for_path(self.path)
        for path, blocklets in pieces:
            yield from self._read_piece(storage, path, blocklets)

    def _read_piece(self, storage: Storage, path: str, blocklets) -> Iterator[pa.RecordBatch]:
        from carbon_ds.readers.carbondata import CarbonDataFile

        data = CarbonDataFile(path, storage=storage)
        try:
            for batch in data.iter_batches(columns=self.read_columns, blocklets=blocklets):
                if self.filter:
                    from carbon_ds.api import apply_filter

                    table = apply_filter(pa.Table.from_batches([batch]), self.filter, self.columns)
                    for b in table.to_batches():
                        yield conform(b, self.target)
                else:
                    yield conform(batch, self.target)
        finally:
            data.close()


def _fingerprint(table: CarbonTable) -> str:
    """Identifies one version of the table's segment list."""
    return "|".join(f"{d.name}:{d.status}:{d.segment_file}" for d in table.load_details())


def _split(storage: Storage, path: str, size: int) -> list[tuple[str, tuple[int, ...] | None]]:
    if size <= SPLIT_BYTES:
        return [(path, None)]
    from carbon_ds.readers.carbondata import CarbonDataFile

    f = CarbonDataFile(path, storage=storage)
    n = f.num_blocklets
    f.close()
    groups = max(1, min(n, -(-size // SPLIT_BYTES)))
    per = -(-n // groups)
    return [(path, tuple(range(i, min(i + per, n)))) for i in range(0, n, per)]


# ---------------------------------------------------------------------------------------------- writes


@dataclass
class CarbonCommitMessage(WriterCommitMessage):
    result: commit.TaskResult


class CarbonArrowWriter(DataSourceArrowWriter):
    def __init__(self, path: str, schema: StructType, overwrite: bool, options: dict[str, str]):
        from carbon_ds.api import prepare_table

        self.options = options
        incoming = to_arrow_schema(schema, timezone="UTC")
        table, self.load = prepare_table(path, incoming, options)
        self.table_path = path
        self.reservation = commit.reserve(table, overwrite=overwrite)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> CarbonCommitMessage:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        # Unique per task attempt within the application, so a retried task never reuses file names.
        task_no = ctx.taskAttemptId() if ctx is not None else 0
        table = CarbonTable.open(self.table_path)
        return CarbonCommitMessage(commit.write_task(table, self.reservation, task_no, iterator, self.load))

    def commit(self, messages: list[CarbonCommitMessage | None]) -> None:
        table = CarbonTable.open(self.table_path)
        commit.commit(table, self.reservation, [m.result for m in messages if m is not None])

    def abort(self, messages: list[CarbonCommitMessage | None]) -> None:
        commit.abort(CarbonTable.open(self.table_path), self.reservation)
