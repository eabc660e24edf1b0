"""A status file's parse, kept per process, so that reads and commits cost what changed, not the table's history.

A table of 10,000 segments has a tablestatus of 2 MB. Parsing all of it into objects, and serialising every
entry again, on each of a load's two status writes made a commit's time grow with the segments already there.
Here the parse of a file is kept by the file's path and exact bytes (a changed file is never answered from a
kept parse), as a ``Doc``:

- each entry's JSON text as the file holds it, its name and status, and the largest integral segment id;
- each entry as a ``SharedLoadDetail`` for readers: made once per entry per process, shared, unchangeable.

A file that changed since its kept parse (another commit appended entries, or changed some near the end)
keeps the entries of the longest unchanged prefix and parses only the rest. Damaged files are parsed by
``tablestatus.parse``, so their errors are the same as ever.

A commit (``StatusEdit``) gets an ``EntryList``: a list of the entries whose changeable objects are made
only for the entries it touches; its text joins the untouched entries' texts as read with the touched ones
rendered again. A load's reservation and commit so do work in proportion to the entries they touch; only
byte-level steps (compare, join, write) see the whole file. The per-entry lists of a doc, of an edit and of
the doc it writes share their unchanged prefix (meta.status.shared_prefix), so that none of them is copied whole.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, MutableSequence
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate
from typing import overload

from carbon_ds.errors import CarbonFormatError
from carbon_ds.fs import Content, Storage, joined
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.shared_prefix import SharedPrefixList
from carbon_ds.table.meta.status.tablestatus import LoadDetail, SharedLoadDetail

_WS = re.compile(r"[ \t\n\r]*")
_DECODE = json.JSONDecoder().raw_decode
_KEPT = 64  # status files whose parse a process keeps
_PARTS = 16  # a commit's content in more parts than this is joined (each commit adds one)
# The statuses of nearly every entry of a long-lived table; a doc lists where the others are, so that
# finding a table's loads in progress does not scan every entry.
_COMMON = frozenset({ts.SUCCESS, ts.COMPACTED, ts.MARKED_FOR_DELETE})


@dataclass(frozen=True, eq=False)
class Doc:
    """One status file content, parsed."""

    content: Content  # the file's bytes, or (a doc a commit wrote) the parts it wrote: ``data`` joins them
    # one item per entry, never changed once made (forks of them are: ``SharedPrefixList.fork``)
    texts: SharedPrefixList[str]
    names: SharedPrefixList[str]
    statuses: SharedPrefixList[str]
    details: SharedPrefixList[SharedLoadDetail]
    max_id: int  # the largest integral segment id, -1 when none
    exact: bool = True  # ``texts`` are slices of ``data`` in order (False: entries rendered again)
    known_compact: bool | None = None  # ``compact`` when the maker knows it (None: found out when asked)
    known_rare: tuple[int, ...] | None = None  # ``rare``, likewise

    @cached_property
    def rare(self) -> tuple[int, ...]:
        """Positions of the entries whose status is not one of ``_COMMON``, in order."""
        if self.known_rare is not None:
            return self.known_rare
        return tuple(i for i, status in enumerate(self.statuses) if status not in _COMMON)

    @cached_property
    def data(self) -> bytes:
        return joined(self.content)

    @cached_property
    def size(self) -> int:
        return len(self.content) if isinstance(self.content, bytes) else sum(map(len, self.content))

    def prefix(self, end: int) -> tuple[bytes | memoryview, ...]:
        """The first ``end`` bytes of the file, as parts (views of the parts, not copies)."""
        parts = (self.content,) if isinstance(self.content, bytes) else self.content
        out: list[bytes | memoryview] = []
        for part in parts:
            if end <= 0:
                break
            out.append(part if len(part) <= end else memoryview(part)[:end])
            end -= len(part)
        return tuple(out)

    @cached_property
    def compact(self) -> bool:
        """Whether ``data`` is ``text_of(texts)`` in ASCII, so that text offsets are byte offsets."""
        if self.known_compact is not None:
            return self.known_compact
        return (self.exact and self.data.isascii()
                and len(self.data) == 2 + sum(map(len, self.texts)) + max(len(self.texts) - 1, 0))

    def ends(self) -> list[int] | None:
        """Byte offset just past each entry's text, for files written compactly in ASCII (else None)."""
        if not self.compact:
            return None
        return [1 + n + i for i, n in enumerate(accumulate(map(len, self.texts)))]

    def end_of(self, k: int) -> int:
        """Byte offset just past the ``k``-th entry's text (``k`` >= 1) of a compact doc, counted from the
        end: commits change the last entries."""
        tail = self.texts[k:]
        return self.size - 1 - sum(map(len, tail)) - len(tail)


EMPTY = Doc(b"", SharedPrefixList(), SharedPrefixList(), SharedPrefixList(), SharedPrefixList(), -1)


def _max_id(names: Iterable[str], start: int = -1) -> int:
    """The largest integral id of ``names``, or ``start`` when larger."""
    return max(start, max(map(int, filter(str.isdigit, names)), default=start))


def _parsed(items: list[tuple[dict, str]], where: str) -> tuple[list[str], list[SharedLoadDetail]]:
    details = [SharedLoadDetail.seal(LoadDetail.from_json(obj, where)) for obj, _t in items]
    for d, (_o, t) in zip(details, items, strict=True):
        d.__dict__["_identity"] = t  # the entry as stored (meta.caches.committed_cache)
    return [t for _o, t in items], details


def _scan(text: str, pos: int, first: bool) -> list[tuple[dict, str]]:
    """(object, its text) of the entries of a JSON array from ``pos``: at its ``[`` (``first``), or just after
    an element. Raises ValueError on anything but a well-formed array ending the text."""
    out: list[tuple[dict, str]] = []
    pos = _WS.match(text, pos).end()
    if first:
        if text[pos:pos + 1] != "[":
            raise ValueError("not an array")
        pos = _WS.match(text, pos + 1).end()
        if text[pos:pos + 1] == "]":
            pos += 1
            if text[pos:].strip(" \t\n\r"):
                raise ValueError("text after the array")
            return out
    else:
        ch = text[pos:pos + 1]
        if ch == "]":
            if text[pos + 1:].strip(" \t\n\r"):
                raise ValueError("text after the array")
            return out
        if ch != ",":
            raise ValueError("no separator")
        pos = _WS.match(text, pos + 1).end()
    while True:
        obj, end = _DECODE(text, pos)
        out.append((obj, text[pos:end]))
        pos = _WS.match(text, end).end()
        ch = text[pos:pos + 1]
        if ch == ",":
            pos = _WS.match(text, pos + 1).end()
            continue
        if ch == "]" and not text[pos + 1:].strip(" \t\n\r"):
            return out
        raise ValueError("bad separator")


def parse_doc(data: bytes, where: str, base: Doc | None) -> Doc:
    """The parse of ``data``, reusing ``base``'s entries up to the first changed one."""
    if base is not None and base.data == data:
        return base
    keep = _unchanged_prefix(base, data) if base is not None else 0
    text = ts.decode_text(data, where)
    exact = True
    try:
        if keep:
            ends = base.ends()  # type: ignore[union-attr]  # not None: _unchanged_prefix checked
            items = _scan(text, ends[keep - 1], first=False)
        else:
            items = _scan(text, 0, first=True)
        texts, details = _parsed(items, where)
    except (ValueError, CarbonFormatError):
        keep = 0
        details = [SharedLoadDetail.seal(e) for e in ts.parse(text, where)]  # its errors, or a lenient parse
        texts = [e.text() for e in details]
        exact = False
    new_names = [d.name for d in details]
    new_statuses = [d.status for d in details]
    if keep:
        assert base is not None
        top = base.max_id if keep == len(base.names) else _max_id(base.names[:keep])
        top = _max_id(new_names, top)
        columns = [base.texts.prefix(keep), base.names.prefix(keep), base.statuses.prefix(keep),
                   base.details.prefix(keep)]
        for column, new in zip(columns, (texts, new_names, new_statuses, details), strict=True):
            column.extend(new)
        all_texts, names, statuses, all_details = columns
    else:
        top = _max_id(new_names)
        all_texts, names, statuses, all_details = (SharedPrefixList(c) for c in (texts, new_names, new_statuses,
                                                                                  details))
    seen = set(names)
    if len(seen) != len(names):
        listed = list(names)
        twice = sorted({n for n in seen if listed.count(n) > 1})
        raise CarbonFormatError(f"tablestatus lists segment {twice[0]!r} more than once", where)
    return Doc(data, all_texts, names, statuses, all_details, top, exact)


def _unchanged_prefix(base: Doc, data: bytes) -> int:
    """How many of ``base``'s first entries ``data`` holds unchanged, followed by ``,`` or ``]``."""
    ends = base.ends()
    if not ends or not data.isascii():
        return 0
    old = memoryview(base.data)

    def holds(k: int) -> bool:
        end = ends[k - 1]
        return data.startswith(old[:end]) and data[end:end + 1] in (b",", b"]")

    if holds(len(ends)):  # the usual change: entries appended
        return len(ends)
    lo, hi = 0, len(ends) - 1  # holds(lo) (0: nothing kept), not holds(hi + 1)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if holds(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


class _Kept:
    """The parses this process keeps, by file (least recently used first out)."""

    def __init__(self) -> None:
        self._docs: OrderedDict[str, tuple[Doc, str | None]] = OrderedDict()  # (parse, its storage version)
        self._lock = threading.Lock()

    def get(self, key: str) -> tuple[Doc, str | None] | None:
        with self._lock:
            doc = self._docs.get(key)
            if doc is not None:
                self._docs.move_to_end(key)
            return doc

    def put(self, key: str, doc: Doc, version: str | None) -> None:
        with self._lock:
            self._docs[key] = (doc, version)
            self._docs.move_to_end(key)
            while len(self._docs) > _KEPT:
                self._docs.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._docs.clear()


KEPT = _Kept()


def read_doc(storage: Storage, path: str) -> tuple[Doc, str | None]:
    """(parse, version) of the status file at ``path``; an absent file is the empty doc with version None.
    A torn read on a remote store (a commit landing in between) is read again, as ``tablestatus.read_versioned``
    does."""
    where = storage.uri(path)
    kept = KEPT.get(where)
    if kept is not None and kept[1] is not None and storage.known_version(path) == kept[1]:
        return kept  # the file is still the content kept: not read (a local file this process wrote)
    for attempt in range(ts.READ_ATTEMPTS):
        data, version = storage.read_versioned(path)
        if data is None:
            return EMPTY, None
        try:
            doc = parse_doc(data, where, kept[0] if kept is not None else None)
            break
        except CarbonFormatError:
            if storage.is_local or attempt == ts.READ_ATTEMPTS - 1:
                raise
            ts.pause(attempt)
    KEPT.put(where, doc, version)
    return doc, version


def read_versioned(storage: Storage, path: str) -> tuple[list[LoadDetail], str | None]:
    """Entries for a reader (shared, unchangeable) and the version read."""
    doc, version = read_doc(storage, path)
    return list(doc.details), version


def remember(storage: Storage, path: str, doc: Doc) -> None:
    """``doc`` is what this process just wrote at ``path``."""
    KEPT.put(storage.uri(path), doc, storage.known_version(path))


class EntryList(MutableSequence[LoadDetail]):
    """A commit's entries: a list whose changeable objects are made only for the entries it touches.

    While entries are only changed in place or appended, its per-entry lists are forks of the doc's
    (meta.status.shared_prefix); the first removal or insertion before the end makes them plain lists."""

    def __init__(self, doc: Doc):
        self._base = doc
        self._items: list[LoadDetail | None] = [None] * len(doc.texts)  # None: untouched, still ``_src``
        self._src: MutableSequence[SharedLoadDetail | None] = doc.details.fork()  # as read (None: a new entry)
        self._texts: MutableSequence[str | None] = doc.texts.fork()
        self._names: MutableSequence[str] = doc.names.fork()
        self._statuses: MutableSequence[str] = doc.statuses.fork()
        self._touched: set[int] = set()  # positions made changeable, while nothing moved
        self._moved = False  # entries removed, replaced or inserted before the end
        self._compact: bool | None = None  # whether the last ``data`` is compact ASCII (Doc.compact)

    @property
    def base(self) -> Doc:
        """What the entries were read as (or last written as)."""
        return self._base

    # ---------------------------------------------------------------- the list
    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, i: int) -> LoadDetail: ...

    @overload
    def __getitem__(self, i: slice) -> list[LoadDetail]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = range(len(self))[i]
        item = self._items[i]
        if item is None:
            item = self._items[i] = self._src[i].copy()  # type: ignore[union-attr]
            self._touched.add(i)
        return item

    def __iter__(self) -> Iterator[LoadDetail]:
        for i in range(len(self)):
            yield self[i]

    def _move(self) -> None:
        """Entries are about to move: the per-entry lists become plain lists."""
        if not self._moved:
            self._src, self._texts = list(self._src), list(self._texts)
            self._names, self._statuses = list(self._names), list(self._statuses)
            self._moved = True

    def __setitem__(self, i, value) -> None:
        self._move()
        if isinstance(i, slice):
            # entries kept keep their text as read: a slice assignment that only drops entries rewrites none
            new = list(value)
            was = {id(it): k for k, it in enumerate(self._items) if it is not None}
            self._items[i] = new
            self._texts[i] = [self._texts[was[id(v)]] if id(v) in was else None for v in new]
            self._src[i] = [self._src[was[id(v)]] if id(v) in was else None for v in new]
            self._names[i] = [v.name for v in new]
            self._statuses[i] = [v.status for v in new]
        else:
            i = range(len(self))[i]
            self._items[i], self._texts[i], self._src[i] = value, None, None
            self._names[i], self._statuses[i] = value.name, value.status

    def __delitem__(self, i) -> None:
        self._move()
        for column in (self._items, self._texts, self._src, self._names, self._statuses):
            del column[i]

    def insert(self, index: int, value: LoadDetail) -> None:
        at_end = index >= len(self)
        if not at_end:
            self._move()
        for column, v in ((self._items, value), (self._texts, None), (self._src, None), (self._names, value.name),
                          (self._statuses, value.status)):
            column.insert(index, v)
        if at_end and not self._moved:
            self._touched.add(len(self) - 1)

    # ---------------------------------------------------------------- what commits ask often
    def _name(self, i: int) -> str:
        item = self._items[i]
        return item.name if item is not None else self._names[i]

    def _status(self, i: int) -> str:
        item = self._items[i]
        return item.status if item is not None else self._statuses[i]

    def find(self, name: str) -> LoadDetail | None:
        """The entry of segment ``name`` (searched from the newest: commits look for their own)."""
        for i in range(len(self) - 1, -1, -1):
            if self._name(i) == name:
                return self[i]
        return None

    def with_status(self, statuses: Iterable[str]) -> list[LoadDetail]:
        """Entries whose status is one of ``statuses``; untouched entries are found by list scans in C."""
        wanted = set(statuses)
        if self._moved:
            return [self[i] for i in range(len(self)) if self._status(i) in wanted]
        if not wanted & _COMMON:  # untouched entries of such a status are the doc's rare ones
            found = self._touched.union(self._base.rare)
            return [self[i] for i in sorted(found) if self._status(i) in wanted]
        found = set(self._touched)
        for status in wanted:
            at = -1
            while True:
                try:
                    at = self._statuses.index(status, at + 1)
                except ValueError:
                    break
                found.add(at)
        return [self[i] for i in sorted(found) if self._status(i) in wanted]

    def max_id(self) -> int:
        """The largest integral segment id, -1 when none."""
        if self._moved:
            return _max_id([self._name(i) for i in range(len(self))])
        return _max_id([self._name(i) for i in self._touched], self._base.max_id)

    # ---------------------------------------------------------------- writing
    def changed(self) -> bool:
        """Whether writing the entries would change the file."""
        if self._moved:
            return self.texts() != list(self._base.texts)
        return len(self) != len(self._base.texts) or any(self._items[i] != self._src[i] for i in self._touched)

    def texts(self) -> MutableSequence[str]:
        """Each entry's text: as read where unchanged, rendered again where changed."""
        out = list(self._texts) if self._moved else self._texts.fork()  # type: ignore[attr-defined]
        for i in (range(len(self)) if self._moved else sorted(self._touched)):
            item, src = self._items[i], self._src[i]
            if item is not None and (src is None or item != src):
                out[i] = item.text()
        return out  # type: ignore[return-value]

    def data(self, texts: MutableSequence[str]) -> Content:
        """The file's content for ``texts`` (what ``texts()`` gave): ``text_of(texts)`` in UTF-8. The entries
        before the first changed one are the bytes of the file as read, not joined and encoded again nor
        copied: the content is those bytes' parts followed by the rest (a load's two writes change only the
        last entry or add one)."""
        base = self._base
        self._compact = None
        if self._moved or not base.compact:  # entries moved: no prefix is known unchanged without comparing
            return text_of(texts).encode("utf-8")
        known = len(base.texts)
        keep = min((i for i in self._touched if i >= known or texts[i] is not base.texts[i]), default=known)
        if keep == 0:
            return text_of(texts).encode("utf-8")
        rest = texts[keep:]
        tail = (("," if rest else "") + ",".join(rest) + "]").encode("utf-8")
        self._compact = tail.isascii()  # the kept prefix is compact ASCII: the whole is, if the tail is
        parts = (*base.prefix(base.end_of(keep)), tail)
        return parts if len(parts) <= _PARTS else joined(parts)

    def written(self, data: Content, texts: MutableSequence[str]) -> Doc:
        """The doc of what was just written (``data``, made of ``texts``); this list continues from it."""
        changed = range(len(self)) if self._moved else sorted(self._touched)
        details = _forked(self._src)  # None where changed, filled below
        statuses = _forked(self._statuses)
        for i in changed:
            item, src = self._items[i], self._src[i]
            if item is not None and (src is None or item != src):
                details[i] = SharedLoadDetail.seal(item.copy())
            statuses[i] = details[i].status  # type: ignore[union-attr]
        names = SharedPrefixList(d.name for d in details) if self._moved else _forked(self._names)
        top = _max_id(names) if self._moved else self.max_id()
        rare = None if self._moved else tuple(sorted(
            i for i in set(self._base.rare).union(changed) if statuses[i] not in _COMMON))
        doc = Doc(data, _forked(texts), names, statuses, details, top,  # type: ignore[arg-type]
                  known_compact=self._compact, known_rare=rare)
        self._base, self._src, self._texts = doc, doc.details.fork(), doc.texts.fork()
        self._names, self._statuses = doc.names.fork(), doc.statuses.fork()
        if self._moved:
            self._touched = {i for i, it in enumerate(self._items) if it is not None}
        self._moved = False
        self._compact = None
        return doc


def _forked(column: MutableSequence) -> SharedPrefixList:
    """A shared-prefix list of ``column``'s items that it does not change."""
    return column.fork() if isinstance(column, SharedPrefixList) else SharedPrefixList(column)


def text_of(texts: Iterable[str]) -> str:
    return "[" + ",".join(texts) + "]"
