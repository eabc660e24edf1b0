"""Spark/Hive SQL type names (as CREATE TABLE writes them) to Arrow types."""

from __future__ import annotations

import re

import pyarrow as pa

from carbon_ds.errors import CarbonOptionError

_SIMPLE = {
    "BOOLEAN": pa.bool_(),
    "TINYINT": pa.int8(),
    "BYTE": pa.int8(),
    "SMALLINT": pa.int16(),
    "SHORT": pa.int16(),
    "INT": pa.int32(),
    "INTEGER": pa.int32(),
    "BIGINT": pa.int64(),
    "LONG": pa.int64(),
    "FLOAT": pa.float32(),
    "REAL": pa.float32(),
    "DOUBLE": pa.float64(),
    "STRING": pa.string(),
    "BINARY": pa.binary(),
    "DATE": pa.date32(),
    "TIMESTAMP": pa.timestamp("us", tz="UTC"),
}


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside <> or ()."""
    parts, depth, cur = [], 0, []
    for c in text:
        if c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def arrow_type(text: str, column: str = "?") -> pa.DataType:
    t = " ".join(text.split())
    upper = t.upper()
    if upper in _SIMPLE:
        return _SIMPLE[upper]
    m = re.fullmatch(r"(VARCHAR|CHAR)\s*\(\s*\d+\s*\)", upper)
    if m:
        return pa.string()
    m = re.fullmatch(r"(?:DECIMAL|DEC|NUMERIC)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?", upper)
    if m:
        return pa.decimal128(int(m.group(1) or 10), int(m.group(2) or 0))
    m = re.fullmatch(r"ARRAY\s*<(.*)>", t, re.IGNORECASE | re.DOTALL)
    if m:
        return pa.list_(arrow_type(m.group(1), column))
    m = re.fullmatch(r"STRUCT\s*<(.*)>", t, re.IGNORECASE | re.DOTALL)
    if m:
        fields = []
        for part in _split_top(m.group(1)):
            name, _, sub = part.partition(":")
            if not sub:
                name, _, sub = part.partition(" ")
            fields.append(pa.field(name.strip().strip("`"), arrow_type(sub, f"{column}.{name.strip()}")))
        return pa.struct(fields)
    m = re.fullmatch(r"MAP\s*<(.*)>", t, re.IGNORECASE | re.DOTALL)
    if m:
        kv = _split_top(m.group(1))
        if len(kv) == 2:
            return pa.map_(arrow_type(kv[0], column), arrow_type(kv[1], column))
    raise CarbonOptionError(
        f"column {column}: unsupported type {text!r}; expected one of {', '.join(sorted(_SIMPLE))}, "
        "DECIMAL(p,s), VARCHAR(n), CHAR(n), ARRAY<...>, STRUCT<...>, MAP<...>"
    )


def arrow_schema(columns: list[tuple[str, str]]) -> pa.Schema:
    seen: set[str] = set()
    fields = []
    for name, type_text in columns:
        if name.lower() in seen:
            raise CarbonOptionError(f"column {name!r} is declared twice")
        seen.add(name.lower())
        fields.append(pa.field(name, arrow_type(type_text, name)))
    return pa.schema(fields)
