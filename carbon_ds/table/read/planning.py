"""Reading one planned data file, carbondata or external, in the table's schema."""

from __future__ import annotations

import pyarrow as pa

from carbon_ds.errors import CarbonTableError
from carbon_ds.fs import Storage
from carbon_ds.readers.carbondata import CarbonDataFile
from carbon_ds.readers.external import open_reader
from carbon_ds.readers.external.base import ExternalRef, partition_scalar, to_table_schema
from carbon_ds.table.meta.conform import conform
from carbon_ds.table.meta.handle import DataFile
from carbon_ds.table.meta.naming import COLUMNAR


def read_external(storage: Storage, path: str, ref: ExternalRef, columns: list[str] | None, target: pa.Schema,
                  units=None) -> pa.Table:
    """Rows of one external file (chosen statistics units, None: all) as exactly ``target``."""
    f = open_reader(storage, path, ref.format, ref.options_dict, target)
    by_lower = {n.lower(): n for n in target.names}
    parts = {k: partition_scalar(v, target.field(by_lower[k.lower()]).type)
             for k, v in ref.partitions if k.lower() in by_lower}
    return to_table_schema(f.read(columns if columns is not None else target.names, units), target, parts)


def read_file(storage: Storage, data_file: DataFile, columns: list[str] | None, target: pa.Schema) -> pa.Table:
    """Every row of one data file (``columns`` of it, None: all) as exactly ``target``."""
    if data_file.file_format != COLUMNAR:
        if data_file.external is None:
            raise CarbonTableError(
                f"segment {data_file.segment_id} has format {data_file.file_format!r} but no reading details"
            )
        return read_external(storage, data_file.path, data_file.external, columns, target)
    with CarbonDataFile(data_file.path, storage=storage) as f:
        return conform(f.read(columns=columns), target, data_file.path)
