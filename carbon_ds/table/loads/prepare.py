"""Opening (or creating) a table for a load, and checking the load's options and data schema against it."""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa

from carbon_ds.errors import CarbonOptionError
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.options import LoadOptions, parse_write
from carbon_ds.table.meta.schema.conform import check_schema
from carbon_ds.table.meta.schema.properties import TableProperties


def prepare_table(path: str | os.PathLike, schema: pa.Schema, options: dict[str, Any]) -> tuple[TableHandle, LoadOptions]:
    """Open the table at ``path`` (creating it from ``schema`` when absent) and validate a load into it.

    Raises:
        CarbonOptionError: a table setting given differs from the existing table's.
        CarbonSchemaError: the data's columns do not fit the table.
    """
    load = parse_write(options)
    table, created = TableHandle.open_or_create(
        path,
        schema,
        sort_columns=load.sort_columns,
        properties=load.table_properties(),
        long_string_columns=load.long_string_columns,
        partition_by=load.partition_by,
    )
    if not created:
        longs = TableProperties(table.properties, table.uri).long_string_columns
        for key, current in (("sort_columns", table.sort_columns), ("long_string_columns", longs),
                             ("partition_by", table.partition_columns)):
            given = getattr(load, key)
            if given is not None and [c.lower() for c in given] != [c.lower() for c in current]:
                raise CarbonOptionError(
                    f"option {key}={','.join(given)!r} differs from table {table.uri}'s "
                    f"{key}={','.join(current)!r}; table settings are fixed when the table is created"
                )
    if load.partition:
        # A static partition's columns may be absent from the data: they come from the spec.
        given = {c.lower() for c in load.partition}
        schema = pa.schema([f for f in schema if f.name.lower() not in given] +
                           [table.schema.field(c) for c in table.partition_columns if c.lower() in given])
    check_schema(table.schema, schema, f"table {table.uri}")
    return table, load
