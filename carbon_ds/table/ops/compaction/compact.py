"""Compaction: merge small carbondata segments into one, as Apache CarbonData does (MINOR, MAJOR, CUSTOM).

Which segments: carbon_ds.table.ops.compaction.selection (CarbonData's selection, property names and
defaults). Skipped always: segments not readable (In Progress, Marked for Delete, Compacted, Failure,
Streaming) and segments in another format than carbondata (added Parquet/ORC/CSV/JSON folders). An added
carbondata folder may be merged; its folder is never deleted (CLEAN FILES only drops its metadata).

Protocol for one group (under ``LockFiles/compaction.lock`` and the update lock, so a second compaction is
refused naming the holder and UPDATE/DELETE/overwrites fail clearly instead of losing a change):
1. Reserve the merged segment ``<first id>.<level>`` ("In Progress") in one tablestatus write.
2. Merge tasks, one per partition folder (one on an unpartitioned table), stream the group's rows
   (delete-delta rows dropped) through a k-way merge of sorted runs into the table's normal load
   (carbon_ds.table.ops.compaction.tasks). They run in this process, or wherever ``runner`` sends them (Spark tasks:
   carbon_ds.spark.statements.compaction_tasks); each returns the files it wrote.
3. One tablestatus write flips the merged segment to Success and the sources to Compacted with
   ``mergedLoadName``: readers see either the old segments or the merged one, never both.
A crash or a failed task before 3 leaves the merged segment "In Progress" or "Failure" (never read), its
files removed or left for the next compaction to remove, and the sources readable; the next compaction
merges again under the same name. Concurrent appends take new integer ids and are never touched.

Automatic merges after a load (``auto_compact``; ``merge_in_background`` for the streaming sink) take the
compaction lock only: another compaction running means they do nothing (it merges these segments too), and
they give way to UPDATE, DELETE, MERGE and overwrites instead of refusing them (``yield_to_writers``).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field

from carbon_ds import faults
from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.fs import dirname
from carbon_ds.progress import progress
from carbon_ds.table.loads.load_base import Reservation, TaskResult
from carbon_ds.table.loads.protocol import load_for
from carbon_ds.table.meta.files import deltas as D
from carbon_ds.table.meta.handle import DataFile, TableHandle
from carbon_ds.table.meta.locks import UPDATE_LOCK, UPDATE_LOCK_STALE_S, TableLock, held_by_live_holder
from carbon_ds.table.meta.options import LoadOptions
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.load_records import LoadHolder, write_record
from carbon_ds.table.meta.status.tablestatus import LoadDetail
from carbon_ds.table.ops.compaction.selection import (
    CUSTOM,
    MAJOR,
    MINOR,
    Settings,
    id_order,
    mergeable,
    merged_name,
    parse_kind,
    select,
)
from carbon_ds.table.ops.compaction.tasks import CompactionTask, plan_pieces, run_task
from carbon_ds.table.read.pruning import Piece

COMPACTION_LOCK = "compaction"
# Runs a group's compaction tasks and returns their results in any order (raises when one fails)
Runner = Callable[[list[CompactionTask]], list[TaskResult]]


@dataclass
class Merged:
    """One merge group's outcome."""

    segment: str  # the merged segment's id, e.g. "0.1"
    sources: list[str] = field(default_factory=list)
    rows: int = 0


def local_runner(table: TableHandle) -> Runner:
    """Run the tasks one after another in this process, with progress bars on a terminal."""

    def run(tasks: list[CompactionTask]) -> list[TaskResult]:
        name = tasks[0].reservation.segment_id if tasks else ""
        return [run_task(t, table, bar=True) for t in progress(tasks, f"compacting into {name}", unit=" tasks")]

    return run


class CompactionBusy(CarbonTableError):
    """Another compaction holds the table's compaction lock."""


class CompactionYielded(CarbonTableError):
    """An automatic merge gave way to an UPDATE, DELETE, MERGE or overwrite that started meanwhile."""


def compact(table: TableHandle, kind: str = MINOR, segments=None, lock_timeout: float = 0.0,
            runner: Runner | None = None, settings: Mapping[str, str] | None = None,
            include_external: bool = False, yield_to_writers: bool = False, deep: bool = False) -> list[Merged]:
    """Run a compaction; returns the merged segments ([] when nothing qualified).

    Args:
        deep: MINOR also merges level-2 and later results again (the streaming sink's merge;
            carbon_ds.table.ops.compaction.selection, "Deep MINOR").
        yield_to_writers: (automatic merges) take no update lock, so UPDATE, DELETE, MERGE and overwrites are
            not refused because of the merge; a group whose commit would meet one of them running (its
            update lock held), or their changes to its sources committed meanwhile, is dropped instead
            (nothing committed, its sources stay as they are for a later merge). One narrow window stays:
            such a writer that starts in the instant between that check and the merge's tablestatus write
            finds its segments Compacted at its own commit and fails cleanly (nothing of it committed).
        include_external: CUSTOM only: the chosen segments may be added Parquet / ORC / CSV / JSON folders;
            their live rows (delete deltas applied) are rewritten into the merged carbondata segment and
            they become Compacted (their files are never deleted). Never done otherwise.
        runner: where the compaction tasks run (default: this process; carbon_ds.spark.statements.compaction_tasks: Spark).
        settings: CarbonData system-level properties (``carbon.compaction.level.threshold``, ...) used
            where the table has no table property of its own.

    Raises:
        CarbonTableError: another compaction (or UPDATE/DELETE/overwrite) holds its lock, naming it; a
            CUSTOM segment cannot be compacted; a source changed meanwhile (nothing committed).
    """
    kind = parse_kind(kind)
    if include_external and kind != CUSTOM:
        raise CarbonOptionError("include_external=True is only for kind='custom' with the segments to rewrite")
    if include_external and table.partition_columns:
        raise CarbonOptionError(f"include_external=True on the partitioned table {table.uri} is not supported "
                                "yet; external segments are kept as they are")
    if kind != CUSTOM and segments is not None:
        raise CarbonOptionError(f"Custom segments not supported when doing {kind.upper()} compaction: "
                                f"segments={segments!r} is only for kind='custom'")
    operation = f"{kind.upper()} COMPACTION"
    lock = TableLock(table.storage, table.path, COMPACTION_LOCK, timeout=lock_timeout,
                     stale_after=UPDATE_LOCK_STALE_S, operation=operation)
    try:
        lock.acquire()
    except CarbonTableError:
        raise CompactionBusy(
            f"Compaction is in progress: {operation} of {table.uri} refused, another compaction "
            f"({lock.holder() or 'not recorded'}) holds {table.storage.uri(lock.path)}; retry when it has "
            "finished, or 'carbon-ds unlock' if that process is gone") from None
    runner = runner or local_runner(table)
    writers = nullcontext() if yield_to_writers else table.update_lock(operation, lock_timeout)
    with lock, writers:
        _drop_failed_merges(table)
        entries = table.load_details()
        # MAJOR repeats over the segments there at its start only (CarbonData: new loads wait)
        upto = max((id_order(e) for e in entries if mergeable(e)), default=None) if kind == MAJOR else None
        done: list[Merged] = []
        while not (yield_to_writers and writer_running(table)):
            group = select(table, table.load_details(), kind, segments, settings, upto, include_external, deep)
            if not group:
                break
            try:
                done.append(_merge_group(table, group, kind, runner, include_external, yield_to_writers))
            except CompactionYielded:
                break
            if kind == CUSTOM:
                break
        return done


def writer_running(table: TableHandle) -> bool:
    """Whether an UPDATE, DELETE, MERGE or overwrite holds the table's update lock (its holder alive)."""
    return held_by_live_holder(table.storage, table.path, UPDATE_LOCK)


def _drop_failed_merges(table: TableHandle) -> None:
    """Merged segments a compaction left "In Progress" (it died: we hold the compaction lock, so none is
    running) or "Failure" lose their files and their entry, so the retry takes the same name, as in
    CarbonData. No reader ever saw them."""
    with table.edit_status("COMPACTION (drop failed merges)") as edit:
        entries = edit.entries
        stale = [e for e in entries if "." in e.name and e.status in (ts.IN_PROGRESS, ts.FAILURE)]
        for e in stale:
            start = e.load_start_ms or 0
            load_for(table, Reservation(table.uri, e.name, start, False), LoadOptions()).remove_files()
        entries[:] = [e for e in entries if e not in stale]


def plan_tasks(table: TableHandle, reservation: Reservation, files: list[DataFile], status_name: str | None
               ) -> list[CompactionTask]:
    """One task per partition folder (CarbonData merges partition by partition), one on a plain table; each
    carries its files planned with their deletes under ``status_name``, the committed update status."""
    groups: dict[str, list[Piece]] = {}
    for p in plan_pieces(table, files, status_name):
        groups.setdefault(dirname(p.path) if table.partitioning and table.partitioning.by_folder else "", []).append(p)
    return [CompactionTask(table.uri, reservation, n, tuple(ps)) for n, (_folder, ps) in enumerate(sorted(groups.items()))]


def _merge_group(table: TableHandle, group: list[LoadDetail], kind: str, runner: Runner,
                 include_external: bool = False, yield_to_writers: bool = False) -> Merged:
    table.check_writable("compaction", data=True)
    start = ts.now_ms()
    ids = [e.name for e in group]
    with table.edit_status("COMPACTION (reserve)") as edit:
        entries = edit.entries
        name = merged_name(group, entries)
        _check_sources(table, entries, ids, name, include_external)
        entries.append(LoadDetail(name=name, status=ts.IN_PROGRESS, load_start_time=str(start),
                                  visibility="true"))
        write_record(table.storage, table.path, name, LoadHolder.this_process(), f"{kind.upper()} COMPACTION",
                     start)
        status_name = D.committed_status_name(entries)
    faults.point("compaction.reserved")
    reservation = Reservation(table.uri, name, start, False)
    load = load_for(table, reservation, LoadOptions())
    merged = Merged(name, ids)
    try:
        results = runner(plan_tasks(table, reservation, table.files(ids), status_name))
        merged.rows = sum(r.rows for r in results)
        faults.point("compaction.written")

        def finish(entries: list[LoadDetail]) -> None:
            faults.point("compaction.before_status")
            try:
                if yield_to_writers and writer_running(table):
                    raise CompactionYielded(f"automatic merge into {name} of {table.uri} gave way to an "
                                            "UPDATE/DELETE/overwrite that started meanwhile; nothing was committed")
                _check_sources(table, entries, ids, None, include_external)
                if D.committed_status_name(entries) != status_name:
                    raise CarbonTableError(f"compaction of {table.uri}: rows of segments {', '.join(ids)} were "
                                           "updated or deleted meanwhile; nothing was committed")
            except CompactionYielded:
                raise
            except CarbonTableError as e:  # a writer won: an automatic merge gives way, a requested one fails
                if yield_to_writers:
                    raise CompactionYielded(str(e)) from e
                raise
            now = str(ts.now_ms())
            for e in entries:
                if e.name in ids:
                    e.status = ts.COMPACTED
                    e.merged_load_name = name
                    e.modification_time = now
                elif e.name == name and kind == MAJOR:
                    e.major_compacted = "true"

        load.stage(finish)
        load.commit(results)
    except BaseException:
        load.abort()
        raise
    return merged


def _check_sources(table: TableHandle, entries: list[LoadDetail], ids: list[str], name: str | None,
                   include_external: bool = False) -> None:
    for i in ids:
        e = ts.find(entries, i)
        if e is None or not mergeable(e, include_external):
            found = "gone" if e is None else f"{e.status!r}"
            raise CarbonTableError(f"compaction of {table.uri}: segment {i} is {found} now (deleted or "
                                   "overwritten meanwhile); nothing was committed")


def auto_compact(table: TableHandle, settings: Mapping[str, str] | None = None, default: bool | None = None,
                 force: bool = False, deep: bool = False) -> list[Merged]:
    """MINOR compaction after a load when ``auto_load_merge`` is true (table property, else the setting
    ``carbon.enable.auto.load.merge``, else ``default``: off, CarbonData's default, unless the caller says;
    ``force``: regardless). It gives way to every writer (``yield_to_writers``): appends go on beside it, and
    an UPDATE, DELETE, MERGE or overwrite is never refused because of it. Never raises: the load is committed
    either way, so a failure is reported as a warning, as CarbonData logs it; another merge running is not a
    failure (it takes these segments too). ``deep``: merge level-2 and later results again (``compact``)."""
    try:
        if not force and not Settings(table, settings).auto_load_merge(default):
            return []
        return compact(table, MINOR, settings=settings, yield_to_writers=True, deep=deep)
    except CompactionBusy:
        return []
    except Exception as e:  # noqa: BLE001 - a committed load must not fail afterwards
        warnings.warn(f"automatic compaction of {table.uri} after a load did not run: {e}", stacklevel=2)
        return []


# Merges running in the background, at most one per table in this process (meta: table uri -> thread)
_RUNNING: dict[str, threading.Thread] = {}
_RUNNING_LOCK = threading.Lock()


def merge_in_background(table: TableHandle, default: bool | None = None, force: bool = False, deep: bool = False
                        ) -> threading.Thread | None:
    """``auto_compact`` in a thread of its own, so the writer that committed goes on at once (the streaming
    sink's next batch). At most one per table in this process: while one runs, a new commit starts none (the
    running merge selects again after each group, so it takes the new segments). Returns the thread, None
    when one was running. A merge cut short (the process ends) leaves its merged segment "In Progress",
    never read; the next compaction removes it and the sources stay readable."""
    with _RUNNING_LOCK:
        running = _RUNNING.get(table.uri)
        if running is not None and running.is_alive():
            return None
        thread = threading.Thread(target=auto_compact, args=(table,), name=f"carbon-ds merge {table.uri}",
                                  kwargs={"default": default, "force": force, "deep": deep})
        _RUNNING[table.uri] = thread
        thread.start()
    return thread


def wait_for_merges(timeout: float | None = None) -> None:
    """Wait for this process's background merges to end (tests, benchmarks, a clean shutdown)."""
    with _RUNNING_LOCK:
        threads = list(_RUNNING.values())
    for thread in threads:
        thread.join(timeout)
