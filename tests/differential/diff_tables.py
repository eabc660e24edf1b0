"""The tables of the differential check, and the rows each one must hold.

Every table is written with carbon-ds (several appends, so several segments) and its expected rows are kept
beside it as one pyarrow table: the Parquet twin is written from those rows, never read back from carbon-ds.
DELETE and UPDATE are applied to the table through carbon-ds and to the expected rows with pyarrow compute,
so the twin is an independent oracle of what the table must hold.
"""

from __future__ import annotations

import datetime as dt
import os
import random
from dataclasses import dataclass, field
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import carbon_ds
from carbon_ds import CarbonTable, ListPartition, RangePartition

UTC = dt.UTC
# column kinds drive which predicates and aggregates the generator may use on a column
INT, FLOAT, DEC, STR, DATE, TS, BOOL, BIN, COMPLEX = "int", "float", "dec", "str", "date", "ts", "bool", "bin", "complex"


@dataclass
class Table:
    name: str
    path: str
    twin: str
    rows: pa.Table
    kinds: dict[str, str]
    sort: list[str] = field(default_factory=list)
    partition: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)  # low-cardinality columns to group and join on

    def values(self, column: str) -> list:
        """The column's distinct non-null values (literals are drawn from them)."""
        return [v for v in pc.unique(self.rows[column].drop_null()).to_pylist() if v is not None]


TAGS = ["alpha", "beta", "delta", "echo", "gamma", "hit", "kilo", "lima", "mike", "omega", "zulu", "Ünï"]
DECIMAL_EXTREMES = [Decimal("9999999999999999999999999999.9999999999"),
                    Decimal("-9999999999999999999999999999.9999999999"), Decimal("0E-10"),
                    Decimal("0.0000000001"), Decimal("-0.0000000001")]
DOUBLES = [float("nan"), -0.0, 0.0, float("inf"), float("-inf"), 1e308, -1e-308, 5e-324, 2.5, -2.5, 1.0]
DATES = [dt.date(1, 1, 1), dt.date(1582, 10, 4), dt.date(1969, 12, 31), dt.date(1970, 1, 1),
         dt.date(2020, 2, 29), dt.date(2020, 4, 21), dt.date(9999, 12, 31)]
STAMPS = [dt.datetime(1900, 1, 1, tzinfo=UTC), dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
          dt.datetime(1970, 1, 1, tzinfo=UTC), dt.datetime(2020, 4, 21, 12, 30, 0, 123000, tzinfo=UTC),
          dt.datetime(2020, 4, 21, 12, 30, 0, 123456, tzinfo=UTC), dt.datetime(2262, 4, 11, tzinfo=UTC)]


def _maybe(rng: random.Random, value, p_null: float = 0.12):
    return None if rng.random() < p_null else value


def _all_types_segment(rng: random.Random, seg: int, n: int) -> pa.Table:
    base = seg * 1000
    ids = list(range(base, base + n))
    # each segment draws its tags from its own window, so min/max of tag brackets values it does not hold
    tags = TAGS[seg % 4: seg % 4 + 7]
    rows = {
        "id": ids,
        "i8": [_maybe(rng, rng.choice([-128, 127, 0, rng.randint(-100, 100)])) for _ in ids],
        "i16": [_maybe(rng, rng.choice([-32768, 32767, rng.randint(-999, 999)])) for _ in ids],
        "i32": [_maybe(rng, rng.randint(-50, 50) if rng.random() < 0.9 else rng.choice([-2**31, 2**31 - 1]))
                for _ in ids],
        "i64": [_maybe(rng, rng.choice([-2**63, 2**63 - 1, rng.randint(-10**12, 10**12)])) for _ in ids],
        "f32": [_maybe(rng, rng.choice([float("nan"), -0.0, 0.0, 1.5, -3.25, float("inf")])) for _ in ids],
        "d": [_maybe(rng, rng.choice(DOUBLES) if rng.random() < 0.5 else round(rng.uniform(-100, 100), 3))
              for _ in ids],
        "dec": [_maybe(rng, rng.choice(DECIMAL_EXTREMES) if rng.random() < 0.3
                       else Decimal(rng.randint(-10**6, 10**6)).scaleb(-3).quantize(Decimal("1E-10")))
                for _ in ids],
        "dec18": [_maybe(rng, Decimal(rng.randint(-10**17 + 1, 10**17 - 1) if rng.random() < 0.2
                                      else rng.randint(-5000, 5000)).scaleb(-4)) for _ in ids],
        "s": [_maybe(rng, rng.choice(["", "a", "ab", "abc", "b%_", "it's", "x" * 40, "日本", f"s{rng.randint(0, 30)}"]))
              for _ in ids],
        "tag": [_maybe(rng, rng.choice(tags), 0.05) for _ in ids],
        "dt": [_maybe(rng, rng.choice(DATES) if rng.random() < 0.3
                      else dt.date(2020, 1, 1) + dt.timedelta(days=rng.randint(0, 200))) for _ in ids],
        "ts": [_maybe(rng, rng.choice(STAMPS) if rng.random() < 0.3
                      else dt.datetime(2020, 4, 1, tzinfo=UTC) + dt.timedelta(seconds=rng.randint(0, 10**6)))
               for _ in ids],
        "b": [_maybe(rng, rng.random() < 0.5) for _ in ids],
        "bin": [_maybe(rng, rng.choice([b"", b"\x00", b"\xff\x00", b"ab"])) for _ in ids],
        "arr": [_maybe(rng, [rng.randint(0, 5) for _ in range(rng.randint(0, 3))]) for _ in ids],
    }
    return pa.table(rows, schema=ALL_SCHEMA)


ALL_SCHEMA = pa.schema([
    ("id", pa.int64()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
    ("f32", pa.float32()), ("d", pa.float64()), ("dec", pa.decimal128(38, 10)), ("dec18", pa.decimal128(18, 4)),
    ("s", pa.string()), ("tag", pa.string()), ("dt", pa.date32()), ("ts", pa.timestamp("us", tz="UTC")),
    ("b", pa.bool_()), ("bin", pa.binary()), ("arr", pa.list_(pa.int32())),
])
ALL_KINDS = {"id": INT, "i8": INT, "i16": INT, "i32": INT, "i64": INT, "f32": FLOAT, "d": FLOAT, "dec": DEC,
             "dec18": DEC, "s": STR, "tag": STR, "dt": DATE, "ts": TS, "b": BOOL, "bin": BIN, "arr": COMPLEX}


def _apply_update(rows: pa.Table, mask: pa.ChunkedArray, column: str, value) -> pa.Table:
    col = rows[column]
    new = pc.if_else(pc.fill_null(mask, False), pa.scalar(value, col.type), col)
    return rows.set_column(rows.schema.get_field_index(column), column, new)


def _build_all(root: str, rng: random.Random, twins: str) -> Table:
    path = os.path.join(root, "all_t")
    parts = [_all_types_segment(rng, seg, 300) for seg in range(5)]
    for part in parts:
        carbon_ds.write_table(part, path, sort_columns="tag,i32")
    rows = pa.concat_tables(parts)
    # CarbonData stores timestamps as epoch milliseconds: finer digits are floored when written (README)
    ts = pc.floor_temporal(rows["ts"], unit="millisecond")
    rows = rows.set_column(rows.schema.get_field_index("ts"), "ts", ts)
    t = CarbonTable.open(path)
    # DELETE and UPDATE through delete deltas; the expected rows get the same change by pyarrow compute
    t.delete("i32 BETWEEN 10 AND 20")
    rows = rows.filter(pc.invert(pc.fill_null(pc.and_(pc.greater_equal(rows["i32"], 10),
                                                      pc.less_equal(rows["i32"], 20)), False)))
    t.update({"s": "updated"}, "tag = 'hit'")
    rows = _apply_update(rows, pc.equal(rows["tag"], "hit"), "s", "updated")
    return Table("all_t", path, _twin(twins, "all_t", rows), rows, ALL_KINDS, sort=["tag", "i32"],
                 groups=["tag", "b", "i8"])


def _build_big(root: str, rng: random.Random, twins: str, per_segment: int) -> Table:
    """Eight appends sorted by tag. Six small ones each bracket 'hit' with their tag min/max, only segments
    1 and 4 hold it; two large ones hold tags above it. A lookup of 'hit' keeps the six small segments
    (under the local relation's 100,000-row cap: a local relation), a full read keeps all (over it)."""
    path = os.path.join(root, "big_t")
    parts, start = [], 0
    for seg in range(8):
        n = per_segment // 4 if seg < 6 else int(per_segment * 2.5)
        ids = pa.array(range(start, start + n), pa.int64())
        start += n
        pool = (["aa", "ab", "zz", "zy"] + (["hit"] if seg in (1, 4) else [])) if seg < 6 else ["zzz", "zzy"]
        tags = [pool[rng.randrange(len(pool))] for _ in range(n)]
        part = pa.table({"id": ids, "tag": pa.array(tags), "v": pa.array([rng.randint(0, 999) for _ in range(n)],
                                                                       pa.int32()),
                         "d": pa.array([_maybe(rng, rng.choice(DOUBLES[:4]) if rng.random() < 0.05
                                               else float(rng.randint(0, 99)), 0.02) for _ in range(n)],
                                       pa.float64())})
        carbon_ds.write_table(part, path, sort_columns="tag", blocklet_size=1)
        parts.append(part)
    rows = pa.concat_tables(parts)
    return Table("big_t", path, _twin(twins, "big_t", rows), rows,
                 {"id": INT, "tag": STR, "v": INT, "d": FLOAT}, sort=["tag"], groups=["tag"])


def _build_hive(root: str, rng: random.Random, twins: str) -> Table:
    path = os.path.join(root, "hive_t")
    schema = pa.schema([("id", pa.int64()), ("v", pa.float64()), ("name", pa.string()),
                        ("amount", pa.decimal128(10, 2)), ("p_day", pa.int32()), ("region", pa.string())])
    parts = []
    for seg in range(4):
        n = 250
        part = pa.table({
            "id": range(seg * 250, seg * 250 + n),
            "v": [_maybe(rng, rng.choice([float("nan"), -0.0, round(rng.uniform(-10, 10), 2)])) for _ in range(n)],
            "name": [_maybe(rng, f"n{rng.randint(0, 40):02d}") for _ in range(n)],
            "amount": [_maybe(rng, Decimal(rng.randint(-99999, 99999)).scaleb(-2)) for _ in range(n)],
            "p_day": [rng.choice([20200101, 20200102, 20200103 + seg]) for _ in range(n)],
            "region": [_maybe(rng, rng.choice(["eu", "us", "ap"]), 0.08) for _ in range(n)],
        }, schema=schema)
        carbon_ds.write_table(part, path, partition_by="p_day,region")
        parts.append(part)
    rows = pa.concat_tables(parts)
    t = CarbonTable.open(path)
    t.delete("name LIKE 'n1%'")
    rows = rows.filter(pc.invert(pc.fill_null(pc.starts_with(rows["name"], "n1"), False)))
    t.update({"amount": Decimal("1.00")}, "region = 'ap' AND p_day = 20200101")
    rows = _apply_update(rows, pc.and_(pc.equal(rows["region"], "ap"), pc.equal(rows["p_day"], 20200101)),
                         "amount", Decimal("1.00"))
    return Table("hive_t", path, _twin(twins, "hive_t", rows), rows,
                 {"id": INT, "v": FLOAT, "name": STR, "amount": DEC, "p_day": INT, "region": STR},
                 partition=["p_day", "region"], groups=["region", "p_day"])


def _build_id_partitioned(root: str, rng: random.Random, twins: str) -> list[Table]:
    out = []
    schema = pa.schema([("id", pa.int64()), ("age", pa.int32()), ("country", pa.string()), ("score", pa.int64())])

    def rows_of(seg: int) -> pa.Table:
        n = 300
        return pa.table({"id": range(seg * 300, seg * 300 + n),
                         "age": [_maybe(rng, rng.randint(0, 95), 0.05) for _ in range(n)],
                         "country": [_maybe(rng, rng.choice(["China", "UK", "US", "France", "Peru"]), 0.05)
                                     for _ in range(n)],
                         "score": [_maybe(rng, rng.randint(-1000, 1000)) for _ in range(n)]}, schema=schema)

    kinds = {"id": INT, "age": INT, "country": STR, "score": INT}
    for name, layout, key in (("range_t", RangePartition("age", [10, 20, 30, 40, 60, 80]), "age"),
                              ("list_t", ListPartition("country", ["China", ("UK", "US")]), "country")):
        path = os.path.join(root, name)
        t = CarbonTable.create(path, schema, partition=layout)
        parts = [rows_of(seg) for seg in range(3)]
        for part in parts:
            with t.load() as load:
                load.write([part])
        rows = pa.concat_tables(parts)
        out.append(Table(name, path, _twin(twins, name, rows), rows, kinds, partition=[key],
                         groups=["country", "age"] if name == "list_t" else ["country"]))
    return out


def _build_added(root: str, rng: random.Random, twins: str) -> Table:
    """Two carbon segments and one Parquet folder registered with ADD SEGMENT (not converted)."""
    path = os.path.join(root, "added_t")
    schema = pa.schema([("id", pa.int64()), ("k", pa.string()), ("v", pa.int64()), ("d", pa.float64()),
                        ("dt", pa.date32())])

    def rows_of(start: int, n: int) -> pa.Table:
        return pa.table({"id": range(start, start + n),
                         "k": [_maybe(rng, rng.choice(["k1", "k2", "k3", "hit"])) for _ in range(n)],
                         "v": [_maybe(rng, rng.randint(-500, 500)) for _ in range(n)],
                         "d": [_maybe(rng, rng.choice(DOUBLES[:5] + [1.5, 7.0])) for _ in range(n)],
                         "dt": [_maybe(rng, dt.date(2020, 4, 1) + dt.timedelta(days=rng.randint(0, 40)))
                                for _ in range(n)]}, schema=schema)

    parts = [rows_of(0, 300), rows_of(300, 300)]
    for part in parts:
        carbon_ds.write_table(part, path, sort_columns="k")
    external = os.path.join(root, "added_parquet")
    os.makedirs(external)
    extra = rows_of(600, 300)
    pq.write_table(extra.slice(0, 150), os.path.join(external, "a.parquet"))
    pq.write_table(extra.slice(150), os.path.join(external, "b.parquet"))
    CarbonTable.open(path).add_segment(external, format="parquet")
    rows = pa.concat_tables(parts + [extra])
    return Table("added_t", path, _twin(twins, "added_t", rows), rows,
                 {"id": INT, "k": STR, "v": INT, "d": FLOAT, "dt": DATE}, sort=["k"], groups=["k"])


def _twin(twins: str, name: str, rows: pa.Table) -> str:
    """The Parquet copy Spark's own reader answers from (three files, so Spark plans several tasks)."""
    folder = os.path.join(twins, name)
    os.makedirs(folder)
    step = -(-rows.num_rows // 3)
    for i in range(3):
        pq.write_table(rows.slice(i * step, step), os.path.join(folder, f"part-{i}.parquet"))
    return folder


def build_tables(root: str, seed: int, big_rows: int = 20_000) -> dict[str, Table]:
    """Write every table of the check under ``root`` (tables) and ``root``/twins (Parquet copies)."""
    rng = random.Random(seed)
    twins = os.path.join(root, "twins")
    os.makedirs(twins, exist_ok=True)
    tables = [_build_all(root, rng, twins), _build_big(root, rng, twins, big_rows), _build_hive(root, rng, twins),
              *_build_id_partitioned(root, rng, twins), _build_added(root, rng, twins)]
    return {t.name: t for t in tables}
