"""One edit of ``Metadata/tablestatus``: the only way carbon-ds changes that file.

``with table.edit_status("DELETE SEGMENT") as edit:`` takes the table lock, reads tablestatus once and
remembers the version read; the block changes ``edit.entries`` in place; leaving the block replaces the file
only if it is still that version (the commit point), and writes nothing when the entries did not change or
the block raised. A lost race (the lock taken over after its lease, a writer outside carbon-ds, a second
writer on a store without conditional writes) is a ``CarbonConcurrentError`` naming the lock's holder,
with nothing written.
"""

from __future__ import annotations

from types import TracebackType

from carbon_ds.errors import CarbonConcurrentError
from carbon_ds.fs import Storage
from carbon_ds.table.meta import tablestatus as ts
from carbon_ds.table.meta.locks import TableLock
from carbon_ds.table.meta.tablestatus import LoadDetail


class StatusEdit:
    """A locked read-modify-write of one tablestatus file (see the module docstring)."""

    def __init__(self, storage: Storage, status_path: str, lock: TableLock):
        self.storage = storage
        self.path = status_path
        self.lock = lock
        self.entries: list[LoadDetail] = []
        self._version: str | None = None
        self._read_as = ""
        self._written = False

    def __enter__(self) -> StatusEdit:
        self.lock.__enter__()
        try:
            self.entries, self._version = ts.read_versioned(self.storage, self.path)
        except BaseException:
            self.lock.release()
            raise
        self._read_as = ts.dumps(self.entries)
        return self

    def commit(self) -> None:
        """Write the entries now, still holding the lock (work that must follow the commit point under the
        same lock, as CLEAN FILES' sweep of files no entry names); later changes are written on exit."""
        text = ts.dumps(self.entries)
        if text == self._read_as:
            return
        if self._written:  # our own earlier write of this edit is the base
            self._version = self.storage.read_versioned(self.path)[1]
        ts.replace_if_version(self.storage, self.path, self.entries, self._version)
        self._read_as, self._written = text, True

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            try:
                self.commit()
            except CarbonConcurrentError as lost:
                self.lock.__exit__(type(lost), lost, lost.__traceback__)  # adds who holds the lock now
                raise
        self.lock.__exit__(exc_type, exc, tb)
