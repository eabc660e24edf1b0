"""Readers of the files of added (external) segments: one module per format, behind one registry.

``open_reader(storage, path, fmt, options, table_schema)`` opens a file with its format's module; every
format module imports only ``base`` (and ``text``), never this registry.
"""

from __future__ import annotations

from types import ModuleType

import pyarrow as pa

from carbon_ds.errors import CarbonOptionError
from carbon_ds.fs import Storage
from carbon_ds.readers.external import csv, json, orc, parquet, row_v1
from carbon_ds.readers.external.base import (
    EXTERNAL_FORMATS,
    ExternalFile,
    ExternalRef,
    canonical_format,
    check_type,
    partition_scalar,
    schema_problems,
    to_table_schema,
)

_REGISTRY: dict[str, ModuleType] = {"parquet": parquet, "orc": orc, "csv": csv, "json": json, row_v1.FORMAT: row_v1}

__all__ = ["EXTERNAL_FORMATS", "ExternalFile", "ExternalRef", "canonical_format", "check_type", "open_reader",
           "partition_scalar", "schema_problems", "to_table_schema"]


def open_reader(storage: Storage, path: str, fmt: str, options: dict[str, str] | None = None,
                table_schema: pa.Schema | None = None) -> ExternalFile:
    """Open one external file; ``table_schema`` types the columns of text formats (CSV, JSON)."""
    # stream segments' row files are read here but are no format ADD SEGMENT accepts
    fmt = row_v1.FORMAT if fmt.lower() == row_v1.FORMAT else canonical_format(fmt)
    module = _REGISTRY.get(fmt)
    if module is None:
        raise CarbonOptionError(f"{fmt!r} files are read by the carbondata reader, not an external one")
    opts = {k.lower(): v for k, v in (options or {}).items()}
    return module.open_file(storage, path, opts, table_schema)
