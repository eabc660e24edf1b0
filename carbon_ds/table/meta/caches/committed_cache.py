"""What planning learnt from a committed segment, kept per process by what the tablestatus says of it.

A committed segment's files never change while its tablestatus entry stays the same: a load writes its data,
index and segment files before the entry that names them, a segment file is written once under a name that
carries its timestamp (meta.files.segment_file), and every change of a segment's files commits a changed entry: an
UPDATE its ``updateDeltaStart/EndTimestamp`` (and the table's ``updateStatusFileName``, in every entry), a
partition overwrite a new segment file name, compaction, overwrite, DELETE SEGMENT and CLEAN FILES a status
or visibility or no entry at all. CarbonData's driver keeps its segment indexes the same way, refreshing a
segment only when its segment file name or update timestamp changes (``SegmentRefreshInfo``).

So what planning made of a segment (its data files, its index entries) is kept under the segment's entry as
stored (the whole entry text, with the table's folder and ``table_id``) and given out without a single file
system call. Only segments whose files all lie in the table's own segment folder qualify: an added external
folder (ADD SEGMENT) belongs to someone else, who can change it at any time, and partition folders are shared
by loads; those stay with meta.caches.signed_cache, which checks each file's signature. Files changed in place
behind the table's back (not by a commit) are not seen by a process that planned the segment before, as in
CarbonData; a new process, or ``clear()``, reads them again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from carbon_ds.table.meta.caches.lru import Lru
from carbon_ds.table.meta.files.naming import COLUMNAR
from carbon_ds.table.meta.files.segment_file import segment_dir
from carbon_ds.table.meta.status.tablestatus import LoadDetail

if TYPE_CHECKING:
    from carbon_ds.table.meta.handle import TableHandle


class CommittedCache(Lru):
    """A thread-safe LRU of values kept under a committed segment's key (``segment_key``); ``clear_all``
    empties every one of them."""

    def __init__(self, max_entries: int):
        super().__init__(max_entries)
        _ALL.append(self)


_ALL: list[CommittedCache] = []


def clear_all() -> None:
    """Forget everything every ``CommittedCache`` of the process keeps (files changed in place are then
    read again)."""
    for cache in _ALL:
        cache.clear()


def entry_identity(detail: LoadDetail) -> str:
    """The entry as stored: its text (kept on an entry as read, which never changes: meta.status.status_doc)."""
    kept = detail.__dict__
    if "_sealed" not in kept:  # a changeable entry: its text now
        return detail.text()
    known = kept.get("_identity")
    if known is None:
        known = kept["_identity"] = detail.text()  # shared entries never change
    return known


def segment_key(table: TableHandle, detail: LoadDetail) -> tuple | None:
    """The key of a committed carbondata segment of a local table (its entry as stored, the table's folder
    and id), None for a segment whose files are not the table's own to trust (an external folder, a
    segment without a segment file, a stream, another format) or a store without stable paths."""
    if (not detail.segment_file or detail.path or (detail.file_format or COLUMNAR).lower() != COLUMNAR
            or not table.storage.is_local):
        return None
    return (table.path, table.table_id, detail.name, entry_identity(detail))


def in_segment_folder(table_path: str, segment_id: str, paths: list[str]) -> bool:
    """Whether every one of ``paths`` lies in the segment's own folder (``Fact/Part0/Segment_<id>``)."""
    prefix = segment_dir(table_path, segment_id).rstrip("/") + "/"
    return all(p.startswith(prefix) and "/" not in p[len(prefix):] for p in paths)
