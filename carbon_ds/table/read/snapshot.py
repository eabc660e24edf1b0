"""Opening a table for reading: ``open_source`` is where a path, a ``TableHandle`` or a snapshot becomes a
``Snapshot`` (the readable files, their formats and committed deletes of one tablestatus read) for every read
route; a bare folder of ``.carbondata`` files is one too."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pyarrow as pa

from carbon_ds.errors import CarbonOptionError, CarbonTableError, see
from carbon_ds.fs import Storage, basename
from carbon_ds.readers.carbon_file import CarbonDataFile
from carbon_ds.readers.external.base import ExternalRef
from carbon_ds.table.meta.caches.committed_cache import CommittedCache, entry_identity, segment_key
from carbon_ds.table.meta.files.deltas import Deletes
from carbon_ds.table.meta.files.naming import COLUMNAR, DATA_EXT
from carbon_ds.table.meta.files.segment_file import segment_dir
from carbon_ds.table.meta.handle import DataFile, TableHandle, parse_segment_ids
from carbon_ds.table.meta.status import validity
from carbon_ds.table.meta.status.tablestatus import LoadDetail


@dataclass
class Snapshot:
    """What a read plans over: a table's readable (or chosen) files, or a bare folder's, as of one read of
    its tablestatus. ``open_source`` is where a path becomes a table for every read route (scans, the
    Spark source, counts, DML); the Spark source pickles it into its plan rather than opening it again."""

    storage: Storage
    schema: pa.Schema
    files: list[tuple[str, str | None]]  # (path, segment id or None for a bare folder)
    uri: str
    table: TableHandle | None = None
    external: dict[str, ExternalRef] = field(default_factory=dict)  # path -> how to read a non-carbondata file
    partitions: dict | None = None  # HASH/RANGE/LIST tables: partition ids read and skipped by the last plan
    deletes: Deletes | None = None  # committed delete deltas of the same tablestatus version as ``files``
    data_files: list[DataFile] = field(default_factory=list)  # a table's files with their formats
    details: list[LoadDetail] | None = None  # the tablestatus version a table's snapshot was taken from
    # segment id -> its committed_cache.segment_key, for segments whose files all lie in their own folder
    committed: dict[str, tuple] = field(default_factory=dict)
    # the table-level key of ``files`` when every read segment is a committed one of the table's own folders
    snapshot_key: tuple | None = None

    @property
    def columns(self):
        """The table's current column schemas (files are read through them), None for a bare folder."""
        return self.table.columns if self.table is not None else None


def bare_files(path: str | os.PathLike) -> tuple[Storage, str, list[tuple[str, int]]]:
    """(storage, folder, [(path, size)]) of the ``.carbondata`` files under a folder, sorted; hidden and
    ``_`` files skipped. A path to one ``.carbondata`` file lists just that file."""
    storage, fs_path = Storage.for_path(path)
    if not storage.is_dir(fs_path):  # one data file is read as it is; anything else holds none
        is_data = fs_path.endswith(DATA_EXT) and storage.exists(fs_path)
        return storage, fs_path, [(fs_path, storage.size(fs_path))] if is_data else []
    files = [
        (f.path, f.size)
        for f in storage.list(fs_path, recursive=True)
        if f.path.endswith(DATA_EXT) and not basename(f.path).startswith((".", "_"))
    ]
    return storage, fs_path, sorted(files)


def _bare_schema(storage: Storage, first: str) -> pa.Schema:
    with CarbonDataFile(first, storage=storage) as f:
        return f.schema


_FOREIGN = {"parquet": "parquet", "orc": "orc", "csv": "csv", "json": "json", "jsonl": "json"}


def no_data_error(path: str | os.PathLike) -> CarbonTableError:
    """Why ``path`` cannot be read as CarbonData, and what to do instead."""
    text = os.fspath(path)
    storage, fs_path = Storage.for_path(text)
    if not storage.exists(fs_path):
        return CarbonTableError(f"{text} does not exist")
    if not storage.is_dir(fs_path):
        return CarbonTableError(f"{text} is a file but not a .carbondata file; expected a table folder, a folder "
                                "of .carbondata files or one .carbondata file")
    listing = storage.list(fs_path, recursive=True)
    if not listing:
        return CarbonTableError(f"{text} is an empty folder: no CarbonData table (Metadata/schema) and no "
                                ".carbondata files")
    exts: dict[str, int] = {}
    for f in listing:
        name = basename(f.path)
        if "." in name and not name.startswith((".", "_")):
            ext = name.rsplit(".", 1)[-1].lower()
            exts[ext] = exts.get(ext, 0) + 1
    found = ", ".join(f"{n} .{e}" for e, n in sorted(exts.items(), key=lambda x: -x[1])[:5]) or "no data files"
    foreign = [e for e in exts if e in _FOREIGN] + [e for e in exts if e == "snappy" or e.endswith("parquet")]
    hint = ""
    if foreign:
        fmt = _FOREIGN.get(foreign[0], "parquet")
        hint = (f"; to read {fmt} data use pyarrow, or add the folder to a CarbonData table without converting "
                f"it: CarbonTable.add_segment({text!r}, format={fmt!r})")
    return CarbonTableError(f"{text} is not a CarbonData table (no Metadata/schema) and holds no .carbondata "
                            f"files (found {found}){hint}" + see("tables.md"))


def arrow_schema_of(path: str | os.PathLike) -> pa.Schema:
    """The schema of a table (its schema file) or of a bare folder (its first file's header)."""
    table = open_table(path)
    if table is not None:
        return table.schema
    storage, _folder, files = bare_files(path)
    if not files:
        raise no_data_error(path)
    return _bare_schema(storage, files[0][0])


def open_table(path: str | os.PathLike) -> TableHandle | None:
    """The table at ``path`` (its schema file read), None when ``path`` holds no table."""
    return TableHandle.open(path) if TableHandle.exists(path) else None


def open_source(path: str | os.PathLike | TableHandle | Snapshot, segments=None) -> Snapshot:
    """The readable files of a table (an open ``TableHandle`` or a path to one) or of a bare folder: one
    snapshot, its files and delete deltas from one read of the tablestatus. A ``Snapshot`` is returned as
    it is (reads that must see the same version as an earlier plan pass it)."""
    if isinstance(path, Snapshot):
        return path
    table = path if isinstance(path, TableHandle) else open_table(path)
    if table is not None:
        details = table.load_details()
        found, files, external, committed, key = _table_files(table, segments, details)
        return Snapshot(table.storage, table.schema, files, table.uri, table, external, deletes=table.deletes(details),
                        data_files=found, details=details, committed=committed, snapshot_key=key)
    text = os.fspath(path)
    if segments is not None:
        raise CarbonOptionError(f"segments={segments!r} given, but {text} has no Metadata/tablestatus")
    storage, _folder, files = bare_files(text)
    if not files:
        raise no_data_error(text)
    return Snapshot(storage, _bare_schema(storage, files[0][0]), [(p, None) for p, _ in files], text)


# A table's readable files (and their segments' keys) by every tablestatus entry as stored, when each segment
# read qualifies for meta.caches.committed_cache (planned_reads.py keeps such a snapshot's plans). A query of an
# unchanged table then costs one read of the status file and no look at any segment.
_SNAPSHOTS = CommittedCache(max_entries=64)


def _table_files(table: TableHandle, segments, details: list[LoadDetail]
                 ) -> tuple[list[DataFile], list[tuple[str, str | None]], dict[str, ExternalRef], dict[str, tuple],
                            tuple | None]:
    """(data files, (path, segment) of each, how to read the external ones, committed keys, snapshot key or
    None) of ``table.files(segments, details)``."""
    key = None
    if table.storage.is_local:
        wanted = parse_segment_ids(segments)
        key = (table.path, table.table_id, tuple(wanted) if wanted is not None else None,
               tuple(map(entry_identity, details)))
        hit = _SNAPSHOTS.get(key)
        if hit is not None:
            found, files, committed = hit
            return list(found), list(files), {}, dict(committed), key
    found = table.files(segments, details)
    for f in found:
        if f.file_format != COLUMNAR and f.external is None:
            raise CarbonTableError(f"segment {f.segment_id} has format {f.file_format!r} but no reading details")
    files = [(f.path, f.segment_id) for f in found]
    external = {f.path: f.external for f in found if f.external is not None}
    committed, every = committed_keys(table, segments, details, found)
    if key is not None and every and not external:
        _SNAPSHOTS.put(key, (tuple(found), tuple(files), dict(committed)))
        return found, files, external, committed, key
    return found, files, external, committed, None


def committed_keys(table: TableHandle, segments, details: list[LoadDetail], found: list[DataFile]
                   ) -> tuple[dict[str, tuple], bool]:
    """(segment id -> ``committed_cache.segment_key`` of the read segments whose files all lie in their own
    folder (their index entries are then kept by the entry: meta.caches.committed_cache), whether every read
    segment is one)."""
    keys = {}
    every = True
    for d in map(validity.as_read, table.selected(segments, details)):
        key = segment_key(table, d)
        if key is not None:
            keys[d.name] = key
        else:
            every = False
    prefixes: dict[str, str] = {}
    for f in found:
        if f.segment_id in keys:
            prefix = prefixes.get(f.segment_id)
            if prefix is None:
                prefix = prefixes[f.segment_id] = segment_dir(table.path, f.segment_id).rstrip("/") + "/"
            if not f.path.startswith(prefix) or "/" in f.path[len(prefix):]:
                del keys[f.segment_id]
                every = False
    return keys, every
