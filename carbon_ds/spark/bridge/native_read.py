"""The Spark-native read of a mixed table: Spark's own Parquet / ORC / CSV / JSON scans of the
external segments (vectorised, codegen, Spark's row-group / stripe pruning of pushed filters), each cast to
the table schema with the segment's partition values as literal columns, unioned with the ``carbondata``
data source's read of the carbondata segments.

It is the default of ``carbon_ds.read`` (the extension's rules do the same in Java: jvm/src NativeUnion). The Spark conf
``carbon_ds.spark.nativeExternal=false`` (or ``read(..., native=False)``) reads external segments through
the data source (pyarrow in Python workers) instead.

One snapshot: the files of every segment are listed once, from one tablestatus version, when the frame is
built. Spark's scans get those files by name (no listing of the folders later) and the carbondata part gets
the carbondata segment ids of that version. Only the declared columns are read; a filter above the frame
reaches Spark's scans through its optimizer (pushed filters, literal partition columns folded away).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from functools import reduce
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema, from_arrow_type
from pyspark.sql.types import DataType, DoubleType, FloatType, StructType, TimestampNTZType, TimestampType

from carbon_ds.format.column_view import default_scalar
from carbon_ds.format.hive import DEFAULT_PARTITION as HIVE_DEFAULT_PARTITION
from carbon_ds.names import CONF_NATIVE, FILTER_OPTION, NATIVE_PLAN_OPTION, SEGMENTS_OPTION, SOURCE
from carbon_ds.readers.external.base import ExternalRef
from carbon_ds.spark.bridge.protocol import FileGroup, NativePlan
from carbon_ds.table.meta.files.data_files import STREAM_FORMAT
from carbon_ds.table.meta.handle import DataFile, TableHandle
from carbon_ds.table.meta.options import parse_bool
from carbon_ds.table.meta.schema.column_map import external_names
from carbon_ds.table.read.pruning import as_expr

__all__ = ["CONF_NATIVE", "NATIVE_PLAN_OPTION", "MixedPlan", "describe", "group_key", "native_enabled", "plan_mixed",
           "projection", "read", "reader_options", "union_frame"]

_SPARK_OPTIONS = {
    "csv": {"header": "header", "delimiter": "sep", "sep": "sep", "quote": "quote", "quotechar": "quote",
            "escape": "escape", "escapechar": "escape", "multiline": "multiLine", "nullvalue": "nullValue"},
    "json": {"multiline": "multiLine"},
}


def native_enabled(spark: Any, native: bool | None = None) -> bool:
    """Whether external segments are read with Spark's own scans: ``native`` when given, else the conf."""
    if native is not None:
        return bool(native)
    return parse_bool(spark.conf.get(CONF_NATIVE, "true"), f"spark conf {CONF_NATIVE}", True)


@dataclass(frozen=True)
class MixedPlan:
    """One snapshot of a mixed table: the carbondata (and stream) segment ids, and the external files by
    how they are read (format, partition values, options), as URIs."""

    table: TableHandle
    carbon_ids: tuple[str, ...]
    external: tuple[tuple[ExternalRef, tuple[str, ...], tuple[int, ...]], ...]  # (ref, file URIs, their sizes)


def plan_mixed(table: TableHandle, segments=None, files: list[DataFile] | None = None) -> MixedPlan | None:
    """The snapshot of ``table`` (its chosen ``segments``, or ``files`` listed earlier) split for the
    native union; None when it has no external segment Spark can read (nothing to gain)."""
    files = table.files(segments) if files is None else files
    # the carbondata source reads what Spark's readers cannot: stream segments' row files, and segments
    # with deleted rows in an external file (it applies their deltas)
    deletes = table.deletes()
    with_deletes = {f.segment_id for f in files if f.external is not None and deletes is not None
                    and deletes.status_of(f.path, f.segment_id) is not None}

    def ours(f: DataFile) -> bool:
        return f.external is None or f.external.format == STREAM_FORMAT or f.segment_id in with_deletes

    groups: dict[ExternalRef, tuple[list[str], list[int]]] = {}
    for f in files:
        if not ours(f):
            paths, sizes = groups.setdefault(f.external, ([], []))
            paths.append(table.storage.uri(f.path))
            sizes.append(f.size)
    if not groups:
        return None
    return MixedPlan(table, tuple(dict.fromkeys(f.segment_id for f in files if ours(f))),
                     tuple((ref, tuple(p), tuple(s)) for ref, (p, s) in groups.items()))


def _spark_type(t: pa.DataType) -> DataType:
    return from_arrow_type(t, prefer_timestamp_ntz=False) if _has_ntz_arg() else from_arrow_type(t)


def _has_ntz_arg() -> bool:
    return "prefer_timestamp_ntz" in inspect.signature(from_arrow_type).parameters


def _sql_literal(value: Any) -> str:
    """``value`` (a Python value of an Arrow scalar) as Spark SQL literal text."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float | Decimal):
        return repr(float(value)) + "D" if isinstance(value, float) else str(value)
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{value.isoformat()}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, bytes | bytearray):
        return f"X'{bytes(value).hex()}'"
    return _quote_text(str(value))


def _quote_text(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _name(column: str) -> str:
    return "`" + column.replace("`", "``") + "`"


# Spark's schema of a set of external files: {(ref, paths, sizes): StructType}
_SCHEMAS: dict[tuple, StructType] = {}
_SCHEMAS_LOCK = threading.Lock()
_SCHEMAS_MAX = 256


def reader_options(ref: ExternalRef) -> dict[str, str]:
    """The Spark reader options of ``ref``'s files: CSV/JSON options as the segment recorded them."""
    opts = ref.options_dict
    out: dict[str, str] = {}
    if ref.format == "csv":
        header = parse_bool(opts.get("header", opts.get("fileheader_present", "true")), "option header", True)
        out["header"] = "true" if header else "false"
    for key, value in opts.items():
        spark_key = _SPARK_OPTIONS.get(ref.format, {}).get(key)
        if spark_key and spark_key != "header":
            out[spark_key] = value
    return out


def projection(ref: ExternalRef, found: StructType, table: TableHandle, names: list[str],
               types: dict[str, DataType]) -> list[str]:
    """The SQL select list that turns the rows of ``ref``'s files (Spark's schema of them: ``found``) into
    the table columns ``names`` (table spelling), each cast to ``types[name.lower()]`` (default: the table's
    type): renamed columns under an earlier name, added ones as their default, partition folders as
    literals, CSV/JSON date patterns, zone-less timestamps as UTC."""
    fmt, opts = ref.format, ref.options_dict
    schema = table.schema
    found_types = {f.name: f.dataType for f in found.fields}
    # a CSV file without a header has Spark's column names _c0, _c1, ...: its columns in table order
    headerless = fmt == "csv" and not parse_bool(
        opts.get("header", opts.get("fileheader_present", "true")), "option header", True)
    display = dict(zip(schema.names, found_types, strict=False)) if headerless else {n: n for n in found_types}
    by_lower = {c.lower(): c for c in display}
    # schema evolution: a renamed column under an earlier name, an added one as its default
    renames, absent = external_names(list(display), table.columns)
    by_lower.update({t.lower(): s for s, t in renames.items()})
    defaults = {c.column_name.lower(): c for c in absent if c.default_value is not None}
    parts = {k.lower(): v for k, v in ref.partitions}
    items = []
    for name in names:
        f = schema.field(name)
        want = types.get(f.name.lower()) or _spark_type(f.type)
        key = f.name.lower()
        if key in parts:  # the folder's value wins: ADD SEGMENT checked the file agrees
            raw = parts[key]
            text = f"CAST({'NULL' if raw == HIVE_DEFAULT_PARTITION else _quote_text(raw)} AS {want.simpleString()})"
        elif key in by_lower:
            source = display[by_lower[key]]
            have = found_types[source]
            text = _name(source)
            if fmt in ("csv", "json") and (pa.types.is_timestamp(f.type) or pa.types.is_date(f.type)):
                pattern = opts.get("timestampformat" if pa.types.is_timestamp(f.type) else "dateformat")
                if pattern:
                    fn = "to_timestamp" if pa.types.is_timestamp(f.type) else "to_date"
                    text = f"{fn}({text}, {_quote_text(pattern)})"
            if isinstance(have, TimestampNTZType) and isinstance(want, TimestampType):
                # a zone-less file timestamp is UTC (as ADD SEGMENT and the data source read it), where
                # Spark's cast would take the session's time zone
                text = f"convert_timezone('UTC', current_timezone(), {text})"
            if have != want or text != _name(source):
                text = f"CAST({text} AS {want.simpleString()})"
            if fmt in ("parquet", "orc") and isinstance(want, DoubleType | FloatType):
                # an identity Spark cannot push into the scan: Parquet/ORC statistics and dictionaries order
                # -0.0 before 0.0, so a pushed `d = 0.0` or `d >= 0.0` drops -0.0 rows Spark SQL keeps
                text = f"nanvl({text}, {text})"
        elif key in defaults:
            value = default_scalar(defaults[key], f.type).as_py()
            text = f"CAST({_sql_literal(value)} AS {want.simpleString()})"
        else:
            text = f"CAST(NULL AS {want.simpleString()})"
        items.append(f"{text} AS {_name(f.name)}")
    return items


def _external_frame(spark: Any, ref: ExternalRef, paths: list[str], sizes: tuple[int, ...], table: TableHandle,
                    names: list[str], types: dict[str, DataType]) -> Any:
    """Spark's scan of ``paths`` as the table columns ``names`` (table spelling), each cast to
    ``types[name.lower()]`` (default: the table's type). The projection is SQL text, one JVM call."""
    reader = spark.read.format(ref.format).options(**reader_options(ref))
    # Spark infers a schema by reading a footer (a job) or, for JSON, every file: once per set of files
    key = (ref, tuple(paths), sizes)
    with _SCHEMAS_LOCK:
        known = _SCHEMAS.get(key)
    df = (reader.schema(known) if known is not None else reader).load(paths)
    if known is None:
        known = df.schema
        with _SCHEMAS_LOCK:
            if len(_SCHEMAS) >= _SCHEMAS_MAX:
                _SCHEMAS.pop(next(iter(_SCHEMAS)))
            _SCHEMAS[key] = known
    return df.selectExpr(*projection(ref, known, table, names, types))


def union_frame(spark: Any, plan: MixedPlan, declared: StructType, carbon_part: Callable[[StructType, str], Any],
                filter: str | None = None) -> Any:
    """The union of Spark's scans of ``plan``'s external files and ``carbon_part(declared, segment ids)``
    (the carbondata segments' read), as ``declared``'s columns (table columns, matched case-insensitively,
    of the declared types). ``filter`` (SQL text) is applied to the external rows; the carbon part must
    apply it itself (the data source's ``filter`` option prunes and filters exactly)."""
    schema = plan.table.schema
    by_lower = {n.lower(): n for n in schema.names}
    names = [by_lower[f.name.lower()] for f in declared.fields]
    types = {f.name.lower(): f.dataType for f in declared.fields}
    extra = []
    if filter:
        expr_cols = {c.lower() for c in as_expr(filter, schema).columns()}
        extra = [n for n in schema.names if n.lower() in expr_cols and n.lower() not in types]
    frames = []
    for ref, paths, sizes in plan.external:
        df = _external_frame(spark, ref, list(paths), sizes, plan.table, names + extra, types)
        if filter:
            df = df.where(filter)
        if extra:
            df = df.selectExpr(*[_name(n) for n in names])
        frames.append(df)
    if plan.carbon_ids:
        frames.insert(0, carbon_part(declared, ",".join(plan.carbon_ids)))
    return reduce(lambda a, b: a.union(b), frames)


def group_key(ref: ExternalRef, paths: tuple[str, ...], sizes: tuple[int, ...]) -> str:
    """A name for one set of external files read alike, which changes when a file is added or resized."""
    return hashlib.sha256(repr((ref, paths, sizes)).encode()).hexdigest()[:32]


def describe(table: TableHandle, declared: StructType, segments: str | None,
             known: dict[str, StructType]) -> NativePlan | None:
    """The native union of ``table`` as data, for a planner without a Python driver (the Spark extension's
    rule, jvm/src NativeUnion): the carbondata segment ids, and per set of external files its format,
    reader options, files, their sizes (the JVM keeps the answer while they hold, jvm/src PlanCache) and
    (when Spark's schema of them is in ``known``, by group_key) the select list
    giving ``declared``'s columns. None when the table has no external segment Spark reads, or ``declared``
    holds a column the table does not (a user schema: the data source reads it as it always did)."""
    by_lower = {n.lower(): n for n in table.schema.names}
    if not declared.fields or any(f.name.lower() not in by_lower for f in declared.fields):
        return None
    plan = plan_mixed(table, segments)
    if plan is None:
        return None
    names = [by_lower[f.name.lower()] for f in declared.fields]
    types = {f.name.lower(): f.dataType for f in declared.fields}
    groups = []
    for ref, paths, sizes in plan.external:
        key = group_key(ref, paths, sizes)
        select = tuple(projection(ref, known[key], table, names, types)) if key in known else None
        groups.append(FileGroup(key=key, format=ref.format, options=reader_options(ref), paths=tuple(paths),
                                sizes=tuple(sizes), select=select))
    return NativePlan(carbon_segments=tuple(plan.carbon_ids), groups=tuple(groups))


def read(spark: Any, path: str, table: TableHandle, names: list[str] | None, filter: str | None,
         files: list[DataFile], reader_options: dict[str, str] | None = None) -> Any | None:
    """``carbon_ds.read``'s native union of the snapshot's ``files``: ``names`` (None: all) of the rows
    where ``filter`` is TRUE; None when the table has no external segment Spark reads."""
    plan = plan_mixed(table, files=files)
    if plan is None:
        return None
    schema = table.schema
    target = pa.schema([schema.field(n) for n in names]) if names is not None else schema
    declared = from_arrow_schema(target, prefer_timestamp_ntz=False)

    def carbon_part(struct: StructType, ids: str) -> Any:
        reader = spark.read.format(SOURCE).schema(struct).options(**(reader_options or {}))
        if filter:
            reader = reader.option(FILTER_OPTION, filter)
        return reader.option(SEGMENTS_OPTION, ids).load(path)

    return union_frame(spark, plan, declared, carbon_part, filter)
