"""Offsets of a streaming read of a table: which committed segments a stream has delivered.

An offset is ``{"next": N, "pending": [ids], "updated": T, "at": A}``: every load segment with a numeric
id below N is passed (delivered, or skipped as failed, deleted or before the start), except ``pending``
ones (reserved but not committed when the offset was taken; a later batch delivers them once they commit,
or forgets them when they fail). Segment ids are reserved in order but may commit out of order, so a single
"last segment" would skip a slow load. ``updated`` is the newest delete delta end time among passed
segments: a later one means rows already delivered were deleted or updated. ``at`` is when the offset was
taken: a passed segment deleted after it had been readable then, so its rows went out. ``snapshot`` names
the segments (compacted ones such as ``0.1`` too) that hold the table's rows when a stream starts from a
snapshot (the default): the first batch delivers them, every later offset has none left.

Segments made by compaction (``0.1``) hold rows already counted under their sources and are delivered
only as part of a start snapshot. What happens to delivered rows later is checked on every offset (``changes``):

- a delivered segment deleted (DELETE SEGMENT) or replaced (INSERT OVERWRITE): "Marked for Delete";
- rows of a delivered segment deleted or updated (its delete delta is newer than ``updated``).

A stream fails on these by default; with ``ignore_changes`` it goes on (an overwrite's or update's new
segment is then delivered as new rows, as Delta's ``ignoreChanges`` re-emits rewritten files). A segment
compacted before the stream delivered it cannot be read alone any more: that is reported the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.tablestatus import LoadDetail

# Reserved or being written: may still commit (CarbonData's own streaming segments are still appended to).
OPEN = frozenset({ts.IN_PROGRESS, ts.OVERWRITE_IN_PROGRESS, ts.STREAMING, ts.STREAMING_FINISH})


@dataclass(frozen=True)
class Offset:
    next: int
    pending: tuple[int, ...] = ()
    updated: int = 0
    at: int = 0
    snapshot: tuple[str, ...] = ()

    def to_json(self) -> dict:
        out = {"next": self.next, "pending": list(self.pending), "updated": self.updated, "at": self.at}
        if self.snapshot:
            out["snapshot"] = list(self.snapshot)
        return out

    @classmethod
    def from_json(cls, data: dict) -> Offset:
        try:
            return cls(int(data["next"]), tuple(int(p) for p in data.get("pending", [])), int(data.get("updated", 0)),
                       int(data.get("at", 0)), tuple(str(n) for n in data.get("snapshot", [])))
        except (KeyError, TypeError, ValueError) as e:
            raise CarbonTableError(f"carbondata stream offset {data!r} is not one this source wrote: {e}") from None

    def delivered(self, segment_id: int) -> bool:
        return segment_id < self.next and segment_id not in self.pending


@dataclass
class Limit:
    """Admission control for one batch: at most this many data files / rows (at least one segment)."""

    max_files: int | None = None
    max_rows: int | None = None
    # (segment id) -> (data files, rows), asked only when a limit needs it
    size_of: Callable[[str], tuple[int, int]] | None = field(default=None, repr=False)


def load_id(entry: LoadDetail) -> int | None:
    """The numeric id of a load's segment; None for a compaction's (``0.1``) or a foreign name."""
    return int(entry.name) if entry.name.isdigit() else None


STARTS = ("snapshot", "latest", "earliest")


def initial_offset(entries: list[LoadDetail], starting: str | None, now: int | None = None) -> Offset:
    """Where a new stream starts: ``snapshot`` (default: the table's rows as they are now, compacted segments
    included and deleted rows left out, then segments committed later), ``latest`` (segments committed from
    now on), ``earliest`` (every load segment; one already compacted is reported), or a segment id (that
    segment and later ones). Deltas already there are not changes."""
    value = (starting or "snapshot").strip().lower()
    ids = [i for e in entries if (i := load_id(e)) is not None]
    at = ts.now_ms() if now is None else now
    if value == "earliest":
        return Offset(0, at=at)
    if value in ("latest", "snapshot"):
        pending = tuple(sorted(load_id(e) for e in entries if load_id(e) is not None and e.status in OPEN))
        snapshot = tuple(e.name for e in entries if e.readable and e.status not in OPEN) if value == "snapshot" else ()
        return Offset(max(ids) + 1 if ids else 0, pending, _updated(entries, lambda _i: True), at, snapshot)
    if value.isdigit():
        return Offset(int(value), (), _updated(entries, lambda _i: True), at)
    raise CarbonOptionError(f"option starting_segment must be 'snapshot' (the default), 'latest', 'earliest' or "
                            f"a segment id (a whole number), found {starting!r}")


def _updated(entries: list[LoadDetail], delivered: Callable[[int], bool]) -> int:
    times = [int(e.update_delta_end) for e in entries if (i := load_id(e)) is not None and delivered(i)
             and e.update_delta_end and e.update_delta_end.isdigit()]
    return max(times, default=0)


def changes(entries: list[LoadDetail], start: Offset) -> list[str]:
    """What happened to rows ``start`` has delivered, one sentence per segment (empty: nothing)."""
    out = []
    for e in entries:
        i = load_id(e)
        if i is None or not start.delivered(i):
            continue
        if e.status == ts.MARKED_FOR_DELETE and (ts.parse_time(e.modification_time) or start.at + 1) > start.at:
            out.append(f"segment {e.name} was deleted or overwritten after it was streamed")
        elif e.update_delta_end and e.update_delta_end.isdigit() and int(e.update_delta_end) > start.updated:
            out.append(f"rows of segment {e.name} were deleted or updated after they were streamed")
    return out


def next_offset(entries: list[LoadDetail], start: Offset, limit: Limit | None = None,
                ignore_changes: bool = False, now: int | None = None) -> tuple[Offset, list[str]]:
    """(the end offset of the next batch, notes on segments skipped). Raises CarbonTableError for a change
    to delivered rows or an undelivered segment that can no longer be read alone, unless ``ignore_changes``."""
    problems = changes(entries, start)
    if start.snapshot:
        # the first batch is the start snapshot alone; later batches go on from ``next`` as usual
        by_name = {e.name: e for e in entries}
        for name in start.snapshot:
            e = by_name.get(name)
            if e is not None and e.status == ts.COMPACTED:
                problems.append(f"segment {name} was compacted into {e.merged_load_name or 'another segment'} "
                                "before this stream read it")
        if problems and not ignore_changes:
            raise CarbonTableError("carbondata stream: " + "; ".join(problems) + ". Restart the stream (a new "
                                   "checkpoint) or set option ignore_changes=true to go on")
        return Offset(start.next, start.pending, start.updated, ts.now_ms() if now is None else now), problems
    by_id = {i: e for e in entries if (i := load_id(e)) is not None}
    candidates = sorted(set(start.pending) | {i for i in by_id if i >= start.next})
    admitted: list[int] = []
    files = rows = 0
    stop: int | None = None
    max_files = limit.max_files if limit is not None else None
    max_rows = limit.max_rows if limit is not None else None
    size_of = limit.size_of if limit is not None and (max_files, max_rows) != (None, None) else None
    for i in candidates:
        e = by_id.get(i)
        if e is None or e.status in OPEN or not e.readable:
            if e is not None and e.status == ts.COMPACTED:
                problems.append(f"segment {e.name} was compacted into {e.merged_load_name or 'another segment'} "
                                "before this stream read it")
            continue
        if size_of is not None:
            f, r = size_of(e.name)
            if admitted and ((max_files is not None and files + f > max_files)
                             or (max_rows is not None and rows + r > max_rows)):
                stop = i
                break
            files, rows = files + f, rows + r
        admitted.append(i)
    if problems and not ignore_changes:
        raise CarbonTableError("carbondata stream: " + "; ".join(problems) + ". Restart the stream (a new "
                               "checkpoint, option starting_segment) or set option ignore_changes=true to go on")
    seen = [i for i in candidates if stop is None or i < stop]
    nxt = max(start.next, stop if stop is not None else (max(seen) + 1 if seen else start.next))
    done = set(admitted)
    pending = tuple(i for i in candidates if i < nxt and i not in done and i in by_id
                    and (by_id[i].status in OPEN or by_id[i].readable))
    end = Offset(nxt, pending)
    end = Offset(nxt, pending, max(start.updated, _updated(entries, end.delivered)), ts.now_ms() if now is None else now)
    if not problems and (end.next, end.pending, end.updated) == (start.next, start.pending, start.updated):
        return start, problems  # nothing new: Spark compares offsets to know (and AvailableNow ends on it)
    return end, problems


def snapshot_between(start: Offset, end: Offset) -> list[str]:
    """The start snapshot's segment names when the batch from ``start`` to ``end`` is the one delivering it."""
    return [n for n in start.snapshot if n not in end.snapshot]


def segments_between(start: Offset, end: Offset) -> list[int]:
    """The load segment ids ``end`` passes that ``start`` did not (failed ones too: the reader keeps only the
    segments still readable)."""
    low = min([start.next, *start.pending])
    return [i for i in range(low, end.next) if end.delivered(i) and not start.delivered(i)]
