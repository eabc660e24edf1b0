"""The per-file shortcuts of reading many small files: a page of strings checked against its statistics
by a compiled min/max (oracle: pyarrow's ``min_max``), a column list's stored bytes found without parsing
it (oracle: the struct the Thrift parser reads), and files of the same column list sharing one view."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import carbon_ds
from carbon_ds.format.column_view import shared_view
from carbon_ds.format.pages.page_checks import bytes_min_max
from carbon_ds.format.thrift.codec import CompactReader
from carbon_ds.format.thrift.structs import ColumnSchema, FileHeader
from carbon_ds.readers.carbon_file import CarbonDataFile


def test_bytes_min_max_equals_pyarrow():
    rng = np.random.default_rng(7)
    alphabet = [b"", b"\x00", b"a", b"\x7f", b"\x80", b"\xff"]
    for _ in range(400):
        n = int(rng.integers(0, 25))
        values = [None if rng.random() < 0.2 else b"".join(alphabet[int(k)] for k in rng.integers(0, 6, int(rng.integers(0, 4))))
                  for _ in range(n)]
        arr = pa.array(values, pa.binary())
        for a in (arr, arr.slice(1, max(n - 2, 0))):
            want = pc.min_max(a)
            assert bytes_min_max(a) == (want["min"].as_py(), want["max"].as_py())


def _header(columns: list[ColumnSchema], stamp: int) -> bytes:
    return FileHeader(version=3, column_schema=columns, is_footer_present=True, time_stamp=stamp,
                      compressor_name="snappy").to_bytes()


def test_field_span_is_the_column_list():
    cols = [ColumnSchema(data_type=1, column_name=f"c{i}", column_id=f"id{i}", columnar=True, encoders=[],
                         dimension=False) for i in range(3)]
    a, b = _header(cols, 1), _header(cols, 1 << 40)
    spans = [CompactReader(h).field_span(2) for h in (a, b)]
    assert a[spans[0][0]:spans[0][1]] == b[spans[1][0]:spans[1][1]]  # the time stamps differ, the lists not
    other = _header(cols[:2], 1)
    s = CompactReader(other).field_span(2)
    assert other[s[0]:s[1]] != a[spans[0][0]:spans[0][1]]
    # the span holds the list the parser reads: one column changed changes its bytes
    changed = [*cols[:2], ColumnSchema(**{**vars(cols[2]), "column_name": "d2"})]
    c = _header(changed, 1)
    s = CompactReader(c).field_span(2)
    assert c[s[0]:s[1]] != a[spans[0][0]:spans[0][1]]
    assert FileHeader.from_bytes(c)[0].column_schema == changed
    assert CompactReader(cols[0].to_bytes()).field_span(99) is None


def test_files_of_one_table_share_a_view_and_read_as_before(tmp_path):
    path = str(tmp_path / "t")
    for k in range(3):
        carbon_ds.write_table(pa.table({"id": [k, k + 10], "s": ["a", None]}), path)
    table = carbon_ds.CarbonTable.open(path)
    files = [f.path for f in table.files()]
    cols = table.columns
    opened = [CarbonDataFile(p, table_columns=cols) for p in files]
    try:
        assert len({id(f.columns[0]) for f in opened}) == 1
        assert [f.read().to_pylist() for f in opened] == [[{"id": k, "s": "a"}, {"id": k + 10, "s": None}]
                                                          for k in range(3)]
    finally:
        for f in opened:
            f.close()
    assert shared_view(None, opened[0].header.column_schema, None).schema.names == ["id", "s"]
    assert carbon_ds.read_table(path).sort_by("id").column("id").to_pylist() == [0, 1, 2, 10, 11, 12]


def test_local_dictionaries_kept_by_their_bytes_read_the_same(tmp_path):
    from carbon_ds.format.pages import decode

    path = str(tmp_path / "d")
    words = [f"w{i % 7}" if i % 5 else None for i in range(40)]
    for k in range(2):
        carbon_ds.write_table(pa.table({"k": list(range(40)), "s": words[k:] + words[:k]}), path)
    decode._DICTIONARIES.clear()
    first = carbon_ds.read_table(path)
    kept = len(decode._DICTIONARIES)
    assert kept >= 1
    again = carbon_ds.read_table(path)
    assert len(decode._DICTIONARIES) == kept  # answered from the kept dictionaries
    assert again.equals(first)
    want = sorted((i, str(w)) for k in range(2) for i, w in enumerate(words[k:] + words[:k]))
    assert sorted(zip(first.column("k").to_pylist(), map(str, first.column("s").to_pylist()), strict=True)) == want
