"""Incoming data against a table schema: checking it before anything is written, and the one cast into it."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonSchemaError
from carbon_ds.format.arrow_types import decimal_low_words
from carbon_ds.readers.external.base import check_type


def type_signature(t: pa.DataType) -> str:
    """A spelling of a type that ignores what a write may change losslessly: string/large_string,
    timestamp unit and zone, list field names, nullability, dictionary encoding."""
    if pa.types.is_dictionary(t):
        return type_signature(t.value_type)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return "binary"
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_map(t):
        return f"map<{type_signature(t.key_type)},{type_signature(t.item_type)}>"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return f"array<{type_signature(t.value_type)}>"
    if pa.types.is_struct(t):
        inner = ",".join(f"{t.field(i).name.lower()}:{type_signature(t.field(i).type)}" for i in range(t.num_fields))
        return f"struct<{inner}>"
    return str(t)


def check_schema(expected: pa.Schema, found: pa.Schema, where: str) -> None:
    """Raise CarbonSchemaError naming every column whose presence or type differs (names match
    case-insensitively). The safe widenings ADD SEGMENT accepts are accepted here too (``check_type``:
    int32 into a bigint column, float into double, a decimal into a wider one, any timestamp unit)."""
    have = {f.name.lower(): f for f in found}
    want = {f.name.lower() for f in expected}
    problems = []
    for f in expected:
        g = have.get(f.name.lower())
        if g is None:
            problems.append(f"column {f.name!r}: expected {type_signature(f.type)}, found no such column")
        elif type_signature(f.type) != type_signature(g.type) and not check_type(g.type, f.type):
            problems.append(f"column {f.name!r}: expected {type_signature(f.type)}, found {type_signature(g.type)}")
    for g in found:
        if g.name.lower() not in want:
            problems.append(f"column {g.name!r}: not in the table, found {type_signature(g.type)}")
    if len({f.name.lower() for f in found}) != len(found):
        problems.append(f"data has duplicate column names (case-insensitive): {', '.join(found.names)}")
    if problems:
        raise CarbonSchemaError(f"data does not match the schema of {where}:\n  " + "\n  ".join(problems))


def conform(data: pa.Table | pa.RecordBatch, target: pa.Schema, where: str = "the data") -> pa.Table | pa.RecordBatch:
    """Select ``target``'s columns (case-insensitively) and cast them to exactly ``target``.

    Raises:
        CarbonSchemaError: a column of ``target`` is missing from ``data`` or cannot be cast (a file whose
            header was altered); the message names ``where`` and the column.
    """
    have = data.schema
    if have.metadata is None and have.names == target.names and have.equals(target, check_metadata=False):
        return data  # already exactly the target (a file read in the table's columns): nothing to rebuild
    by_lower = {n.lower(): i for i, n in enumerate(have.names)}
    missing = [f.name for f in target if f.name.lower() not in by_lower]
    if missing:
        raise CarbonSchemaError(
            f"{where} has no column {', '.join(map(repr, missing))} of the table; it has {', '.join(data.schema.names)}"
        )
    arrays = [data.column(by_lower[f.name.lower()]) for f in target]
    if isinstance(data, pa.RecordBatch):
        out = pa.RecordBatch.from_arrays(arrays, names=target.names)
    else:
        out = pa.Table.from_arrays(arrays, names=target.names)
    if out.schema.equals(target, check_metadata=False):
        return out
    try:
        return _floor_fine_timestamps(out, target).cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise CarbonSchemaError(f"{where}: columns do not convert to the table's types: {e}") from None


def _floor_fine_timestamps(data: pa.Table | pa.RecordBatch, target: pa.Schema) -> pa.Table | pa.RecordBatch:
    """CarbonData keeps milliseconds: timestamps of any finer unit (pandas' nanoseconds, Spark's and
    Arrow's microseconds) are floored to the millisecond, one rule for every unit, so no cast fails."""
    for i, f in enumerate(target):
        t = data.schema.field(i).type
        if pa.types.is_timestamp(t) and pa.types.is_timestamp(f.type) and t.unit == "ns":
            floored = pc.floor_temporal(data.column(i), unit="millisecond")
            data = data.set_column(i, data.schema.field(i).name, floored)
    return data


UNSCALED_MAX_PRECISION = 18  # a decimal of at most 18 digits has its unscaled value in an int64


def has_unscaled_form(t: pa.DataType | None) -> bool:
    """Whether ``t`` is a decimal whose unscaled value fits an int64 (at most 18 digits)."""
    return t is not None and pa.types.is_decimal128(t) and t.precision <= UNSCALED_MAX_PRECISION


def unscaled_decimals(data: pa.Table, names: list[str], types: dict[str, pa.DataType] | None = None) -> pa.Table:
    """``data`` with each of the decimal columns ``names`` (precision at most 18) as its unscaled int64
    value: 12.34 of a decimal(15,2) becomes 1234. Spark turns these back into decimals with MakeDecimal,
    which costs far less than converting Arrow's 128-bit decimals value by value (jvm/src PruneCarbonRelations).
    The low word of each little-endian 128-bit value is the value itself, so no arithmetic runs.
    ``types`` ({lower name: decimal type}): the decimal a column is first cast to, the one whose precision and
    scale the reader of the unscaled values assumes."""
    if not names:
        return data
    by_lower = {n.lower(): i for i, n in enumerate(data.schema.names)}
    for name in names:
        i = by_lower[name.lower()]
        want = (types or {}).get(name.lower())
        if want is not None and data.schema.field(i).type != want:
            data = data.set_column(i, data.schema.field(i).name, data.column(i).cast(want))
        t = data.schema.field(i).type
        if not has_unscaled_form(t):
            raise CarbonSchemaError(f"column {name!r} is {t}, not a decimal of at most "
                                    f"{UNSCALED_MAX_PRECISION} digits: it has no int64 unscaled form")
        chunks = [decimal_low_words(c) for c in data.column(i).chunks]
        data = data.set_column(i, data.schema.field(i).name, pa.chunked_array(chunks, pa.int64()))
    return data
