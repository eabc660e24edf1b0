"""Polars over carbon-ds: ``scan_carbondata(path)`` is a ``LazyFrame`` whose projections and ``n_rows`` go
into the scan (only the needed columns are decoded; reading stops after ``n_rows``). Polars' predicate is
applied to each batch as it streams in; to prune segments, files and blocklets by min/max, also give the
filter to ``scan_carbondata(path, filter=...)`` (SQL text, tuples or a pyarrow expression).

Needs the ``polars`` extra: ``pip install 'carbon-ds[polars]'``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from carbon_ds.errors import CarbonDependencyError
from carbon_ds.table.read.scanner import Scan


def _polars():
    try:
        import polars as pl  # optional dependency: imported on use
        from polars.io.plugins import register_io_source
    except ModuleNotFoundError as e:
        raise CarbonDependencyError(
            "carbon_ds.polars needs polars, which is not installed: pip install 'carbon-ds[polars]'") from e
    return pl, register_io_source


def scan_carbondata(path: str | os.PathLike, filter: Any = None, segments: str | list | None = None,
                    use_threads: bool = True):
    """A ``polars.LazyFrame`` reading the table (or bare folder) at ``path`` through ``carbon_ds.scan``."""
    pl, register_io_source = _polars()
    schema = Scan(path, filter=filter, segments=segments).schema
    polars_schema = pl.from_arrow(schema.empty_table()).schema

    def source(with_columns: list[str] | None, predicate, n_rows: int | None,
               batch_size: int | None) -> Iterator:
        s = Scan(path, columns=with_columns, filter=filter, segments=segments,
                 limit=n_rows if predicate is None else None, batch_size=batch_size, use_threads=use_threads)
        left = n_rows
        for batch in s.to_batches():
            df = pl.from_arrow(pa.Table.from_batches([batch], schema=s.schema))
            if predicate is not None:
                df = df.filter(predicate)
            if left is not None:
                df = df.head(left)
                left -= df.height
            yield df
            if left == 0:
                return

    return register_io_source(source, schema=polars_schema)
