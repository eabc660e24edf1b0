"""One edit of the table's segment list (``Metadata/tablestatus``): the only way carbon-ds changes it.

``with table.edit_status("DELETE SEGMENT") as edit:`` takes the table lock, finds the live status file and
reads it once, remembering the version read; the block changes ``edit.entries`` in place; leaving the block
commits (the commit point), and writes nothing when the entries did not change or the block raised. A lost
race (the lock taken over after its lease, a writer outside carbon-ds, a second writer on a store without
conditional writes) is a ``CarbonConcurrentError`` naming the lock's holder, with nothing written.

The plain file is replaced only if it is still the version read. A table whose segment list is versioned
(meta.status.status_versions: only ``tablestatus_<version>`` files) gets a new version file instead, created only if
no other version appeared since the read; the commit then warns (``CarbonStatusVersionWarning``) with the
``ALTER TABLE ... SET SERDEPROPERTIES`` that points CarbonData's metastore at it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import TracebackType

from carbon_ds.errors import CarbonConcurrentError, CarbonStatusVersionWarning
from carbon_ds.fs import Content, Storage, joined
from carbon_ds.table.meta.locks import TableLock
from carbon_ds.table.meta.status import status_doc
from carbon_ds.table.meta.status import status_versions as sv
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.status_doc import EntryList
from carbon_ds.table.meta.status.tablestatus import IN_PROGRESS, OVERWRITE_IN_PROGRESS

_RESERVED = (IN_PROGRESS, OVERWRITE_IN_PROGRESS)


class StatusEdit:
    """A locked read-modify-write of the live tablestatus file (see the module docstring)."""

    def __init__(self, storage: Storage, table_path: str, locate: Callable[[], sv.LiveStatus], lock: TableLock):
        """``locate``: the live status file, asked once the lock is held."""
        self.storage = storage
        self.table_path = table_path
        self._locate = locate
        self.lock = lock
        self.live: sv.LiveStatus | None = None
        # the entries (meta.status.status_doc: objects are made for the entries the edit touches)
        self.entries: EntryList = EntryList(status_doc.EMPTY)
        self._version: str | None = None
        self._written = False
        self.written_versions: list[str] = []  # tablestatus_<version> files this edit created

    @property
    def path(self) -> str:
        """The status file the edit read (or last wrote)."""
        assert self.live is not None, "the edit is not entered"
        return self.live.path

    def __enter__(self) -> StatusEdit:
        self.lock.__enter__()
        try:
            self.live = self._locate()
            doc, self._version = status_doc.read_doc(self.storage, self.live.path)
        except BaseException:
            self.lock.release()
            raise
        self.entries = EntryList(doc)
        return self

    def commit(self) -> None:
        """Write the entries now, still holding the lock (work that must follow the commit point under the
        same lock, as CLEAN FILES' sweep of files no entry names); later changes are written on exit."""
        entries = self.entries
        if not entries.changed():
            return
        assert self.live is not None, "the edit is not entered"
        texts = entries.texts()
        data = entries.data(texts)
        reserved_before = self._reserved() if self.live.versioned else set()
        if self.live.versioned:
            self._commit_version(data)
        else:
            if self._written:  # our own earlier write of this edit is the base
                self._version = self.storage.known_version(self.path) or self.storage.read_versioned(self.path)[1]
            ts.replace_if_version(self.storage, self.path, entries, self._version, data)  # type: ignore[arg-type]
        status_doc.remember(self.storage, self.path, entries.written(data, texts))
        self._written = True
        if self.live.versioned:
            self._tell(reserved_before)

    def _reserved(self) -> set[str]:
        """Segments reserved ("In Progress") in what the edit read or last wrote."""
        return {e.name for e in self.entries.base.details if e.status in _RESERVED}

    def _commit_version(self, data: Content) -> None:
        """A new ``tablestatus_<version>`` after the one read, if that is still the newest."""
        assert self.live is not None
        base = self.live.version
        now_newest = sv.newest(self.storage, self.table_path)
        new = sv.next_version(base)
        if now_newest != base or not self.storage.create_exclusive(sv.status_path(self.table_path, new),
                                                                   joined(data)):
            raise CarbonConcurrentError(
                f"commit to {self.storage.uri(self.live.path)} refused: another writer committed version "
                f"{now_newest if now_newest != base else new} of the table's status after this writer read "
                f"version {base} under the table lock; this commit was not applied, retry it")
        self.live = sv.LiveStatus(sv.status_path(self.table_path, new), new, self.live.source)
        self.written_versions.append(new)

    def _tell(self, was: set[str]) -> None:
        """Warn once the edit leaves the table as users will see it: not after a reservation (a load's
        "In Progress" entry), whose own commit follows."""
        if any(e.name not in was for e in ts.with_status(self.entries, frozenset(_RESERVED))):
            return
        assert self.live is not None
        warnings.warn(CarbonStatusVersionWarning(
            f"{self.storage.uri(self.table_path)} keeps its segment list in versioned table status files: this "
            f"commit wrote Metadata/tablestatus_{self.live.version}, which carbon-ds and CarbonData tables "
            "created by path read as the newest version. Sessions that find the table through a metastore "
            f"read the version it names; point it at this one in CarbonData: "
            f"{sv.alter_statement(self.table_path, self.live.version)}"), stacklevel=3)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            try:
                self.commit()
            except CarbonConcurrentError as lost:
                self.lock.__exit__(type(lost), lost, lost.__traceback__)  # adds who holds the lock now
                raise
        self.lock.__exit__(exc_type, exc, tb)
