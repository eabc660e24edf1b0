"""The Spark data source ``carbondata`` (Spark 4 Python Data Source API, Arrow in and out).

Reads: carbon_ds.spark.source.batch_read plans and reads them. Streaming: carbon_ds.spark.streaming.stream_sink (each
micro-batch one segment, exactly once) and carbon_ds.spark.streaming.stream_source (new segments as a stream).

Writes: ``writer()`` runs once per write, before any task: it creates the table if needed and reserves the
new segment ("In Progress"); the reservation travels to the tasks inside the pickled writer. Each task
writes its own files into the segment folder and returns their names; ``commit()`` flips the segment to
"Success" (see carbon_ds.table.loads.load_base), ``abort()`` deletes the folder and marks it "Failure".
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StringType, StructField, StructType

from carbon_ds.errors import CarbonOptionError
from carbon_ds.names import MV_REWRITE_OPTION, NATIVE_PLAN_OPTION, PLAN_READS_OPTION, SEGMENTS_OPTION, SOURCE
from carbon_ds.spark.arrow_schema import arrow_schema
from carbon_ds.spark.bridge.native_read import describe
from carbon_ds.spark.bridge.protocol import (
    NativePlanAnswer,
    NativePlanRequest,
    PlanReadsAnswer,
    PlanReadsRequest,
    ViewsAnswer,
    ViewsRequest,
    read_request,
    to_json,
)
from carbon_ds.spark.bridge.read_plans import plan_reads
from carbon_ds.spark.bridge.view_rewrite import fresh_views
from carbon_ds.spark.messages import entry_point
from carbon_ds.spark.source.batch_read import CarbonPushdownReader, CarbonReader
from carbon_ds.spark.source.read_options import (
    positions_option,
    resolved_path,
    storage_options,
    table_options,
)
from carbon_ds.spark.streaming.stream_sink import CarbonStreamWriter
from carbon_ds.spark.streaming.stream_source import CarbonStreamReader
from carbon_ds.spark.writes.driver_process import driver_holder
from carbon_ds.table.loads.load_base import TaskResult
from carbon_ds.table.loads.prepare import prepare_table
from carbon_ds.table.loads.start import resume_load, start_load
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.options import normalize
from carbon_ds.table.read.snapshot import arrow_schema_of, open_table
from carbon_ds.table.read.task_reader import POSITION_FIELDS


def _path(options) -> str:
    if options.get("path"):
        path = options["path"]
        # Spark's catalog spells a local location file:/x (no authority), which pyarrow does not take
        return path[len("file:"):] if path.startswith("file:/") and not path.startswith("file://") else path
    if options.get("paths"):
        paths = json.loads(options["paths"])
        if len(paths) == 1:
            return paths[0]
        raise CarbonOptionError(f"carbondata reads one table per load(), found {len(paths)} paths: {paths}")
    # Spark plans Python sources in a worker process, which cannot tell whether the session has the extension
    raise CarbonOptionError(
        "carbondata needs a path, found none: .load(path) / .save(path) / readStream.load(path) / "
        "writeStream.start(path), or OPTIONS (path '...'); a table of Spark's catalog (spark.table, "
        "writeStream.toTable, readStream.table) gets its location only in a session started with the carbon-ds "
        "Spark extension (carbon_ds.configure_spark)")


def _answer(option: str, message: object) -> StructType:
    """A planner call's answer to the Spark extension (a carbon_ds.spark.bridge.protocol message): JSON in the
    metadata of a one-field schema, the only value such a call hands the JVM (jvm/src SchemaCall)."""
    return StructType([StructField("plan", StringType(), True, {option: to_json(message)})])


class CarbonDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return SOURCE

    @entry_point
    def __init__(self, options):
        super().__init__(options)
        normalize(table_options(options))  # unknown options fail here, before any work
        self.storage = storage_options(options)
        resolved_path(_path(options), self.storage)  # a bad storage option fails here too
        # Spark pickles this object after schema() and unpickles it for reader(): the table opened there
        # (its schema file read once) travels along instead of being opened again
        self._handle: TableHandle | None = None

    def _table(self) -> TableHandle | None:
        if self._handle is None:
            self._handle = open_table(resolved_path(_path(self.options), self.storage))
        return self._handle

    @entry_point
    def schema(self) -> StructType:
        for option, (request_type, nothing, answer) in _QUESTIONS.items():
            if self.options.get(option):
                # a request of another version (a jar not shipped with this package) is answered with nothing
                request = read_request(request_type, self.options[option])
                return _answer(option, nothing if request is None else answer(self, request))
        handle = self._table()
        schema = handle.schema if handle is not None else arrow_schema_of(resolved_path(_path(self.options), self.storage))
        if positions_option(self.options):
            schema = pa.schema([*schema, *POSITION_FIELDS])
        return from_arrow_schema(schema, prefer_timestamp_ntz=False)

    def _native_plan(self, request: NativePlanRequest) -> NativePlanAnswer:
        """The Spark extension's question (jvm/src NativeUnion): how to read this table's external segments
        with Spark's own scans (native_read.describe, or None)."""
        handle = self._table()
        if handle is None:
            return NativePlanAnswer(plan=None)
        known = {k: StructType.fromJson(dict(v)) for k, v in request.known.items()}
        declared = StructType.fromJson(dict(request.declared))
        return NativePlanAnswer(plan=describe(handle, declared, self.options.get(SEGMENTS_OPTION), known))

    def _plan_reads(self, request: PlanReadsRequest) -> PlanReadsAnswer:
        """The extension's planning of many relations in one call (carbon_ds.spark.bridge.read_plans)."""
        return plan_reads(type(self), request)

    def _fresh_views(self, request: ViewsRequest) -> ViewsAnswer:
        """The extension's query rewrite: which views of this table are fresh now (bridge.view_rewrite)."""
        return fresh_views(self._table(), request)

    @entry_point
    def reader(self, schema: StructType) -> CarbonReader:
        return CarbonReader(_path(self.options), schema, normalize(table_options(self.options)), self.storage,
                            self._table())

    @entry_point
    def writer(self, schema: StructType, overwrite: bool) -> CarbonArrowWriter:
        return CarbonArrowWriter(_path(self.options), schema, overwrite, table_options(self.options), self.storage)

    @entry_point
    def streamWriter(self, schema: StructType, overwrite: bool) -> CarbonStreamWriter:  # noqa: N802 - Spark's name
        return CarbonStreamWriter(_path(self.options), schema, overwrite, dict(self.options))

    @entry_point
    def streamReader(self, schema: StructType) -> CarbonStreamReader:  # noqa: N802 - Spark's name
        return CarbonStreamReader(_path(self.options), schema, normalize(dict(self.options)))


# The extension's questions, each asked in a string option of a fresh source's ``schema()`` call and
# answered as JSON in the metadata of its one field (the only value a planner call hands the JVM):
# option -> (request, the answer to another version's request, how this version answers)
_QUESTIONS: dict[str, tuple[type, object, Callable[[CarbonDataSource, Any], object]]] = {
    NATIVE_PLAN_OPTION: (NativePlanRequest, NativePlanAnswer(plan=None), CarbonDataSource._native_plan),
    PLAN_READS_OPTION: (PlanReadsRequest, PlanReadsAnswer(answers=()), CarbonDataSource._plan_reads),
    MV_REWRITE_OPTION: (ViewsRequest, ViewsAnswer(views=()), CarbonDataSource._fresh_views),
}


class CarbonPushdownDataSource(CarbonDataSource):
    """Registered by ``carbon_ds.register`` only where ``pushdown_is_safe`` (which also sets
    ``spark.sql.python.filterPushdown.enabled``, without which a pushFilters reader fails every read)."""

    @entry_point
    def reader(self, schema: StructType) -> CarbonReader:
        return CarbonPushdownReader(_path(self.options), schema, normalize(table_options(self.options)),
                                    self.storage, self._table())


# ---------------------------------------------------------------------------------------------- writes


@dataclass
class CarbonCommitMessage(WriterCommitMessage):
    result: TaskResult


class CarbonArrowWriter(DataSourceArrowWriter):
    """``writer()`` runs on the driver: the table is created if needed and the segment reserved there; the
    pickled writer carries the load (reservation and options) to every task and to commit/abort."""

    def __init__(self, path: str, schema: StructType, overwrite: bool, options: dict[str, str],
                 storage: dict[str, str] | None = None):
        self.storage = storage
        path = resolved_path(path, storage)
        incoming = arrow_schema(schema)
        table, load_options = prepare_table(path, incoming, options)
        self.table_path = path
        # An overwrite's update lock is released by commit()/abort(), which run in another Python worker:
        # not bound to this process's pid, its token travels in the reservation
        operation = ("INSERT OVERWRITE" + (" PARTITION" if load_options.partition else "") if overwrite
                     else "LOAD") + " (Spark)"
        # The load lives as long as the driver: this worker is gone once the plan is made
        load = start_load(table, load_options, overwrite=overwrite, partition=load_options.partition,
                          dynamic=overwrite and load_options.partition_overwrite_mode == "dynamic",
                          operation=operation, pid_bound=False, holder=driver_holder())
        self.reservation = load.reservation
        self.load_options = load_options

    def _load(self):
        resolved_path(self.table_path, self.storage)  # tasks and commit run in other workers
        return resume_load(TableHandle.open(self.table_path), self.reservation, self.load_options)

    @entry_point
    def write(self, iterator: Iterator[pa.RecordBatch]) -> CarbonCommitMessage:
        ctx = TaskContext.get()
        # Unique per task attempt within the application, so a retried task never reuses file names.
        task_no = ctx.taskAttemptId() if ctx is not None else 0
        return CarbonCommitMessage(self._load().write_task(task_no, iterator))

    @entry_point
    def commit(self, messages: list[CarbonCommitMessage | None]) -> None:
        self._load().commit([m.result if m is not None else None for m in messages])

    @entry_point
    def abort(self, messages: list[CarbonCommitMessage | None]) -> None:
        self._load().abort()
