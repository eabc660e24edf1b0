"""Exactly-once micro-batch commits: one segment per streaming batch, never two for the same batch.

A Structured Streaming query has an id that survives restarts from its checkpoint, and numbers its
micro-batches; after a crash Spark replays the last batch it has not recorded as done, with the same query
id and batch id. The segment of batch B of query Q carries two keys in its tablestatus entry (CarbonData's
reader keeps keys it does not know, as ``LoadMetadataDetails`` is read by Gson):

- ``carbonDsStreamReserved`` = ``Q:B:<run id>``, set when the first task of the batch reserves the segment
  ("In Progress"); the other tasks of the same run find and share it. A reservation left by an earlier run
  of the same batch (a crash) is marked "Failure" rather than reused: its tasks may have left files.
- ``carbonDsStreamBatch`` = ``Q:B``, set by the commit in the same locked tablestatus write that flips the
  segment to "Success" (a staged step of ``Load.commit``). That write is the commit point: before it the
  batch has no visible row and no mark; after it both. There is no second file to keep in step with it.

A replayed batch is recognised by its ``carbonDsStreamBatch`` mark in tablestatus or in
``tablestatus.history`` (where CLEAN FILES moves entries, before it drops them from tablestatus): its tasks
write nothing and its commit changes nothing. The mark stays when the segment is later compacted or deleted.
"""

from __future__ import annotations

from dataclasses import dataclass

from carbon_ds.errors import CarbonTableError
from carbon_ds.table.loads.load_base import Reservation
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.load_records import LoadHolder, write_record
from carbon_ds.table.meta.status.tablestatus import LoadDetail
from carbon_ds.table.ops.segments.manage import read_history

RESERVED_KEY = "carbonDsStreamReserved"
BATCH_KEY = "carbonDsStreamBatch"


@dataclass(frozen=True)
class StreamBatch:
    """One micro-batch of one streaming query run."""

    query_id: str
    batch_id: int
    run_id: str = ""

    @property
    def key(self) -> str:
        return f"{self.query_id}:{self.batch_id}"

    @property
    def reservation_mark(self) -> str:
        return f"{self.key}:{self.run_id}"


class BatchAlreadyCommitted(CarbonTableError):
    """Raised inside a commit's locked write when the batch's mark is already there (a replay)."""


def committed_segment(table: TableHandle, batch: StreamBatch, entries: list[LoadDetail] | None = None) -> str | None:
    """The segment that committed ``batch``, found in tablestatus (``entries`` if given) or its history."""
    current = entries if entries is not None else table.load_details()
    for e in [*current, *read_history(table)]:
        if e.other.get(BATCH_KEY) == batch.key:
            return e.name
    return None


def reserve_batch(table: TableHandle, batch: StreamBatch, post_commit: tuple[str, ...] = (),
                  holder: LoadHolder | None = None) -> Reservation | None:
    """The "In Progress" segment of ``batch`` in this run, reserved by the first task that asks; None when
    the batch is already committed (a replay: nothing to write). ``holder``: the process whose death ends
    the batch's load (the streaming query's driver; meta.status.load_records)."""
    with table.edit_status("STREAM LOAD (reserve)") as edit:
        entries = edit.entries
        if committed_segment(table, batch, entries) is not None:
            return None
        now = ts.now_ms()
        for e in entries:
            mark = e.other.get(RESERVED_KEY, "")
            if not mark.startswith(batch.key + ":") or e.status != ts.IN_PROGRESS:
                continue
            if mark == batch.reservation_mark:
                return _reservation(table, e, post_commit)
            e.status = ts.FAILURE  # an earlier run's attempt at this batch: its tasks may have left files
            e.modification_time = str(now)
        entry = LoadDetail(name=ts.next_segment_id(entries), status=ts.IN_PROGRESS, load_start_time=str(now),
                           visibility="true", other={RESERVED_KEY: batch.reservation_mark})
        write_record(table.storage, table.path, entry.name, holder or LoadHolder.this_process(),
                     "STREAM LOAD", now)
        entries.append(entry)
    return _reservation(table, entry, post_commit)


def _reservation(table: TableHandle, entry: LoadDetail, post_commit: tuple[str, ...]) -> Reservation:
    return Reservation(table.uri, entry.name, int(entry.load_start_time or ts.now_ms()), False,
                       post_commit=post_commit)


def mark_batch(batch: StreamBatch, segment_id: str):
    """The staged step that records ``batch`` on its segment inside the commit's locked write, refusing
    (BatchAlreadyCommitted, nothing written) when another segment already carries the mark."""

    def step(entries: list[LoadDetail]) -> None:
        for e in entries:
            if e.other.get(BATCH_KEY) == batch.key and e.name != segment_id:
                raise BatchAlreadyCommitted(f"batch {batch.batch_id} of streaming query {batch.query_id} is "
                                            f"already committed as segment {e.name}")
        entry = ts.find(entries, segment_id)
        if entry is None:
            raise CarbonTableError(f"cannot commit streaming batch {batch.key}: segment {segment_id} has no "
                                   "tablestatus entry")
        entry.other[BATCH_KEY] = batch.key

    return step
