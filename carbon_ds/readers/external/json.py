"""JSON files of external segments: JSON Lines by default (pyarrow.json), or with ``multiline`` true one
JSON document per file (an array of objects, or one object) as Spark's ``multiLine`` reads it. No
statistics: a file is one unit, read whole and filtered exactly. ``dateformat``/``timestampformat`` as for
CSV (see carbon_ds.readers.external.csv)."""

from __future__ import annotations

import json as _json

import pyarrow as pa
import pyarrow.json as pjson

from carbon_ds.errors import CarbonFormatError
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


def _multiline_rows(storage: Storage, path: str) -> list[dict]:
    text = storage.read_text(path)
    if not text.strip():
        return []
    try:
        doc = _json.loads(text)
    except _json.JSONDecodeError as e:
        raise CarbonFormatError(f"not a JSON document: {e.msg} at char {e.pos}", storage.uri(path)) from None
    rows = doc if isinstance(doc, list) else [doc]
    if not all(isinstance(r, dict) for r in rows):
        raise CarbonFormatError("a multi-line JSON file must hold an object or an array of objects", storage.uri(path))
    return rows


def open_file(storage: Storage, path: str, options: dict[str, str], table_schema: pa.Schema | None) -> ExternalFile:
    multiline = is_true(option(options, "multiline"), False)
    types = text_types(table_schema)
    if multiline:
        rows = _multiline_rows(storage, path)
        names = list(dict.fromkeys(k for r in rows for k in r))
    else:
        with storage.open(path) as fh:
            inferred = pjson.read_json(fh) if storage.size(path) else pa.table({})
        names = list(inferred.schema.names)
    file_types = {n: types.get(n.lower(), pa.string()) for n in names}
    want = {f.name.lower(): f.type for f in table_schema or []}
    schema = pa.schema([pa.field(n, want.get(n.lower(), file_types[n])) for n in names])

    def read(columns, units):

        cols = file_columns(schema, columns) if columns is not None else names
        target = pa.schema([pa.field(n, file_types[n]) for n in cols])
        if multiline:
            data_rows = _multiline_rows(storage, path)
            data = pa.Table.from_pylist([{n: r.get(n) for n in cols} for r in data_rows])
            data = (pa.Table.from_arrays([data.column(n).cast(target.field(n).type) for n in cols], schema=target)
                if data_rows else target.empty_table())
        elif not storage.size(path):
            data = target.empty_table()
        else:
            with storage.open(path) as fh:
                data = pjson.read_json(fh, parse_options=pjson.ParseOptions(
                    explicit_schema=target, unexpected_field_behavior="ignore"))
            data = data.select(cols)
        try:
            return parse_temporal(data, table_schema, options)
        except BadTextValue as e:
            raise value_error(storage, path, e.row, e.column, e.value, e.type, e.fmt,
                              skip=None if multiline else 0) from None

    return ExternalFile(path, schema, [Unit({}, None)], read)
