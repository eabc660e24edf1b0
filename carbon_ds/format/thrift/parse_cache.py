"""Parsed objects shared by the exact bytes they were parsed from.

Keyed by content rather than by path, so a file that changed can never be answered from the cache. Least
recently used entries go first once the keys pass a byte budget (or an entry count).
"""

from __future__ import annotations

import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any


class BytesCache:
    """A thread-safe LRU of ``parse()`` results keyed by ``(kind, bytes)``.

    ``budget_bytes`` bounds the keys' bytes (a parsed value is larger by a roughly constant factor); keys
    longer than ``max_item_bytes`` are parsed every time rather than kept. With ``copies`` the cache keeps a
    pickle and every hit gets its own object, for callers that change what they are given.
    """

    def __init__(self, budget_bytes: int, max_item_bytes: int, *, max_entries: int | None = None,
                 copies: bool = False):
        self.budget_bytes = budget_bytes
        self.max_item_bytes = max_item_bytes
        self.max_entries = max_entries
        self.copies = copies
        self._items: OrderedDict[tuple[Hashable, bytes], Any] = OrderedDict()
        self._lock = threading.Lock()
        self._nbytes = 0

    def get_or_parse(self, data: bytes, parse: Callable[[], Any], kind: Hashable = None) -> Any:
        """``parse()``'s result for ``data``, from the cache when the same kind of these bytes was parsed."""
        if len(data) > self.max_item_bytes:
            return parse()
        key = (kind, data)
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
        if hit is not None:
            return pickle.loads(hit) if self.copies else hit
        # parsed outside the lock: other threads' hits need not wait for a slow parse
        value = parse()
        kept = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL) if self.copies else value
        with self._lock:
            if key not in self._items:  # a racing parse of the same bytes kept its value first
                self._items[key] = kept
                self._nbytes += len(data)
                while self._nbytes > self.budget_bytes or (self.max_entries is not None
                                                           and len(self._items) > self.max_entries):
                    (_kind, old), _value = self._items.popitem(last=False)
                    self._nbytes -= len(old)
        return value

    @property
    def nbytes(self) -> int:
        """The kept keys' bytes."""
        with self._lock:
            return self._nbytes

    def keys(self) -> list[tuple[Hashable, bytes]]:
        """The kept ``(kind, bytes)`` keys, least recently used first."""
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._nbytes = 0
