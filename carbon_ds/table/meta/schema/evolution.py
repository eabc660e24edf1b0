"""Schema changes as CarbonData records them: new ``TableInfo`` with one ``SchemaEvolutionEntry`` per change.

* ADD: new columns get new ids and the next schema ordinals; a default value is kept as text in
  ``default_value`` (files written before read it for the column).
* DROP: the column stays in ``table_columns`` marked ``invisible`` (as CarbonData does), so its id is never
  reused; its data in old files is never decoded.
* RENAME / widen: the column keeps its id; the entry lists the old column as removed and the new as added.
Data files are never rewritten. The new schema file replaces the old one in one atomic write under the
table lock, so a crash leaves the old schema or the new one.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import pyarrow as pa

from carbon_ds import faults
from carbon_ds.errors import CarbonSchemaError
from carbon_ds.format.arrow_types import COMPLEX, ColumnNode, arrow_type, carbon_type, columns_for, nest
from carbon_ds.format.column_view import default_scalar
from carbon_ds.format.thrift.structs import ColumnSchema, DataType, SchemaEvolutionEntry, TableInfo
from carbon_ds.table.meta.locks import TableLock
from carbon_ds.table.meta.schema import schema_file
from carbon_ds.table.meta.schema.column_map import FORMER_NAMES


@dataclass
class Change:
    kind: str  # "add", "drop", "rename", "widen"
    name: str
    new_name: str | None = None
    type: pa.DataType | None = None
    default: str | None = None


@dataclass
class Result:
    info: TableInfo
    added: list[ColumnSchema] = field(default_factory=list)
    removed: list[ColumnSchema] = field(default_factory=list)


def default_text(value, t: pa.DataType, name: str) -> str | None:
    """A default value as the text CarbonData keeps, checked against the column type."""
    if value is None:
        return None
    text = value.isoformat(sep=" ") if hasattr(value, "isoformat") and pa.types.is_timestamp(t) else (
        value.isoformat() if hasattr(value, "isoformat") else str(value))
    if isinstance(value, bool):
        text = str(value).lower()
    probe = ColumnSchema(column_name=name, default_value=text.encode("utf-8"))
    default_scalar(probe, t)  # raises naming the column when the text is not a value of the type
    return text


def widening_refusal(name: str, old: pa.DataType, new: pa.DataType) -> str | None:
    """Why ``old`` -> ``new`` is not allowed (None when it is): INT to BIGINT, or a decimal that keeps
    every value (precision and scale not smaller, integer digits not fewer), as CarbonData allows."""
    if pa.types.is_int32(old) and pa.types.is_int64(new):
        return None
    if pa.types.is_decimal(old) and pa.types.is_decimal(new):
        if new.precision < old.precision:
            return (f"column {name!r}: decimal precision {new.precision} is smaller than the current "
                    f"{old.precision}; only an increase keeps every value")
        if new.scale < old.scale:
            return f"column {name!r}: decimal scale {new.scale} is smaller than the current {old.scale}"
        if new.precision - new.scale < old.precision - old.scale:
            return (f"column {name!r}: {new} keeps {new.precision - new.scale} integer digits, the current "
                    f"{old} holds {old.precision - old.scale}; values could be lost")
        return None
    return (f"column {name!r}: changing {old} to {new} is not allowed; only INT to BIGINT and a decimal "
            "precision increase keep every stored value (old files are never rewritten)")


def _top(info: TableInfo) -> list[ColumnNode]:
    return [n for n in nest(info.fact_table.table_columns) if not n.schema.invisible]


def _find(info: TableInfo, name: str, where: str) -> ColumnNode:
    for n in _top(info):
        if n.name.lower() == name.lower():
            return n
    raise CarbonSchemaError(f"column {name!r} does not exist in {where}; columns are: "
                            f"{', '.join(n.name for n in _top(info))}")


def _flatten(nodes: list[ColumnNode]) -> list[ColumnSchema]:
    out: list[ColumnSchema] = []
    for n in nodes:
        out.append(n.schema)
        out.extend(_flatten(n.children))
    return out


def _physical_order(columns: list[ColumnSchema], sort_columns: list[str]) -> list[ColumnSchema]:
    """CarbonData's physical order (sort columns, dimensions, varchars, complex, measures), stable."""
    sorts = [s.lower() for s in sort_columns]

    def group(n: ColumnNode) -> tuple[int, int]:
        if n.name.lower() in sorts:
            return (0, sorts.index(n.name.lower()))
        dt = n.data_type
        if dt in COMPLEX:
            return (3, 0)
        if dt == DataType.VARCHAR:
            return (2, 0)
        return (1, 0) if n.schema.dimension else (4, 0)

    return _flatten(sorted(nest(columns), key=group))


def _with_prop(props: dict[str, str], key: str, old: str, new: str | None) -> None:
    items = [c.strip() for c in props.get(key, "").split(",") if c.strip()]
    if not any(c.lower() == old.lower() for c in items):
        return
    items = [(new.lower() if new else None) if c.lower() == old.lower() else c for c in items]
    props[key] = ",".join(c for c in items if c)


def apply(info: TableInfo, changes: list[Change], partition_columns: list[str], where: str) -> Result:
    """A new TableInfo with ``changes`` applied in order, and what the evolution entry lists.

    Raises:
        CarbonSchemaError: a change is not allowed (the message says which and why).
    """
    new = TableInfo.from_bytes(info.to_bytes())[0]
    fact = new.fact_table
    props = dict(fact.tableProperties or {})
    parts = {p.lower() for p in partition_columns}
    res = Result(new)
    added_ids: set[str] = set()
    for ch in changes:
        sorts = [s.lower() for s in schema_file.sort_columns(new)]
        if ch.kind == "add":
            if any(n.name.lower() == ch.name.lower() for n in _top(new)):
                raise CarbonSchemaError(f"cannot add column {ch.name!r} to {where}: a column of that name exists")
            carbon_type(ch.type, ch.name)
            ordinal = max((c.schemaOrdinal or 0) for c in fact.table_columns) + 1
            cols = columns_for(pa.schema([pa.field(ch.name, ch.type)]))
            for c in cols:
                if c.schemaOrdinal is not None and c.schemaOrdinal >= 0:
                    c.schemaOrdinal = ordinal
            if ch.default is not None:
                if carbon_type(ch.type, ch.name) in COMPLEX:
                    raise CarbonSchemaError(f"column {ch.name!r}: a complex column cannot have a default value")
                cols[0].default_value = ch.default.encode("utf-8")
            fact.table_columns = list(fact.table_columns) + cols
            res.added.append(copy.copy(cols[0]))
            added_ids.add(cols[0].column_id)
        elif ch.kind == "drop":
            node = _find(new, ch.name, where)
            if node.name.lower() in parts:
                raise CarbonSchemaError(f"cannot drop column {node.name!r} of {where}: partition columns cannot "
                                        "be dropped (their values live in the folder names)")
            if node.name.lower() in sorts:
                raise CarbonSchemaError(f"cannot drop column {node.name!r} of {where}: it is a sort column "
                                        "(every segment is sorted by it)")
            if len(_top(new)) - 1 <= len(parts):
                raise CarbonSchemaError(f"cannot drop column {node.name!r} of {where}: a table needs at least "
                                        "one column that is not a partition column")
            res.removed.append(copy.copy(node.schema))
            for c in _flatten([node]):
                c.invisible = True
            _with_prop(props, "long_string_columns", node.name, None)
        elif ch.kind in ("rename", "widen"):
            node = _find(new, ch.name, where)
            if node.name.lower() in parts:
                raise CarbonSchemaError(f"cannot change partition column {node.name!r} of {where}: its values "
                                        "live in the folder names")
            before = copy.copy(node.schema)
            if ch.kind == "rename":
                target = ch.new_name or ""
                if not target.strip():
                    raise CarbonSchemaError(f"cannot rename column {node.name!r} of {where} to an empty name")
                clash = [n for n in _top(new) if n.name.lower() == target.lower() and n is not node]
                if clash:
                    raise CarbonSchemaError(f"cannot rename column {node.name!r} of {where} to {target!r}: a "
                                            "column of that name exists")
                for key in ("sort_columns", "long_string_columns"):
                    _with_prop(props, key, node.name, target)
                old = node.name
                props_c = dict(node.schema.columnProperties or {})
                # external segments (Parquet, ...) have no column ids: they find the column by these names
                props_c[FORMER_NAMES] = ",".join([n for n in props_c.get(FORMER_NAMES, "").split(",") if n] + [old])
                node.schema.columnProperties = props_c
                node.schema.column_name = target
                for c in _flatten(node.children):
                    if c.column_name.lower().startswith(old.lower() + "."):
                        c.column_name = target + c.column_name[len(old):]
            else:
                old_t = arrow_type(node) if not node.children else None
                if old_t is None or node.name.lower() in sorts:
                    what = "a sort column" if node.name.lower() in sorts else "a complex column"
                    raise CarbonSchemaError(f"cannot change the type of column {node.name!r} of {where}: it is "
                                            f"{what}")
                reason = widening_refusal(node.name, old_t, ch.type)
                if reason:
                    raise CarbonSchemaError(f"{reason} (table {where})")
                node.schema.data_type = int(carbon_type(ch.type, node.name))
                if pa.types.is_decimal(ch.type):
                    node.schema.precision, node.schema.scale = ch.type.precision, ch.type.scale
            if before.column_id not in added_ids | {c.column_id for c in res.removed}:
                res.removed.append(before)  # the column as it was before this change, once
            res.added = [c for c in res.added if c.column_id != node.schema.column_id]
            res.added.append(copy.copy(node.schema))
        else:
            raise CarbonSchemaError(f"unknown schema change {ch.kind!r}")
    fact.tableProperties = props
    fact.table_columns = _physical_order(fact.table_columns, schema_file.sort_columns(new))
    if new.fact_table.partitionInfo is not None:  # keep the partition copies in step (names, types)
        by_id = {c.column_id: c for c in fact.table_columns}
        pinfo = new.fact_table.partitionInfo
        pinfo.partition_columns = [by_id.get(c.column_id, c) for c in pinfo.partition_columns or []]
    return res


def commit(storage, table_path: str, schema_path: str, info: TableInfo, changes: list[Change],
           partition_columns: list[str], where: str) -> TableInfo:
    """Apply ``changes`` to the table's current schema file and write it back in one atomic replace.
    ``info`` is only used when the schema file is unchanged since it was read."""
    with TableLock(storage, table_path):
        current = schema_file.read(storage, schema_path)  # a change committed meanwhile is built upon
        res = apply(current, changes, partition_columns, where)
        entry = SchemaEvolutionEntry(time_stamp=time.time_ns() // 1_000_000, added=res.added or None,
                                     removed=res.removed or None)
        history = res.info.fact_table.schema_evolution.schema_evolution_history
        res.info.fact_table.schema_evolution.schema_evolution_history = list(history or []) + [entry]
        faults.point("schema.before_write")
        schema_file.write(storage, schema_path, res.info)
        faults.point("schema.after_write")
    return res.info


def commit_properties(storage, table_path: str, schema_path: str, set_: dict[str, str],
                      unset: list[str]) -> TableInfo:
    """Set and unset table properties in the schema file (one atomic replace under the table lock)."""
    with TableLock(storage, table_path):
        info = schema_file.read(storage, schema_path)
        props = dict(info.fact_table.tableProperties or {})
        props.update(set_)
        for key in unset:
            props.pop(key, None)
        info.fact_table.tableProperties = props
        faults.point("schema.before_write")
        schema_file.write(storage, schema_path, info)
    return info
