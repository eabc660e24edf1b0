"""DuckDB over carbon-ds: ``register(con, "t", path)`` makes ``t`` a name DuckDB queries through
``carbon_ds.scan``; every query starts a fresh scan.

DuckDB reads an Arrow stream object whole: it hands no projection or filter to it (it pushes both only into
``pyarrow.dataset`` objects). So give ``register`` the ``columns`` and ``filter`` a query needs to have them
pruned by carbon-ds (segments, files, blocklets, pages skipped by min/max); DuckDB applies the query's own
WHERE on top either way.

Needs the ``duckdb`` extra: ``pip install 'carbon-ds[duckdb]'``.
"""

from __future__ import annotations

import os
from typing import Any

from carbon_ds.table.read.scanner import Scan


class CarbonStream:
    """A re-readable Arrow stream of one table: each ``__arrow_c_stream__`` call plans and reads anew."""

    def __init__(self, path: str | os.PathLike, **scan_args: Any):
        self.path, self.scan_args = path, scan_args
        self.schema = Scan(path, **scan_args).schema  # checks columns and filter now, not at query time

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return Scan(self.path, **self.scan_args).__arrow_c_stream__(requested_schema)


def register(con, name: str, path: str | os.PathLike, columns: list[str] | None = None, filter: Any = None,
             segments: str | list | None = None, use_threads: bool = True):
    """Make ``name`` a relation of the DuckDB connection ``con`` that reads the table at ``path``."""
    stream = CarbonStream(path, columns=columns, filter=filter, segments=segments, use_threads=use_threads)
    con.register(name, stream)
    return con
