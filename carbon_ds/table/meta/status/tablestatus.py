"""``Metadata/tablestatus``: the list of a table's segments (loads) and their states.

The file is one JSON array of objects whose values are all strings. Keys and status names are the ones
Apache CarbonData uses, so either implementation can read the other's file. Fields that are not set are
left out rather than written as null, as CarbonData's Gson writer does. Unknown keys are kept so that a
read-modify-write cycle never drops information another writer put there.

Dates: since CarbonData 1.3 ``timestamp`` / ``loadStartTime`` / ``modificationOrDeletionTimestamp`` are
epoch milliseconds; before, they were ``dd-MM-yyyy HH:mm:ss:SSS`` in the writer's local time zone. Both
are read; the new form is always written.

Commits are read-modify-write under the table lock (``carbon_ds.table.meta.locks``). While that lock is
held, the first read of the file records its version and ``write`` replaces the file only if it is still
that version (``Storage.replace_if``: one conditional PUT on S3). A writer whose base changed (its lock
was taken over, or two writers share a store without conditional writes) gets ``CarbonConcurrentError``
and writes nothing, so no other writer's segment is ever dropped. Where writes are not conditional, the
file is also read back after writing, to catch a second writer that wrote right after.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime

from carbon_ds.errors import CarbonConcurrentError, CarbonError, CarbonFormatError
from carbon_ds.fs import Content, Storage, joined

SUCCESS = "Success"
FAILURE = "Failure"
PARTIAL_SUCCESS = "Partial Success"
MARKED_FOR_DELETE = "Marked for Delete"
MARKED_FOR_UPDATE = "Marked for Update"
COMPACTED = "Compacted"
IN_PROGRESS = "In Progress"
OVERWRITE_IN_PROGRESS = "Overwrite In Progress"
STREAMING = "Streaming"
STREAMING_FINISH = "Streaming Finish"

# every loadStatus CarbonData (SegmentStatus's serialized names, "Update" unused since 1.x, and the
# "Insert ..." spellings of its messages) and carbon-ds write; another value is damage
STATUSES = frozenset({SUCCESS, FAILURE, PARTIAL_SUCCESS, MARKED_FOR_DELETE, MARKED_FOR_UPDATE, COMPACTED,
                      IN_PROGRESS, OVERWRITE_IN_PROGRESS, STREAMING, STREAMING_FINISH, "Update",
                      "Insert In Progress", "Insert Overwrite In Progress"})

# Columnar segments whose data is part of the table (streaming segments, row format, are read by their own
# rule: meta.files.data_files.is_stream).
READABLE = frozenset({SUCCESS, MARKED_FOR_UPDATE, PARTIAL_SUCCESS})

OLD_DATE_FORMAT = "%d-%m-%Y %H:%M:%S:%f"

# Attribute name -> JSON key, in the order CarbonData's LoadMetadataDetails declares them.
_KEYS = {
    "timestamp": "timestamp",
    "status": "loadStatus",
    "name": "loadName",
    "data_size": "dataSize",
    "index_size": "indexSize",
    "update_delta_start": "updateDeltaStartTimestamp",
    "update_delta_end": "updateDeltaEndTimestamp",
    "update_status_file": "updateStatusFileName",
    "modification_time": "modificationOrDeletionTimestamp",
    "load_start_time": "loadStartTime",
    "merged_load_name": "mergedLoadName",
    "visibility": "visibility",
    "major_compacted": "majorCompacted",
    "file_format": "fileFormat",
    "path": "path",
    "segment_file": "segmentFile",
    "extra_info": "extraInfo",
}
_ATTRS = {v: k for k, v in _KEYS.items()}


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def parse_time(value: str | None) -> int | None:
    """Epoch milliseconds of a tablestatus date in either form; None when absent or empty."""
    if value is None or value == "":
        return None
    if value.lstrip("-").isdigit():
        return int(value)
    try:
        # The 1.x writer formatted in the JVM's local zone; reading in ours is the best available guess.
        return int(datetime.strptime(value, OLD_DATE_FORMAT).timestamp() * 1000)
    except ValueError:
        raise CarbonFormatError(
            f"tablestatus date {value!r} is neither epoch milliseconds nor 'dd-MM-yyyy HH:mm:ss:SSS'"
        ) from None


@dataclass
class LoadDetail:
    """One tablestatus entry. Every field is the file's string, or None when the key is absent."""

    name: str
    status: str
    timestamp: str | None = None
    data_size: str | None = None
    index_size: str | None = None
    update_delta_start: str | None = None
    update_delta_end: str | None = None
    update_status_file: str | None = None
    modification_time: str | None = None
    load_start_time: str | None = None
    merged_load_name: str | None = None
    visibility: str | None = None
    major_compacted: str | None = None
    file_format: str | None = None
    path: str | None = None
    segment_file: str | None = None
    extra_info: str | None = None
    other: dict[str, str] = field(default_factory=dict)  # keys this version does not know, kept as read

    def _fields(self) -> tuple:
        return (*(getattr(self, a) for a in _KEYS), self.other)

    def __eq__(self, other: object) -> bool:
        # by value, whichever of the two classes (a shared entry equals its private copy)
        if not isinstance(other, LoadDetail):
            return NotImplemented
        return self._fields() == other._fields()

    def copy(self) -> LoadDetail:
        """A private, changeable copy (of a shared entry too)."""
        out = LoadDetail.__new__(LoadDetail)
        out.__dict__.update(self.__dict__)
        out.__dict__.pop("_sealed", None)
        out.__dict__.pop("_identity", None)  # the text as read (meta.caches.committed_cache): a copy may change
        out.other = dict(self.other)
        return out

    def text(self) -> str:
        """The entry as the file holds it (compact JSON, CarbonData's key order)."""
        return json.dumps(self.to_json(), separators=(",", ":"), ensure_ascii=False)

    @property
    def readable(self) -> bool:
        return self.status in READABLE and (self.visibility or "true").lower() != "false"

    @property
    def load_start_ms(self) -> int | None:
        return parse_time(self.load_start_time)

    @property
    def load_end_ms(self) -> int | None:
        return parse_time(self.timestamp)

    @classmethod
    def from_json(cls, obj: dict, where: str = "tablestatus") -> LoadDetail:
        if not isinstance(obj, dict):
            raise CarbonFormatError(f"tablestatus entry must be a JSON object, found {type(obj).__name__}", where)
        if "loadName" not in obj or "loadStatus" not in obj:
            raise CarbonFormatError(f"tablestatus entry lacks loadName/loadStatus: {obj}", where)
        known: dict[str, str | None] = {}
        other: dict[str, str] = {}
        for key, value in obj.items():
            text = value if isinstance(value, str) or value is None else str(value)
            if key in _ATTRS:
                known[_ATTRS[key]] = text
            else:
                other[key] = text
        detail = cls(**known, other=other)  # type: ignore[arg-type]
        detail.check_names(where)
        return detail

    def check_names(self, where: str) -> None:
        """Refuse names that would lead out of the table once made into paths: the load name becomes the
        folder ``Fact/Part0/Segment_<name>``, the segment and update status file names files in ``Metadata``.
        (An external segment's folder is its ``path``, recorded as such.)"""
        if self.status not in STATUSES:
            raise CarbonFormatError(f"tablestatus entry {self.name!r} has loadStatus {self.status!r}, expected one "
                                    f"of {', '.join(sorted(STATUSES))}", where)
        for key, value in (("loadName", self.name), ("segmentFile", self.segment_file),
                           ("updateStatusFileName", self.update_status_file)):
            # three substring tests, not a generator over the characters: 10,000 entries are checked per parse
            if value is not None and (value in (".", "..") or "/" in value or "\\" in value or "\0" in value
                                      or (key == "loadName" and not value)):
                raise CarbonFormatError(
                    f"tablestatus entry {self.name!r} has {key} {value!r}: expected a plain name, without '/', "
                    "'\\' or '..', which could not lead out of the table", where)

    def to_json(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for attr, key in _KEYS.items():
            value = getattr(self, attr)
            if value is not None:
                out[key] = value
        out.update(self.other)
        return out


class SharedLoadDetail(LoadDetail):
    """An entry as read, shared by every reader of the same file content in this process (meta.status.status_doc):
    it cannot be changed (``copy()`` gives a changeable one; commits change entries of ``edit_status``)."""

    def __setattr__(self, name: str, value: object) -> None:
        if "_sealed" in self.__dict__:
            raise CarbonError(f"tablestatus entry {self.name!r} as read is shared by this process's readers and "
                              "cannot be changed: change entries inside table.edit_status(), or change a copy()")
        object.__setattr__(self, name, value)

    @classmethod
    def seal(cls, detail: LoadDetail) -> SharedLoadDetail:
        """``detail`` itself made shared (the caller gives up its reference)."""
        detail.__class__ = cls
        detail.__dict__["_sealed"] = True
        return detail  # type: ignore[return-value]


def parse(text: str, where: str = "tablestatus") -> list[LoadDetail]:
    if not text.strip():
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise CarbonFormatError(f"tablestatus is not valid JSON: {e.msg} at char {e.pos}", where) from None
    if not isinstance(data, list):
        raise CarbonFormatError(f"tablestatus must be a JSON array, found {type(data).__name__}", where)
    entries = [LoadDetail.from_json(o, where) for o in data]
    names = [e.name for e in entries]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise CarbonFormatError(f"tablestatus lists segment {twice[0]!r} more than once", where)
    return entries


def dumps(entries: list[LoadDetail]) -> str:
    return json.dumps([e.to_json() for e in entries], separators=(",", ":"), ensure_ascii=False)


READ_ATTEMPTS = 4


def read(storage: Storage, path: str) -> list[LoadDetail]:
    """Entries of the tablestatus file at ``path``; empty when the table has no loads yet."""
    return read_versioned(storage, path)[0]


def read_versioned(storage: Storage, path: str) -> tuple[list[LoadDetail], str | None]:
    """(entries, the version read: what ``replace_if_version`` checks; None when the file is absent).

    On S3 the file is fetched in one GET when conditional writes are available; pyarrow's reader asks
    for the size first and then for that many bytes, so a commit landing in between yields a cut file, and
    where writes replace in place (HDFS) a reader can meet a half-written one. Either parses as broken JSON
    and is read again, a few times, before it is reported as damaged.
    """
    where = storage.uri(path)
    for attempt in range(READ_ATTEMPTS):
        data, version = storage.read_versioned(path)
        try:
            entries = [] if data is None else parse(decode_text(data, where), where)
            break
        except CarbonFormatError:
            if storage.is_local or attempt == READ_ATTEMPTS - 1:
                raise
            pause(attempt)
    return entries, version


def pause(attempt: int) -> None:
    """The wait before reading a status file again that read as damaged (a remote store's torn read)."""
    time.sleep(0.05 * (attempt + 1))


def decode_text(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CarbonFormatError(f"not valid UTF-8 text: {e.reason}", where, e.start) from None


def replace_if_version(storage: Storage, path: str, entries: list[LoadDetail], version: str | None,
                       data: Content | None = None) -> None:
    """Replace the file in one step, only if it is still ``version`` (what the edit read under the table
    lock): a concurrent reader sees the old list or the new one, never a mix. Only ``StatusEdit`` (the
    table's ``edit_status``) calls this.

    Raises:
        CarbonConcurrentError: another writer changed the file since this commit read it (nothing written),
            or, where writes are not conditional, overwrote this commit right after it was written.
    """
    data = dumps(entries).encode("utf-8") if data is None else data  # ``data``: the entries' text, made already
    if not storage.replace_if(path, data, version):
        raise CarbonConcurrentError(
            f"commit to {storage.uri(path)} refused: the file changed after this writer read it under the "
            "table lock, so another writer committed at the same time; this commit was not applied, retry it"
        )
    if not storage.conditional_writes(path):
        _check_kept(storage, path, joined(data), entries)


def write_history(storage: Storage, path: str, entries: list[LoadDetail]) -> None:
    """Write ``tablestatus.history`` (entries CLEAN FILES moved out of tablestatus) in one step."""
    storage.write_atomic(path, dumps(entries).encode("utf-8"))


def _check_kept(storage: Storage, path: str, data: bytes, entries: list[LoadDetail]) -> None:
    """Single-writer stores: read the file back; a segment of ours missing means a second writer overwrote it."""
    now, _ = storage.read_versioned(path)
    if now == data:
        return
    have = {(e.name, e.status) for e in parse(decode_text(now or b"", storage.uri(path)), storage.uri(path))}
    lost = [e.name for e in entries if (e.name, e.status) not in have]
    if lost:
        raise CarbonConcurrentError(
            f"segments {', '.join(lost)} of {storage.uri(path)} were overwritten by another writer right after "
            "this commit: this store has no conditional writes, so only one writer per table is supported; "
            "stop the other writer and run the commit again"
        )


# A commit's entries (meta.status.status_doc.EntryList) answer these without making an object of every entry; the
# functions take plain lists too.

def next_segment_id(entries: list[LoadDetail]) -> str:
    """Max integral segment id + 1 (compaction results such as "0.1" do not count)."""
    if hasattr(entries, "max_id"):
        return str(entries.max_id() + 1)
    ids = [int(e.name) for e in entries if e.name.isdigit()]
    return str(max(ids) + 1) if ids else "0"


def find(entries: list[LoadDetail], segment_id: str) -> LoadDetail | None:
    if hasattr(entries, "find"):
        return entries.find(segment_id)
    for e in entries:
        if e.name == segment_id:
            return e
    return None


def with_status(entries: list[LoadDetail], statuses: frozenset[str]) -> list[LoadDetail]:
    """The entries whose status is one of ``statuses``."""
    if hasattr(entries, "with_status"):
        return entries.with_status(statuses)
    return [e for e in entries if e.status in statuses]
