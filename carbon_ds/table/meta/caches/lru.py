"""A thread-safe least-recently-used map: what the planning caches (meta.caches.committed_cache, meta.caches.signed_cache)
keep their entries in."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


class Lru:
    """At most ``max_entries`` values; the one used longest ago goes first."""

    def __init__(self, max_entries: int):
        self.max_entries = max_entries
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        """The value kept for ``key`` (None when there is none), now the most recently used."""
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
            return hit

    def put(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)

    def kept(self, key: Hashable | None, build: Callable[[], T]) -> T:
        """The value kept for ``key``, else ``build()``'s, kept for next time (``key`` None: built, not kept).
        Two threads missing at once may both build; the later one's value stays."""
        if key is None:
            return build()
        hit = self.get(key)
        if hit is None:
            hit = build()
            self.put(key, hit)
        return hit

    def drop(self, key: Hashable, value: Any) -> None:
        """Forget ``key`` if it still holds ``value`` (another thread may have put a newer one meanwhile)."""
        with self._lock:
            if self._items.get(key) is value:
                del self._items[key]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
