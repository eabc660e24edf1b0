"""Parquet files of external segments: row groups are the statistics units (pyarrow.parquet)."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.parquet as pq

from carbon_ds.expressions.might_match import ColumnStats
from carbon_ds.fs import Storage
from carbon_ds.readers.external.base import ExternalFile, Unit, file_columns


def stat_value(v, t: pa.DataType):
    """A statistic as the value the min/max visitor compares, or None when it cannot be trusted."""
    if v is None:
        return None
    if pa.types.is_floating(t):
        return None  # NaN is excluded from Parquet min/max; callers drop max, see unit_stats
    if isinstance(v, bytes):
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            try:
                return v.decode("utf-8")
            except UnicodeDecodeError:
                return None
        return None
    if isinstance(v, dt.datetime):
        return v if v.tzinfo is not None else v.replace(tzinfo=dt.UTC)
    if isinstance(v, bool | int | str | dt.date | decimal.Decimal):
        return v
    return None


def _float_min(v, t):
    if v is None or not pa.types.is_floating(t):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if f != f else f


def unit_stats(md: pq.FileMetaData, rg: int, schema: pa.Schema) -> dict[str, ColumnStats]:
    """Per top-level primitive column: min/max/null count of row group ``rg`` (floats: min only, since
    NaN sorts above every number in Spark but is left out of Parquet's max)."""
    out: dict[str, ColumnStats] = {}
    group = md.row_group(rg)
    names = set(schema.names)
    for i in range(group.num_columns):
        col = group.column(i)
        path = col.path_in_schema
        if path not in names:  # nested leaves: no statistics used
            continue
        t = schema.field(path).type
        st = col.statistics
        if st is None or not st.has_min_max:
            out[path.lower()] = ColumnStats(null_count=st.null_count if st is not None and st.has_null_count else None,
                                            row_count=group.num_rows)
            continue
        try:
            lo, hi = st.min, st.max
        except Exception:  # a logical type pyarrow cannot turn into Python: no statistic
            lo = hi = None
        if pa.types.is_floating(t):
            lo, hi = _float_min(lo, t), None
        else:
            lo, hi = stat_value(lo, t), stat_value(hi, t)
            if lo is None or hi is None:
                lo = hi = None
        out[path.lower()] = ColumnStats(min=lo, max=hi, null_count=st.null_count if st.has_null_count else None,
                                        row_count=group.num_rows)
    return out


def open_file(storage: Storage, path: str, options: dict[str, str], table_schema: pa.Schema | None) -> ExternalFile:
    f = pq.ParquetFile(storage.open(path))
    schema = f.schema_arrow
    md = f.metadata
    units = [Unit(unit_stats(md, i, schema), md.row_group(i).num_rows) for i in range(md.num_row_groups)]

    def read(columns, groups):
        cols = file_columns(schema, columns)
        with pq.ParquetFile(storage.open(path)) as pf:
            if groups is None:
                return pf.read(columns=cols)
            if not groups:
                return pa.schema([schema.field(c) for c in cols] if cols is not None else schema).empty_table()
            return pf.read_row_groups(list(groups), columns=cols)

    f.close()
    return ExternalFile(path, schema, units, read)


