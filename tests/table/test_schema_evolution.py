"""Schema evolution: add / drop / rename / widen interleaved with loads, deletes and updates, each step
checked against a pyarrow oracle table kept alongside, and the schema file's evolution entries."""

from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import carbon_ds
from carbon_ds import faults
from carbon_ds.errors import CarbonError, CarbonSchemaError
from carbon_ds.table.meta.schema import schema_file
from carbon_ds.table.table import CarbonTable

BASE = pa.schema([("id", pa.int32()), ("name", pa.string()), ("amt", pa.decimal128(5, 2))])


def _rows(ids, names, amts):
    return pa.table({"id": pa.array(ids, pa.int32()), "name": names,
                     "amt": pa.array([None if a is None else Decimal(a) for a in amts], pa.decimal128(5, 2))})


def _load(t, data):
    with t.load() as load:
        load.write(data.to_batches())


def _check(t, oracle: pa.Table):
    """The table (fresh open, full read and a read through the pruned path) equals the oracle."""
    fresh = CarbonTable.open(t.uri)
    assert fresh.schema.names == oracle.schema.names
    assert fresh.schema.equals(oracle.schema)
    key = oracle.schema.names[0]
    got = fresh.to_arrow().sort_by(key)
    assert got.equals(oracle.sort_by(key)), (got.to_pydict(), oracle.to_pydict())
    via_scan = carbon_ds.read_table(t.uri).sort_by(key)
    assert via_scan.equals(oracle.sort_by(key))
    assert fresh.count() == oracle.num_rows


def _history(t):
    info = schema_file.read(t.storage, t.schema_path)
    return [([c.column_name for c in e.added or []], [c.column_name for c in e.removed or []])
            for e in info.fact_table.schema_evolution.schema_evolution_history]


def _ids(t):
    return {c.column_name: c.column_id for c in CarbonTable.open(t.uri).columns}


def test_sequence_against_oracle(tmp_path):
    t = CarbonTable.create(tmp_path / "t", BASE, sort_columns=["name"])
    _load(t, _rows([1, 2, 3], ["a", "b", "c"], ["1.50", None, "3.25"]))
    oracle = _rows([1, 2, 3], ["a", "b", "c"], ["1.50", None, "3.25"])
    ids0 = _ids(t)
    _check(t, oracle)

    # add with a default: old rows read the default
    with t.update_schema() as u:
        u.add_column("qty", pa.int64(), default=7)
    oracle = oracle.append_column("qty", pa.array([7, 7, 7], pa.int64()))
    _check(t, oracle)
    assert _history(t)[-1] == (["qty"], [])

    # a load in the new shape, then a delete
    new = pa.table({"id": pa.array([4, 5], pa.int32()), "name": ["d", "e"],
                    "amt": pa.array([Decimal("4.00"), Decimal("5.55")], pa.decimal128(5, 2)),
                    "qty": pa.array([None, 9], pa.int64())})
    _load(t, new)
    oracle = pa.concat_tables([oracle, new])
    _check(t, oracle)
    assert t.delete("id = 2") == 1
    oracle = oracle.filter(pc.not_equal(oracle["id"], 2))
    _check(t, oracle)

    # rename + widen in one commit: data stays, one evolution entry, ids kept
    with t.update_schema() as u:
        u.rename_column("id", "ident").widen_column("ident", pa.int64()).widen_column("amt", "decimal(9,3)")
    oracle = pa.table({"ident": oracle["id"].cast(pa.int64()), "name": oracle["name"],
                       "amt": oracle["amt"].cast(pa.decimal128(9, 3)), "qty": oracle["qty"]})
    _check(t, oracle)
    assert _history(t)[-1] == (["ident", "amt"], ["id", "amt"])
    assert _ids(t)["ident"] == ids0["id"] and _ids(t)["amt"] == ids0["amt"]

    # filters over renamed / widened / defaulted columns prune and match correctly in old files
    for flt, mask in (("ident >= 3", pc.greater_equal(oracle["ident"], 3)),
                      ("qty = 7", pc.equal(oracle["qty"], 7)),
                      ("amt > 3", pc.greater(oracle["amt"], Decimal("3")))):
        got = carbon_ds.read_table(t.uri, filter=flt).sort_by("ident")
        assert got.equals(oracle.filter(mask).sort_by("ident")), flt
        assert t.count(flt) == oracle.filter(mask).num_rows

    # update rewrites rows through the current schema
    assert t.update({"qty": 100}, "ident = 1") == 1
    oracle = oracle.set_column(3, "qty", pc.if_else(pc.equal(oracle["ident"], 1), 100, oracle["qty"]))
    _check(t, oracle)

    # drop, then re-add the same name: a new column (new id), old data not resurrected
    with t.update_schema() as u:
        u.drop_column("qty")
    oracle = oracle.drop_columns(["qty"])
    _check(t, oracle)
    with t.update_schema() as u:
        u.add_column("qty", "string")
    oracle = oracle.append_column("qty", pa.nulls(oracle.num_rows, pa.string()))
    _check(t, oracle)
    assert carbon_ds.read_table(t.uri, filter="qty = '7'").num_rows == 0
    assert _history(t)[-2:] == [([], ["qty"]), (["qty"], [])]
    assert len(_history(t)) == 5  # creation + four changes
    physical = [c.column_name for c in schema_file.read(t.storage, t.schema_path).fact_table.table_columns]
    assert physical.count("qty") == 2  # the dropped one kept invisible, as CarbonData does


def test_refusals(tmp_path):
    t = CarbonTable.create(tmp_path / "t", pa.schema([("k", pa.string()), ("v", pa.int32()), ("d", pa.float64()),
                                                      ("p", pa.int32())]), sort_columns=["k"], partition_by=["p"])
    before = t.storage.read_bytes(t.schema_path)
    cases = [
        (lambda u: u.drop_column("k"), "sort column"),
        (lambda u: u.drop_column("p"), "partition columns cannot"),
        (lambda u: u.rename_column("p", "q"), "partition column"),
        (lambda u: u.widen_column("d", pa.float32()), "only INT to BIGINT"),
        (lambda u: u.widen_column("v", pa.int16()), "only INT to BIGINT"),
        (lambda u: u.add_column("V", pa.int64()), "exists"),
        (lambda u: u.rename_column("v", "d"), "exists"),
        (lambda u: u.drop_column("nope"), "does not exist"),
    ]
    for change, text in cases:
        with pytest.raises(CarbonSchemaError, match=text):
            change(t.update_schema()).commit()
    with pytest.raises(CarbonSchemaError, match="not a valid int32"):
        t.update_schema().add_column("z", pa.int32(), default="abc")
    t2 = CarbonTable.create(tmp_path / "d", pa.schema([("x", pa.decimal128(6, 2))]))
    with pytest.raises(CarbonSchemaError, match="smaller"):
        t2.update_schema().widen_column("x", pa.decimal128(5, 2)).commit()
    with pytest.raises(CarbonSchemaError, match="integer digits"):
        t2.update_schema().widen_column("x", pa.decimal128(7, 4)).commit()
    assert t.storage.read_bytes(t.schema_path) == before  # nothing written by a refused change


def test_crash_leaves_old_or_new_schema(tmp_path):
    t = CarbonTable.create(tmp_path / "t", BASE)
    _load(t, _rows([1], ["a"], ["1.00"]))

    def crash(name):
        if name == "schema.before_write":
            raise RuntimeError("crash")

    with faults.inject(crash), pytest.raises(RuntimeError):
        t.update_schema().add_column("x", pa.int64()).commit()
    assert CarbonTable.open(t.uri).schema.equals(BASE)
    assert carbon_ds.read_table(t.uri).num_rows == 1


def test_write_table_schema_mode_merge(tmp_path):
    path = tmp_path / "m"
    first = pa.table({"a": pa.array([1, 2], pa.int64())})
    carbon_ds.write_table(first, path)
    second = pa.table({"a": pa.array([3], pa.int64()), "b": ["x"]})
    with pytest.raises(CarbonError, match="not in the table"):
        carbon_ds.write_table(second, path)
    carbon_ds.write_table(second, path, schema_mode="merge")
    got = carbon_ds.read_table(path).sort_by("a")
    assert got.to_pydict() == {"a": [1, 2, 3], "b": [None, None, "x"]}
    assert _history(CarbonTable.open(path))[-1] == (["b"], [])


def test_properties(tmp_path):
    t = CarbonTable.create(tmp_path / "t", BASE, sort_columns=["name"])
    t.set_properties({"table_blocksize": "64", "comment": "hello"})
    assert CarbonTable.open(t.uri).properties["table_blocksize"] == "64"
    t.unset_properties(["comment"])
    assert "comment" not in CarbonTable.open(t.uri).properties
    with pytest.raises(CarbonError, match="sort_columns.*cannot be changed"):
        t.set_properties({"sort_columns": "id"})
    with pytest.raises(CarbonError, match="cannot be changed after creation"):
        t.set_properties({"bogus": "1"})


def test_old_statistics_follow_column_ids(tmp_path):
    """Rename id -> ident, then add a new 'id' with a default: the old files' min/max of the old 'id'
    (1..3) must not prune the new 'id' (default 100) away."""
    t = CarbonTable.create(tmp_path / "t", BASE)
    _load(t, _rows([1, 2, 3], ["a", "b", "c"], ["1.00", "2.00", "3.00"]))
    with t.update_schema() as u:
        u.rename_column("id", "ident").add_column("id", pa.int32(), default=100)
    assert carbon_ds.read_table(t.uri, filter="id = 100").column("ident").to_pylist() == [1, 2, 3]
    assert t.count("id = 100") == 3 and t.count("id = 1") == 0
    assert carbon_ds.read_table(t.uri, filter="ident = 2").column("id").to_pylist() == [100]
    report = carbon_ds.explain(t.uri, filter="id = 5")
    assert report["files"]["read"] == 0  # pruned by the default value, no page opened


def test_external_segment_maps_by_name(tmp_path):
    import pyarrow.parquet as pq

    t = CarbonTable.create(tmp_path / "t", pa.schema([("id", pa.int32()), ("name", pa.string())]))
    (tmp_path / "pq").mkdir()
    pq.write_table(pa.table({"id": pa.array([10, 11], pa.int32()), "name": ["x", "y"]}), tmp_path / "pq" / "a.parquet")
    t.add_segment(str(tmp_path / "pq"), format="parquet")
    _load(t, pa.table({"id": pa.array([1], pa.int32()), "name": ["a"]}))
    with t.update_schema() as u:
        u.add_column("q", pa.int64(), default=5).widen_column("id", pa.int64()).rename_column("name", "nm")
    oracle = pa.table({"id": pa.array([1, 10, 11], pa.int64()), "nm": ["a", "x", "y"], "q": pa.array([5, 5, 5])})
    _check(t, oracle)
    assert carbon_ds.read_table(t.uri, filter="q = 5 AND nm = 'y'").column("id").to_pylist() == [11]
    with pytest.raises(CarbonError, match="missing column"):  # ADD SEGMENT checks the current schema
        (tmp_path / "pq2").mkdir()
        pq.write_table(pa.table({"id": [20], "nm": ["z"]}), tmp_path / "pq2" / "a.parquet")
        t.add_segment(str(tmp_path / "pq2"), format="parquet")


def test_complex_and_date_columns(tmp_path):
    st = pa.struct([("a", pa.int32()), ("b", pa.string())])
    t = CarbonTable.create(tmp_path / "t", pa.schema([("id", pa.int32())]))
    _load(t, pa.table({"id": pa.array([1, 2], pa.int32())}))
    with t.update_schema() as u:
        u.add_column("s", st).add_column("l", "array<string>").add_column("dt", "date", default="2024-01-02")
    new = pa.table({"id": pa.array([3], pa.int32()), "s": pa.array([{"a": 1, "b": "x"}], st),
                    "l": pa.array([["q"]], pa.list_(pa.string())), "dt": pa.array([None], pa.date32())})
    _load(t, new)
    import datetime as dt

    oracle = pa.table({"id": pa.array([1, 2, 3], pa.int32()), "s": pa.array([None, None, {"a": 1, "b": "x"}], st),
                       "l": pa.array([None, None, ["q"]], pa.list_(pa.string())),
                       "dt": pa.array([dt.date(2024, 1, 2)] * 2 + [None], pa.date32())})
    _check(t, oracle)
    assert carbon_ds.read_table(t.uri, filter="dt = DATE '2024-01-02'").column("id").to_pylist() == [1, 2]
    with t.update_schema() as u:
        u.rename_column("s", "s2").drop_column("l")
    _check(t, oracle.rename_columns(["id", "s2", "l", "dt"]).drop_columns(["l"]))


def test_evolved_table_compacts_to_the_same_rows(tmp_path):
    path = str(tmp_path / "evc")
    schema = pa.schema([("id", pa.int64()), ("v", pa.int32())])
    for i in range(2):
        carbon_ds.write_table(pa.table({"id": [i * 2, i * 2 + 1], "v": [1, 2]}, schema=schema), path)
    with CarbonTable.open(path).update_schema() as u:
        u.add_column("w", pa.string(), default="x")
        u.rename_column("v", "vv")
        u.widen_column("vv", pa.int64())
    carbon_ds.write_table(pa.table({"id": [4, 5], "vv": [3, 4], "w": ["a", None]}, schema=CarbonTable.open(path).schema), path)
    before = carbon_ds.read_table(path).sort_by("id")
    assert before.column("w").to_pylist() == ["x", "x", "x", "x", "a", None]
    merged = CarbonTable.open(path).compact(kind="custom", segments=["0", "1", "2"])
    assert [m.segment for m in merged] == ["0.1"]
    assert carbon_ds.read_table(path).sort_by("id").equals(before)
