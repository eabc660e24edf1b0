"""Who runs a load, and whether it is gone: ``LockFiles/Segment_<id>.lock``, one record per reserved segment.

A load reserves segment N "In Progress" and commits it later, possibly from another process (Spark: a short
planning worker reserves, task workers write, another worker commits). If its writer dies in between, N
stays "In Progress" and nothing else would ever end it. So the reservation also writes N's record: the
*holder*, the process whose death means the load is dead (the writing Python process, or for a Spark write
the driver JVM), with its host, pid and start, the operation and the time. The commit or abort deletes it.

A load "In Progress" is judged dead (``dead_load``), as CarbonData judges a load stale when its segment lock
is free:

- its record names a holder on this host whose process is gone (or whose pid now belongs to a process
  started later): dead at once;
- its holder is on another host, or its pid is not recorded: liveness cannot be known from here, so it is
  dead only once it started more than ``STALE_LOAD_S`` (6 h) ago; ``force`` (``carbon-ds unlock --force``)
  skips that wait, never for a holder known alive on this host;
- the record is CarbonData's own (not ours): on a local disk, dead when its OS lock can be taken (Apache
  CarbonData holds it while its load runs); elsewhere the age rule;
- no record (reserved by an older carbon-ds or another tool): the age rule.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass

from carbon_ds.fs import Storage, norm_path
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.tablestatus import LoadDetail

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: CarbonData's own lock files are judged by age
    fcntl = None  # type: ignore[assignment]

# A load whose holder cannot be checked (another host, no pid) counts as dead once it started this long ago
# (the update lock's lease: an overwrite holds that lock for its whole run, so the two agree).
STALE_LOAD_S = 6 * 3600.0
IN_PROGRESS = frozenset({ts.IN_PROGRESS, ts.OVERWRITE_IN_PROGRESS})
RECORD_PREFIX = "Segment_"


def process_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, /proc/<pid>/stat field 22; Linux), else None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
        return stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


@dataclass(frozen=True)
class LoadHolder:
    """The process whose death means a load is dead."""

    host: str
    pid: int | None
    started: str | None = None  # process_start(pid) when taken: tells a reused pid apart
    what: str = "Python process"

    @classmethod
    def this_process(cls) -> LoadHolder:
        return cls.of_pid(os.getpid())

    @classmethod
    def of_pid(cls, pid: int | None, what: str = "Python process") -> LoadHolder:
        """Process ``pid`` of this host (None: no process is known, the age rule applies)."""
        return cls(socket.gethostname(), pid, process_start(pid) if pid is not None else None, what)

    def describe(self) -> str:
        return f"{self.what} pid {self.pid} on {self.host}" if self.pid is not None else f"{self.what} on {self.host}"

    def gone(self) -> bool | None:
        """True: provably dead; False: alive; None: cannot be told from here (another host, no pid)."""
        if self.host != socket.gethostname() or self.pid is None:
            return None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            pass  # it exists (another user's): alive unless its start time says the pid was reused
        now_started = process_start(self.pid)
        return bool(self.started and now_started and now_started != self.started)


def record_path(table_path: str, segment_id: str) -> str:
    """CarbonData's segment lock file name (``CarbonTablePath.addSegmentPrefix(id) + LockUsage.LOCK``)."""
    return Storage.join(table_path, "LockFiles", f"{RECORD_PREFIX}{segment_id}.lock")


def is_record(path: str) -> bool:
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name.startswith(RECORD_PREFIX) and name.endswith(".lock")


def write_record(storage: Storage, table_path: str, segment_id: str, holder: LoadHolder, operation: str,
                 load_start_ms: int) -> None:
    """Record ``holder`` as segment ``segment_id``'s writer (the caller holds the tablestatus lock)."""
    info = {"segment": segment_id, "operation": operation, "host": holder.host, "pid": holder.pid,
            "started": holder.started, "holder": holder.what, "time": load_start_ms}
    storage.write_bytes(record_path(table_path, segment_id), json.dumps(info).encode())


def remove_record(storage: Storage, table_path: str, segment_id: str) -> None:
    storage.delete(record_path(table_path, segment_id))


def _read(storage: Storage, path: str) -> dict | str | None:
    """Our record as a dict, ``"foreign"`` for a file that is not ours (CarbonData's lock), None if absent."""
    try:
        info = json.loads(storage.read_text(path))
    except FileNotFoundError:
        return None
    except (ValueError, OSError):
        return "foreign"
    return info if isinstance(info, dict) and "host" in info else "foreign"


def _os_lock_free(path: str) -> bool:
    """CarbonData's rule on a local disk: the load is over when its segment lock can be taken."""
    if fcntl is None:
        return False
    try:
        with open(path, "ab") as f:
            try:
                fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False
            fcntl.lockf(f, fcntl.LOCK_UN)
            return True
    except OSError:
        return False


def _age(since_ms: int | None, now_ms: int) -> float | None:
    return None if since_ms is None else (now_ms - since_ms) / 1000


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h"


def dead_load(storage: Storage, table_path: str, entry: LoadDetail, now_ms: int | None = None,
              force: bool = False) -> str | None:
    """Why the "In Progress" load ``entry`` is dead (see the module docstring), or None while it may live."""
    if entry.status not in IN_PROGRESS:
        return None
    now = ts.now_ms() if now_ms is None else now_ms
    path = record_path(table_path, entry.name)
    info = _read(storage, path)
    if isinstance(info, dict):
        pid = info.get("pid")
        holder = LoadHolder(str(info.get("host")), pid if isinstance(pid, int) else None,
                            info.get("started") if isinstance(info.get("started"), str) else None,
                            str(info.get("holder") or "process"))
        gone = holder.gone()
        if gone:
            return f"its writer, {holder.describe()}, is gone"
        if gone is False:
            return None
        since = info.get("time") if isinstance(info.get("time"), int) else entry.load_start_ms
        who = f"its writer, {holder.describe()}, cannot be checked from here"
    elif info == "foreign":
        if storage.is_local:
            if _os_lock_free(path):
                return f"its segment lock {storage.uri(path)} is free (CarbonData's rule: its writer is gone)"
            return None
        since, who = entry.load_start_ms, f"its segment lock {storage.uri(path)} cannot be tested on this store"
    else:
        since, who = entry.load_start_ms, "no writer is recorded for it (an older carbon-ds or another tool)"
    if force:
        return f"{who}; given up by force"
    age = _age(since, now)
    if age is not None and age > STALE_LOAD_S:
        return f"{who}, and it started {_hours(age)} ago (over the {_hours(STALE_LOAD_S)} limit)"
    return None


def orphan_records(storage: Storage, table_path: str, entries: list[LoadDetail]) -> list[str]:
    """Records of segments that are no longer "In Progress" (their load ended without removing them)."""
    live = {norm_path(record_path(table_path, e.name)) for e in entries if e.status in IN_PROGRESS}
    return [f.path for f in storage.list(Storage.join(table_path, "LockFiles"))
            if is_record(f.path) and norm_path(f.path) not in live and isinstance(_read(storage, f.path), dict)]

