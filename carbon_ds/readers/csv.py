"""CSV files of external segments (pyarrow.csv). No statistics: a file is one unit, read whole and then
filtered exactly.

Options (ADD SEGMENT options, kept in the segment file; Spark's names and CarbonData's both accepted):
``header`` (default true; false = columns in table order), ``delimiter``/``sep`` (default ``,``),
``quote``/``quotechar`` (default ``"``), ``escape``/``escapechar`` (default none), ``dateformat``,
``timestampformat`` (Java patterns such as ``yyyy-MM-dd HH:mm:ss`` or strptime ones; default ISO 8601),
``multiline`` (quoted values may span lines), ``nullvalue``.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from carbon_ds.errors import CarbonOptionError
from carbon_ds.fs import Storage
from carbon_ds.readers.external import ExternalFile, Unit

_JAVA = [("yyyy", "%Y"), ("yy", "%y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"), ("mm", "%M"), ("ss", "%S")]


def strptime_pattern(pattern: str | None) -> str | None:
    """A Java/Spark date pattern as a strptime one (patterns with '%' are taken as strptime already)."""
    if not pattern:
        return None
    if "%" in pattern:
        return pattern
    out = pattern
    for java, c in _JAVA:
        out = out.replace(java, c)
    if any(ch.isalpha() and out[i - 1:i] != "%" for i, ch in enumerate(out)):
        raise CarbonOptionError(f"date/timestamp format {pattern!r} uses letters other than yyyy MM dd HH mm ss")
    return out


def option(options: dict[str, str], *names: str, default: str | None = None) -> str | None:
    for n in names:
        if n in options and options[n] is not None:
            return options[n]
    return default


def is_true(value: str | None, default: bool) -> bool:
    return default if value is None else value.strip().lower() in ("true", "1", "yes")


def text_types(table_schema: pa.Schema | None) -> dict[str, pa.DataType]:
    """Lower-cased table column -> type to parse text as (temporal columns stay strings: see parse_temporal)."""
    out = {}
    for f in table_schema or []:
        t = f.type
        out[f.name.lower()] = pa.string() if pa.types.is_timestamp(t) or pa.types.is_date(t) else t
    return out


def parse_temporal(data: pa.Table, table_schema: pa.Schema | None, options: dict[str, str]) -> pa.Table:
    """Date and timestamp columns of text files, parsed with the given formats (ISO 8601 without one)."""
    if table_schema is None:
        return data
    want = {f.name.lower(): f.type for f in table_schema}
    date_fmt = strptime_pattern(option(options, "dateformat", "date_format"))
    ts_fmt = strptime_pattern(option(options, "timestampformat", "timestamp_format"))
    for i, name in enumerate(data.schema.names):
        t = want.get(name.lower())
        col = data.column(i)
        if t is None or not (pa.types.is_timestamp(t) or pa.types.is_date(t)) or not (
            pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
        ):
            continue
        fmt = date_fmt if pa.types.is_date(t) else ts_fmt
        if fmt:
            parsed = pc.strptime(col, format=fmt, unit="us", error_is_null=False)
            parsed = parsed.cast(pa.timestamp("us", "UTC"))
        else:
            # ISO 8601; a value without an offset is UTC (text files carry no zone of their own)
            parsed = col.cast(pa.timestamp("us")).cast(pa.timestamp("us", "UTC")) if pa.types.is_timestamp(t) \
                else col.cast(pa.date32())
        parsed = parsed.cast(pa.date32()) if pa.types.is_date(t) and pa.types.is_timestamp(parsed.type) else parsed
        data = data.set_column(i, name, parsed)
    return data


def open_file(storage: Storage, path: str, options: dict[str, str], table_schema: pa.Schema | None) -> ExternalFile:
    header = is_true(option(options, "header", "fileheader_present"), True)
    delimiter = option(options, "delimiter", "sep", default=",")
    quote = option(options, "quote", "quotechar", default='"')
    escape = option(options, "escape", "escapechar")
    null_value = option(options, "nullvalue")
    if len(delimiter) != 1 or (quote and len(quote) != 1) or (escape and len(escape) != 1):
        raise CarbonOptionError(
            f"csv options delimiter/quote/escape must be single characters, found {delimiter!r}/{quote!r}/{escape!r}"
        )
    parse = pcsv.ParseOptions(
        delimiter=delimiter, quote_char=quote or False, escape_char=escape or False,
        newlines_in_values=is_true(option(options, "multiline"), False),
    )
    names: list[str]
    if header:
        with storage.open(path) as fh:
            head = pcsv.open_csv(fh, read_options=pcsv.ReadOptions(block_size=1 << 20), parse_options=parse,
                                 convert_options=pcsv.ConvertOptions(column_types={}))
            names = list(head.schema.names)
        read_options = pcsv.ReadOptions()
    else:
        cols = [f.name for f in table_schema or []]
        names = cols
        read_options = pcsv.ReadOptions(column_names=cols)
    types = text_types(table_schema)
    column_types = {n: types[n.lower()] for n in names if n.lower() in types}
    nulls = {"strings_can_be_null": True}
    if null_value is not None:
        nulls["null_values"] = [null_value]
    convert = pcsv.ConvertOptions(column_types=column_types, **nulls)
    schema = pa.schema([pa.field(n, column_types.get(n, pa.string())) for n in names])
    if table_schema is not None:
        want = {f.name.lower(): f.type for f in table_schema}
        schema = pa.schema([pa.field(f.name, want.get(f.name.lower(), f.type)) for f in schema])

    def read(columns, units):
        from carbon_ds.readers.parquet import _file_columns

        cols = _file_columns(schema, columns)
        opts = pcsv.ConvertOptions(column_types=column_types, include_columns=cols, **nulls) if cols is not None \
            else convert
        with storage.open(path) as fh:
            data = pcsv.read_csv(fh, read_options=read_options, parse_options=parse, convert_options=opts)
        return parse_temporal(data, table_schema, options)

    return ExternalFile(path, schema, [Unit({}, None)], read)
