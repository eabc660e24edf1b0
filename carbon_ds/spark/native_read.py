"""The Spark-native read of a mixed table: Spark's own Parquet / ORC / CSV / JSON scans of the
external segments (vectorised, codegen, Spark's row-group pruning), each cast to the table schema with the
segment's partition values as literal columns, unioned with the ``carbondata`` data source's read of the
carbondata segments. Used by ``carbon_ds.read(spark, path, native=True)``."""

from __future__ import annotations

import inspect
from functools import reduce
from typing import Any

import pyarrow as pa
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, from_arrow_type

from carbon_ds.format.column_view import default_scalar
from carbon_ds.format.hive import DEFAULT_PARTITION as HIVE_DEFAULT_PARTITION
from carbon_ds.readers.external.base import ExternalRef
from carbon_ds.table.meta.column_map import external_names
from carbon_ds.table.meta.data_files import STREAM_FORMAT
from carbon_ds.table.meta.handle import TableHandle

_SPARK_OPTIONS = {
    "csv": {"header": "header", "delimiter": "sep", "sep": "sep", "quote": "quote", "quotechar": "quote",
            "escape": "escape", "escapechar": "escape", "multiline": "multiLine", "nullvalue": "nullValue"},
    "json": {"multiline": "multiLine"},
}


def _spark_type(t: pa.DataType):
    return from_arrow_type(t, prefer_timestamp_ntz=False) if _has_ntz_arg() else from_arrow_type(t)


def _has_ntz_arg() -> bool:
    return "prefer_timestamp_ntz" in inspect.signature(from_arrow_type).parameters


def _external_frame(spark: Any, fmt: str, paths: list[str], ref: ExternalRef, target: pa.Schema,
                    table_columns=None):
    opts = ref.options_dict
    reader = spark.read.format(fmt)
    if fmt == "csv":
        reader = reader.option("header", opts.get("header", "true"))
    for key, value in opts.items():
        spark_key = _SPARK_OPTIONS.get(fmt, {}).get(key)
        if spark_key:
            reader = reader.option(spark_key, value)
    df = reader.load(paths)
    by_lower = {c.lower(): c for c in df.columns}
    # schema evolution: a renamed column under an earlier name, an added one as its default
    renames, absent = external_names(list(df.columns), table_columns)
    by_lower.update({t.lower(): s for s, t in renames.items()})
    defaults = {c.column_name.lower(): c for c in absent if c.default_value is not None}
    parts = {k.lower(): v for k, v in ref.partitions}
    cols = []
    for f in target:
        st = _spark_type(f.type)
        key = f.name.lower()
        if key in by_lower:
            col = F.col(f"`{by_lower[key]}`")
            if fmt in ("csv", "json") and (pa.types.is_timestamp(f.type) or pa.types.is_date(f.type)):
                pattern = opts.get("timestampformat" if pa.types.is_timestamp(f.type) else "dateformat")
                if pattern:
                    col = F.to_timestamp(col, pattern) if pa.types.is_timestamp(f.type) else F.to_date(col, pattern)
            cols.append(col.cast(st).alias(f.name))
        elif key in parts:
            raw = parts[key]
            cols.append(F.lit(None if raw == HIVE_DEFAULT_PARTITION else raw).cast(st).alias(f.name))
        elif key in defaults:
            cols.append(F.lit(default_scalar(defaults[key], f.type).as_py()).cast(st).alias(f.name))
        else:
            cols.append(F.lit(None).cast(st).alias(f.name))
    return df.select(*cols)


def read(spark: Any, path: str, table: TableHandle, names: list[str] | None, filter: str | None, segments) -> Any:
    schema = table.schema
    target = pa.schema([schema.field(n) for n in names]) if names is not None else schema
    # the filter may name columns outside the projection: read those too, select at the end
    files = table.files(segments)
    # stream segments' row files have no Spark reader: the carbondata source reads them with the rest
    ours = [f for f in files if f.external is None or f.external.format == STREAM_FORMAT]
    carbon_ids = list(dict.fromkeys(f.segment_id for f in ours))
    groups: dict[tuple, list[str]] = {}
    for f in files:
        if f.external is not None and f.external.format != STREAM_FORMAT:
            groups.setdefault((f.external.format, f.external), []).append(table.storage.uri(f.path))
    frames = [_external_frame(spark, fmt, paths, ref, schema, table.columns) for (fmt, ref), paths in groups.items()]
    if carbon_ids or not frames:
        reader = spark.read.format("carbondata").schema(from_arrow_schema(schema, prefer_timestamp_ntz=False))
        if filter:
            reader = reader.option("filter", filter)
        frames.insert(0, reader.option("segments", ",".join(carbon_ids) or "-1").load(path) if carbon_ids
                      else spark.createDataFrame([], from_arrow_schema(schema, prefer_timestamp_ntz=False)))
    df = reduce(lambda a, b: a.unionByName(b), frames)
    if filter:
        df = df.where(filter)
    return df.select(*[f"`{n}`" for n in target.names])
