"""Hive-style partitioned tables: folder names, splitting a load by partition values, pruning by folder.

Layout (CarbonData's "standard partition" / NATIVE_HIVE tables)::

    <table>/day=20211123/hour=12/part-0-<task>_batchno0-0-<seg>-<ts>.snappy.carbondata
    <table>/day=20211123/hour=12/<task>_batchno0-0-<seg>-<ts>.carbonindex
    <table>/Metadata/segments/<seg>_<ts>.segment   one locationMap entry per partition folder

A folder component is ``<escaped column>=<escaped value>`` with Hive's escaping (``FileUtils.escapePathName``):
control characters and ``"#%'*/:=?\\{[]^`` and DEL become ``%XX``; a null (or empty) value is
``__HIVE_DEFAULT_PARTITION__``. Because ``/`` and ``\\`` are escaped and every component starts with
``<column>=``, no value can produce a component ``..`` or leave the table folder.

The data files also hold the partition columns (the writer writes every table column), so a file read on
its own is complete; the folder names are what pruning uses, before any file is opened.
"""

from __future__ import annotations

import datetime as dt
import decimal
import posixpath
from collections.abc import Iterable
from urllib.parse import unquote

import pyarrow as pa

from carbon_ds.errors import CarbonOptionError, CarbonSchemaError
from carbon_ds.fs import Storage

DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_ESCAPED = set('"#%\'*/:=?\\{[]^') | {chr(c) for c in range(1, 32)} | {"\x7f"}


# ------------------------------------------------------------------------------------------ names
def escape(text: str) -> str:
    """Hive's escapePathName: the characters that are unsafe in a path component as %XX (upper hex)."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


def unescape(text: str) -> str:
    return unquote(text)


def value_text(value, arrow_type: pa.DataType) -> str | None:
    """The string Spark/Hive put in a folder name for ``value`` (None for null)."""
    if value is None:
        return None
    if pa.types.is_boolean(arrow_type):
        return "true" if value else "false"
    if pa.types.is_timestamp(arrow_type):
        if isinstance(value, dt.datetime):
            if value.tzinfo is not None:
                value = value.astimezone(dt.UTC).replace(tzinfo=None)
            text = value.strftime("%Y-%m-%d %H:%M:%S")
            if value.microsecond:
                text += f".{value.microsecond:06d}".rstrip("0")
            return text
    if pa.types.is_date(arrow_type) and isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        raise CarbonSchemaError("binary columns cannot be partition columns")
    return str(value)


def component(column: str, text: str | None) -> str:
    """One folder name, ``col=value`` (``col=__HIVE_DEFAULT_PARTITION__`` for null or empty)."""
    return f"{escape(column.lower())}={DEFAULT_PARTITION if text is None or text == '' else escape(text)}"


def parse_component(name: str) -> tuple[str, str | None]:
    """(column, value text or None for the default partition) of one folder name."""
    if "=" not in name:
        raise CarbonOptionError(f"partition folder {name!r} is not of the form column=value")
    key, value = name.split("=", 1)
    return unescape(key), None if value == DEFAULT_PARTITION else unescape(value)


def folder_of(partitions: list[str]) -> str:
    """Relative folder ("day=1/hour=2") of a segment file's ``partitions`` list."""
    return "/".join(partitions)


SUPPORTED = ("integer", "string", "date", "timestamp", "boolean", "decimal")


def check_partition_columns(schema: pa.Schema, partition_by: list[str]) -> list[str]:
    """Table spellings of ``partition_by``; every type must have an exact text form (no float, binary,
    complex), at least one column must stay outside the partition."""
    by_lower = {f.name.lower(): f for f in schema}
    out = []
    for name in partition_by:
        f = by_lower.get(name.lower())
        if f is None:
            raise CarbonSchemaError(
                f"partition column {name!r} is not a table column; table columns are: {', '.join(schema.names)}"
            )
        t = f.type
        ok = (pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
              or pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_boolean(t)
              or pa.types.is_decimal(t))
        if not ok:
            raise CarbonSchemaError(f"partition column {f.name!r} has type {t}; supported: {', '.join(SUPPORTED)}")
        if f.name in out:
            raise CarbonSchemaError(f"partition column {f.name!r} named twice in partition_by={partition_by!r}")
        out.append(f.name)
    if len(out) >= len(schema):
        raise CarbonSchemaError("a partitioned table needs at least one column that is not a partition column")
    return out


def typed_value(text: str | None, arrow_type: pa.DataType):
    """A folder value as a Python value of the column type (None when it cannot be parsed)."""
    if text is None:
        return None
    try:
        if pa.types.is_timestamp(arrow_type):
            v = dt.datetime.fromisoformat(text)
            return v if arrow_type.tz is None else v.replace(tzinfo=dt.UTC)
        return pa.array([text]).cast(arrow_type)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        return None


def normalize_spec(spec: dict | None, schema: pa.Schema, partition_columns: list[str]) -> dict[str, str | None]:
    """A static partition spec {col: value} as {table column: folder value text}, in partition order."""
    if not spec:
        return {}
    by_lower = {c.lower(): c for c in partition_columns}
    out: dict[str, str | None] = {}
    for key, value in spec.items():
        col = by_lower.get(str(key).lower())
        if col is None:
            raise CarbonOptionError(
                f"partition spec names {key!r}; partition columns are: {', '.join(partition_columns) or 'none'}"
            )
        t = schema.field(col).type
        if value is not None and not isinstance(value, str):
            out[col] = value_text(value, t)
        else:
            out[col] = value
            if value is not None and typed_value(value, t) is None:
                raise CarbonOptionError(f"partition value {value!r} is not a valid {t} for column {col!r}")
    return {c: out[c] for c in partition_columns if c in out}


def spec_matches(partitions: list[str], spec: dict[str, str | None]) -> bool:
    """Whether a folder (its ``partitions`` list) lies inside the static spec."""
    have = {}
    for p in partitions:
        k, v = parse_component(p)
        have[k.lower()] = v
    for col, value in spec.items():
        v = have.get(col.lower(), ...)
        if v is ... or (v or None) != (value if value != "" else None):
            return False
    return True


# ------------------------------------------------------------------------------------------ splitting
def add_static_columns(data: pa.Table, spec: dict[str, str | None], schema: pa.Schema) -> pa.Table:
    """Append the static partition values as constant columns (replacing same-named ones)."""
    lower = [n.lower() for n in data.schema.names]
    for col, text in spec.items():
        t = schema.field(col).type
        arr = pa.nulls(data.num_rows, t) if text is None else pa.array(
            [typed_value(text, t)] * data.num_rows, t) if data.num_rows else pa.array([], t)
        if col.lower() in lower:
            data = data.set_column(lower.index(col.lower()), col, arr)
        else:
            data = data.append_column(col, arr)
            lower.append(col.lower())
    return data


def split(data: pa.Table, partition_columns: list[str], schema: pa.Schema) -> list[tuple[list[str], pa.Table]]:
    """Rows of ``data`` grouped by partition values: [(folder components, rows)], vectorised (one
    group_by, one take per partition)."""
    if data.num_rows == 0:
        return []
    by_lower = {n.lower(): n for n in data.schema.names}
    keys = [by_lower[c.lower()] for c in partition_columns]
    idx = "__carbon_row__"
    keyed = data.select(keys).append_column(idx, pa.array(range(data.num_rows), pa.int64()))
    groups = keyed.group_by(keys, use_threads=False).aggregate([(idx, "list")])
    out = []
    key_values = [groups.column(k).to_pylist() for k in keys]
    rows = groups.column(f"{idx}_list")
    for g in range(groups.num_rows):
        comps = [component(c, value_text(key_values[i][g], schema.field(c).type))
                 for i, c in enumerate(partition_columns)]
        out.append((comps, data.take(rows[g].values)))
    out.sort(key=lambda x: x[0])
    return out


def group_batches(batches: Iterable[pa.RecordBatch | pa.Table], partition_columns: list[str],
                  schema: pa.Schema) -> Iterable[tuple[list[str], pa.Table]]:
    for b in batches:
        t = pa.Table.from_batches([b]) if isinstance(b, pa.RecordBatch) else b
        yield from split(t, partition_columns, schema)


# ------------------------------------------------------------------------------------------ pruning
def folder_values(table_path: str, file_path: str) -> dict[str, str | None] | None:
    """{column (lower case): value text} from the ``col=value`` folders between the table and a file."""
    root = table_path.replace("\\", "/").rstrip("/") + "/"
    p = file_path.replace("\\", "/")
    if not p.startswith(root):
        return None
    parts = posixpath.dirname(p[len(root):]).split("/")
    out: dict[str, str | None] = {}
    for part in parts:
        if "=" not in part:
            return out if out else None
        k, v = parse_component(part)
        out[k.lower()] = v
    return out


def partition_stats(values: dict[str, str | None], schema: pa.Schema):
    from carbon_ds.expressions.minmax import ColumnStats

    stats = {}
    by_lower = {f.name.lower(): f for f in schema}
    for col, text in values.items():
        f = by_lower.get(col)
        if f is None:
            continue
        if text is None:
            stats[col] = ColumnStats(min=None, max=None, null_count=1, row_count=1)
            continue
        v = typed_value(text, f.type)
        if v is not None and not pa.types.is_timestamp(f.type):
            stats[col] = ColumnStats(min=v, max=v, null_count=0, row_count=None)
    return stats


def prune_files(table_path: str, schema: pa.Schema, files: list[tuple[str, str | None]], expr) -> list[tuple[str, str | None]]:
    """Drop files whose partition folder values rule ``expr`` out (no file is opened)."""
    from carbon_ds.expressions import AlwaysTrue, might_match

    if isinstance(expr, AlwaysTrue):
        return files
    out = []
    cache: dict[str, bool] = {}
    for path, seg in files:
        folder = posixpath.dirname(path.replace("\\", "/"))
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


def table_folder(table_path: str, comps: list[str]) -> str:
    return Storage.join(table_path, *comps)


# ------------------------------------------------------------------------------------------ management
def show_partitions(table) -> list[str]:
    """SHOW PARTITIONS: "day=1/hour=2" of every live partition folder of the readable segments, sorted."""
    from carbon_ds.table import segments as segfiles

    found: set[str] = set()
    for detail in table.load_details():
        if not detail.readable or not detail.segment_file:
            continue
        seg = segfiles.read(table.storage, table.path, detail.segment_file)
        for d in seg.location_map.values():
            if d.partitions and d.status in ("Success", "Marked for Update"):
                found.add(folder_of(d.partitions))
    return sorted(found)


def drop_partitions(table, spec: dict, if_exists: bool = False) -> list[str]:
    """ALTER TABLE DROP PARTITION: every live folder inside ``spec`` is "Marked for Delete" in new segment
    files, all in one atomic tablestatus replace (CLEAN FILES removes the files later). Returns the
    dropped folders."""
    from carbon_ds.errors import CarbonTableError
    from carbon_ds.table import partitioned_write
    from carbon_ds.table import tablestatus as ts

    pcols = table.partition_columns
    if not pcols:
        raise CarbonTableError(f"DROP PARTITION: table {table.uri} is not partitioned")
    norm = normalize_spec(spec, table.schema, pcols)
    if not norm:
        raise CarbonOptionError(f"DROP PARTITION needs a partition spec over {', '.join(pcols)}, found {spec!r}")
    dropped: list[str] = []
    with table.lock():
        entries = table.load_details()
        now = ts.now_ms()

        def replaced(parts: list[str]) -> bool:
            if spec_matches(parts, norm):
                dropped.append(folder_of(parts))
                return True
            return False

        for entry in entries:
            if entry.readable:
                partitioned_write.drop_folders(table, entry, replaced, now)
        if not dropped:
            if if_exists:
                return []
            raise CarbonTableError(
                f"DROP PARTITION: no partition of {table.uri} matches {norm!r}; partitions: "
                f"{', '.join(show_partitions(table)) or 'none'}"
            )
        ts.write(table.storage, table.tablestatus_path, entries)
    return sorted(set(dropped))


def add_partition(table, spec: dict, location: str | None = None, if_not_exists: bool = False) -> str | None:
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
    import pyarrow.compute as pc

    from carbon_ds.errors import CarbonTableError
    from carbon_ds.expressions import AlwaysTrue
    from carbon_ds.table import add_segment as AS
    from carbon_ds.table import segments as segfiles
    from carbon_ds.table import tablestatus as ts
    from carbon_ds.table.pruning import Piece, read_pieces
    from carbon_ds.table.tablestatus import LoadDetail

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
    inside = root.replace("\\", "/") + "/"
    if (table.path.replace("\\", "/").rstrip("/") + "/").startswith(inside):
        raise CarbonTableError(f"ADD PARTITION: location {storage.uri(root)} contains table {table.uri}; "
                               "expected a folder of carbondata files")
    files = AS._data_files(storage, root, "carbondata")
    if not files:
        raise CarbonTableError(f"ADD PARTITION: location {storage.uri(root)} holds no .carbondata file; "
                               "omit LOCATION to create an empty partition folder")
    problems = []
    for path, size in files:
        check = AS._check_file(storage, path, size, "carbondata", {}, table.schema, [], [])
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
    with table.lock():
        entries = table.load_details()
        dups = AS._duplicates(entries, [uri])
        if dups:
            raise AS._dup_error(dups[0])
        seg = ts.next_segment_id(entries)
        end = ts.now_ms()
        names = [posixpath.relpath(p.replace("\\", "/"), root.replace("\\", "/")) for p, _s in files]
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
        ts.write(storage, table.tablestatus_path, entries)
    return seg
