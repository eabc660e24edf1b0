"""A data file's columns as the table sees them now, after schema evolution.

Columns are matched by column id (CarbonData keeps a column's id through RENAME and type changes): a
renamed column keeps its data, a dropped one is never decoded, one added after the file was written reads
as its default value (or null), a widened one is cast by the caller's ``conform``. A file that shares no
column id with the table (written elsewhere and added with ADD SEGMENT) is matched by name instead.

``MappedFile`` is a ``CarbonDataFile`` whose ``columns``, ``schema`` and reads speak the table's names, so
every reader of a table file (scans, pruning, DML) gets the mapping by opening the file through ``open_file``.
"""

from __future__ import annotations

import copy

import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonSchemaError
from carbon_ds.expressions.might_match import ColumnStats
from carbon_ds.format.arrow_types import ColumnNode, arrow_type, in_schema_order, nest
from carbon_ds.format.structs import ColumnSchema
from carbon_ds.fs import Storage
from carbon_ds.readers.carbon_file import CarbonDataFile

HIDDEN = "\x00dropped:"  # prefix for file columns the table no longer has: no table name can reach them


def default_scalar(column: ColumnSchema, t: pa.DataType) -> pa.Scalar:
    """The value an added column reads as in files written before it existed (null without a default)."""
    raw = column.default_value
    if raw is None:
        return pa.scalar(None, t)
    text = raw.decode("utf-8") if isinstance(raw, bytes | bytearray) else str(raw)
    try:
        return pc.cast(pa.array([text]), t)[0]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise CarbonSchemaError(
            f"column {column.column_name!r}: default value {text!r} is not a valid {t}: {e}"
        ) from None


def _rename_tree(node: ColumnNode, new: str) -> None:
    """Rename a top-level column and the dotted names of its children (``old.val`` -> ``new.val``)."""
    old = node.name
    node.schema.column_name = new

    def walk(n: ColumnNode) -> None:
        for ch in n.children:
            if ch.schema.column_name.lower().startswith(old.lower() + "."):
                ch.schema.column_name = new + ch.schema.column_name[len(old):]
            walk(ch)

    walk(node)


def view(file_columns: list[ColumnSchema], table_columns: list[ColumnSchema]
         ) -> tuple[list[ColumnSchema], list[ColumnSchema]]:
    """(the file's columns, copied and renamed to the table's names, those the table lacks renamed out of
    reach; the table's top-level columns the file does not hold)."""
    renamed = [copy.copy(c) for c in file_columns]
    file_nodes = nest(renamed)
    table_nodes = nest(table_columns)
    table_ids = {n.schema.column_id: n for n in table_nodes if n.schema.column_id}
    by_id = any(n.schema.column_id in table_ids for n in file_nodes)
    table_names = {n.name.lower(): n for n in table_nodes}
    matched: set[int] = set()
    for node in file_nodes:
        target = table_ids.get(node.schema.column_id) if by_id else table_names.get(node.name.lower())
        if target is None:
            _rename_tree(node, HIDDEN + (node.schema.column_id or node.name))
            continue
        matched.add(id(target))
        if target.name != node.name:
            _rename_tree(node, target.name)
        node.schema.schemaOrdinal = target.schema.schemaOrdinal
    absent = [n.schema for n in table_nodes if id(n) not in matched]
    return renamed, absent


def is_identity(file_columns: list[ColumnSchema], table_columns: list[ColumnSchema]) -> bool:
    """Whether the file holds exactly the table's columns under the same ids and names."""
    f = [(c.column_id, c.column_name) for c in file_columns]
    t = [(c.column_id, c.column_name) for c in table_columns]
    return sorted(f) == sorted(t)


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


class MappedFile(CarbonDataFile):
    """A ``.carbondata`` file whose columns are presented as the table's current columns."""

    def __init__(self, path: str, storage: Storage | None, table_columns: list[ColumnSchema]):
        self._table_columns = table_columns
        super().__init__(path, storage=storage)

    def _open(self) -> None:
        super()._open()
        physical, absent = view(self.columns, self._table_columns)
        self.columns = physical
        self.absent = absent  # table columns this file does not hold (read as their default)
        self._index = {id(c): i for i, c in enumerate(physical)}
        order = {n.name.lower(): i for i, n in enumerate(in_schema_order(nest(self._table_columns)))}
        present = [n for n in nest(physical) if not n.name.startswith(HIDDEN)]
        gone = {id(c) for c in absent}
        virtual = [n for n in nest(self._table_columns) if id(n.schema) in gone]  # with their children
        self._virtual = {id(n.schema): default_scalar(n.schema, arrow_type(n)) for n in virtual}
        self._nodes = sorted(present + virtual, key=lambda n: order.get(n.name.lower(), len(order)))
        self.schema = pa.schema([pa.field(n.name, arrow_type(n)) for n in self._nodes])

    def _decode(self, b, node, expected, keep=None):
        value = self._virtual.get(id(node.schema))
        if value is None:
            return super()._decode(b, node, expected, keep)
        return [pa.repeat(value, n) for n in self.page_rows(b)]


def open_file(path: str, storage: Storage | None, table_columns: list[ColumnSchema] | None) -> CarbonDataFile:
    """A table's data file in the table's columns (``table_columns`` None: the file as written)."""
    if table_columns is None:
        return CarbonDataFile(path, storage=storage)
    return MappedFile(path, storage, table_columns)


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
