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

import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.ddl.types import arrow_type
from carbon_ds.errors import CarbonError, CarbonOptionError, CarbonSchemaError, CarbonTableError, CarbonValueError
from carbon_ds.fs import Storage, basename, dirname, is_inside, norm_path
from carbon_ds.progress import progress
from carbon_ds.readers import external as ext
from carbon_ds.readers.carbon_file import CarbonDataFile
from carbon_ds.table.meta.files import segment_file as segfiles
from carbon_ds.table.meta.files.data_files import FOOTER_ROWS, record_rows
from carbon_ds.table.meta.files.naming import is_columnar
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.tablestatus import LoadDetail
from carbon_ds.table.ops.segments import add_hints as hints
from carbon_ds.table.ops.segments.add_hints import BAD_VALUE
from carbon_ds.table.ops.views import refresh_after_load

_SPEC_ITEM = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([A-Za-z]+(?:\s*\(\s*\d+\s*(?:,\s*\d+\s*)?\))?)\s*$")


# ------------------------------------------------------------------------------------------ partitions
def _options_map(given: dict[str, str]) -> str:
    """The options as CarbonData prints them in its messages: ``Map(path -> ..., format -> ...)``."""
    return "Map(" + ", ".join(f"{k} -> {v}" for k, v in given.items()) + ")"


def parse_partition_spec(text: str, given: dict[str, str]) -> list[tuple[str, pa.DataType]]:
    """``'day:int, hour:int'`` -> [(name, type)]; anything else is CarbonData's "invalid partition option"."""
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
SHOWN_FILES = 5  # failing files an error lists; the report (dry run) keeps them all
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
    causes: list[str] = field(default_factory=list)  # what most likely explains the failing files, said first

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
        """The error text: the likely cause first (``causes``), then at most ``SHOWN_FILES`` failing files
        (``dry_run=True`` / ``--dry-run`` lists every file)."""
        schema = ", ".join(f"{f.name}:{f.type}" for f in self.table_schema)
        bad = self.bad_files
        lines = list(self.causes)
        lines += [
            f"Schema is not same. Table schema is : {schema}; {len(bad)} of {len(self.files)} "
            f"{self.format} file(s) under {self.path} do not match:"
        ] if bad else [f"cannot add {self.path} ({self.format}) to {self.table}:"]
        lines += [f"  {p}" for p in self.problems]
        lines += [f"  {f.path}: {'; '.join(f.problems)}" for f in bad[:SHOWN_FILES]]
        if len(bad) > SHOWN_FILES:
            lines.append(f"  ... and {len(bad) - SHOWN_FILES} more file(s) (a dry run lists every file)")
        return "\n".join(lines)

    def __str__(self) -> str:
        head = (f"add segment {'ok' if self.ok else 'REFUSED'}: {self.path} ({self.format}) -> {self.table}, "
                f"{len(self.segments)} segment(s), {len(self.files)} file(s)")
        lines = [head] + [f"  cause: {c}" for c in self.causes] + [f"  problem: {p}" for p in self.problems]
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
    rel = norm_path(path)[len(norm_path(root)) + 1:]
    return [p for p in rel.split("/") if p]


def find_data_files(storage: Storage, folder: str, fmt: str, seen: set[str] | None = None) -> list[tuple[str, int]]:
    """Data files under ``folder`` (recursively), without hidden files or folders (``_SUCCESS``, ``.crc``,
    ``_temporary``) and, for carbondata, only ``.carbondata`` files. A file reached twice through symbolic
    links is listed once (``seen``: real paths already taken, shared across a call's folders)."""
    seen = set() if seen is None else seen
    out = []
    carbon_table = is_carbon_table(storage, folder)
    for f in storage.list(folder, recursive=True):
        parts = _rel_parts(f.path, folder)
        if any(_hidden(p) for p in parts):
            continue
        if carbon_table and parts[0] == "Metadata":  # schema, tablestatus, segment files: never data
            continue
        if fmt == "carbondata" and not f.path.endswith(".carbondata"):
            continue
        real = storage.real_path(f.path)
        if real in seen:
            continue
        seen.add(real)
        out.append((f.path, f.size))
    return out


def is_carbon_table(storage: Storage, folder: str) -> bool:
    """Whether ``folder`` is a CarbonData table's own folder (it holds ``Metadata/schema``)."""
    return storage.exists(Storage.join(folder, "Metadata", "schema"))


def check_outside(storage: Storage, root: str, table: TableHandle) -> None:
    """Refuse a folder that is, holds or reaches (through a symbolic link anywhere in its tree) the table's
    own folder or a part of it: those files would be read twice, and cleaned with the table's."""
    table_real = storage.real_path(table.path)

    def clash(path: str, real: str) -> str | None:
        if is_inside(path, table.path) or is_inside(real, table_real):
            return "lies inside"
        if is_inside(table.path, path) or is_inside(table_real, real):
            return "contains"
        return None

    where = clash(root, storage.real_path(root))
    if where is not None:
        real = storage.real_path(root)
        via = f" (a symbolic link to {real})" if real != norm_path(root) else ""
        raise CarbonTableError(f"add segment: path {storage.uri(root)}{via} {where} table {table.uri}; "
                               "expected a folder outside the table")
    for link, target in storage.links(root):
        where = clash(target, target)
        if where is not None:
            raise CarbonTableError(
                f"add segment: {storage.uri(link)} under {storage.uri(root)} is a symbolic link to {target}, which "
                f"{where} table {table.uri}; expected data outside the table (its files would be read twice)"
            )


def _split_kv(name: str) -> tuple[str, str] | None:
    if "=" not in name:
        return None
    k, v = name.split("=", 1)
    return (k, v) if k else None


def find_leaves(storage: Storage, root: str, fmt: str, pcols: list[str],
                problems: list[str]) -> list[tuple[str, list[tuple[str, str]], list[tuple[str, int]]]]:
    """(folder, partition values, data files) for every segment ``root`` holds."""
    seen: set[str] = set()
    if not pcols:
        return [(root, [], find_data_files(storage, root, fmt, seen))]
    lower = [c.lower() for c in pcols]
    # partition folders the path itself ends in: .../day=20211123/hour=12/type=0
    fixed: dict[str, str] = {}
    for comp in reversed([p for p in norm_path(root).split("/") if p]):
        kv = _split_kv(comp)
        if kv is None or kv[0].lower() not in lower or kv[0].lower() in fixed:
            break
        fixed[kv[0].lower()] = kv[1]
    remaining = [c for c in pcols if c.lower() not in fixed]
    leaves = []

    def walk(folder: str, depth: int, values: dict[str, str]):
        if depth == len(remaining):
            vals = {**fixed, **values}
            leaves.append((folder, [(c, vals[c.lower()]) for c in pcols], find_data_files(storage, folder, fmt, seen)))
            return
        want = remaining[depth]
        for f in storage.list(folder):
            name = basename(f.path)
            if not _hidden(name):
                problems.append(f"file {storage.uri(f.path)} lies outside the partition folders "
                                f"(expected folders {want}=<value> in {storage.uri(folder)})")
        for d in storage.list_dirs(folder):
            name = basename(d)
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
def check_file(storage: Storage, path: str, size: int, fmt: str, options: dict[str, str], schema: pa.Schema,
                pcols: list[str], partitions: list[tuple[str, str]]) -> FileCheck:
    check = FileCheck(storage.uri(path), size)
    try:
        if fmt == "carbondata":

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
                bad = (pc.sum(pc.invert(pc.fill_null(pc.equal(col, value), False))).as_py() if value.is_valid
                    else col.length() - col.null_count)
                if bad:
                    check.problems.append(f"partition column {c}: folder says {c}={raw} but {bad} row(s) of the "
                                          f"file hold another value")
    except CarbonValueError as e:
        check.problems.append(f"{BAD_VALUE}{e.detail}")
    except CarbonError as e:
        check.problems.append(f"unreadable: {e}")
    except (OSError, ValueError, pa.ArrowException) as e:
        check.problems.append(f"unreadable as {fmt}: {type(e).__name__}: {e}")
    return check


def duplicate_paths(entries: list[LoadDetail], paths: list[str], storage: Storage | None = None) -> list[str]:
    """New segment folders already registered by a segment that still counts (not deleted or failed); with
    ``storage``, also one registered under another name of the same real folder (a symbolic link)."""
    live = {norm_path(e.path) for e in entries
            if e.path and e.status not in (ts.MARKED_FOR_DELETE, ts.FAILURE, ts.COMPACTED)}

    def real(uri: str) -> str:
        if storage is None or not storage.is_local:  # object stores have no links
            return norm_path(uri)
        return storage.real_path(Storage.for_path(uri)[1])

    live_real = {real(p) for p in live}
    return [p for p in paths if norm_path(p) in live or real(p) in live_real]


def duplicate_error(path: str) -> CarbonTableError:
    return CarbonTableError(
        f"path already exists in table status file, can not add same segment path repeatedly: {path}"
    )


# ------------------------------------------------------------------------------------------ the command
# what ADD SEGMENT itself reads and what the CSV / JSON readers take (carbon_ds.readers.external.csv, .text)
ADD_SEGMENT_OPTIONS = frozenset({
    "path", "format", "partition", "header", "fileheader_present", "delimiter", "sep", "quote", "quotechar",
    "escape", "escapechar", "dateformat", "date_format", "timestampformat", "timestamp_format", "multiline",
    "nullvalue",
})


def add_segment(table: TableHandle, path: str, format: str | None = "carbondata", partition: str | None = None,
                options: dict[str, str] | None = None, dry_run: bool = False):
    """Add ``path`` as new segment(s); returns the new segment ids, or with ``dry_run`` the
    ``ValidationReport`` (nothing is written). Raises when the folder does not fit the table."""
    text = "" if path is None else str(path).strip()
    given: dict[str, str] = {"path": text, "format": (format or "carbondata")}
    if partition is not None:
        given["partition"] = partition
    opts = {str(k).lower(): str(v) for k, v in (options or {}).items()}
    unknown = sorted(set(opts) - ADD_SEGMENT_OPTIONS)
    if unknown:  # a misspelt reading option ('delimter') would otherwise be ignored for good
        raise CarbonOptionError(f"add segment: unknown option(s) {', '.join(unknown)} for table {table.uri}; "
                                f"valid: {', '.join(sorted(ADD_SEGMENT_OPTIONS))}")
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
    check_outside(storage, root, table)
    pcols = table.partition_columns
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
    dups = duplicate_paths(table.load_details(), [storage.uri(f) for f, _p, _files in leaves], storage)
    if dups and not dry_run:
        raise duplicate_error(dups[0])
    report.problems += [f"already added: {d}" for d in dups]
    for folder, parts, files in leaves:
        checks = []
        for c, raw in parts:
            try:
                ext.partition_scalar(raw, schema.field(c).type)
            except (pa.ArrowException, ValueError) as e:
                report.problems.append(f"folder {storage.uri(folder)}: partition value {c}={raw} is not a "
                                       f"{schema.field(c).type}: {e}")
        for p, size in progress(files, f"checking {fmt} files of {basename(folder) or folder}", unit=" files"):
            checks.append(check_file(storage, p, size, fmt, opts, schema, pcols, parts))
        report.segments.append(PlannedSegment(folder, parts, checks))
    if not report.files:
        report.problems.append(f"no {fmt} data files found under {storage.uri(root)}")
    _explain(report, storage, root, fmt, pcols)
    if dry_run:
        return report
    if not report.ok:
        raise CarbonSchemaError(report.message())
    return _commit(table, report, fmt, given)


def _explain(report: ValidationReport, storage: Storage, root: str, fmt: str, pcols: list[str]) -> None:
    """The likely cause of failing files, put before them (carbon_ds.table.ops.segments.add_hints)."""
    bad = [(f.path, f.problems) for f in report.bad_files]
    if not bad:
        return
    cause = hints.value_cause(bad) or hints.format_cause(bad, len(report.files), fmt, report.path,
                                                         is_carbon_table(storage, root))
    if cause is None and not pcols:
        cause = hints.hive_cause(bad, report.path, report.table_schema)
    if cause is not None:
        report.causes.append(cause)


def _commit(table: TableHandle, report: ValidationReport, fmt: str, given: dict[str, str]) -> list[str]:
    table.check_writable("ADD SEGMENT", data=True)
    start = ts.now_ms()
    storage = table.storage
    seg_options = {k: v for k, v in given.items()}
    seg_options["format"] = fmt
    added = []
    with table.edit_status("ADD SEGMENT") as edit:
        entries = edit.entries
        dups = duplicate_paths(entries, [storage.uri(s.folder) for s in report.segments], storage)
        if dups:  # someone added it while we were validating
            raise duplicate_error(dups[0])
        for s in report.segments:
            seg = ts.next_segment_id(entries)
            end = ts.now_ms()
            names = []
            for f in s.files:
                fs_path = Storage.for_path(f.path)[1]
                parent = dirname(fs_path)
                # the planner joins bare names to the folder; deeper files are listed by full path
                names.append(posixpath.basename(fs_path) if parent == norm_path(s.folder) else fs_path)
            details = segfiles.FolderDetails(
                files=names, partitions=[f"{c.lower()}={v}" for c, v in s.partitions], is_relative=False
            )
            seg_name = segfiles.segment_file_name(seg, end)
            options = dict(seg_options)
            if fmt in FOOTER_FORMATS:
                # the footers' row counts read while checking, so a count never opens them again
                options[FOOTER_ROWS] = record_rows(_footer_rows(storage, s.files, names))
            segfiles.write(storage, table.path, seg_name, segfiles.SegmentFile({s.folder: details}, options))
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
    refresh_after_load(table)  # the table's on_commit materialized views
    return added


FOOTER_FORMATS = ("parquet", "orc")  # formats whose footers hold exact row counts


def _footer_rows(storage, files: list[FileCheck], names: list[str]) -> dict[str, tuple[int, int, int | None]]:
    """{listed name: (rows, size, mtime_ns)} of the checked files whose row count is known."""
    out = {}
    for f, name in zip(files, names, strict=True):
        if f.rows is not None:
            size, mtime = storage.stat(Storage.for_path(f.path)[1])
            if size == f.size:  # else rewritten since it was checked: its footer is read when counted
                out[name] = (f.rows, size, mtime)
    return out


# ------------------------------------------------------------------------------------------ mixed tables
def compactable(table: TableHandle, details: list[LoadDetail]) -> list[LoadDetail]:
    """The segments compaction may merge: non-carbondata segments are skipped, as in CarbonData."""
    return [d for d in details if is_columnar(d.file_format)]
