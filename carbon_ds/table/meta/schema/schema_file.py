"""``Metadata/schema``: the table's TableInfo in compact thrift, as Apache CarbonData writes it.

A new table gets a uuid table id, a uuid per column (column_id == columnReferenceId), one schema
evolution entry stamped with the creation time, and its settings as ``tableProperties`` (lower-case keys
and values such as ``sort_columns``, ``table_blocksize``, ``local_dictionary_enable``).
"""

from __future__ import annotations

import time
import uuid

import pyarrow as pa

from carbon_ds.errors import CarbonFormatError, CarbonSchemaError
from carbon_ds.format.arrow_types import arrow_schema, columns_for
from carbon_ds.format.thrift.parse_cache import BytesCache
from carbon_ds.format.thrift.structs import (
    ColumnSchema,
    DataType,
    SchemaEvolution,
    SchemaEvolutionEntry,
    TableInfo,
    TableSchema,
)
from carbon_ds.fs import Storage

# MAX_COLUMNS columns of a few hundred bytes each, with room for a long schema evolution history
MAX_SCHEMA_BYTES = 64 << 20


def build_table_info(
    schema: pa.Schema,
    sort_columns: list[str] | None = None,
    long_string_columns: list[str] | None = None,
    properties: dict[str, str] | None = None,
) -> TableInfo:
    sort_columns = list(sort_columns or [])
    long_strings = list(long_string_columns or [])
    columns = columns_for(schema, sort_columns, long_strings)
    props = {k.lower(): str(v) for k, v in (properties or {}).items()}
    # CarbonData stores sort columns by their schema spelling, lower-cased, comma separated.
    by_lower = {f.name.lower(): f.name for f in schema}
    props["sort_columns"] = ",".join(by_lower[c.lower()].lower() for c in sort_columns)
    props.setdefault("sort_scope", "local_sort" if sort_columns else "no_sort")
    if long_strings:
        props["long_string_columns"] = ",".join(c.lower() for c in long_strings)
    fact = TableSchema(
        table_id=str(uuid.uuid4()),
        table_columns=columns,
        schema_evolution=SchemaEvolution(
            schema_evolution_history=[SchemaEvolutionEntry(time_stamp=time.time_ns() // 1_000_000)]
        ),
        tableProperties=props,
    )
    return TableInfo(fact_table=fact, aggregate_table_list=[])


# Parsed schema files by their bytes, pickled: a query opening the same table again skips the thrift parse
# (pure Python, ~0.3 ms for 16 columns) and still gets its own TableInfo, which callers may change.
# 64 of them; larger schema files are parsed every time.
_PARSED_ENTRIES = 64
_PARSED_MAX_BYTES = 1 << 20
_PARSED = BytesCache(budget_bytes=_PARSED_ENTRIES * _PARSED_MAX_BYTES, max_item_bytes=_PARSED_MAX_BYTES,
                     max_entries=_PARSED_ENTRIES, copies=True)


def parse(data: bytes, where: str) -> TableInfo:
    """The TableInfo in ``data`` (a new object on every call)."""
    return _PARSED.get_or_parse(data, lambda: _parse(data, where))


def _parse(data: bytes, where: str) -> TableInfo:
    info, used = TableInfo.from_bytes(data, path=where)
    if used != len(data):
        raise CarbonFormatError(f"schema file has {len(data) - used} trailing bytes after TableInfo", where)
    if info.fact_table is None or not info.fact_table.table_columns:
        raise CarbonFormatError("schema file has no fact table columns", where)
    ids: dict[str, str] = {}
    for c in info.fact_table.table_columns:
        if c.data_type not in DataType._value2member_map_:
            raise CarbonFormatError(f"column {c.column_name!r} has data type {c.data_type}, expected one of "
                                    f"{', '.join(f'{t.value} ({t.name})' for t in DataType)}", where)
        if c.data_type == DataType.DECIMAL and not (0 <= (c.precision or 0) <= 38 and 0 <= (c.scale or 0)
                                                    and (c.scale or 0) <= max(c.precision or 38, 1)):
            raise CarbonFormatError(f"column {c.column_name!r} is DECIMAL({c.precision}, {c.scale}): expected a "
                                    "precision of 1 to 38 and a scale of 0 to the precision", where)
        # data files name their columns by id: two columns of one id would read the same stored values
        if c.column_id in ids and not c.invisible:
            raise CarbonFormatError(f"columns {ids[c.column_id]!r} and {c.column_name!r} share the column id "
                                    f"{c.column_id!r}", where)
        if not c.invisible:
            ids[c.column_id] = c.column_name
    try:
        table_arrow_schema(info)
    except (CarbonSchemaError, ValueError, KeyError, IndexError) as e:
        raise CarbonFormatError(f"schema file's columns are unusable: {e}", where) from None
    return info


def read(storage: Storage, path: str) -> TableInfo:
    with storage.open(path) as f:
        size = f.size()
        if size > MAX_SCHEMA_BYTES:  # refused before reading: a hostile file must not cost its size in memory
            raise CarbonFormatError(f"schema file of {size} bytes exceeds the limit of {MAX_SCHEMA_BYTES} bytes",
                                    storage.uri(path))
        data = f.read()
    return parse(data, storage.uri(path))


def write(storage: Storage, path: str, info: TableInfo) -> None:
    storage.write_atomic(path, info.to_bytes())


def table_columns(info: TableInfo) -> list[ColumnSchema]:
    """Visible physical columns (CarbonData can hide helper columns with ``invisible``)."""
    return [c for c in info.fact_table.table_columns if not c.invisible]


def table_arrow_schema(info: TableInfo) -> pa.Schema:
    return arrow_schema(table_columns(info))


def properties(info: TableInfo) -> dict[str, str]:
    return dict(info.fact_table.tableProperties or {})


def sort_columns(info: TableInfo) -> list[str]:
    text = properties(info).get("sort_columns", "")
    return [c.strip() for c in text.split(",") if c.strip()]


def long_string_columns(info: TableInfo) -> list[str]:
    text = properties(info).get("long_string_columns", "")
    return [c.strip() for c in text.split(",") if c.strip()]
