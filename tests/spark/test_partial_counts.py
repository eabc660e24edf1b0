"""GROUP BY keys count(*) counted in the read tasks (jvm/src PartialCounts, carbon_ds.spark.source.partial_counts):
the same rows as Spark grouping a Parquet twin written by pyarrow, in fixed-offset and region session time
zones (clock changes included), over nulls, times before 1970, deleted rows and several segments; the plan
shows where the counting happened; the day of a timestamp checked by hand against Spark's
DateTimeUtils.microsToDays (the date of the instant at the zone's offset then)."""

from __future__ import annotations

import datetime as dt
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from spark_confs import confs

import carbon_ds
from carbon_ds.errors import CarbonError
from carbon_ds.spark.bridge import protocol
from carbon_ds.spark.bridge.extension import extension_active
from carbon_ds.spark.source import partial_counts
from carbon_ds.table import CarbonTable

BASE = dt.datetime(1969, 12, 29, 20, 0, tzinfo=dt.UTC)


def _rows(n: int, seed: int) -> pa.Table:
    rng = random.Random(seed)
    return pa.table({
        "ts": pa.array([None if i % 97 == 0 else BASE + dt.timedelta(minutes=37 * i + rng.randrange(30))
                        for i in range(n)], pa.timestamp("us", tz="UTC")),
        "hour": pa.array([i % 24 for i in range(n)], pa.int32()),
        "vin": pa.array([None if i % 11 == 0 else f"v{rng.randrange(7)}" for i in range(n)]),
        "f": pa.array([i % 3 * 0.5 for i in range(n)]),
        "id": pa.array(range(n), pa.int64()),
    })


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory):
    """(carbondata table, Parquet twin): two segments, then rows deleted; the twin holds the rows left."""
    if not extension_active(spark):
        pytest.skip("needs the carbon-ds Spark extension (scripts/build-jvm.sh)")
    root = tmp_path_factory.mktemp("partial")
    first, second = _rows(30_000, 1), _rows(8_000, 2)
    path = str(root / "t")
    carbon_ds.write_table(first, path)
    carbon_ds.write_table(second, path)
    CarbonTable.open(path).delete("(id >= 1000 AND id < 4000) OR id = 7")
    left = pa.concat_tables([first, second])
    left = left.filter(pa.array([not (1000 <= i < 4000 or i == 7) for i in left["id"].to_pylist()]))
    twin = str(root / "twin.parquet")
    pq.write_table(left, twin)
    return path, twin


QUERIES = {
    "day": "SELECT to_date(ts) d, count(*) n FROM {t} GROUP BY 1",
    "day_hour": "SELECT to_date(ts) d, hour, count(1) n, count(*) m FROM {t} GROUP BY 1, 2",
    "vin_hour": "SELECT vin, hour, count(*) n FROM {t} GROUP BY vin, hour",
    "day_vin_having": "SELECT to_date(ts), vin, count(*) n FROM {t} GROUP BY 1, 2 HAVING count(*) > 40",
    "key_not_selected": "SELECT count(*) FROM {t} GROUP BY to_date(ts), hour",
    "filtered": "SELECT to_date(ts) d, vin, count(*) FROM {t} WHERE hour < 5 GROUP BY 1, 2",
    "distinct": "SELECT to_date(ts) d, count(DISTINCT vin) FROM {t} GROUP BY 1",
    "float_key": "SELECT f, hour, count(*) FROM {t} GROUP BY f, hour",
    "one_column": "SELECT vin, count(*) FROM {t} GROUP BY vin",
}
PUSHED = {"day", "day_hour", "vin_hour", "day_vin_having", "key_not_selected"}
# the rows run from December 1969 into 1972: Los Angeles changed its clocks twice a year, London kept
# UTC+1 all year until October 1971, Kolkata and Shanghai kept theirs
ZONES = ["UTC", "+08:00", "-03:30", "America/Los_Angeles", "Europe/London", "Asia/Kolkata", "Asia/Shanghai"]


def _counted_in_tasks(df) -> bool:
    return "sum(n#" in df._jdf.queryExecution().optimizedPlan().toString()


# UTC and Los Angeles (clock changes) by default, the other zones with the slow cases (CI runs both)
@pytest.mark.parametrize("zone", [z if z in ("UTC", "America/Los_Angeles") else pytest.param(z, marks=pytest.mark.slow)
                                  for z in ZONES])
def test_counts_equal_spark_over_the_parquet_twin(spark, tables, zone):
    path, twin = tables
    spark.read.format("carbondata").load(path).createOrReplaceTempView("pc_carbon")
    spark.read.parquet(twin).createOrReplaceTempView("pc_parquet")
    with confs(spark, **{"spark.sql.session.timeZone": zone}):
        for name, sql in QUERIES.items():
            got = spark.sql(sql.format(t="pc_carbon"))
            want = spark.sql(sql.format(t="pc_parquet")).collect()
            assert sorted(map(tuple, got.collect()), key=repr) == sorted(map(tuple, want), key=repr), (zone, name)
            assert _counted_in_tasks(got) == (name in PUSHED), (zone, name)


def test_dataframe_calls_and_carbon_ds_read_count_in_the_tasks(spark, tables):
    from pyspark.sql import functions as F

    path, twin = tables
    # carbon_ds.read would read a table this small on the driver (carbon_ds.spark.local)
    with confs(spark, **{"spark.sql.session.timeZone": "UTC", "carbon_ds.sql.localRelationBytes": "0"}):
        want = sorted(map(tuple, spark.read.parquet(twin).groupBy(F.to_date("ts"), "hour").count().collect()),
                      key=repr)
        for df in (spark.read.format("carbondata").load(path),
                   carbon_ds.read(spark, path, columns=["ts", "hour"])):
            got = df.groupBy(F.to_date("ts"), "hour").count()
            assert _counted_in_tasks(got)
            assert sorted(map(tuple, got.collect()), key=repr) == want


def test_the_conf_turns_it_off(spark, tables):
    path, _twin = tables
    spark.read.format("carbondata").load(path).createOrReplaceTempView("pc_off")
    with confs(spark, **{"carbon_ds.extension.partialCounts": "false", "spark.sql.session.timeZone": "UTC"}):
        df = spark.sql("SELECT to_date(ts), hour, count(*) FROM pc_off GROUP BY 1, 2")
        assert not _counted_in_tasks(df)
        assert df.count() > 0


def _option(df) -> str:
    """The partial_counts option of ``df``'s one carbondata read."""
    leaves = df._jdf.queryExecution().optimizedPlan().collectLeaves()
    texts = [leaves.apply(i).relation().options().get("partial_counts") for i in range(leaves.size())
             if leaves.apply(i).getClass().getSimpleName() == "DataSourceV2ScanRelation"]
    assert len(texts) == 1, texts
    return texts[0]


def test_equal_keys_write_the_same_option_text(spark, tables):
    # two reads with the same option text may share one exchange (jvm/src SizedPythonTable): equal keys must
    # write equal bytes, the ones Python reads (keys in query order, "day" left out of a plain column's key)
    path, _twin = tables
    spark.read.format("carbondata").load(path).createOrReplaceTempView("pc_text")
    query = "SELECT to_date(ts), hour, count(*) FROM pc_text GROUP BY 1, 2"
    with confs(spark, **{"spark.sql.session.timeZone": "+08:00"}):
        assert _option(spark.sql(query)) == (
            '{"keys":[{"column":"ts","day":{"offsets":[28800],"at":[]}},{"column":"hour"}],"v":1}')
    with confs(spark, **{"spark.sql.session.timeZone": "America/Los_Angeles"}):
        first, second = _option(spark.sql(query)), _option(spark.sql(query))
    assert first == second
    spec = protocol.from_json(protocol.PartialCountsSpec, first, strict=True)
    day = spec.keys[0].day
    assert [k.column for k in spec.keys] == ["ts", "hour"] and spec.keys[1].day is None
    # 1883's switch to standard time, then PST/PDT; the zone database past "until"
    assert day.offsets[1:3] == (-8 * 3600, -7 * 3600) and day.zone == "America/Los_Angeles"
    assert len(day.offsets) == len(day.at) + 1 and day.until is not None
    assert protocol.to_json(spec).replace(" ", "") == first  # Python writes the same keys in the same order


def test_counts_of_a_kept_view_see_the_commits_before_each_query(spark, tmp_path):
    if not extension_active(spark):
        pytest.skip("needs the carbon-ds Spark extension (scripts/build-jvm.sh)")
    path = str(tmp_path / "t")
    carbon_ds.write_table(_rows(5_000, 3), path)
    spark.read.format("carbondata").load(path).createOrReplaceTempView("pc_kept")
    query = "SELECT to_date(ts), hour, count(*) FROM pc_kept GROUP BY 1, 2"
    with confs(spark, **{"spark.sql.session.timeZone": "UTC"}):
        assert _counted_in_tasks(spark.sql(query))
        assert sum(r[2] for r in spark.sql(query).collect()) == 5_000
        carbon_ds.write_table(_rows(1_000, 4), path)
        CarbonTable.open(path).delete("id < 100")
        assert sum(r[2] for r in spark.sql(query).collect()) == 6_000 - 100 - 100


# Spark's DateTimeUtils.microsToDays(micros, zone) is the date of the instant in the zone: at a fixed offset,
# floorDiv(micros + offset * 1e6, 86400 * 1e6). Values by hand:
@pytest.mark.parametrize("when, offset, day", [
    (dt.datetime(1970, 1, 1, 0, 0, tzinfo=dt.UTC), 0, dt.date(1970, 1, 1)),
    (dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC), 0, dt.date(1969, 12, 31)),
    (dt.datetime(1969, 12, 31, 16, 0, tzinfo=dt.UTC), 8 * 3600, dt.date(1970, 1, 1)),
    (dt.datetime(1969, 12, 31, 15, 59, 59, tzinfo=dt.UTC), 8 * 3600, dt.date(1969, 12, 31)),
    (dt.datetime(2024, 3, 10, 3, 29, tzinfo=dt.UTC), -(3 * 3600 + 1800), dt.date(2024, 3, 9)),
    (dt.datetime(2024, 3, 10, 3, 30, tzinfo=dt.UTC), -(3 * 3600 + 1800), dt.date(2024, 3, 10)),
    (dt.datetime(1900, 1, 1, 0, 0, tzinfo=dt.UTC), 3600, dt.date(1900, 1, 1)),
])
def test_the_day_of_a_timestamp_at_an_offset(when, offset, day):
    target = pa.schema([("k0", pa.date32()), ("n", pa.int64())])
    for unit in ("ms", "us"):
        rows = pa.table({"ts": pa.array([when, when, None], pa.timestamp(unit, tz="UTC"))})
        got = partial_counts.counts([rows], [partial_counts.Key("ts", partial_counts.Zone.fixed(offset))], target)
        assert sorted(got.to_pylist(), key=repr) == sorted([{"k0": day, "n": 2}, {"k0": None, "n": 1}], key=repr)


def test_the_offset_changes_at_its_instants_and_the_database_answers_past_them():
    # Los Angeles: PDT (-7 h) from 2024-03-10 10:00 UTC; the zone database past "until" (2024-06-01)
    zone = partial_counts.Zone((-8 * 3600, -7 * 3600), (1_710_064_800,), 1_717_200_000, "America/Los_Angeles")
    times = [dt.datetime(2024, 3, 10, 7, 30), dt.datetime(2024, 3, 10, 9, 59, 59),  # 23:30, 01:59 PST
             dt.datetime(2024, 3, 11, 6, 59), dt.datetime(2024, 3, 11, 7, 0),  # 23:59 PDT, then 00:00
             dt.datetime(2024, 11, 3, 7, 30), dt.datetime(2024, 11, 3, 9, 0)]  # past until: 00:30, 01:00 PST
    rows = pa.table({"ts": pa.array([t.replace(tzinfo=dt.UTC) for t in times], pa.timestamp("us", tz="UTC"))})
    target = pa.schema([("k0", pa.date32()), ("n", pa.int64())])
    got = partial_counts.counts([rows], [partial_counts.Key("ts", zone)], target)
    assert sorted((r["k0"], r["n"]) for r in got.to_pylist()) == [
        (dt.date(2024, 3, 9), 1), (dt.date(2024, 3, 10), 2), (dt.date(2024, 3, 11), 1), (dt.date(2024, 11, 3), 2)]


def test_counts_merge_across_units_and_skip_empty_ones():
    target = pa.schema([("k0", pa.string()), ("k1", pa.int32()), ("n", pa.int64())])
    keys = [partial_counts.Key("s"), partial_counts.Key("h")]
    unit = pa.table({"s": ["a", "b", None, "a"], "h": pa.array([1, 1, 1, 1], pa.int32())})
    got = partial_counts.counts([unit, unit.slice(0, 0), unit.slice(1)], keys, target)
    assert got.schema == target
    assert sorted(got.to_pylist(), key=repr) == sorted(
        [{"k0": "a", "k1": 1, "n": 3}, {"k0": "b", "k1": 1, "n": 2}, {"k0": None, "k1": 1, "n": 2}], key=repr)
    assert partial_counts.counts([], keys, target).num_rows == 0


@pytest.mark.parametrize("text, message", [
    ("not json", "expected"),
    ('{"keys": []}', "no key"),
    ('{"keys": [{"column": "nope"}]}', "nope"),
    ('{"keys": [{"column": "s", "day": {"offsets": [0]}}]}', "timestamp"),
    ('{"keys": [{"column": "ts", "day": {"offsets": [90000]}}]}', "18 hours"),
    ('{"keys": [{"column": "ts", "day": {"offsets": [0, 3600], "at": []}}]}', "one more"),
    ('{"keys": [{"column": "ts", "day": {"offsets": [0, 1, 2], "at": [5, 5]}}]}', "rising"),
    ('{"keys": [{"column": "ts", "day": {"offsets": [0], "until": 5}}]}', "zone name"),
    ('{"keys": [{"column": "s"}], "v": 2}', "expected version 1 .*found 2"),
])
def test_a_bad_option_names_what_is_wrong(text, message):
    schema = pa.schema([("s", pa.string()), ("ts", pa.timestamp("us", tz="UTC"))])
    with pytest.raises(CarbonError, match=message):
        partial_counts.parse(text, schema)
