"""Table properties (TBLPROPERTIES kept in the schema file): each named once, with its default, parsed with
errors that name the property and the table."""

from __future__ import annotations

from collections.abc import Mapping

from carbon_ds.errors import CarbonOptionError
from carbon_ds.table.meta.options import parse_bool, split_list

COMPRESSOR = "carbon.column.compressor"
COMPRESSOR_DEFAULT = "snappy"
BLOCKLET_SIZE = "table_blocklet_size"  # MB of encoded data per blocklet
BLOCKLET_SIZE_DEFAULT = 64
BLOCK_SIZE = "table_blocksize"  # MB per data file
BLOCK_SIZE_DEFAULT = 1024
LONG_STRING_COLUMNS = "long_string_columns"
LOCAL_DICTIONARY_ENABLE = "local_dictionary_enable"
LOCAL_DICTIONARY_ENABLE_DEFAULT = True
LOCAL_DICTIONARY_THRESHOLD = "local_dictionary_threshold"
LOCAL_DICTIONARY_THRESHOLD_DEFAULT = 10000
SORT_SCOPE = "sort_scope"
EXTERNAL = "_external"  # CarbonData's marker of a table whose data DROP TABLE keeps


# Every table property CarbonData 2.x documents (ddl-of-carbondata.md), lower case; a new table refuses any other
# name, so a misspelling ('sort_column') cannot leave a table unsorted for good.
KNOWN = frozenset({
    "sort_columns", SORT_SCOPE, BLOCK_SIZE, BLOCKLET_SIZE, "table_page_size_inmb", COMPRESSOR,
    LONG_STRING_COLUMNS, LOCAL_DICTIONARY_ENABLE, LOCAL_DICTIONARY_THRESHOLD, "local_dictionary_include",
    "local_dictionary_exclude", "auto_load_merge", "compaction_level_threshold", "compaction_preserve_segments",
    "allowed_compaction_days", "major_compaction_size", "minor_compaction_size", "column_meta_cache",
    "cache_level", "flat_folder", "comment", "inverted_index", "no_inverted_index", "range_column",
    "global_sort_partitions", "streaming", "bucket_number", "bucket_columns", "index_handler", "dateformat",
    "timestampformat", "partition_type", "partition_num", "range_info", "list_info", "path", EXTERNAL,
})
_KNOWN_PREFIXES = ("default.value.", "spatial_index", "_")  # per-column defaults, spatial index settings, internal


def check_names(properties: Mapping[str, str], where: str) -> None:
    """Refuse property names CarbonData does not know, listing the valid ones.

    Raises:
        CarbonOptionError: an unknown name.
    """
    unknown = sorted(k for k in properties if k.lower() not in KNOWN and not k.lower().startswith(_KNOWN_PREFIXES))
    if unknown:
        raise CarbonOptionError(f"unknown table propert{'y' if len(unknown) == 1 else 'ies'} "
                                f"{', '.join(repr(k) for k in unknown)} for {where}; valid: {', '.join(sorted(KNOWN))} "
                                "(and default.value.<column>)")


class TableProperties:
    """Typed access to a table's properties; a malformed value names its property and the table."""

    def __init__(self, properties: Mapping[str, str], where: str):
        self.raw = {k.lower(): v for k, v in properties.items()}
        self.where = where

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.raw.get(name.lower(), default)

    def as_int(self, name: str, default: int) -> int:
        text = self.raw.get(name.lower())
        if text is None or not str(text).strip():
            return default
        try:
            return int(str(text).strip())
        except ValueError:
            raise CarbonOptionError(
                f"table property {name}={text!r} of {self.where}: expected a whole number"
            ) from None

    def as_bool(self, name: str, default: bool) -> bool:
        return parse_bool(self.raw.get(name.lower()), f"table property {name} of {self.where}", default)

    @property
    def compressor(self) -> str:
        return (self.get(COMPRESSOR) or COMPRESSOR_DEFAULT).strip().lower()

    @property
    def blocklet_size_mb(self) -> int:
        return self.as_int(BLOCKLET_SIZE, BLOCKLET_SIZE_DEFAULT)

    @property
    def block_size_mb(self) -> int:
        return self.as_int(BLOCK_SIZE, BLOCK_SIZE_DEFAULT)

    @property
    def long_string_columns(self) -> list[str]:
        return split_list(self.get(LONG_STRING_COLUMNS))

    @property
    def local_dictionary_enable(self) -> bool:
        return self.as_bool(LOCAL_DICTIONARY_ENABLE, LOCAL_DICTIONARY_ENABLE_DEFAULT)

    @property
    def local_dictionary_threshold(self) -> int:
        return self.as_int(LOCAL_DICTIONARY_THRESHOLD, LOCAL_DICTIONARY_THRESHOLD_DEFAULT)

    @property
    def external(self) -> bool:
        return (self.get(EXTERNAL) or "").strip().lower() == "true"
