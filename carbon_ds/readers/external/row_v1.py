"""The row-format (ROW_V1) files of CarbonData's Streaming / Streaming Finish segments, behind the external
reader interface: a file is one unit without statistics, parsed by carbon_ds.format.stream and filtered
exactly. ``options["length"]`` bounds the bytes read to what the segment's stream index records
(StreamSegment writes each file's committed size there; a longer file holds an append in progress)."""

from __future__ import annotations

import pyarrow as pa

from carbon_ds.format.pages import direct_dictionary
from carbon_ds.format.stream import read_stream_file
from carbon_ds.fs import Storage
from carbon_ds.readers.external.base import ExternalFile, Unit, file_columns

FORMAT = "row_v1"


def open_file(storage: Storage, path: str, options: dict[str, str], table_schema: pa.Schema | None) -> ExternalFile:
    data = storage.read_bytes(path)
    length = options.get("length")
    if length is not None and length.isdigit():
        data = data[: int(length)]
    table = read_stream_file(data, storage.uri(path), direct_dictionary.current())

    def read(columns, units):
        cols = file_columns(table.schema, columns) if columns is not None else table.schema.names
        return table.select(cols)

    return ExternalFile(path, table.schema, [Unit({}, table.num_rows)], read)
