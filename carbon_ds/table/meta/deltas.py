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
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from carbon_ds.errors import CarbonFormatError, CarbonTableError
from carbon_ds.fs import Storage, norm_path
from carbon_ds.readers.carbon_file import CarbonDataFile
from carbon_ds.table.meta.tablestatus import LoadDetail
from carbon_ds.table.meta.trash import find_in_trash

DELTA_EXT = ".deletedelta"
EXTERNAL_DIR = "external_deltas"
STATUS_PREFIX = "tableupdatestatus-"
SUCCESS = "Success"
MARKED_FOR_DELETE = "Marked for Delete"


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
        try:
            stamps = obj.get("deltaFileStamps")
            if not stamps:  # older writers only give the range: one file per end stamp
                stamps = [obj["deleteDeltaEndTimestamp"]] if obj.get("deleteDeltaEndTimestamp") else []
            return cls(str(obj["segmentName"]), str(obj["blockName"]),
                       str(obj.get("actualBlockName") or obj["blockName"]), str(obj.get("segmentStatus", SUCCESS)),
                       [str(s) for s in stamps], int(obj.get("deletedRowsInBlock") or 0),
                       obj.get("externalFile") or None)
        except (KeyError, TypeError, ValueError) as e:
            raise CarbonFormatError(f"tableupdatestatus entry {obj!r} lacks or mangles {e}", where) from None


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
    return max(names, key=lambda n: int(n.rsplit("-", 1)[-1]) if n.rsplit("-", 1)[-1].isdigit() else -1) \
        if names else None


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
    storage.write_atomic(status_path(table_path, name), body.encode("utf-8"))


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
            for key, d in (data.get("blockletDetailsMap") or {}).items():
                b = int(d.get("id", key.split("_")[0]))
                p = int(d.get("pageId", key.split("_")[-1]))
                rows = np.asarray(d.get("deletedRows") or [], dtype=np.int64)
                prev = out.get((b, p))
                out[(b, p)] = rows if prev is None else np.union1d(prev, rows)
            return out
        except FileNotFoundError:
            raise CarbonFormatError("committed delete delta file is missing", where) from None
        except (ValueError, AttributeError, TypeError) as e:
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
    """The committed deletes of one data file."""

    marked: bool
    rows: dict[tuple[int, int], np.ndarray]

    @property
    def count(self) -> int:
        return int(sum(len(v) for v in self.rows.values()))

    def blocklet_has(self, blocklet: int) -> bool:
        return self.marked or any(b == blocklet for b, _p in self.rows)

    def keep_mask(self, blocklet: int, pages: list[int], page_rows: list[int]) -> np.ndarray | None:
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
            rows = rows[rows < sizes[i]]
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

    def __init__(self, storage: Storage, table_path: str, statuses: dict[tuple[str, str], BlockStatus]):
        self.storage = storage
        self.table_path = table_path
        self.statuses = statuses
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
        rows = merge_rows(*[self._delta(Storage.join(folder, delta_file_name(st.block, s))) for s in st.stamps])
        return FileDeletes(st.status == MARKED_FOR_DELETE, rows)

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
            if moved is None:
                raise
            return read_delta(self.storage, moved)

    def is_marked(self, path: str, segment: str | None) -> bool:
        st = self.status_of(path, segment)
        return st is not None and st.status == MARKED_FOR_DELETE

    def deleted_rows(self, path: str, segment: str | None) -> int:
        st = self.status_of(path, segment)
        return st.deleted if st is not None else 0


def for_table(storage: Storage, table_path: str, entries: list[LoadDetail]) -> Deletes | None:
    name = committed_status_name(entries)
    if name is None:
        return None
    return Deletes(storage, table_path, read_status(storage, table_path, name))


def file_keep_mask(storage: Storage, path: str, fd: FileDeletes) -> np.ndarray:
    """Keep-mask over every row of a data file, in file order."""

    f = CarbonDataFile(path, storage=storage)
    try:
        parts = []
        for b in range(f.num_blocklets):
            sizes = f.page_rows(b)
            m = fd.keep_mask(b, list(range(len(sizes))), sizes)
            parts.append(np.ones(sum(sizes), dtype=bool) if m is None else m)
        return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)
    finally:
        f.close()


def drop_deleted(storage: Storage, deletes: Deletes, data_file, table, read_path: str | None = None):
    """``table`` (every row of ``data_file`` in file order) without its committed deleted rows
    (``read_path``: where the file is read from, when not at its place in the table)."""

    fd = deletes.lookup(data_file.path, data_file.segment_id)
    if fd is None or not fd.rows and not fd.marked:
        return table
    return table.filter(pa.array(file_keep_mask(storage, read_path or data_file.path, fd)))


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
