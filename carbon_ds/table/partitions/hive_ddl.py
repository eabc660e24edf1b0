"""Partition DDL of Hive-style partitioned tables: SHOW / ADD [LOCATION] / DROP PARTITION.

Layout (CarbonData's "standard partition" / NATIVE_HIVE tables)::

    <table>/day=20211123/hour=12/part-0-<task>_batchno0-0-<seg>-<ts>.snappy.carbondata
    <table>/day=20211123/hour=12/<task>_batchno0-0-<seg>-<ts>.carbonindex
    <table>/Metadata/segments/<seg>_<ts>.segment   one locationMap entry per partition folder

Folder names: carbon_ds.format.hive. The data files also hold the partition columns (the writer writes
every table column), so a file read on its own is complete; the folder names are what pruning uses
(carbon_ds.table.partitions.hive_pruning), before any file is opened.
"""

from __future__ import annotations

import posixpath

import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonOptionError, CarbonSchemaError, CarbonTableError
from carbon_ds.expressions import AlwaysTrue
from carbon_ds.format.hive import component, folder_of, normalize_spec, spec_matches, table_folder, typed_value
from carbon_ds.fs import Storage, is_inside, norm_path
from carbon_ds.table.meta.files import segment_file as segfiles
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.tablestatus import LoadDetail
from carbon_ds.table.ops.segments import add as segment_add
from carbon_ds.table.partitions.hive_load import drop_folders
from carbon_ds.table.read.pruning import Piece
from carbon_ds.table.read.task_reader import read_pieces


def show_partitions(table: TableHandle) -> list[str]:
    """SHOW PARTITIONS: "day=1/hour=2" of every live partition folder of the readable segments, sorted."""
    found: set[str] = set()
    for detail in table.load_details():
        if not detail.readable or not detail.segment_file:
            continue
        seg = segfiles.read(table.storage, table.path, detail.segment_file)
        for d in seg.location_map.values():
            if d.partitions and d.status in ("Success", "Marked for Update"):
                found.add(folder_of(d.partitions))
    return sorted(found)


def drop_partitions(table: TableHandle, spec: dict, if_exists: bool = False) -> list[str]:
    """ALTER TABLE DROP PARTITION: every live folder inside ``spec`` is "Marked for Delete" in new segment
    files, all in one atomic tablestatus replace (CLEAN FILES removes the files later). Returns the
    dropped folders."""
    pcols = table.partition_columns
    if not pcols:
        raise CarbonTableError(f"DROP PARTITION: table {table.uri} is not partitioned")
    norm = normalize_spec(spec, table.schema, pcols)
    if not norm:
        raise CarbonOptionError(f"DROP PARTITION needs a partition spec over {', '.join(pcols)}, found {spec!r}")
    dropped: list[str] = []
    with table.edit_status("DROP PARTITION") as edit:
        entries = edit.entries
        now = ts.now_ms()

        def replaced(parts: list[str]) -> bool:
            if spec_matches(parts, norm):
                dropped.append(folder_of(parts))
                return True
            return False

        for entry in entries:
            if entry.readable:
                drop_folders(table, entry, replaced, now)
        if not dropped:
            if if_exists:
                return []
            raise CarbonTableError(
                f"DROP PARTITION: no partition of {table.uri} matches {norm!r}; partitions: "
                f"{', '.join(show_partitions(table)) or 'none'}"
            )
    return sorted(set(dropped))


def add_partition(table: TableHandle, spec: dict, location: str | None = None, if_not_exists: bool = False) -> str | None:
    """ALTER TABLE ADD PARTITION (CarbonData's CarbonAlterTableAddHivePartitionCommand, Hive semantics).

    ``spec`` gives a value for every partition column. Without ``location`` the empty folder
    ``<table>/<col>=<value>/...`` is created and nothing is added to read (Hive's default partition
    location). With ``location``, an existing folder of ``.carbondata`` files becomes one new segment whose
    segment file lists that (absolute, ``isRelative`` false) folder, its data files and the partition values;
    tablestatus ``path`` is the folder, as CarbonData sets it to mark an added partition. Its files are the
    user's: DROP PARTITION / CLEAN FILES only drop the metadata. Every file is checked against the table
    schema and must hold the spec's values in its partition columns.

    An already existing partition is an error (Hive's), or nothing happens with ``if_not_exists``. Returns
    the new segment id (None without ``location`` or when skipped)."""


    pcols = table.partition_columns
    if not pcols:
        raise CarbonTableError(f"ADD PARTITION: cannot add a partition to table {table.uri}: it is not partitioned")
    norm = normalize_spec(spec, table.schema, pcols)
    missing = [c for c in pcols if c not in norm]
    if missing:
        raise CarbonOptionError(f"ADD PARTITION needs a value for every partition column ({', '.join(pcols)}); "
                                f"{', '.join(missing)} missing in {spec!r}")
    comps = [component(c, norm[c]) for c in pcols]
    rel = folder_of(comps)
    if rel in show_partitions(table):
        if if_not_exists:
            return None
        raise CarbonTableError(f"ADD PARTITION: partition {rel} already exists in table {table.uri}")
    storage = table.storage
    if location is None:
        storage.mkdirs(table_folder(table.path, comps))
        return None
    loc_storage, root = Storage.for_path(str(location).strip())
    if loc_storage.scheme != storage.scheme or type(loc_storage.fs) is not type(storage.fs):
        raise CarbonOptionError(f"ADD PARTITION: location {location} is on another file system than table "
                                f"{table.uri}; both must be on the same one")
    root = root.rstrip("/") or root
    if not storage.is_dir(root):
        raise CarbonTableError(f"ADD PARTITION: location {storage.uri(root)} is not an existing folder")
    if is_inside(table.path, root):
        raise CarbonTableError(f"ADD PARTITION: location {storage.uri(root)} contains table {table.uri}; "
                               "expected a folder of carbondata files")
    files = segment_add.find_data_files(storage, root, "carbondata")
    if not files:
        raise CarbonTableError(f"ADD PARTITION: location {storage.uri(root)} holds no .carbondata file; "
                               "omit LOCATION to create an empty partition folder")
    problems = []
    for path, size in files:
        check = segment_add.check_file(storage, path, size, "carbondata", {}, table.schema, [], [])
        problems += [f"{check.path}: {p}" for p in check.problems]
        if check.problems:
            continue
        # carbondata files carry their partition columns; they must hold this partition's values only
        data = pa.concat_tables(list(read_pieces(storage, [Piece(path, None)], AlwaysTrue(), pcols, table.schema)))
        for c in pcols:
            want = typed_value(norm[c], table.schema.field(c).type)
            col = data.column(c)
            if want is None:
                bad = len(col) - col.null_count
            else:
                same = pc.sum(pc.fill_null(pc.equal(col, pa.scalar(want, col.type)), False)).as_py() or 0
                bad = len(col) - same
            if bad:
                problems.append(f"{storage.uri(path)}: {bad} row(s) hold another {c} than {c}={norm[c]}")
    if problems:
        raise CarbonSchemaError(f"ADD PARTITION {rel} LOCATION {storage.uri(root)}: files do not fit table "
                                f"{table.uri}:\n  " + "\n  ".join(problems))
    uri = storage.uri(root)
    start = ts.now_ms()
    with table.edit_status("ADD PARTITION") as edit:
        entries = edit.entries
        dups = segment_add.duplicate_paths(entries, [uri])
        if dups:
            raise segment_add.duplicate_error(dups[0])
        seg = ts.next_segment_id(entries)
        end = ts.now_ms()
        names = [posixpath.relpath(norm_path(p), norm_path(root)) for p, _s in files]
        names = [n if "/" not in n else p for n, (p, _s) in zip(names, files, strict=True)]
        seg_name = segfiles.segment_file_name(seg, end)
        details = segfiles.FolderDetails(files=sorted(names), partitions=comps, is_relative=False)
        segfiles.write(storage, table.path, seg_name, segfiles.SegmentFile(
            {root: details}, {"path": uri, "format": "carbondata", "partition": rel}))
        index_size = sum(f.size for f in storage.list(root, recursive=True)
                         if f.path.endswith((".carbonindex", ".carbonindexmerge")))
        entries.append(LoadDetail(
            name=seg, status=ts.SUCCESS, timestamp=str(end), data_size=str(sum(s for _p, s in files)),
            index_size=str(index_size), load_start_time=str(start), visibility="true", path=uri,
            segment_file=seg_name))
    return seg
