"""The no-Spark entry points: read_table, write_table, explain."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from carbon_ds.errors import CarbonOptionError
from carbon_ds.expressions import bind, filter_table, parse
from carbon_ds.progress import row_progress
from carbon_ds.readers.carbondata import read_folder
from carbon_ds.table.meta.handle import TableHandle, resolve_columns
from carbon_ds.table.meta.options import WRITE_OPTIONS, normalize
from carbon_ds.table.ops.compaction import auto_compact
from carbon_ds.table.read import scan
from carbon_ds.table.write.prepare import prepare_table
from carbon_ds.table.write.protocol import start_load

MODES = ("append", "overwrite")


def apply_filter(data: pa.Table, filter: str | None, columns: list[str] | None) -> pa.Table:
    """Keep the rows where the SQL predicate ``filter`` is true, then project ``columns``."""
    if filter is not None and filter.strip():
        data = filter_table(data, bind(parse(filter), data.schema))
    return data.select(columns) if columns is not None else data


def read_table(
    path: str | os.PathLike,
    columns: list[str] | None = None,
    filter: Any = None,
    segments: str | list | None = None,
) -> pa.Table:
    """Read a CarbonData table folder (with ``Metadata/schema``) or a bare folder of .carbondata files.

    Args:
        path: a local path or a URI pyarrow.fs understands (``file://``, ``s3://``, ``hdfs://``).
        columns: the columns to read (any case), in the order wanted; None reads all.
        filter: a SQL predicate ("a > 1 AND b = 'x'"), an expression from carbon_ds.expressions, or
            (column, op, value) tuples. Segments, files, blocklets and pages whose min/max rule it out are
            never read; the remaining rows are filtered exactly.
        segments: read only these segments (``"0,2"`` or a list), like CarbonData's carbon.input.segments.

    Returns:
        a pyarrow.Table of exactly the matching rows.
    """
    if filter is not None and not (isinstance(filter, str) and not filter.strip()):
        return scan.read(path, columns, filter, segments)
    if TableHandle.exists(path):
        table = TableHandle.open(path)
        names = resolve_columns(table.schema, columns, f"table {table.uri}")
        return scan.table_rows(table, names, segments)
    if segments is not None:
        raise CarbonOptionError(f"segments={segments!r} given, but {os.fspath(path)} has no Metadata/tablestatus")
    _storage, _folder, files = scan.bare_files(path)
    if not files:
        raise scan.no_data_error(path)
    schema = scan.arrow_schema_of(path)
    return read_folder(os.fspath(path), columns=resolve_columns(schema, columns, f"folder {os.fspath(path)}"))


def explain(path: str | os.PathLike, filter: Any = None, segments: str | list | None = None) -> dict:
    """Segments, files, blocklets, pages and rows a filtered read would read and skip (reads no data page)."""
    return scan.explain(path, filter, segments)


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


def write_table(data: Any, path: str | os.PathLike, mode: str = "append", **options: Any) -> str:
    """Append ``data`` to the table at ``path`` as one new segment (creating the table on first write),
    or replace the table's rows with ``mode="overwrite"``.

    Args:
        data: a pyarrow Table, RecordBatch, RecordBatchReader, or anything with ``__arrow_c_stream__``
            (pandas through pyarrow, Polars, DuckDB results).
        path: the table folder (created on the first write).
        mode: "append" or "overwrite".
        **options: write options: sort_columns, partition_by, partition, compressor, table_blocksize,
            blocklet_size, local_dictionary_enable, local_dictionary_threshold, long_string_columns, ...
            (see README "Tables, segments and commits").

    Returns:
        the new segment id.
    """
    if mode not in MODES:
        raise CarbonOptionError(f"mode must be one of {', '.join(MODES)}, found {mode!r}")
    normalize(options, WRITE_OPTIONS, "write option")
    schema, batches = _as_reader(data)
    table, load = prepare_table(path, schema, options)
    overwrite = mode == "overwrite"
    lock = None
    if overwrite:
        # serialised with UPDATE/DELETE: their deltas must never be based on rows an overwrite replaces
        lock = table.update_lock("INSERT OVERWRITE" + (" PARTITION" if load.partition else ""))
    try:
        with start_load(table, load, overwrite=overwrite, partition=load.partition,
                        dynamic=overwrite and load.partition_overwrite_mode == "dynamic") as job:
            job.write(row_progress(batches, f"writing {os.fspath(path)}"))
    finally:
        if lock is not None:
            lock.release()
    auto_compact(table)  # MINOR compaction when the table property auto_load_merge is true
    return job.segment_id
