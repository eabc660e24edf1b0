"""Spark loads into HASH / RANGE / LIST tables repartition by partition id: each data file holds the rows
of one partition only, and each partition is written by one task (one file set, not one per input task)."""

from __future__ import annotations

import bisect
import decimal
import os
from collections import Counter

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema

import carbon_ds
from carbon_ds.fs import basename
from carbon_ds.spark.source import input_partitions
from carbon_ds.spark.source.datasource import CarbonDataSource
from carbon_ds.spark.source.input_partitions import OPEN_COST, PACK_BYTES, SPLIT_BYTES, pack_pieces
from carbon_ds.spark.statements import catalog
from carbon_ds.spark.writes.dataframe_write import key_column, spread_keys
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.partitions.id_spec import partition_id_of
from carbon_ds.table.read.pruning import Piece
from carbon_ds.table.table import CarbonTable, HashPartition, ListPartition, RangePartition

BOUNDS = [4, 8, 12, 16, 20]


def telemetry(n: int = 3000) -> pa.Table:
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "hour": pa.array([None if i % 101 == 0 else (i * 7) % 26 for i in range(n)], pa.int32()),
        "vin": pa.array([f"V{i % 13:03d}" for i in range(n)], pa.string()),
        "amount": pa.array([decimal.Decimal(i % 500 - 250) / 4 for i in range(n)], pa.decimal128(10, 2)),
    })


def range_id(hour):  # RANGE '4, 8, 12, 16, 20': 1 below 4, ..., 0 (DEFAULT) from 20 and for null
    return 0 if hour is None or hour >= BOUNDS[-1] else 1 + bisect.bisect_right(BOUNDS, hour)


def java_string_hash(s: str) -> int:  # String.hashCode, written out independently
    h = 0
    for ch in s:
        h = (h * 31 + ord(ch)) % (1 << 32)
    return h - (1 << 32) if h >= 1 << 31 else h


def big_decimal_hash(d: decimal.Decimal, scale: int) -> int:
    """java.math.BigDecimal.hashCode of ``d`` at ``scale``, from Python integers: 31 * BigInteger hash +
    scale; BigInteger's hash folds its magnitude's 32-bit words, most significant first, then the sign."""
    unscaled = int(d.scaleb(scale, context=decimal.Context(prec=60)))
    words, m = [], abs(unscaled)
    while m:
        words.append(m & 0xFFFFFFFF)
        m >>= 32
    h = 0
    for w in reversed(words):
        h = (31 * h + w) % (1 << 32)
    h = (h * (1 if unscaled >= 0 else -1)) % (1 << 32)
    return (31 * h + scale) % (1 << 32)  # only the low 31 bits matter below


def files_by_partition(path) -> dict[int, list[list]]:
    """partition id in each data file's name -> the rows (id, hour, vin, amount) of each of its files."""
    out: dict[int, list[list]] = {}
    for f in CarbonTable.open(path).files():
        t = carbon_ds.read_table(f.path)
        out.setdefault(partition_id_of(basename(f.path)), []).append(t.to_pylist())
    return out


def test_spread_keys_send_each_index_to_its_own_task(spark):
    n = 7
    keys = spread_keys(spark, n)
    df = spark.createDataFrame([(i, k) for i, k in enumerate(keys)], "i INT, k INT").repartition(n, "k")
    placed = dict(df.rdd.mapPartitionsWithIndex(lambda task, rows: [(r.i, task) for r in rows]).collect())
    assert placed == {i: i for i in range(n)}


def test_write_range_table_one_task_per_partition(spark, tmp_path):
    data = telemetry()
    path = str(tmp_path / "by_hour")
    CarbonTable.create(path, data.schema, sort_columns=["vin"], partition=RangePartition("hour", BOUNDS))
    df = spark.createDataFrame(data).repartition(4)  # every input task holds every partition
    assert df.rdd.getNumPartitions() == 4
    carbon_ds.write(df, path)

    parts = files_by_partition(path)
    assert sorted(parts) == sorted({range_id(h) for h in data["hour"].to_pylist()})
    for pid, files in parts.items():
        assert len(files) == 1, (pid, len(files))  # one task wrote this partition
        assert {range_id(r["hour"]) for r in files[0]} == {pid}
    got = carbon_ds.read_table(path).sort_by("id")
    assert got.equals(data.cast(got.schema))
    # Spark reads the small partition files packed several to a task, every row once
    read = carbon_ds.read(spark, path)
    assert read.rdd.getNumPartitions() < len(parts)
    assert sorted(r.id for r in read.collect()) == list(range(data.num_rows))

    # the plain writer (no repartition) writes a file set per input task and partition: what the above avoids
    plain = str(tmp_path / "plain")
    CarbonTable.create(plain, data.schema, partition=RangePartition("hour", BOUNDS))
    df.write.format("carbondata").mode("append").save(plain)
    assert max(len(f) for f in files_by_partition(plain).values()) == 4


def test_sql_insert_hash_and_list_repartition(spark, tmp_path):
    data = telemetry(2000)
    spark.createDataFrame(data).repartition(3).createOrReplaceTempView("cpl_src")
    sql = lambda text: carbon_ds.sql(spark, text)  # noqa: E731
    for name in ("cpl_hash_vin", "cpl_hash_amount", "cpl_list"):
        sql(f"DROP TABLE IF EXISTS {name}")
    sql("CREATE TABLE cpl_hash_vin (id BIGINT, hour INT, amount DECIMAL(10,2)) PARTITIONED BY (vin STRING) "
        "STORED AS carbondata TBLPROPERTIES ('PARTITION_TYPE'='HASH', 'PARTITION_NUM'='5')")
    sql("INSERT INTO cpl_hash_vin SELECT id, hour, amount, vin FROM cpl_src")
    sql("CREATE TABLE cpl_hash_amount (id BIGINT, hour INT, vin STRING) PARTITIONED BY (amount DECIMAL(10,2)) "
        "STORED AS carbondata TBLPROPERTIES ('PARTITION_TYPE'='HASH', 'PARTITION_NUM'='7')")
    sql("INSERT INTO cpl_hash_amount SELECT id, hour, vin, amount FROM cpl_src")
    sql("CREATE TABLE cpl_list (id BIGINT, hour INT, amount DECIMAL(10,2)) PARTITIONED BY (vin STRING) "
        "STORED AS carbondata TBLPROPERTIES ('PARTITION_TYPE'='LIST', 'LIST_INFO'='V001, (V002, V003), V010')")
    sql("INSERT INTO cpl_list SELECT id, hour, amount, vin FROM cpl_src")
    sql("INSERT INTO cpl_list VALUES (5000, 1, 1.25, 'V002'), (5001, 2, 2.50, 'X')")

    oracles = {
        "cpl_hash_vin": lambda r: (java_string_hash(r["vin"]) & 0x7FFFFFFF) % 5,
        "cpl_hash_amount": lambda r: (big_decimal_hash(r["amount"], 2) & 0x7FFFFFFF) % 7,
        "cpl_list": lambda r: {"V001": 1, "V002": 2, "V003": 2, "V010": 3}.get(r["vin"], 0),
    }
    for name, oracle in oracles.items():
        path = catalog.default_location(spark, "default", name)
        parts = files_by_partition(path)
        for pid, files in parts.items():
            assert {oracle(r) for f in files for r in f} == {pid}, name
        # one file per partition and load: the SELECT's 3 input tasks did not each write every partition
        per_load = Counter(pid for pid, files in parts.items() for _ in files)
        assert max(per_load.values()) <= (2 if name == "cpl_list" else 1), (name, per_load)
        got = sorted(r.id for r in spark.sql(f"SELECT id FROM {name}").collect())
        assert got == list(range(2000)) + ([5000, 5001] if name == "cpl_list" else [])
        sql(f"DROP TABLE {name}")


def test_pack_groups_small_pieces_up_to_the_pack_size():
    mb = 1024 * 1024
    sizes = {"a": 1 * mb, "b": 100 * mb, "c": 60 * mb, "d": 300 * mb, "e": 2 * mb}
    a, b, c, d1, d2, e = (Piece(p, bl) for p, bl in [("a", None), ("b", None), ("c", None), ("d", (0, 1)),
                                                    ("d", (2, 3)), ("e", None)])
    pieces = [a, b, c, d1, d2, e]
    groups = pack_pieces(pieces, sizes)
    assert [p for g in groups for p in g] == pieces  # every piece once, in order
    # a counts OPEN_COST, split pieces SPLIT_BYTES each: 4 + 100 + 60 + 128 + 128 + 4 MB need 4 groups of
    # PACK_BYTES, each piece in the group of its midpoint (106 MB each)
    assert groups == [[a, b], [c], [d1], [d2, e]]
    assert OPEN_COST + 100 * mb <= PACK_BYTES < OPEN_COST + 160 * mb and SPLIT_BYTES >= PACK_BYTES
    assert pack_pieces([], sizes) == []
    # eight tiny files: one group, or at least min_partitions groups when asked
    tiny = [Piece(f"t{i}", None) for i in range(8)]
    assert len(pack_pieces(tiny, {})) == 1
    assert [len(g) for g in pack_pieces(tiny, {}, min_partitions=3)] == [3, 2, 3]  # 8 x 4 MB in 3 even groups
    assert [len(g) for g in pack_pieces(tiny, {}, min_partitions=2)] == [4, 4]
    # uneven pieces still make exactly a multiple of the cores (filling groups in turn made a third)
    uneven = {f"u{i}": (5 + i * i % 3) * mb + i * 1000 for i in range(24)}
    assert len(pack_pieces([Piece(p, None) for p in uneven], uneven, min_partitions=2)) == 2
    assert len(pack_pieces(tiny, {}, min_partitions=100)) == 8


def test_a_narrow_read_packs_files_by_the_bytes_it_decodes(tmp_path, monkeypatch):
    """Files are packed into tasks by the share of their bytes the read decodes (columns and filter
    columns, by estimated width), not by their whole size: a RANGE table's 24 files read for one column of
    many are a task or two, as Spark's own scans would not know to do. Scaled down here: PACK_BYTES and
    OPEN_COST shrunk to the test files' sizes."""
    rows = 2400
    wide = {f"c{i:02d}": pa.array([(j * 7919 + i) % 100_003 for j in range(rows)], pa.int64()) for i in range(24)}
    data = pa.table({"hour": pa.array([j % 24 for j in range(rows)], pa.int32()), **wide})
    path = str(tmp_path / "wide")
    CarbonTable.create(path, data.schema, partition=RangePartition("hour", list(range(1, 25))))
    carbon_ds.write_table(data, path)
    sizes = [os.path.getsize(f.path) for f in CarbonTable.open(path).files()]
    assert len(sizes) == 24
    monkeypatch.setattr(input_partitions, "PACK_BYTES", 3 * max(sizes))
    monkeypatch.setattr(input_partitions, "OPEN_COST", 1)

    def tasks(columns: list[str] | None, filter: str | None = None) -> int:
        schema = data.schema if columns is None else pa.schema([data.schema.field(c) for c in columns])
        options = {"path": path, **({"filter": filter} if filter else {})}
        reader = CarbonDataSource(options).reader(from_arrow_schema(schema))
        return len(reader.partitions())

    everything, one = tasks(None), tasks(["c00"])
    assert everything >= 8 and one <= 2, (everything, one)
    # a filter's columns are decoded too: a filter on every other column reads nearly all the bytes
    wide_filter = " AND ".join(f"c{i:02d} >= 0" for i in range(1, 24))
    assert tasks(["c00"], wide_filter) >= everything // 2
    assert input_partitions.column_share(data.schema, None) == 1.0
    assert input_partitions.column_share(data.schema, ["hour"]) == 4 / (4 + 24 * 8)
    assert input_partitions.column_share(data.schema, ["C00", "c01"]) == 16 / (4 + 24 * 8)  # names in any case


def test_the_spark_expression_key_picks_the_layouts_own_partition_index(spark, tmp_path):
    """The repartition key computed in the JVM (dataframe_write.key_column) names, for every row, the
    partition index the table's layout (id_spec.Layout, the writer's own mapping) gives it."""
    data = telemetry(2000).append_column("day", pa.array(
        [None if i % 97 == 0 else 18_000 + (i * 13) % 40 for i in range(2000)], pa.date32()))
    data = data.append_column("big", pa.array([(i - 1000) * 3_000_000_007 for i in range(2000)], pa.int64()))
    layouts = {
        "range_int": RangePartition("hour", BOUNDS),
        "range_decimal": RangePartition("amount", ["-50", "0", "25.5"]),
        "range_date": RangePartition("day", ["2019-04-01", "2019-04-20"]),
        "range_string": RangePartition("vin", ["V003", "V010"]),
        "list_int": ListPartition("hour", [["1", "2", "3"], ["17", "18"]]),
        "list_string": ListPartition("vin", [["V000", "V001"], ["V012"]]),
        "hash_int": HashPartition("hour", 5),
        "hash_long": HashPartition("big", 7),
    }
    df = spark.createDataFrame(data)
    for name, partition in layouts.items():
        path = str(tmp_path / name)
        CarbonTable.create(path, data.schema, partition=partition)
        layout = TableHandle.open(path).id_layout
        keys = list(range(100, 100 + len(layout.ids)))  # any distinct keys: index i -> keys[i]
        key = key_column(layout, keys, layout.column)
        assert key is not None, name
        got = [r.k for r in df.select(key.alias("k")).collect()]
        want = [keys[i] for i in layout.indexes(data[layout.column])]
        assert got == want, name
