"""Segment files ``Metadata/segments/<segNo>_<timestamp>.segment`` and segment folder naming.

A segment file is JSON: ``{"locationMap": {<folder>: {"files": [...], "partitions": [...], "status":
"Success", "mergeFileName": ..., "isRelative": true}}, "options": {...}}``. For a load written by this
table the folder key is ``/Fact/Part0/Segment_<N>`` relative to the table and ``files`` lists the index
files of the tasks that committed; an external (added) folder is absolute and lists data files. The
segment file is what makes a load's file set exact: files of failed task attempts that lie in the same
folder are not listed and are never read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from carbon_ds.errors import CarbonFormatError
from carbon_ds.fs import Storage

SEGMENT_EXT = ".segment"
# a folder's status (CarbonData's SegmentStatus names; a dropped partition's folder is Marked for Delete)
FOLDER_STATUSES = frozenset({"Success", "Marked for Update", "Marked for Delete", "Failure", "Partial Success",
                             "In Progress", "Compacted"})


def segment_dir_rel(segment_id: str) -> str:
    return f"/Fact/Part0/Segment_{segment_id}"


def segment_dir(table_path: str, segment_id: str) -> str:
    return Storage.join(table_path, "Fact", "Part0", f"Segment_{segment_id}")


def segment_file_name(segment_id: str, timestamp_ms: int) -> str:
    return f"{segment_id}_{timestamp_ms}{SEGMENT_EXT}"


def segments_dir(table_path: str) -> str:
    return Storage.join(table_path, "Metadata", "segments")


@dataclass
class FolderDetails:
    files: list[str] = field(default_factory=list)
    partitions: list[str] = field(default_factory=list)
    status: str = "Success"
    merge_file_name: str | None = None
    is_relative: bool = True

    def to_json(self) -> dict:
        out: dict = {"files": list(self.files), "partitions": list(self.partitions), "status": self.status}
        if self.merge_file_name is not None:
            out["mergeFileName"] = self.merge_file_name
        out["isRelative"] = self.is_relative
        return out


@dataclass
class SegmentFile:
    location_map: dict[str, FolderDetails] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)
    other: dict = field(default_factory=dict)  # e.g. segmentMetaDataInfo written by CarbonData 2.x
    source: str | None = field(default=None, compare=False)  # the file it was read from (for messages)

    def folders(self, table_path: str) -> list[tuple[str, FolderDetails]]:
        """(absolute folder path, details) for each location. A relative location stays inside the table: a
        '..' in it is refused (an outside folder is recorded as one, ``isRelative`` false)."""
        out = []
        for key, details in self.location_map.items():
            if details.is_relative:
                parts = [p for p in key.split("/") if p]
                if any(p in (".", "..") or "\\" in p or "\0" in p for p in parts):
                    raise CarbonFormatError(f"locationMap folder {key!r} is relative to the table but leads out of "
                                            "it ('..'); a folder outside the table is recorded with isRelative "
                                            "false", self.source)
                out.append((Storage.join(table_path, *parts), details))
            else:
                out.append((key, details))
        return out

    def to_bytes(self) -> bytes:
        doc: dict = {"locationMap": {k: v.to_json() for k, v in self.location_map.items()}}
        if self.options:
            doc["options"] = dict(self.options)
        doc.update(self.other)
        return json.dumps(doc, separators=(",", ":")).encode("utf-8")


def parse(text: str, where: str) -> SegmentFile:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise CarbonFormatError(f"segment file is not valid JSON: {e.msg} at char {e.pos}", where) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("locationMap", {}), dict):
        raise CarbonFormatError("segment file must be an object with a 'locationMap' object", where)
    locations = {}
    for key, d in (doc.get("locationMap") or {}).items():
        if not isinstance(d, dict):
            raise CarbonFormatError(f"locationMap entry {key!r} must be an object, found {d!r}", where)
        details = FolderDetails(
            files=_strings(d.get("files"), f"locationMap {key!r} files", where),
            partitions=_strings(d.get("partitions"), f"locationMap {key!r} partitions", where),
            status=d.get("status") or "Success",
            merge_file_name=d.get("mergeFileName"),
            is_relative=d.get("isRelative", True),
        )
        if details.status not in FOLDER_STATUSES or not isinstance(details.is_relative, bool) or not (
                details.merge_file_name is None or isinstance(details.merge_file_name, str)):
            raise CarbonFormatError(
                f"locationMap {key!r} has status {details.status!r}, isRelative {details.is_relative!r}, mergeFileName "
                f"{details.merge_file_name!r}: expected one of {', '.join(sorted(FOLDER_STATUSES))}, true or false, "
                "a file name", where)
        if details.is_relative and any("/" in n or "\\" in n or n in (".", "..")
                                       for n in [*details.files, details.merge_file_name or ""]):
            raise CarbonFormatError(f"locationMap {key!r} lists {details.files[:5]}: a folder in the table lists "
                                    "file names, without '/' or '..'", where)
        locations[key] = details
    other = {k: v for k, v in doc.items() if k not in ("locationMap", "options")}
    return SegmentFile(locations, dict(doc.get("options") or {}), other, source=where)


def _strings(value, what: str, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CarbonFormatError(f"{what} must be a list of strings, found {str(value)[:100]}", where)
    return list(value)


def read(storage: Storage, table_path: str, name: str) -> SegmentFile:
    path = Storage.join(segments_dir(table_path), name)
    return parse(storage.read_text(path), storage.uri(path))


def write(storage: Storage, table_path: str, name: str, segment: SegmentFile) -> str:
    """Write a segment file once; its name carries a timestamp, so it never replaces another."""
    path = Storage.join(segments_dir(table_path), name)
    storage.require_inside(path, table_path, f"writing segment file {name}")
    storage.write_atomic(path, segment.to_bytes())
    return path


def for_load(segment_id: str, index_files: list[str]) -> SegmentFile:
    """The segment file of a normal load: one relative folder listing the committed index files."""
    return SegmentFile({segment_dir_rel(segment_id): FolderDetails(files=sorted(index_files))})
