"""Compaction: merge small carbondata segments into one, as Apache CarbonData does (MINOR, MAJOR, CUSTOM).

Selection (table properties, CarbonData's names and defaults):
- MINOR by count levels, ``compaction_level_threshold`` ("4,3"): 4 consecutive level-0 segments (plain
  loads) merge into a level-1 segment, 3 consecutive level-1 segments into a level-2 one; repeated until no
  group is left. A segment written by a MAJOR compaction is not taken again by MINOR.
- MAJOR by size, ``major_compaction_size`` (MB, 1024): the oldest segments whose total size stays within it.
- CUSTOM: the segment ids given.
- ``compaction_preserve_segments`` (0): the newest N segments are left alone; ``allowed_compaction_days``
  (0: off): only segments loaded within N days of the group's first one are merged.
- Skipped always: segments not readable (In Progress, Marked for Delete, Compacted, Failure, Streaming)
  and segments in another format than carbondata (added Parquet/ORC/CSV/JSON folders). An added carbondata
  folder may be merged; its folder is never deleted (CLEAN FILES only drops its metadata).

Protocol for one group (under ``LockFiles/compaction.lock`` and the update lock, so a second compaction is
refused naming the holder and UPDATE/DELETE/overwrites fail clearly instead of losing a change):
1. Reserve the merged segment ``<first id>.<level>`` ("In Progress") in one tablestatus write.
2. Stream the group's rows (delete-delta rows dropped) through a k-way merge of sorted runs into the
   table's normal load (``table/write``): block/blocklet size and compressor of the table apply; on a
   partitioned table one task per partition folder.
3. One tablestatus write flips the merged segment to Success and the sources to Compacted with
   ``mergedLoadName``: readers see either the old segments or the merged one, never both.
A crash before 3 leaves the merged segment "In Progress" (never read) and the sources readable; the next
compaction removes that leftover and merges again under the same name. Concurrent appends take new
integer ids and are never touched.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds import faults
from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.fs import dirname
from carbon_ds.progress import progress, row_progress
from carbon_ds.table.meta import deltas as D
from carbon_ds.table.meta import tablestatus as ts
from carbon_ds.table.meta.handle import DataFile, TableHandle, parse_segment_ids
from carbon_ds.table.meta.locks import UPDATE_LOCK_STALE_S, TableLock
from carbon_ds.table.meta.naming import is_columnar
from carbon_ds.table.meta.options import LoadOptions
from carbon_ds.table.meta.properties import TableProperties
from carbon_ds.table.meta.tablestatus import LoadDetail
from carbon_ds.table.read.planning import read_file
from carbon_ds.table.write.load import Reservation, sort_for_load
from carbon_ds.table.write.protocol import load_for

MINOR, MAJOR, CUSTOM = "minor", "major", "custom"
KINDS = (MINOR, MAJOR, CUSTOM)
COMPACTION_LOCK = "compaction"
# Table properties (CarbonData's carbon.compaction.level.threshold etc. as TBLPROPERTIES) and defaults
LEVEL_THRESHOLD = "compaction_level_threshold"
LEVEL_THRESHOLD_DEFAULT = "4,3"
MAJOR_SIZE = "major_compaction_size"  # MB
MAJOR_SIZE_DEFAULT = 1024
PRESERVE = "compaction_preserve_segments"
ALLOWED_DAYS = "allowed_compaction_days"
AUTO_LOAD_MERGE = "auto_load_merge"
DAY_MS = 24 * 3600 * 1000
# Rows held by the merge at once, shared among its runs (each run also holds its current data file)
MERGE_BUDGET_ROWS = 1_000_000


@dataclass
class Merged:
    """One merge group's outcome."""

    segment: str  # the merged segment's id, e.g. "0.1"
    sources: list[str] = field(default_factory=list)
    rows: int = 0


# ------------------------------------------------------------------------------------------ selection
def parse_kind(kind: str) -> str:
    k = str(kind).strip().strip("'\"").lower()
    if k not in KINDS:
        raise CarbonOptionError(f"compaction kind must be one of {', '.join(KINDS)} (any case), found {kind!r}")
    return k


def level_of(name: str) -> int:
    """0 for a load, N for the result of an N-th level merge ("0.1" -> 1, "0.2" -> 2)."""
    return int(name.rsplit(".", 1)[1]) if "." in name and name.rsplit(".", 1)[1].isdigit() else 0


def level_thresholds(props: TableProperties) -> list[int]:
    text = props.get(LEVEL_THRESHOLD) or LEVEL_THRESHOLD_DEFAULT
    try:
        levels = [int(p) for p in str(text).split(",") if p.strip()]
    except ValueError:
        levels = []
    if not levels or any(not 0 <= n <= 100 for n in levels):
        raise CarbonOptionError(f"table property {LEVEL_THRESHOLD}={text!r} of {props.where}: expected two "
                                "comma-separated counts between 0 and 100, e.g. '4,3'")
    return levels


def mergeable(entry: LoadDetail) -> bool:
    """Whether compaction may take a segment: readable, carbondata format, not a streaming segment."""
    return entry.readable and is_columnar(entry.file_format) and entry.status not in (ts.STREAMING,
                                                                                         ts.STREAMING_FINISH)


def candidates(table: TableHandle, entries: list[LoadDetail]) -> list[LoadDetail]:
    """Mergeable segments in load order, less the newest ``compaction_preserve_segments``."""
    props = TableProperties(table.properties, table.uri)
    found = [e for e in entries if mergeable(e)]
    keep = props.as_int(PRESERVE, 0)
    if keep < 0:
        raise CarbonOptionError(f"table property {PRESERVE}={keep} of {table.uri}: expected 0 or more")
    return found[: len(found) - keep] if keep else found


def _within_days(group: list[LoadDetail], days: int) -> list[LoadDetail]:
    """The leading segments loaded within ``days`` of the first one (all when ``days`` is 0)."""
    if days <= 0 or not group:
        return group
    first = group[0].load_start_ms or 0
    return [e for e in group if abs((e.load_start_ms or first) - first) <= days * DAY_MS]


def select(table: TableHandle, entries: list[LoadDetail], kind: str, segments=None) -> list[LoadDetail]:
    """The next group to merge ([] when there is none)."""
    props = TableProperties(table.properties, table.uri)
    days = props.as_int(ALLOWED_DAYS, 0)
    if kind == CUSTOM:
        return _custom(table, entries, segments)
    pool = candidates(table, entries)
    if kind == MAJOR:
        limit = props.as_int(MAJOR_SIZE, MAJOR_SIZE_DEFAULT) * 1024 * 1024
        group, total = [], 0
        for e in pool:
            size = int(e.data_size or 0) + int(e.index_size or 0)
            if total + size > limit:
                break
            group.append(e)
            total += size
        group = _within_days(group, days)
        return group if len(group) >= 2 else []
    for level, need in enumerate(level_thresholds(props)):
        if need < 2:
            continue
        run: list[LoadDetail] = []
        for e in pool:
            if level_of(e.name) == level and (e.major_compacted or "").lower() != "true":
                run.append(e)
                run = _within_days(run, days) if days else run
                if len(run) == need:
                    return run
            else:
                run = []  # levels merge only consecutive segments
    return []


def _custom(table: TableHandle, entries: list[LoadDetail], segments) -> list[LoadDetail]:
    wanted = parse_segment_ids(segments)
    if not wanted:
        raise CarbonOptionError("CUSTOM compaction needs segment ids: WHERE SEGMENT.ID IN (1, 2, 5) or "
                                "compact(kind='custom', segments=[1, 2, 5])")
    by_id = {e.name: e for e in entries}
    problems = []
    for i in wanted:
        e = by_id.get(i)
        if e is None:
            problems.append(f"{i} (not found)")
        elif not e.readable:
            problems.append(f"{i} ({e.status})")
        elif not is_columnar(e.file_format):
            problems.append(f"{i} (format {(e.file_format or '').lower()}: only carbondata segments are merged)")
    if problems:
        raise CarbonTableError(f"CUSTOM compaction of {table.uri} refused: segments {', '.join(problems)} cannot "
                               "be compacted; nothing was changed")
    order = {e.name: n for n, e in enumerate(entries)}
    return sorted((by_id[i] for i in dict.fromkeys(wanted)), key=lambda e: order[e.name])


def merged_name(group: list[LoadDetail], entries: list[LoadDetail]) -> str:
    """``<first id>.<level + 1>`` as CarbonData names merged segments; never an id already in tablestatus."""
    first = group[0].name
    base, level = (first.rsplit(".", 1)[0], level_of(first)) if "." in first else (first, 0)
    taken = {e.name for e in entries}
    level += 1
    while f"{base}.{level}" in taken:
        level += 1
    return f"{base}.{level}"


# ------------------------------------------------------------------------------------------ merging
def _key(t: pa.Table, keys: list[str], i: int) -> tuple:
    return tuple(t.column(k)[i].as_py() for k in keys)


def _order(key: tuple) -> tuple:
    """A Python sort key matching Arrow's ascending order with nulls first."""
    return tuple((0,) if v is None else (1, v) for v in key)


def _at_most(t: pa.Table, keys: list[str], bound: tuple) -> pa.ChunkedArray | pa.Array:
    """Rows of ``t`` whose sort key is <= ``bound`` (lexicographic, nulls first), vectorised."""
    acc = None
    for k, v in reversed(list(zip(keys, bound, strict=True))):
        col = t.column(k)
        if v is None:
            lt = pa.array([False] * t.num_rows, pa.bool_())
            eq = pc.is_null(col)
        else:
            s = pa.scalar(v, type=col.type)
            lt = pc.or_(pc.is_null(col), pc.fill_null(pc.less(col, s), False))
            eq = pc.fill_null(pc.equal(col, s), False)
        acc = pc.or_(lt, eq) if acc is None else pc.or_(lt, pc.and_(eq, acc))
    return acc


def merge_sorted(runs: list[Iterator[pa.Table]], keys: list[str]) -> Iterator[pa.Table]:
    """One stream in ``keys`` order from runs each already in that order, holding about one chunk per run.

    Each round pulls the next chunk of the run whose last pulled key is smallest (the bound): every row
    <= bound can be emitted, since no run can still deliver a smaller one."""
    if not keys:
        for r in runs:
            yield from r
        return
    carry: pa.Table | None = None
    last: dict[int, tuple] = {}

    def pull(i: int) -> None:
        nonlocal carry
        t = next(runs[i], None)
        while t is not None and t.num_rows == 0:
            t = next(runs[i], None)
        if t is None:
            last.pop(i, None)
            return
        last[i] = _key(t, keys, t.num_rows - 1)
        carry = t if carry is None else pa.concat_tables([carry, t])

    for i in range(len(runs)):
        pull(i)
    while last:
        i = min(last, key=lambda j: _order(last[j]))
        assert carry is not None
        mask = _at_most(carry, keys, last[i])
        out = carry.filter(mask)
        carry = carry.filter(pc.invert(mask)).combine_chunks()
        yield sort_for_load(out.combine_chunks(), keys)
        pull(i)
    if carry is not None and carry.num_rows:
        yield sort_for_load(carry.combine_chunks(), keys)


def _run(table: TableHandle, f: DataFile, deletes: D.Deletes | None, keys: list[str], chunk: int
         ) -> Iterator[pa.Table]:
    """One data file's live rows in sort order, in chunks (read when the merge first asks)."""
    t = read_file(table.storage, f, None, table.schema, table.columns)
    if deletes is not None:
        t = D.drop_deleted(table.storage, deletes, f, t)
    t = sort_for_load(t.combine_chunks(), keys)
    for off in range(0, t.num_rows, chunk):
        yield t.slice(off, chunk)


# ------------------------------------------------------------------------------------------ running
def compact(table: TableHandle, kind: str = MINOR, segments=None, lock_timeout: float = 0.0) -> list[Merged]:
    """Run a compaction; returns the merged segments ([] when nothing qualified).

    Raises:
        CarbonTableError: another compaction (or UPDATE/DELETE/overwrite) holds its lock, naming it; a
            CUSTOM segment cannot be compacted; a source changed meanwhile (nothing committed).
    """
    kind = parse_kind(kind)
    if kind != CUSTOM and segments is not None:
        raise CarbonOptionError(f"segments={segments!r} is only for kind='custom', found kind={kind!r}")
    operation = f"{kind.upper()} COMPACTION"
    lock = TableLock(table.storage, table.path, COMPACTION_LOCK, timeout=lock_timeout,
                     stale_after=UPDATE_LOCK_STALE_S, operation=operation)
    try:
        lock.acquire()
    except CarbonTableError:
        raise CarbonTableError(
            f"{operation} of {table.uri} refused: another compaction ({lock.holder() or 'not recorded'}) holds "
            f"{table.storage.uri(lock.path)}; retry when it has finished, or 'carbon-ds unlock' if that "
            "process is gone") from None
    with lock, table.update_lock(operation, lock_timeout):
        _drop_failed_merges(table)
        done: list[Merged] = []
        while True:
            group = select(table, table.load_details(), kind, segments)
            if not group:
                break
            done.append(_merge_group(table, group, kind))
            if kind != MINOR:
                break
        return done


def _drop_failed_merges(table: TableHandle) -> None:
    """Merged segments a compaction left "In Progress" (it died: we hold the compaction lock, so none is
    running) or "Failure" lose their files and their entry, so the retry takes the same name, as in
    CarbonData. No reader ever saw them."""
    with table.lock():
        entries = table.load_details()
        stale = [e for e in entries if "." in e.name and e.status in (ts.IN_PROGRESS, ts.FAILURE)]
        for e in stale:
            start = e.load_start_ms or 0
            load_for(table, Reservation(table.uri, e.name, start, False), LoadOptions())._remove_files()
        if stale:
            ts.write(table.storage, table.tablestatus_path, [e for e in entries if e not in stale])


def _merge_group(table: TableHandle, group: list[LoadDetail], kind: str) -> Merged:
    start = ts.now_ms()
    ids = [e.name for e in group]
    with table.lock():
        entries = table.load_details()
        name = merged_name(group, entries)
        _check_sources(table, entries, ids, name)
        entries.append(LoadDetail(name=name, status=ts.IN_PROGRESS, load_start_time=str(start),
                                  visibility="true"))
        ts.write(table.storage, table.tablestatus_path, entries)
        status_name = D.committed_status_name(entries)
    faults.point("compaction.reserved")
    load = load_for(table, Reservation(table.uri, name, start, False), LoadOptions())
    load.presorted = True  # the merge delivers rows in sort order: the writer streams them
    merged = Merged(name, ids)
    try:
        files = table.files(ids)
        deletes = table.deletes(entries)
        keys = table.sort_columns
        groups: dict[str, list[DataFile]] = {}
        for f in files:  # one task per partition folder (CarbonData merges partition by partition)
            groups.setdefault(dirname(f.path) if table.partition_columns else "", []).append(f)
        for task_no, (_folder, fs) in enumerate(progress(sorted(groups.items()), f"compacting into {name}",
                                                          unit=" partitions")):
            chunk = max(4096, MERGE_BUDGET_ROWS // max(1, len(fs)))
            runs = [_run(table, f, deletes, keys, chunk) for f in fs]
            merged.rows += load.write(row_progress(merge_sorted(runs, keys), f"merging {len(fs)} files"),
                                      task_no=task_no).rows
        faults.point("compaction.written")

        def finish(entries: list[LoadDetail]) -> None:
            faults.point("compaction.before_status")
            _check_sources(table, entries, ids, None)
            if D.committed_status_name(entries) != status_name:
                raise CarbonTableError(f"compaction of {table.uri}: rows of segments {', '.join(ids)} were "
                                       "updated or deleted meanwhile; nothing was committed")
            now = str(ts.now_ms())
            for e in entries:
                if e.name in ids:
                    e.status = ts.COMPACTED
                    e.merged_load_name = name
                    e.modification_time = now
                elif e.name == name and kind == MAJOR:
                    e.major_compacted = "true"

        load.stage(finish)
        load.commit()
    except BaseException:
        load.abort()
        raise
    return merged


def _check_sources(table: TableHandle, entries: list[LoadDetail], ids: list[str], name: str | None) -> None:
    for i in ids:
        e = ts.find(entries, i)
        if e is None or not mergeable(e):
            found = "gone" if e is None else f"{e.status!r}"
            raise CarbonTableError(f"compaction of {table.uri}: segment {i} is {found} now (deleted or "
                                   "overwritten meanwhile); nothing was committed")


def auto_compact(table: TableHandle) -> list[Merged]:
    """MINOR compaction after a load when the table property ``auto_load_merge`` is true (off by default).
    Never raises: the load is committed either way, so a failure (another compaction running, a lock held)
    is reported as a warning, as CarbonData logs it."""
    try:
        if not TableProperties(table.properties, table.uri).as_bool(AUTO_LOAD_MERGE, False):
            return []
        return compact(table, MINOR)
    except Exception as e:  # noqa: BLE001 - a committed load must not fail afterwards
        warnings.warn(f"automatic compaction of {table.uri} after a load did not run: {e}", stacklevel=2)
        return []
