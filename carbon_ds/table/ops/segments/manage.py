"""Segment management: SHOW SEGMENTS, DELETE SEGMENT by id or start time, CLEAN FILES with a trash folder.

Deleting only marks segments "Marked for Delete" in one atomic tablestatus write under the table lock;
nothing is removed from disk, so a delete is cheap and readers planned before it keep working. CLEAN FILES
then moves the internal files of marked and compacted segments into ``<table>/.Trash/<epoch ms>/Segment_<id>``
(CarbonData's trash layout), drops their entries from tablestatus (appending them to
``Metadata/tablestatus.history``, as CarbonData does) and deletes trash sub-folders older than the retention
(``carbon.trash.retention.days``, default 7). ``force=True`` deletes directly and empties the trash.

External segments (added with ADD SEGMENT: a tablestatus ``path``, a segment file folder with
``isRelative`` false) are never touched on disk: only their metadata goes.

A load left "In Progress" by a writer that is gone (its record, meta.status.load_records: a dead process on this
host, or past the age limit where its writer cannot be checked) is marked "Failure" in the same write and
cleaned like the others; a live load's files are never touched.

Crash safety: CLEAN FILES moves files first and rewrites tablestatus last. A crash in between leaves the
entry "Marked for Delete" (never read) with some or all files in the trash; running CLEAN FILES again
finishes the job. Readable segments are never touched, so the table stays readable at every step.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from carbon_ds.errors import CarbonFormatError, CarbonOptionError, CarbonTableError
from carbon_ds.fs import Storage, basename, dirname, is_inside, norm_path
from carbon_ds.progress import progress
from carbon_ds.table.loads.load_base import fail_dead_loads
from carbon_ds.table.meta.files import deltas
from carbon_ds.table.meta.files import segment_file as segfiles
from carbon_ds.table.meta.files.naming import COLUMNAR, INDEX_EXT, is_columnar, owned_by_index
from carbon_ds.table.meta.files.trash import TRASH_DIR
from carbon_ds.table.meta.handle import TableHandle, int_or_none
from carbon_ds.table.meta.locks import UPDATE_LOCK, UPDATE_LOCK_STALE_S, TableLock, remove_locks
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.load_records import orphan_records, record_path
from carbon_ds.table.meta.status.tablestatus import LoadDetail
from carbon_ds.table.ops.segments.leftovers import external_folders, leftovers, partition_dirs

HISTORY_FILE = "tablestatus.history"
DEFAULT_RETENTION_DAYS = 7.0
MAX_RETENTION_DAYS = 365  # CarbonData accepts 0..365 for carbon.trash.retention.days
DAY_MS = 24 * 3600 * 1000

COLUMNS = (
    "ID",
    "Status",
    "Load Start Time",
    "Load Time Taken",
    "Partition",
    "Data Size",
    "Index Size",
    "File Format",
    "Path",
)
# Statuses a delete refuses, with the reason CarbonData gives.
_REFUSED = {
    ts.COMPACTED: "it is compacted (its rows live on in the merged segment)",
    ts.IN_PROGRESS: "its load is in progress (its writer is alive, or cannot be checked from here yet)",
    ts.OVERWRITE_IN_PROGRESS: "its load overwrite is in progress (its writer is alive, or cannot be checked "
                              "from here yet)",
    ts.STREAMING: "it is streaming in progress",
}
# What CLEAN FILES removes. An In Progress load is first judged by its record (meta.status.load_records): one whose
# writer is gone becomes Failure; a live one, or one that cannot be judged yet, is left alone.
_CLEANABLE = frozenset({ts.MARKED_FOR_DELETE, ts.COMPACTED, ts.FAILURE})


# ------------------------------------------------------------------------------------------ SHOW SEGMENTS
def format_size(size: int | None) -> str:
    if size is None:
        return "NA"
    value = float(size)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1024 or unit == "TB":
            return f"{int(value)}B" if unit == "B" else f"{value:.2f}{unit}"
        value /= 1024
    return str(size)  # pragma: no cover


def format_time(epoch_ms: int | None) -> str:
    """Local wall-clock time with milliseconds, as CarbonData prints load start times."""
    if epoch_ms is None:
        return "NA"
    return datetime.fromtimestamp(epoch_ms / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _time_taken(start: int | None, end: int | None) -> str:
    if start is None or end is None or end < start:
        return "NA"
    return f"{(end - start) / 1000:.3f}S"


def _partition_text(table: TableHandle, detail: LoadDetail) -> str:
    """``{day=20211123,hour=12}`` of the segment's first partition folder, ``, ...`` when it has more."""
    if not detail.segment_file:
        return "NA"
    try:
        seg = segfiles.read(table.storage, table.path, detail.segment_file)
    except (OSError, CarbonFormatError):
        return "NA"
    parts = [d.partitions for d in seg.location_map.values() if d.partitions]
    if not parts:
        return "NA"
    text = "{" + ",".join(parts[0]) + "}"
    return text + ", ..." if len(parts) > 1 else text


def segment_sort_key(name: str) -> tuple:
    """Segment ids in numeric order: 2 < 10, and 0.1 (a compaction result) right after 0."""
    try:
        return (0, *(int(p) for p in name.split(".")))
    except ValueError:
        return (1, name)


def segment_rows(table: TableHandle, limit: int | None = None) -> list[dict[str, str]]:
    """SHOW SEGMENTS rows, newest (highest id) first, every value a string as CarbonData prints it.

    Entries with ``visibility`` false are hidden, as in CarbonData; ``Path`` is "NA" for internal segments.
    """
    if limit is not None and limit < 0:
        raise CarbonOptionError(f"SHOW SEGMENTS limit must be >= 0, found {limit}")
    details = [d for d in table.load_details() if (d.visibility or "true").lower() != "false"]
    details.sort(key=lambda d: segment_sort_key(d.name), reverse=True)
    if limit is not None:
        details = details[:limit]
    rows = []
    for d in details:
        fmt = (d.file_format or COLUMNAR).lower()
        rows.append(
            {
                "ID": d.name,
                "Status": d.status,
                "Load Start Time": format_time(d.load_start_ms),
                "Load Time Taken": _time_taken(d.load_start_ms, d.load_end_ms),
                "Partition": _partition_text(table, d),
                "Data Size": format_size(int_or_none(d.data_size)),
                "Index Size": format_size(int_or_none(d.index_size)) if fmt == COLUMNAR else "NA",
                "File Format": fmt,
                "Path": d.path or "NA",
            }
        )
    return rows


def format_rows(rows: list[dict[str, str]], columns: Iterable[str] = COLUMNS) -> str:
    """A boxed text table like Spark's ``show()``: one header line, one line per row."""
    cols = list(columns)
    widths = [max([len(c), *(len(r[c]) for r in rows)]) for c in cols]
    rule = "+" + "+".join("-" * w for w in widths) + "+"
    lines = [rule, "|" + "|".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)) + "|", rule]
    for r in rows:
        lines.append("|" + "|".join(r[c].ljust(w) for c, w in zip(cols, widths, strict=True)) + "|")
    lines.append(rule)
    return "\n".join(lines)


def show_segments(table: TableHandle, limit: int | None = None) -> str:
    return format_rows(segment_rows(table, limit))


# ------------------------------------------------------------------------------------------ DELETE
def _table_name(table: TableHandle) -> str:
    return table.uri


def _mark(entry: LoadDetail, now: int) -> None:
    entry.status = ts.MARKED_FOR_DELETE
    entry.modification_time = str(now)


def delete_segments(table: TableHandle, ids: Iterable[str | int], now_ms: int | None = None) -> list[str]:
    """Mark the given segments "Marked for Delete" in one tablestatus write; all or nothing.

    Refused (nothing changes) when an id is unknown, already marked for delete, compacted, or still being
    loaded; the error names every offending id and why.
    """
    wanted = list(dict.fromkeys(str(i).strip() for i in ids if str(i).strip()))
    if not wanted:
        raise CarbonOptionError("DELETE SEGMENT needs at least one segment id, found none")
    bad = [i for i in wanted if not all(p.isdigit() for p in i.split("."))]
    if bad:
        raise CarbonOptionError(f"segment ids must be numbers like 3 or 0.1, found {', '.join(map(repr, bad))}")
    now = now_ms if now_ms is not None else ts.now_ms()
    with table.edit_status("DELETE SEGMENT") as edit:
        entries = edit.entries
        fail_dead_loads(table, entries)  # a load whose writer is gone is Failure, deletable (files: CLEAN FILES)
        by_id = {e.name: e for e in entries}
        problems = []
        for i in wanted:
            e = by_id.get(i)
            if e is None:
                problems.append(f"segment {i} is not found")
            elif e.status == ts.MARKED_FOR_DELETE or (e.visibility or "true").lower() == "false":
                problems.append(f"segment {i} is already marked for delete")
            elif e.status in _REFUSED:
                problems.append(f"segment {i} cannot be deleted because {_REFUSED[e.status]}")
        if problems:
            raise CarbonTableError(
                f"Delete segment by Id is failed. Invalid ID is: {', '.join(_offending(problems, wanted))} "
                f"({'; '.join(problems)}) in {_table_name(table)}; nothing was deleted"
            )
        for i in wanted:
            _mark(by_id[i], now)
    return wanted


def _offending(problems: list[str], wanted: list[str]) -> list[str]:
    return [i for i in wanted if any(p.startswith(f"segment {i} ") for p in problems)]


def parse_before(when: str | datetime | int | float) -> int:
    """Epoch ms of a DELETE ... BEFORE time: 'yyyy-MM-dd HH:mm:ss[.SSS]' or 'yyyy-MM-dd', in local time."""
    if isinstance(when, datetime):
        return int(when.timestamp() * 1000)
    if isinstance(when, int | float):
        return int(when)
    text = str(when).strip()
    for fmt in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d"):
        try:
            return int(datetime.strptime(text, fmt).timestamp() * 1000)
        except ValueError:
            continue
    raise CarbonOptionError(f"segment start time must look like 'yyyy-MM-dd HH:mm:ss' (local time), found {text!r}")


def delete_segments_before(
    table: TableHandle, when: str | datetime | int | float, now_ms: int | None = None
) -> list[str]:
    """Mark every segment whose load started strictly before ``when`` (local time); returns their ids.

    As in CarbonData, compacted and in-progress segments in that range are skipped (they are not errors
    here, they are simply not deletable), and it is an error when no segment at all matches.
    """
    cutoff = parse_before(when)
    now = now_ms if now_ms is not None else ts.now_ms()
    with table.edit_status("DELETE SEGMENT BEFORE") as edit:
        entries = edit.entries
        marked, skipped = [], []
        for e in entries:
            start = e.load_start_ms
            if start is None or start >= cutoff or e.status == ts.MARKED_FOR_DELETE:
                continue
            if e.status in _REFUSED:
                skipped.append(f"{e.name} ({e.status})")
                continue
            _mark(e, now)
            marked.append(e.name)
        if not marked:
            extra = f"; skipped: {', '.join(skipped)}" if skipped else ""
            raise CarbonTableError(
                f"Delete segment by date is failed. No matching segment found: no deletable segment of "
                f"{_table_name(table)} started before {format_time(cutoff)}{extra}"
            )
    return marked


# ------------------------------------------------------------------------------------------ CLEAN FILES
@dataclass
class CleanResult:
    trashed: list[str] = field(default_factory=list)  # segment ids whose files went to the trash
    deleted: list[str] = field(default_factory=list)  # segment ids whose files were deleted (force)
    removed_entries: list[str] = field(default_factory=list)  # ids dropped from tablestatus
    kept_external: list[str] = field(default_factory=list)  # external segments: metadata only
    expired_trash: list[str] = field(default_factory=list)  # trash sub-folders deleted
    trash_folder: str | None = None  # where this run put files
    # Leftovers outside any cleaned segment (relative to the table): stale .tmp folders, files of failed
    # or never-committed loads and of dropped/overwritten partition folders, superseded delta/status files.
    leftovers: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # what was not swept, and why
    links: list[str] = field(default_factory=list)  # symbolic links removed as links: "rel -> target (kept)"
    unlocked: list[str] = field(default_factory=list)  # lock files of processes that are gone
    failed_loads: list[str] = field(default_factory=list)  # "<segment>: <why>" of loads whose writer is gone

    def rows(self) -> list[tuple[str, str]]:
        out = [(f"segment {f}", "load's writer is gone: marked Failure") for f in self.failed_loads]
        out += [(i, "moved to trash") for i in self.trashed]
        out += [(i, "deleted") for i in self.deleted]
        out += [(i, "external: files kept, metadata removed") for i in self.kept_external]
        out += [(f, "trash folder expired") for f in self.expired_trash]
        out += [(f, "leftover removed") for f in self.leftovers]
        out += [(f, "symbolic link removed, its target kept") for f in self.links]
        out += [(f, "skipped") for f in self.skipped]
        out += [(f, "stale lock removed") for f in self.unlocked]
        return out


def trash_dir(table: TableHandle) -> str:
    return Storage.join(table.path, TRASH_DIR)


def retention_days(value: float | str | None = None) -> float:
    days = float(DEFAULT_RETENTION_DAYS if value is None else value)
    if not 0 <= days <= MAX_RETENTION_DAYS:
        raise CarbonOptionError(f"carbon.trash.retention.days must be between 0 and 365, found {value!r}")
    return days


def _is_external(detail: LoadDetail) -> bool:
    return bool(detail.path) or not is_columnar(detail.file_format)


def _internal_files(table: TableHandle, detail: LoadDetail) -> list[str]:
    """Every file of an internal segment on disk (data, index, delete deltas), all inside the table folder."""

    storage = table.storage
    files: list[str] = []
    folders: list[tuple[str, list[str] | None]] = [(segfiles.segment_dir(table.path, detail.name), None)]
    if detail.segment_file:
        try:
            seg = segfiles.read(storage, table.path, detail.segment_file)
            folders = []
            for folder, d in seg.folders(table.path):
                if not d.is_relative:
                    continue  # an absolute folder is external data: never ours to delete
                own = norm_path(folder).endswith(f"/Segment_{detail.name}")
                folders.append((folder, None if own else list(d.files)))
        except FileNotFoundError:
            pass  # a half-cleaned segment: its default folder is all that can be left
    for folder, listed in folders:
        if not is_inside(folder, table.path):
            continue
        found = storage.list(folder, recursive=True, follow_links=False)  # a link is ours, never its target
        if listed is None:
            files.extend(f.path for f in found)
        else:
            # A shared partition folder: only the files this segment's index files name or own.
            names = set(listed)
            idx = [n for n in listed if n.endswith(INDEX_EXT)]
            for f in found:
                base = basename(f.path)
                if base in names or any(owned_by_index(base, i) for i in idx):
                    files.append(f.path)
    return [f for f in files if is_inside(f, table.path) and not is_inside(f, trash_dir(table))]


def read_history(table: TableHandle) -> list[LoadDetail]:
    """The entries CLEAN FILES moved out of tablestatus (``Metadata/tablestatus.history``)."""
    return ts.read(table.storage, Storage.join(table.path, "Metadata", HISTORY_FILE))


def clean_files(
    table: TableHandle,
    force: bool = False,
    retention: float | str | None = None,
    now_ms: int | None = None,
) -> CleanResult:
    """Physically remove what deleted and compacted segments left behind; see the module docstring.

    ``retention`` is in days (CarbonData's ``carbon.trash.retention.days``, 0..365, default 7).
    ``now_ms`` injects the clock (tests).
    """
    days = retention_days(retention)
    now = now_ms if now_ms is not None else ts.now_ms()
    storage = table.storage
    result = CleanResult()
    trash_run = Storage.join(trash_dir(table), str(now))
    # locks of crashed writers on this host first: a dead writer's update lock would block the sweep
    result.unlocked = remove_locks(storage, table.path)
    if not force:
        _check_trash(table, trash_run)
    with table.edit_status("CLEAN FILES") as edit:
        entries = edit.entries
        # loads whose writer is gone become Failure, so they are cleaned below (judged by the real clock)
        dead = fail_dead_loads(table, entries)
        result.failed_loads = [f"{r.segment_id}: {why}" for r, why in dead]
        victims = [e for e in entries if e.status in _CLEANABLE]
        vacated: set[str] = set()  # folders files left: partition folders that end up empty go too
        # 1. Files first: the entries still say "Marked for Delete", so no reader looks at them.
        for e in victims:
            if _is_external(e):
                result.kept_external.append(e.name)
                continue
            files = _internal_files(table, e)
            if not files:
                continue
            vacated.update(dirname(f) for f in files)
            for f in progress(files, f"CLEAN FILES: segment {e.name}", unit=" files", min_items=50):
                _dispose(table, f, force, trash_run, result)
            (result.deleted if force else result.trashed).append(e.name)
            if not force:
                result.trash_folder = storage.uri(trash_run)
            _remove_dir(table, segfiles.segment_dir(table.path, e.name), result)
        # 2. Then the metadata, in one atomic write. As in CarbonData (SegmentStatusManager.
        # countInvisibleSegments), two entries stay, invisible: the highest id, so the next load never reuses
        # an id that stale plans or the trash may still know, and segment 0, whose updateStatusFileName is
        # where CarbonData looks for the table's update status (SegmentStatusManager.getUpdateStatusFileName).
        top = ts.next_segment_id(entries)
        kept = {"0", str(int(top) - 1)} if top != "0" else set()
        removed = [e for e in victims if e.name not in kept]
        for e in victims:
            if e.name in kept:
                e.visibility = "false"
        if victims:
            history_path = Storage.join(table.path, "Metadata", HISTORY_FILE)
            history = read_history(table)
            seen = {(h.name, h.load_start_time) for h in history}
            history += [e for e in removed if (e.name, e.load_start_time) not in seen]
            ts.write_history(storage, history_path, history)
            entries[:] = [e for e in entries if e not in removed]
            edit.commit()
            for e in removed:
                if e.segment_file:
                    storage.delete(Storage.join(segfiles.segments_dir(table.path), e.segment_file))
        result.removed_entries = [e.name for e in removed]
        # 2b. Leftovers no segment names any more (still under the lock: no load reserves or commits).
        _sweep_leftovers(table, entries, force, trash_run, result, vacated)
        for path in [record_path(table.path, r.segment_id) for r, _why in dead] + orphan_records(
                storage, table.path, entries):
            storage.delete(path)
    # 3. The trash: expired sub-folders go (all of them with force); needs no lock, nothing reads it.
    for folder in storage.list_dirs(trash_dir(table)):
        name = basename(folder)
        stamp = int(name) if name.isdigit() else None
        if force or (stamp is not None and now - stamp > days * DAY_MS):
            if _remove_dir(table, folder, result):
                result.expired_trash.append(name)
    if force:
        _remove_dir(table, trash_dir(table), result)
    return result


def _check_trash(table: TableHandle, trash_run: str) -> None:
    """A ``.Trash`` that is a link out of the table would carry the table's files away: refuse first."""
    storage = table.storage
    if not storage.resolves_inside(Storage.join(trash_run, "x"), table.path):
        raise CarbonTableError(
            f"CLEAN FILES of {table.uri}: the trash folder {storage.uri(trash_dir(table))} is a symbolic link to "
            f"{storage.real_path(trash_dir(table))}, outside the table; expected a folder of the table (remove "
            "the link, or run CLEAN FILES with force); nothing was cleaned"
        )


def _outside(table: TableHandle, path: str, result: CleanResult) -> bool:
    """Whether ``path`` leads out of the table through a symbolic link; such paths are left and reported."""
    storage = table.storage
    if storage.resolves_inside(path, table.path):
        return False
    result.skipped.append(f"{storage.uri(path)}: its folder resolves to {storage.real_path(dirname(path))}, "
                          f"outside table {table.uri} (a symbolic link); left in place")
    return True


def _remove_dir(table: TableHandle, folder: str, result: CleanResult) -> bool:
    """Delete a folder of the table; a link is removed as a link (never its target's files), and a folder
    reached through a link out of the table is left. True when deleted."""
    if _outside(table, folder, result):
        return False
    table.storage.delete_dir(folder)
    return True


def _dispose(table: TableHandle, f: str, force: bool, trash_run: str, result: CleanResult) -> str | None:
    """Delete ``f`` (force) or move it to ``trash_run`` under its path relative to the table; returns that
    relative path, None when ``f`` leads out of the table (left, reported in ``result.skipped``). A link goes
    as a link: deleted or moved itself, its target untouched, and reported in ``result.links``."""
    storage = table.storage
    if _outside(table, f, result):
        return None
    rel = norm_path(f)[len(norm_path(table.path)) + 1 :]
    if storage.is_link(f):
        result.links.append(f"{rel} -> {storage.real_path(f)}")
    if force:
        storage.delete(f)
    else:
        # Fact/Part0/Segment_3/x -> Segment_3/x, as CarbonData lays out its trash
        in_trash = rel[len("Fact/Part0/") :] if rel.startswith("Fact/Part0/") else rel
        dest = Storage.join(trash_run, *in_trash.split("/"))
        storage.mkdirs(dirname(dest))
        storage.move(f, dest)
    return rel


def _sweep_leftovers(table: TableHandle, entries: list[LoadDetail], force: bool, trash_run: str,
                     result: CleanResult, vacated: set[str] = frozenset()) -> None:
    """The insert/DML protocols' leftovers (partitioned_write.leftovers, deltas.superseded), trashed or
    deleted like segment files. Only files inside the table folder, never in .Trash or an external folder;
    an In Progress load's files and a running DELETE/UPDATE/overwrite's files are never touched."""

    storage = table.storage
    safe = [trash_dir(table), *external_folders(table, entries)]

    def ok(path: str) -> bool:
        return is_inside(path, table.path) and not any(is_inside(path, x) for x in safe)

    files: list[str] = []
    empty_dirs: list[tuple[str, bool]] = []
    pdirs: list[str] = []
    if table.partitioning is not None and table.partitioning.by_folder:
        left = leftovers(table, entries)
        if left is None:
            result.skipped.append("partition folders: a readable segment's file set is unknown "
                                  "(unreadable segment file or a 1.x entry without one)")
        else:
            for d in left.tmp_dirs:
                files += [f.path for f in storage.list(d, recursive=True, follow_links=False)]
            files += left.files
            # a .tmp folder goes alone; an emptied dead partition folder also takes its empty parents
            empty_dirs = [(d, False) for d in left.tmp_dirs] + [(d, True) for d in left.folders]
        pdirs = partition_dirs(table)
        part_dirs = {norm_path(d) for d in pdirs}
        empty_dirs += [(d, True) for d in sorted(vacated) if d in part_dirs]
    # Delta and update status files: only while no DELETE/UPDATE/overwrite runs (they write before they
    # commit); a held update lock just postpones this part to the next CLEAN FILES.
    lock = TableLock(storage, table.path, UPDATE_LOCK, timeout=0.0, stale_after=UPDATE_LOCK_STALE_S,
                     operation="CLEAN FILES")
    try:
        lock.acquire()
    except CarbonTableError as e:
        result.skipped.append(f"delete deltas: update lock is held ({e})")
    else:
        try:
            seg_dirs = storage.list_dirs(Storage.join(table.path, "Fact", "Part0"))
            files += deltas.superseded(storage, table.path, entries, pdirs + seg_dirs)
        finally:
            lock.release()
    for f in dict.fromkeys(files):
        if ok(f):
            rel = _dispose(table, f, force, trash_run, result)
            if rel is not None:
                result.leftovers.append(rel)
                if not force:
                    result.trash_folder = storage.uri(trash_run)
    for d, climb in empty_dirs:
        # emptied partition folders (and their empty parents) go, as Hive's DROP PARTITION removes them
        while (ok(d) and storage.resolves_inside(d, table.path) and storage.is_dir(d) and not storage.list(d, recursive=True)
                and not storage.list_dirs(d)):
            storage.delete_dir(d)
            if not climb:
                break
            d = dirname(d)


def trash_contents(table: TableHandle) -> dict[str, list[str]]:
    """Trash sub-folder (epoch ms) -> files in it, relative to that sub-folder."""
    out = {}
    for folder in table.storage.list_dirs(trash_dir(table)):
        base = norm_path(folder)
        out[posixpath.basename(base)] = [
            norm_path(f.path)[len(base) + 1 :] for f in table.storage.list(folder, recursive=True)
        ]
    return out


# Folders CarbonData itself creates in a table folder; DROP TABLE removes these and nothing else.
_TABLE_DIRS = ("Metadata", "Fact", "LockFiles", TRASH_DIR)


def drop_table_files(table: TableHandle) -> list[str]:
    """DROP TABLE's deletion: the table's own folders (Metadata, Fact, LockFiles, .Trash and its ``col=value``
    partition folders), never external segment folders, never files it does not know; the table folder
    goes only when nothing else is left in it. Returns what was left in place (unknown entries)."""
    storage = table.storage
    external = external_folders(table, table.load_details())
    for name in _TABLE_DIRS:
        folder = Storage.join(table.path, name)
        if not any(is_inside(x, folder) for x in external):
            storage.delete_dir(folder)
    for folder in storage.list_dirs(table.path):
        if "=" in basename(folder) and not any(is_inside(x, folder) or is_inside(folder, x) for x in external):
            storage.delete_dir(folder)
    left = [basename(p) for p in storage.list_dirs(table.path)] + [basename(f.path) for f in storage.list(table.path)]
    if not left:
        storage.delete_dir(table.path)
    return sorted(left)
