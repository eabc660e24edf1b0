"""CarbonData 1.3-1.5 HASH, RANGE and LIST partitions: the ``PartitionInfo`` in the schema file, the row
to partition-id mapping, and SHOW PARTITIONS text.

What CarbonData stores (thrift ``PartitionInfo``): the partition column, the type, ``range_info`` (ascending
upper bounds as text) or ``list_info`` (groups of values as text), ``num_partitions``, ``partition_ids``
(partition index -> id) and ``max_partition`` (the highest id ever given; ADD and SPLIT hand out the next
ones). Index 0 is the DEFAULT partition (id 0): the values no range or list takes, and nulls. A row's
partition id is the *task number* in its data file's name (``part-0-<id>_batchno<b>-...``), which is how
readers prune by partition before opening a file.

HASH maps a value to ``(javaHashCode(key) & 0x7fffffff) % PARTITION_NUM`` as CarbonData's hash partitioner
does. The key is the Java object its load makes of the value's text: Integer, Short, Long and Double for
those types, a BigDecimal for decimals (its hash folds in the scale, so 1.50 at scale 2 is not 1.5), epoch
milliseconds (a Long) for dates and for timestamps printed in the default ``yyyy-MM-dd HH:mm:ss`` (whole
seconds), and the text itself (a String) for strings and booleans. Nulls go to partition 0. Where ours
differs: dates and timestamps are taken in UTC (CarbonData used the JVM's time zone), and float columns
hash their bits (CarbonData hashed Java's text of the float).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonOptionError
from carbon_ds.format.thrift.structs import ColumnSchema, PartitionInfo, PartitionType
from carbon_ds.readers.external.text import strptime_pattern

DEFAULT_TIMESTAMP_FORMAT = "yyyy-MM-dd HH:mm:ss"
DEFAULT_DATE_FORMAT = "yyyy-MM-dd"


# ------------------------------------------------------------------ what a user asks for
@dataclass(frozen=True)
class HashPartition:
    """``PARTITION_TYPE='HASH'``: rows spread over ``num`` partitions by the hash of ``column``.

    Example:
        >>> schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
        >>> t = carbon_ds.CarbonTable.create(f"{tmp}/by_id", schema, partition=carbon_ds.HashPartition("id", 4))
        >>> carbon_ds.write_table(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}, schema=schema), f"{tmp}/by_id")
        '0'
        >>> carbon_ds.read_table(f"{tmp}/by_id").num_rows
        3
    """

    column: str
    num: int


@dataclass(frozen=True)
class RangePartition:
    """``PARTITION_TYPE='RANGE'``: ``bounds`` ascending upper bounds (exclusive); values past the last go to
    DEFAULT (0). Dates and timestamps as text in the table's ``dateformat`` / ``timestampformat``.

    Example:
        >>> schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
        >>> spec = carbon_ds.RangePartition("id", [100, 200])       # id < 100, 100 <= id < 200, DEFAULT
        >>> t = carbon_ds.CarbonTable.create(f"{tmp}/by_range", schema, partition=spec)
    """

    column: str
    bounds: tuple

    def __init__(self, column: str, bounds):
        object.__setattr__(self, "column", column)
        object.__setattr__(self, "bounds", tuple(bounds))


@dataclass(frozen=True)
class ListPartition:
    """``PARTITION_TYPE='LIST'``: each entry of ``values`` is a value or a tuple/list of values (one level of
    grouping) forming one partition; unlisted values go to DEFAULT (0).

    Example:
        >>> schema = pa.schema([("country", pa.string()), ("sales", pa.int64())])
        >>> spec = carbon_ds.ListPartition("country", ["UK", ("US", "CA")])   # UK, US or CA, DEFAULT
        >>> t = carbon_ds.CarbonTable.create(f"{tmp}/by_country", schema, partition=spec)
    """

    column: str
    values: tuple

    def __init__(self, column: str, values):
        object.__setattr__(self, "column", column)
        object.__setattr__(self, "values", tuple(tuple(v) if isinstance(v, (list, tuple)) else v for v in values))


PartitionSpec = HashPartition | RangePartition | ListPartition


def parse_list_info(text: str) -> list[list[str]]:
    """``'aaaa, bbbb, (cccc, dddd), eeee'`` -> [[aaaa], [bbbb], [cccc, dddd], [eeee]] (one level of grouping).

    Raises:
        CarbonOptionError: unbalanced or nested parentheses, or an empty entry.
    """
    groups: list[list[str]] = []
    current: list[str] | None = None
    for tok in re.findall(r"\(|\)|[^,()]+|,", text):
        t = tok.strip()
        if not t or t == ",":
            continue
        if t == "(":
            if current is not None:
                raise CarbonOptionError(f"LIST_INFO {text!r}: nested parentheses; only one level of grouping")
            current = []
        elif t == ")":
            if not current:
                raise CarbonOptionError(f"LIST_INFO {text!r}: ')' without a matching '(' or an empty group")
            groups.append(current)
            current = None
        elif current is not None:
            current.append(t)
        else:
            groups.append([t])
    if current is not None:
        raise CarbonOptionError(f"LIST_INFO {text!r}: '(' is never closed")
    if not groups:
        raise CarbonOptionError(f"LIST_INFO {text!r}: expected at least one value")
    return groups


def _text(v) -> str:
    return v if isinstance(v, str) else str(v)


def spec_from_properties(column: str, props: dict[str, str]) -> PartitionSpec | None:
    """The spec CREATE TABLE's TBLPROPERTIES ask for (``PARTITION_TYPE`` and its companion), or None."""
    low = {k.lower(): v for k, v in props.items()}
    kind = low.get("partition_type", "").strip().upper()
    if not kind:
        return None
    if kind == "HASH":
        num = low.get("partition_num", "").strip()
        if not num.isdigit() or int(num) < 1:
            raise CarbonOptionError(f"PARTITION_TYPE 'HASH' needs PARTITION_NUM, a positive integer; found {num!r}")
        return HashPartition(column, int(num))
    if kind == "RANGE":
        info = low.get("range_info")
        if not info:
            raise CarbonOptionError("PARTITION_TYPE 'RANGE' needs RANGE_INFO ('bound1, bound2, ...')")
        return RangePartition(column, [b.strip() for b in info.split(",") if b.strip()])
    if kind == "LIST":
        info = low.get("list_info")
        if not info:
            raise CarbonOptionError("PARTITION_TYPE 'LIST' needs LIST_INFO ('a, b, (c, d), e')")
        return ListPartition(column, [tuple(g) if len(g) > 1 else g[0] for g in parse_list_info(info)])
    raise CarbonOptionError(f"PARTITION_TYPE {kind!r}: expected HASH, RANGE or LIST")


# ------------------------------------------------------------------ typed values
def java_to_strptime(pattern: str) -> str:
    return strptime_pattern(pattern) or pattern


def parse_value(text: str, typ: pa.DataType, props: dict[str, str], where: str):
    """One partition bound or list value, as the column's Python value (dates/timestamps in the table's
    formats, else ISO 8601).

    Raises:
        CarbonOptionError: the text is no value of the column's type.
    """
    t = text.strip()
    try:
        if pa.types.is_timestamp(typ) or pa.types.is_date(typ):
            key, default = (("timestampformat", DEFAULT_TIMESTAMP_FORMAT) if pa.types.is_timestamp(typ)
                            else ("dateformat", DEFAULT_DATE_FORMAT))
            fmts = [props.get(key), default, "%Y-%m-%d %H:%M:%S", "%Y-%m-%d", "%Y/%m/%d"]
            for f in fmts:
                if not f:
                    continue
                try:
                    v = dt.datetime.strptime(t, java_to_strptime(f))
                    return v.date() if pa.types.is_date(typ) else v
                except ValueError:
                    continue
            v = dt.datetime.fromisoformat(t)
            return v.date() if pa.types.is_date(typ) else v
        if pa.types.is_string(typ) or pa.types.is_large_string(typ):
            return t
        return pa.scalar(t).cast(typ).as_py()
    except (ValueError, TypeError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise CarbonOptionError(f"{where}: value {text!r} is not a valid {typ} for the partition column ({e})") from e


# ------------------------------------------------------------------ Java hash codes, vectorised


def _long_hash(v: np.ndarray) -> np.ndarray:
    u = v.astype(np.int64).view(np.uint64)
    return (u ^ (u >> np.uint64(32))).astype(np.uint32).view(np.int32)


def java_string_hash(s: str) -> int:
    h = 0
    units = s.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


_WORD = np.uint64(0xFFFFFFFF)


def decimal_hash(arr: pa.Array) -> np.ndarray:
    """``java.math.BigDecimal.hashCode()`` of each value at the column's scale (int32):
    ``31 * unscaled.hashCode() + scale``, where BigInteger's hash folds the magnitude's 32-bit words, most
    significant first, as ``31 * h + word`` and then takes the value's sign."""
    typ = arr.type
    if typ.bit_width != 128:
        arr = arr.cast(pa.decimal128(typ.precision, typ.scale))
    n = len(arr)
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint64)[2 * arr.offset : 2 * (arr.offset + n)]
    lo, hi = raw[0::2], raw[1::2]  # little-endian two's complement halves
    neg = (hi >> np.uint64(63)) == 1
    nlo = ~lo + np.uint64(1)  # 128-bit negation for the magnitude of negative values
    nhi = ~hi + (nlo == 0).astype(np.uint64)
    mlo, mhi = np.where(neg, nlo, lo), np.where(neg, nhi, hi)
    h = np.zeros(n, dtype=np.uint64)
    for word in (mhi >> np.uint64(32), mhi & _WORD, mlo >> np.uint64(32), mlo & _WORD):
        h = (h * np.uint64(31) + word) & _WORD  # leading zero words leave h at 0, as BigInteger drops them
    h = np.where(neg, (~h + np.uint64(1)) & _WORD, h)
    out = (h * np.uint64(31) + np.uint64(typ.scale)) & _WORD
    return out.astype(np.uint32).view(np.int32)


def java_hash(arr: pa.Array) -> np.ndarray:
    """``hashCode()`` of each value's Java object (int32); nulls get 0 (they go to partition 0 anyway)."""
    typ = arr.type
    valid = ~np.asarray(arr.is_null(), dtype=bool)
    if pa.types.is_dictionary(typ):
        arr = arr.cast(typ.value_type)
        typ = arr.type
    if pa.types.is_boolean(typ):
        # the load hashes a boolean's text, "true" / "false"
        vals = np.asarray(arr.fill_null(False), dtype=bool)
        out = np.where(vals, java_string_hash("true"), java_string_hash("false")).astype(np.int32)
    elif pa.types.is_decimal(typ):
        out = decimal_hash(arr)
    elif pa.types.is_integer(typ) and typ.bit_width <= 32:
        out = np.asarray(arr.fill_null(0).cast(pa.int32()), dtype=np.int32)
    elif pa.types.is_integer(typ):
        out = _long_hash(np.asarray(arr.fill_null(0).cast(pa.int64()), dtype=np.int64))
    elif pa.types.is_float32(typ):
        f = np.asarray(arr.fill_null(0.0), dtype=np.float32)
        f = np.where(np.isnan(f), np.float32(np.nan), f)  # Java canonicalises NaN
        out = f.view(np.int32).copy()
    elif pa.types.is_floating(typ):
        f = np.asarray(arr.fill_null(0.0).cast(pa.float64()), dtype=np.float64)
        f = np.where(np.isnan(f), np.nan, f)
        out = _long_hash(f.view(np.int64))
    elif pa.types.is_timestamp(typ) or pa.types.is_date(typ):
        ms = arr.cast(pa.timestamp("ms")) if pa.types.is_date(typ) else arr.cast(pa.timestamp("ms"), safe=False)
        ms = np.asarray(ms.cast(pa.int64()).fill_null(0), dtype=np.int64)
        if pa.types.is_timestamp(typ):
            ms = ms // 1000 * 1000  # the default timestamp format prints whole seconds
        out = _long_hash(ms)
    else:
        # Strings: Java's String.hashCode, once per distinct value.
        text = arr.cast(pa.string()) if not pa.types.is_string(typ) else arr
        enc = pc.dictionary_encode(text)
        uniq = enc.dictionary.to_pylist()
        codes = np.asarray(enc.indices.fill_null(0), dtype=np.int64)
        table = np.array([java_string_hash(u) for u in uniq] or [0], dtype=np.int32)
        out = table[codes]
    return np.where(valid, out, 0).astype(np.int32)


# ------------------------------------------------------------------ the table's layout
@dataclass
class Layout:
    """A table's HASH/RANGE/LIST partitioning as stored (ids by index) with typed bounds and values."""

    kind: PartitionType
    column: str  # table spelling
    type: pa.DataType
    ids: list[int]  # index -> partition id; index 0 is DEFAULT for RANGE and LIST
    num: int
    max_partition: int
    range_text: list[str]
    list_text: list[list[str]]
    bounds: list  # typed RANGE bounds
    groups: list[list]  # typed LIST groups
    column_schema: ColumnSchema | None = None

    @property
    def type_name(self) -> str:
        return self.kind.name

    # -- mapping rows
    def indexes(self, arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Each value's partition index (0 = DEFAULT), vectorised."""
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        n = len(arr)
        valid = ~np.asarray(arr.is_null(), dtype=bool)
        if self.kind == PartitionType.HASH:
            h = java_hash(arr).astype(np.int64) & 0x7FFFFFFF
            return np.where(valid, h % self.num, 0).astype(np.int64)
        if pa.types.is_dictionary(arr.type):
            arr = arr.cast(arr.type.value_type)
        if self.kind == PartitionType.RANGE:
            out = np.zeros(n, dtype=np.int64)
            # index i (1-based) holds bounds[i-2] <= v < bounds[i-1]; count bounds <= v
            k = np.zeros(n, dtype=np.int64)
            for b in self.bounds:
                ge = pc.greater_equal(arr, pa.scalar(b, type=arr.type)).fill_null(False)
                k += np.asarray(ge, dtype=bool)
            out = np.where(k < len(self.bounds), k + 1, 0)
            return np.where(valid, out, 0).astype(np.int64)
        flat = [v for g in self.groups for v in g]
        owner = np.array([i + 1 for i, g in enumerate(self.groups) for _v in g] + [0], dtype=np.int64)
        pos = pc.index_in(arr, value_set=pa.array(flat, type=arr.type))
        idx = np.asarray(pos.fill_null(len(flat)), dtype=np.int64)
        return owner[idx]

    def partition_ids(self, arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
        return np.asarray(self.ids, dtype=np.int64)[self.indexes(arr)]

    # -- SHOW PARTITIONS
    def show_rows(self) -> list[str]:
        col = self.column.lower()
        if self.kind == PartitionType.HASH:
            return [f"{col} = HASH_NUMBER({self.num})"]
        rows = [f"0, {col} = DEFAULT"]
        if self.kind == PartitionType.RANGE:
            for i, b in enumerate(self.range_text):
                pid = self.ids[i + 1]
                rows.append(f"{pid}, {col} < {b}" if i == 0 else f"{pid}, {self.range_text[i - 1]} <= {col} < {b}")
        else:
            for i, g in enumerate(self.list_text):
                rows.append(f"{self.ids[i + 1]}, {col} = {', '.join(g)}")
        return rows

    # -- back to thrift
    def to_info(self) -> PartitionInfo:
        return PartitionInfo(
            partition_columns=[self.column_schema] if self.column_schema is not None else [],
            partition_type=int(self.kind),
            list_info=[list(g) for g in self.list_text] if self.kind == PartitionType.LIST else None,
            range_info=list(self.range_text) if self.kind == PartitionType.RANGE else None,
            partition_ids=list(self.ids),
            num_partitions=self.num,
            max_partition=self.max_partition,
        )


def build_layout(kind: PartitionType, column: str, typ: pa.DataType, ids: list[int], num: int, max_partition: int,
                 range_text: list[str], list_text: list[list[str]], props: dict[str, str],
                 column_schema: ColumnSchema | None = None) -> Layout:
    """A checked layout: RANGE bounds strictly ascending, LIST values unique, all of the column's type.

    Raises:
        CarbonOptionError: a value of the wrong type, bounds not ascending, a value listed twice.
    """
    bounds = [parse_value(b, typ, props, "RANGE_INFO") for b in range_text]
    for a, b in zip(bounds, bounds[1:], strict=False):
        if not a < b:
            raise CarbonOptionError(f"RANGE_INFO {', '.join(range_text)!r}: bounds must be strictly ascending; "
                                    f"found {a!r} before {b!r}")
    groups = [[parse_value(v, typ, props, "LIST_INFO") for v in g] for g in list_text]
    seen: set = set()
    for g in groups:
        for v in g:
            if v in seen:
                raise CarbonOptionError(f"LIST_INFO: value {v!r} is listed twice")
            seen.add(v)
    return Layout(kind, column, typ, list(ids), num, max_partition, list(range_text),
                  [list(g) for g in list_text], bounds, groups, column_schema)


def layout_for_spec(spec: PartitionSpec, schema: pa.Schema, props: dict[str, str]) -> Layout:
    """The initial layout for a new table (ids 0..n-1, as CarbonData numbers them at creation).

    Raises:
        CarbonOptionError: unknown column, bad count, bounds or values.
    """
    by_lower = {f.name.lower(): f for f in schema}
    f = by_lower.get(spec.column.lower())
    if f is None:
        raise CarbonOptionError(f"partition column {spec.column!r} is not a column of the table "
                                f"({', '.join(schema.names)})")
    if pa.types.is_nested(f.type) or pa.types.is_binary(f.type):
        raise CarbonOptionError(f"partition column {f.name!r} has type {f.type}; expected a primitive type")
    props = {k.lower(): v for k, v in props.items()}
    if isinstance(spec, HashPartition):
        if int(spec.num) < 1:
            raise CarbonOptionError(f"PARTITION_NUM {spec.num!r}: expected a positive integer")
        n = int(spec.num)
        return build_layout(PartitionType.HASH, f.name, f.type, list(range(n)), n, n - 1, [], [], props)
    if isinstance(spec, RangePartition):
        texts = [_text(b) for b in spec.bounds]
        if not texts:
            raise CarbonOptionError("RANGE_INFO: expected at least one bound")
        n = len(texts) + 1
        return build_layout(PartitionType.RANGE, f.name, f.type, list(range(n)), n, n - 1, texts, [], props)
    groups = [[_text(x) for x in v] if isinstance(v, tuple) else [_text(v)] for v in spec.values]
    if not groups:
        raise CarbonOptionError("LIST_INFO: expected at least one value")
    n = len(groups) + 1
    return build_layout(PartitionType.LIST, f.name, f.type, list(range(n)), n, n - 1, [], groups, props)


CARBON_TYPES = (PartitionType.HASH, PartitionType.RANGE, PartitionType.LIST)


def layout_from_info(info: PartitionInfo | None, schema: pa.Schema, props: dict[str, str]) -> Layout | None:
    """The layout stored in a schema file's PartitionInfo; None for Hive-style or unpartitioned tables."""
    if info is None or info.partition_type not in [int(t) for t in CARBON_TYPES] or not info.partition_columns:
        return None
    kind = PartitionType(info.partition_type)
    cs = info.partition_columns[0]
    by_lower = {f.name.lower(): f for f in schema}
    f = by_lower.get(cs.column_name.lower())
    if f is None:
        return None
    range_text = list(info.range_info or [])
    list_text = [list(g) for g in info.list_info or []]
    default_n = info.num_partitions or (len(range_text) + 1 if kind == PartitionType.RANGE else len(list_text) + 1)
    ids = list(info.partition_ids or range(default_n))
    num = info.num_partitions or len(ids)
    maxp = info.max_partition if info.max_partition is not None else max(ids)
    return build_layout(kind, f.name, f.type, ids, num, maxp, range_text, list_text,
                        {k.lower(): v for k, v in props.items()}, cs)


_TASK_RE = re.compile(r"^part-\d+-(?P<task>\d+)(?:_|$)")


def partition_id_of(file_name: str) -> int | None:
    """The partition id a data file carries as its task number (None when the name has none)."""
    m = _TASK_RE.match(file_name)
    return int(m.group("task")) if m else None
