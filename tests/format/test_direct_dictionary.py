"""Direct-dictionary TIMESTAMP pages, as tables created through CarbonData's Spark SQL store them.

Expected values follow Java's TimeStampDirectDictionaryGenerator: ``generateKey(ms) = (ms - cutOff) /
granularity + 2`` (a time before the cut-off is stored as key 1, null) and ``getValueFromSurrogate(key) =
(key - 2) * granularity + cutOff``; granularities are TimeStampGranularityTypeValue (SECOND 1000 ms,
MINUTE 60000, HOUR 3600000, DAY 86400000). The times themselves come from ``datetime``.
"""

from __future__ import annotations

import datetime as dt
import struct

import pyarrow as pa
import pytest

import carbon_ds
from carbon_ds.errors import CarbonOptionError
from carbon_ds.format.pages import compress, direct_dictionary
from carbon_ds.format.pages.decode import Page, decode_page
from carbon_ds.format.pages.direct_dictionary import TimestampKeys
from carbon_ds.format.thrift.structs import ChunkCompressionMeta, ColumnSchema, DataChunk2, DataType, Encoding

E = Encoding
UTC = dt.UTC
ENCODINGS = [E.DICTIONARY, E.DIRECT_DICTIONARY]


def column(dt_: DataType, dimension: bool, name: str, encoders: list[int]) -> ColumnSchema:
    return ColumnSchema(data_type=int(dt_), column_name=name, column_id=name, columnar=True, encoders=encoders,
                        dimension=dimension, scale=-1, precision=-1)


def page(col: ColumnSchema, data: bytes, rows: int, encoders: list[int], extra: bytes = b"", rowid_len: int = 0,
         rle_len: int = 0) -> Page:
    """A legacy dimension page as CarbonData lays it out: snappy data, then row ids, then RLE pairs."""
    body = compress.compress("snappy", data)
    dc2 = DataChunk2(
        chunk_meta=ChunkCompressionMeta(compression_codec=1, total_uncompressed_size=len(data),
                                        total_compressed_size=len(body), compressor_name="snappy"),
        rowMajor=False, data_page_length=len(body), rowid_page_length=rowid_len, rle_page_length=rle_len,
        encoders=encoders, numberOfRowsInpage=rows,
    )
    return Page(col, dc2, memoryview(body + extra), rows, "mem.carbondata", 0)


def java_key(when: dt.datetime | None, granularity_ms: int = 1000, cutoff_ms: int = 0) -> int:
    """TimeStampDirectDictionaryGenerator.generateKey for a time (None: null, key 1)."""
    if when is None:
        return 1
    t = (int(when.timestamp() * 1000) - cutoff_ms) // granularity_ms
    return 1 if t < 0 else t + 2


def ts_column():
    return column(DataType.TIMESTAMP, True, name="ts", encoders=ENCODINGS)


def decode(keys: list[int], keys_setting: TimestampKeys | None = None, **kw) -> list:
    p = page(ts_column(), struct.pack(f">{len(keys)}i", *keys), len(keys), ENCODINGS, **kw)
    if keys_setting is not None:
        p.timestamp_keys = keys_setting
    arr = decode_page(p)
    assert arr.type == pa.timestamp("us", tz="UTC")
    return arr.to_pylist()


def test_default_second_granularity_and_nulls():
    times = [dt.datetime(2021, 11, 29, 16, 30, tzinfo=UTC), None, dt.datetime(1970, 1, 1, tzinfo=UTC),
             dt.datetime(2038, 1, 19, 3, 14, 5, tzinfo=UTC)]  # the last key, 2**31 - 1
    keys = [java_key(t) for t in times]
    assert keys[:3] == [1638203402, 1, 2]  # 1638203400 s since the epoch, + 2
    assert decode(keys) == times


def test_minute_granularity_with_cutoff_reads_pre_1970():
    setting = TimestampKeys.from_options({"timestamp_granularity": "minute", "cutoff_timestamp": "1960-01-01 00:00:00"})
    assert setting == TimestampKeys(60_000, -315_619_200_000)  # 3653 days before the epoch
    times = [dt.datetime(1965, 6, 1, 12, 30, tzinfo=UTC), dt.datetime(1960, 1, 1, tzinfo=UTC), None,
             dt.datetime(2000, 2, 29, 23, 59, tzinfo=UTC)]
    keys = [java_key(t, 60_000, -315_619_200_000) for t in times]
    assert decode(keys, setting) == times
    # the same keys under CarbonData's defaults mean other times: the setting matters
    assert decode(keys)[0] != times[0]


def test_day_granularity_drops_the_time_of_day():
    setting = TimestampKeys(86_400_000, 0)
    key = java_key(dt.datetime(2024, 2, 29, 17, 45, tzinfo=UTC), 86_400_000)
    assert decode([key], setting) == [dt.datetime(2024, 2, 29, tzinfo=UTC)]


def test_rle_and_inverted_index_keys():
    # keys [k(a), k(b)] in sorted order, runs (0,2),(2,1), row ids [2, 0, 1]: rows a, a, b stored as b, a, a
    a, b = dt.datetime(2001, 1, 1, tzinfo=UTC), dt.datetime(2002, 1, 1, tzinfo=UTC)
    data = struct.pack(">ii", java_key(a), java_key(b))
    rowid = struct.pack(">i3hh", 6, 1, 2, 0, 0)
    rle = struct.pack(">4h", 0, 2, 2, 1)
    encs = [*ENCODINGS, E.RLE, E.INVERTED_INDEX]
    p = page(ts_column(), data, 3, encs, extra=rowid + rle, rowid_len=len(rowid), rle_len=len(rle))
    assert decode_page(p).to_pylist() == [b, a, a]


def test_page_without_direct_dictionary_encoder_uses_the_column_encoders():
    key = java_key(dt.datetime(2020, 5, 17, 8, 0, tzinfo=UTC))
    p = page(ts_column(), struct.pack(">i", key), 1, [E.DICTIONARY])
    assert decode_page(p).to_pylist() == [dt.datetime(2020, 5, 17, 8, 0, tzinfo=UTC)]


def test_cutoff_with_offset_and_milliseconds():
    assert TimestampKeys.from_options({"cutoff_timestamp": "1970-01-01 08:00:00+08:00"}).cutoff_ms == 0
    assert TimestampKeys.from_options({"cutoff_timestamp": "-1000"}).cutoff_ms == -1000


@pytest.mark.parametrize("opts,word", [({"timestamp_granularity": "WEEK"}, "carbon.timegranularity"),
                                       ({"cutoff_timestamp": "yesterday"}, "carbon.cutOffTimestamp")])
def test_bad_settings_name_the_option(opts, word):
    with pytest.raises(CarbonOptionError, match=word):
        TimestampKeys.from_options(opts)


def test_process_setting_reaches_files_opened_afterwards():
    try:
        carbon_ds.set_timestamp_keys("HOUR", 0)
        assert direct_dictionary.current() == TimestampKeys(3_600_000, 0)
    finally:
        direct_dictionary.use(direct_dictionary.DEFAULT)
