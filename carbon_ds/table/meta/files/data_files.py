"""Which data files make up a segment: from its segment file, its external folder, or (1.x) its folder."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from carbon_ds.errors import CarbonError, CarbonFormatError, CarbonMissingFileError, CarbonTableError
from carbon_ds.format.index import parse_index
from carbon_ds.fs import Storage, basename, norm_path
from carbon_ds.readers.external.base import ExternalRef
from carbon_ds.table.meta.caches.committed_cache import CommittedCache, in_segment_folder, segment_key
from carbon_ds.table.meta.caches.signed_cache import SignedCache, sign
from carbon_ds.table.meta.files import segment_file as segfiles
from carbon_ds.table.meta.files.naming import (
    COLUMNAR,
    DATA_EXT,
    INDEX_EXT,
    MERGE_INDEX_EXT,
    is_data_file,
    owned_by_index,
)
from carbon_ds.table.meta.status.tablestatus import STREAMING, STREAMING_FINISH, LoadDetail

STREAM_FORMAT = "row_v1"  # carbon_ds.readers.external.row_v1

if TYPE_CHECKING:
    from carbon_ds.table.meta.handle import DataFile, TableHandle


def _data_files_in_folder(
    storage: Storage, folder: str, index_names: list[str] | None, merge_name: str | None, listed_by: str = ""
) -> list[tuple[str, int]]:
    """The committed data files of a segment folder; ``listed_by`` names the segment file for messages."""
    listing = storage.list(folder)
    data = [(f.path, f.size) for f in listing if f.path.endswith(DATA_EXT)]
    by = f" (listed by segment file {listed_by})" if listed_by else ""
    if merge_name and not any(basename(f.path) == merge_name for f in listing):
        raise CarbonMissingFileError(f"segment folder {storage.uri(folder)} has no merged index {merge_name}{by}")
    if index_names is None or merge_name:
        # Without a per-task list (1.x tables, or a merged index that covers every committed task) the
        # folder holds exactly the committed files.
        if merge_name and not data:
            raise CarbonMissingFileError(f"segment folder {storage.uri(folder)} has a merged index but no data "
                                         f"file{by}")
        return data
    names = {basename(f.path) for f in listing}
    lost = [i for i in index_names if i not in names]
    if lost:
        raise CarbonMissingFileError(f"segment folder {storage.uri(folder)} has no index file {lost[0]}{by}")
    owned = [(p, s) for p, s in data if any(owned_by_index(basename(p), i) for i in index_names)]
    # every committed task wrote at least one data file: a task without one lost its files
    lost = [i for i in index_names if not any(owned_by_index(basename(p), i) for p, _s in owned)]
    if lost:
        raise CarbonMissingFileError(
            f"segment folder {storage.uri(folder)}: no data file of committed task index {lost[0]}"
            + (f" (and {len(lost) - 1} more)" if len(lost) > 1 else "") + by
        )
    return owned


def is_stream(detail: LoadDetail) -> bool:
    """A Streaming / Streaming Finish segment: CarbonData's queries read its row-format files."""
    return detail.status in (STREAMING, STREAMING_FINISH) and (detail.visibility or "true").lower() != "false"


def _stream_files(table: TableHandle, detail: LoadDetail, data_file: type[DataFile]) -> list[DataFile]:
    """The row-format files of a stream segment, each bounded by the size its stream index records
    (StreamSegment.updateIndexFile; CarbonData's readers stop there too)."""
    storage = table.storage
    folder = segfiles.segment_dir(table.path, detail.name)
    if not storage.is_dir(folder):
        return []
    listing = storage.list(folder)
    committed: dict[str, int] = {}
    for f in listing:
        if f.path.endswith(INDEX_EXT):
            _header, entries = parse_index(storage.read_bytes(f.path), storage.uri(f.path))
            committed.update({e.file_name: int(e.file_size) for e in entries if e.file_size is not None})
    out = []
    for f in sorted(listing, key=lambda f: f.path):
        if not f.path.endswith(DATA_EXT):
            continue
        size = committed.get(basename(f.path), f.size if not committed else 0)
        if size:
            ref = ExternalRef(STREAM_FORMAT, (), (("length", str(size)),))
            out.append(data_file(f.path, size, detail.name, STREAM_FORMAT, ref))
    return out


def _segment_file(table: TableHandle, detail: LoadDetail) -> segfiles.SegmentFile:
    """The segment file a tablestatus entry names, checked to be that load's."""
    try:
        seg = segfiles.read(table.storage, table.path, detail.segment_file or "")
    except FileNotFoundError:
        raise CarbonMissingFileError(
            f"tablestatus {table.storage.uri(table.tablestatus_path)} names segment file {detail.segment_file} for "
            f"segment {detail.name}, but {table.storage.uri(segfiles.segments_dir(table.path))} holds no such file"
        ) from None
    _check_owner(detail, seg, (detail.file_format or COLUMNAR).lower(), table.storage.uri(table.tablestatus_path))
    return seg


def dropped_folders(table: TableHandle, detail: LoadDetail) -> set[str]:
    """The folders of a segment its segment file no longer lists as live (partitions an overwrite replaced)."""
    if not detail.segment_file:
        return set()
    return {norm_path(folder) for folder, details in _segment_file(table, detail).folders(table.path)
            if details.status and details.status not in ("Success", "Marked for Update")}


def _listed_files(table: TableHandle, seg: segfiles.SegmentFile, fmt: str
                  ) -> tuple[list[tuple[str, int]], dict[str, ExternalRef], dict[str, int]]:
    """(path, size) of the data files a segment file lists, how to read the external ones, and the row
    counts recorded for external files unchanged since."""
    storage = table.storage
    found: list[tuple[str, int]] = []
    refs: dict[str, ExternalRef] = {}
    rows: dict[str, int] = {}
    recorded = recorded_rows(seg.options)
    options = {k: v for k, v in seg.options.items() if k.lower() != FOOTER_ROWS}
    for folder, details in seg.folders(table.path):
        if details.status and details.status != "Success" and details.status != "Marked for Update":
            continue
        if fmt != COLUMNAR or not details.is_relative and any(not f.endswith(INDEX_EXT) for f in details.files):
            # External folders list their data files directly.
            for name in details.files:
                path = Storage.join(folder, name) if "/" not in name else name
                if name in recorded:
                    size, mtime = storage.stat(path)
                    n, want_size, want_mtime = recorded[name]
                    if size == want_size and mtime == want_mtime:
                        rows[path] = n  # else changed since ADD SEGMENT: counted from its footer again
                else:
                    size = storage.size(path)
                found.append((path, size))
                if fmt != COLUMNAR:
                    refs[path] = external_ref(fmt, details.partitions, options)
            continue
        indexes = [f for f in details.files if f.endswith(INDEX_EXT)]
        odd = [f for f in details.files if not f.endswith((INDEX_EXT, MERGE_INDEX_EXT))]
        listless = not (details.files or details.merge_file_name) and len(seg.location_map) > 1
        if odd or listless:
            # a live folder lists its tasks' index files; anything else lost the folder's rows (an empty load
            # lists one folder and nothing in it: the whole segment's check below takes that)
            raise CarbonFormatError(
                f"locationMap folder {storage.uri(folder)} lists "
                + (f"{odd[0]!r}, not an index file name" if odd else "no index file")
                + f": expected the {INDEX_EXT} files of the load's tasks (or a merged index) for a live folder",
                seg.source or "")
        found.extend(_data_files_in_folder(storage, folder, indexes, details.merge_file_name, seg.source or ""))
    return found, refs, rows


# A carbondata segment's files by its segment file, while the segment file, its folders and the files are
# unchanged (meta.caches.signed_cache): the checks of a segment file against its folders run once per process.
_LISTED = SignedCache(max_entries=100_000)
# The same by the segment's tablestatus entry alone, for segments whose files are all in the segment's own
# folder (meta.caches.committed_cache): no file is looked at while the entry is unchanged.
_COMMITTED = CommittedCache(max_entries=100_000)


def segment_files(table: TableHandle, detail: LoadDetail, data_file: type[DataFile]) -> list[DataFile]:
    """The data files of one segment, as ``data_file`` values (path, size, segment, format, external ref)."""
    if is_stream(detail):
        return _stream_files(table, detail, data_file)
    fmt = (detail.file_format or COLUMNAR).lower()
    if not detail.segment_file or fmt != COLUMNAR or not table.storage.is_local:
        return _segment_files(table, detail, data_file, fmt)
    storage = table.storage
    committed = segment_key(table, detail)
    if committed is not None:
        hit = _COMMITTED.get((committed, data_file))
        if hit is not None:
            return list(hit)
    key = (table.path, detail.name, detail.segment_file, detail.data_size, data_file)
    hit = _LISTED.get(storage, key)
    if hit is not None:
        _keep_committed(table, detail, committed, data_file, hit)
        return list(hit)
    seg_path = Storage.join(segfiles.segments_dir(table.path), detail.segment_file)
    before = sign(storage, [seg_path, segfiles.segment_dir(table.path, detail.name)])
    files = _segment_files(table, detail, data_file, fmt)
    after = sign(storage, [f.path for f in files])
    if before is not None and after is not None and all(f.external is None for f in files):
        _LISTED.put_signed(key, before + after, tuple(files))
        _keep_committed(table, detail, committed, data_file, tuple(files))
    return files


def _keep_committed(table: TableHandle, detail: LoadDetail, committed: tuple | None, data_file: type,
                    files: tuple) -> None:
    if committed is not None and in_segment_folder(table.path, detail.name, [f.path for f in files]):
        _COMMITTED.put((committed, data_file), files)


def _segment_files(table: TableHandle, detail: LoadDetail, data_file: type[DataFile], fmt: str) -> list[DataFile]:
    storage = table.storage
    found: list[tuple[str, int]] = []
    refs: dict[str, ExternalRef] = {}  # non-carbondata files: how to read them
    rows: dict[str, int] = {}  # external files whose recorded footer row count still holds
    if detail.segment_file:
        seg = _segment_file(table, detail)
        try:
            found, refs, rows = _listed_files(table, seg, fmt)
        except CarbonError as e:
            if seg.source and seg.source not in str(e):  # say which segment file led there
                raise type(e)(f"{e} (listed by segment file {seg.source})") from None
            raise
        dropped = any(d.status not in ("Success", "Marked for Update") for d in seg.location_map.values())
        if (not found and fmt == COLUMNAR and not dropped and (detail.data_size or "0").isdigit()
                and int(detail.data_size or 0)):
            # an empty load records 0 bytes: a segment file listing nothing for a load of data lost its list
            raise CarbonFormatError(
                f"segment file {seg.source} lists no data file for segment {detail.name}, whose tablestatus entry "
                f"records {detail.data_size} bytes of data ({storage.uri(table.tablestatus_path)})", seg.source)
    elif detail.path:
        found = [(f.path, f.size) for f in storage.list(detail.path, recursive=True) if is_data_file(f.path, fmt)]
        if fmt != COLUMNAR:
            refs = {p: external_ref(fmt, [], {}) for p, _s in found}
    else:
        folder = segfiles.segment_dir(table.path, detail.name)
        if not storage.is_dir(folder):
            raise CarbonTableError(
                f"segment {detail.name} of {table.uri} is {detail.status!r} but its folder "
                f"{storage.uri(folder)} does not exist"
            )
        found = _data_files_in_folder(storage, folder, None, None)
    return [data_file(p, s, detail.name, fmt, refs.get(p), rows.get(p)) if p in rows
            else data_file(p, s, detail.name, fmt, refs.get(p)) for p, s in sorted(found)]


def _check_owner(detail: LoadDetail, seg: segfiles.SegmentFile, fmt: str, status: str) -> None:
    """A segment file belongs to its tablestatus entry: its name starts with the load name (``<segNo>_<ms>``)
    and a segment folder it lists in the table is that load's. A damaged load name or segment file name would
    otherwise read one load's rows as another's, with another's deletes."""
    name = detail.segment_file or ""
    folder_ids = {key.rstrip("/").rsplit("/Segment_", 1)[1] for key, d in seg.location_map.items()
                  if d.is_relative and "/Fact/Part0/Segment_" in key}
    if not name.startswith(f"{detail.name}_") or fmt == COLUMNAR and folder_ids - {detail.name}:
        raise CarbonTableError(
            f"tablestatus {status}: entry {detail.name!r} names segment file {seg.source or name}, which belongs to "
            f"segment {name.split('_', 1)[0]!r}" + (f" and lists folders of segments {sorted(folder_ids)}"
                                                     if folder_ids else "") + ": the two files disagree")


FOOTER_ROWS = "carbon_ds.footer_rows"
"""Segment file option of an added Parquet/ORC segment: ``{file name as listed: [rows, size, mtime_ns]}``
(JSON), the footers' row counts read by ADD SEGMENT, so a count does not open every footer again. A file
whose size or modification time differs is counted from its footer (CarbonData ignores the option)."""


def recorded_rows(options: dict) -> dict[str, tuple[int, int, int | None]]:
    """The recorded footer row counts of a segment file's ``options`` (empty when none or unreadable)."""
    text = next((v for k, v in (options or {}).items() if str(k).lower() == FOOTER_ROWS), None)
    if not text:
        return {}
    try:
        doc = json.loads(text)
        return {str(k): (int(v[0]), int(v[1]), None if v[2] is None else int(v[2])) for k, v in doc.items()}
    except (ValueError, TypeError, IndexError, AttributeError):
        return {}  # a damaged record only costs the footers' reads


def record_rows(files: dict[str, tuple[int, int, int | None]]) -> str:
    """The ``FOOTER_ROWS`` option text of ``{listed name: (rows, size, mtime_ns)}``."""
    return json.dumps({k: list(v) for k, v in files.items()}, separators=(",", ":"))


def external_ref(fmt: str, partitions: list[str], options: dict) -> ExternalRef:
    """How to read a file of an external segment: its format, the folder's partition values
    (``["day=20211123", ...]``) and the ADD SEGMENT options (CSV/JSON settings)."""
    parts = tuple((k, v) for k, _sep, v in (p.partition("=") for p in partitions))
    opts = tuple(sorted((str(k).lower(), str(v)) for k, v in (options or {}).items()))
    return ExternalRef(fmt, parts, opts)
