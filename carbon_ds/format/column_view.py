"""A data file's columns as the table sees them now, after schema evolution.

Columns are matched by column id (CarbonData keeps a column's id through RENAME and type changes): a
renamed column keeps its data, a dropped one is never decoded, one added after the file was written reads
as its default value (or null), a widened one is cast by the caller's ``conform``. A file that shares no
column id with the table (written elsewhere and added with ADD SEGMENT) is matched by name instead.
``CarbonDataFile(path, table_columns=...)`` applies the view when it opens, so its ``columns``, ``schema``
and reads speak the table's names.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonSchemaError
from carbon_ds.format.arrow_types import ColumnNode, arrow_type, in_schema_order, nest
from carbon_ds.format.thrift.structs import ColumnSchema

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
    renamed, absent, _, _ = _view(file_columns, nest(table_columns))
    return renamed, absent


def _view(file_columns: list[ColumnSchema], table_nodes: list[ColumnNode]
          ) -> tuple[list[ColumnSchema], list[ColumnSchema], list[ColumnNode], list[ColumnNode]]:
    """``view``, with the file's column tree (renamed) and the table's it was matched against."""
    renamed = [copy.copy(c) for c in file_columns]
    file_nodes = nest(renamed)
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
    return renamed, absent, file_nodes, table_nodes


def is_identity(file_columns: list[ColumnSchema], table_columns: list[ColumnSchema]) -> bool:
    """Whether the file holds exactly the table's columns under the same ids and names."""
    f = [(c.column_id, c.column_name) for c in file_columns]
    t = [(c.column_id, c.column_name) for c in table_columns]
    return sorted(f) == sorted(t)


@dataclass
class ColumnView:
    """A file's columns renamed to the table's (``columns``), the table columns it lacks (``absent``), the
    column tree in table order (``nodes``) and the value each absent column reads as (``virtual``, by id of
    its schema)."""

    columns: list[ColumnSchema]
    absent: list[ColumnSchema]
    nodes: list[ColumnNode]
    virtual: dict[int, pa.Scalar]
    schema: pa.Schema


def column_view(file_columns: list[ColumnSchema], table_columns: list[ColumnSchema] | None) -> ColumnView:
    """The file's columns as the table's (``table_columns`` None: as written)."""
    if table_columns is None:
        nodes = in_schema_order(nest(file_columns))
        return ColumnView(file_columns, [], nodes, {}, pa.schema([pa.field(n.name, arrow_type(n)) for n in nodes]))
    physical, absent, file_nodes, table_nodes = _view(file_columns, nest(table_columns))
    order = {n.name.lower(): i for i, n in enumerate(in_schema_order(table_nodes))}
    present = [n for n in file_nodes if not n.name.startswith(HIDDEN)]
    gone = {id(c) for c in absent}
    virtual = [n for n in table_nodes if id(n.schema) in gone]  # with their children
    nodes = sorted(present + virtual, key=lambda n: order.get(n.name.lower(), len(order)))
    values = {id(n.schema): default_scalar(n.schema, arrow_type(n)) for n in virtual}
    return ColumnView(physical, absent, nodes, values, pa.schema([pa.field(n.name, arrow_type(n)) for n in nodes]))


# Views kept by the stored bytes of a file's column list and the very table column list they were made
# for: a table's files mostly share one column list, and its view takes longer to make than a small file
# takes to decode. Readers never change a view, so files share it.
_VIEWS: OrderedDict[tuple[bytes, int], tuple[list[ColumnSchema] | None, ColumnView]] = OrderedDict()
_VIEWS_LOCK = threading.Lock()
_VIEWS_MAX = 64


def shared_view(file_key: bytes | None, file_columns: list[ColumnSchema],
                table_columns: list[ColumnSchema] | None) -> ColumnView:
    """``column_view``, shared with earlier files whose column list had the same bytes (``file_key``; None:
    not shared) and that were read through the same ``table_columns`` object."""
    if file_key is None:
        return column_view(file_columns, table_columns)
    key = (file_key, id(table_columns))
    with _VIEWS_LOCK:
        hit = _VIEWS.get(key)
        if hit is not None and hit[0] is table_columns:
            _VIEWS.move_to_end(key)
            return hit[1]
    v = column_view(file_columns, table_columns)
    with _VIEWS_LOCK:
        _VIEWS[key] = (table_columns, v)
        _VIEWS.move_to_end(key)
        while len(_VIEWS) > _VIEWS_MAX:
            _VIEWS.popitem(last=False)
    return v
