"""Compaction through Spark: each compaction task (one merge group in one partition folder) is a Spark task.

The driver selects the groups, reserves each merged segment and commits it (carbon_ds.table.ops.compaction.compact);
only the merging runs on the executors: ``sparkContext.parallelize`` of the small ``CompactionTask``
descriptions, one partition each, every task writing its merged files and returning their names and sizes.
A failed task fails the job: the driver then removes what the tasks wrote and marks the merged segment
"Failure" (files a still-running task writes after that are left over, never read, and removed by the next
compaction), so the table keeps its committed segments.

The jobs run in the job group ``JOB_GROUP`` (see ``sparkContext.statusTracker()``). On Spark Connect, which
has no SparkContext, the merge runs in the calling process.
"""

from __future__ import annotations

import time
from typing import Any

from carbon_ds.spark.messages import entry_point
from carbon_ds.table.loads.load_base import TaskResult
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.ops.compaction.compact import Merged, Runner, compact, local_runner
from carbon_ds.table.ops.compaction.selection import SYSTEM
from carbon_ds.table.ops.compaction.tasks import CompactionTask, run_task

JOB_GROUP = "carbon-ds compaction"


@entry_point
def run_compaction_task(task: CompactionTask) -> TaskResult:
    """One Spark task: merge ``task``'s files into the reserved segment (no commit)."""
    return run_task(task)


def _context(spark: Any) -> Any:
    try:
        return spark.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect raises its own error type for a missing SparkContext
        return None


def spark_runner(spark: Any) -> Runner | None:
    """A runner sending compaction tasks to Spark (None on Spark Connect)."""
    sc = _context(spark)
    if sc is None:
        return None

    def run(tasks: list[CompactionTask]) -> list[TaskResult]:
        if not tasks:
            return []
        previous = (sc.getLocalProperty("spark.jobGroup.id"), sc.getLocalProperty("spark.job.description"))
        sc.setJobGroup(JOB_GROUP, f"compaction into segment {tasks[0].reservation.segment_id} "
                                  f"({len(tasks)} tasks)")
        earlier = set(sc.statusTracker().getJobIdsForGroup(JOB_GROUP))
        try:
            return sc.parallelize(tasks, len(tasks)).map(run_compaction_task).collect()
        except BaseException:
            # the abort that follows removes the reserved segment's files: tasks of the failed job still
            # running would write theirs after it, where nothing would ever remove them
            sc.cancelJobGroup(JOB_GROUP)
            _wait_for_tasks(sc, earlier)
            raise
        finally:
            sc.setLocalProperty("spark.jobGroup.id", previous[0])
            sc.setLocalProperty("spark.job.description", previous[1])

    return run


def _wait_for_tasks(sc: Any, earlier: set[int], timeout: float = 120.0) -> None:
    """Until no task of this runner's jobs (those of the group not in ``earlier``) runs, at most ``timeout``."""
    tracker = sc.statusTracker()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = 0
        for job in set(tracker.getJobIdsForGroup(JOB_GROUP)) - earlier:
            info = tracker.getJobInfo(job)
            for stage in (info.stageIds if info is not None else []):
                st = tracker.getStageInfo(stage)
                running += st.numActiveTasks if st is not None else 0
        if not running:
            return
        time.sleep(0.2)


def settings(spark: Any) -> dict[str, str]:
    """CarbonData's system-level compaction properties set in the Spark conf (``carbon.*`` names)."""
    out = {}
    for system, _default in SYSTEM.values():
        value = spark.conf.get(system, None)
        if value is not None:
            out[system] = value
    return out


def compact_with_spark(spark: Any, table: TableHandle, kind: str = "minor", segments=None,
                       lock_timeout: float = 0.0, include_external: bool = False) -> list[Merged]:
    """``table.compact(kind, segments)`` with the compaction tasks run by Spark; system-level properties come
    from the Spark conf. Returns the merged segments ([] when nothing qualified)."""
    runner = spark_runner(spark) or local_runner(table)
    return compact(table, kind, segments, lock_timeout, runner=runner, settings=settings(spark),
                   include_external=include_external)
