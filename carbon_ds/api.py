"""The no-Spark entry points (read_table, write_table) and Spark registration."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from carbon_ds.errors import CarbonOptionError
from carbon_ds.table import commit
from carbon_ds.table.conform import check_schema
from carbon_ds.table.options import normalize, parse_write, split_list
from carbon_ds.table.table import CarbonTable, resolve_columns

MODES = ("append", "overwrite")


def register(spark: Any) -> None:
    """Register the ``carbondata`` data source in ``spark`` (a SparkSession).

    Spark's pushed filters drive pruning only on a PySpark where that is safe (``pushdown_is_safe``: no
    release yet); there this also turns ``spark.sql.python.filterPushdown.enabled`` on, which such a reader
    needs. Everywhere else the registered reader does not implement pushFilters, so it works whatever that
    setting is, and the ``filter`` option is the way to prune.
    """
    import pyspark

    from carbon_ds.datasource import (
        PUSHDOWN_CONF,
        CarbonDataSource,
        CarbonPushdownDataSource,
        pushdown_is_safe,
    )

    if pushdown_is_safe(pyspark.__version__):
        spark.conf.set(PUSHDOWN_CONF, "true")
        spark.dataSource.register(CarbonPushdownDataSource)
    else:
        spark.dataSource.register(CarbonDataSource)


def apply_filter(data: pa.Table, filter: str | None, columns: list[str] | None) -> pa.Table:
    """Keep the rows where the SQL predicate ``filter`` is true, then project ``columns``."""
    if filter is not None and filter.strip():
        from carbon_ds.expressions import bind, filter_table, parse

        data = filter_table(data, bind(parse(filter), data.schema))
    return data.select(columns) if columns is not None else data


def read_table(
    path: str | os.PathLike,
    columns: list[str] | None = None,
    filter: str | None = None,
    segments: str | list | None = None,
) -> pa.Table:
    """Read a CarbonData table folder (with ``Metadata/schema``) or a bare folder of .carbondata files.

    ``filter`` is a SQL predicate ("a > 1 AND b = 'x'"), an expression from carbon_ds.expressions, or
    (column, op, value) tuples. Segments, files, blocklets and pages whose min/max rule it out are never
    read; the remaining rows are filtered exactly, so the result is exactly the matching rows.
    """
    if filter is not None and not (isinstance(filter, str) and not filter.strip()):
        from carbon_ds.table.scan import read

        return read(path, columns, filter, segments)
    if CarbonTable.exists(path):
        table = CarbonTable.open(path)
        names = resolve_columns(table.schema, columns, f"table {table.uri}")
        if filter is None:
            return table.to_arrow(names, segments)
        return apply_filter(table.to_arrow(None, segments), filter, names)
    if segments is not None:
        raise CarbonOptionError(f"segments={segments!r} given, but {os.fspath(path)} has no Metadata/tablestatus")
    from carbon_ds.readers.carbondata import read_folder

    if filter is None:
        return read_folder(os.fspath(path), columns=columns)
    data = read_folder(os.fspath(path))
    return apply_filter(data, filter, resolve_columns(data.schema, columns, f"folder {os.fspath(path)}"))


def explain(path: str | os.PathLike, filter: Any = None, segments: str | list | None = None) -> dict:
    """Segments, files, blocklets, pages and rows a filtered read would read and skip (reads no data page)."""
    from carbon_ds.table.scan import explain as _explain

    return _explain(path, filter, segments)


def read(spark: Any, path: str | os.PathLike, columns: list[str] | None = None, filter: str | None = None,
         segments: str | list | None = None, native: bool | None = None) -> Any:
    """A Spark DataFrame of ``columns`` of the table at ``path``, holding only rows where ``filter`` is TRUE.

    The projection becomes the relation's schema and the filter its ``filter`` option, so Spark's Python
    workers decode only those columns of the blocklets and pages that can match (the fastest way in).
    """
    from pyspark.sql.pandas.types import from_arrow_schema

    from carbon_ds.table.scan import open_source

    text = os.fspath(path)
    source = open_source(text, segments)
    names = resolve_columns(source.schema, columns, source.uri)
    if filter is not None and not isinstance(filter, str):
        raise CarbonOptionError(f"read(): filter must be SQL text for Spark, found {type(filter).__name__}")
    if filter:
        from carbon_ds.table.pruning import as_expr

        as_expr(filter, source.schema)  # fail here, on the driver, with the parser's message
    if native and source.external:
        # Spark's own scans of the Parquet/ORC/CSV/JSON segments, unioned with the carbondata ones
        # (carbon_ds.readers.spark_native); off by default, see docs/segments.md "Adding external data"
        from carbon_ds.readers import spark_native

        return spark_native.read(spark, text, source.table, names, filter, segments)
    reader = spark.read.format("carbondata")
    if names is not None:
        schema = pa.schema([source.schema.field(n) for n in names])
        reader = reader.schema(from_arrow_schema(schema, prefer_timestamp_ntz=False))
    if filter:
        reader = reader.option("filter", filter)
    if segments is not None:
        reader = reader.option("segments", segments if isinstance(segments, str) else ",".join(map(str, segments)))
    return reader.load(text)


def _as_reader(data: Any) -> tuple[pa.Schema, Iterable[pa.RecordBatch | pa.Table]]:
    if isinstance(data, pa.Table | pa.RecordBatch):
        return data.schema, [data]
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, data
    if hasattr(data, "__arrow_c_stream__"):
        reader = pa.RecordBatchReader.from_stream(data)
        return reader.schema, reader
    raise CarbonOptionError(
        f"write_table needs a pyarrow Table, RecordBatch or RecordBatchReader, found {type(data).__name__}"
    )


def prepare_table(path: str | os.PathLike, schema: pa.Schema, options: dict[str, Any]):
    """Open the table at ``path`` (creating it from ``schema`` when absent) and validate a load into it."""
    load = parse_write(options)
    table, created = CarbonTable.open_or_create(
        path,
        schema,
        sort_columns=load.sort_columns,
        properties=load.table_properties(),
        long_string_columns=load.long_string_columns,
        partition_by=load.partition_by,
    )
    if not created:
        for key, current in (("sort_columns", table.sort_columns), ("long_string_columns", _longs(table)),
                             ("partition_by", table.partition_columns)):
            given = getattr(load, key)
            if given is not None and [c.lower() for c in given] != [c.lower() for c in current]:
                raise CarbonOptionError(
                    f"option {key}={','.join(given)!r} differs from table {table.uri}'s "
                    f"{key}={','.join(current)!r}; table settings are fixed when the table is created"
                )
    if load.partition:
        # A static partition's columns may be absent from the data: they come from the spec.
        given = {c.lower() for c in load.partition}
        schema = pa.schema([f for f in schema if f.name.lower() not in given] +
                           [table.schema.field(c) for c in table.partition_columns if c.lower() in given])
    check_schema(table.schema, schema, f"table {table.uri}")
    return table, load


def _longs(table: CarbonTable) -> list[str]:
    return split_list(table.properties.get("long_string_columns"))


def write_table(data: Any, path: str | os.PathLike, mode: str = "append", **options: Any) -> str:
    """Append ``data`` to the table at ``path`` as one new segment (creating the table on first write),
    or replace the table's rows with ``mode="overwrite"``. Returns the new segment id."""
    if mode not in MODES:
        raise CarbonOptionError(f"mode must be one of {', '.join(MODES)}, found {mode!r}")
    normalize(options)
    schema, batches = _as_reader(data)
    table, load = prepare_table(path, schema, options)
    lock = None
    if mode == "overwrite":
        from carbon_ds.table.dml import update_lock

        # serialised with UPDATE/DELETE: their deltas must never be based on rows an overwrite replaces
        lock = update_lock(table, "INSERT OVERWRITE" + (" PARTITION" if load.partition else ""))
    try:
        reservation = commit.reserve(table, overwrite=mode == "overwrite", partition=load.partition,
                                     dynamic=mode == "overwrite" and load.partition_overwrite_mode == "dynamic")
        try:
            result = commit.write_task(table, reservation, 0, batches, load)
            commit.commit(table, reservation, [result])
        except BaseException:
            commit.abort(table, reservation)
            raise
    finally:
        if lock is not None:
            lock.release()
    return reservation.segment_id
