"""The no-Spark entry points: read_table, scan, write_table, explain."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from carbon_ds.errors import CarbonOptionError
from carbon_ds.format.pages import direct_dictionary
from carbon_ds.fs import resolve
from carbon_ds.progress import rows_written
from carbon_ds.table.loads.prepare import prepare_table
from carbon_ds.table.loads.start import start_load
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.options import WRITE_OPTIONS, normalize
from carbon_ds.table.ops.schema_update import merge_columns
from carbon_ds.table.read import planned_reads as pruned
from carbon_ds.table.read.scan import Scan

MODES = ("append", "overwrite")




def read_table(
    path: str | os.PathLike,
    columns: list[str] | None = None,
    filter: Any = None,
    segments: str | list | None = None,
    *,
    storage_options: dict[str, Any] | None = None,
    filesystem: pafs.FileSystem | None = None,
    status_version: str | int | None = None,
) -> pa.Table:
    """Read a CarbonData table folder (with ``Metadata/schema``) or a bare folder of .carbondata files.

    Args:
        path: a local path or a URI pyarrow.fs understands (``file://``, ``s3://``, ``hdfs://``).
        columns: the columns to read (any case), in the order wanted; None reads all.
        filter: a SQL predicate ("a > 1 AND b = 'x'"), an expression from carbon_ds.expressions, or
            (column, op, value) tuples. Segments, files, blocklets and pages whose min/max rule it out are
            never read; the remaining rows are filtered exactly.
        segments: read only these segments (``"0,2"`` or a list), like CarbonData's carbon.input.segments.
        storage_options: settings of the store at ``path`` (S3: ``access_key``, ``secret_key``, ``region``,
            ``endpoint_url``, ...; HDFS: ``host``, ``port``, ``user``, ...), instead of environment variables.
        filesystem: a ``pyarrow.fs.FileSystem`` to use instead (``path`` may then be its own path).
        status_version: a table with CarbonData's versioned table status: read the segment list
            ``Metadata/tablestatus_<status_version>`` (by default the version the table names, else the newest).

    Returns:
        a pyarrow.Table of exactly the matching rows.

    Example:
        >>> tbl = carbon_ds.read_table(path, columns=["vin", "speed"], filter="speed > 100")
        >>> tbl.column_names
        ['vin', 'speed']
        >>> bool(pc.all(pc.greater(tbl["speed"], 100)).as_py())
        True
    """
    return Scan(_source(path, storage_options, filesystem, status_version), columns, filter, segments).to_arrow()


def _source(path: str | os.PathLike, storage_options: dict[str, Any] | None, filesystem: pafs.FileSystem | None,
            status_version: str | int | None) -> str | TableHandle:
    """What a scan opens: the resolved path, or the table opened at the named status version."""
    resolved = resolve(path, storage_options, filesystem)
    return resolved if status_version is None else TableHandle.open(resolved, status_version=status_version)


def scan(
    path: str | os.PathLike,
    columns: list[str] | None = None,
    filter: Any = None,
    segments: str | list | None = None,
    limit: int | None = None,
    batch_size: int | None = None,
    use_threads: bool = True,
    *,
    storage_options: dict[str, Any] | None = None,
    filesystem: pafs.FileSystem | None = None,
    status_version: str | int | None = None,
) -> Scan:
    """A lazy scan of a table or a bare folder: ``to_batches()`` streams one blocklet / row group at a time,
    ``to_reader()`` (also ``__arrow_c_stream__``), ``to_arrow()``, ``to_pandas()``, ``count()``,
    ``explain()`` and ``plan()`` (the file pieces left after pruning).

    Args are those of :func:`read_table`, and:
        filter: also a ``pyarrow.compute.Expression`` (``pc.field("a") > 1``, ``isin``, ``is_null``,
            ``&``, ``|``, ``~``).
        limit: stop after this many matching rows.
        batch_size: at most this many rows per record batch (None: 131,072, as pyarrow.dataset); a batch
            never spans two blocklets, so memory stays one blocklet's worth.
        use_threads: decode blocklets and files on a thread pool (results keep their order).

    Example:
        >>> s = carbon_ds.scan(path, columns=["vin", "speed"], filter=pc.field("speed") > 100)
        >>> rows = sum(batch.num_rows for batch in s.to_batches())   # one blocklet at a time
        >>> rows == s.count() == s.to_arrow().num_rows
        True
    """
    return Scan(_source(path, storage_options, filesystem, status_version), columns, filter, segments, limit,
                batch_size, use_threads)


def set_timestamp_keys(granularity: str = "SECOND", cutoff: str | int | None = None) -> None:
    """Read direct-dictionary TIMESTAMP columns (tables created through CarbonData's Spark SQL) of a table
    written under another ``carbon.timegranularity`` (SECOND, MINUTE, HOUR, DAY) or ``carbon.cutOffTimestamp``
    (``yyyy-MM-dd HH:mm:ss``, UTC unless it names an offset, or epoch milliseconds). Like CarbonData's
    carbon.properties, the setting holds for every file this process opens afterwards; the defaults are
    CarbonData's (SECOND, no cut-off). Spark reads take the read options ``timestamp_granularity`` and
    ``cutoff_timestamp`` instead.

    Example:
        >>> carbon_ds.set_timestamp_keys("MINUTE", cutoff="2020-01-01 00:00:00")  # the table's writer used these
        >>> carbon_ds.set_timestamp_keys()                                        # CarbonData's defaults again
    """
    direct_dictionary.use(direct_dictionary.TimestampKeys.from_options(
        {direct_dictionary.GRANULARITY_OPTION: granularity, direct_dictionary.CUTOFF_OPTION: cutoff}))


def explain(path: str | os.PathLike, filter: Any = None, segments: str | list | None = None, *,
            storage_options: dict[str, Any] | None = None, filesystem: pafs.FileSystem | None = None) -> dict:
    """Segments, files, blocklets, pages and rows a filtered read would read and skip (reads no data page);
    ``storage_options`` / ``filesystem`` as for :func:`read_table`.

    Example:
        >>> report = carbon_ds.explain(path, "vin = 'LSVAU2180N2005162'")
        >>> sorted(report["blocklets"])
        ['read', 'skipped', 'total']
    """
    return pruned.explain(resolve(path, storage_options, filesystem), filter, segments)


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


def write_table(data: Any, path: str | os.PathLike, mode: str = "append", schema_mode: str | None = None, *,
                storage_options: dict[str, Any] | None = None, filesystem: pafs.FileSystem | None = None,
                **options: Any) -> str:
    """Append ``data`` to the table at ``path`` as one new segment (creating the table on first write),
    or replace the table's rows with ``mode="overwrite"``.

    Args:
        data: a pyarrow Table, RecordBatch, RecordBatchReader, or anything with ``__arrow_c_stream__``
            (pandas through pyarrow, Polars, DuckDB results).
        path: the table folder (created on the first write).
        mode: "append" or "overwrite".
        schema_mode: "merge" adds the data's new columns to an existing table first (one schema change)
            and writes null for table columns the data lacks; None: the data must match the table.
        storage_options, filesystem: the store's settings, as for :func:`read_table`.
        **options: write options: sort_columns, partition_by, partition, compressor, table_blocksize,
            blocklet_size, local_dictionary_enable, local_dictionary_threshold, long_string_columns, ...
            (docs/options.md).

    Returns:
        the new segment id.

    Example:
        >>> carbon_ds.write_table(arrow_table, f"{tmp}/trips", sort_columns="vin,ts")   # creates the table
        '0'
        >>> carbon_ds.write_table(arrow_table, f"{tmp}/trips", mode="append")
        '1'
        >>> carbon_ds.CarbonTable.open(f"{tmp}/trips").count() == 2 * arrow_table.num_rows
        True
    """
    if mode not in MODES:
        raise CarbonOptionError(f"mode must be one of {', '.join(MODES)}, found {mode!r}")
    normalize(options, WRITE_OPTIONS, "write option")
    path = resolve(path, storage_options, filesystem)
    schema, batches = _as_reader(data)
    if schema_mode is not None:
        if schema_mode != "merge":
            raise CarbonOptionError(f"schema_mode must be 'merge' or None, found {schema_mode!r}")
        if TableHandle.exists(path):
            schema, batches = merge_columns(TableHandle.open(path), schema, batches, options.get("partition"))
    table, load = prepare_table(path, schema, options)
    overwrite = mode == "overwrite"
    with start_load(table, load, overwrite=overwrite, partition=load.partition,
                    dynamic=overwrite and load.partition_overwrite_mode == "dynamic") as job:
        total = data.num_rows if isinstance(data, pa.Table | pa.RecordBatch) else None
        with rows_written(f"writing {os.fspath(path)}", total):
            job.write(batches)
    return job.segment_id
