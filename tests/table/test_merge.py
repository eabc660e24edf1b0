"""MERGE / upsert with Arrow rows (carbon_ds.table.ops.dml.arrow_merge), against DuckDB's own MERGE INTO on copies."""

from __future__ import annotations

import json
import random
import zlib

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import carbon_ds
from carbon_ds import faults
from carbon_ds.errors import CarbonError, CarbonOptionError, CarbonTableError
from carbon_ds.expressions.values import SqlExpr
from carbon_ds.table.table import CarbonTable, RangePartition

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string()), ("p", pa.int32())])
COLS = "id, v, s, p"


def _rows(ids, rng: random.Random) -> pa.Table:
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "v": pa.array([rng.randrange(100) for _ in ids], pa.int64()),
        "s": pa.array([rng.choice(["a", "b", "c", None]) for _ in ids], pa.string()),
        "p": pa.array([rng.randrange(3) for _ in ids], pa.int32()),
    }, schema=SCHEMA)


def _sorted(t: pa.Table) -> list[tuple]:
    rows = zip(*[t.column(n).to_pylist() for n in SCHEMA.names], strict=True)
    return sorted(rows, key=lambda r: tuple((x is None, x) for x in r))


def _make(tmp_path, layout: str, rng: random.Random) -> tuple[CarbonTable, pa.Table]:
    path = tmp_path / f"t_{layout}"
    kwargs = {"plain": {}, "hive": {"partition_by": ["p"]},
              "range": {"partition": RangePartition("v", [20, 50, 80])}}[layout]
    t = CarbonTable.create(path, SCHEMA, **kwargs)
    first = _rows(list(range(0, 120)) + [None, None], rng)
    second = _rows(list(range(120, 200)) + [None], rng)
    for part in (first, second):
        with t.load() as load:
            load.write([part])
    return CarbonTable.open(path), pa.concat_tables([first, second])


def _source(rng: random.Random) -> pa.Table:
    return _rows(list(range(150, 260, 2)) + list(range(5, 40, 3)) + [None, None], rng)


# (name, build clauses on a merger, DuckDB's WHEN clauses of the same merge)
SET_ALL = "id = source.id, v = source.v, s = source.s, p = source.p"
INSERT_ALL = "INSERT VALUES (source.id, source.v, source.s, source.p)"
CASES = [
    ("upsert", lambda m: m.when_matched_update_all().when_not_matched_insert_all(),
     f"WHEN MATCHED THEN UPDATE SET {SET_ALL} WHEN NOT MATCHED THEN {INSERT_ALL}"),
    ("update_expr_cond", lambda m: m.when_matched_update({"v": SqlExpr("source.v + target.v")}, "source.v > 50"),
     "WHEN MATCHED AND source.v > 50 THEN UPDATE SET v = source.v + target.v"),
    ("delete_update_insert",
     lambda m: m.when_matched_delete("source.s = 'a'").when_matched_update_all()
     .when_not_matched_insert_all("source.v < 30"),
     f"WHEN MATCHED AND source.s = 'a' THEN DELETE WHEN MATCHED THEN UPDATE SET {SET_ALL} "
     f"WHEN NOT MATCHED AND source.v < 30 THEN {INSERT_ALL}"),
    ("delete_only", lambda m: m.when_matched_delete(),
     "WHEN MATCHED THEN DELETE"),
    ("insert_values", lambda m: m.when_not_matched_insert({"id": SqlExpr("id"), "v": 0, "s": "new"}),
     "WHEN NOT MATCHED THEN INSERT (id, v, s, p) VALUES (source.id, 0, 'new', NULL)"),
    ("column_compare", lambda m: m.when_matched_update({"s": "up"}, pc.field("source.v") > pc.field("target.v"))
     .when_matched_delete(pc.field("target.s").is_null()),
     "WHEN MATCHED AND source.v > target.v THEN UPDATE SET s = 'up' "
     "WHEN MATCHED AND target.s IS NULL THEN DELETE"),
]


@pytest.mark.parametrize("layout", ["plain", "hive", "range"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_merge_matches_duckdb(tmp_path, layout, case):
    name, build, when = case
    rng = random.Random(zlib.crc32(f"{layout}:{name}".encode()))
    t, before = _make(tmp_path, layout, rng)
    src = _source(rng)
    metrics = build(t.merge(src, on="id")).execute()

    con = duckdb.connect()
    con.sql("CREATE TABLE target (id BIGINT, v BIGINT, s VARCHAR, p INTEGER)")
    con.register("b", before)
    con.register("source", src)
    con.sql(f"INSERT INTO target SELECT {COLS} FROM b")
    con.sql(f"MERGE INTO target USING source ON target.id = source.id {when}")
    want = con.sql(f"SELECT {COLS} FROM target").to_arrow_table()
    got = carbon_ds.read_table(t.uri)
    assert _sorted(got) == _sorted(want)
    # only changed rows are written: the new segment holds the updated and inserted rows
    assert metrics.rows_copied == 0
    assert got.num_rows == before.num_rows - metrics.rows_deleted - metrics.rows_updated + metrics.rows_written
    assert metrics.rows_matched <= src.num_rows


def test_null_keys_never_match_and_partitions_placed(tmp_path):
    rng = random.Random(3)
    t, before = _make(tmp_path, "hive", rng)
    src = pa.table({"id": pa.array([None, 5], pa.int64()), "v": pa.array([1, 2], pa.int64()),
                    "s": pa.array(["n", "m"]), "p": pa.array([7, 7], pa.int32())}, schema=SCHEMA)
    m = t.merge(src, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
    assert (m.rows_updated, m.rows_inserted, m.rows_deleted) == (1, 1, 0)
    got = carbon_ds.read_table(t.uri)
    assert pc.sum(pc.is_null(got["id"])).as_py() == 4  # three untouched + one inserted
    # both new rows landed in the p=7 partition folder
    files = [f.path for f in CarbonTable.open(t.uri).files() if "p=7" in f.path]
    assert files and carbon_ds.read_table(t.uri, filter="p = 7").num_rows == 2


def test_duplicate_match_is_an_error_naming_the_key(tmp_path):
    t, before = _make(tmp_path, "plain", random.Random(1))
    status = open(t.tablestatus_path).read()
    src = pa.table({"id": pa.array([7, 7, 9], pa.int64()), "v": pa.array([1, 2, 3], pa.int64())})
    with pytest.raises(CarbonTableError, match="id=7 is matched by 2 source rows"):
        t.merge(src, on="id").when_matched_update({"v": SqlExpr("source.v")}).execute()
    assert open(t.tablestatus_path).read() == status
    # a clause that does not act on the duplicates is no error; insert-only merges never check
    t.merge(src, on="id").when_matched_update({"v": 0}, "source.v > 2").execute()
    m = t.merge(src, on="id").when_not_matched_insert_all().execute()
    assert m.rows_inserted == 0


@pytest.mark.parametrize("point", ["merge.joined", "dml.deltas_written", "dml.before_status", "load.before_status"])
def test_killed_merge_leaves_table_as_before(tmp_path, point):
    t, before = _make(tmp_path, "hive", random.Random(5))
    src = _source(random.Random(6))
    status = json.loads(open(t.tablestatus_path).read())

    def crash(name):
        if name == point:
            raise RuntimeError(f"killed at {name}")

    with faults.inject(crash), pytest.raises(RuntimeError, match="killed"):
        t.merge(src, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
    assert _sorted(carbon_ds.read_table(t.uri)) == _sorted(before)
    after = json.loads(open(t.tablestatus_path).read())
    assert ([e for e in after if e.get("segmentStatus") == "Success"] ==
        [e for e in status if e.get("segmentStatus") == "Success"])
    # the update lock was released: the same merge now succeeds
    t.merge(src, on="id").when_matched_update_all().when_not_matched_insert_all().execute()


def test_builder_errors(tmp_path):
    t, _ = _make(tmp_path, "plain", random.Random(2))
    src = pa.table({"id": pa.array([1], pa.int64()), "v": pa.array([1], pa.int64())})
    with pytest.raises(CarbonOptionError, match="after an unconditional one"):
        t.merge(src, on="id").when_matched_delete().when_matched_update_all()
    with pytest.raises(CarbonOptionError, match="UPDATE SET \\* needs source column 's'"):
        t.merge(src, on="id").when_matched_update_all().execute()
    with pytest.raises(CarbonOptionError, match="no WHEN clause"):
        t.merge(src, on="id").execute()
    with pytest.raises(CarbonError, match="nope"):
        t.merge(src, on="nope")


def test_pandas_source_and_key_type_cast(tmp_path):
    t, before = _make(tmp_path, "plain", random.Random(4))
    df = pa.table({"id": pa.array([1, 500], pa.int32()), "v": pa.array([-1, -2], pa.int64()),
                   "s": pa.array(["x", "y"]), "p": pa.array([0, 0], pa.int32())}).to_pandas()
    m = t.merge(df, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
    assert (m.rows_updated, m.rows_inserted) == (1, 1)
    got = carbon_ds.read_table(t.uri, filter="v < 0")
    assert sorted(got["id"].to_pylist()) == [1, 500]
