"""Which data files make up a segment, and reading one of them in the table's schema."""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING

import pyarrow as pa

from carbon_ds.errors import CarbonTableError
from carbon_ds.fs import Storage
from carbon_ds.table import segments as segfiles
from carbon_ds.table.tablestatus import LoadDetail

if TYPE_CHECKING:
    from carbon_ds.table.table import CarbonTable, DataFile

DATA_EXT = ".carbondata"
INDEX_EXT = ".carbonindex"
MERGE_INDEX_EXT = ".carbonindexmerge"


def _basename(path: str) -> str:
    return posixpath.basename(path.replace("\\", "/"))


def _owned_by_index(data_name: str, index_name: str) -> bool:
    """Whether a data file belongs to an index file, by CarbonData's naming alone.

    ``<taskNo>_batchno<b>-<bucket>-...-<ts>.carbonindex`` indexes the task's
    ``part-<partNo>-<taskNo>_batchno<b>-<bucket>-...-<ts>[.<compressor>].carbondata`` files; the '-' before
    the stem stops task 1 from claiming task 11's files.
    """
    stem = index_name[: -len(INDEX_EXT)]
    return f"-{stem}." in data_name


def _data_files_in_folder(
    storage: Storage, folder: str, index_names: list[str] | None, merge_name: str | None
) -> list[tuple[str, int]]:
    listing = storage.list(folder)
    data = [(f.path, f.size) for f in listing if f.path.endswith(DATA_EXT)]
    if index_names is None or merge_name:
        # Without a per-task list (1.x tables, or a merged index that covers every committed task) the
        # folder holds exactly the committed files.
        return data
    return [(p, s) for p, s in data if any(_owned_by_index(_basename(p), i) for i in index_names)]


def segment_files(table: CarbonTable, detail: LoadDetail) -> list[DataFile]:
    from carbon_ds.table.table import COLUMNAR, DataFile

    storage = table.storage
    fmt = (detail.file_format or COLUMNAR).lower()
    found: list[tuple[str, int]] = []
    refs: dict[str, object] = {}  # non-carbondata files: how to read them
    if detail.segment_file:
        seg = segfiles.read(storage, table.path, detail.segment_file)
        for folder, details in seg.folders(table.path):
            if details.status and details.status != "Success" and details.status != "Marked for Update":
                continue
            if fmt != COLUMNAR or not details.is_relative and any(not f.endswith(INDEX_EXT) for f in details.files):
                # External folders list their data files directly.
                for name in details.files:
                    path = Storage.join(folder, name) if "/" not in name else name
                    found.append((path, storage.size(path)))
                    if fmt != COLUMNAR:
                        refs[path] = _external_ref(fmt, details.partitions, seg.options)
                continue
            indexes = [f for f in details.files if f.endswith(INDEX_EXT)]
            found.extend(_data_files_in_folder(storage, folder, indexes, details.merge_file_name))
    elif detail.path:
        found = [(f.path, f.size) for f in storage.list(detail.path, recursive=True) if _is_data(f.path, fmt)]
        if fmt != COLUMNAR:
            refs = {p: _external_ref(fmt, [], {}) for p, _s in found}
    else:
        folder = segfiles.segment_dir(table.path, detail.name)
        if not storage.is_dir(folder):
            raise CarbonTableError(
                f"segment {detail.name} of {table.uri} is {detail.status!r} but its folder "
                f"{storage.uri(folder)} does not exist"
            )
        found = _data_files_in_folder(storage, folder, None, None)
    return [DataFile(p, s, detail.name, fmt, refs.get(p)) for p, s in sorted(found)]


def _external_ref(fmt: str, partitions: list[str], options: dict):
    """How to read a file of an external segment: its format, the folder's partition values
    (``["day=20211123", ...]``) and the ADD SEGMENT options (CSV/JSON settings)."""
    from carbon_ds.readers.external import ExternalRef

    parts = tuple((k, v) for k, _sep, v in (p.partition("=") for p in partitions))
    opts = tuple(sorted((str(k).lower(), str(v)) for k, v in (options or {}).items()))
    return ExternalRef(fmt, parts, opts)


def read_external(storage: Storage, path: str, ref, columns: list[str] | None, target: pa.Schema,
                  units=None) -> pa.Table:
    """Rows of one external file (chosen statistics units, None: all) as exactly ``target``."""
    from carbon_ds.readers.external import open_reader, partition_scalar, to_table_schema

    f = open_reader(storage, path, ref.format, ref.options_dict, target)
    by_lower = {n.lower(): n for n in target.names}
    parts = {k: partition_scalar(v, target.field(by_lower[k.lower()]).type)
             for k, v in ref.partitions if k.lower() in by_lower}
    return to_table_schema(f.read(columns if columns is not None else target.names, units), target, parts)


def _is_data(path: str, fmt: str) -> bool:
    name = _basename(path)
    if name.startswith((".", "_")):
        return False
    return name.endswith(DATA_EXT) if fmt == "columnar_v3" else True


def conform(data: pa.Table | pa.RecordBatch, target: pa.Schema) -> pa.Table | pa.RecordBatch:
    """Select ``target``'s columns (case-insensitively) and cast them to exactly ``target``."""
    by_lower = {n.lower(): i for i, n in enumerate(data.schema.names)}
    arrays = [data.column(by_lower[f.name.lower()]) for f in target]
    if isinstance(data, pa.RecordBatch):
        out = pa.RecordBatch.from_arrays(arrays, names=target.names)
    else:
        out = pa.Table.from_arrays(arrays, names=target.names)
    if out.schema.equals(target, check_metadata=False):
        return out
    return out.cast(target)


def read_file(storage: Storage, data_file: DataFile, columns: list[str] | None, target: pa.Schema) -> pa.Table:
    from carbon_ds.readers.carbondata import CarbonDataFile

    if data_file.file_format != "columnar_v3":
        if data_file.external is None:
            raise CarbonTableError(
                f"segment {data_file.segment_id} has format {data_file.file_format!r} but no reading details"
            )
        return read_external(storage, data_file.path, data_file.external, columns, target)
    f = CarbonDataFile(data_file.path, storage=storage)
    try:
        return conform(f.read(columns=columns), target)
    finally:
        f.close()
