"""A filtered read parses each filter column's chunk header once: page pruning holds the bytes and the
DataChunk3 it read, and the decode that follows takes them. Rows still equal pyarrow's filter of the data."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc

import carbon_ds
from carbon_ds.format import v3_file
from carbon_ds.table.loads import plain


def test_filter_chunks_are_parsed_once_and_rows_match(tmp_path, monkeypatch):
    original = plain.writer_options

    def small(table, load):  # several blocklets and pages, so pruning has something to skip
        o = original(table, load)
        o.page_rows, o.blocklet_size_mb = 64, 0.004
        return o

    monkeypatch.setattr(plain, "writer_options", small)
    n = 3000
    data = pa.table({"k": pa.array(range(n), pa.int64()),
                     "v": pa.array([i % 17 for i in range(n)], pa.int32()),
                     "s": pa.array([f"s{i % 5}" for i in range(n)])})
    path = str(tmp_path / "t")
    carbon_ds.write_table(data, path, sort_columns="k")

    parsed: Counter = Counter()
    real = v3_file.parse_data_chunk3

    def counting(buf, where, offset):
        parsed[offset] += 1
        return real(buf, where, offset)

    monkeypatch.setattr(v3_file, "parse_data_chunk3", counting)
    got = carbon_ds.scan(path, columns=["k", "s"], filter="k >= 700 and k < 1900 and v < 9",
                         use_threads=False).to_arrow()
    want = data.filter(pc.and_(pc.and_(pc.greater_equal(data["k"], 700), pc.less(data["k"], 1900)),
                               pc.less(data["v"], 9))).select(["k", "s"])
    assert got.sort_by("k").equals(want.sort_by("k"))
    assert parsed, "no chunk header was parsed"
    assert max(parsed.values()) == 1, f"chunk headers parsed more than once: {dict(parsed)}"
