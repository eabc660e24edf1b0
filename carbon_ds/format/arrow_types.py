"""Mapping between CarbonData column schemas and Arrow types, and CarbonData's physical column order.

Physical order in a file: sort columns, other primitive dimensions, long-string (VARCHAR) dimensions,
complex columns with their children flattened depth-first, then measures. A column is a dimension when it
is a sort column or STRING, VARCHAR, DATE, TIMESTAMP, BINARY or complex; other numeric columns are measures.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from carbon_ds.errors import CarbonSchemaError
from carbon_ds.format.thrift.structs import ColumnSchema, DataType, Encoding

COMPLEX = (DataType.ARRAY, DataType.STRUCT, DataType.MAP)
ALWAYS_DIMENSION = (DataType.STRING, DataType.VARCHAR, DataType.DATE, DataType.TIMESTAMP, DataType.BINARY)
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
MAX_NESTING = 100  # levels of complex types in one column


@dataclass
class ColumnNode:
    """A column with its children nested again (the file headers hold them flattened)."""

    schema: ColumnSchema
    children: list[ColumnNode] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.schema.column_name

    @property
    def data_type(self) -> DataType:
        return DataType(self.schema.data_type)


def nest(flat: list[ColumnSchema]) -> list[ColumnNode]:
    """Rebuild complex columns from a flattened header list using each column's ``num_child``."""
    pos = 0

    def take(depth: int) -> ColumnNode:
        nonlocal pos
        if pos >= len(flat):
            raise CarbonSchemaError("column list ends inside a complex column's children")
        if depth > MAX_NESTING:  # a hostile num_child chain must not exhaust the stack
            raise CarbonSchemaError(f"complex column {flat[pos].column_name!r} nests deeper than the limit of "
                                    f"{MAX_NESTING} levels")
        node = ColumnNode(flat[pos])
        pos += 1
        if flat[pos - 1].data_type in COMPLEX:
            for _ in range(flat[pos - 1].num_child or 0):
                node.children.append(take(depth + 1))
        return node

    out = []
    while pos < len(flat):
        out.append(take(0))
    return out


def in_schema_order(nodes: list[ColumnNode]) -> list[ColumnNode]:
    """Top-level columns in the user's order (``schemaOrdinal``), stable on ties."""
    return sorted(nodes, key=lambda n: n.schema.schemaOrdinal if n.schema.schemaOrdinal is not None else 0)


def leaf_name(node: ColumnNode) -> str:
    return node.name.rsplit(".", 1)[-1]


# the Arrow type of each CarbonData type that takes no parameters
_SIMPLE_TYPES: dict[int, pa.DataType] = {
    DataType.STRING: pa.string(),
    DataType.VARCHAR: pa.string(),
    DataType.SHORT: pa.int16(),
    DataType.INT: pa.int32(),
    DataType.LONG: pa.int64(),
    DataType.DOUBLE: pa.float64(),
    DataType.FLOAT: pa.float32(),
    DataType.BYTE: pa.int8(),
    DataType.BOOLEAN: pa.bool_(),
    DataType.TIMESTAMP: TIMESTAMP_TYPE,
    DataType.DATE: pa.date32(),
    DataType.BINARY: pa.binary(),
}


def arrow_type(node: ColumnNode) -> pa.DataType:
    c = node.schema
    simple = _SIMPLE_TYPES.get(c.data_type)
    if simple is not None:
        return simple
    dt = node.data_type
    if dt == DataType.DECIMAL:
        precision = c.precision if c.precision and c.precision > 0 else 38
        scale = c.scale if c.scale and c.scale > 0 else 0
        if not 0 <= scale <= precision <= 38:
            raise CarbonSchemaError(f"column {c.column_name!r}: DECIMAL({c.precision},{c.scale}) in the schema is "
                                    "not a valid decimal (precision 1..38, scale 0..precision)")
        return pa.decimal128(precision, scale)
    if dt == DataType.ARRAY:
        if len(node.children) != 1:
            raise CarbonSchemaError(f"array column {node.name!r} has {len(node.children)} children, expected 1")
        return pa.list_(arrow_type(node.children[0]))
    if dt == DataType.STRUCT:
        return pa.struct([pa.field(leaf_name(ch), arrow_type(ch)) for ch in node.children])
    if dt == DataType.MAP:
        # stored as array<struct<key, value>>
        if len(node.children) != 1 or len(node.children[0].children) != 2:
            raise CarbonSchemaError(f"map column {node.name!r} is not array<struct<key,value>>")
        k, v = node.children[0].children
        return pa.map_(arrow_type(k), arrow_type(v))
    raise CarbonSchemaError(f"column {node.name!r} has unsupported CarbonData type {dt!r}")


def arrow_schema(flat: list[ColumnSchema]) -> pa.Schema:
    """The Arrow schema of a header's or table's columns, in the user's column order."""
    # asked several times by every scan (table, files, partitioning): remembered by what it depends on
    key = tuple((c.column_name, c.data_type, c.precision, c.scale, c.num_child, c.schemaOrdinal) for c in flat)
    schema = _SCHEMAS.get(key)
    if schema is None:
        schema = pa.schema([pa.field(n.name, arrow_type(n)) for n in in_schema_order(nest(flat))])
        if len(_SCHEMAS) >= 256:
            _SCHEMAS.clear()
        _SCHEMAS[key] = schema
    return schema


_SCHEMAS: dict[tuple, pa.Schema] = {}


# ------------------------------------------------------------------ Arrow -> CarbonData


def carbon_type(t: pa.DataType, name: str) -> DataType:
    if pa.types.is_dictionary(t):  # pandas categoricals: stored as their values (decoded on write)
        return carbon_type(t.value_type, name)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return DataType.STRING
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return DataType.BINARY
    for check, dt in (
        (pa.types.is_boolean, DataType.BOOLEAN),
        (pa.types.is_int8, DataType.BYTE),
        (pa.types.is_int16, DataType.SHORT),
        (pa.types.is_int32, DataType.INT),
        (pa.types.is_int64, DataType.LONG),
        (pa.types.is_float32, DataType.FLOAT),
        (pa.types.is_float64, DataType.DOUBLE),
        (pa.types.is_decimal, DataType.DECIMAL),
        (pa.types.is_timestamp, DataType.TIMESTAMP),
        (pa.types.is_date32, DataType.DATE),
        (pa.types.is_map, DataType.MAP),
        (pa.types.is_struct, DataType.STRUCT),
    ):
        if check(t):
            if dt == DataType.DECIMAL and t.precision > 38:
                raise CarbonSchemaError(
                    f"column {name!r}: {t} has precision {t.precision}; CarbonData decimals hold at most 38 digits "
                    "(cast the column to decimal128(38, s) or narrower)")
            return dt
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return DataType.ARRAY
    raise CarbonSchemaError(
        f"column {name!r}: Arrow type {t} has no CarbonData equivalent "
        "(supported: string, binary, bool, int8-64, float32/64, decimal, timestamp, date32, list, struct, map)"
    )


def _column(
    name: str, t: pa.DataType, ordinal: int, dimension: bool, varchar: bool = False, column_id: str | None = None
) -> ColumnSchema:
    dt = carbon_type(t, name)
    if dt == DataType.STRING and varchar:
        dt = DataType.VARCHAR
    cid = column_id or str(uuid.uuid4())
    is_decimal = dt == DataType.DECIMAL
    return ColumnSchema(
        data_type=int(dt),
        column_name=name,
        column_id=cid,
        columnar=True,
        encoders=[int(Encoding.DIRECT_DICTIONARY), int(Encoding.DICTIONARY)] if dt == DataType.DATE else [],
        dimension=dimension,
        column_group_id=-1,
        scale=t.scale if is_decimal else -1,
        precision=t.precision if is_decimal else -1,
        num_child=0,
        aggregate_function="",
        invisible=False,
        columnReferenceId=cid,
        schemaOrdinal=ordinal,
    )


def _flatten_complex(name: str, t: pa.DataType, ordinal: int, out: list[ColumnSchema]) -> None:
    col = _column(name, t, ordinal, True)
    out.append(col)
    if pa.types.is_map(t):
        entry = pa.struct([pa.field("key", t.key_type), pa.field("value", t.item_type)])
        children = [(f"{name}.val", entry)]
    elif pa.types.is_struct(t):
        children = [(f"{name}.{t.field(i).name}", t.field(i).type) for i in range(t.num_fields)]
    else:
        children = [(f"{name}.val", t.value_type)]
    col.num_child = len(children)
    for child_name, ct in children:
        if carbon_type(ct, child_name) in COMPLEX:
            _flatten_complex(child_name, ct, -1, out)
        else:
            out.append(_column(child_name, ct, -1, True))


def columns_for(
    schema: pa.Schema,
    sort_columns: list[str] | None = None,
    long_string_columns: list[str] | None = None,
    column_ids: dict[str, str] | None = None,
) -> list[ColumnSchema]:
    """CarbonData column schemas for an Arrow schema, in physical (file) order."""
    sort_columns = list(sort_columns or [])
    longs = {c.lower() for c in (long_string_columns or [])}
    names = {f.name.lower(): i for i, f in enumerate(schema)}
    for s in sort_columns:
        if s.lower() not in names:
            raise CarbonSchemaError(f"sort column {s!r} is not in the schema ({', '.join(schema.names)})")
        st = schema.field(names[s.lower()]).type
        if carbon_type(st, s) in COMPLEX + (DataType.BINARY,) or pa.types.is_floating(st) or pa.types.is_boolean(st):
            raise CarbonSchemaError(f"sort column {s!r} has type {st}, which cannot be a sort column")
    sort_idx = [names[s.lower()] for s in sort_columns]
    ids = {k.lower(): v for k, v in (column_ids or {}).items()}
    sorts, dims, varchars, complexes, measures = [], [], [], [], []
    for i, f in enumerate(schema):
        dt = carbon_type(f.type, f.name)
        if i in sort_idx:
            continue
        if dt in COMPLEX:
            cols: list[ColumnSchema] = []
            _flatten_complex(f.name, f.type, i, cols)
            complexes.extend(cols)
        elif dt in ALWAYS_DIMENSION:
            is_long = f.name.lower() in longs
            (varchars if is_long else dims).append(
                _column(f.name, f.type, i, True, varchar=is_long, column_id=ids.get(f.name.lower()))
            )
        else:
            measures.append(_column(f.name, f.type, i, False, column_id=ids.get(f.name.lower())))
    for i in sort_idx:
        f = schema.field(i)
        col = _column(f.name, f.type, i, True, varchar=f.name.lower() in longs, column_id=ids.get(f.name.lower()))
        # how CarbonData marks a sort column in the schema and the file header (ColumnSchema.isSortColumn is
        # read from this property by ThriftWrapperSchemaConverterImpl; its CLI shows it as SortColumn)
        col.columnProperties = {"sort_columns": "true"}
        sorts.append(col)
    return sorts + dims + varchars + complexes + measures


def decimal_low_words(arr: pa.Array) -> pa.Array:
    """A decimal128 array as int64 of each value's low 8 bytes (the same nulls and offset): the unscaled
    value itself when it fits int64 (at most 18 digits always does). One strided copy in numpy."""
    validity, values = arr.buffers()[:2]
    words = 2 * (arr.offset + len(arr))
    low = np.frombuffer(values, np.int64, count=words)[::2].copy() if values is not None and words else None
    return pa.Array.from_buffers(pa.int64(), len(arr), [validity, None if low is None else pa.py_buffer(low)],
                                 arr.null_count, arr.offset)
