"""Table locks: ``<table>/LockFiles/<name>.lock`` created exclusively, deleted on release.

The file holds who took the lock and when, so a lock left by a crashed process can be recognised and
broken once it is older than ``stale_after`` seconds. The tablestatus lock is only held around a
read-modify-write of one small file, so a lock that old cannot belong to a live writer.

Exclusive creation is atomic where ``Storage.conditional_writes`` holds: local disks (O_EXCL) and S3 stores
that honour ``If-None-Match`` (a conditional PUT); there a stale lock is also taken over with one
conditional PUT (``If-Match`` the stale lock's ETag), so of two breakers exactly one wins. On local disks
breaking re-reads the lock and deletes only the exact lock judged stale, which narrows but does not remove
the window in which two breakers race. Elsewhere (HDFS, stores without conditional writes) a writer first
announces itself with its own file ``<name>.lock.<token>.intent``, then lists the folder, and goes on to
check-then-write the lock only if its intent is the only live one; otherwise it withdraws and retries after
a random pause. Of two writers, the one that lists later sees the other's intent (each lists after its own
write), so on a store whose listings are strongly consistent (S3, HDFS) at most one passes; the writer
then reads its lock back to notice a writer outside this protocol. None of this is proof against a lock
lost to its lease, so a tablestatus edit (``TableHandle.edit_status``) replaces the file only if it is still
the version it read under the lock, and fails with ``CarbonConcurrentError`` otherwise.
"""

from __future__ import annotations

import json
import os
import random
import socket
import time
import uuid
from types import TracebackType

from carbon_ds.errors import CarbonConcurrentError, CarbonTableError
from carbon_ds.fs import Storage
from carbon_ds.table.meta.status.load_records import is_record

TABLESTATUS_LOCK = "tablestatus"
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_STALE_AFTER_S = 60.0
# UPDATE, DELETE and overwrites take this one (never two at once on a table)
UPDATE_LOCK = "update"
# A DELETE/UPDATE or overwrite can run for hours and does not refresh its lock, so only a lock this old is
# taken for a crashed writer's and broken (the tablestatus lock's 60 s would break live writers' locks).
UPDATE_LOCK_STALE_S = 6 * 3600.0
# An intent file this old belongs to a writer that died between announcing itself and withdrawing (the
# whole round takes a few requests): it no longer counts, and the next contender deletes it.
INTENT_STALE_S = 30.0


def lock_path(storage: Storage, table_path: str, name: str) -> str:
    return Storage.join(table_path, "LockFiles", f"{name}.lock")


class TableLock:
    """``with TableLock(storage, table_path): ...`` — blocks until held or ``timeout`` seconds pass."""

    def __init__(
        self,
        storage: Storage,
        table_path: str,
        name: str = TABLESTATUS_LOCK,
        timeout: float = DEFAULT_TIMEOUT_S,
        stale_after: float = DEFAULT_STALE_AFTER_S,
        operation: str | None = None,
        pid_bound: bool = True,
        pid: int | None = None,
    ):
        self.storage = storage
        self.table_path = table_path
        self.path = lock_path(storage, table_path, name)
        self.timeout = timeout
        self.stale_after = stale_after
        self.token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"
        self.held = False
        self.operation = operation  # recorded in the file, so a refused writer learns who holds the lock
        # A pid-bound lock is broken as soon as its process is gone (same host); a lock handed between
        # processes (Spark's driver-side writer, committed by another worker) waits for its lease instead.
        self.pid_bound = pid_bound
        # The process whose death frees the lock, when not this one (Spark: the driver JVM).
        self.pid = pid
        self.name = name

    def _content(self) -> bytes:
        info = {"owner": self.token, "time": time.time_ns() // 1_000_000, "host": socket.gethostname()}
        if self.pid is not None:
            info["pid"] = self.pid
        elif self.pid_bound:
            info["pid"] = os.getpid()
        if self.operation:
            info["operation"] = self.operation
        return json.dumps(info).encode()

    def _info(self) -> dict | None:
        try:
            info = json.loads(self.storage.read_text(self.path))
            return info if isinstance(info, dict) else None
        except (FileNotFoundError, ValueError, OSError):
            return None

    def holder(self) -> str | None:
        """Who holds the lock now: operation, host, pid and since when (None: free, or not recorded)."""
        info = self._info()
        return describe_holder(info) if info else None

    def _read_existing(self) -> tuple[str, int] | None:
        try:
            info = json.loads(self.storage.read_text(self.path))
            return str(info["owner"]), int(info["time"])
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, OSError):
            # Being written right now, or written by another tool: judge its age by the file itself.
            files = [f for f in self.storage.list(os.path.dirname(self.path)) if f.path == self.path]
            if not files:
                return None
            mtime = (files[0].mtime_ns or time.time_ns()) // 1_000_000
            return "", mtime

    def _created(self) -> bool:
        """Create the lock file: one atomic call where the store has one, else through an intent round."""
        if self.storage.conditional_writes(self.path):
            return self.storage.create_exclusive(self.path, self._content())
        intent = f"{self.path}.{uuid.uuid4().hex}.intent"
        self.storage.write_bytes(intent, self._content())
        try:
            if not self._alone(intent):
                time.sleep(random.uniform(0.0, 0.05))  # both saw each other: break the tie at random
                return False
            if not self.storage.create_exclusive(self.path, self._content()):
                return False
        finally:
            self.storage.delete(intent)
        existing = self._read_existing()
        return existing is not None and existing[0] == self.token

    def _alone(self, intent: str) -> bool:
        """Whether ``intent`` is the only live intent for this lock; intents of dead writers are deleted."""
        prefix = f"{self.path}."
        now_ns = time.time_ns()
        alone = True
        for f in self.storage.list(os.path.dirname(self.path)):
            if f.path == intent or not (f.path.startswith(prefix) and f.path.endswith(".intent")):
                continue
            if f.mtime_ns is not None and now_ns - f.mtime_ns > INTENT_STALE_S * 1e9:
                self.storage.delete(f.path)
            else:
                alone = False
        return alone

    def _take_over(self, existing: tuple[str, int]) -> bool:
        """Break the stale lock ``existing``: True when this call now holds the lock."""
        if self.storage.conditional_writes(self.path) and not self.storage.is_local:
            # One conditional PUT over exactly the stale version: of two breakers, one wins.
            data, version = self.storage.read_versioned(self.path)
            return data is not None and self.storage.replace_if(self.path, self._content(), version)
        # Only break the very lock we judged stale: someone may have replaced it meanwhile.
        if self._read_existing() == existing:
            self.storage.delete(self.path)
        return False

    def check_folders(self) -> None:
        """A lock is taken to write the table: its lock folder and its Metadata must be the table's own (a link
        out of it would let this writer create and delete files, or commit, elsewhere)."""
        what = f"taking lock {self.name} of {self.storage.uri(self.table_path)}"
        self.storage.require_inside(self.path, self.table_path, what)
        self.storage.require_inside(Storage.join(self.table_path, "Metadata", "tablestatus"), self.table_path, what)

    def acquire(self) -> None:
        self.check_folders()
        deadline = time.monotonic() + self.timeout
        delay = 0.005
        while True:
            if self._created():
                self._hold()
                return
            existing = self._read_existing()
            if existing is not None and (time.time() * 1000 - existing[1] > self.stale_after * 1000
                                         or holder_is_gone(self._info())):
                if self._take_over(existing):
                    self._hold()
                    return
                continue
            if time.monotonic() > deadline:
                info = self._info()
                owner = describe_holder(info) if info else (existing[0] if existing else "unknown")
                raise CarbonTableError(
                    f"could not take lock {self.storage.uri(self.path)} within {self.timeout:.0f}s: "
                    f"held by {owner}; if that process is gone, 'carbon-ds unlock <table>' removes the lock"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.2)

    def _hold(self) -> None:
        self.held = True

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        self.storage.require_inside(self.path, self.table_path, f"releasing lock {self.name}")
        existing = self._read_existing()
        # If our lock was broken as stale and re-taken, the file is someone else's: leave it.
        if existing is not None and existing[0] == self.token:
            self.storage.delete(self.path)

    def __enter__(self) -> TableLock:
        if not self.held:  # update_lock() hands out locks already held
            self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        info = self._info() if isinstance(exc, CarbonConcurrentError) else None
        self.release()
        if not isinstance(exc, CarbonConcurrentError):
            return
        where = self.storage.uri(self.path)
        if info is not None and info.get("owner") != self.token:
            raise CarbonConcurrentError(f"{exc}; the table lock {where} was taken over by {describe_holder(info)}"
                                        ) from exc
        if info is None:
            raise CarbonConcurrentError(f"{exc}; the table lock {where} was removed while this writer held it"
                                        ) from exc
        raise CarbonConcurrentError(
            f"{exc}; this writer still held the table lock {where}, so the other writer did not take it (a "
            "writer outside carbon-ds, or a second writer on a store without conditional writes)") from exc


def describe_holder(info: dict) -> str:
    """``DELETE (host h, pid 12, since 2026-11-23 10:00:00 UTC)`` from a lock file's content."""
    parts = [f"host {info['host']}"] if info.get("host") else []
    if info.get("pid") is not None:
        parts.append(f"pid {info['pid']}")
    if isinstance(info.get("time"), int):
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(info["time"] / 1000))
        parts.append(f"since {since} UTC")
    what = str(info.get("operation") or "a writer")
    return f"{what} ({', '.join(parts)})" if parts else what


def holder_is_gone(info: dict | None) -> bool:
    """Whether a lock's holder is provably dead: a pid-bound lock of this host whose process is gone."""
    if not info or info.get("host") != socket.gethostname() or not isinstance(info.get("pid"), int):
        return False
    try:
        os.kill(info["pid"], 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OSError):
        return False  # it exists (another user's) or cannot be told: assume alive
    return False


def held_by_live_holder(storage: Storage, table_path: str, name: str) -> bool:
    """Whether lock ``name`` of the table is held by a holder not provably gone (a lock file being written,
    unreadable yet, counts as held: it was taken just now)."""
    try:
        info = json.loads(storage.read_text(lock_path(storage, table_path, name)))
    except FileNotFoundError:
        return False
    except (ValueError, OSError):
        return True
    return not (isinstance(info, dict) and holder_is_gone(info))


def stale_locks(storage: Storage, table_path: str) -> list[tuple[str, str]]:
    """(lock path, holder) of every lock file whose holder is provably gone."""
    out = []
    for f in storage.list(Storage.join(table_path, "LockFiles")):
        if not f.path.endswith(".lock") or is_record(f.path):
            continue
        try:
            info = json.loads(storage.read_text(f.path))
        except (FileNotFoundError, ValueError, OSError):
            continue
        if isinstance(info, dict) and holder_is_gone(info):
            out.append((f.path, describe_holder(info)))
    return out


def remove_locks(storage: Storage, table_path: str, force: bool = False) -> list[str]:
    """Remove the locks whose holder is gone (``force``: every lock file, whoever holds it). Returns the
    removed lock files with their holders. Loads' records (``Segment_<id>.lock``) are not locks here: they go
    with their load (meta.status.load_records)."""
    if force:
        found = []
        for f in storage.list(Storage.join(table_path, "LockFiles")):
            if f.path.endswith(".lock") and not is_record(f.path):
                try:
                    info = json.loads(storage.read_text(f.path))
                except (FileNotFoundError, ValueError, OSError):
                    info = {}
                found.append((f.path, describe_holder(info) if isinstance(info, dict) else "unknown"))
    else:
        found = stale_locks(storage, table_path)
    for path, _holder in found:
        storage.require_inside(path, table_path, f"removing lock {path}")
        storage.delete(path)
    return [f"{storage.uri(p)} ({h})" for p, h in found]


def update_lock(storage: Storage, table_path: str, operation: str, timeout: float = 0.0,
                pid_bound: bool = True, pid: int | None = None) -> TableLock:
    """Take ``LockFiles/update.lock`` (held on return; use it with ``with``) or fail clearly: UPDATE, DELETE
    and overwrites (whole table or partitions, Python and Spark) never run concurrently on one table.

    Raises:
        CarbonTableError: another operation holds the lock; the message names the lock file and it.
    """
    lock = TableLock(storage, table_path, UPDATE_LOCK, timeout=timeout, stale_after=UPDATE_LOCK_STALE_S,
                     operation=operation, pid_bound=pid_bound, pid=pid)
    lock.check_folders()
    try:
        lock.acquire()
    except CarbonTableError:
        holder = lock.holder()
        raise CarbonTableError(
            f"{operation} on table {storage.uri(table_path)} refused: another UPDATE/DELETE/overwrite "
            f"({holder or 'operation not recorded'}) holds the update lock {storage.uri(lock.path)}; "
            "retry when it has finished, or 'carbon-ds unlock' if that process is gone"
        ) from None
    return lock


def release_update_lock(storage: Storage, table_path: str, token: str) -> None:
    """Release the update lock taken in another process (Spark: the driver-side writer() takes it, a
    different Python worker commits or aborts): only when the file still holds ``token``."""
    lock = TableLock(storage, table_path, UPDATE_LOCK, stale_after=UPDATE_LOCK_STALE_S)
    lock.token = token
    lock.held = True
    lock.release()
