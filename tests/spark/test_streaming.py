"""Structured Streaming into and out of carbondata tables, on a real Spark.

Sink: a file stream of 20 micro-batches (one input file each) into a plain, a Hive-partitioned and a RANGE
table, stopped and restarted from its checkpoint mid-stream, with a batch replayed after our commit (its
entry removed from the checkpoint's commit log, as a crash between the two leaves it) and a batch failed
by its tasks, the sink merging its small segments meanwhile (off on one table). Oracle: the rows of the
input files, each exactly once. Source: committed segments only, each once, out-of-order commits included;
AvailableNow ends; changes to delivered rows are reported.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pytest

import carbon_ds
from carbon_ds.errors import CarbonOptionError
from carbon_ds.spark.source.datasource import CarbonDataSource
from carbon_ds.table.loads.start import start_load
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.ops.streams.commit import BATCH_KEY
from carbon_ds.table.table import CarbonTable, RangePartition

pytest.importorskip("pyspark")
from pyspark.errors import StreamingQueryException  # noqa: E402

ROWS_PER_FILE = 40
FILES = 20
INPUT_SCHEMA = "id BIGINT, hour INT, vin STRING, day STRING"
ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("hour", pa.int32()), ("vin", pa.string()), ("day", pa.string())])
WAIT = 180  # seconds a query may take before the test gives up (never asserted as a duration)


def input_rows(k: int) -> list[dict]:
    return [{"id": k * ROWS_PER_FILE + i, "hour": (k * 7 + i) % 26, "vin": f"V{(k + i) % 5}",
             "day": f"2024-01-{1 + (k + i) % 3:02d}"} for i in range(ROWS_PER_FILE)]


def add_input(folder: Path, files: range) -> None:
    for k in files:
        tmp = folder / f".f{k:02d}.tmp"
        tmp.write_text("\n".join(json.dumps(r) for r in input_rows(k)))
        tmp.rename(folder / f"f{k:02d}.json")  # the file source must never see a half-written file


def oracle(files: range) -> list[tuple]:
    return sorted((r["id"], r["hour"], r["vin"], r["day"]) for k in files for r in input_rows(k))


def table_rows(path: str) -> list[tuple]:
    t = carbon_ds.read_table(path, columns=["id", "hour", "vin", "day"])
    return sorted(zip(*(t.column(c).to_pylist() for c in ("id", "hour", "vin", "day")), strict=True))


def micro_batches(checkpoint: str) -> list[int]:
    """The ids of the micro-batches Spark planned, from its offset log (one file per batch id). The file
    source's own log is not the reference: a stop between that log and the offset log leaves the source a batch
    ahead, and its ids no longer match the micro-batch ids the sink is given."""
    return sorted(int(f.name) for f in (Path(checkpoint) / "offsets").iterdir() if f.name.isdigit())


def wait_for_batch(query, batch_id: int) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        p = query.lastProgress
        if p is not None and p["batchId"] >= batch_id or query.exception() is not None:
            return
        time.sleep(0.2)
    raise AssertionError(f"query never reached batch {batch_id}")


class Sinks:
    """The three target tables and their checkpoints, fed by one file stream."""

    def __init__(self, spark, base: Path):
        self.spark = spark
        self.input = base / "input"
        self.input.mkdir()
        self.plain, self.hive, self.ranged = (str(base / n) for n in ("plain", "hive", "ranged"))
        CarbonTable.create(self.ranged, ARROW_SCHEMA, partition=RangePartition("hour", [4, 8, 12, 16, 20]))
        self.checkpoints = {p: str(base / f"ck_{Path(p).name}") for p in (self.plain, self.hive, self.ranged)}

    def start(self, trigger: dict, fail_id: int | None = None, only: str | None = None) -> dict:
        df = (self.spark.readStream.schema(INPUT_SCHEMA).option("maxFilesPerTrigger", 1)
              .json(str(self.input)))
        queries = {}
        for path, ck in self.checkpoints.items():
            if only is not None and path != only:
                continue
            source = df
            if fail_id is not None:
                from pyspark.sql.functions import udf

                def fail_on(i, bad=fail_id):  # a task failure in the middle of one batch
                    if i == bad:
                        raise RuntimeError(f"task failure on id {bad}")
                    return i

                source = df.withColumn("id", udf(fail_on, "bigint")("id"))
            w = source.writeStream.format("carbondata").option("checkpointLocation", ck).trigger(**trigger)
            if path == self.hive:
                w = w.option("partition_by", "day")
            if path == self.ranged:  # the off switch of the sink's automatic merge
                w = w.option("auto_load_merge", "false")
            queries[path] = w.start(path)
        return queries


@pytest.mark.slow
def test_stream_into_three_tables_with_restarts_holds_every_row_once(spark, tmp_path):
    s = Sinks(spark, tmp_path)
    add_input(s.input, range(0, 7))
    for q in s.start({"availableNow": True}).values():
        assert q.awaitTermination(WAIT)
        assert q.exception() is None
    for path in s.checkpoints:
        assert table_rows(path) == oracle(range(7))

    # a crash after our commit and before Spark's: Spark no longer knows batch 6 was done and replays it
    for ck in s.checkpoints.values():
        for name in ("6", ".6.crc"):
            (Path(ck) / "commits" / name).unlink(missing_ok=True)
    add_input(s.input, range(7, 14))
    queries = s.start({"processingTime": "0 seconds"})
    for q in queries.values():
        wait_for_batch(q, 9)
    for q in queries.values():
        q.stop()  # killed mid-stream, whatever batch it was in
        assert q.exception() is None

    add_input(s.input, range(14, FILES))
    failing = s.start({"availableNow": True}, fail_id=15 * ROWS_PER_FILE + 3, only=s.plain)[s.plain]
    with pytest.raises(StreamingQueryException, match="task failure on id 603"):
        failing.awaitTermination(WAIT)
    for q in s.start({"availableNow": True}).values():
        assert q.awaitTermination(WAIT)
        assert q.exception() is None

    for path in s.checkpoints:
        assert table_rows(path) == oracle(range(FILES))
    # one segment per micro-batch that read files: the replayed and the failed batch did not add a second
    # one. Every micro-batch reads at least one file (maxFilesPerTrigger 1; a stop may let one take two), so
    # the batches are Spark's offset log, not FILES. The sink merges its small segments (MINOR, 4 at a
    # time) after commits, so a batch's segment may be Compacted into a merged one, which has no mark.
    entries = TableHandle.open(s.plain).load_details()
    batches = [e for e in entries if e.status in (ts.SUCCESS, ts.COMPACTED) and "." not in e.name]
    marks = [e.other.get(BATCH_KEY) for e in batches]
    assert None not in marks and len(marks) == len(set(marks))
    assert sorted(int(m.rsplit(":", 1)[1]) for m in marks) == micro_batches(s.checkpoints[s.plain])
    assert any("." in e.name and e.status == ts.SUCCESS for e in entries)
    assert all("." not in e.name for e in TableHandle.open(s.ranged).load_details())
    assert {e.file_format for e in TableHandle.open(s.hive).load_details()} == {None}
    hive_days = {p.name for p in Path(s.hive).iterdir() if p.name.startswith("day=")}
    assert hive_days == {"day=2024-01-01", "day=2024-01-02", "day=2024-01-03"}


def append(path: str, start: int, n: int) -> list[int]:
    carbon_ds.write_table(pa.table({"id": pa.array(range(start, start + n), pa.int64())}), path)
    return list(range(start, start + n))


def test_stream_read_delivers_each_committed_row_once(spark, tmp_path):
    path = str(tmp_path / "t")
    append(path, 0, 5)  # before the stream starts: not delivered (starting_segment latest)
    df = spark.readStream.format("carbondata").option("starting_segment", "latest").load(path)
    q = (df.writeStream.format("memory").queryName("carbon_stream_read")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="0 seconds").start())
    try:
        q.processAllAvailable()  # the stream's start ("latest") is taken when its first batch is planned
        expected = []
        slow = start_load(TableHandle.open(path))  # reserved first, committed last
        slow.write([pa.record_batch([pa.array(range(1000, 1010), pa.int64())], names=["id"])])
        for k in range(3):
            expected += append(path, 100 * (k + 1), 7)
            q.processAllAvailable()
        slow.commit()
        expected += list(range(1000, 1010))
        q.processAllAvailable()
        got = sorted(r.id for r in spark.sql("SELECT id FROM carbon_stream_read").collect())
    finally:
        q.stop()
    assert got == sorted(expected)


def test_available_now_read_ends_with_admission_control(spark, tmp_path):
    path = str(tmp_path / "t")
    expected = [i for k in range(4) for i in append(path, 10 * k, 3 + k)]
    q = (spark.readStream.format("carbondata").option("starting_segment", "earliest")
         .option("max_files_per_trigger", 1).load(path)
         .writeStream.format("memory").queryName("carbon_available_now")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    assert q.awaitTermination(WAIT)
    assert q.exception() is None
    got = sorted(r.id for r in spark.sql("SELECT id FROM carbon_available_now").collect())
    assert got == sorted(expected)
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert sizes == [3, 4, 5, 6]  # one segment (one file) per batch


@pytest.mark.slow
def test_changes_to_streamed_rows_are_reported_unless_ignored(spark, tmp_path):
    path = str(tmp_path / "t")
    append(path, 0, 4)
    append(path, 10, 4)

    def run(**options):
        reader = spark.readStream.format("carbondata").option("starting_segment", "earliest")
        for k, v in options.items():
            reader = reader.option(k, v)
        return (reader.load(path).writeStream.format("carbondata")
                .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True)
                .start(str(tmp_path / "copy")))

    q = run()
    assert q.awaitTermination(WAIT) and q.exception() is None
    CarbonTable.open(path).delete_segments(["0"])
    append(path, 20, 4)
    q = run()
    with pytest.raises(StreamingQueryException, match=r"segment 0 was deleted or overwritten.*ignore_changes"):
        q.awaitTermination(WAIT)
    q = run(ignore_changes="true")
    assert q.awaitTermination(WAIT) and q.exception() is None
    copied = sorted(carbon_ds.read_table(str(tmp_path / "copy")).column("id").to_pylist())
    assert copied == [0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23]


@pytest.mark.parametrize(("options", "words"), [
    ({"starting_segment": "soon"}, "option starting_segment must be 'snapshot' .*, 'latest', 'earliest' or a segment id"),
    ({"max_files_per_trigger": "0"}, "option 'max_files_per_trigger' must be a positive integer"),
    ({"max_files_per_trigger": "2", "max_rows_per_trigger": "9"}, "give one of them"),
    ({"ignore_changes": "maybe"}, "option 'ignore_changes' must be true or false"),
    ({"startingVersion": "3"}, "unknown option 'startingVersion'"),
    ({"filter": "id > 3"}, "option 'filter' is not supported by streaming reads"),
])
def test_bad_read_options_name_the_option(tmp_path, options, words):
    path = str(tmp_path / "t")
    append(path, 0, 2)
    with pytest.raises(CarbonOptionError, match=words):
        source = CarbonDataSource({"path": path, **options})  # what Spark builds for readStream...load(path)
        source.streamReader(source.schema())


def test_bad_read_option_fails_the_query_naming_it(spark, tmp_path):
    path = str(tmp_path / "t")
    append(path, 0, 2)
    q = (spark.readStream.format("carbondata").option("starting_segment", "soon").load(path)
         .writeStream.format("memory").queryName("carbon_bad_option")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    with pytest.raises(StreamingQueryException, match="option starting_segment must be"):
        q.awaitTermination(WAIT)


def test_bad_write_modes_and_options_are_refused(spark, tmp_path):
    rate = spark.readStream.format("rate").option("rowsPerSecond", 1).load()
    complete = (rate.groupBy().count().writeStream.format("carbondata").outputMode("complete")
                .option("checkpointLocation", str(tmp_path / "ck1")).start(str(tmp_path / "t1")))
    with pytest.raises(StreamingQueryException, match=r"outputMode\('append'\) only"):
        complete.awaitTermination(WAIT)
    static = (rate.writeStream.format("carbondata").option("partition", "day=1")
              .option("checkpointLocation", str(tmp_path / "ck2")).start(str(tmp_path / "t2")))
    with pytest.raises(StreamingQueryException, match="option 'partition' is not supported by streaming writes"):
        static.awaitTermination(WAIT)
    merge = (rate.writeStream.format("carbondata").option("auto_load_merge", "sometimes")
             .option("checkpointLocation", str(tmp_path / "ck3")).start(str(tmp_path / "t3")))
    with pytest.raises(StreamingQueryException, match="stream option auto_load_merge must be true or false"):
        merge.awaitTermination(WAIT)
    levels = (rate.writeStream.format("carbondata").option("merge_levels", "3")
              .option("checkpointLocation", str(tmp_path / "ck4")).start(str(tmp_path / "t4")))
    with pytest.raises(StreamingQueryException, match="stream option 'merge_levels' must be one of all, 2, found '3'"):
        levels.awaitTermination(WAIT)


def test_stream_read_needs_a_table(spark, tmp_path):
    folder = tmp_path / "files"
    folder.mkdir()
    carbon_ds.write_table(pa.table({"id": [1]}), str(tmp_path / "t"))
    for f in (tmp_path / "t").rglob("*.carbondata"):
        os.link(f, folder / f.name)
    q = (spark.readStream.schema("id BIGINT").format("carbondata").load(str(folder))
         .writeStream.format("memory").queryName("carbon_no_table")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    with pytest.raises(StreamingQueryException, match="streaming reads need a carbondata table"):
        q.awaitTermination(WAIT)


def test_source_offsets_and_reads_in_process(tmp_path):
    """The reader Spark drives, called as PySpark 4.1 does (latestOffset without a start) and as 4.2+ does."""
    path = str(tmp_path / "t")
    first = append(path, 0, 3)
    source = CarbonDataSource({"path": path, "starting_segment": "earliest"})
    reader = source.streamReader(source.schema())
    initial = reader.initialOffset()
    o1 = reader.latestOffset()
    later = append(path, 10, 4)
    o2 = reader.latestOffset()
    assert reader.latestOffset() == o2  # nothing new: the same offset
    assert reader.latestOffset(o2, None) == o2

    def rows_between(start, end):
        return sorted(v for p in reader.partitions(start, end) for b in reader.read(p)
                      for v in b.column(0).to_pylist())

    assert rows_between(initial, o1) == first
    assert rows_between(o1, o2) == later
    assert reader.partitions(o2, o2) == []


def _compacted_table_with_deletes(path: str) -> list[int]:
    """Three loads compacted into 0.1, a fourth load, odd ids deleted: the rows a reader sees now."""
    for k in range(3):
        append(path, 10 * k, 5)
    table = CarbonTable.open(path)
    table.compact("major")
    append(path, 30, 5)
    assert table.delete("id % 2 = 1") == 8
    names = {e.name: e.status for e in TableHandle.open(path).load_details()}
    assert names.get("0.1") == ts.SUCCESS and names["0"] == ts.COMPACTED, names
    return sorted(carbon_ds.read_table(path).column("id").to_pylist())


def test_default_start_is_the_table_then_what_is_appended(tmp_path):
    """starting_segment's default (snapshot): the first batch is the table as it is (the compacted segment's
    rows once, deleted rows not), later batches the appended segments; a reader restarted from the last
    offset (what a checkpoint holds) delivers nothing again."""
    path = str(tmp_path / "t")
    existing = _compacted_table_with_deletes(path)
    assert existing == [0, 2, 4, 10, 12, 14, 20, 22, 24, 30, 32, 34]
    source = CarbonDataSource({"path": path})
    reader = source.streamReader(source.schema())
    initial = reader.initialOffset()
    o1 = reader.latestOffset(initial, None)

    def rows_between(r, start, end):
        return sorted(v for p in r.partitions(start, end) for b in r.read(p) for v in b.column(0).to_pylist())

    assert rows_between(reader, initial, o1) == existing
    later = append(path, 100, 3)
    o2 = reader.latestOffset(o1, None)
    assert rows_between(reader, o1, o2) == later
    restarted = source.streamReader(source.schema())
    assert restarted.latestOffset(o2, None) == o2 and restarted.partitions(o2, o2) == []
    more = append(path, 200, 2)
    o3 = restarted.latestOffset(o2, None)
    assert rows_between(restarted, o2, o3) == more
    # the old start stays one option away
    latest = CarbonDataSource({"path": path, "starting_segment": "latest"})
    old = latest.streamReader(latest.schema())
    start = old.initialOffset()
    assert old.latestOffset(start, None) == start and old.partitions(start, start) == []


def test_snapshot_stream_with_restart_holds_every_row_once(spark, tmp_path):
    path, copy, ck = str(tmp_path / "t"), str(tmp_path / "copy"), str(tmp_path / "ck")
    existing = _compacted_table_with_deletes(path)

    def run():
        q = (spark.readStream.format("carbondata").load(path).writeStream.format("carbondata")
             .option("checkpointLocation", ck).trigger(availableNow=True).start(copy))
        assert q.awaitTermination(WAIT) and q.exception() is None

    run()
    assert sorted(carbon_ds.read_table(copy).column("id").to_pylist()) == existing
    later = append(path, 100, 4)
    run()  # restarted from the checkpoint: the appended rows only
    run()  # and again: nothing
    assert sorted(carbon_ds.read_table(copy).column("id").to_pylist()) == sorted(existing + later)


def test_path_less_stream_names_the_way_that_works(spark):
    """A path-less readStream (in a session with or without the extension): the error says a path is needed and
    how streams give it, and does not claim the session lacks the extension."""
    with pytest.raises(Exception, match=r"carbondata needs a path, found none: .*readStream\.load\(path\) / "
                                        r"writeStream\.start\(path\)") as e:
        (spark.readStream.format("carbondata").load().writeStream.format("memory").queryName("carbon_no_path")
            .start().stop())
    assert "does not have" not in str(e.value)
