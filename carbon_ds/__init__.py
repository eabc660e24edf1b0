"""carbon-ds: Apache CarbonData tables from Python and Spark 4, with no JVM needed for the reader and writer.

Tables from Python (pyarrow; no Spark, no JVM):
    read_table(path, columns=None, filter=None, segments=None) -> pyarrow.Table
    scan(path, columns=None, filter=None, segments=None, limit=None, ...) -> Scan (record batches, streaming)
    write_table(data, path, mode="append", **options) -> the new segment's id
    explain(path, filter=None, segments=None) -> what a filtered read reads and skips
    CarbonTable.open(path) / CarbonTable.create(path, schema, ...): segments, DML, MERGE, compaction, ...
    HashPartition / RangePartition / ListPartition: partition specs for CarbonTable.create
    SqlExpr: a SQL expression as an UPDATE / MERGE value
    set_timestamp_keys(granularity="SECOND", cutoff=None): direct-dictionary timestamp settings
    CarbonDataFile(path): one .carbondata file's metadata and columns
    CarbonWriter(folder, schema) / WriterOptions: bare .carbondata files, as CarbonData's SDK writes

Spark 4 (pip install 'carbon-ds[spark]'):
    configure_spark(SparkSession.builder) -> the builder with the carbon-ds extension (spark.sql runs DDL/DML)
    register(spark): the ``carbondata`` data source (and CarbonData's statements) in a session
    sql(spark, text) -> DataFrame: CarbonData's statements (CREATE TABLE ... STORED AS carbondata, DML, ...)
    read(spark, path, columns=None, filter=None, segments=None) -> DataFrame, pruned before Spark sees it
    write(df, path, mode="append", **options): one task per HASH/RANGE/LIST partition
    optimize(df) -> an equivalent DataFrame that reads only the columns and rows ``df`` needs

Errors: CarbonError and its subclasses (CarbonFormatError, CarbonSchemaError, CarbonOptionError,
CarbonFilterError, CarbonTableError, CarbonConcurrentError, CarbonDependencyError).

Each name's own docstring (``help(carbon_ds.read_table)``) gives its arguments and an example. The guides
and the reference are the pages of docs/ (start at docs/getting-started.md), also built into a site with
search by ``bash scripts/docs.sh``.
"""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec
from typing import Any

from carbon_ds.errors import (
    CarbonConcurrentError,
    CarbonDependencyError,
    CarbonError,
    CarbonFilterError,
    CarbonFormatError,
    CarbonOptionError,
    CarbonSchemaError,
    CarbonTableError,
)

__version__ = "0.1.0"

# Imported on first use so that `import carbon_ds` stays cheap and never pulls in pyspark.
_LAZY = {
    "register": "carbon_ds.spark.statements.front_door",
    "read": "carbon_ds.spark.session",
    "write": "carbon_ds.spark.writes.dataframe_write",
    "explain": "carbon_ds.api",
    "read_table": "carbon_ds.api",
    "scan": "carbon_ds.api",
    "write_table": "carbon_ds.api",
    "set_timestamp_keys": "carbon_ds.api",
    "CarbonTable": "carbon_ds.table.table",
    "HashPartition": "carbon_ds.table.table",
    "RangePartition": "carbon_ds.table.table",
    "ListPartition": "carbon_ds.table.table",
    "sql": "carbon_ds.spark.statements.front_door",
    "optimize": "carbon_ds.spark.session",
    "configure_spark": "carbon_ds.spark.statements.front_door",
    "SqlExpr": "carbon_ds.expressions.values",
    "CarbonDataFile": "carbon_ds.readers.carbon_file",
    "CarbonWriter": "carbon_ds.writers.carbon_file_writer",
    "WriterOptions": "carbon_ds.writers.carbon_file_writer",
}

# optional dependency -> the extra that installs it
_EXTRAS = {"pyspark": "spark", "pandas": "spark", "polars": "polars", "duckdb": "duckdb"}
# lazy modules under this prefix need the "spark" extra's packages
_SPARK_PREFIX = "carbon_ds.spark."

__all__ = [
    "CarbonConcurrentError",
    "CarbonDependencyError",
    "CarbonError",
    "CarbonFilterError",
    "CarbonFormatError",
    "CarbonOptionError",
    "CarbonSchemaError",
    "CarbonTableError",
    "__version__",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'carbon_ds' has no attribute {name!r}")
    try:
        value = getattr(import_module(module), name)
    except ModuleNotFoundError as e:
        extra = _EXTRAS.get((e.name or "").split(".")[0])
        if extra is None:
            raise
        raise CarbonDependencyError(
            f"carbon_ds.{name} needs {e.name.split('.')[0]}, which is not installed: pip install 'carbon-ds[{extra}]'"
        ) from e
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    # The lazy names too, so that dir(), tab completion and help() show them. Without the spark extra its
    # names are left out: help() fetches every name dir() gives, and fetching those raises
    # CarbonDependencyError (the module docstring still lists them).
    spark_ready = all(find_spec(name) is not None for name in ("pyspark", "pandas"))
    lazy = [n for n, m in _LAZY.items() if spark_ready or not m.startswith(_SPARK_PREFIX)]
    return sorted({*globals(), *lazy})
