"""CarbonTable: a table folder with ``Metadata/schema``, ``Metadata/tablestatus`` and its segments."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pyarrow as pa

from carbon_ds.errors import CarbonOptionError, CarbonSchemaError, CarbonTableError
from carbon_ds.format.structs import ColumnSchema, TableInfo
from carbon_ds.fs import Storage
from carbon_ds.table import schema_file, tablestatus
from carbon_ds.table.locks import TableLock
from carbon_ds.table.tablestatus import LoadDetail

COLUMNAR = "columnar_v3"


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


@dataclass(frozen=True)
class DataFile:
    """A file the planner hands to a reader."""

    path: str  # the file system's own path (see carbon_ds.fs)
    size: int
    segment_id: str
    file_format: str = COLUMNAR
    # how to read a non-carbondata file (format, partition values, options): readers.external.ExternalRef
    external: object | None = None


def parse_segment_ids(segments_arg: str | list | tuple | None) -> list[str] | None:
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
    by_lower = {n.lower(): n for n in schema.names}
    missing = [c for c in columns if c.lower() not in by_lower]
    if missing:
        raise CarbonSchemaError(
            f"column(s) {', '.join(repr(c) for c in missing)} not in {where}; "
            f"table columns are: {', '.join(schema.names)}"
        )
    return [by_lower[c.lower()] for c in columns]


def _int(text: str | None) -> int | None:
    return int(text) if text and text.lstrip("-").isdigit() else None


class CarbonTable:
    def __init__(self, storage: Storage, path: str, info: TableInfo):
        self.storage = storage
        self.path = path
        self.info = info

    # ------------------------------------------------------------------ paths
    @staticmethod
    def schema_path_of(path: str) -> str:
        return Storage.join(path, "Metadata", "schema")

    @property
    def schema_path(self) -> str:
        return self.schema_path_of(self.path)

    @property
    def tablestatus_path(self) -> str:
        return Storage.join(self.path, "Metadata", "tablestatus")

    @property
    def uri(self) -> str:
        return self.storage.uri(self.path)

    def lock(self, **kwargs) -> TableLock:
        return TableLock(self.storage, self.path, **kwargs)

    # ------------------------------------------------------------------ construction
    @staticmethod
    def exists(path: str | os.PathLike) -> bool:
        storage, fs_path = Storage.for_path(path)
        return storage.exists(CarbonTable.schema_path_of(fs_path))

    @classmethod
    def open(cls, path: str | os.PathLike) -> CarbonTable:
        storage, fs_path = Storage.for_path(path)
        schema_path = cls.schema_path_of(fs_path)
        if not storage.exists(schema_path):
            raise CarbonTableError(
                f"not a CarbonData table: {storage.uri(schema_path)} does not exist "
                "(use carbon_ds.read_table for a bare folder of .carbondata files)"
            )
        return cls(storage, fs_path, schema_file.read(storage, schema_path))

    @classmethod
    def create(
        cls,
        path: str | os.PathLike,
        schema: pa.Schema,
        partition_by: list[str] | None = None,
        sort_columns: list[str] | None = None,
        properties: dict[str, str] | None = None,
        long_string_columns: list[str] | None = None,
    ) -> CarbonTable:
        """Create an empty table; fails if one already exists at ``path``."""
        table, created = cls._open_or_create(path, schema, partition_by, sort_columns, properties, long_string_columns)
        if not created:
            raise CarbonTableError(f"table already exists: {table.storage.uri(table.schema_path)}")
        return table

    @classmethod
    def open_or_create(
        cls,
        path: str | os.PathLike,
        schema: pa.Schema,
        sort_columns: list[str] | None = None,
        properties: dict[str, str] | None = None,
        long_string_columns: list[str] | None = None,
        partition_by: list[str] | None = None,
    ) -> tuple[CarbonTable, bool]:
        return cls._open_or_create(path, schema, partition_by, sort_columns, properties, long_string_columns)

    @classmethod
    def _open_or_create(cls, path, schema, partition_by, sort_columns, properties, long_string_columns):
        storage, fs_path = Storage.for_path(path)
        if partition_by and not storage.exists(cls.schema_path_of(fs_path)):
            from carbon_ds.table.partitions import check_partition_columns

            partition_by = check_partition_columns(schema, list(partition_by))
        schema_path = cls.schema_path_of(fs_path)
        if storage.exists(schema_path):
            return cls(storage, fs_path, schema_file.read(storage, schema_path)), False
        info = schema_file.build_table_info(schema, sort_columns, long_string_columns, properties)
        if partition_by:
            from carbon_ds.format.structs import PartitionInfo, PartitionType

            # CarbonData's standard (Hive) partition table: the columns stay table columns too.
            by_name = {c.column_name.lower(): c for c in info.fact_table.table_columns}
            info.fact_table.partitionInfo = PartitionInfo(
                partition_columns=[by_name[c.lower()] for c in partition_by],
                partition_type=PartitionType.NATIVE_HIVE,
            )
        # The lock makes creation race-free: of two first writers, one creates, the other opens.
        with TableLock(storage, fs_path):
            if storage.exists(schema_path):
                return cls(storage, fs_path, schema_file.read(storage, schema_path)), False
            storage.mkdirs(Storage.join(fs_path, "Metadata"))
            schema_file.write(storage, schema_path, info)
        return cls(storage, fs_path, info), True

    # ------------------------------------------------------------------ schema
    @property
    def schema(self) -> pa.Schema:
        return schema_file.table_arrow_schema(self.info)

    @property
    def columns(self) -> list[ColumnSchema]:
        return schema_file.table_columns(self.info)

    @property
    def properties(self) -> dict[str, str]:
        return schema_file.properties(self.info)

    @property
    def sort_columns(self) -> list[str]:
        return schema_file.sort_columns(self.info)

    @property
    def partition_columns(self) -> list[str]:
        """Hive-style (NATIVE_HIVE) partition columns in folder order, table spelling; [] when unpartitioned."""
        from carbon_ds.format.structs import PartitionType

        pinfo = self.info.fact_table.partitionInfo
        if pinfo is None or pinfo.partition_type != PartitionType.NATIVE_HIVE:
            return []
        by_lower = {n.lower(): n for n in self.schema.names}
        return [by_lower.get(c.column_name.lower(), c.column_name) for c in pinfo.partition_columns or []]

    @property
    def table_id(self) -> str:
        return self.info.fact_table.table_id

    # ------------------------------------------------------------------ segments
    def load_details(self) -> list[LoadDetail]:
        return tablestatus.read(self.storage, self.tablestatus_path)

    def segments(self) -> list[SegmentInfo]:
        return [
            SegmentInfo(
                id=d.name,
                status=d.status,
                load_start=d.load_start_ms,
                load_end=d.load_end_ms,
                data_size=_int(d.data_size),
                index_size=_int(d.index_size),
                file_format=(d.file_format or COLUMNAR).lower(),
                path=d.path,
                segment_file=d.segment_file,
                readable=d.readable,
            )
            for d in self.load_details()
        ]

    def segment_rows(self, limit: int | None = None) -> list[dict[str, str]]:
        """SHOW SEGMENTS rows (newest first), values as strings; see carbon_ds.table.manage."""
        from carbon_ds.table import manage

        return manage.segment_rows(self, limit)

    def show_segments(self, limit: int | None = None) -> str:
        """SHOW SEGMENTS as a text table, newest first (rows: ``segment_rows()``)."""
        from carbon_ds.table import manage

        return manage.show_segments(self, limit)

    def delete_segments(self, ids) -> list[str]:
        """Mark segments "Marked for Delete" (all or nothing); CLEAN FILES removes their files later."""
        from carbon_ds.table import manage

        return manage.delete_segments(self, ids)

    def delete_segments_before(self, when) -> list[str]:
        """Mark segments whose load started before ``when`` ('yyyy-MM-dd HH:mm:ss', local time)."""
        from carbon_ds.table import manage

        return manage.delete_segments_before(self, when)

    def clean_files(self, force: bool = False, retention_days: float | None = None):
        """Move files of deleted/compacted segments to ``.Trash`` and expire old trash; see manage.clean_files."""
        from carbon_ds.table import manage

        return manage.clean_files(self, force=force, retention=retention_days)

    def add_segment(self, path: str, format: str | None = "carbondata", partition: str | None = None,
                    options: dict[str, str] | None = None, dry_run: bool = False):
        """Register an existing carbondata/Parquet/ORC/CSV/JSON folder as segment(s) without converting it;
        returns the new ids, or with ``dry_run`` the validation report. See carbon_ds.table.add_segment."""
        from carbon_ds.table import add_segment

        return add_segment.add_segment(self, path, format, partition, options, dry_run)

    def require_all_carbondata(self, operation: str) -> None:
        """Raise CarbonTableError when the table holds non-carbondata segments (UPDATE/DELETE refuse them)."""
        from carbon_ds.table import add_segment

        add_segment.require_all_carbondata(self, operation)

    def delete(self, where=None, **kwargs) -> int:
        """Delete the rows where ``where`` is TRUE through delete deltas; returns rows deleted (see dml)."""
        from carbon_ds.table import dml

        return dml.delete(self, where, **kwargs)

    def update(self, assignments: dict, where=None, **kwargs) -> int:
        """Set columns of the rows where ``where`` is TRUE; returns rows updated (see carbon_ds.table.dml)."""
        from carbon_ds.table import dml

        return dml.update(self, assignments, where, **kwargs)

    def _selected(self, segment_ids: str | list | None) -> list[LoadDetail]:
        details = self.load_details()
        readable = [d for d in details if d.readable]
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

    def files(self, segments: str | list | None = None) -> list[DataFile]:
        """Data files of the readable (or the chosen) segments, in segment order."""
        from carbon_ds.table.planning import segment_files

        out: list[DataFile] = []
        for detail in self._selected(segments):
            out.extend(segment_files(self, detail))
        deletes = self.deletes()
        if deletes is not None:  # a block whose every row is deleted is marked, not rewritten: skip it
            out = [f for f in out if not deletes.is_marked(f.path, f.segment_id)]
        return out

    def deletes(self, entries: list[LoadDetail] | None = None):
        """Committed delete deltas (carbon_ds.table.deltas.Deletes), or None when nothing was deleted."""
        from carbon_ds.table import deltas

        return deltas.for_table(self.storage, self.path, entries if entries is not None else self.load_details())

    # ------------------------------------------------------------------ reading
    def to_arrow(self, columns: list[str] | None = None, segments: str | list | None = None) -> pa.Table:
        from carbon_ds.table.planning import read_file

        schema = self.schema
        names = resolve_columns(schema, columns, f"table {self.uri}")
        target = pa.schema([schema.field(n) for n in names]) if names is not None else schema
        deletes = self.deletes()
        found = self.files(segments)
        tables = [read_file(self.storage, f, names, target) for f in found]
        if deletes is not None:
            from carbon_ds.table.deltas import drop_deleted

            tables = [drop_deleted(self.storage, deletes, f, t) for f, t in zip(found, tables, strict=True)]
        if not tables:
            return target.empty_table()
        return pa.concat_tables(tables)

    def count(self, filter=None, segments: str | list | None = None) -> int:
        """Rows where ``filter`` (SQL text, expression or tuples) is TRUE; without a filter from the index
        files' row counts alone (see carbon_ds.table.scan.count)."""
        from carbon_ds.table.scan import count

        return count(self.path if self.storage.is_local else self.uri, filter, segments)

    def __repr__(self) -> str:
        return f"CarbonTable({self.uri!r})"
