"""Versioned table status: which segment list file of a table is live, and how a commit adds the next one.

CarbonData 2.3.1+ with ``carbon.enable.multi.version.table.status=true`` writes no plain
``Metadata/tablestatus``: every commit writes a new ``Metadata/tablestatus_<epoch ms>`` and records the
version in the metastore's ``latestversion`` table property (CarbonTablePath.getTableStatusFilePath,
CarbonHiveIndexMetadataUtil.updateTableStatusVersion). A read takes, in this order:

1. a version named by the caller (read option ``status_version``) or by ``latestversion`` in the schema
   file: that file, and an error naming it when it is missing (CarbonData: "Table Status Version file ...
   not found");
2. the plain ``tablestatus`` when it exists;
3. otherwise the ``tablestatus_<digits>`` with the largest number, as CarbonData does for a table it finds
   by path (CarbonScalaUtil.getLatestTableStatusVersion); ``tablestatus.history`` and other suffixes are
   not versions.

A commit to a table read by rule 3 writes ``tablestatus_<max(now ms, newest + 1)>`` beside the others, only
if no other version appeared since the edit read its base; never a plain ``tablestatus``, which CarbonData
would not read and which would hide every version from a later read by path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from carbon_ds.errors import CarbonTableError
from carbon_ds.fs import Storage, basename
from carbon_ds.names import STATUS_FILE, STATUS_VERSION_PROPERTY
from carbon_ds.table.meta.status.tablestatus import now_ms

PLAIN = STATUS_FILE  # the rule is followed by jvm/src LiveStatus.java too: tests/spark/test_versioned_status_native.py
VERSION_PROPERTY = STATUS_VERSION_PROPERTY  # CarbonTable.getTableStatusVersion
_VERSION_FILE = re.compile(r"tablestatus_(\d+)")

# where a live status file was chosen from (rules 1-3 above)
FROM_OPTION = "read option status_version"
FROM_SCHEMA = f"table property {VERSION_PROPERTY} in Metadata/schema"
FROM_NEWEST = "newest tablestatus_<version> file (no plain tablestatus)"
FROM_PLAIN = "plain tablestatus"


@dataclass(frozen=True)
class LiveStatus:
    """The segment list file a read takes: its path, version ("" for the plain file) and why it was chosen."""

    path: str
    version: str
    source: str

    @property
    def versioned(self) -> bool:
        return bool(self.version)


def status_path(table_path: str, version: str = "") -> str:
    return Storage.join(table_path, "Metadata", f"{PLAIN}_{version}" if version else PLAIN)


def check_version(version: str, where: str) -> str:
    """``version`` as CarbonData names one (digits: the commit's epoch milliseconds)."""
    text = str(version).strip()
    if not text.isdigit():
        raise CarbonTableError(f"table status version must be digits (a tablestatus_<version> file's suffix), "
                               f"found {version!r} ({where})")
    return text


def versions(storage: Storage, table_path: str) -> list[int]:
    """The numbers of the table's ``Metadata/tablestatus_<digits>`` files, ascending."""
    found = []
    for info in storage.list(Storage.join(table_path, "Metadata")):
        m = _VERSION_FILE.fullmatch(basename(info.path))
        if m:
            found.append(int(m.group(1)))
    return sorted(found)


def newest(storage: Storage, table_path: str) -> str:
    """The largest version number as text, "" when the table has no version files."""
    found = versions(storage, table_path)
    return str(found[-1]) if found else ""


def locate(storage: Storage, table_path: str, named: str, named_by: str) -> LiveStatus:
    """The live status file: ``named`` (by ``named_by``) if given, else the plain file if it exists, else
    the newest version file, else the plain file (a table without loads)."""
    if named:
        return LiveStatus(status_path(table_path, named), named, named_by)
    plain = status_path(table_path)
    if not storage.exists(plain):
        version = newest(storage, table_path)
        if version:
            return LiveStatus(status_path(table_path, version), version, FROM_NEWEST)
    return LiveStatus(plain, "", FROM_PLAIN)


def missing_version(storage: Storage, table_path: str, live: LiveStatus) -> CarbonTableError:
    """The error for a named version whose file is not there (listing the newest versions that are)."""
    have = versions(storage, table_path)
    listed = ", ".join(str(v) for v in have[-5:]) or "none"
    return CarbonTableError(
        f"table status version file {storage.uri(live.path)} not found (version {live.version}, named by the "
        f"{live.source}); version files present: {listed}. CarbonData reports this as \"Table Status Version "
        "file ... not found\"; name an existing version, or restore the file")


def next_version(base: str) -> str:
    """The version a commit on ``base`` writes: the current epoch milliseconds, above ``base``."""
    return str(max(now_ms(), int(base) + 1 if base else 0))


def alter_statement(table_path: str, version: str) -> str:
    """The statement that points CarbonData's metastore at ``version`` (the table named as its folder is:
    ``<db>.db/<table>`` is Spark's warehouse layout, other layouts leave the database to the reader)."""
    parts = table_path.rstrip("/").split("/")
    table = parts[-1]
    db = parts[-2][:-3] if len(parts) > 1 and parts[-2].endswith(".db") else ""
    name = f"{db}.{table}" if db else table
    return f"ALTER TABLE {name} SET SERDEPROPERTIES ('{VERSION_PROPERTY}'='{version}')"
