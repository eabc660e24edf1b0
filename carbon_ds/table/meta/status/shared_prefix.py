"""A list that shares its unchanged prefix with the list it was forked from.

A status file's parse (meta.status.status_doc) holds a few lists of one item per segment. A commit of a table of
10,000 segments changes or adds one or two items at the end, yet copying the lists for the commit and again
for its result touched every item (a reference count each, scattered in memory): milliseconds per commit,
growing with the table's history. A ``SharedPrefixList`` is a list whose first ``n`` items are read from a
``head`` list that no one changes once it is shared, and whose other items are its own ``tail``: a fork copies
only the tail, and a change near the end copies only the items after it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableSequence
from itertools import chain, islice
from typing import Any, TypeVar, overload

T = TypeVar("T")

# A tail this long is joined to the head: a fork copies at most this many items, and the joins' cost per
# appended item stays constant.
_FOLD = 1024


class SharedPrefixList(MutableSequence[T]):
    """A list (see the module docstring); slices read as plain lists."""

    __slots__ = ("_head", "_n", "_tail")

    def __init__(self, items: Iterable[T] = ()):
        self._head: list[T] = list(items)
        self._n = len(self._head)
        self._tail: list[T] = []

    @classmethod
    def _of(cls, head: list[T], n: int, tail: list[T]) -> SharedPrefixList[T]:
        out = cls.__new__(cls)
        out._head, out._n, out._tail = head, n, tail
        return out

    def fork(self) -> SharedPrefixList[T]:
        """A list of the same items that changes independently of this one."""
        return self._of(self._head, self._n, list(self._tail))

    def prefix(self, k: int) -> SharedPrefixList[T]:
        """The first ``k`` items, as a list of their own."""
        if k <= self._n:
            return self._of(self._head, k, [])
        return self._of(self._head, self._n, self._tail[:k - self._n])

    def __len__(self) -> int:
        return self._n + len(self._tail)

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> list[T]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                return list(self)[i]
            stop = max(start, stop)
            n = self._n
            return self._head[min(start, n):min(stop, n)] + self._tail[max(start - n, 0):max(stop - n, 0)]
        if i < 0:
            i += len(self)
        if i < self._n:
            if i < 0:
                raise IndexError("list index out of range")
            return self._head[i]
        return self._tail[i - self._n]

    def __setitem__(self, i: Any, value: Any) -> None:
        if isinstance(i, slice):
            items = list(self)
            items[i] = value
            self._replace(items)
            return
        i = range(len(self))[i]
        if i < self._n:  # the head is shared: the items from ``i`` on become the tail
            self._tail = self._head[i:self._n] + self._tail
            self._n = i
        self._tail[i - self._n] = value

    def __delitem__(self, i: Any) -> None:
        items = list(self)
        del items[i]
        self._replace(items)

    def insert(self, index: int, value: T) -> None:
        if index >= len(self):
            self._tail.append(value)
            if len(self._tail) > _FOLD:
                self._replace(self._head[:self._n] + self._tail)
            return
        items = list(self)
        items.insert(index, value)
        self._replace(items)

    def _replace(self, items: list[T]) -> None:
        self._head, self._n, self._tail = items, len(items), []

    def __iter__(self) -> Iterator[T]:
        head = self._head if self._n == len(self._head) else islice(self._head, self._n)
        return chain(head, self._tail)

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        """As ``list.index``: the scan runs in C over the head, then the tail."""
        stop = len(self) if stop is None else min(stop, len(self))
        if start < self._n:
            try:
                return self._head.index(value, start, min(stop, self._n))
            except ValueError:
                pass
        return self._n + self._tail.index(value, max(start - self._n, 0), max(stop - self._n, 0))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, SharedPrefixList)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SharedPrefixList({list(self)!r})"
