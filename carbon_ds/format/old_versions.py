"""Files of CarbonData's format V1 and V2 (CarbonData 0.x-1.2), recognised so they are refused by name.

carbon-ds reads format V3 only, as CarbonData 2.x does (its V1/V2 readers were removed in 2.0,
CARBONDATA-3650). The old files are told apart by their first thrift field:

* a V1/V2 data file has no file header and ends in a ``FileFooter`` whose field 1 is the i32 ``version``
  (0 before CarbonData 1.0 numbered the formats, which ColumnarFormatVersion.valueOf reads as V1); V3's
  ``FileFooter3`` starts with the i64 ``num_rows``. In thrift's compact protocol the first field header is
  then 0x15 (field 1, i32), not 0x16 (field 1, i64);
* a V1/V2 ``.carbonindex`` has an ``IndexHeader`` whose ``version`` is 1 or 2 (CarbonMetadataUtil.getIndexHeader
  writes the file format's number there).
"""

from __future__ import annotations

from carbon_ds.errors import CarbonFormatError

_I32_FIELD_1 = 0x15


def footer_version(footer: bytes) -> int | None:
    """The ``version`` of a V1/V2 ``FileFooter`` (these bytes start one), None for anything else."""
    if len(footer) < 2 or footer[0] != _I32_FIELD_1:
        return None
    raw, shift = 0, 0
    for b in footer[1:6]:
        raw |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    return (raw >> 1) ^ -(raw & 1)  # zigzag


def refusal(what: str, version: int, path: str, offset: int | None) -> CarbonFormatError:
    """The error for an old file: ``what`` ("file", "index file") of format ``version`` (0 counts as V1)."""
    name = 1 if version == 0 else version
    return CarbonFormatError(
        f"CarbonData format V{name} {what} (version field {version}, written by CarbonData 0.x-1.2): carbon-ds reads "
        "format V3 only, as CarbonData 2.x does (its V1/V2 readers were removed in 2.0, CARBONDATA-3650); rewrite "
        "the segment with CarbonData 1.3-1.6 (e.g. ALTER TABLE ... COMPACT 'MAJOR') to read it", path, offset)


def check_footer(footer: bytes, path: str, offset: int) -> None:
    """Raise the named refusal when ``footer`` is a V1/V2 ``FileFooter``."""
    version = footer_version(footer)
    if version is not None and 0 <= version <= 2:
        raise refusal("file", version, path, offset)


def check_index_version(version: int | None, path: str) -> None:
    """Raise the named refusal for an ``IndexHeader`` of format V1/V2."""
    if version is not None and 0 <= version <= 2:
        raise refusal("index file", version, path, 0)
