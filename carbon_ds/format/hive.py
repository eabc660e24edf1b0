"""Hive-style partition folder names: ``col=value`` components with Hive's escaping, their values, specs.

A folder component is ``<escaped column>=<escaped value>`` with Hive's escaping (``FileUtils.escapePathName``):
control characters and ``"#%'*/:=?\\{[]^`` and DEL become ``%XX``; a null (or empty) value is
``__HIVE_DEFAULT_PARTITION__``. Because ``/`` and ``\\`` are escaped and every component starts with
``<column>=``, no value can produce a component ``..`` or leave the table folder.
"""

from __future__ import annotations

import datetime as dt
import decimal
import posixpath
from urllib.parse import unquote

import pyarrow as pa

from carbon_ds.errors import CarbonOptionError, CarbonSchemaError
from carbon_ds.fs import Storage, norm_path

DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_ESCAPED = set('"#%\'*/:=?\\{[]^') | {chr(c) for c in range(0, 32)} | {"\x7f"}
MAX_COMPONENT_BYTES = 255  # the longest file name local file systems and HDFS accept


def escape(text: str) -> str:
    """Hive's escapePathName: the characters that are unsafe in a path component as %XX (upper hex)."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


def unescape(text: str) -> str:
    return unquote(text)


def value_text(value, arrow_type: pa.DataType) -> str | None:
    """The string Spark/Hive put in a folder name for ``value`` (None for null)."""
    if value is None:
        return None
    if pa.types.is_boolean(arrow_type):
        return "true" if value else "false"
    if pa.types.is_timestamp(arrow_type):
        if isinstance(value, dt.datetime):
            if value.tzinfo is not None:
                value = value.astimezone(dt.UTC).replace(tzinfo=None)
            text = value.strftime("%Y-%m-%d %H:%M:%S")
            if value.microsecond:
                text += f".{value.microsecond:06d}".rstrip("0")
            return text
    if pa.types.is_date(arrow_type) and isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        raise CarbonSchemaError("binary columns cannot be partition columns")
    return str(value)


def component(column: str, text: str | None) -> str:
    """One folder name, ``col=value`` (``col=__HIVE_DEFAULT_PARTITION__`` for null or empty).

    Raises:
        CarbonSchemaError: the escaped name is longer than a file system accepts.
    """
    name = f"{escape(column.lower())}={DEFAULT_PARTITION if text is None or text == '' else escape(text)}"
    if len(name.encode("utf-8")) > MAX_COMPONENT_BYTES:
        raise CarbonSchemaError(
            f"partition value of column {column!r} is too long for a folder name: {len(name.encode('utf-8'))} "
            f"bytes escaped, at most {MAX_COMPONENT_BYTES} (value starts {text[:40]!r})")
    return name


def parse_component(name: str) -> tuple[str, str | None]:
    """(column, value text or None for the default partition) of one folder name."""
    if "=" not in name:
        raise CarbonOptionError(f"partition folder {name!r} is not of the form column=value")
    key, value = name.split("=", 1)
    return unescape(key), None if value == DEFAULT_PARTITION else unescape(value)


def folder_of(partitions: list[str]) -> str:
    """Relative folder ("day=1/hour=2") of a segment file's ``partitions`` list."""
    return "/".join(partitions)


SUPPORTED = ("integer", "string", "date", "timestamp", "boolean", "decimal")


def check_partition_columns(schema: pa.Schema, partition_by: list[str]) -> list[str]:
    """Table spellings of ``partition_by``; every type must have an exact text form (no float, binary,
    complex), at least one column must stay outside the partition."""
    by_lower = {f.name.lower(): f for f in schema}
    out = []
    for name in partition_by:
        f = by_lower.get(name.lower())
        if f is None:
            raise CarbonSchemaError(
                f"partition column {name!r} is not a table column; table columns are: {', '.join(schema.names)}"
            )
        t = f.type
        ok = (pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
              or pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_boolean(t)
              or pa.types.is_decimal(t))
        if not ok:
            raise CarbonSchemaError(f"partition column {f.name!r} has type {t}; supported: {', '.join(SUPPORTED)}")
        if f.name in out:
            raise CarbonSchemaError(f"partition column {f.name!r} named twice in partition_by={partition_by!r}")
        out.append(f.name)
    if len(out) >= len(schema):
        raise CarbonSchemaError("a partitioned table needs at least one column that is not a partition column")
    return out


def typed_value(text: str | None, arrow_type: pa.DataType):
    """A folder value as a Python value of the column type (None when it cannot be parsed)."""
    if text is None:
        return None
    try:
        if pa.types.is_timestamp(arrow_type):
            v = dt.datetime.fromisoformat(text)
            return v if arrow_type.tz is None else v.replace(tzinfo=dt.UTC)
        return pa.array([text]).cast(arrow_type)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        return None


def normalize_spec(spec: dict | None, schema: pa.Schema, partition_columns: list[str]) -> dict[str, str | None]:
    """A static partition spec {col: value} as {table column: folder value text}, in partition order."""
    if not spec:
        return {}
    by_lower = {c.lower(): c for c in partition_columns}
    out: dict[str, str | None] = {}
    for key, value in spec.items():
        col = by_lower.get(str(key).lower())
        if col is None:
            raise CarbonOptionError(
                f"partition spec names {key!r}; partition columns are: {', '.join(partition_columns) or 'none'}"
            )
        t = schema.field(col).type
        if value is not None and not isinstance(value, str):
            out[col] = value_text(value, t)
        else:
            out[col] = value
            if value is not None and typed_value(value, t) is None:
                raise CarbonOptionError(f"partition value {value!r} is not a valid {t} for column {col!r}")
    return {c: out[c] for c in partition_columns if c in out}


def spec_matches(partitions: list[str], spec: dict[str, str | None]) -> bool:
    """Whether a folder (its ``partitions`` list) lies inside the static spec."""
    have = {}
    for p in partitions:
        k, v = parse_component(p)
        have[k.lower()] = v
    for col, value in spec.items():
        v = have.get(col.lower(), ...)
        if v is ... or (v or None) != (value if value != "" else None):
            return False
    return True


def folder_values(table_path: str, file_path: str) -> dict[str, str | None] | None:
    """{column (lower case): value text} from the ``col=value`` folders between the table and a file."""
    root = norm_path(table_path) + "/"
    p = norm_path(file_path)
    if not p.startswith(root):
        return None
    parts = posixpath.dirname(p[len(root):]).split("/")
    out: dict[str, str | None] = {}
    for part in parts:
        if "=" not in part:
            return out if out else None
        k, v = parse_component(part)
        out[k.lower()] = v
    return out


def table_folder(table_path: str, comps: list[str]) -> str:
    return Storage.join(table_path, *comps)
