"""carbon-ds: Apache CarbonData tables from Python and Spark 4, with no JVM needed for the reader and writer.

Public API (see README):
    carbon_ds.register(spark)
    carbon_ds.read_table(path, columns=None, filter=None, segments=None) -> pyarrow.Table
    carbon_ds.scan(path, columns=None, filter=None, segments=None, limit=None, ...) -> Scan (streaming)
    carbon_ds.write_table(table, path, mode="append", **options)
    carbon_ds.write(df, path, mode="append", **options) (Spark; one task per HASH/RANGE/LIST partition)
    carbon_ds.CarbonTable.open(path) / CarbonTable.create(path, schema, ...)
"""

from __future__ import annotations

from importlib import import_module
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
    "register": "carbon_ds.spark.front_door",
    "read": "carbon_ds.spark.session",
    "write": "carbon_ds.spark.dataframe_write",
    "explain": "carbon_ds.api",
    "read_table": "carbon_ds.api",
    "scan": "carbon_ds.api",
    "write_table": "carbon_ds.api",
    "set_timestamp_keys": "carbon_ds.api",
    "CarbonTable": "carbon_ds.table.table",
    "HashPartition": "carbon_ds.table.table",
    "RangePartition": "carbon_ds.table.table",
    "ListPartition": "carbon_ds.table.table",
    "sql": "carbon_ds.spark.front_door",
    "optimize": "carbon_ds.spark.query",
    "configure_spark": "carbon_ds.spark.front_door",
    "SqlExpr": "carbon_ds.expressions.values",
    "CarbonDataFile": "carbon_ds.readers.carbon_file",
    "CarbonWriter": "carbon_ds.writers.carbon_file_writer",
    "WriterOptions": "carbon_ds.writers.carbon_file_writer",
}

# optional dependency -> the extra that installs it
_EXTRAS = {"pyspark": "spark", "pandas": "spark", "polars": "polars", "duckdb": "duckdb"}

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
