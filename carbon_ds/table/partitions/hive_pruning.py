"""Pruning a table's files by the values in their Hive partition folder names, before any file opens."""

from __future__ import annotations

import posixpath

import pyarrow as pa

from carbon_ds.expressions import AlwaysTrue, might_match
from carbon_ds.expressions.might_match import ColumnStats
from carbon_ds.format.hive import folder_values, typed_value
from carbon_ds.fs import norm_path


def partition_stats(values: dict[str, str | None], schema: pa.Schema):

    stats = {}
    by_lower = {f.name.lower(): f for f in schema}
    for col, text in values.items():
        f = by_lower.get(col)
        if f is None:
            continue
        if text is None:
            # Hive's default folder holds nulls, but a string column's '' and the literal
            # __HIVE_DEFAULT_PARTITION__ land there too (the data files keep the real values): only a
            # non-string column's default folder is known to hold nulls alone
            if not (pa.types.is_string(f.type) or pa.types.is_large_string(f.type)):
                stats[col] = ColumnStats(min=None, max=None, null_count=1, row_count=1)
            continue
        v = typed_value(text, f.type)
        if v is not None and not pa.types.is_timestamp(f.type):
            stats[col] = ColumnStats(min=v, max=v, null_count=0, row_count=None)
    return stats


def prune_files(table_path: str, schema: pa.Schema, files: list[tuple[str, str | None]], expr) -> list[tuple[str, str | None]]:
    """Drop files whose partition folder values rule ``expr`` out (no file is opened)."""
    if isinstance(expr, AlwaysTrue):
        return files
    out = []
    cache: dict[str, bool] = {}
    for path, seg in files:
        folder = posixpath.dirname(norm_path(path))
        keep = cache.get(folder)
        if keep is None:
            values = folder_values(table_path, path)
            if not values:
                keep = True
            else:
                stats = partition_stats(values, schema)
                keep = bool(might_match(expr, lambda name, s=stats: s.get(name.lower())))
            cache[folder] = keep
        if keep:
            out.append((path, seg))
    return out
