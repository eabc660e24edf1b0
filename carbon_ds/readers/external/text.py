"""What the text formats (CSV, JSON) share: option lookup and typing temporal columns as the table wants."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonOptionError, CarbonValueError
from carbon_ds.fs import Storage

_JAVA = [("yyyy", "%Y"), ("yy", "%y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"), ("mm", "%M"), ("ss", "%S")]


def strptime_pattern(pattern: str | None) -> str | None:
    """A Java/Spark date pattern as a strptime one (patterns with '%' are taken as strptime already)."""
    if not pattern:
        return None
    if "%" in pattern:
        return pattern
    out = pattern
    for java, c in _JAVA:
        out = out.replace(java, c)
    if any(ch.isalpha() and out[i - 1:i] != "%" for i, ch in enumerate(out)):
        raise CarbonOptionError(f"date/timestamp format {pattern!r} uses letters other than yyyy MM dd HH mm ss")
    return out


def option(options: dict[str, str], *names: str, default: str | None = None) -> str | None:
    for n in names:
        if n in options and options[n] is not None:
            return options[n]
    return default


def is_true(value: str | None, default: bool) -> bool:
    return default if value is None else value.strip().lower() in ("true", "1", "yes")


def text_types(table_schema: pa.Schema | None) -> dict[str, pa.DataType]:
    """Lower-cased table column -> type to parse text as (temporal columns stay strings: see parse_temporal)."""
    out = {}
    for f in table_schema or []:
        t = f.type
        out[f.name.lower()] = pa.string() if pa.types.is_timestamp(t) or pa.types.is_date(t) else t
    return out


def iso_timestamps(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """ISO 8601 text as timestamp[us, UTC]: values with a zone designator (``Z``, ``+08:00``, as
    ``pyarrow.csv.write_csv`` and Spark write them) are converted to UTC, values without one are UTC."""
    try:
        return col.cast(pa.timestamp("us")).cast(pa.timestamp("us", "UTC"))
    except pa.ArrowInvalid:
        pass  # some values carry a zone: give every value an explicit one, then one zone-aware cast
    text = pc.replace_substring_regex(col, r"Z$", "+00:00")
    has_zone = pc.match_substring_regex(text, r"[+-]\d\d:?\d\d$")
    text = pc.if_else(has_zone, text, pc.binary_join_element_wise(text, pa.scalar("+00:00"), pa.scalar("")))
    return text.cast(pa.timestamp("us", "UTC"))


def parse_temporal(data: pa.Table, table_schema: pa.Schema | None, options: dict[str, str]) -> pa.Table:
    """Date and timestamp columns of text files, parsed with the given formats (ISO 8601 without one)."""
    if table_schema is None:
        return data
    want = {f.name.lower(): f.type for f in table_schema}
    date_fmt = strptime_pattern(option(options, "dateformat", "date_format"))
    ts_fmt = strptime_pattern(option(options, "timestampformat", "timestamp_format"))
    for i, name in enumerate(data.schema.names):
        t = want.get(name.lower())
        col = data.column(i)
        if t is None or not (pa.types.is_timestamp(t) or pa.types.is_date(t)) or not (
            pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
        ):
            continue
        fmt = date_fmt if pa.types.is_date(t) else ts_fmt

        def convert(col: pa.ChunkedArray, t: pa.DataType = t, fmt: str | None = fmt) -> pa.ChunkedArray:
            if fmt:
                parsed = pc.strptime(col, format=fmt, unit="us", error_is_null=False)
                parsed = parsed.cast(pa.timestamp("us", "UTC"))
            else:
                # ISO 8601; a value without an offset is UTC (text files carry no zone of their own)
                parsed = iso_timestamps(col) if pa.types.is_timestamp(t) else col.cast(pa.date32())
            return parsed.cast(pa.date32()) if pa.types.is_date(t) and pa.types.is_timestamp(parsed.type) else parsed

        try:
            parsed = convert(col)
        except pa.ArrowInvalid as e:
            row = first_failing_row(col, convert)
            given = option(options, *(("dateformat", "date_format") if pa.types.is_date(t) else
                                      ("timestampformat", "timestamp_format")))
            raise BadTextValue(name, row, None if row is None else col[row].as_py(), t, given, e) from None
        data = data.set_column(i, name, parsed)
    return data


class BadTextValue(Exception):
    """A text file's value that does not parse as its column's type; the reader that knows the file turns it
    into a CarbonValueError naming the file and the line."""

    def __init__(self, column: str, row: int | None, value: object, type: pa.DataType, fmt: str | None,
                 cause: Exception):
        super().__init__(str(cause))
        self.column, self.row, self.value, self.type, self.fmt, self.cause = column, row, value, type, fmt, cause


def first_failing_row(col: pa.ChunkedArray | pa.Array, convert) -> int | None:
    """The index of the first value ``convert`` rejects (ArrowInvalid), by bisection: only on the error path,
    O(n log n) conversions of halves."""
    lo, hi = 0, len(col)
    try:
        convert(col.slice(lo, hi))
        return None
    except pa.ArrowInvalid:
        pass
    while hi - lo > 1:  # the first failure lies in [lo, hi)
        mid = (lo + hi) // 2
        try:
            convert(col.slice(lo, mid - lo))
            lo = mid
        except pa.ArrowInvalid:
            hi = mid
    return lo


def value_error(storage: Storage, path: str, row: int | None, column: str, value: object, type: pa.DataType,
                fmt: str | None, skip: int | None) -> CarbonValueError:
    """The error for a value of a text file that does not parse: file, row (0-based ``row``, said 1-based),
    its line when the file has one row per non-empty line after ``skip`` header lines (``skip`` None: it has
    not), column and value."""
    where = "a row"
    if row is not None:
        line = None if skip is None else _line_of(storage, path, row + skip)
        where = f"row {row + 1}" + ("" if line is None else f" (line {line})")
    how = f" in the format {fmt!r}" if fmt else ""
    return CarbonValueError(f"{where}, column {column!r}: {value!r} does not parse as {type}{how}", storage.uri(path))


def _line_of(storage: Storage, path: str, index: int) -> int | None:
    """The 1-based line of the ``index``-th non-empty line (CSV and JSON Lines readers skip empty lines); the
    file was just read whole, so reading it again is bounded by what the read already took. None when a line
    holds an odd number of double quotes (a quoted CSV value may span lines: the count would be wrong)."""
    data = storage.read_bytes(path)
    seen = 0
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip(b"\r \t"):
            continue
        if line.count(b'"') % 2 and line.count(b'\\"') == 0:
            return None
        if seen == index:
            return number
        seen += 1
    return None
