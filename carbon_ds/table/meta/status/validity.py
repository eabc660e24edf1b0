"""Which data files of a segment CarbonData counts, from the timestamp in their names.

An UPDATE that failed after writing data files into a segment's folder leaves them there; CarbonData skips
them by name. ``CarbonTableInputFormat`` applies ``CarbonUtil.isInvalidTableBlock`` to every file of a
table that has an update status file (``SegmentUpdateStatusManager.getUpdateStatusDetails`` not empty),
with the range ``SegmentUpdateStatusManager.getInvalidTimestampRange(segment)``:

* fact = the segment's ``loadStartTime``; start/end = ``updateDeltaStartTimestamp`` /
  ``updateDeltaEndTimestamp``, only when both are set;
* the file's timestamp is the text after the last ``-`` of its name up to the next ``.``
  (``CarbonTablePath.DataFileUtil.getTimeStampFromFileName``);
* invalid when ``fact < ts < start``, when ``ts > end``, or (no start) when ``ts > fact``.

A range that ends before its segment's load started, or starts after it ends, is refused
(``check_update_range``): CarbonData never writes one (an update follows its load), and read by the rule
above it would drop every file of the segment without a word.

Files outside ``Fact/Part0/Segment_<id>`` (added segments, partition folders, SDK output) have no segment id
in their path and are never checked, as in Java (``getSegmentIdFromFilePath`` gives "null").
"""

from __future__ import annotations

import dataclasses

from carbon_ds.errors import CarbonFormatError
from carbon_ds.fs import basename
from carbon_ds.table.meta.files.segment_file import segment_dir
from carbon_ds.table.meta.status.tablestatus import LoadDetail, parse_time


def name_timestamp(path: str) -> int | None:
    """The timestamp in a data file's name, None when the name carries none."""
    name = basename(path)
    start = name.rfind("-") + 1
    end = name.find(".", start)
    text = name[start:end] if end > start else ""
    return int(text) if text.isdigit() else None


def check_update_range(detail: LoadDetail, where: str) -> None:
    """Refuse an update range CarbonData could not have written (see the module's docstring)."""
    if not (detail.update_delta_start and detail.update_delta_end and (detail.load_start_time or "").isdigit()):
        return
    start, end = parse_time(detail.update_delta_start), parse_time(detail.update_delta_end)
    fact = detail.load_start_ms
    if start is None or end is None or fact is None:
        return
    if end < fact or start > end:
        raise CarbonFormatError(
            f"tablestatus entry {detail.name!r} has updateDeltaStartTimestamp {detail.update_delta_start} and "
            f"updateDeltaEndTimestamp {detail.update_delta_end}, loadStartTime {detail.load_start_time}: expected "
            "an update range that starts no later than it ends and ends after the segment was loaded; the "
            "file is damaged (read by CarbonData's rule, every data file of the segment would be skipped)", where)


def stale_by_name(table_path: str, detail: LoadDetail, path: str) -> bool:
    """True when CarbonData's isInvalidTableBlock rejects this file of ``detail``'s segment."""
    if not path.startswith(segment_dir(table_path, detail.name).rstrip("/") + "/"):
        return False
    stamp = name_timestamp(path)
    # a 1.x text date was written in the writer's zone, unknown here: comparing it could drop live files
    fact = detail.load_start_ms if (detail.load_start_time or "").isdigit() else None
    if stamp is None or fact is None:
        return False
    start = end = None
    if detail.update_delta_start and detail.update_delta_end:
        start, end = parse_time(detail.update_delta_start), parse_time(detail.update_delta_end)
    if start is not None and fact < stamp < start:
        return True
    if end is not None and stamp > end:
        return True
    return start is None and stamp > fact


def as_read(detail: LoadDetail) -> LoadDetail:
    """The segment CarbonData reads for a valid entry: one naming ``mergedLoadName`` stands for that merged
    segment (SegmentStatusManager.getValidAndInvalidSegments), with this entry's segment file."""
    merged = (detail.merged_load_name or "").strip()
    return dataclasses.replace(detail, name=merged) if merged else detail
