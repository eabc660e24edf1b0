"""CarbonData's file-name rules: extensions, which data files an index file owns, the internal format name."""

from __future__ import annotations

from carbon_ds.fs import basename

COLUMNAR = "columnar_v3"  # tablestatus fileFormat of segments in CarbonData's own format
DATA_EXT = ".carbondata"
INDEX_EXT = ".carbonindex"
MERGE_INDEX_EXT = ".carbonindexmerge"
LOAD_EXTS = (DATA_EXT, INDEX_EXT, MERGE_INDEX_EXT)


def is_columnar(file_format: str | None) -> bool:
    """Whether a tablestatus fileFormat (None: CarbonData's default) is CarbonData's own format."""
    return (file_format or COLUMNAR).lower() in (COLUMNAR, "carbondata")


def owned_by_index(data_name: str, index_name: str) -> bool:
    """Whether a data file belongs to an index file, by CarbonData's naming alone.

    ``<taskNo>_batchno<b>-<bucket>-...-<ts>.carbonindex`` indexes the task's
    ``part-<partNo>-<taskNo>_batchno<b>-<bucket>-...-<ts>[.<compressor>].carbondata`` files; the '-' before
    the stem stops task 1 from claiming task 11's files.
    """
    stem = index_name[: -len(INDEX_EXT)]
    return f"-{stem}." in data_name


def is_data_file(path: str, file_format: str) -> bool:
    """Whether a file of a segment folder is data: hidden and ``_`` files (``_SUCCESS``) never are."""
    name = basename(path)
    if name.startswith((".", "_")):
        return False
    return name.endswith(DATA_EXT) if file_format == COLUMNAR else True
