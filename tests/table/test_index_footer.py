"""An index entry that disagrees with its data file's footer (blocklet count, rows per blocklet, blocklet
min/max) is refused when the file is read, naming both files and the difference, instead of letting
pruning by the index skip rows silently. Untouched tables and the real CarbonData files still read."""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pytest

import carbon_ds
from carbon_ds.errors import CarbonFormatError
from carbon_ds.format.index import index_bytes, read_index
from carbon_ds.readers.carbon_file import CarbonDataFile
from carbon_ds.table.loads import plain
from carbon_ds.table.read import pruning

N = 3000
DATA = pa.table({"id": pa.array(range(N), pa.int64()), "s": [f"v{i % 37:03d}" for i in range(N)]})


@pytest.fixture()
def table(tmp_path, monkeypatch):
    original = plain.writer_options

    def small(t, load):
        o = original(t, load)
        o.page_rows, o.blocklet_size_mb = 50, 0.002  # several blocklets in one file
        return o

    monkeypatch.setattr(plain, "writer_options", small)
    path = tmp_path / "t"
    carbon_ds.write_table(DATA, path)
    monkeypatch.undo()
    (index,) = glob.glob(str(path / "Fact/Part0/Segment_0/*.carbonindex"))
    (data,) = glob.glob(str(path / "Fact/Part0/Segment_0/*.carbondata"))
    f = CarbonDataFile(data)
    assert f.num_blocklets >= 3, "the test needs a file of several blocklets"
    f.close()
    return path, index, data


def _rewrite(index: str, change) -> None:
    header, entries = read_index(index)
    change(entries)
    with open(index, "wb") as out:
        out.write(index_bytes(header, entries))
    pruning._CACHE.clear()  # the same size and a coarse mtime could otherwise hit the parsed copy


def test_untouched_table_reads_every_row(table):
    path, _index, _data = table
    got = carbon_ds.read_table(path).sort_by("id")
    assert got.equals(DATA)
    assert carbon_ds.read_table(path, filter="id >= 2990").column("id").to_pylist() == list(range(2990, N))


def test_index_row_count_differs_from_footer(table):
    path, index, data = table
    footer_rows = CarbonDataFile(data).blocklet_rows(1)

    def more_rows(entries):
        entries[1].blocklet_info.num_rows += 7

    _rewrite(index, more_rows)
    with pytest.raises(CarbonFormatError) as e:
        carbon_ds.read_table(path, filter="id >= 0")
    msg = str(e.value)
    assert os.path.basename(index) in msg and os.path.basename(data) in msg
    assert f"blocklet 1: the index says {footer_rows + 7} rows, the footer {footer_rows}" in msg
    with pytest.raises(CarbonFormatError, match="blocklet 1"):
        carbon_ds.read_table(path, filter="id < 10")  # blocklet 0 only: the file is still checked
    # an unfiltered read takes the file whole, and checks its footer against the index all the same
    with pytest.raises(CarbonFormatError, match="index"):
        carbon_ds.read_table(path)


def test_index_blocklet_count_differs_from_footer(table):
    path, index, data = table
    n = CarbonDataFile(data).num_blocklets
    _rewrite(index, lambda entries: entries.pop())
    with pytest.raises(CarbonFormatError, match=f"the index lists {n - 1} blocklets, the footer {n}"):
        carbon_ds.read_table(path, filter="id >= 0")


def test_index_min_max_differs_from_footer(table):
    """A raised max in the index: the file is still planned, and its footer shows the difference."""
    path, index, data = table

    def shift(entries):
        mm = entries[2].block_index.min_max_index
        mm.max_values = [bytes(v) + b"\x01" for v in mm.max_values]

    _rewrite(index, shift)
    with pytest.raises(CarbonFormatError, match="blocklet 2: the index's min/max"):
        carbon_ds.read_table(path, filter="s != 'x'")
