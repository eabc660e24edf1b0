"""Which segments a compaction merges, as Apache CarbonData selects them (CarbonDataMergerUtil).

Properties: the table property (CarbonData's TBLPROPERTIES name, case-insensitive) wins, else the
system-level setting (CarbonData's ``carbon.*`` name, passed in ``settings``: Spark conf on the SQL path),
else CarbonData's default.

- Candidates: segments readable and in carbondata format (not streaming), ordered by id as numbers
  (``0``, ``0.1``, ``1``, ...); the newest ``compaction_preserve_segments`` are left out; with
  ``allowed_compaction_days`` N > 0, only a run of segments whose load dates lie less than N calendar days
  after the run's first one (a run of one starts again at the next segment).
- MINOR: walking the candidates, plain loads (level 0) and level-1 segments are counted apart; the first
  count to reach its threshold (``compaction_level_threshold``, "4,3") is merged. Level-2 and MAJOR results
  are never taken; with ``minor_compaction_size`` set, segments of that many MB or more are skipped.
- Deep MINOR (the streaming sink's merge, not a CarbonData kind): as MINOR, and then results of level 2 and
  above merge again, every level-2 count of one level into the next (``0.2``, ``12.2``, ``24.2`` ->
  ``0.3``), while the group's data stays under ``major_compaction_size``. A stream's live segments then grow
  with the logarithm of its batches instead of one per 12 batches; CarbonData reads the result as any
  merged segment.
- MAJOR: the oldest segments whose data sizes add up to less than ``major_compaction_size`` MB (1024); a
  segment alone above it is skipped.
- CUSTOM: the ids given; each must exist, be readable and in carbondata format.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.table.meta.files.naming import is_columnar
from carbon_ds.table.meta.handle import TableHandle, parse_segment_ids
from carbon_ds.table.meta.options import parse_bool
from carbon_ds.table.meta.schema.properties import TableProperties
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.tablestatus import LoadDetail

MINOR, MAJOR, CUSTOM = "minor", "major", "custom"
KINDS = (MINOR, MAJOR, CUSTOM)
# Table property -> (CarbonData system property, default): CarbonCommonConstants' names and defaults
LEVEL_THRESHOLD = "compaction_level_threshold"
MAJOR_SIZE = "major_compaction_size"  # MB
MINOR_SIZE = "minor_compaction_size"  # MB; unset: no limit
PRESERVE = "compaction_preserve_segments"
ALLOWED_DAYS = "allowed_compaction_days"
AUTO_LOAD_MERGE = "auto_load_merge"
SYSTEM: dict[str, tuple[str, str | None]] = {
    LEVEL_THRESHOLD: ("carbon.compaction.level.threshold", "4,3"),
    MAJOR_SIZE: ("carbon.major.compaction.size", "1024"),
    MINOR_SIZE: ("carbon.minor.compaction.size", None),
    PRESERVE: ("carbon.numberof.preserve.segments", "0"),
    ALLOWED_DAYS: ("carbon.allowed.compaction.days", "0"),
    AUTO_LOAD_MERGE: ("carbon.enable.auto.load.merge", "false"),
}
MB = 1024 * 1024


class Settings:
    """A table's compaction properties: table property, else system setting, else CarbonData's default."""

    def __init__(self, table: TableHandle, settings: Mapping[str, str] | None = None):
        self.props = TableProperties(table.properties, table.uri)
        self.system = {k.lower(): v for k, v in (settings or {}).items()}
        self.where = table.uri

    def text(self, name: str) -> tuple[str | None, str]:
        """(value, where it came from) of property ``name``."""
        value = self.props.get(name)
        if value is not None and str(value).strip():
            return str(value).strip(), f"table property {name} of {self.where}"
        system, default = SYSTEM[name]
        value = self.system.get(system)
        if value is not None and str(value).strip():
            return str(value).strip(), f"setting {system}"
        return default, f"default of {system}"

    def whole(self, name: str, low: int, high: int | None = None, unit: str = "") -> int | None:
        text, where = self.text(name)
        if text is None:
            return None
        number = text[: -len(unit)].strip() if unit and text.lower().endswith(unit.lower()) else text
        try:
            value = int(number)
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            span = f"between {low} and {high}" if high is not None else f"{low} or more"
            raise CarbonOptionError(f"{where} is {text!r}: expected a whole number {span}"
                                    + (f" ({unit})" if unit else ""))
        return value

    def levels(self) -> tuple[int, int]:
        """The level-1 and level-2 counts; CarbonData reads the first two and turns a level-2 count of 1
        into 0 (off); a count of 0 or 1 turns a level off here (no merge of one segment)."""
        text, where = self.text(LEVEL_THRESHOLD)
        try:
            counts = [int(p) for p in str(text).replace(" ", "").split(",")]
        except ValueError:
            counts = []
        if not counts or any(not 0 <= n < 100 for n in counts):
            raise CarbonOptionError(f"{where} is {text!r}: expected whole numbers between 0 and 99 separated "
                                    "by commas, e.g. '4,3'")
        first, second = counts[0], (counts[1] if len(counts) > 1 else 0)
        return first, 0 if second == 1 else second

    def auto_load_merge(self, default: bool | None = None) -> bool:
        """Whether loads merge small segments after their commit: the table property, else the setting,
        else ``default`` (None: CarbonData's default, false)."""
        if default is not None and not self.is_set(AUTO_LOAD_MERGE):
            return default
        text, where = self.text(AUTO_LOAD_MERGE)
        return parse_bool(text, where, False)

    def is_set(self, name: str) -> bool:
        """Whether property ``name`` is given, as a table property or a setting (not left to its default)."""
        return any(v is not None and str(v).strip() for v in (self.props.get(name), self.system.get(SYSTEM[name][0])))


def parse_kind(kind: str) -> str:
    k = str(kind).strip().strip("'\"").lower()
    if k not in KINDS:
        raise CarbonOptionError(f"compaction kind must be one of {', '.join(KINDS)} (any case), found {kind!r}")
    return k


def level_of(name: str) -> int:
    """0 for a load, N for the result of an N-th level merge ("0.1" -> 1, "0.2" -> 2)."""
    return int(name.rsplit(".", 1)[1]) if "." in name and name.rsplit(".", 1)[1].isdigit() else 0


def id_order(entry: LoadDetail) -> tuple:
    """Segment ids as numbers, as CarbonData sorts them: 0, 0.1, 0.2, 1, 2, 2.1, 10."""
    base, _, level = entry.name.partition(".")
    return (int(base) if base.isdigit() else 0, int(level) if level.isdigit() else 0, entry.name)


EXTERNAL_FORMATS = ("parquet", "orc", "csv", "json")


def mergeable(entry: LoadDetail, include_external: bool = False) -> bool:
    """Whether compaction may take a segment: readable, carbondata format (with ``include_external`` also
    an added Parquet / ORC / CSV / JSON folder), not a streaming segment."""
    fmt_ok = is_columnar(entry.file_format) or include_external and (
        (entry.file_format or "").lower() in EXTERNAL_FORMATS)
    return entry.readable and fmt_ok and entry.status not in (ts.STREAMING, ts.STREAMING_FINISH)


def size_of(entry: LoadDetail) -> int:
    try:
        return int(entry.data_size or 0)
    except ValueError:
        return 0


def candidates(s: Settings, entries: list[LoadDetail], upto: tuple | None = None) -> list[LoadDetail]:
    """Mergeable segments in id order, less the newest preserved ones, within the allowed days."""
    found = sorted((e for e in entries if mergeable(e)), key=id_order)
    if upto is not None:  # MAJOR's later rounds: only segments older than the first round's newest
        found = [e for e in found if id_order(e) <= upto]
    keep = s.whole(PRESERVE, 0, 100) or 0
    found = found[: len(found) - keep] if keep else found
    return _same_days(found, s.whole(ALLOWED_DAYS, 0, 100) or 0)


def _day(entry: LoadDetail) -> dt.date | None:
    ms = entry.load_start_ms
    return None if ms is None else dt.datetime.fromtimestamp(ms / 1000).date()


def _same_days(pool: list[LoadDetail], days: int) -> list[LoadDetail]:
    if days <= 0 or not pool:
        return pool
    run = [pool[0]]
    first = _day(pool[0])
    for e in pool[1:]:
        day = _day(e)
        if first is not None and day is not None and (day - first).days < days:
            run.append(e)
        elif len(run) < 2:
            run, first = [e], day
        else:
            break
    return run


def select(table: TableHandle, entries: list[LoadDetail], kind: str, segments=None,
           settings: Mapping[str, str] | None = None, upto: tuple | None = None,
           include_external: bool = False, deep: bool = False) -> list[LoadDetail]:
    """The next group to merge ([] when there is none); external segments only in CUSTOM with
    ``include_external``; ``deep``: MINOR merges level-2 and later results again (the module's "Deep MINOR")."""
    if kind == CUSTOM:
        return _custom(table, entries, segments, include_external)
    s = Settings(table, settings)
    pool = candidates(s, entries, upto)
    major = (s.whole(MAJOR_SIZE, 0, unit="MB") or 0) * MB
    if kind == MAJOR:
        return _by_size(pool, major)
    return _by_count(pool, s.levels(), s.whole(MINOR_SIZE, 1, unit="MB"), major if deep else None)


def _by_size(pool: list[LoadDetail], limit: int) -> list[LoadDetail]:
    group: list[LoadDetail] = []
    total = 0
    for e in pool:
        size = size_of(e)
        if size > limit:  # too big alone: skipped, and a group of one before it dropped
            if len(group) > 1:
                break
            group, total = [], 0
            continue
        if total + size < limit:
            group.append(e)
            total += size
        elif len(group) > 1:
            break
        else:
            group, total = [e], size
    return group if len(group) > 1 else []


def _by_count(pool: list[LoadDetail], levels: tuple[int, int], minor_mb: int | None,
              deep_limit: int | None = None) -> list[LoadDetail]:
    """MINOR's group; with ``deep_limit`` (bytes), levels 2 and up count too, with the level-2 count, and a
    group of them at or over the limit is passed over (its segments stay as they are)."""
    counted: dict[int, list[LoadDetail]] = {}
    for e in pool:
        if minor_mb and size_of(e) // MB >= minor_mb:
            continue
        level = level_of(e.name)
        skipped = level >= 2 and deep_limit is None
        if skipped or (e.major_compacted or "").lower() == "true" or e.status not in (ts.SUCCESS, ts.PARTIAL_SUCCESS):
            continue
        group = counted.setdefault(level, [])
        group.append(e)
        need = levels[min(level, 1)]
        if len(group) == need and need > 1:
            if level < 2 or sum(map(size_of, group)) < (deep_limit or 0):
                return group
            group.pop(0)  # too big together: the oldest stays as it is, the next ones may still merge
    return []


def _custom(table: TableHandle, entries: list[LoadDetail], segments, include_external: bool = False
            ) -> list[LoadDetail]:
    wanted = parse_segment_ids(segments)
    if not wanted:
        raise CarbonOptionError("Segment ids should not be empty when doing CUSTOM compaction: give them as "
                                "WHERE SEGMENT.ID IN (1, 2, 5) or compact(kind='custom', segments=[1, 2, 5])")
    by_id = {e.name: e for e in entries}
    problems = []
    for i in wanted:
        e = by_id.get(i)
        if e is None:
            problems.append(f"{i} (does not exist)")
        elif not e.readable:
            problems.append(f"{i} (not valid: {e.status})")
        elif not mergeable(e, include_external) and not is_columnar(e.file_format):
            problems.append(f"{i} (format {(e.file_format or '').lower()}: custom compaction does not "
                            "support other format segments"
                            + ("" if include_external else "; include_external=True rewrites Parquet, ORC, "
                               "CSV and JSON segments' rows into carbondata") + ")")
    if problems:
        raise CarbonTableError(f"CUSTOM compaction of {table.uri} refused: segment {', '.join(problems)}; "
                               "nothing was changed")
    return sorted((by_id[i] for i in dict.fromkeys(wanted)), key=id_order)


def merged_name(group: list[LoadDetail], entries: list[LoadDetail]) -> str:
    """``<first id>.<level + 1>`` as CarbonData names merged segments; never an id already in tablestatus."""
    first = group[0].name
    base, level = (first.rsplit(".", 1)[0], level_of(first)) if "." in first else (first, 0)
    taken = {e.name for e in entries}
    level += 1
    while f"{base}.{level}" in taken:
        level += 1
    return f"{base}.{level}"
