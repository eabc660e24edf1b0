"""Delete deltas: which rows of a data file are deleted, in CarbonData's files.

- ``<blockName>-<ts>.deletedelta`` next to the data file, JSON
  ``{"blockletDetailsMap": {"<blocklet>_<page>": {"id": "<blocklet>", "pageId": p, "deletedRows": [...]}},
  "blockName": "<blockName>"}``; rows are offsets within the page. ``blockName`` is the data file name without
  its load timestamp and extensions (``part-0-0_batchno0-0-3`` for ``part-0-0_batchno0-0-3-<ts>.snappy.carbondata``):
  CarbonData's DELETE names it so (``CarbonUpdateUtil.getBlockName`` of the tuple id's block) and its readers
  find a file's deltas by it (``SegmentUpdateStatusManager.getDeltaFiles``). Tables written by carbon-ds before
  kept the load timestamp in it; their entries are read by the name they record, and a later DELETE moves the
  block to CarbonData's name.
- ``Metadata/tableupdatestatus-<ts>``: a JSON array with one object per block that has deltas:
  segmentName, blockName, segmentStatus ("Success", or "Marked for Delete" once every row is deleted),
  deleteDeltaStartTimestamp / deleteDeltaEndTimestamp, deltaFileStamps, actualBlockName, deletedRowsInBlock.
  ``actualBlockName`` is the data file name; for a partitioned table it is prefixed by its partition folders
  ("c=1/part-...carbondata") because one segment can hold equally named files in different partitions.
- Rows of an external (Parquet / ORC / CSV / JSON) segment's file: the entry's ``actualBlockName`` is the
  file's full path, ``externalFile`` records its path, size and modification time (a file changed since is
  refused, not misread), rows are (unit, 0, row in unit) with units its row groups / stripes (CSV, JSON: one),
  and the delta files live in ``Metadata/external_deltas/Segment_<id>/`` so the external folder is never
  written to. Apache CarbonData ignores the extra field and does not apply these deletes.
- The committed update status is the file named by ``updateStatusFileName`` in tablestatus (segment "0"'s
  entry, as CarbonData does). Delta files not listed there are invisible: writing them is not the commit.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from carbon_ds.errors import CarbonFormatError, CarbonTableError
from carbon_ds.fs import Storage, norm_path
from carbon_ds.table.meta.files.trash import find_in_trash
from carbon_ds.table.meta.status import tablestatus
from carbon_ds.table.meta.status.tablestatus import LoadDetail

DELTA_EXT = ".deletedelta"
EXTERNAL_DIR = "external_deltas"
STATUS_PREFIX = "tableupdatestatus-"
SUCCESS = "Success"
MARKED_FOR_DELETE = "Marked for Delete"
# CarbonData writes SegmentStatus names here, as in tablestatus (Success and Marked for Delete in practice)
SEGMENT_STATUSES = frozenset({tablestatus.SUCCESS, tablestatus.FAILURE, tablestatus.PARTIAL_SUCCESS,
                              tablestatus.MARKED_FOR_DELETE, tablestatus.MARKED_FOR_UPDATE, tablestatus.COMPACTED,
                              tablestatus.IN_PROGRESS})


def block_name(path: str) -> str:
    """``part-0-0_batchno0-0-3`` for ``.../part-0-0_batchno0-0-3-1700000000000.snappy.carbondata``: the name
    CarbonData gives a data file's delete deltas."""
    return legacy_block_name(path).rsplit("-", 1)[0]


def legacy_block_name(path: str) -> str:
    """The data file name up to its first '.', the delta block name of carbon-ds versions before (and of a data
    file whose CarbonData block name another file of its folder shares)."""
    return posixpath.basename(norm_path(path)).split(".", 1)[0]


def delta_file_name(block: str, stamp: int | str) -> str:
    return f"{block}-{stamp}{DELTA_EXT}"


def actual_block_name(table_path: str, path: str) -> str:
    """The data file name, with its partition folders for a file outside ``Fact/`` (partitioned tables)."""
    root = norm_path(table_path).rstrip("/") + "/"
    p = norm_path(path)
    rel = p[len(root):] if p.startswith(root) else posixpath.basename(p)
    return posixpath.basename(rel) if rel.startswith("Fact/") or "/" not in rel else rel


def external_block(path: str) -> str:
    """The block name of an external file's deltas: its path hashed (names repeat across folders)."""
    return "ext-" + hashlib.sha1(norm_path(path).encode("utf-8")).hexdigest()[:24]


def external_folder(table_path: str, segment: str) -> str:
    return Storage.join(table_path, "Metadata", EXTERNAL_DIR, f"Segment_{segment}")


def file_identity(storage: Storage, path: str) -> dict:
    """What says an external file is still the one its deltas address: path, size, modification time."""
    return {"path": norm_path(path), "size": storage.size(path), "mtimeNs": storage.mtime_ns(path)}


@dataclass
class BlockStatus:
    """One tableupdatestatus entry."""

    segment: str
    block: str
    actual: str
    status: str = SUCCESS
    stamps: list[str] = field(default_factory=list)
    deleted: int = 0
    external: dict | None = None  # file_identity of an external file
    counted: bool = field(default=False, compare=False)  # the entry records deletedRowsInBlock

    @property
    def key(self) -> tuple[str, str]:
        return (self.segment, self.actual)

    def to_json(self) -> dict:
        extra = {"externalFile": self.external} if self.external else {}
        return {
            "segmentName": self.segment,
            "blockName": self.block,
            "segmentStatus": self.status,
            "deleteDeltaStartTimestamp": min(self.stamps, key=int) if self.stamps else "",
            "deleteDeltaEndTimestamp": max(self.stamps, key=int) if self.stamps else "",
            "deltaFileStamps": list(self.stamps),
            "actualBlockName": self.actual,
            "deletedRowsInBlock": str(self.deleted),
            **extra,
        }

    @classmethod
    def from_json(cls, obj: dict, where: str) -> BlockStatus:
        if not isinstance(obj, dict):
            raise CarbonFormatError(f"tableupdatestatus entry must be a JSON object, found {str(obj)[:80]}", where)
        named = [k for k in ("segmentName", "blockName") if not isinstance(obj.get(k), str)]
        if named:
            raise CarbonFormatError(f"tableupdatestatus entry {str(obj)[:200]} has no text {named[0]}", where)
        try:
            stamps = obj.get("deltaFileStamps")
            if not stamps:  # older writers only give the range: one file per end stamp
                stamps = [obj["deleteDeltaEndTimestamp"]] if obj.get("deleteDeltaEndTimestamp") else []
            st = cls(str(obj["segmentName"]), str(obj["blockName"]),
                     str(obj.get("actualBlockName") or obj["blockName"]), str(obj.get("segmentStatus", SUCCESS)),
                     [str(s) for s in stamps], int(obj.get("deletedRowsInBlock") or 0),
                     obj.get("externalFile") or None, obj.get("deletedRowsInBlock") not in (None, ""))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CarbonFormatError(f"tableupdatestatus entry {str(obj)[:200]} lacks or mangles {e}", where) from None
        st._check_names(where)
        return st

    def _check_names(self, where: str) -> None:
        """Names that become paths stay inside the table: the block and stamps make a delta file's name in the
        data file's folder, and ``actualBlockName`` may only add partition folders (an external file's entry
        names its file, recorded as external)."""
        bad = None
        if self.status not in SEGMENT_STATUSES:
            bad = f"segmentStatus {self.status!r} (expected one of {', '.join(sorted(SEGMENT_STATUSES))})"
        elif not _plain_name(self.block) or not _plain_name(self.segment):
            bad = f"blockName {self.block!r} / segmentName {self.segment!r} (expected plain names)"
        elif any(not s.isdigit() for s in self.stamps):
            bad = f"deltaFileStamps {self.stamps!r} (expected epoch milliseconds)"
        elif not self.external and not _relative_inside(self.actual):
            bad = f"actualBlockName {self.actual!r} (expected a file name, or one under partition folders)"
        if bad is not None:
            raise CarbonFormatError(f"tableupdatestatus entry of segment {self.segment!r} has {bad}", where)


def _plain_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and not any(ch in name for ch in "/\\\0")


def _relative_inside(path: str) -> bool:
    """A relative path that stays below its base: no empty, '.' or '..' part, no backslash or NUL."""
    return bool(path) and all(_plain_name(part) for part in path.split("/"))


def status_file_name(stamp: int) -> str:
    return f"{STATUS_PREFIX}{stamp}"


def status_path(table_path: str, name: str) -> str:
    return Storage.join(table_path, "Metadata", name)


def committed_status_name(entries: list[LoadDetail]) -> str | None:
    """The update status file tablestatus names: segment "0"'s, else the newest any entry names."""
    for e in entries:
        if e.name == "0" and e.update_status_file:
            return e.update_status_file
    names = [e.update_status_file for e in entries if e.update_status_file]
    return (max(names, key=lambda n: int(n.rsplit("-", 1)[-1]) if n.rsplit("-", 1)[-1].isdigit() else -1)
        if names else None)


_CACHE_LOCK = threading.Lock()
_STATUS_CACHE: dict[str, dict[tuple[str, str], BlockStatus]] = {}
_DELTA_CACHE: dict[str, dict[tuple[int, int], np.ndarray]] = {}
_CACHE_MAX = 1024


def _cached(cache: dict, key: str, load):
    # Both files are immutable once committed (a change always writes a new name), so the name is the key.
    with _CACHE_LOCK:
        hit = cache.get(key)
    if hit is not None:
        return hit
    value = load()
    with _CACHE_LOCK:
        if len(cache) >= _CACHE_MAX:
            cache.clear()
        cache[key] = value
    return value


def read_status(storage: Storage, table_path: str, name: str) -> dict[tuple[str, str], BlockStatus]:
    path = status_path(table_path, name)

    def load():
        where = storage.uri(path)
        try:
            data = json.loads(storage.read_text(path))
        except FileNotFoundError:
            raise CarbonFormatError(f"tablestatus names update status file {name}, but it does not exist",
                                    where) from None
        except json.JSONDecodeError as e:
            raise CarbonFormatError(f"tableupdatestatus is not valid JSON: {e.msg}", where) from None
        if not isinstance(data, list):
            raise CarbonFormatError(f"tableupdatestatus must be a JSON array, found {type(data).__name__}", where)
        out = {}
        for obj in data:
            st = BlockStatus.from_json(obj, where)
            out[st.key] = st
        return out

    return dict(_cached(_STATUS_CACHE, storage.uri(path), load))


def write_status(storage: Storage, table_path: str, name: str, statuses: dict[tuple[str, str], BlockStatus]) -> None:
    body = json.dumps([s.to_json() for _k, s in sorted(statuses.items())], separators=(",", ":"))
    path = status_path(table_path, name)
    storage.require_inside(path, table_path, f"writing update status {name}")
    storage.write_atomic(path, body.encode("utf-8"))


def write_delta(storage: Storage, folder: str, block: str, stamp: int | str,
                rows: dict[tuple[int, int], np.ndarray]) -> str:
    """Write one delta file; ``rows`` maps (blocklet, page) to deleted row offsets in that page."""
    details = {
        f"{b}_{p}": {"id": str(b), "pageId": int(p), "deletedRows": [int(r) for r in np.unique(r_)]}
        for (b, p), r_ in sorted(rows.items()) if len(r_)
    }
    path = Storage.join(folder, delta_file_name(block, stamp))
    storage.write_atomic(path, json.dumps({"blockletDetailsMap": details, "blockName": block},
                                          separators=(",", ":")).encode("utf-8"))
    return path


def read_delta(storage: Storage, path: str) -> dict[tuple[int, int], np.ndarray]:
    def load():
        where = storage.uri(path)
        try:
            data = json.loads(storage.read_text(path))
            out: dict[tuple[int, int], np.ndarray] = {}
            block = data.get("blockName")
            if block is not None and not posixpath.basename(norm_path(path)).startswith(f"{block}-"):
                raise ValueError(f"its blockName {str(block)[:100]!r} is not the block its name says")
            for key, d in (data.get("blockletDetailsMap") or {}).items():
                b = int(d.get("id", key.split("_")[0]))
                p = int(d.get("pageId", key.split("_")[-1]))
                listed = d.get("deletedRows") or []
                if not isinstance(listed, list):
                    raise ValueError(f"deletedRows of {key!r} is not a list")
                rows = np.asarray(listed, dtype=np.int64)
                if b < 0 or p < 0 or rows.ndim != 1 or (rows.size and rows.min() < 0):
                    raise ValueError(f"entry {key!r} names blocklet {b}, page {p}, rows {listed[:5]}: "
                                     "none may be negative")
                prev = out.get((b, p))
                out[(b, p)] = rows if prev is None else np.union1d(prev, rows)
            return out
        except FileNotFoundError:
            raise CarbonFormatError("committed delete delta file is missing", where) from None
        except (ValueError, AttributeError, TypeError, OverflowError) as e:
            raise CarbonFormatError(f"delete delta file is not the expected JSON: {e}", where) from None

    return _cached(_DELTA_CACHE, storage.uri(path), load)


def merge_rows(*maps: dict[tuple[int, int], np.ndarray]) -> dict[tuple[int, int], np.ndarray]:
    out: dict[tuple[int, int], np.ndarray] = {}
    for m in maps:
        for k, v in m.items():
            out[k] = np.union1d(out[k], v) if k in out else np.unique(v)
    return out


@dataclass
class FileDeletes:
    """The committed deletes of one data file (``sources``: its delta files, for messages)."""

    marked: bool
    rows: dict[tuple[int, int], np.ndarray]
    sources: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        return int(sum(len(v) for v in self.rows.values()))

    def check_shape(self, path: str, page_rows: Sequence[Sequence[int] | None], blocklet_rows: Sequence[int | None],
                    shape_from: str | None = None) -> None:
        """Refuse deletes of rows the data file at ``path`` does not hold: a blocklet, page or row past its
        blocklets (``blocklet_rows``), their pages and the pages' rows (``page_rows[b]``; None: unknown),
        as the footer or the index gives them. Run once per file, before any of its rows is used."""
        for (b, p), rows in self.rows.items():
            if not len(rows):
                continue
            top = int(rows.max())
            found = None
            if b >= len(blocklet_rows):
                found = f"blocklet {b}, but the file has {len(blocklet_rows)} blocklets"
            else:
                pages = page_rows[b] if b < len(page_rows) else None
                if pages is not None and p >= len(pages):
                    found = f"page {p} of blocklet {b}, which has {len(pages)} pages"
                elif pages is not None and top >= pages[p]:
                    found = f"row {top} of page {p} of blocklet {b}, a page of {pages[p]} rows"
                elif pages is None and blocklet_rows[b] is not None and top >= blocklet_rows[b]:  # type: ignore[operator]
                    found = f"row {top} of page {p} of blocklet {b}, a blocklet of {blocklet_rows[b]} rows"
            if found is not None:
                named = ", ".join(self.sources) or "its delete delta"
                given = f" (as the index {shape_from} gives the file)" if shape_from else ""
                raise CarbonFormatError(f"delete delta {named} deletes {found}{given}; the data file is {path}",
                                        self.sources[0] if self.sources else path)

    def blocklet_has(self, blocklet: int) -> bool:
        return self.marked or any(b == blocklet for b, _p in self.rows)

    def keep_mask(self, blocklet: int, pages: list[int], page_rows: Sequence[int]) -> np.ndarray | None:
        """Booleans for the rows of ``pages`` (in order) of ``blocklet``: False where deleted; None = keep all."""
        hits = [(i, self.rows[(blocklet, p)]) for i, p in enumerate(pages) if (blocklet, p) in self.rows]
        if not hits and not self.marked:
            return None
        sizes = np.asarray(page_rows, dtype=np.int64)
        if self.marked:
            return np.zeros(int(sizes.sum()), dtype=bool)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        mask = np.ones(int(sizes.sum()), dtype=bool)
        for i, rows in hits:
            if len(rows) and rows[-1] >= sizes[i]:  # rows are sorted (np.unique / union1d)
                named = ", ".join(self.sources) or "a delete delta"
                raise CarbonFormatError(f"{named} deletes row {int(rows[-1])} of page {pages[i]} of blocklet "
                                        f"{blocklet}, a page of {int(sizes[i])} rows",
                                        self.sources[0] if self.sources else None)
            mask[starts[i] + rows] = False
        return mask


def unit_keep_mask(fd: FileDeletes, units: list[int], unit_rows: list[int]) -> np.ndarray:
    """Keep-mask over the rows of an external file's ``units`` (in order, ``unit_rows`` rows each)."""
    parts = []
    for u, n in zip(units, unit_rows, strict=True):
        m = fd.keep_mask(u, [0], [n])
        parts.append(np.ones(n, dtype=bool) if m is None else m)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)


class Deletes:
    """The committed deletes of a table: ``lookup(path, segment)`` per data file (None: nothing deleted)."""

    def __init__(self, storage: Storage, table_path: str, statuses: dict[tuple[str, str], BlockStatus],
                 where: str | None = None):
        self.storage = storage
        self.table_path = table_path
        self.statuses = statuses
        self.where = where  # the update status file (for messages)
        # Data file names carry their segment id and load time, so the name alone is unique in a table:
        # callers that lost the segment id (Spark partitions) look up by name.
        self.by_actual = {actual: st for (_seg, actual), st in statuses.items()}
        self.external = any(st.external for st in statuses.values())

    def status_of(self, path: str, segment: str | None) -> BlockStatus | None:
        if not self.statuses:
            return None
        if self.external:
            # keyed by segment too: a path deleted as a segment and added again is a new file to its deltas
            key = norm_path(path)
            st = self.by_actual.get(key) if segment is None else self.statuses.get((segment, key))
            if st is not None and st.external:
                return st
        actual = actual_block_name(self.table_path, path)
        if segment is None:
            return self.by_actual.get(actual)
        return self.statuses.get((segment, actual))

    def lookup(self, path: str, segment: str | None) -> FileDeletes | None:
        st = self.status_of(path, segment)
        if st is None:
            return None
        folder = posixpath.dirname(norm_path(path))
        if st.external:
            self._check_identity(path, st)
            folder = external_folder(self.table_path, st.segment)
        paths = [Storage.join(folder, delta_file_name(st.block, s)) for s in st.stamps]
        rows = merge_rows(*[self._delta(p) for p in paths])
        fd = FileDeletes(st.status == MARKED_FOR_DELETE, rows, tuple(self.storage.uri(p) for p in paths))
        if st.counted and not fd.marked and fd.count != st.deleted:
            # the update status keeps each block's total of deleted rows (CarbonData adds every DELETE's count):
            # the one record a damaged or lost delta file can be checked against
            raise CarbonFormatError(
                f"update status {self.where or 'tableupdatestatus'} records {st.deleted} deleted rows of "
                f"{path}, its delete delta files {', '.join(fd.sources) or '(none)'} delete {fd.count}",
                fd.sources[0] if fd.sources else self.where)
        return fd

    def _check_identity(self, path: str, st: BlockStatus) -> None:
        want = st.external or {}
        try:
            found = file_identity(self.storage, path)
        except (OSError, CarbonFormatError) as e:
            raise CarbonTableError(f"external file {self.storage.uri(path)} of segment {st.segment} has deleted "
                                   f"rows but cannot be read: {e}") from None
        for k in ("size", "mtimeNs"):
            if want.get(k) is not None and found[k] is not None and want[k] != found[k]:
                raise CarbonTableError(
                    f"external file {self.storage.uri(path)} of segment {st.segment} changed since rows of it "
                    f"were deleted ({k}: expected {want[k]}, found {found[k]}); its delete deltas address rows "
                    "by position, so it is not read. Restore the file, or delete the segment and add it again")

    def _delta(self, path: str) -> dict[tuple[int, int], np.ndarray]:
        try:
            return read_delta(self.storage, path)
        except CarbonFormatError:
            # superseded since this snapshot was planned and moved to the trash by CLEAN FILES
            moved = None if self.storage.exists(path) else find_in_trash(self.storage, self.table_path, path)
            if moved is not None:
                return read_delta(self.storage, moved)
            if self.where is not None and not self.storage.exists(path):
                raise CarbonFormatError(f"update status {self.where} names delete delta file "
                                        f"{self.storage.uri(path)}, which does not exist", self.where) from None
            raise

    def is_marked(self, path: str, segment: str | None) -> bool:
        st = self.status_of(path, segment)
        return st is not None and st.status == MARKED_FOR_DELETE

    def check_blocks(self, files: list, segments: set[str], listed_by: dict[str, str] | None = None,
                     dropped: Callable[[str], set[str]] | None = None) -> None:
        """Every partly deleted block of ``segments`` (Success entries) is one of their data ``files``: a
        damaged entry (segment or block name) would otherwise leave its deleted rows in the table unseen.
        Entries of other segments (compacted, deleted, not read) are not checked; a block marked whole
        may have been cleaned away, and so may a block in a folder ``dropped(segment)`` names (a partition
        an overwrite replaced: the segment file marks the folder, the update status keeps the entry)."""
        hit = {key for f in files for key in [self._key_of(f.path, f.segment_id)] if key is not None}
        # data file names carry their load's id and time: a block is one file of the table, whatever segment
        # an entry names
        held = {actual_block_name(self.table_path, f.path): f.segment_id for f in files}
        for key, st in self.statuses.items():
            if (st.status == SUCCESS and key not in hit and not st.external and held.get(st.actual, st.segment) !=
                    st.segment):
                raise CarbonFormatError(
                    f"update status has deleted rows of block {st.actual!r} in segment {st.segment}, but the table "
                    f"holds that block in segment {held[st.actual]}", self.where)
            if st.segment in segments and st.status == SUCCESS and key not in hit:
                folder = norm_path(Storage.join(self.table_path, posixpath.dirname(st.actual)))
                if "/" in st.actual and dropped is not None and folder in dropped(st.segment):
                    continue
                seg_file = (listed_by or {}).get(st.segment)
                raise CarbonFormatError(
                    f"update status has deleted rows of block {st.actual!r} in segment {st.segment}, but segment "
                    f"{st.segment}" + (f" (segment file {seg_file})" if seg_file else "") + " holds no such data "
                    "file: the segment's files and the update status disagree", self.where)

    def _key_of(self, path: str, segment: str | None) -> tuple[str, str] | None:
        st = self.status_of(path, segment)
        return st.key if st is not None else None


def for_table(storage: Storage, table_path: str, entries: list[LoadDetail]) -> Deletes | None:
    name = committed_status_name(entries)
    if name is None:
        updated = [e.name for e in entries if e.update_delta_end and e.readable]
        if updated:  # a DELETE / UPDATE committed: its update status file must be named
            raise CarbonFormatError(
                f"tablestatus records deletes or updates of segments {', '.join(updated[:5])} "
                "(updateDeltaEndTimestamp) but names no update status file (updateStatusFileName), so their "
                "deleted rows cannot be found", storage.uri(Storage.join(table_path, "Metadata", "tablestatus")))
        return None
    return Deletes(storage, table_path, read_status(storage, table_path, name),
                   storage.uri(status_path(table_path, name)))


def superseded(storage: Storage, table_path: str, entries: list[LoadDetail], folders: list[str]) -> list[str]:
    """Delete-delta files in ``folders`` and ``Metadata/tableupdatestatus-*`` files that the committed
    update status no longer names: replaced by horizontal compaction, left by a failed or crashed
    DELETE/UPDATE, or of blocks whose segment is gone. The caller holds ``LockFiles/update.lock`` (a
    running DELETE/UPDATE writes its files before it commits them)."""
    keep_status = {e.update_status_file for e in entries if e.update_status_file}
    name = committed_status_name(entries)
    keep: set[str] = set()
    if name is not None:
        for st in read_status(storage, table_path, name).values():
            if st.external:
                folder = external_folder(table_path, st.segment)
            elif "/" in st.actual:
                folder = Storage.join(table_path, *posixpath.dirname(st.actual).split("/"))
            else:
                folder = Storage.join(table_path, "Fact", "Part0", f"Segment_{st.segment}")
            keep.update(norm_path(Storage.join(folder, delta_file_name(st.block, s))) for s in st.stamps)
    out = []
    ext_root = Storage.join(table_path, "Metadata", EXTERNAL_DIR)
    ext_folders = storage.list_dirs(ext_root) if storage.exists(ext_root) else []
    for folder in list(folders) + ext_folders:
        for f in storage.list(folder):
            if f.path.endswith(DELTA_EXT) and norm_path(f.path) not in keep:
                out.append(f.path)
    for f in storage.list(Storage.join(table_path, "Metadata")):
        base = posixpath.basename(norm_path(f.path))
        if base.startswith(STATUS_PREFIX) and base not in keep_status:
            out.append(f.path)
    return out
