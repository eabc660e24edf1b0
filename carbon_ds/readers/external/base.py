"""What every reader of an added (external) segment's files shares: the interface, the schema check and
the one cast into the table schema.

An external file is opened with ``carbon_ds.readers.external.open_reader`` (the format registry), which
returns an :class:`ExternalFile`:

* ``schema``: the file's own Arrow schema (CSV/JSON: the columns it names, typed as the table wants);
* ``units``: its statistics units (Parquet row groups, ORC stripes; CSV/JSON: one unit, no statistics),
  each a ``Stats`` dict (lower-cased column -> ColumnStats) plus its exact row count or None;
* ``read(columns, units)``: an Arrow table of those columns (file spelling) of those units.

:func:`to_table_schema` is the only place file data becomes table data: columns matched case-insensitively,
safe widenings cast (see :func:`check_type`), partition columns filled from the segment's partition values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonOptionError
from carbon_ds.expressions.might_match import ColumnStats
from carbon_ds.format.hive import DEFAULT_PARTITION as HIVE_DEFAULT_PARTITION

# Formats ADD SEGMENT accepts, and their canonical names (CarbonData accepts "carbon" for carbondata).
FORMATS = {"carbondata": "carbondata", "carbon": "carbondata", "columnar_v3": "carbondata", "parquet": "parquet",
           "orc": "orc", "csv": "csv", "json": "json"}
EXTERNAL_FORMATS = ("parquet", "orc", "csv", "json")


def canonical_format(fmt: str | None) -> str:
    name = (fmt or "carbondata").strip().lower()
    if name not in FORMATS:
        raise CarbonOptionError(
            f"format must be one of carbondata, carbon, parquet, orc, csv, json; found {fmt!r}"
        )
    return FORMATS[name]


@dataclass(frozen=True)
class ExternalRef:
    """How to read one file of an external segment; picklable and hashable (it travels in Spark partitions)."""

    format: str
    partitions: tuple[tuple[str, str], ...] = ()  # (column, raw folder value), from the segment file
    options: tuple[tuple[str, str], ...] = ()  # the ADD SEGMENT options kept in the segment file

    @property
    def options_dict(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.options}


@dataclass
class Unit:
    stats: dict[str, ColumnStats]
    rows: int | None


@dataclass
class ExternalFile:
    path: str
    schema: pa.Schema
    units: list[Unit] = field(default_factory=list)
    reader: object = None  # format module's reading function: (columns, units) -> pa.Table

    @property
    def num_rows(self) -> int | None:
        rows = [u.rows for u in self.units]
        return None if any(r is None for r in rows) else sum(rows)  # type: ignore[arg-type]

    def read(self, columns: list[str] | None = None, units: list[int] | tuple[int, ...] | None = None) -> pa.Table:
        """Columns (any spelling; absent ones are skipped) of the chosen units (None: all)."""
        if columns is not None:
            present = {n.lower() for n in self.schema.names}
            if not any(c.lower() in present for c in columns) and self.schema.names:
                # only partition columns wanted: still read one column so the row count is right
                columns = self.schema.names[:1]
        return self.reader(columns, units)  # type: ignore[misc]


# ------------------------------------------------------------------------------------------ types
def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", bool)(t)


def _is_binary(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)


def check_type(found: pa.DataType, expected: pa.DataType) -> bool:
    """Whether file type ``found`` may be read as table type ``expected`` without losing a value.

    Exact types, plus these documented safe widenings: narrower signed (or smaller unsigned) integers into
    a wider integer column; float32 into double; date64 into date; any timestamp unit or zone into the
    table's timestamp (a naive timestamp is taken as UTC, as Spark writes Parquet/ORC; Parquet INT96 reads
    as timestamp[ns]); string/large_string and binary/large_binary either way; a dictionary-encoded column
    as its values; a decimal into one with the same scale and at least its precision; an all-null column.
    """
    if found.equals(expected):
        return True
    if pa.types.is_null(found):
        return True
    if pa.types.is_dictionary(found):
        return check_type(found.value_type, expected)
    if _is_string(found) and _is_string(expected):
        return True
    if _is_binary(found) and _is_binary(expected):
        return True
    if pa.types.is_integer(found) and pa.types.is_integer(expected) and pa.types.is_signed_integer(expected):
        if pa.types.is_signed_integer(found):
            return found.bit_width <= expected.bit_width
        return found.bit_width < expected.bit_width
    if pa.types.is_floating(found) and pa.types.is_floating(expected):
        return found.bit_width <= expected.bit_width
    if pa.types.is_date(found) and pa.types.is_date(expected):
        return True
    if pa.types.is_timestamp(found) and pa.types.is_timestamp(expected):
        return True
    if pa.types.is_decimal(found) and pa.types.is_decimal(expected):
        return found.scale == expected.scale and found.precision <= expected.precision
    if pa.types.is_list(found) and pa.types.is_list(expected) or (
        pa.types.is_large_list(found) and pa.types.is_list(expected)
    ):
        return check_type(found.value_type, expected.value_type)
    if pa.types.is_struct(found) and pa.types.is_struct(expected):
        by_lower = {found.field(i).name.lower(): found.field(i).type for i in range(found.num_fields)}
        return all(
            expected.field(i).name.lower() in by_lower
            and check_type(by_lower[expected.field(i).name.lower()], expected.field(i).type)
            for i in range(expected.num_fields)
        )
    if pa.types.is_map(found) and pa.types.is_map(expected):
        return check_type(found.key_type, expected.key_type) and check_type(found.item_type, expected.item_type)
    return False


def schema_problems(file_schema: pa.Schema, table_schema: pa.Schema, partition_columns: list[str]) -> list[str]:
    """Every reason ``file_schema`` cannot be read as ``table_schema`` (empty: it can).

    Partition columns may be absent from the files (Hive layout: their values are in the folder names);
    when present their type is checked like any other column's. Extra file columns are ignored.
    """
    by_lower = {}
    for f in file_schema:
        by_lower.setdefault(f.name.lower(), f)
    parts = {p.lower() for p in partition_columns}
    problems = []
    missing = [f.name for f in table_schema if f.name.lower() not in by_lower and f.name.lower() not in parts]
    if missing:
        problems.append(f"missing column(s) {', '.join(missing)}")
    for f in table_schema:
        got = by_lower.get(f.name.lower())
        if got is not None and not check_type(got.type, f.type):
            problems.append(f"column {f.name}: expected {f.type}, found {got.type} (column {got.name!r} in the file)")
    return problems


# ------------------------------------------------------------------------------------------ values
def partition_scalar(raw: str | None, t: pa.DataType) -> pa.Scalar:
    """A partition folder value (``day=20211123`` -> 20211123) as a scalar of the column's type."""
    if raw is None or raw == HIVE_DEFAULT_PARTITION:
        return pa.scalar(None, type=t)
    from urllib.parse import unquote

    text = unquote(raw)  # Hive escapes '/', '=', ':' ... in folder names as %XX
    if _is_string(t):
        return pa.scalar(text, type=t)
    if pa.types.is_timestamp(t):
        return (pc.cast(pc.strptime(pa.scalar(text), format="%Y-%m-%d %H:%M:%S", unit="us"), t) if ":" in text
            else pc.cast(pa.scalar(text), t))
    return pc.cast(pa.scalar(text), t)


def to_table_schema(data: pa.Table, target: pa.Schema, partitions: dict[str, pa.Scalar] | None = None) -> pa.Table:
    """File data as exactly ``target``: columns by case-insensitive name, widened; partition columns from
    the segment's partition values (they win over a same-named file column only when that one is absent)."""
    by_lower: dict[str, int] = {}
    for i, n in enumerate(data.schema.names):
        by_lower.setdefault(n.lower(), i)
    parts = {k.lower(): v for k, v in (partitions or {}).items()}
    arrays = []
    for f in target:
        key = f.name.lower()
        if key in by_lower:
            arrays.append(_cast(data.column(by_lower[key]), f.type))
        elif key in parts:
            value = parts[key]
            arrays.append(pa.repeat(value.cast(f.type) if value.type != f.type else value, data.num_rows))
        else:
            arrays.append(pa.nulls(data.num_rows, type=f.type))
    return pa.Table.from_arrays(arrays, schema=target)


def _cast(col: pa.ChunkedArray | pa.Array, t: pa.DataType):
    if col.type.equals(t):
        return col
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if pa.types.is_timestamp(col.type) and pa.types.is_timestamp(t):
        if col.type.tz is None and t.tz is not None:
            col = col.cast(pa.timestamp(col.type.unit, "UTC"))  # naive values are UTC instants (Spark's rule)
        # ns -> us drops sub-microsecond digits, which the table type cannot hold
        return col.cast(t, safe=False)
    return col.cast(t)


def file_columns(schema: pa.Schema, columns: list[str] | None) -> list[str] | None:
    """The file's spelling of the wanted columns (case-insensitive); absent ones (partition columns) are
    left out."""
    if columns is None:
        return None
    by_lower = {n.lower(): n for n in schema.names}
    return [by_lower[c.lower()] for c in columns if c.lower() in by_lower]
