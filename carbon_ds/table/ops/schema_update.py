"""Schema evolution of a table: staged column changes committed as one ``SchemaEvolutionEntry``.

``table.update_schema()`` returns an ``UpdateSchema``; its ``add_column``, ``drop_column``,
``rename_column`` and ``widen_column`` only stage, ``commit()`` (or leaving a ``with`` block without an
error) writes the new schema file once. Data files are never rewritten: reads map them by column id.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from carbon_ds.ddl.types import arrow_type
from carbon_ds.errors import CarbonOptionError, CarbonSchemaError
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.schema import evolution
from carbon_ds.table.meta.schema.properties import (
    BLOCK_SIZE,
    BLOCKLET_SIZE,
    COMPRESSOR,
    LOCAL_DICTIONARY_ENABLE,
    LOCAL_DICTIONARY_THRESHOLD,
)

# Properties a loaded table may change: each only affects files written from now on.
CHANGEABLE = {
    BLOCK_SIZE, BLOCKLET_SIZE, COMPRESSOR, LOCAL_DICTIONARY_ENABLE, LOCAL_DICTIONARY_THRESHOLD,
    "comment", "table_page_size_inmb", "cache_level", "column_meta_cache", "major_compaction_size",
    "auto_load_merge", "compaction_level_threshold", "compaction_preserve_segments", "minor_compaction_size",
    "allowed_compaction_days", "sort_scope", "global_sort_partitions",
}
_WHY_FIXED = {
    "sort_columns": "every segment is already sorted by the current sort columns",
    "long_string_columns": "string columns are stored as STRING or VARCHAR in the files already written",
    "partition_by": "partition values live in the folder names of the data already written",
    "_external": "it records whether DROP TABLE deletes the data and is set by CREATE EXTERNAL TABLE",
}


def as_type(t: pa.DataType | str, column: str) -> pa.DataType:
    return arrow_type(t, column) if isinstance(t, str) else t


class UpdateSchema:
    """Staged column changes of one table, committed together (``with table.update_schema() as u:``)."""

    def __init__(self, table: TableHandle):
        self._table = table
        self._changes: list[evolution.Change] = []
        self._committed = False

    def add_column(self, name: str, type: pa.DataType | str, default: Any = None) -> UpdateSchema:
        """A new column (Arrow type or SQL type name); rows written before read ``default`` (or null)."""
        t = as_type(type, name)
        self._changes.append(evolution.Change("add", name, type=t,
                                              default=evolution.default_text(default, t, name)))
        return self

    def drop_column(self, name: str) -> UpdateSchema:
        """Remove a column (not a partition or sort column); its data is never read again."""
        self._changes.append(evolution.Change("drop", name))
        return self

    def rename_column(self, name: str, new_name: str) -> UpdateSchema:
        """Rename a column; its data (old files included) stays with it."""
        self._changes.append(evolution.Change("rename", name, new_name=new_name))
        return self

    def widen_column(self, name: str, type: pa.DataType | str) -> UpdateSchema:
        """INT to BIGINT, or a decimal with more precision; old values are cast when read."""
        self._changes.append(evolution.Change("widen", name, type=as_type(type, name)))
        return self

    def commit(self) -> None:
        """Write the staged changes as one new schema (atomic); nothing staged: nothing written."""
        if self._committed:
            raise CarbonOptionError("this schema update was already committed; call update_schema() again")
        self._committed = True
        if not self._changes:
            return
        t = self._table
        t.info = evolution.commit(t.storage, t.path, t.schema_path, t.info, self._changes, t.partition_columns,
                                  t.uri)

    def __enter__(self) -> UpdateSchema:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None and not self._committed:
            self.commit()


def update_schema(table: TableHandle) -> UpdateSchema:
    return UpdateSchema(table)


def set_properties(table: TableHandle, properties: dict[str, str]) -> None:
    """ALTER TABLE SET TBLPROPERTIES for the properties that may change after creation."""
    _change_properties(table, {k.lower(): str(v) for k, v in properties.items()}, [])


def unset_properties(table: TableHandle, names: list[str]) -> None:
    """ALTER TABLE UNSET TBLPROPERTIES: the properties return to their defaults."""
    _change_properties(table, {}, [n.lower() for n in names])


def _change_properties(table: TableHandle, set_: dict[str, str], unset: list[str]) -> None:
    for key in [*set_, *unset]:
        if key.startswith("default.value."):
            raise CarbonOptionError(f"table property {key!r}: a default value is given with ADD COLUMNS, not "
                                    "SET TBLPROPERTIES")
        if key in _WHY_FIXED:
            raise CarbonOptionError(f"table property {key!r} of table {table.uri} cannot be changed: "
                                    f"{_WHY_FIXED[key]}")
        if key not in CHANGEABLE:
            raise CarbonOptionError(f"table property {key!r} of table {table.uri} cannot be changed after "
                                    f"creation; changeable: {', '.join(sorted(CHANGEABLE))}")
    if set_.get("sort_scope", "").strip().lower() not in ("", "no_sort", "local_sort") or (
            set_.get("sort_scope", "").strip().lower() == "local_sort" and not table.sort_columns):
        raise CarbonSchemaError(f"sort_scope={set_['sort_scope']!r}: supported are no_sort and local_sort "
                                "(local_sort needs sort columns)")
    table.info = evolution.commit_properties(table.storage, table.path, table.schema_path, set_, unset)


def merge_columns(table: TableHandle, schema: pa.Schema, batches, partition: dict | None = None):
    """``schema_mode="merge"``: add the data's new columns to the table (one schema change) and give the
    data a null column for each table column it lacks. Returns the new (schema, batches)."""
    have = {n.lower() for n in table.schema.names}
    new = [f for f in schema if f.name.lower() not in have]
    if new:
        with UpdateSchema(table) as u:
            for f in new:
                u.add_column(f.name, f.type)
    given = {n.lower() for n in schema.names} | {k.lower() for k in (partition or {})}
    missing = [f for f in table.schema if f.name.lower() not in given]
    if not missing:
        return schema, batches
    out_schema = pa.schema([*schema, *missing])

    def filled():
        for b in batches:
            t = pa.Table.from_batches([b]) if isinstance(b, pa.RecordBatch) else b
            for f in missing:
                t = t.append_column(f, pa.nulls(t.num_rows, f.type))
            yield t

    return out_schema, filled()
