"""Why ADD SEGMENT refused a folder, said before the per-file list: the format given does not match the
files (by their extensions, or the folder is a CarbonData table), or Hive partition folders were added to an
unpartitioned table. Each hint is one line naming what to change."""

from __future__ import annotations

import posixpath
import re
from collections import Counter

import pyarrow as pa

# extension -> the ADD SEGMENT format that reads it
_EXTENSIONS = {".parquet": "parquet", ".parq": "parquet", ".orc": "orc", ".csv": "csv", ".tsv": "csv",
               ".json": "json", ".jsonl": "json", ".ndjson": "json", ".carbondata": "carbondata"}
_MISSING = re.compile(r"missing column\(s\) (.+)$")
BAD_VALUE = "bad value: "  # the problem of a text file holding a value its column's type cannot take


def value_cause(bad: list[tuple[str, list[str]]]) -> str | None:
    """A line when files read as the format given but hold values that do not parse: the first one, by file,
    row, column and value (not a wrong format)."""
    values = [(f, p) for f, problems in bad for p in problems if p.startswith(BAD_VALUE)]
    if not values:
        return None
    file, problem = values[0]
    more = f" ({len(values)} file(s) hold such values)" if len(values) > 1 else ""
    return f"a value does not parse as its column's type: {file}: {problem[len(BAD_VALUE):]}{more}"


def format_cause(bad: list[tuple[str, list[str]]], total: int, fmt: str, path: str, carbon_table: bool) -> str | None:
    """A line when most files cannot be read at all as ``fmt`` (``bad``: (file, problems) of failing files)."""
    unreadable = [f for f, problems in bad if any(p.startswith("unreadable") for p in problems)]
    if not unreadable or len(unreadable) * 2 < total:
        return None
    if carbon_table and fmt != "carbondata":
        return (f"{path} is a CarbonData table's folder (it holds Metadata/schema), not {fmt} data: expected "
                "format 'carbondata' to add its .carbondata files")
    kinds = Counter(_EXTENSIONS.get(posixpath.splitext(f)[1].lower()) for f in unreadable)
    kinds.pop(None, None)
    n = len(unreadable)
    if kinds:
        other, count = kinds.most_common(1)[0]
        if other != fmt:
            return (f"{n} of {total} file(s) under {path} cannot be read as {fmt}; {count} of them are named like "
                    f"{other} files: expected format '{other}'?")
    return f"{n} of {total} file(s) under {path} cannot be read as {fmt}: is format '{fmt}' right?"


def hive_cause(bad: list[tuple[str, list[str]]], path: str, schema: pa.Schema) -> str | None:
    """A line when the columns missing from the files are Hive partition folders (``day=1/``) of their paths,
    on a table that is not partitioned (``schema``: the table's, for the partition option's types)."""
    folders: dict[str, str] = {}
    for file, problems in bad:
        missing = {c.strip().lower() for p in problems for m in [_MISSING.search(p)] if m for c in m.group(1).split(",")}
        for part in file.split("/")[:-1]:
            key, eq, value = part.partition("=")
            if eq and key.lower() in missing:
                folders.setdefault(key.lower(), f"{key}={value}")
    if not folders:
        return None
    names = ", ".join(folders)
    types = {f.name.lower(): _sql_type(f.type) for f in schema}
    spec = ", ".join(f"{k}:{types.get(k, '<type>')}" for k in folders)
    return (f"the files under {path} lie in Hive partition folders ({', '.join(folders.values())}, ...): the values of "
            f"{names} are in the folder names, not the files. Add them to a table created with PARTITIONED BY "
            f"({names}) and give the partition option: OPTIONS('partition'='{spec}') "
            f"(add_segment(path, partition='{spec}'))")


def _sql_type(t: pa.DataType) -> str:
    """The SQL name of a partition column's type, as the partition option spells it."""
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    names = {pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int", pa.int64(): "bigint",
             pa.float32(): "float", pa.float64(): "double", pa.bool_(): "boolean", pa.date32(): "date"}
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    return names.get(t, str(t))
