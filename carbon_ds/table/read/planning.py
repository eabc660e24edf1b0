"""Reading one planned data file, carbondata or external, in the table's schema."""

from __future__ import annotations

import pyarrow as pa

from carbon_ds.errors import CarbonTableError
from carbon_ds.format.structs import ColumnSchema
from carbon_ds.fs import Storage
from carbon_ds.readers.external import open_reader
from carbon_ds.readers.external.base import ExternalRef, partition_scalar, to_table_schema
from carbon_ds.table.meta.column_map import external_names, fill_defaults, open_file
from carbon_ds.table.meta.conform import conform
from carbon_ds.table.meta.handle import DataFile
from carbon_ds.table.meta.naming import COLUMNAR


def read_external(storage: Storage, path: str, ref: ExternalRef, columns: list[str] | None, target: pa.Schema,
                  units=None, table_columns: list[ColumnSchema] | None = None) -> pa.Table:
    """Rows of one external file (chosen statistics units, None: all) as exactly ``target``. Its columns
    are matched by name; with ``table_columns`` also by a renamed column's earlier names, and a column
    added after the file reads as its default."""
    f = open_reader(storage, path, ref.format, ref.options_dict, target)
    by_lower = {n.lower(): n for n in target.names}
    parts = {k: partition_scalar(v, target.field(by_lower[k.lower()]).type)
             for k, v in ref.partitions if k.lower() in by_lower}
    renames, absent = external_names(f.schema.names, table_columns)
    back = {t.lower(): s for s, t in renames.items()}
    wanted = columns if columns is not None else target.names
    data = f.read([back.get(c.lower(), c) for c in wanted], units)
    if renames:
        data = data.rename_columns([renames.get(n, n) for n in data.schema.names])
    out = to_table_schema(data, target, parts)
    return fill_defaults(out, absent, {k.lower() for k in parts}) if absent else out


def read_file(storage: Storage, data_file: DataFile, columns: list[str] | None, target: pa.Schema,
              table_columns: list[ColumnSchema] | None = None) -> pa.Table:
    """Every row of one data file (``columns`` of it, None: all) as exactly ``target``; with the table's
    ``table_columns`` the file is read through the table's current columns (see meta.column_map)."""
    if data_file.file_format != COLUMNAR:
        if data_file.external is None:
            raise CarbonTableError(
                f"segment {data_file.segment_id} has format {data_file.file_format!r} but no reading details"
            )
        return read_external(storage, data_file.path, data_file.external, columns, target,
                             table_columns=table_columns)
    with open_file(data_file.path, storage, table_columns) as f:
        return conform(f.read(columns=columns if columns is not None else target.names), target, data_file.path)
