"""Seeded cases for the CarbonData differential tests: a schema, rows, writer options and filters.

One case is written twice, by carbon-ds (``write_table`` with the options) and by CarbonData's SDK
(``CarbonWriter`` from CSV text, with the same table properties), so every check has CarbonData's own file of
the same rows beside ours as a control.

Values stay where CarbonData's CSV load and CarbonReader are exact: dates and timestamps from 1600 on (the
JVM's SimpleDateFormat switches to the Julian calendar before 1582, carbon-ds and Arrow are proleptic
Gregorian), timestamps to the millisecond (what CarbonData keeps), strings without the load's control
characters (\\001-\\003 separate complex values, ``\\N`` is its null). Complex columns hold string leaves:
CarbonData 2.3.0's CarbonReader returns null for numeric leaves of arrays and structs even in its own files.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import string
import struct
from dataclasses import dataclass, field
from decimal import Context, Decimal
from typing import Any

import pyarrow as pa

NULL = "\\N"  # CarbonData's serialization_null_format
PRIMITIVES = ["int", "smallint", "bigint", "float", "double", "boolean", "string", "date", "timestamp",
              "binary", "decimal"]
COMPLEX = ["array", "struct", "map"]
# sort columns CarbonData accepts (CarbonWriterBuilder: no float/double/decimal/binary/boolean/complex)
SORTABLE = ("int", "smallint", "bigint", "string", "date", "timestamp")
COMPRESSORS = ("snappy", "zstd", "gzip")
EPOCH = dt.date(1970, 1, 1)
DAY_MIN, DAY_MAX = (dt.date(1600, 1, 1) - EPOCH).days, (dt.date(9999, 12, 31) - EPOCH).days
MS_MIN = DAY_MIN * 86_400_000
MS_MAX = DAY_MAX * 86_400_000  # CarbonData's load refuses 9999-12-31 23:59:59.999 as a bad TIMESTAMP
ROW_ID = "rid"  # every case's first column: 0..n-1, what filtered reads return


@dataclass
class Column:
    name: str
    kind: str  # one of PRIMITIVES / COMPLEX, "varchar" for a long string column
    arrow: pa.DataType
    values: list[Any]


@dataclass
class Case:
    seed: int
    columns: list[Column]
    options: dict[str, Any] = field(default_factory=dict)  # carbon-ds write options
    files: list[tuple[int, int]] = field(default_factory=list)  # row ranges, one write (segment / file) each
    filters: list[dict] = field(default_factory=list)  # oracle filter specs

    @property
    def table(self) -> pa.Table:
        return pa.table({c.name: pa.array(c.values, c.arrow) for c in self.columns})

    @property
    def their_table(self) -> pa.Table:
        """The rows as CarbonData's CSV load keeps them (``their_value``)."""
        return pa.table({c.name: pa.array([their_value(c.kind, v) for v in c.values], c.arrow) for c in self.columns})

    def groups(self) -> list[list[str]]:
        """Column groups read apart: CarbonData 2.3.0's CarbonReader returns null for non-string primitive
        dimensions read together with a complex column (in its own files too), so complex columns are read
        with the row id only."""
        plain = [c.name for c in self.columns if c.kind not in COMPLEX]
        return [plain, *([ROW_ID, c.name] for c in self.columns if c.kind in COMPLEX)]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]


# ---------------------------------------------------------------------- values
def _float32(x: float) -> float:
    return struct.unpack(">f", struct.pack(">f", x))[0]


def _text(rng: random.Random, long: bool = False) -> str:
    pick = rng.random()
    if long and pick < 0.5:
        return "".join(rng.choices(string.ascii_letters, k=rng.choice([33_000, 40_000])))
    if pick < 0.1:
        return ""
    alphabet = string.ascii_letters + string.digits + " -_.,;:/'\"é漢字😀"
    return "".join(rng.choices(alphabet, k=rng.randint(1, 24)))


def _value(kind: str, arrow: pa.DataType, rng: random.Random, extreme: float) -> Any:
    edge = rng.random() < extreme
    if kind in ("int", "smallint", "bigint"):
        bits = {"int": 32, "smallint": 16, "bigint": 64}[kind]
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        if edge:
            return rng.choice([lo, hi, 0, -1, 1, lo + 1, hi - 1])
        return rng.choice([rng.randint(-100, 100), rng.randint(lo, hi)])
    if kind in ("float", "double"):
        if edge:
            v = rng.choice([math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324 if kind == "double" else 1e-45,
                            1.7976931348623157e308 if kind == "double" else 3.4028234663852886e38])
        else:
            v = rng.choice([rng.uniform(-1e6, 1e6), float(rng.randint(-1000, 1000)), rng.uniform(-1, 1) * 1e-8])
        return _float32(v) if kind == "float" else v
    if kind == "boolean":
        return rng.random() < 0.5
    if kind in ("string", "varchar"):
        return _text(rng, long=kind == "varchar")
    if kind == "date":
        return EPOCH + dt.timedelta(days=rng.choice([DAY_MIN, DAY_MAX, 0, -1]) if edge
                                    else rng.randint(DAY_MIN // 4, DAY_MAX // 4))
    if kind == "timestamp":
        ms = rng.choice([MS_MIN, MS_MAX, 0, -1, 1]) if edge else rng.randint(MS_MIN // 4, MS_MAX // 4)
        return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)
    if kind == "binary":
        # printable: CarbonData's CSV load has no way to a null binary through its hex/base64 decoders
        return "".join(rng.choices(string.ascii_letters + string.digits, k=rng.choice([0, 1, 5, 40]))).encode()
    if kind == "decimal":
        p, s = arrow.precision, arrow.scale
        digits = p if edge else rng.randint(1, p)
        unscaled = rng.choice([10 ** digits - 1, -(10 ** digits - 1)]) if edge else rng.randint(-(10 ** digits - 1),
                                                                                              10 ** digits - 1)
        return Decimal(unscaled).scaleb(-s, Context(prec=60))  # exact: the default context rounds to 28 digits
    if kind == "array":
        return [_text(rng) for _ in range(rng.randint(1, 4))]
    if kind == "struct":
        return {"a": _text(rng), "b": _text(rng)}
    if kind == "map":
        return [(f"k{i}", _text(rng)) for i in range(rng.randint(1, 3))]
    raise AssertionError(kind)


def _arrow(kind: str, rng: random.Random) -> pa.DataType:
    if kind == "decimal":
        p = rng.choice([1, 2, 5, 9, 10, 18, 19, 20, 28, 38, rng.randint(1, 38)])
        return pa.decimal128(p, rng.randint(0, p))
    return {
        "int": pa.int32(), "smallint": pa.int16(), "bigint": pa.int64(), "float": pa.float32(),
        "double": pa.float64(), "boolean": pa.bool_(), "string": pa.string(), "varchar": pa.string(),
        "date": pa.date32(), "timestamp": pa.timestamp("ms"), "binary": pa.binary(),
        "array": pa.list_(pa.string()), "struct": pa.struct([("a", pa.string()), ("b", pa.string())]),
        "map": pa.map_(pa.string(), pa.string()),
    }[kind]


def make_case(seed: int, kinds: list[str] | None = None) -> Case:
    rng = random.Random(seed)
    if kinds is None:
        kinds = rng.sample(PRIMITIVES, rng.randint(2, 6))
        if rng.random() < 0.25:
            kinds.append(rng.choice(COMPLEX))
        if rng.random() < 0.1:
            kinds.append("varchar")
    many = rng.random() < 0.02  # over one page (32,000 rows)
    rows = rng.randint(32_001, 36_000) if many else rng.choice([1, 2, 5, 17, 100, rng.randint(1, 400)])
    if many:
        kinds = [k for k in kinds if k not in ("varchar", *COMPLEX)][:3]
    null_rate = rng.choice([0.0, 0.05, 0.3, 1.0 if rng.random() < 0.1 else 0.1])
    extreme = rng.choice([0.0, 0.1, 0.3])
    columns = [Column(ROW_ID, "int", pa.int32(), list(range(rows)))]
    for n, kind in enumerate(kinds):
        arrow = _arrow(kind, rng)
        values = [None if rng.random() < null_rate else _value(kind, arrow, rng, extreme) for _ in range(rows)]
        columns.append(Column(f"c{n}_{kind}", kind, arrow, values))
    case = Case(seed, columns)
    _options(case, rng)
    cut = sorted(rng.sample(range(1, rows), k=min(rng.choice([0, 0, 1, 2]), rows - 1))) if rows > 1 else []
    bounds = [0, *cut, rows]
    case.files = [(a, b) for a, b in zip(bounds, bounds[1:], strict=False)]
    case.filters = [f for f in (_filter(case, rng) for _ in range(rng.randint(1, 4))) if f is not None]
    return case


def make_rows(seed: int, kinds: list[str], rows: int, null_rate: float = 0.1, extreme: float = 0.1) -> Case:
    """A case of ``rows`` rows of the given column kinds (no options, no files, no filters)."""
    rng = random.Random(seed)
    columns = [Column(ROW_ID, "int", pa.int32(), list(range(rows)))]
    for n, kind in enumerate(kinds):
        arrow = _arrow(kind, rng)
        values = [None if rng.random() < null_rate else _value(kind, arrow, rng, extreme) for _ in range(rows)]
        columns.append(Column(f"c{n}_{kind}", kind, arrow, values))
    return Case(seed, columns)


def random_filters(case: Case, seed: int, count: int) -> list[dict]:
    """Up to ``count`` filter specs over the case's columns."""
    rng = random.Random(seed)
    return [f for f in (_filter(case, rng) for _ in range(count)) if f is not None]


def _options(case: Case, rng: random.Random) -> None:
    opts: dict[str, Any] = {}
    sortable = [c.name for c in case.columns if c.kind in SORTABLE and c.name != ROW_ID]
    if sortable and rng.random() < 0.5:
        opts["sort_columns"] = rng.sample(sortable, rng.randint(1, min(3, len(sortable))))
        opts["sort_scope"] = rng.choice(["local_sort", "no_sort"])
    if rng.random() < 0.6:
        opts["local_dictionary_enable"] = rng.random() < 0.6
        if opts["local_dictionary_enable"]:
            opts["local_dictionary_threshold"] = rng.choice([1, 2, 10, 1000, 10000])
    if rng.random() < 0.7:
        opts["compressor"] = rng.choice(COMPRESSORS)
    if rng.random() < 0.2:
        opts["blocklet_size"] = 1
    longs = [c.name for c in case.columns if c.kind == "varchar"]
    if longs:
        opts["long_string_columns"] = longs
    case.options = opts


# ---------------------------------------------------------------------- filters
_OPS = ("=", "!=", "<", "<=", ">", ">=", "in", "not in", "is null", "is not null")


def literal(kind: str, value: Any) -> str:
    """A filter literal as CarbonOracle.literal takes it (dates as days, timestamps as microseconds)."""
    if kind == "date":
        return str((value - EPOCH).days)
    if kind == "timestamp":
        return str((value - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1))
    if kind == "boolean":
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, float):
        return java_float(value)
    return str(value)


def java_float(value: float) -> str:
    """A float as Java's Double.parseDouble reads it back exactly."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def _filter(case: Case, rng: random.Random) -> dict | None:
    # NaN compares differently in Java and SQL; binary and complex columns take no literal filters
    usable = [c for c in case.columns if c.kind not in ("binary", "varchar", *COMPLEX) and c.name != ROW_ID
              and not (c.kind in ("float", "double") and any(v is not None and math.isnan(v) for v in c.values))]
    if not usable:
        return None
    col = rng.choice(usable)
    op = rng.choice(_OPS)
    present = [v for v in col.values if v is not None]
    spec = {"op": op, "column": col.name, "type": col.kind if col.kind != "decimal" else
            f"decimal({col.arrow.precision},{col.arrow.scale})"}
    if op in ("is null", "is not null"):
        return spec
    pool = present or [_value(col.kind, col.arrow, rng, 0.2)]
    pick = [rng.choice(pool) if rng.random() < 0.8 else _value(col.kind, col.arrow, rng, 0.2)
            for _ in range(rng.randint(1, 3))]
    if op in ("in", "not in"):
        spec["values"] = [literal(col.kind, v) for v in pick]
        spec["py"] = pick
    else:
        spec["value"] = literal(col.kind, pick[0])
        spec["py"] = pick[0]
    return spec


def matches(spec: dict, value: Any) -> bool:
    """SQL's answer (TRUE only) for one value."""
    op = spec["op"]
    if op == "is null":
        return value is None
    if op == "is not null":
        return value is not None
    if value is None:
        return False
    if op == "in":
        return value in spec["py"]
    if op == "not in":
        return value not in spec["py"]
    lit = spec["py"]
    return {"=": value == lit, "!=": value != lit, "<": value < lit, "<=": value <= lit, ">": value > lit,
            ">=": value >= lit}[op]


def expected_rows(case: Case, spec: dict, theirs: bool = False) -> list[int]:
    """Row ids where ``spec`` is TRUE, over the rows as written (``theirs``: as CarbonData's load kept them)."""
    col = next(c for c in case.columns if c.name == spec["column"])
    values = [their_value(col.kind, v) for v in col.values] if theirs else col.values
    return [i for i, v in enumerate(values) if matches(spec, v)]


# ---------------------------------------------------------------------- CarbonData's side of a case
def their_value(kind: str, value: Any) -> Any:
    """``value`` as CarbonData 2.3.0's CSV load stores it: a DOUBLE NaN or infinity as null and -0.0 as 0.0, a
    null long string as "", a null binary as the bytes of its null marker. A FLOAT NaN and an empty binary (hex) it cannot load at all (the load fails), so
    those are written as null."""
    if kind in ("float", "double") and value is not None:
        if math.isnan(value) or (kind == "double" and math.isinf(value)):
            return None
        if value == 0:
            return 0.0
    if kind == "varchar" and value is None:
        return ""
    if kind == "binary" and value is None:
        return NULL.encode()  # CarbonData's load keeps the null marker's bytes in a BINARY column
    return value


def csv_text(kind: str, value: Any) -> str:
    """A value as CarbonData's CSV load parses it (load options of ``oracle_write_job``)."""
    value = their_value(kind, value)
    if value is None:
        return NULL
    if kind in ("float", "double"):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if kind == "boolean":
        return "true" if value else "false"
    if kind == "date":
        return value.isoformat()
    if kind == "timestamp":
        return value.strftime("%Y-%m-%d %H:%M:%S.") + f"{value.microsecond // 1000:03d}"
    if kind == "binary":
        return value.decode("ascii")
    if kind == "decimal":
        return format(value, "f")
    if kind == "array":
        return "\001".join(value)
    if kind == "struct":
        return "\001".join([value["a"], value["b"]])
    if kind == "map":
        return "\001".join(f"{k}\002{v}" for k, v in value)
    return str(value)


def oracle_write_job(case: Case, out: str, job_id: str) -> dict:
    """The CarbonWriter job writing ``case`` as carbon-ds's write of it is configured."""
    o = case.options
    props: dict[str, str] = {}
    if "sort_columns" in o:
        props["sort_columns"] = ",".join(o["sort_columns"])
        props["sort_scope"] = o["sort_scope"]
    else:
        props["sort_columns"] = ""
    if "local_dictionary_enable" in o:
        props["local_dictionary_enable"] = "true" if o["local_dictionary_enable"] else "false"
    if "local_dictionary_threshold" in o:
        props["local_dictionary_threshold"] = str(o["local_dictionary_threshold"])
    if "blocklet_size" in o:
        props["table_blocklet_size"] = str(o["blocklet_size"])
    if o.get("long_string_columns"):
        props["long_string_columns"] = ",".join(o["long_string_columns"])
    kinds = {c.name: c.kind for c in case.columns}
    complex_nulls = any(c.kind in COMPLEX and None in c.values for c in case.columns)
    schema = [{"name": c.name, "type": _oracle_type(c)} for c in case.columns]
    files = [[[csv_text(kinds[c.name], c.values[i]) for c in case.columns] for i in range(a, b)]
             for a, b in case.files]
    return {"id": job_id, "kind": "write", "out": out, "schema": schema, "files": files,
            # a null array, struct or map is a bad record to the CSV load: FORCE stores it as the null it is (any
            # other value FORCE changed would show as CarbonData's file holding other rows than were written)
            "tableProperties": props, "loadOptions": {"bad_records_action": "FORCE" if complex_nulls else "FAIL"},
            "carbonProperties": {"carbon.column.compressor": o.get("compressor", "snappy")}}


def _oracle_type(c: Column) -> str:
    if c.kind == "decimal":
        return f"decimal({c.arrow.precision},{c.arrow.scale})"
    if c.kind == "varchar":
        return "string"  # long_string_columns makes it VARCHAR
    return {"array": "array<string>", "struct": "struct<a:string,b:string>", "map": "map<string,string>"}.get(
        c.kind, c.kind)


def write_options(case: Case) -> dict[str, Any]:
    """carbon-ds's write options for the case."""
    return dict(case.options)
