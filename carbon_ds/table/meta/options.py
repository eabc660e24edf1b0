"""Read/write options as users give them (Spark passes strings, keys case-insensitive)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from carbon_ds.errors import CarbonOptionError, see
from carbon_ds.names import (
    COMPRESSOR_OPTION,
    EXACT_FILTER_OPTION,
    EXPANDED_OPTION,
    FILTER_OPTION,
    MV_REWRITE_OPTION,
    NATIVE_PLAN_OPTION,
    PARTIAL_COUNTS_OPTION,
    PARTITION_BY_OPTION,
    PLAN_READS_OPTION,
    PRUNED_OPTION,
    ROW_POSITIONS_OPTION,
    SEGMENTS_OPTION,
    TABLE_OPTIONS,
    UNSCALED_OPTION,
)

COMPRESSORS = ("snappy", "zstd", "gzip")
SORT_SCOPES = ("no_sort", "local_sort")  # CarbonData's GLOBAL_SORT needs a shuffle across tasks
# partition_by: the table's Hive partition columns (Spark refuses partitionBy() for Python sources);
# partition: a static partition spec ("day=1,hour=2" or JSON); partition_overwrite_mode: static|dynamic.
PARTITION_OPTIONS = (PARTITION_BY_OPTION, "partition", "partition_overwrite_mode")
WRITE_OPTIONS = (COMPRESSOR_OPTION, "blocklet_size", *TABLE_OPTIONS, *PARTITION_OPTIONS)
READ_OPTIONS = (SEGMENTS_OPTION, FILTER_OPTION, ROW_POSITIONS_OPTION, UNSCALED_OPTION, PRUNED_OPTION, EXACT_FILTER_OPTION,
                NATIVE_PLAN_OPTION, EXPANDED_OPTION, PLAN_READS_OPTION, MV_REWRITE_OPTION, "timestamp_granularity", "cutoff_timestamp",
                PARTIAL_COUNTS_OPTION)
# timestamp_granularity / cutoff_timestamp: direct-dictionary timestamps (format.direct_dictionary); the
# others are shared with the Spark extension and described in carbon_ds.names.
# Spark adds these itself; a temporary view passes one option set to both its reader and its writer,
# so either side accepts the other's keys.
# A table of Spark's session catalog also hands over its reserved table properties (TableCatalog.PROP_*)
# when Spark infers its schema at CREATE TABLE ... USING carbondata LOCATION '<existing table>'.
SPARK_OPTIONS = ("path", "paths", "owner", "provider", "location", "comment", "collation", "external",
                 "is_managed_location")
# Structured Streaming: the sink's checkpoint (Spark passes it on) and automatic merge switch and depth, the
# source's start, limits and policy
STREAM_OPTIONS = ("checkpointlocation", "auto_load_merge", "merge_levels", "starting_segment",
                  "max_files_per_trigger", "max_rows_per_trigger", "ignore_changes")
VALID = (*READ_OPTIONS, *WRITE_OPTIONS, *STREAM_OPTIONS)


def _text(value: Any) -> str:
    if isinstance(value, Mapping):
        return json.dumps({str(k): v for k, v in value.items()}, default=str)
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def normalize(options: Mapping[str, Any] | None, valid: tuple[str, ...] = VALID, what: str = "option") -> dict[str, str]:
    """Lower-cased keys, string values; unknown keys raise CarbonOptionError listing the valid ones
    (``valid``: all options for Spark, whose views share one option set between reads and writes; only the
    write options for ``write_table``)."""
    out: dict[str, str] = {}
    for key, value in (options or {}).items():
        k = key.lower()
        if k in SPARK_OPTIONS or k.startswith("option.") or value is None:  # option.*: OPTIONS (...) of a catalog table
            continue
        if k not in valid:
            extra = " (a read option)" if k in READ_OPTIONS else ""
            raise CarbonOptionError(f"unknown {what} {key!r}{extra}; valid {what}s: {', '.join(sorted(valid))}"
                                    + see("options.md", "read-and-write-options"))
        out[k] = _text(value)
    return out


def split_list(text: str | None) -> list[str]:
    return [p.strip() for p in (text or "").split(",") if p.strip()]


def parse_bool(text: Any, what: str, default: bool | None = None) -> bool:
    """``true`` / ``false`` in any case and spacing (every boolean option, property and conf is read here);
    empty or None gives ``default`` when there is one. ``what`` names the setting in the error."""
    value = "" if text is None else str(text).strip().lower()
    if not value and default is not None:
        return default
    if value not in ("true", "false"):
        raise CarbonOptionError(f"{what} must be true or false, found {text!r}")
    return value == "true"


def positive_int(opts: dict[str, str], key: str) -> int | None:
    if key not in opts:
        return None
    try:
        value = int(opts[key])
    except ValueError:
        value = 0
    if value <= 0:
        raise CarbonOptionError(f"option {key!r} must be a positive integer, found {opts[key]!r}")
    return value


def true_or_false(opts: dict[str, str], key: str) -> bool | None:
    """Option ``key`` of ``opts`` as a boolean (None when absent)."""
    return parse_bool(opts[key], f"option {key!r}") if key in opts else None


@dataclass
class LoadOptions:
    """Validated write options: what the table is created with, and what this load uses."""

    sort_columns: list[str] | None = None
    sort_scope: str | None = None  # no_sort | local_sort; None: the table's (local_sort with sort columns)
    long_string_columns: list[str] | None = None
    compressor: str | None = None
    table_blocksize_mb: int | None = None
    blocklet_size_mb: int | None = None
    local_dictionary_enable: bool | None = None
    local_dictionary_threshold: int | None = None
    partition_by: list[str] | None = None
    partition: dict[str, Any] | None = None  # static partition spec {column: value}
    partition_overwrite_mode: str = "static"
    given: dict[str, str] = field(default_factory=dict)

    def table_properties(self) -> dict[str, str]:
        """tableProperties for a table created by this write, spelled as CarbonData spells them."""
        props = {
            "table_blocksize": str(self.table_blocksize_mb or 1024),
            "table_blocklet_size": str(self.blocklet_size_mb or 64),
            "local_dictionary_enable": "true" if self.local_dictionary_enable in (None, True) else "false",
            "local_dictionary_threshold": str(self.local_dictionary_threshold or 10000),
        }
        if self.compressor:
            props["carbon.column.compressor"] = self.compressor
        if self.sort_scope:
            props["sort_scope"] = self.sort_scope
        return props


def parse_write(options: Mapping[str, Any] | None) -> LoadOptions:
    opts = normalize(options)
    compressor = opts.get("compressor")
    if compressor is not None:
        compressor = compressor.strip().lower()
        if compressor not in COMPRESSORS:
            raise CarbonOptionError(
                f"option 'compressor' must be one of {', '.join(COMPRESSORS)}, found {compressor!r}"
            )
    sort_scope = opts.get("sort_scope")
    if sort_scope is not None:
        sort_scope = sort_scope.strip().lower()
        if sort_scope not in SORT_SCOPES:
            raise CarbonOptionError(
                f"option 'sort_scope' must be one of {', '.join(SORT_SCOPES)} (any case), found {opts['sort_scope']!r}"
            )
    blocklet = positive_int(opts, "blocklet_size")
    if blocklet is None:
        blocklet = positive_int(opts, "table_blocklet_size")
    return LoadOptions(
        sort_columns=split_list(opts["sort_columns"]) if "sort_columns" in opts else None,
        sort_scope=sort_scope,
        long_string_columns=split_list(opts["long_string_columns"]) if "long_string_columns" in opts else None,
        compressor=compressor,
        table_blocksize_mb=positive_int(opts, "table_blocksize"),
        blocklet_size_mb=blocklet,
        local_dictionary_enable=true_or_false(opts, "local_dictionary_enable"),
        local_dictionary_threshold=positive_int(opts, "local_dictionary_threshold"),
        partition_by=split_list(opts["partition_by"]) if "partition_by" in opts else None,
        partition=_partition_spec(opts.get("partition")),
        partition_overwrite_mode=_overwrite_mode(opts.get("partition_overwrite_mode")),
        given=opts,
    )


def _partition_spec(text: str | None) -> dict[str, Any] | None:
    """``{"day": 1}`` JSON or ``day=1,hour=2`` text (values as text; null/empty spelled ``null``)."""
    if text is None or not text.strip():
        return None
    text = text.strip()
    if text.startswith("{"):
        try:
            spec = json.loads(text)
        except json.JSONDecodeError as e:
            raise CarbonOptionError(f"option 'partition' is not valid JSON: {e.msg}; found {text!r}") from None
        return spec
    out: dict[str, Any] = {}
    for item in text.split(","):
        if "=" not in item:
            raise CarbonOptionError(f"option 'partition' must be 'col=value,...' or JSON, found {text!r}")
        k, v = item.split("=", 1)
        v = v.strip().strip("'\"")
        out[k.strip()] = None if v.lower() == "null" else v
    return out


def _overwrite_mode(text: str | None) -> str:
    mode = (text or "static").strip().lower()
    if mode not in ("static", "dynamic"):
        raise CarbonOptionError(f"option 'partition_overwrite_mode' must be static or dynamic, found {text!r}")
    return mode
