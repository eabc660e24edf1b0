"""ADD SEGMENT: register existing carbondata / Parquet / ORC / CSV / JSON folders as segments, unconverted.

What CarbonData's ``CarbonAddLoadCommand`` does, with its error messages, plus what it lacks:

* every file is checked against the table schema (CarbonData checks one folder's first file); names match
  case-insensitively, types exactly or by a safe widening (``carbon_ds.readers.external.check_type``);
  CSV and JSON files are parsed in full so that a bad value is reported now, not at query time;
* a report per file (``ValidationReport``); ``dry_run=True`` returns it and commits nothing;
* a partitioned folder becomes one segment per leaf folder (``day=../hour=../type=..``), the values from
  the folder names, cross-checked with the files when they also hold the column; a path that already ends
  in partition folders (``.../day=20211123/hour=12/type=0``) takes those values from the path.

Each segment gets a tablestatus entry with ``path`` (its folder) and ``fileFormat``, and a segment file whose
only location is that absolute folder (``isRelative`` false) listing its data files; ``options`` keeps the
ADD SEGMENT options (CSV/JSON reading options live there). Index size is "NA" (there is no index).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonError, CarbonOptionError, CarbonSchemaError, CarbonTableError
from carbon_ds.format.structs import PartitionType
from carbon_ds.fs import Storage
from carbon_ds.readers import external as ext
from carbon_ds.table import segments as segfiles
from carbon_ds.table import tablestatus as ts
from carbon_ds.table.tablestatus import LoadDetail

if TYPE_CHECKING:
    from carbon_ds.table.table import CarbonTable

COLUMNAR = "columnar_v3"
_SPEC_ITEM = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([A-Za-z]+(?:\s*\(\s*\d+\s*(?:,\s*\d+\s*)?\))?)\s*$")


# ------------------------------------------------------------------------------------------ partitions
def partition_columns(table: CarbonTable) -> list[str]:
    """The table's Hive-style partition columns (schema ``partitionInfo`` of type NATIVE_HIVE), in order."""
    info = getattr(table.info.fact_table, "partitionInfo", None)
    if info is None or info.partition_type != PartitionType.NATIVE_HIVE:
        return []
    by_lower = {n.lower(): n for n in table.schema.names}
    return [by_lower.get(c.column_name.lower(), c.column_name) for c in info.partition_columns or []]


def _options_map(given: dict[str, str]) -> str:
    """The options as CarbonData prints them in its messages: ``Map(path -> ..., format -> ...)``."""
    return "Map(" + ", ".join(f"{k} -> {v}" for k, v in given.items()) + ")"


def parse_partition_spec(text: str, given: dict[str, str]) -> list[tuple[str, pa.DataType]]:
    """``'day:int, hour:int'`` -> [(name, type)]; anything else is CarbonData's "invalid partition option"."""
    from carbon_ds.sql.types import arrow_type

    items = [p for p in re.split(r",(?![^()]*\))", text)]
    out = []
    for item in items:
        m = _SPEC_ITEM.match(item)
        if m is None:
            raise CarbonOptionError(f"invalid partition option: {_options_map(given)}")
        try:
            out.append((m.group(1), arrow_type(m.group(2), m.group(1))))
        except CarbonError:
            raise CarbonOptionError(f"invalid partition option: {_options_map(given)}") from None
    return out


def _same_kind(a: pa.DataType, b: pa.DataType) -> bool:
    return a.equals(b) or ext.check_type(a, b) and ext.check_type(b, a)


# ------------------------------------------------------------------------------------------ the report
@dataclass
class FileCheck:
    path: str  # URI of the file
    size: int
    rows: int | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class PlannedSegment:
    folder: str  # file system path of the folder that becomes one segment
    partitions: list[tuple[str, str]]  # (table column, raw folder value)
    files: list[FileCheck]

    @property
    def data_size(self) -> int:
        return sum(f.size for f in self.files)


@dataclass
class ValidationReport:
    """What ADD SEGMENT found: the segments it would add and every problem, per file."""

    table: str
    path: str
    format: str
    table_schema: pa.Schema
    segments: list[PlannedSegment] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # about the folder layout, not one file

    @property
    def files(self) -> list[FileCheck]:
        return [f for s in self.segments for f in s.files]

    @property
    def bad_files(self) -> list[FileCheck]:
        return [f for f in self.files if not f.ok]

    @property
    def ok(self) -> bool:
        return not self.problems and not self.bad_files and bool(self.files)

    def message(self) -> str:
        schema = ", ".join(f"{f.name}:{f.type}" for f in self.table_schema)
        lines = [
            f"Schema is not same. Table schema is : {schema}; {len(self.bad_files)} of {len(self.files)} "
            f"{self.format} file(s) under {self.path} do not match:"
        ] if self.bad_files else [f"cannot add {self.path} ({self.format}) to {self.table}:"]
        lines += [f"  {p}" for p in self.problems]
        lines += [f"  {f.path}: {'; '.join(f.problems)}" for f in self.bad_files]
        return "\n".join(lines)

    def __str__(self) -> str:
        head = (f"add segment {'ok' if self.ok else 'REFUSED'}: {self.path} ({self.format}) -> {self.table}, "
                f"{len(self.segments)} segment(s), {len(self.files)} file(s)")
        lines = [head] + [f"  problem: {p}" for p in self.problems]
        for s in self.segments:
            part = ",".join(f"{k}={v}" for k, v in s.partitions)
            lines.append(f"  segment {'{' + part + '}' if part else ''} {s.folder}")
            for f in s.files:
                rows = "" if f.rows is None else f" rows={f.rows}"
                lines.append(f"    {'ok  ' if f.ok else 'FAIL'} {f.path}{rows}" +
                             ("" if f.ok else ": " + "; ".join(f.problems)))
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------ layout
def _hidden(name: str) -> bool:
    return name.startswith((".", "_"))


def _rel_parts(path: str, root: str) -> list[str]:
    rel = path.replace("\\", "/")[len(root.replace("\\", "/").rstrip("/")) + 1:]
    return [p for p in rel.split("/") if p]


def _data_files(storage: Storage, folder: str, fmt: str) -> list[tuple[str, int]]:
    """Data files under ``folder`` (recursively), without hidden files or folders (``_SUCCESS``, ``.crc``,
    ``_temporary``) and, for carbondata, only ``.carbondata`` files."""
    out = []
    for f in storage.list(folder, recursive=True):
        parts = _rel_parts(f.path, folder)
        if any(_hidden(p) for p in parts):
            continue
        if fmt == "carbondata" and not f.path.endswith(".carbondata"):
            continue
        out.append((f.path, f.size))
    return out


def _split_kv(name: str) -> tuple[str, str] | None:
    if "=" not in name:
        return None
    k, v = name.split("=", 1)
    return (k, v) if k else None


def find_leaves(storage: Storage, root: str, fmt: str, pcols: list[str],
                problems: list[str]) -> list[tuple[str, list[tuple[str, str]], list[tuple[str, int]]]]:
    """(folder, partition values, data files) for every segment ``root`` holds."""
    if not pcols:
        return [(root, [], _data_files(storage, root, fmt))]
    lower = [c.lower() for c in pcols]
    # partition folders the path itself ends in: .../day=20211123/hour=12/type=0
    fixed: dict[str, str] = {}
    for comp in reversed([p for p in root.replace("\\", "/").split("/") if p]):
        kv = _split_kv(comp)
        if kv is None or kv[0].lower() not in lower or kv[0].lower() in fixed:
            break
        fixed[kv[0].lower()] = kv[1]
    remaining = [c for c in pcols if c.lower() not in fixed]
    leaves = []

    def walk(folder: str, depth: int, values: dict[str, str]):
        if depth == len(remaining):
            vals = {**fixed, **values}
            leaves.append((folder, [(c, vals[c.lower()]) for c in pcols], _data_files(storage, folder, fmt)))
            return
        want = remaining[depth]
        for f in storage.list(folder):
            name = posixpath.basename(f.path.replace("\\", "/"))
            if not _hidden(name):
                problems.append(f"file {storage.uri(f.path)} lies outside the partition folders "
                                f"(expected folders {want}=<value> in {storage.uri(folder)})")
        for d in storage.list_dirs(folder):
            name = posixpath.basename(d.replace("\\", "/"))
            if _hidden(name):
                continue
            kv = _split_kv(name)
            if kv is None or kv[0].lower() != want.lower():
                problems.append(f"folder {storage.uri(d)} is not a partition folder: expected {want}=<value>, "
                                f"found {name!r} (partition columns: {', '.join(pcols)})")
                continue
            walk(d, depth + 1, {**values, want.lower(): kv[1]})

    walk(root, 0, {})
    return leaves


# ------------------------------------------------------------------------------------------ checking
def _check_file(storage: Storage, path: str, size: int, fmt: str, options: dict[str, str], schema: pa.Schema,
                pcols: list[str], partitions: list[tuple[str, str]]) -> FileCheck:
    check = FileCheck(storage.uri(path), size)
    try:
        if fmt == "carbondata":
            from carbon_ds.readers.carbondata import CarbonDataFile

            cf = CarbonDataFile(path, storage=storage)
            try:
                check.problems += ext.schema_problems(cf.schema, schema, pcols)
                check.rows = sum(cf.blocklet_rows(b) for b in range(cf.num_blocklets))
            finally:
                cf.close()
            return check
        f = ext.open_reader(storage, path, fmt, options, schema)
        check.rows = f.num_rows
        check.problems += ext.schema_problems(f.schema, schema, pcols)
        if check.problems:
            return check
        in_file = {n.lower() for n in f.schema.names}
        cross = [(c, v) for c, v in partitions if c.lower() in in_file]
        if fmt in ("csv", "json") or cross:
            # text files: parse every value now; partition columns stored in the file: compare with the folder
            names = [n for n in schema.names if n.lower() in in_file]
            data = ext.to_table_schema(f.read(names), pa.schema([schema.field(n) for n in names]))
            check.rows = data.num_rows
            for c, raw in cross:
                value = ext.partition_scalar(raw, schema.field(c).type)
                col = data.column(c)
                bad = pc.sum(pc.invert(pc.fill_null(pc.equal(col, value), False))).as_py() if value.is_valid \
                    else col.length() - col.null_count
                if bad:
                    check.problems.append(f"partition column {c}: folder says {c}={raw} but {bad} row(s) of the "
                                          f"file hold another value")
    except CarbonError as e:
        check.problems.append(f"unreadable: {e}")
    except (OSError, ValueError, pa.ArrowException) as e:
        check.problems.append(f"unreadable as {fmt}: {type(e).__name__}: {e}")
    return check


def _norm(uri: str) -> str:
    return uri.replace("\\", "/").rstrip("/")


def _duplicates(entries: list[LoadDetail], paths: list[str]) -> list[str]:
    """New segment folders already registered by a segment that still counts (not deleted or failed)."""
    live = {_norm(e.path) for e in entries
            if e.path and e.status not in (ts.MARKED_FOR_DELETE, ts.FAILURE, ts.COMPACTED)}
    return [p for p in paths if _norm(p) in live]


def _dup_error(path: str) -> CarbonTableError:
    return CarbonTableError(
        f"path already exists in table status file, can not add same segment path repeatedly: {path}"
    )


# ------------------------------------------------------------------------------------------ the command
def add_segment(table: CarbonTable, path: str, format: str | None = "carbondata", partition: str | None = None,
                options: dict[str, str] | None = None, dry_run: bool = False):
    """Add ``path`` as new segment(s); returns the new segment ids, or with ``dry_run`` the
    ``ValidationReport`` (nothing is written). Raises when the folder does not fit the table."""
    text = "" if path is None else str(path).strip()
    given: dict[str, str] = {"path": text, "format": (format or "carbondata")}
    if partition is not None:
        given["partition"] = partition
    opts = {str(k).lower(): str(v) for k, v in (options or {}).items()}
    given.update({k: v for k, v in opts.items() if k not in given})
    if not text:
        raise CarbonOptionError("add segment: option 'path' is empty; expected the folder of the data to add")
    fmt = ext.canonical_format(format)
    storage, root = Storage.for_path(text)
    if storage.scheme != table.storage.scheme or type(storage.fs) is not type(table.storage.fs):
        raise CarbonOptionError(
            f"add segment: path {text} is on another file system than table {table.uri}; "
            "both must be on the same one"
        )
    root = root.rstrip("/") or root
    if not storage.exists(root):
        raise CarbonTableError(f"add segment: path {storage.uri(root)} does not exist")
    if not storage.is_dir(root):
        raise CarbonTableError(f"add segment: path {storage.uri(root)} is a file; expected the folder holding the data")
    pcols = partition_columns(table)
    schema = table.schema
    if pcols:
        if partition is None or not partition.strip():
            raise CarbonOptionError("partition option is required when adding segment to partition table")
        spec = parse_partition_spec(partition, given)
        names = [n for n, _t in spec]
        if [n.lower() for n in names] != [c.lower() for c in pcols]:
            raise CarbonOptionError(
                f"partition option {partition!r} names columns {', '.join(names)}; table {table.uri} is "
                f"partitioned by {', '.join(pcols)} (same columns, same order expected)"
            )
        wrong = [f"{n}: table has {schema.field(c).type}, option says {t}"
                 for (n, t), c in zip(spec, pcols, strict=True) if not _same_kind(t, schema.field(c).type)]
        if wrong:
            raise CarbonOptionError(f"partition option {partition!r}: types differ from the table's: {'; '.join(wrong)}")
    elif partition is not None and partition.strip():
        raise CarbonOptionError(
            f"partition option {partition!r} given, but table {table.uri} is not partitioned"
        )

    report = ValidationReport(table.uri, storage.uri(root), fmt, schema)
    leaves = find_leaves(storage, root, fmt, pcols, report.problems)
    dups = _duplicates(table.load_details(), [storage.uri(f) for f, _p, _files in leaves])
    if dups and not dry_run:
        raise _dup_error(dups[0])
    report.problems += [f"already added: {d}" for d in dups]
    for folder, parts, files in leaves:
        checks = []
        for c, raw in parts:
            try:
                ext.partition_scalar(raw, schema.field(c).type)
            except (pa.ArrowException, ValueError) as e:
                report.problems.append(f"folder {storage.uri(folder)}: partition value {c}={raw} is not a "
                                       f"{schema.field(c).type}: {e}")
        for p, size in files:
            checks.append(_check_file(storage, p, size, fmt, opts, schema, pcols, parts))
        report.segments.append(PlannedSegment(folder, parts, checks))
    if not report.files:
        report.problems.append(f"no {fmt} data files found under {storage.uri(root)}")
    if dry_run:
        return report
    if not report.ok:
        raise CarbonSchemaError(report.message())
    return _commit(table, report, fmt, given)


def _commit(table: CarbonTable, report: ValidationReport, fmt: str, given: dict[str, str]) -> list[str]:
    start = ts.now_ms()
    storage = table.storage
    seg_options = {k: v for k, v in given.items()}
    seg_options["format"] = fmt
    added = []
    with table.lock():
        entries = table.load_details()
        dups = _duplicates(entries, [storage.uri(s.folder) for s in report.segments])
        if dups:  # someone added it while we were validating
            raise _dup_error(dups[0])
        for s in report.segments:
            seg = ts.next_segment_id(entries)
            end = ts.now_ms()
            names = []
            for f in s.files:
                fs_path = Storage.for_path(f.path)[1]
                parent = posixpath.dirname(fs_path.replace("\\", "/"))
                # the planner joins bare names to the folder; deeper files are listed by full path
                names.append(posixpath.basename(fs_path) if parent == s.folder.replace("\\", "/") else fs_path)
            details = segfiles.FolderDetails(
                files=names, partitions=[f"{c.lower()}={v}" for c, v in s.partitions], is_relative=False
            )
            seg_name = segfiles.segment_file_name(seg, end)
            segfiles.write(storage, table.path, seg_name, segfiles.SegmentFile({s.folder: details}, seg_options))
            index_size = "NA"
            if fmt == "carbondata":
                index_size = str(sum(f.size for f in storage.list(s.folder, recursive=True)
                                     if f.path.endswith((".carbonindex", ".carbonindexmerge"))))
            entries.append(LoadDetail(
                name=seg, status=ts.SUCCESS, timestamp=str(end), data_size=str(s.data_size), index_size=index_size,
                load_start_time=str(start), visibility="true",
                file_format=None if fmt == "carbondata" else fmt, path=storage.uri(s.folder), segment_file=seg_name,
            ))
            added.append(seg)
        ts.write(storage, table.tablestatus_path, entries)
    return added


# ------------------------------------------------------------------------------------------ mixed tables
def external_segments(table: CarbonTable) -> list[LoadDetail]:
    """Readable segments whose files are not carbondata (Parquet, ORC, CSV, JSON)."""
    return [d for d in table.load_details()
            if d.readable and (d.file_format or COLUMNAR).lower() not in (COLUMNAR, "carbondata")]


def require_all_carbondata(table: CarbonTable, operation: str) -> None:
    """Refuse ``operation`` (UPDATE, DELETE, ...) on a table holding non-carbondata segments, as
    CarbonData does: their files are not ours to rewrite and carry no delete deltas."""
    foreign = external_segments(table)
    if foreign:
        listed = ", ".join(f"{d.name} ({(d.file_format or '').lower()}, {d.path})" for d in foreign)
        raise CarbonTableError(
            f"{operation} is not allowed on table {table.uri}: it holds non-carbondata segments {listed}; "
            "delete those segments (DELETE FROM TABLE ... WHERE SEGMENT.ID IN (...)) or add the data in "
            "carbondata format first"
        )


def compactable(table: CarbonTable, details: list[LoadDetail]) -> list[LoadDetail]:
    """The segments compaction may merge: non-carbondata segments are skipped, as in CarbonData."""
    return [d for d in details if (d.file_format or COLUMNAR).lower() in (COLUMNAR, "carbondata")]
