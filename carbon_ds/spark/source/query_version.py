"""Which table version the tasks of one Spark query read.

``partitions()`` plans against one tablestatus version and each ``CarbonPartition`` carries what its task
needs of that version: its files and blocklets, their segment ids, the committed deletes of each file
(resolved when planned, carried on its pieces) and the version's digest. A task reads exactly that: it never
lists segments or reads tablestatus, the update status or a delete delta again, so a commit landing while the
query runs is not seen by any of its tasks.

PySpark keeps a relation's planned partitions and hands them to later queries on the same DataFrame or
temporary view (measured on 4.1-4.3, see the notes on the data source API), even after an INSERT INTO that
view. A task tells the two cases apart by time: every query carries its id as a UUIDv7 local property
(``spark.sql.execution.query.id``), whose first 48 bits are when the query was built. A plan made before
that belongs to an earlier query (or is a plan the Spark extension kept for an unchanged table): the task
reads the planned version when the query began with it (the table is still at it, or only loads committed
after the query began, ``version_at``), else the table as it is now, which is the same version for every
task of the query unless another commit lands after the query began, and that case fails the task (and the
query) rather than mixing versions. Without that property (older Spark) a task re-plans whenever the
version changed, as before.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass

from pyspark import TaskContext

from carbon_ds.errors import CarbonTableError
from carbon_ds.fs import Storage
from carbon_ds.names import VERIFIED_PLANS
from carbon_ds.table.meta.files.deltas import committed_status_name
from carbon_ds.table.meta.status.tablestatus import FAILURE, IN_PROGRESS, OVERWRITE_IN_PROGRESS, LoadDetail, parse_time

QUERY_ID = "spark.sql.execution.query.id"
# local property the Spark extension sets when it reuses kept read plans (jvm/src ReadPlans): for each,
# "<version>@<planned ms>=<ms when the JVM found the table still at that version>", comma-separated
_NOT_COMMITTED = frozenset({IN_PROGRESS, OVERWRITE_IN_PROGRESS, FAILURE})


@dataclass(frozen=True)
class PlannedSnapshot:
    """One table version as a partition carries it (bounded: one entry per piece of the partition)."""

    version: str  # digest of the tablestatus entries planned against
    planned_ms: int  # wall clock of the planning (driver)
    segments: tuple[str | None, ...]  # segment id of each piece, in piece order


def version_of(details: list[LoadDetail]) -> str:
    """A short digest of what a read sees in one tablestatus version: the readable segments and their
    segment files, and the committed update status (CLEAN FILES dropping unreadable entries keeps it)."""
    readable = [f"{d.name}:{d.segment_file}:{d.file_format}:{d.path}" for d in details if d.readable]
    text = "|".join([*readable, str(committed_status_name(details))])
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def version_at(details: list[LoadDetail], started: int) -> str:
    """``version_of`` the tablestatus as it read at ``started`` if every commit after that only added
    segments: the segments committed after ``started`` left out. Sound either way: a commit is written after
    its stamp, so one stamped later than ``started`` landed after it; any other kind of commit since (a delete,
    a compaction, a segment marked for delete, a load stamped earlier but written later) leaves a digest no
    earlier version had."""
    return version_of([d for d in details if not (d.readable and d.load_end_ms is not None and d.load_end_ms > started)])


def uuid7_ms(text: str | None) -> int | None:
    """The epoch milliseconds in a UUIDv7 (None for anything else)."""
    try:
        u = uuid.UUID(text) if text else None
    except ValueError:
        return None
    if u is None or u.version != 7:
        return None
    return u.int >> 80


def query_started_ms() -> int | None:
    """When the running Spark query was built, from its UUIDv7 id; None outside a task or on a Spark
    that does not say."""
    ctx = TaskContext.get()
    return uuid7_ms(ctx.getLocalProperty(QUERY_ID)) if ctx is not None else None


def plan_key(snapshot: PlannedSnapshot) -> str:
    """How a plan is named in the ``VERIFIED_PLANS`` local property."""
    return f"{snapshot.version}@{snapshot.planned_ms}"


def verified_ms(snapshot: PlannedSnapshot) -> int | None:
    """When the Spark extension last found the table still at ``snapshot``'s version before reusing its plan
    for the running query (None when it did not say)."""
    ctx = TaskContext.get()
    text = ctx.getLocalProperty(VERIFIED_PLANS) if ctx is not None else None
    key = plan_key(snapshot)
    for entry in (text or "").split(","):
        name, _, when = entry.rpartition("=")
        if name == key and when.isdigit():
            return int(when)
    return None


def in_task() -> bool:
    return TaskContext.get() is not None


def check_unchanged_since(storage: Storage, table_path: str, status_path: str, details: list[LoadDetail],
                          started: int) -> None:
    """A re-planning task of a later query must read the version every other task of it reads: the one
    current when the query began. A commit after that cannot be told apart, so the query fails. A segment
    list (``status_path``: the live file, plain or versioned) written since then only by a reservation (the
    query's own INSERT reserves its segment) or a failed load changed nothing a read sees."""
    written = storage.mtime_ns(status_path)
    if written is None or written // 1_000_000 <= started or not _committed_after(storage, table_path, details,
                                                                                    started):
        return
    raise CarbonTableError(
        f"table {storage.uri(table_path)} changed while this query ran, and the query reuses a plan "
        "Spark kept from an earlier query on the same DataFrame or view, so its tasks cannot all read "
        "one version; run the query again (or read the table again with spark.read)")


def _committed_after(storage: Storage, table_path: str, details: list[LoadDetail], started: int) -> bool:
    """Whether a commit a read can see landed after ``started``: a segment committed, marked for delete or
    compacted, or a DELETE/UPDATE's status file written (an entry without a parsable time counts as one)."""
    for d in details:
        if d.status in _NOT_COMMITTED:
            continue
        stamp = d.load_end_ms if d.readable else parse_time(d.modification_time)
        if stamp is None or stamp > started:
            return True
    name = committed_status_name(details)
    written = storage.mtime_ns(Storage.join(table_path, "Metadata", name)) if name else None
    return written is not None and written // 1_000_000 > started
