"""ORC files of external segments: stripes are the statistics units.

pyarrow.orc reads the data; stripe statistics come from pyorc when it is installed (pyarrow exposes none),
otherwise every stripe is read (rows counted from the file's footer).
"""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.orc as po

from carbon_ds.expressions.might_match import ColumnStats
from carbon_ds.fs import Storage
from carbon_ds.readers.external.base import ExternalFile, Unit, file_columns


def _value(v, t: pa.DataType):
    if v is None or pa.types.is_boolean(t):
        return None
    if isinstance(v, dt.datetime):
        return v if v.tzinfo is not None else v.replace(tzinfo=dt.UTC)
    if isinstance(v, int | str | dt.date | decimal.Decimal):
        return v
    return None


def _stripe_units(storage: Storage, path: str, schema: pa.Schema) -> list[Unit] | None:
    try:
        import pyorc
    except ImportError:
        return None
    try:
        with storage.open(path) as fh:
            reader = pyorc.Reader(fh)
            fields = reader.schema.fields
            ids = {name: fields[name].column_id for name in fields}
            units = []
            for i in range(reader.num_of_stripes):
                stripe = reader.read_stripe(i)
                stats: dict[str, ColumnStats] = {}
                for name in schema.names:
                    t = schema.field(name).type
                    if name not in ids or pa.types.is_nested(t):
                        continue
                    s = stripe[ids[name]].statistics
                    nulls = 0 if s.get("has_null") is False else None
                    if pa.types.is_floating(t):
                        lo = s.get("minimum")
                        lo = None if lo is None or lo != lo else float(lo)
                        stats[name.lower()] = ColumnStats(min=lo, max=None, null_count=nulls, row_count=len(stripe))
                        continue
                    # ORC may truncate long string bounds: the lower/upper bounds are the safe ones
                    lo = _value(s.get("lower_bound", s.get("minimum")), t)
                    hi = _value(s.get("upper_bound", s.get("maximum")), t)
                    if lo is None or hi is None:
                        lo = hi = None
                    stats[name.lower()] = ColumnStats(min=lo, max=hi, null_count=nulls, row_count=len(stripe))
                units.append(Unit(stats, len(stripe)))
            return units
    except Exception:  # statistics only ever help pruning: on any doubt read every stripe
        return None


def open_file(storage: Storage, path: str, options: dict[str, str], table_schema: pa.Schema | None) -> ExternalFile:
    with storage.open(path) as fh:
        f = po.ORCFile(fh)
        schema = f.schema
        nstripes = f.nstripes
        nrows = f.nrows
    units = _stripe_units(storage, path, schema)
    per_stripe = True
    if units is None or len(units) != nstripes:
        units = [Unit({}, nrows)]  # one unit: the whole file
        per_stripe = False

    def read(columns, stripes):

        cols = file_columns(schema, columns)
        with storage.open(path) as fh:
            orc = po.ORCFile(fh)
            if stripes is None or not per_stripe:
                return orc.read(columns=cols)
            if not stripes:
                return pa.schema([schema.field(c) for c in cols] if cols is not None else schema).empty_table()
            return pa.Table.from_batches([orc.read_stripe(i, columns=cols) for i in stripes])

    return ExternalFile(path, schema, units, read)
