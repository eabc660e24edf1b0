"""Spark entry points: ``register(spark)`` and ``read(spark, path, columns, filter)``."""

from __future__ import annotations

import os
import warnings
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pyspark
from pyspark.sql.pandas.types import from_arrow_schema

from carbon_ds.errors import CarbonOptionError
from carbon_ds.fs import resolve
from carbon_ds.names import FILTER_OPTION, SEGMENTS_OPTION, SOURCE
from carbon_ds.spark.bridge import native_read
from carbon_ds.spark.bridge.extension import extension_active, extension_rules_on
from carbon_ds.spark.local import local_frame
from carbon_ds.spark.source.datasource import CarbonDataSource, CarbonPushdownDataSource
from carbon_ds.spark.source.partition_values import known_values, values_frame
from carbon_ds.spark.source.read_options import PUSHDOWN_CONF, STORAGE_PREFIX, pushdown_is_safe
from carbon_ds.spark.workers import check_workers
from carbon_ds.table.meta.handle import resolve_columns
from carbon_ds.table.read.pruning import as_expr
from carbon_ds.table.read.snapshot import open_source


def register(spark: Any) -> None:
    """Register the ``carbondata`` data source in ``spark`` (a SparkSession); calling it again is a no-op.

    Any session of a SparkContext may be registered, in any order (``spark.newSession()`` too): Spark
    refuses a name that resolves through the JVM's *active* session, so the registration runs with
    ``spark`` made active. On a local master the workers' Python is checked first (carbon_ds.spark.workers).

    Spark's pushed filters drive pruning only on a PySpark where that is safe (``pushdown_is_safe``: no
    release yet); there this also turns ``spark.sql.python.filterPushdown.enabled`` on, which such a reader
    needs. Everywhere else the registered reader does not implement pushFilters, so it works whatever that
    setting is, and the ``filter`` option is the way to prune.

    A classic session started without the carbon-ds extension gets one warning per process saying what it
    misses (``WITHOUT_EXTENSION``): the extension's rules cannot be attached to a running session.
    """
    if spark in _registered:
        return
    check_workers(spark)
    if pushdown_is_safe(pyspark.__version__):
        spark.conf.set(PUSHDOWN_CONF, "true")
        source: type = CarbonPushdownDataSource
    else:
        source = CarbonDataSource
    with _active(spark):
        spark.dataSource.register(source)
    _registered.add(spark)
    warn_without_extension(spark)


def optimize(df: Any) -> Any:
    """``df`` itself: kept for code written before the extension planned every query. In a session started
    through ``carbon_ds.configure_spark`` the extension's rules give each carbondata relation of ``df``
    only the columns and rows it needs whenever ``df`` runs; a session without them reads every column of
    every row (``register`` warns once), and ``carbon_ds.read(spark, path, columns, filter)`` is the way to
    read less there.

    Example:
        >>> df = spark.read.format("carbondata").load(path).where("speed > 100").select("vin")
        >>> carbon_ds.optimize(df) is df
        True
    """
    return df


# What a classic session started without the extension misses, said once per process. Spark's only hook for
# optimizer rules in a running session (spark.experimental.extraOptimizations) runs after scan push-down,
# where the relations the rules replace are scans already: the rules cannot be attached later.
WITHOUT_EXTENSION = (
    "carbon_ds: this Spark session was started without the carbon-ds extension, which cannot be attached to a "
    "running session; it misses: pruning of queries over carbondata (spark.sql, DataFrames, carbon_ds.sql and "
    "carbon_ds.optimize read every column of every row), join sizes, one planning call per query, counts and "
    "partition values from metadata, Spark's own scans of mixed tables' added segments, and catalog tables "
    "with STORED AS carbondata. carbon_ds.read(spark, path, columns, filter) still reads only what it is "
    "given. Start the session through carbon_ds.configure_spark(SparkSession.builder) to have them all")
_warned_without_extension = False


def warn_without_extension(spark: Any) -> bool:
    """Warn once (per process) that a classic session lacks the extension; True when this call warned."""
    global _warned_without_extension
    if _warned_without_extension or getattr(spark, "_jsparkSession", None) is None or extension_active(spark):
        return False  # Spark Connect: the server's own settings decide
    _warned_without_extension = True
    warnings.warn(WITHOUT_EXTENSION, stacklevel=3)
    return True


# sessions registered in this process (weak: a stopped session's entry goes with it)
_registered: weakref.WeakSet = weakref.WeakSet()


@contextmanager
def _active(spark: Any) -> Iterator[None]:
    """``spark`` as the JVM's active session for the block, the previous one restored after.

    Spark's DataSourceRegistration refuses (DATA_SOURCE_ALREADY_EXISTS) a name that is unknown to the
    registering session but that ``DataSource.lookupDataSource`` finds, and that lookup asks the *active*
    session: the first session registered hides the name from every later one (``newSession()``).
    """
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:  # Spark Connect: the server keeps its sessions apart
        yield
        return
    owner = spark._jvm.org.apache.spark.sql.classic.SparkSession
    before = owner.getActiveSession()
    owner.setActiveSession(jsession)
    try:
        yield
    finally:
        if before.isDefined():
            owner.setActiveSession(before.get())
        else:
            owner.clearActiveSession()


def read(spark: Any, path: str | os.PathLike, columns: list[str] | None = None, filter: str | None = None,
         segments: str | list | None = None, native: bool | None = None,
         storage_options: dict[str, Any] | None = None) -> Any:
    """A Spark DataFrame of ``columns`` of the table at ``path``, holding only rows where ``filter`` is TRUE.

    The projection becomes the relation's schema and the filter its ``filter`` option, so Spark's Python
    workers decode only those columns of the blocklets and pages that can match (the fastest way in). A
    read that touches at most ``carbon_ds.sql.localRelationBytes`` stored bytes (default 4 MiB; 0: never)
    and 100,000 rows is done on the driver and returned as a local relation (carbon_ds.spark.local). A read
    of a HASH / RANGE / LIST table's partition column alone, where every file holds one value of it, comes
    from the index files' row counts, no data page read (conf ``carbon_ds.read.partitionValues``, default
    true; docs/partitions.md).

    Args:
        columns: the columns to read (any case); None reads all.
        filter: a SQL predicate (see docs/pruning.md); it prunes and filters exactly.
        segments: read only these segments ("0,2").
        native: read external (Parquet/ORC/CSV/JSON) segments with Spark's own file scans, unioned with
            the data source's read of the carbondata segments (carbon_ds.spark.bridge.native_read). None (the
            default) follows the Spark conf ``carbon_ds.spark.nativeExternal`` (default true).
        storage_options: the store's settings (as for carbon_ds.read_table); they reach Spark's Python
            workers as the options ``storage.<name>``.

    Example:
        >>> df = carbon_ds.read(spark, path, columns=["vin", "speed"], filter="speed > 100")
        >>> df.columns
        ['vin', 'speed']
        >>> df.count() == carbon_ds.read_table(path, filter="speed > 100").num_rows
        True
    """
    text = resolve(os.fspath(path), storage_options)
    source = open_source(text, segments)
    names = resolve_columns(source.schema, columns, source.uri)
    if filter is not None and not isinstance(filter, str):
        raise CarbonOptionError(f"read(): filter must be SQL text for Spark, found {type(filter).__name__}")
    if filter:
        as_expr(filter, source.schema, source.uri)  # fail here, on the driver, with the parser's message
    register(spark)
    storage = {STORAGE_PREFIX + k: str(v) for k, v in (storage_options or {}).items()}
    schema = pa.schema([source.schema.field(n) for n in names]) if names is not None else source.schema
    spark_schema = from_arrow_schema(schema, prefer_timestamp_ntz=False)
    segment_text = None if segments is None else segments if isinstance(segments, str) else ",".join(map(str, segments))
    # the partition column alone, every file holding one value of it: rows from metadata (partition_values.py);
    # the extension makes them when the query runs (and answers a count by that value with the counts alone)
    known = known_values(spark, source, names, filter or None, spark_schema)
    if known is not None and not extension_rules_on(spark):
        return values_frame(spark, known, spark_schema)
    # a small pruned read (a point lookup on a sort column) is done here: no Python worker (spark/local.py)
    local = None
    if not native and known is None:
        local = local_frame(spark, text, spark_schema.jsonValue()["fields"], list(schema.names), filter or None,
                            segment_text, from_arrow_schema(source.schema, prefer_timestamp_ntz=False).jsonValue()["fields"])
    if local is not None:
        return local
    if source.external and source.table is not None and native_read.native_enabled(spark, native):
        # Spark's own scans of the Parquet/ORC/CSV/JSON segments, unioned with the carbondata ones
        # (see docs/segments.md "Adding external data")
        df = native_read.read(spark, text, source.table, names, filter, source.data_files, storage)
        if df is not None:
            return df
    reader = spark.read.format(SOURCE)
    if names is not None:
        reader = reader.schema(spark_schema)
    if filter:
        reader = reader.option(FILTER_OPTION, filter)
    if segment_text is not None:
        reader = reader.option(SEGMENTS_OPTION, segment_text)
    for key, value in storage.items():
        reader = reader.option(key, value)
    return reader.load(text)
