"""The Structured Streaming source: ``spark.readStream.format("carbondata").load(path)``.

Each micro-batch delivers the rows of the load segments committed since the previous one; offsets are
segment ids (carbon_ds.table.ops.streams.offsets says what they hold and how deleted, updated, overwritten and
compacted segments are treated). The rows of a batch are read by the batch reader (``CarbonReader``) over
exactly that batch's segments, pinned to the tablestatus version its plan saw.

Options: ``starting_segment`` (snapshot, the default: the table's rows first, then what is appended, as
Delta's and Iceberg's sources start | latest | earliest | a segment id), ``max_files_per_trigger`` or
``max_rows_per_trigger`` (admission control, PySpark 4.2+; a batch holds at least one segment), and
``ignore_changes``. ``Trigger.AvailableNow`` (PySpark 4.3+) reads what was committed when the query started.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.names import FILTER_OPTION, SEGMENTS_OPTION
from carbon_ds.spark.messages import entry_point
from carbon_ds.spark.source.batch_read import CarbonPartition, CarbonReader
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.options import positive_int, true_or_false
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.tablestatus import LoadDetail
from carbon_ds.table.ops.streams.offsets import (
    Limit,
    Offset,
    initial_offset,
    load_id,
    next_offset,
    segments_between,
    snapshot_between,
)
from carbon_ds.table.read.planned_reads import count as count_rows

try:  # PySpark 4.2+ (admission control), 4.3+ (Trigger.AvailableNow)
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles, ReadMaxRows
except ImportError:  # pragma: no cover - PySpark 4.1
    ReadAllAvailable = ReadMaxFiles = ReadMaxRows = None  # type: ignore[assignment,misc]
try:
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
except ImportError:  # pragma: no cover - PySpark before 4.3

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Stands in where PySpark has no Trigger.AvailableNow for Python sources."""


log = logging.getLogger(__name__)


class CarbonStreamPartition(InputPartition):
    """One input partition of a batch: the batch reader's partition and the reader that plans it."""

    def __init__(self, index: int, inner: CarbonPartition, reader: CarbonReader):
        super().__init__(index)
        self.inner = inner
        self.reader = reader


class CarbonStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets are committed segment ids; see the module docstring."""

    def __init__(self, path: str, schema: StructType, options: dict[str, str]):
        if not TableHandle.exists(path):
            raise CarbonTableError(f"streaming reads need a carbondata table; {path} has no Metadata/schema")
        self.path = path
        self.schema = schema
        self.starting = options.get("starting_segment")
        self.max_files = positive_int(options, "max_files_per_trigger")
        self.max_rows = positive_int(options, "max_rows_per_trigger")
        if self.max_files is not None and self.max_rows is not None:
            raise CarbonOptionError("options max_files_per_trigger and max_rows_per_trigger limit a batch in two "
                                    "ways; give one of them")
        if (self.max_files or self.max_rows) and ReadMaxFiles is None:
            raise CarbonOptionError("options max_files_per_trigger / max_rows_per_trigger need PySpark 4.2 or "
                                    "newer (admission control for Python sources)")
        self.ignore_changes = bool(true_or_false(options, "ignore_changes"))
        for key in (SEGMENTS_OPTION, FILTER_OPTION):
            if options.get(key):
                raise CarbonOptionError(f"option {key!r} is not supported by streaming reads; filter the "
                                        "streaming DataFrame instead")
        initial_offset(self._entries(), self.starting)  # a bad starting_segment fails before the query starts
        self.target: Offset | None = None  # Trigger.AvailableNow: nothing committed after this is read
        self.last: Offset | None = None

    def _entries(self) -> list[LoadDetail]:
        return TableHandle.open(self.path).load_details()

    @entry_point
    def initialOffset(self) -> dict:  # noqa: N802 - Spark's name
        return initial_offset(self._entries(), self.starting).to_json()

    def _within_target(self, entries: list[LoadDetail]) -> list[LoadDetail]:
        """The entries as the AvailableNow target saw them: later loads absent, then-open ones still open."""
        target = self.target
        if target is None:
            return entries
        out = []
        for e in entries:
            i = load_id(e)
            if i is not None and i >= target.next:
                continue
            if i is not None and i in target.pending:
                e = LoadDetail(name=e.name, status=ts.IN_PROGRESS)
            out.append(e)
        return out

    def _limit(self, limit) -> Limit:
        if ReadMaxFiles is not None and isinstance(limit, ReadMaxFiles):
            return Limit(max_files=limit.max_files, size_of=self._size_of)
        if ReadMaxRows is not None and isinstance(limit, ReadMaxRows):
            return Limit(max_rows=limit.max_rows, size_of=self._size_of)
        return Limit()

    def _size_of(self, segment_id: str) -> tuple[int, int]:
        table = TableHandle.open(self.path)
        return len(table.files(segment_id)), count_rows(self.path, None, segment_id)

    @entry_point
    def latestOffset(self, start: dict | None = None, limit=None) -> dict:  # noqa: N802 - Spark's name
        entries = self._within_target(self._entries())
        if start:
            begin = Offset.from_json(start)
        else:  # PySpark 4.1 passes no start: this reader's previous answer (it lives as long as the query run)
            begin = self.last if self.last is not None else initial_offset(entries, self.starting)
        end, notes = next_offset(entries, begin, self._limit(limit), self.ignore_changes)
        for note in notes:
            log.warning("carbondata stream over %s (ignore_changes): %s", self.path, note)
        self.last = end
        return end.to_json()

    def getDefaultReadLimit(self):  # noqa: N802 - Spark's name
        if self.max_files is not None:
            return ReadMaxFiles(self.max_files)
        if self.max_rows is not None:
            return ReadMaxRows(self.max_rows)
        return ReadAllAvailable()

    @entry_point
    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 - Spark's name
        entries = self._entries()
        self.target, _ = next_offset(entries, Offset(0), None, ignore_changes=True)

    @entry_point
    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        begin, finish = Offset.from_json(start), Offset.from_json(end)
        names = snapshot_between(begin, finish) + [str(i) for i in segments_between(begin, finish)]
        if not names:
            return []
        readable = {e.name for e in self._entries() if e.readable}
        chosen = [n for n in names if n in readable]  # one deleted since its offset: nothing to read
        if not chosen:
            return []
        reader = CarbonReader(self.path, self.schema, {SEGMENTS_OPTION: ",".join(chosen)})
        reader.pinned = True  # planned for this batch alone
        return [CarbonStreamPartition(i, p, reader) for i, p in enumerate(reader.partitions())]

    @entry_point
    def read(self, partition: CarbonStreamPartition) -> Iterator[pa.RecordBatch]:
        yield from partition.reader.read(partition.inner)

    def commit(self, end: dict) -> None:
        """Nothing to release: offsets are kept by Spark's checkpoint, segments by the table."""
