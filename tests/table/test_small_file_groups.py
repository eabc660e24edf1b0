"""A whole-table read of many small segments decodes consecutive small files together (planned_reads.small_groups,
readers.carbon_file.read_files): the rows must be exactly those of the files read one by one, against a
pyarrow oracle kept beside the table and DuckDB over it, through deletes, a column added between loads
(files of two column lists) and a projection."""

import random
from datetime import datetime, timedelta
from decimal import Decimal

import duckdb
import pyarrow as pa
import pytest

import carbon_ds
from carbon_ds.table.read import planned_reads, task_reader
from carbon_ds.table.table import CarbonTable

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amt", pa.decimal128(10, 2)),
                    ("ts", pa.timestamp("us", tz="UTC")), ("flag", pa.bool_()), ("score", pa.float64())])


def _segment(rng: random.Random, start: int, n: int, pool: list[str], qty: bool = False) -> pa.Table:
    ids = list(range(start, start + n))
    cols = {
        "id": pa.array(ids, pa.int64()),
        # each segment draws from its own slice of names, so every file's local dictionary differs
        "name": pa.array([None if rng.random() < 0.1 else rng.choice(pool) for _ in ids], pa.string()),
        "amt": pa.array([None if rng.random() < 0.1 else Decimal(rng.randint(-99999, 99999)) / 100 for _ in ids],
                        pa.decimal128(10, 2)),
        "ts": pa.array([datetime(2026, 1, 1) + timedelta(seconds=rng.randint(0, 10**7)) for _ in ids],
                       pa.timestamp("us", tz="UTC")),
        "flag": pa.array([rng.random() < 0.5 for _ in ids], pa.bool_()),
        "score": pa.array([None if rng.random() < 0.2 else rng.uniform(-1e6, 1e6) for _ in ids], pa.float64()),
    }
    if qty:
        cols["qty"] = pa.array([None if rng.random() < 0.3 else rng.randint(0, 50) for _ in ids], pa.int64())
    return pa.table(cols)


@pytest.fixture
def grouped(monkeypatch):
    """The sizes of the file runs read together during the test."""
    sizes: list[int] = []
    real = task_reader.read_files

    def counting(files, columns=None):
        sizes.append(len(files))
        return real(files, columns)

    monkeypatch.setattr(task_reader, "read_files", counting)
    return sizes


def _by_one(path, columns=None) -> pa.Table:
    """The same read file by file, blocklet by blocklet (the scan's unthreaded path, no groups)."""
    return carbon_ds.scan(path, columns=columns, use_threads=False).to_arrow()


def test_many_small_segments_read_exactly(tmp_path, grouped):
    rng = random.Random(48)
    path = str(tmp_path / "t")
    CarbonTable.create(path, SCHEMA)
    oracle = []
    start = 0
    for s in range(40):
        pool = [f"v{s}-{k}" for k in range(rng.randint(1, 30))]
        data = _segment(rng, start, rng.randint(1, 60), pool)
        carbon_ds.write_table(data, path)
        oracle.append(data)
        start += data.num_rows
    t = CarbonTable.open(path)
    # deletes inside some segments, and every row of the last ones
    last = start - 25
    assert t.delete(f"id >= 100 AND id < 130 OR id = 7 OR id >= {last}") > 0
    with t.update_schema() as u:
        u.add_column("qty", pa.int64(), default=7)
    oracle = [o.append_column("qty", pa.array([7] * o.num_rows, pa.int64())) for o in oracle]
    for s in range(15):
        data = _segment(rng, start, rng.randint(1, 60), [f"w{s}-{k}" for k in range(5)], qty=True)
        carbon_ds.write_table(data, path)
        oracle.append(data)
        start += data.num_rows
    assert CarbonTable.open(path).delete("id % 11 = 5 AND qty IS NOT NULL") > 0
    whole = pa.concat_tables(oracle)
    ids = whole["id"].to_numpy()
    gone = ((ids >= 100) & (ids < 130)) | (ids == 7) | ((ids >= last) & (ids < last + 25))
    gone |= (ids % 11 == 5) & whole["qty"].is_valid().to_numpy(zero_copy_only=False)
    expected = whole.filter(pa.array(~gone))

    got = carbon_ds.read_table(path)
    assert max(grouped) > 10  # small files were read together
    assert got.schema.equals(expected.schema)
    assert got.sort_by("id").equals(expected.sort_by("id"))
    assert got.equals(_by_one(path))  # same rows in the same order as file by file

    proj = carbon_ds.read_table(path, columns=["qty", "name"])
    assert proj.equals(_by_one(path, ["qty", "name"]))
    assert proj.equals(got.select(["qty", "name"]))

    con = duckdb.connect()
    con.register("oracle", expected)
    want = con.execute("SELECT count(*), count(name), count(DISTINCT name), sum(amt), sum(qty), "
                       "sum(CASE WHEN flag THEN 1 ELSE 0 END), min(epoch_us(ts)), max(epoch_us(ts)) FROM oracle").fetchall()[0]
    con.register("got", got)
    have = con.execute("SELECT count(*), count(name), count(DISTINCT name), sum(amt), sum(qty), "
                       "sum(CASE WHEN flag THEN 1 ELSE 0 END), min(epoch_us(ts)), max(epoch_us(ts)) FROM got").fetchall()[0]
    assert have == want


def test_groups_keep_order_and_bounds():
    """Runs of small files in order, cut at the value bound and the file cap; large or external pieces alone."""
    from carbon_ds.table.read.pruning import IndexClaim, Piece

    def piece(i, rows, external=False, size=None):
        claim = IndexClaim("idx", (rows,), (None,), file_size=size)
        return Piece(f"f{i}", None, str(i), None, object() if external else None, claim)  # type: ignore[arg-type]

    small = [piece(i, 100) for i in range(300)]
    groups = planned_reads.small_groups(small, 3)
    assert [p for g in groups for p in g] == small
    assert [len(g) for g in groups] == [planned_reads.GROUP_FILES, planned_reads.GROUP_FILES, 300 - 2 * planned_reads.GROUP_FILES]
    big = piece(900, planned_reads.PARALLEL_MIN_VALUES)
    ext = piece(901, 10, external=True)
    mixed = small[:3] + [big] + small[3:5] + [ext] + small[5:6]
    assert planned_reads.small_groups(mixed, 1) == [small[:3], [big], small[3:5], [ext], small[5:6]]
    wide = [piece(i, 40_000) for i in range(5)]  # 120,000 values each at 3 columns: two fit under the bound
    assert [len(g) for g in planned_reads.small_groups(wide, 3)] == [2, 2, 1]
    heavy = [piece(i, 10, size=planned_reads.GROUP_BYTES // 3) for i in range(7)]  # few rows, many bytes
    assert [len(g) for g in planned_reads.small_groups(heavy, 3)] == [3, 3, 1]
