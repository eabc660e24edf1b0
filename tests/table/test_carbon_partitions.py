"""HASH / RANGE / LIST partitions: row placement, SHOW PARTITIONS, pruning, ADD / SPLIT / DROP, crashes."""

from __future__ import annotations

import datetime as dt
import decimal
import math

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import carbon_ds
from carbon_ds import faults
from carbon_ds.ddl.statement_parser import AlterCarbonPartition, AlterPartition, parse
from carbon_ds.errors import CarbonOptionError
from carbon_ds.fs import basename
from carbon_ds.table.partitions.id_spec import partition_id_of, spec_from_properties
from carbon_ds.table.table import CarbonTable, HashPartition, ListPartition, RangePartition

SCHEMA = pa.schema([("id", pa.int32()), ("age", pa.int32()), ("country", pa.string())])
COUNTRIES = ["China", "UK", "US", "France", "Japan", None]


def rows(n: int = 300) -> pa.Table:
    return pa.table({
        "id": pa.array(range(n), pa.int32()),
        "age": pa.array([None if i % 37 == 0 else i % 97 for i in range(n)], pa.int32()),
        "country": pa.array([COUNTRIES[i % len(COUNTRIES)] for i in range(n)], pa.string()),
    })


def java_hash(s: str) -> int:  # String.hashCode, written out independently
    h = 0
    for ch in s:
        h = (h * 31 + ord(ch)) % (1 << 32)
    return h - (1 << 32) if h >= 1 << 31 else h


def placed(table: CarbonTable) -> dict[int, list[int]]:
    """partition id (from the file name) -> sorted ids of the rows in that partition's files."""
    out: dict[int, list[int]] = {}
    for f in table.files():
        pid = partition_id_of(basename(f.path))
        ids = carbon_ds.read_table(f.path, columns=["id"]).column("id").to_pylist()
        out.setdefault(pid, []).extend(ids)
    return {k: sorted(v) for k, v in out.items()}


def make(tmp_path, spec, data=None) -> CarbonTable:
    t = CarbonTable.create(tmp_path / "t", SCHEMA, partition=spec)
    with t.load() as load:
        load.write([data if data is not None else rows()])
    return CarbonTable.open(tmp_path / "t")


def expected_range(age, bounds):
    if age is None or age >= bounds[-1]:
        return 0
    return 1 + sum(1 for b in bounds if age >= b)


def test_range_rows_land_in_their_partition_and_show(tmp_path):
    bounds = [10, 20, 30, 40, 50, 60, 70, 80]
    t = make(tmp_path, RangePartition("age", bounds))
    data = rows()
    want: dict[int, list[int]] = {}
    for i, a in zip(data["id"].to_pylist(), data["age"].to_pylist(), strict=True):
        want.setdefault(expected_range(a, bounds), []).append(i)
    assert placed(t) == {k: sorted(v) for k, v in want.items()}
    assert t.show_partitions()[:3] == ["0, age = DEFAULT", "1, age < 10", "2, 10 <= age < 20"]
    # the seed's example: age >= 20 and age < 40 reads partitions 3 and 4 only
    report = carbon_ds.explain(t.uri, "age >= 20 and age < 40")
    assert report["partitions"]["read"] == [3, 4]
    assert "partitions read 2 of 9 (ids 3, 4)" in str(report)
    assert report["files"]["total"] == len(t.files()) == 9 and report["files"]["read"] == 2
    got = carbon_ds.read_table(t.uri, filter="age >= 20 and age < 40")
    oracle = data.filter(pc.and_(pc.greater_equal(data["age"], 20), pc.less(data["age"], 40)))
    assert sorted(got["id"].to_pylist()) == sorted(oracle["id"].to_pylist())


@pytest.mark.parametrize("flt, ids", [
    ("age = 15", [2]), ("age < 10", [1]), ("age <= 10", [1, 2]), ("age > 75", [0, 8]),
    ("age in (5, 85)", [0, 1]), ("age = 5 or age = 45", [1, 5]), ("age >= 80", [0]),
])
def test_range_pruning_ops_equal_plain_filter(tmp_path, flt, ids):
    t = make(tmp_path, RangePartition("age", [10, 20, 30, 40, 50, 60, 70, 80]))
    assert carbon_ds.explain(t.uri, flt)["partitions"]["read"] == ids
    con = duckdb.connect()
    con.register("everything", t.to_arrow())
    got = carbon_ds.read_table(t.uri, filter=flt)
    oracle = con.sql(f"select id from everything where {flt}").to_arrow_table()
    assert sorted(got["id"].to_pylist()) == sorted(oracle["id"].to_pylist())


def test_list_partitions_show_and_prune(tmp_path):
    t = make(tmp_path, ListPartition("country", ["China", ("UK", "US")]))
    assert t.show_partitions() == ["0, country = DEFAULT", "1, country = China", "2, country = UK, US"]
    data = rows()
    want: dict[int, list[int]] = {}
    for i, c in zip(data["id"].to_pylist(), data["country"].to_pylist(), strict=True):
        want.setdefault(1 if c == "China" else 2 if c in ("UK", "US") else 0, []).append(i)
    assert placed(t) == {k: sorted(v) for k, v in want.items()}
    assert carbon_ds.explain(t.uri, "country in ('UK', 'China')")["partitions"]["read"] == [1, 2]
    assert carbon_ds.explain(t.uri, "country not in ('UK', 'US')")["partitions"]["read"] == [0, 1]
    assert carbon_ds.explain(t.uri, "country = 'Japan'")["partitions"]["read"] == [0]
    got = carbon_ds.read_table(t.uri, filter="country not in ('UK', 'US')")
    assert sorted(got["id"].to_pylist()) == sorted(
        i for i, c in zip(data["id"].to_pylist(), data["country"].to_pylist(), strict=True)
        if c is not None and c not in ("UK", "US"))


def test_hash_partitions_follow_java_hash(tmp_path):
    t = make(tmp_path, HashPartition("country", 5))
    assert t.show_partitions() == ["country = HASH_NUMBER(5)"]
    data = rows()
    want: dict[int, list[int]] = {}
    for i, c in zip(data["id"].to_pylist(), data["country"].to_pylist(), strict=True):
        want.setdefault(0 if c is None else (java_hash(c) & 0x7FFFFFFF) % 5, []).append(i)
    assert placed(t) == {k: sorted(v) for k, v in want.items()}
    uk = (java_hash("UK") & 0x7FFFFFFF) % 5
    assert carbon_ds.explain(t.uri, "country = 'UK'")["partitions"]["read"] == [uk]
    assert CarbonTable.open(t.uri).count("country = 'UK'") == sum(c == "UK" for c in data["country"].to_pylist())


def test_int_hash_is_value_modulo(tmp_path):
    t = make(tmp_path, HashPartition("id", 4))
    assert placed(t) == {k: [i for i in range(300) if i % 4 == k] for k in range(4)}


def test_range_info_checked_and_date_bounds(tmp_path):
    with pytest.raises(CarbonOptionError, match="ascending"):
        CarbonTable.create(tmp_path / "bad", SCHEMA, partition=RangePartition("age", [20, 10]))
    with pytest.raises(CarbonOptionError, match="not a valid"):
        CarbonTable.create(tmp_path / "bad2", SCHEMA, partition=RangePartition("age", ["x"]))
    s = pa.schema([("id", pa.int32()), ("logdate", pa.timestamp("us"))])
    spec = spec_from_properties("logdate", {"PARTITION_TYPE": "RANGE", "RANGE_INFO": "2014/01/01, 2015/01/01"})
    t = CarbonTable.create(tmp_path / "d", s, partition=spec, properties={"timestampformat": "yyyy/MM/dd"})
    assert t.show_partitions() == ["0, logdate = DEFAULT", "1, logdate < 2014/01/01",
                                   "2, 2014/01/01 <= logdate < 2015/01/01"]
    data = pa.table({"id": pa.array([1, 2, 3], pa.int32()),
                     "logdate": pa.array([dt.datetime(2013, 5, 1), dt.datetime(2014, 5, 1), dt.datetime(2016, 1, 1)],
                                         pa.timestamp("us"))})
    with t.load() as load:
        load.write([data])
    assert placed(CarbonTable.open(t.uri)) == {1: [1], 2: [2], 0: [3]}


def oracle_ids(data: pa.Table) -> list[int]:
    return sorted(data["id"].to_pylist())


def test_add_split_drop_range(tmp_path):
    t = make(tmp_path, RangePartition("age", [10, 20, 30]))
    data = rows()
    new = t.add_partition(["50"])
    assert new == [4]
    t = CarbonTable.open(t.uri)
    assert t.show_partitions() == ["0, age = DEFAULT", "1, age < 10", "2, 10 <= age < 20", "3, 20 <= age < 30",
                                   "4, 30 <= age < 50"]
    p = placed(t)
    assert p[4] == sorted(i for i, a in zip(data["id"].to_pylist(), data["age"].to_pylist(), strict=True)
                          if a is not None and 30 <= a < 50)
    assert oracle_ids(t.to_arrow()) == oracle_ids(data)
    assert t.split_partition(2, ["15", "20"]) == [5, 6]
    t = CarbonTable.open(t.uri)
    assert t.show_partitions()[2:4] == ["5, 10 <= age < 15", "6, 15 <= age < 20"]
    assert carbon_ds.explain(t.uri, "age = 12")["partitions"]["read"] == [5]
    assert oracle_ids(t.to_arrow()) == oracle_ids(data)
    t.drop_partition(5)  # rows merge into the next range
    t = CarbonTable.open(t.uri)
    assert t.show_partitions()[2] == "6, 10 <= age < 20"
    assert placed(t)[6] == sorted(i for i, a in zip(data["id"].to_pylist(), data["age"].to_pylist(), strict=True)
                                  if a is not None and 10 <= a < 20)
    assert oracle_ids(t.to_arrow()) == oracle_ids(data)
    t.drop_partition(4, with_data=True)
    kept = data.filter(pc.invert(pc.and_kleene(pc.greater_equal(data["age"], 30), pc.less(data["age"], 50))
                                 .fill_null(False)))
    assert oracle_ids(CarbonTable.open(t.uri).to_arrow()) == oracle_ids(kept)
    with pytest.raises(CarbonOptionError, match="Cannot drop default partition"):
        t.drop_partition(0)
    with pytest.raises(CarbonOptionError, match="Cannot split default partition"):
        t.split_partition(0, ["1"])
    with pytest.raises(CarbonOptionError, match="Invalid Partition Id 42"):
        t.drop_partition(42)


def test_add_split_drop_list(tmp_path):
    t = make(tmp_path, ListPartition("country", ["China", ("UK", "US")]))
    data = rows()
    assert t.add_partition(["France"]) == [3]
    t = CarbonTable.open(t.uri)
    assert placed(t)[3] == [i for i, c in enumerate(data["country"].to_pylist()) if c == "France"]
    assert t.split_partition(2, ["UK", "US"]) == [4, 5]
    t = CarbonTable.open(t.uri)
    assert t.show_partitions() == ["0, country = DEFAULT", "1, country = China", "4, country = UK",
                                   "5, country = US", "3, country = France"]
    t.drop_partition(1)  # China's rows go to DEFAULT
    t = CarbonTable.open(t.uri)
    assert 1 not in placed(t)
    assert oracle_ids(t.to_arrow()) == oracle_ids(data)
    assert CarbonTable.open(t.uri).count("country = 'China'") == data["country"].to_pylist().count("China")


@pytest.mark.parametrize("point", ["partition.schema_written", "partition.rewritten", "partition.committed"])
@pytest.mark.parametrize("op", ["add", "split", "drop"])
def test_crash_at_every_step_keeps_every_row_once(tmp_path, point, op):
    t = make(tmp_path, RangePartition("age", [10, 20, 30]))
    before = oracle_ids(t.to_arrow())

    def hook(name):
        if name == point:
            raise RuntimeError("crash")

    with faults.inject(hook):
        try:
            {"add": lambda: t.add_partition(["50"]), "split": lambda: t.split_partition(2, ["15", "20"]),
             "drop": lambda: t.drop_partition(2)}[op]()
        except RuntimeError:
            pass
    after = CarbonTable.open(t.uri)
    assert oracle_ids(after.to_arrow()) == before
    full = after.to_arrow()
    got = carbon_ds.read_table(t.uri, filter="age >= 10 and age < 20")
    want = full.filter(pc.and_(pc.greater_equal(full["age"], 10), pc.less(full["age"], 20)))
    assert oracle_ids(got) == oracle_ids(want)


def test_delete_and_update_keep_partition_placement(tmp_path):
    t = make(tmp_path, RangePartition("age", [10, 20, 30]))
    data = rows()
    assert t.delete("age = 15") == sum(a == 15 for a in data["age"].to_pylist())
    t.update({"age": 25}, "id = 1")  # age 1 -> 25: the row moves to partition 3
    t = CarbonTable.open(t.uri)
    assert 1 in placed(t)[3]
    got = carbon_ds.read_table(t.uri, filter="age >= 20 and age < 30")
    want = [i for i, a in zip(data["id"].to_pylist(), data["age"].to_pylist(), strict=True)
            if a is not None and 20 <= a < 30] + [1]
    assert oracle_ids(got) == sorted(want)
    assert t.count() == data.num_rows - sum(a == 15 for a in data["age"].to_pylist())


def test_parse_carbon_partition_statements():
    assert parse("ALTER TABLE t ADD PARTITION('new')") == AlterCarbonPartition(
        parse("ALTER TABLE t ADD PARTITION('new')").table, "add", None, ["new"])
    s = parse("alter table db.t split partition(3) into ('a', '(b, c)')")
    assert (s.action, s.partition_id, s.values, str(s.table)) == ("split", 3, ["a", "(b, c)"], "db.t")
    d = parse("ALTER TABLE t DROP PARTITION(2) WITH DATA")
    assert (d.action, d.partition_id, d.with_data) == ("drop", 2, True)
    assert isinstance(parse("ALTER TABLE t DROP PARTITION (day = 1)"), AlterPartition)
    with pytest.raises(CarbonOptionError, match="SPLIT PARTITION"):
        parse("ALTER TABLE t SPLIT PARTITION(x)")


def test_compaction_keeps_rows_in_their_range_partitions(tmp_path):
    path = str(tmp_path / "rc")
    schema = pa.schema([("id", pa.int64()), ("age", pa.int32())])
    CarbonTable.create(path, schema, partition=RangePartition("age", [10, 20, 30]))
    for i in range(4):
        carbon_ds.write_table(pa.table({"id": list(range(i * 10, i * 10 + 10)), "age": [j * 4 for j in range(10)]},
                                       schema=schema), path)
    before = carbon_ds.read_table(path).sort_by("id")
    assert [m.segment for m in CarbonTable.open(path).compact(kind="minor")] == ["0.1"]
    assert carbon_ds.read_table(path).sort_by("id").equals(before)
    got = carbon_ds.read_table(path, filter="age >= 20 AND age < 30").sort_by("id")
    oracle = before.filter(pc.and_(pc.greater_equal(before["age"], 20), pc.less(before["age"], 30)))
    assert got.equals(oracle) and got.num_rows == 12
    report = carbon_ds.explain(path, "age >= 20 AND age < 30")
    assert report["files"] == {"total": 4, "read": 1, "skipped": 3}  # merged: still one file per partition id


def test_hash_keys_are_the_java_objects_carbondata_loads(tmp_path):
    """Decimals hash as java.math.BigDecimal at the column's scale, booleans as their text, timestamps as
    epoch milliseconds of whole seconds (the default timestamp format)."""
    def big_decimal_hash(d: decimal.Decimal, scale: int) -> int:  # 31 * BigInteger hash + scale
        unscaled = int(d.scaleb(scale, context=decimal.Context(prec=60)))
        h, m, words = 0, abs(unscaled), []
        while m:
            words.append(m & 0xFFFFFFFF)
            m >>= 32
        for w in reversed(words):
            h = (31 * h + w) % (1 << 32)
        return (31 * (h if unscaled >= 0 else -h) + scale) % (1 << 32)

    def long_hash(v: int) -> int:
        u = v % (1 << 64)
        return (u ^ (u >> 32)) % (1 << 32)

    amounts = [decimal.Decimal(s) for s in ("1.50", "-1.50", "0.00", "123456789012345678901234567.89",
                                            "-99999999999999999999999999999999999.99", "42949672.96")]
    stamps = [dt.datetime(2021, 11, 15, 8, 30, 1, 999000), dt.datetime(1969, 12, 31, 23, 59, 59, 500000)]
    data = pa.table({
        "id": pa.array(range(8), pa.int32()),
        "amount": pa.array(amounts + [None, decimal.Decimal("7.25")], pa.decimal128(38, 2)),
        "flag": pa.array([True, False, None, True, False, True, True, False]),
        "ts": pa.array(stamps * 4, pa.timestamp("ms")),
    })
    checks = {
        "amount": lambda v: 0 if v is None else (big_decimal_hash(v, 2) & 0x7FFFFFFF) % 7,
        "flag": lambda v: 0 if v is None else (java_hash("true" if v else "false") & 0x7FFFFFFF) % 7,
        "ts": lambda v: (long_hash(math.floor((v - dt.datetime(1970, 1, 1)).total_seconds()) * 1000)
                         & 0x7FFFFFFF) % 7,
    }
    for column, oracle in checks.items():
        t = CarbonTable.create(tmp_path / column, data.schema, partition=HashPartition(column, 7))
        with t.load() as load:
            load.write([data])
        want: dict[int, list[int]] = {}
        for i, v in zip(data["id"].to_pylist(), data[column].to_pylist(), strict=True):
            want.setdefault(oracle(v), []).append(i)
        assert placed(CarbonTable.open(t.uri)) == {k: sorted(v) for k, v in want.items()}, column
