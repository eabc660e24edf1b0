"""The Structured Streaming sink: ``df.writeStream.format("carbondata").start(path)``, exactly once.

Spark builds a fresh writer for each micro-batch's tasks and another for its commit (in a separate Python
worker), so nothing is reserved when the writer is made. The first task of a batch that has rows reserves
the batch's segment (carbon_ds.table.ops.streams.commit: shared by every task of the batch in this run);
each task writes its files there; ``commit(messages, batch_id)`` flips it to "Success" with the batch's
mark in the same tablestatus write, or does nothing when that batch is already committed (a replay after
a crash between our commit and Spark's checkpoint). An empty batch commits nothing. After a commit the
batch segments are merged in the background (PostCommit ``stream_merge``; option ``auto_load_merge``).

The query id (stable across restarts from one checkpoint), the batch id and the run id come from the
task's local properties that Spark's micro-batch engine sets.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from carbon_ds import faults
from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.spark.arrow_schema import arrow_schema
from carbon_ds.spark.messages import entry_point
from carbon_ds.spark.writes.driver_process import driver_holder
from carbon_ds.table.loads.load_base import Reservation, TaskResult
from carbon_ds.table.loads.prepare import prepare_table
from carbon_ds.table.loads.start import PostCommit, resume_load
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.options import WRITE_OPTIONS, parse_bool
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.ops.streams.commit import BatchAlreadyCommitted, StreamBatch, mark_batch, reserve_batch

log = logging.getLogger(__name__)

# Local properties Spark's MicroBatchExecution sets on every job of a batch (StreamExecution.QUERY_ID_KEY,
# MicroBatchExecution.BATCH_ID_KEY; the job group is the run id).
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"
RUN_ID_PROPERTY = "spark.jobGroup.id"
# Write options with no meaning for an append-only stream.
REFUSED = ("partition", "partition_overwrite_mode")
# Stream options that are not write options: ``auto_load_merge`` (true / false) says whether the sink merges
# its small segments after commits (unset: yes, unless the table property auto_load_merge is false);
# ``merge_levels``: ``all`` (default) merges merged segments again level by level, ``2`` stops at MINOR's two
# levels as CarbonData's auto load merge does (then a stream keeps one live segment per 12 batches).
AUTO_MERGE_OPTION = "auto_load_merge"
MERGE_LEVELS_OPTION = "merge_levels"
MERGE_LEVELS = ("all", "2")
STREAM_WRITE_OPTIONS = ("checkpointlocation", AUTO_MERGE_OPTION, MERGE_LEVELS_OPTION)


@dataclass
class StreamCommitMessage(WriterCommitMessage):
    """One task's files (None: the task had no row, or its batch was already committed)."""

    batch: StreamBatch | None
    reservation: Reservation | None
    result: TaskResult | None


def current_batch() -> StreamBatch:
    """The micro-batch this task belongs to, from Spark's local properties."""
    ctx = TaskContext.get()
    query = ctx.getLocalProperty(QUERY_ID_PROPERTY) if ctx is not None else None
    batch = ctx.getLocalProperty(BATCH_ID_PROPERTY) if ctx is not None else None
    if not query or batch is None:
        raise CarbonTableError("the carbondata stream writer runs only inside a Structured Streaming "
                               f"micro-batch task (no {QUERY_ID_PROPERTY!r} / {BATCH_ID_PROPERTY!r} property found)")
    return StreamBatch(query, int(batch), ctx.getLocalProperty(RUN_ID_PROPERTY) or "")


class CarbonStreamWriter(DataSourceStreamArrowWriter):
    """Append-only: each micro-batch becomes one segment (or none). See the module docstring."""

    def __init__(self, path: str, schema: StructType, overwrite: bool, options: dict[str, str]):
        if overwrite:
            raise CarbonOptionError("carbondata streaming writes support outputMode('append') only; found an "
                                    "output mode that replaces the table's rows each batch (complete)")
        lowered = {k.lower(): v for k, v in options.items()}
        for key in REFUSED:
            if key in lowered:
                raise CarbonOptionError(f"option {key!r} is not supported by streaming writes (append only); "
                                        f"stream options: {', '.join(sorted(set(WRITE_OPTIONS) - set(REFUSED)))}")
        merge = lowered.get(AUTO_MERGE_OPTION)
        levels = str(lowered.get(MERGE_LEVELS_OPTION, "all")).strip().lower()
        if levels not in MERGE_LEVELS:
            raise CarbonOptionError(f"stream option {MERGE_LEVELS_OPTION!r} must be one of {', '.join(MERGE_LEVELS)}, "
                                    f"found {lowered[MERGE_LEVELS_OPTION]!r}")
        # the off switch, or a merge whatever the table says; unset: merge unless the table says false
        self.post_commit = PostCommit(stream_merge="default" if merge is None else
                                      "always" if parse_bool(merge, f"stream option {AUTO_MERGE_OPTION}") else None,
                                      compact=False, deep=levels == "all")
        write_options = {k: v for k, v in lowered.items() if k not in STREAM_WRITE_OPTIONS}
        table, self.load_options = prepare_table(path, arrow_schema(schema), write_options)
        self.table_path = path
        self.table_uri = table.uri
        # made on the driver: its JVM outlives each batch's tasks and commit, which reserve and end the loads
        self.holder = driver_holder()

    def _table(self) -> TableHandle:
        return TableHandle.open(self.table_path)

    @entry_point
    def write(self, iterator: Iterator[pa.RecordBatch]) -> StreamCommitMessage:
        batch = current_batch()
        batches = (b for b in iterator if b.num_rows)
        first = next(batches, None)
        if first is None:
            return StreamCommitMessage(batch, None, None)
        table = self._table()
        reservation = reserve_batch(table, batch, self.post_commit.names(), self.holder)
        if reservation is None:  # a replay of a committed batch: its rows are in the table already
            log.info("carbondata stream: batch %s of query %s already committed, rows skipped",
                     batch.batch_id, batch.query_id)
            return StreamCommitMessage(batch, None, None)
        load = resume_load(table, reservation, self.load_options)
        ctx = TaskContext.get()
        task_no = ctx.taskAttemptId() if ctx is not None else 0
        result = load.write_task(task_no, itertools.chain([first], batches))
        return StreamCommitMessage(batch, reservation, result)

    @entry_point
    def commit(self, messages: list[StreamCommitMessage | None], batchId: int) -> None:  # noqa: N803
        commit_batch(self._table(), messages, batchId, self.load_options)

    @entry_point
    def abort(self, messages: list[StreamCommitMessage | None], batchId: int) -> None:  # noqa: N803
        abort_batch(self._table(), messages, self.load_options)


def _written(messages: list[StreamCommitMessage | None]) -> list[StreamCommitMessage]:
    return [m for m in messages if m is not None and m.reservation is not None and m.result is not None]


def commit_batch(table: TableHandle, messages: list[StreamCommitMessage | None], batch_id: int,
                 load_options=None) -> str | None:
    """Commit one micro-batch: the id of its new segment, or None (no row, or a replay already committed)."""
    written = _written(messages)
    if not written:
        return None
    segments = {m.reservation.segment_id for m in written}
    batch = written[0].batch
    if len(segments) != 1 or batch is None or batch.batch_id != batch_id:
        raise CarbonTableError(f"streaming batch {batch_id} of table {table.uri}: expected the tasks' files in one "
                               f"segment of that batch, found segments {sorted(segments)} of batch "
                               f"{batch.batch_id if batch else None}")
    load = resume_load(table, written[0].reservation, load_options)
    load.stage(mark_batch(batch, load.segment_id))
    try:
        load.commit([m.result for m in written])
    except BatchAlreadyCommitted as e:
        log.info("carbondata stream: %s; this replay's files are removed", e)
        load.abort()
        return None
    faults.point("stream.committed")
    return load.segment_id


def abort_batch(table: TableHandle, messages: list[StreamCommitMessage | None], load_options=None) -> None:
    """Remove the files of a failed batch and mark its segment "Failure" (only while it is in progress:
    a segment this batch already committed is the table's)."""
    written = _written(messages)
    if not written:
        return
    entry = ts.find(table.load_details(), written[0].reservation.segment_id)
    if entry is not None and entry.status == ts.IN_PROGRESS:
        resume_load(table, written[0].reservation, load_options).abort()
