"""CSV files of external segments (pyarrow.csv). No statistics: a file is one unit, read whole and then
filtered exactly.

Options (ADD SEGMENT options, kept in the segment file; Spark's names and CarbonData's both accepted):
``header`` (default true; false = columns in table order), ``delimiter``/``sep`` (default ``,``),
``quote``/``quotechar`` (default ``"``), ``escape``/``escapechar`` (default none), ``dateformat``,
``timestampformat`` (Java patterns such as ``yyyy-MM-dd HH:mm:ss`` or strptime ones; default ISO 8601),
``multiline`` (quoted values may span lines), ``nullvalue``.
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from carbon_ds.errors import CarbonOptionError
from carbon_ds.fs import Storage
from carbon_ds.readers.external.base import ExternalFile, Unit, file_columns
from carbon_ds.readers.external.text import (
    BadTextValue,
    is_true,
    option,
    parse_temporal,
    text_types,
    value_error,
)


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

        cols = file_columns(schema, columns)
        opts = (pcsv.ConvertOptions(column_types=column_types, include_columns=cols, **nulls) if cols is not None
            else convert)
        try:
            with storage.open(path) as fh:
                data = pcsv.read_csv(fh, read_options=read_options, parse_options=parse, convert_options=opts)
            return parse_temporal(data, table_schema, options)
        except BadTextValue as e:
            raise value_error(storage, path, e.row, e.column, e.value, e.type, e.fmt, skip=1 if header else 0) from None
        except pa.ArrowInvalid as e:
            m = _CONVERSION.search(str(e))
            if m is None or int(m.group(1)) >= len(names):
                raise
            # which row: the column read as text (with the same null values), then the value pyarrow named
            name = names[int(m.group(1))]
            with storage.open(path) as fh:
                text = pcsv.read_csv(fh, read_options=read_options, parse_options=parse, convert_options=pcsv.ConvertOptions(
                    column_types={name: pa.string()}, include_columns=[name], **nulls)).column(0)
            hits = pc.index(text, pa.scalar(m.group(3), pa.string())).as_py()
            row = None if hits < 0 else hits
            raise value_error(storage, path, row, name, m.group(3), column_types[name], None, skip=1 if header else 0) from None

    return ExternalFile(path, schema, [Unit({}, None)], read)


# pyarrow.csv's conversion error: "In CSV column #0: CSV conversion error to int32: invalid value 'x'"
_CONVERSION = re.compile(r"In CSV column #(\d+): CSV conversion error to ([^:]+): invalid value '(.*)'$", re.S)
