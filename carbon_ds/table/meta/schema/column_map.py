"""A data file's columns as the table sees them now, after schema evolution.

Columns are matched by column id (CarbonData keeps a column's id through RENAME and type changes): a
renamed column keeps its data, a dropped one is never decoded, one added after the file was written reads
as its default value (or null), a widened one is cast by the caller's ``conform``. A file that shares no
column id with the table (written elsewhere and added with ADD SEGMENT) is matched by name instead.

A ``.carbondata`` file opened with the table's columns (``CarbonDataFile(path, table_columns=...)``, the
view itself in carbon_ds.format.column_view) speaks the table's names; this module holds what the table
layer adds around it: statistics of absent columns and the name matching of external files.
"""

from __future__ import annotations

import pyarrow as pa

from carbon_ds.expressions.might_match import ColumnStats
from carbon_ds.format.arrow_types import ColumnNode, arrow_type, nest
from carbon_ds.format.column_view import default_scalar
from carbon_ds.format.thrift.structs import ColumnSchema


def default_stats(absent: list[ColumnSchema], rows: int | None) -> dict[str, ColumnStats]:
    """Min/max of columns a unit does not hold: all rows are the default, so min = max = default. A null
    default gives no statistic (null counts are unknown in CarbonData's index)."""
    out: dict[str, ColumnStats] = {}
    for c in absent:
        if c.default_value is None:
            continue
        t = arrow_type(ColumnNode(c))
        if not (pa.types.is_integer(t) or pa.types.is_decimal(t) or pa.types.is_string(t)
                or pa.types.is_floating(t)):
            continue  # dates and timestamps carry their own statistic encodings: leave them unknown
        v = default_scalar(c, t).as_py()
        out[c.column_name.lower()] = ColumnStats(v, v, None, rows)
    return out


def table_key(table_columns: list[ColumnSchema] | None) -> tuple:
    """A hashable identity of a table's columns (cache keys of statistics derived through a view)."""
    if table_columns is None:
        return ()
    return tuple((c.column_id, c.column_name, c.data_type, c.default_value) for c in table_columns)


# ------------------------------------------------------------------ external (Parquet, ORC, CSV, JSON) files
FORMER_NAMES = "carbon_ds.former_names"  # columnProperties key: a renamed column's earlier names, oldest first


def external_names(file_names: list[str], table_columns: list[ColumnSchema] | None
                   ) -> tuple[dict[str, str], list[ColumnSchema]]:
    """For a file without column ids: (file column name -> table column name, the table's columns the
    file does not hold). A column is found by its current name, else by a name it had before a rename."""
    if table_columns is None:
        return {}, []
    have = {n.lower(): n for n in file_names}
    renames: dict[str, str] = {}
    absent: list[ColumnSchema] = []
    for node in nest(table_columns):
        c = node.schema
        former = [n for n in ((c.columnProperties or {}).get(FORMER_NAMES, "")).split(",") if n]
        found = next((have[n.lower()] for n in [c.column_name, *reversed(former)] if n.lower() in have), None)
        if found is None:
            absent.append(c)
        elif found != c.column_name:
            renames[found] = c.column_name
    return renames, absent


def fill_defaults(data: pa.Table, absent: list[ColumnSchema], skip: set[str]) -> pa.Table:
    """``data`` with each absent column that has a default holding that default (``skip``: lower names
    filled otherwise, such as partition values)."""
    for c in absent:
        if c.default_value is None or c.column_name.lower() in skip or c.column_name not in data.schema.names:
            continue
        i = data.schema.get_field_index(c.column_name)
        t = data.schema.field(i).type
        data = data.set_column(i, data.schema.field(i), pa.repeat(default_scalar(c, t), data.num_rows))
    return data
