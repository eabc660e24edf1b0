"""What planning learnt from a segment's files, kept per process and given out only while those files are
unchanged.

Planning a read parses, for every segment it reads, the segment file, the folder listing and the index
files; at thousands of segments that cost more than the rows. A ``SignedCache`` keeps such a result with the
signature (size, modification time, inode: ``Storage.signature``) of every file and folder it was made from,
and answers only when each of them still has that signature: a file written again, a folder with a file
added, removed or renamed (a compaction's, a delete's or an overwrite's new files), a file replaced in place,
each makes the entry miss. Stores without signatures (object stores) are never cached.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from carbon_ds.fs import Storage
from carbon_ds.table.meta.caches.lru import Lru

Signed = tuple[tuple[str, tuple[int, int, int]], ...]  # (path, signature) of every file the value came from


class SignedCache:
    """A thread-safe LRU of values, each valid while the files it was made from keep their signatures."""

    def __init__(self, max_entries: int):
        self._items = Lru(max_entries)  # key -> (Signed, value)

    def get(self, storage: Storage, key: Hashable) -> Any:
        """The value kept for ``key`` if every file it came from is unchanged, else None."""
        if not storage.is_local:
            return None
        hit = self._items.get(key)
        if hit is None:
            return None
        signed, value = hit
        for path, sig in signed:
            if storage.signature(path) != sig:
                self._items.drop(key, hit)
                return None
        return value

    def put(self, storage: Storage, key: Hashable, sources: Iterable[str], value: Any) -> None:
        """Keep ``value`` for ``key``, made from the files and folders ``sources`` (signed now: a change
        while the value was being made is caught by the next ``get`` as long as it is signed before it was
        read; callers sign before reading where that matters)."""
        signed = sign(storage, sources)
        if signed is not None:
            self.put_signed(key, signed, value)

    def put_signed(self, key: Hashable, signed: Signed, value: Any) -> None:
        self._items.put(key, (signed, value))

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


def sign(storage: Storage, sources: Iterable[str]) -> Signed | None:
    """The signatures of ``sources`` now; None when one has none (absent, or an object store)."""
    if not storage.is_local:
        return None
    out = []
    for path in sources:
        sig = storage.signature(path)
        if sig is None:
            return None
        out.append((path, sig))
    return tuple(out)
