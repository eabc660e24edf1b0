"""``TableHandle``: an open table folder (storage, path, schema info) and what every operation asks of it.

Operations are typed against ``TableHandle``; ``CarbonTable`` (carbon_ds.table.table) is the facade above
them that adds one short method per operation. Nothing below the facade imports it.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from carbon_ds.errors import CarbonOptionError, CarbonSchemaError, CarbonTableError
from carbon_ds.format.hive import check_partition_columns
from carbon_ds.format.thrift.structs import ColumnSchema, PartitionInfo, PartitionType, TableInfo
from carbon_ds.fs import Storage, dirname, norm_path, resolve
from carbon_ds.readers.external.base import ExternalRef
from carbon_ds.table.meta.files import deltas
from carbon_ds.table.meta.files.data_files import dropped_folders, is_stream, segment_files
from carbon_ds.table.meta.files.naming import COLUMNAR, is_columnar
from carbon_ds.table.meta.files.new_table_folder import check_new_table_folder
from carbon_ds.table.meta.locks import TableLock, update_lock
from carbon_ds.table.meta.schema import guards, schema_file
from carbon_ds.table.meta.schema.properties import check_names
from carbon_ds.table.meta.status import status_doc, status_versions, validity
from carbon_ds.table.meta.status.status_edit import StatusEdit
from carbon_ds.table.meta.status.tablestatus import LoadDetail
from carbon_ds.table.partitions.id_spec import Layout, PartitionSpec, layout_for_spec, layout_from_info
from carbon_ds.table.partitions.partitioning import Partitioning, partitioning_of

STATUS_VERSION_PROPERTY = status_versions.VERSION_PROPERTY


@dataclass(frozen=True)
class SegmentInfo:
    id: str
    status: str
    load_start: int | None  # epoch ms
    load_end: int | None  # epoch ms
    data_size: int | None
    index_size: int | None
    file_format: str
    path: str | None  # external folder of an added segment, else None
    segment_file: str | None
    readable: bool

    @property
    def load_start_time(self) -> dt.datetime | None:
        """When the load started, as an aware UTC datetime (``load_start`` is epoch milliseconds)."""
        return _datetime(self.load_start)

    @property
    def load_end_time(self) -> dt.datetime | None:
        """When the load was committed, as an aware UTC datetime."""
        return _datetime(self.load_end)

    def __repr__(self) -> str:
        start = self.load_start_time.isoformat(sep=" ", timespec="seconds") if self.load_start else None
        where = f", path={self.path!r}" if self.path else ""
        return (f"SegmentInfo(id={self.id!r}, status={self.status!r}, format={self.file_format!r}, "
                f"load_start={start!r}, data_size={self.data_size}{where})")


def _datetime(epoch_ms: int | None) -> dt.datetime | None:
    return None if epoch_ms is None else dt.datetime.fromtimestamp(epoch_ms / 1000, dt.UTC)


@dataclass(frozen=True)
class DataFile:
    """A file the planner hands to a reader."""

    path: str  # the file system's own path (see carbon_ds.fs)
    size: int
    segment_id: str
    file_format: str = COLUMNAR
    external: ExternalRef | None = None  # how to read a non-carbondata file (format, partition values, options)
    rows: int | None = None  # rows ADD SEGMENT recorded from the footer, the file unchanged since (size, mtime)


def parse_segment_ids(segments_arg: str | list | tuple | None) -> list[str] | None:
    """``"0,2"`` / ``[0, 2]`` as segment ids; None (all readable segments) for None, empty or ``"*"``."""
    if segments_arg is None:
        return None
    items = segments_arg.split(",") if isinstance(segments_arg, str) else [str(s) for s in segments_arg]
    ids = [s.strip() for s in items if s.strip()]
    if not ids or ids == ["*"]:
        return None
    return ids


def resolve_columns(schema: pa.Schema, columns: list[str] | None, where: str) -> list[str] | None:
    """Table spellings of the requested columns (matched case-insensitively), in the requested order."""
    if columns is None:
        return None
    if isinstance(columns, str):
        raise CarbonOptionError(f"columns must be a list of names, found the string {columns!r} "
                                f"(write columns=[{columns!r}])")
    by_lower = {n.lower(): n for n in schema.names}
    missing = [c for c in columns if c.lower() not in by_lower]
    if missing:
        raise CarbonSchemaError(
            f"column(s) {', '.join(repr(c) for c in missing)} not in {where}; "
            f"table columns are: {', '.join(schema.names)}"
        )
    return [by_lower[c.lower()] for c in columns]


def int_or_none(text: str | None) -> int | None:
    """A tablestatus number field as an int (None when absent or not a number)."""
    return int(text) if text and text.lstrip("-").isdigit() else None


def not_a_table(storage: Storage, fs_path: str) -> tuple[str, bool]:
    """Why ``fs_path`` is not a CarbonData table (it has no ``Metadata/schema``): the message names the path,
    what a table folder holds and what was found; the flag says whether it is a bare folder of
    ``.carbondata`` files (as CarbonData's SDK writes), which readers take as it is."""
    where = storage.uri(fs_path)
    expected = f"expected a table folder holding {storage.uri(TableHandle.schema_path_of(fs_path))}"
    kind = storage.fs.get_file_info(fs_path).type
    if kind == pafs.FileType.NotFound:
        return f"not a CarbonData table: {where} does not exist ({expected})", False
    if kind != pafs.FileType.Directory:
        return f"not a CarbonData table: {where} is a file (expected a table folder holding Metadata/schema)", False
    files = sum(1 for f in storage.list(fs_path) if f.path.endswith(".carbondata"))
    if files:
        return (f"not a CarbonData table: {where} holds {files} .carbondata file(s) but no Metadata/ folder, as "
                f"CarbonData's SDK writes them ({expected})"), True
    return f"not a CarbonData table: {where} has no Metadata/schema ({expected})", False


class TableHandle:
    """A CarbonData table folder: ``Metadata/schema``, ``Metadata/tablestatus`` and its segments."""

    def __init__(self, storage: Storage, path: str, info: TableInfo, status_version: str | None = None):
        """``status_version``: read the segment list ``Metadata/tablestatus_<status_version>`` (a table of
        CarbonData's versioned table status), not the one the table names or the newest."""
        self.storage = storage
        self.path = path
        self.info = info
        self.read_status_version = (status_versions.check_version(status_version, f"table {storage.uri(path)}")
                                    if status_version else "")

    # ------------------------------------------------------------------ paths
    @staticmethod
    def schema_path_of(path: str) -> str:
        return Storage.join(path, "Metadata", "schema")

    @property
    def schema_path(self) -> str:
        return self.schema_path_of(self.path)

    @property
    def named_status_version(self) -> tuple[str, str]:
        """(version, who named it): the read option ``status_version`` given to ``open``, else the table
        property ``latestversion`` (CarbonData 2.3.1+ with carbon.enable.multi.version.table.status); ("", "")
        when neither names one (see meta.status.status_versions)."""
        if self.read_status_version:
            return self.read_status_version, status_versions.FROM_OPTION
        named = (self.properties.get(STATUS_VERSION_PROPERTY) or "").strip()
        return (named, status_versions.FROM_SCHEMA) if named else ("", "")

    def live_status(self) -> status_versions.LiveStatus:
        """The segment list file a read takes now: a named version, the plain ``tablestatus``, or the newest
        ``tablestatus_<version>`` when only version files exist (meta.status.status_versions)."""
        return status_versions.locate(self.storage, self.path, *self.named_status_version)

    @property
    def status_version(self) -> str:
        """The version of the live segment list ("" when it is the plain ``Metadata/tablestatus``)."""
        return self.live_status().version

    @property
    def tablestatus_path(self) -> str:
        """The live segment list file."""
        return self.live_status().path

    def check_writable(self, operation: str, data: bool = False) -> None:
        """Refuse a change of a table whose segment list version is named, by the schema's ``latestversion``
        or by the read option ``status_version``: CarbonData commits there by writing a new
        ``tablestatus_<version>`` and pointing ``latestversion`` at it, and carbon-ds does not rewrite the
        schema. (A table holding only version files, none named, takes commits: meta.status.status_edit.) With
        ``data`` (the change writes data files: load, UPDATE, compaction, ADD SEGMENT) also refuse tables
        with a feature carbon-ds cannot keep (meta.schema.guards: indexes, MV, buckets, global sort, spatial index,
        global or direct-dictionary timestamp columns)."""
        version, named_by = self.named_status_version
        if version:
            fix = ("open the table without status_version to change it" if named_by == status_versions.FROM_OPTION
                   else "make the change with CarbonData, or remove the latestversion property from the schema "
                   "(the newest tablestatus_<version> is then the live one) before writing with carbon-ds")
            raise CarbonTableError(
                f"{operation} refused on {self.uri}: its segment list is Metadata/tablestatus_{version}, named by "
                f"the {named_by}; carbon-ds commits a new version only to tables whose newest version file is the "
                f"live one; {fix}"
            )
        blockers = guards.write_blockers(self.info) if data else []
        if blockers:
            raise CarbonTableError(
                f"{operation} refused on {self.uri}: " + "; ".join(blockers)
                + ". Make this change with Apache CarbonData, or drop the feature there first"
            )

    @property
    def uri(self) -> str:
        """The table's location as users spell it (a local path, or ``scheme://...``)."""
        return self.storage.uri(self.path)

    def lock(self, **kwargs) -> TableLock:
        """The tablestatus lock (``with table.lock(): ...`` around a read-modify-write of tablestatus)."""
        self.check_writable("a change of the segment list")
        return TableLock(self.storage, self.path, **kwargs)

    def edit_status(self, operation: str, **lock_options) -> StatusEdit:
        """``with table.edit_status("DELETE SEGMENT") as edit:`` change ``edit.entries``; committed on leaving
        the block (see meta.status.status_edit). ``lock_options``: the table lock's (timeout, ...)."""
        return StatusEdit(self.storage, self.path, self.live_status, self.lock(operation=operation, **lock_options))

    def update_lock(self, operation: str, timeout: float = 0.0, pid_bound: bool = True,
                    pid: int | None = None) -> TableLock:
        """The held update lock (UPDATE, DELETE and overwrites never run at once); see meta.locks.update_lock.
        ``pid_bound=False`` for a lock another process releases (it then waits for its lease to expire, or
        for the death of ``pid``, the process that outlives the write: Spark's driver)."""
        self.check_writable(operation)
        return update_lock(self.storage, self.path, operation, timeout, pid_bound, pid)

    # ------------------------------------------------------------------ construction
    @staticmethod
    def exists(path: str | os.PathLike) -> bool:
        """Whether ``path`` holds a CarbonData table (its ``Metadata/schema`` exists)."""
        storage, fs_path = Storage.for_path(path)
        return storage.exists(TableHandle.schema_path_of(fs_path))

    @classmethod
    def open(cls, path: str | os.PathLike, *, storage_options: dict[str, Any] | None = None,
             filesystem: pafs.FileSystem | None = None, status_version: str | int | None = None):
        """Open the table at ``path`` (a local path or a URI pyarrow.fs understands); ``storage_options`` or
        ``filesystem`` configure its store (see :func:`carbon_ds.fs.resolve`). ``status_version`` reads the
        segment list ``Metadata/tablestatus_<status_version>`` of a table with CarbonData's versioned table
        status (by default: the version the schema names, else the plain file, else the newest version).

        Raises:
            CarbonTableError: ``path`` holds no ``Metadata/schema``.
        """
        storage, fs_path = Storage.for_path(resolve(path, storage_options, filesystem))
        schema_path = cls.schema_path_of(fs_path)
        if not storage.exists(schema_path):
            text, bare = not_a_table(storage, fs_path)
            raise CarbonTableError(text + ("; reads take such a folder as it is (read_table, scan, "
                                           "spark.read.format('carbondata').load)" if bare else ""))
        version = None if status_version is None else str(status_version)
        return cls(storage, fs_path, schema_file.read(storage, schema_path), version)

    @classmethod
    def create(
        cls,
        path: str | os.PathLike,
        schema: pa.Schema,
        partition_by: list[str] | None = None,
        sort_columns: list[str] | None = None,
        properties: dict[str, str] | None = None,
        long_string_columns: list[str] | None = None,
        partition: PartitionSpec | None = None,
        *,
        storage_options: dict[str, Any] | None = None,
        filesystem: pafs.FileSystem | None = None,
    ):
        """Create an empty table at ``path``.

        Args:
            schema: the table's columns (Arrow types; see docs/supported.md).
            partition_by: Hive-style partition columns, in folder order.
            sort_columns: columns each load sorts its rows by (they lead the dimensions).
            properties: table properties (TBLPROPERTIES), kept in the schema file.
            long_string_columns: string columns stored as VARCHAR (values over 32,000 bytes).
            partition: CarbonData's HASH / RANGE / LIST partitioning (``HashPartition(col, n)``,
                ``RangePartition(col, bounds)``, ``ListPartition(col, values)``).
            storage_options, filesystem: the store's settings (see :func:`carbon_ds.fs.resolve`).

        Raises:
            CarbonTableError: a table already exists at ``path``, or the folder holds something else (see
                meta.files.new_table_folder: it must be absent or empty).
        """
        path = resolve(path, storage_options, filesystem)
        table, created = cls.open_or_create(path, schema, partition_by=partition_by, sort_columns=sort_columns,
                                            properties=properties, long_string_columns=long_string_columns,
                                            partition=partition)
        if not created:
            raise CarbonTableError(f"table already exists: {table.storage.uri(table.schema_path)}")
        return table

    @classmethod
    def open_or_create(
        cls,
        path: str | os.PathLike,
        schema: pa.Schema,
        *,
        partition_by: list[str] | None = None,
        sort_columns: list[str] | None = None,
        properties: dict[str, str] | None = None,
        long_string_columns: list[str] | None = None,
        partition: PartitionSpec | None = None,
    ) -> tuple:
        """(table, created): the table at ``path``, created from ``schema`` (and the settings) when absent.

        Raises:
            CarbonTableError: ``path`` holds no table but is not empty (another dataset, or a table without
                its schema: see meta.files.new_table_folder); nothing is written there.
        """
        storage, fs_path = Storage.for_path(path)
        _check_folder(storage, fs_path)
        schema_path = cls.schema_path_of(fs_path)
        if storage.exists(schema_path):
            return cls(storage, fs_path, schema_file.read(storage, schema_path)), False
        check_new_table_folder(storage, fs_path)  # before any lock file: a foreign folder gets nothing
        check_names(properties or {}, f"table {storage.uri(fs_path)}")
        if partition_by:
            partition_by = check_partition_columns(schema, list(partition_by))
        info = schema_file.build_table_info(schema, sort_columns, long_string_columns, properties)
        if partition_by:
            # CarbonData's standard (Hive) partition table: the columns stay table columns too.
            by_name = {c.column_name.lower(): c for c in info.fact_table.table_columns}
            info.fact_table.partitionInfo = PartitionInfo(
                partition_columns=[by_name[c.lower()] for c in partition_by],
                partition_type=PartitionType.NATIVE_HIVE,
            )
        if partition is not None:
            if partition_by:
                raise CarbonOptionError("partition_by (Hive-style) and partition (HASH/RANGE/LIST) both given; "
                                        "a table has one kind of partitioning")
            layout = layout_for_spec(partition, schema, properties or {})
            by_name = {c.column_name.lower(): c for c in info.fact_table.table_columns}
            layout.column_schema = by_name[layout.column.lower()]
            info.fact_table.partitionInfo = layout.to_info()
        # The lock makes creation race-free: of two first writers, one creates, the other opens.
        with TableLock(storage, fs_path):
            if storage.exists(schema_path):
                return cls(storage, fs_path, schema_file.read(storage, schema_path)), False
            check_new_table_folder(storage, fs_path)
            storage.mkdirs(Storage.join(fs_path, "Metadata"))
            schema_file.write(storage, schema_path, info)
        return cls(storage, fs_path, info), True

    # ------------------------------------------------------------------ schema
    @property
    def schema(self) -> pa.Schema:
        """The table's columns as an Arrow schema, in table order."""
        return schema_file.table_arrow_schema(self.info)

    @property
    def columns(self) -> list[ColumnSchema]:
        return schema_file.table_columns(self.info)

    @property
    def properties(self) -> dict[str, str]:
        """Table properties (TBLPROPERTIES) as stored in the schema file."""
        return schema_file.properties(self.info)

    @property
    def sort_columns(self) -> list[str]:
        return schema_file.sort_columns(self.info)

    @property
    def partition_columns(self) -> list[str]:
        """Hive-style (NATIVE_HIVE) partition columns in folder order, table spelling; [] when unpartitioned."""
        pinfo = self.info.fact_table.partitionInfo
        if pinfo is None or pinfo.partition_type != PartitionType.NATIVE_HIVE:
            return []
        by_lower = {n.lower(): n for n in self.schema.names}
        return [by_lower.get(c.column_name.lower(), c.column_name) for c in pinfo.partition_columns or []]

    @property
    def partitioning(self) -> Partitioning | None:
        """Hive-style folders, HASH / RANGE / LIST ids (CarbonData 1.3-1.5), or None."""
        return partitioning_of(self.partition_columns, self.id_layout)

    @property
    def id_layout(self) -> Layout | None:
        """The HASH / RANGE / LIST layout, None for other tables."""
        return layout_from_info(self.info.fact_table.partitionInfo, self.schema, self.properties)

    @property
    def table_id(self) -> str:
        return self.info.fact_table.table_id

    # ------------------------------------------------------------------ segments
    def load_details(self) -> list[LoadDetail]:
        """Every entry of the live segment list, as stored (read afresh on each call; the entries are shared
        with this process's other readers and cannot be changed: see ``edit_status``).

        Raises:
            CarbonTableError: the version the schema or the read option names has no file.
        """
        named, named_by = self.named_status_version
        if named:
            live = status_versions.LiveStatus(status_versions.status_path(self.path, named), named, named_by)
            entries, found = status_doc.read_versioned(self.storage, live.path)
            if found is None:
                raise status_versions.missing_version(self.storage, self.path, live)
            return entries
        # the plain file first: a table of plain status pays no listing
        entries, found = status_doc.read_versioned(self.storage, status_versions.status_path(self.path))
        if found is not None:
            return entries
        newest = status_versions.newest(self.storage, self.path)
        if not newest:
            return []
        return status_doc.read_versioned(self.storage, status_versions.status_path(self.path, newest))[0]

    def segments(self) -> list[SegmentInfo]:
        """Every segment of the table (any status), oldest first."""
        return [
            SegmentInfo(
                id=d.name,
                status=d.status,
                load_start=d.load_start_ms,
                load_end=d.load_end_ms,
                data_size=int_or_none(d.data_size),
                index_size=int_or_none(d.index_size),
                file_format=(d.file_format or COLUMNAR).lower(),
                path=d.path,
                segment_file=d.segment_file,
                readable=d.readable,
            )
            for d in self.load_details()
        ]

    def selected(self, segment_ids: str | list | None, details: list[LoadDetail] | None = None) -> list[LoadDetail]:
        """The readable segments, or the chosen ones (``"0,2"``; an unreadable or unknown id is an error)."""
        details = self.load_details() if details is None else details
        readable = [d for d in details if d.readable or is_stream(d)]
        wanted = parse_segment_ids(segment_ids)
        if wanted is None:
            return readable
        by_id = {d.name: d for d in readable}
        missing = [s for s in wanted if s not in by_id]
        if missing:
            raise CarbonOptionError(
                f"segments {', '.join(missing)} are not readable segments of {self.uri}; "
                f"readable segments: {', '.join(by_id) or 'none'}"
            )
        return [by_id[s] for s in dict.fromkeys(wanted)]

    def files(self, segments: str | list | None = None, details: list[LoadDetail] | None = None) -> list[DataFile]:
        """Data files of the readable (or the chosen) segments, in segment order, of ``details`` (one
        tablestatus version read by the caller) or of the tablestatus read now."""
        details = self.load_details() if details is None else details
        out: list[DataFile] = []
        updated = deltas.committed_status_name(details) is not None  # Java checks names only then
        seen: set[str] = set()
        listed: list[DataFile] = []
        for detail in map(validity.as_read, self.selected(segments, details)):
            if detail.name in seen:
                continue
            seen.add(detail.name)
            files = segment_files(self, detail, DataFile)
            listed += files
            if updated:
                validity.check_update_range(detail, self.tablestatus_path)
                files = [f for f in files if not validity.stale_by_name(self.path, detail, f.path)]
            out.extend(files)
        _check_listed_once(out)
        deletes = self.deletes(details)
        if deletes is not None:  # a block whose every row is deleted is marked, not rewritten: skip it
            by_name = {d.name: d for d in details}
            deletes.check_blocks(listed, seen, {d.name: self.storage.uri(Storage.join(
                self.path, "Metadata", "segments", d.segment_file)) for d in details if d.segment_file},
                lambda segment: dropped_folders(self, by_name[segment]))
            out = [f for f in out if not deletes.is_marked(f.path, f.segment_id)]
        return out

    def deletes(self, entries: list[LoadDetail] | None = None) -> deltas.Deletes | None:
        """Committed delete deltas, or None when nothing was deleted."""
        return deltas.for_table(self.storage, self.path, entries if entries is not None else self.load_details())

    def external_segments(self) -> list[LoadDetail]:
        """Readable segments in another format than carbondata (added Parquet, ORC, CSV, JSON folders)."""
        return [d for d in self.load_details() if d.readable and not is_columnar(d.file_format)]

    def require_all_carbondata(self, operation: str) -> None:
        """Refuse ``operation`` (UPDATE, DELETE, MERGE) on a table holding segments whose rows cannot carry
        delete deltas: streaming segments, and external segments in a format other than Parquet, ORC, CSV
        and JSON (those get deltas keyed by file in the table's Metadata; their files are never written).

        Raises:
            CarbonTableError: naming the segments and what to do.
        """
        stream = [d.name for d in self.load_details() if is_stream(d)]
        if stream:
            raise CarbonTableError(
                f"{operation} is not allowed on table {self.uri}: segments {', '.join(stream)} are streaming "
                "segments (row format), which CarbonData does not update either; finish and hand them off in "
                "CarbonData (ALTER TABLE ... FINISH STREAMING, ALTER TABLE ... COMPACT 'STREAMING') first"
            )
        foreign = [d for d in self.external_segments()
                   if (d.file_format or "").lower() not in ("parquet", "orc", "csv", "json")]
        if foreign:
            listed = ", ".join(f"{d.name} ({(d.file_format or '').lower()}, {d.path})" for d in foreign)
            raise CarbonTableError(
                f"{operation} is not allowed on table {self.uri}: segments {listed} are in a format whose rows "
                "carry no delete deltas (Parquet, ORC, CSV and JSON segments do); delete those segments "
                "(DELETE FROM TABLE ... WHERE SEGMENT.ID IN (...)) or add the data in another format first"
            )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.uri!r})"


def _check_listed_once(files: list[DataFile]) -> None:
    """A data file belongs to one segment: listed twice (two tablestatus entries sharing a segment file or
    folder, a segment file naming a folder twice) its rows would be read twice."""
    owner: dict[str, str] = {}
    for f in files:
        key = norm_path(f.path)
        if key in owner:
            raise CarbonTableError(f"data file {f.path} is listed by segment {owner[key]} and by segment "
                                   f"{f.segment_id}: the tablestatus and segment files disagree (a file belongs "
                                   "to one segment), so its rows would be read twice")
        owner[key] = f.segment_id


def _check_folder(storage: Storage, fs_path: str) -> None:
    """A table is a folder: say so when ``fs_path`` (or a folder above it) is a regular file, rather than let
    the OS answer "not a directory" halfway through creating it. Local disks only: object stores have no
    such clash, and walking up would cost a request per level."""
    if not storage.is_local:
        return
    folder = fs_path
    while folder and folder != dirname(folder):
        try:
            info = storage.fs.get_file_info(folder)
        except NotADirectoryError:
            info = None
        if info is not None and info.type == pafs.FileType.File:
            what = "is" if folder == fs_path else f"lies below {storage.uri(folder)}, which is"
            raise CarbonTableError(f"a table must be a folder: {storage.uri(fs_path)} {what} a regular file")
        if info is not None and info.type == pafs.FileType.Directory:
            return
        folder = dirname(folder)
