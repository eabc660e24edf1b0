"""A data file of fewer blocklets than the tasks its size calls for (one blocklet is common: a blocklet closes
at 64 MB of pages) is read by several tasks, each a window of the blocklet's pages (``Piece.pages``), as
Spark splits a Parquet file by its row groups. Driven as Spark drives the source: planned, pickled, read
per partition. The oracle is the rows written (pyarrow), less the rows deleted, each read exactly once."""

from __future__ import annotations

import os
import pickle

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import carbon_ds
from carbon_ds.names import ROW_POSITIONS_OPTION
from carbon_ds.readers.carbon_file import CarbonDataFile
from carbon_ds.spark.source import input_partitions
from carbon_ds.spark.source.datasource import CarbonDataSource
from carbon_ds.table.table import CarbonTable

ROWS = 200_000  # 7 pages of 32,000 rows: one blocklet


@pytest.fixture
def one_blocklet(tmp_path, monkeypatch) -> tuple[str, pa.Table]:
    data = pa.table({"id": pa.array(range(ROWS), pa.int64()),
                     "v": pa.array([(i * 7919) % 1000 for i in range(ROWS)], pa.int32())})
    path = str(tmp_path / "t")
    carbon_ds.write_table(data, path)
    files = [f.path for f in CarbonTable.open(path).files()]
    assert len(files) == 1
    with CarbonDataFile(files[0]) as f:
        assert f.num_blocklets == 1 and f.page_count(0) == 7
    size = os.path.getsize(files[0])
    monkeypatch.setattr(input_partitions, "SPLIT_BYTES", size // 3)  # three windows of the one blocklet
    monkeypatch.setattr(input_partitions, "OPEN_COST", 1)
    monkeypatch.setattr(input_partitions, "PACK_BYTES", 1)  # each piece a task of its own
    return path, data


def _read(path: str, **options) -> tuple[list, pa.Table]:
    source = CarbonDataSource({"path": path, **options})
    reader = source.reader(source.schema())
    parts = reader.partitions()
    reader = pickle.loads(pickle.dumps(reader))
    batches = [b for p in parts for b in reader.read(pickle.loads(pickle.dumps(p)))]
    return parts, pa.Table.from_batches(batches)


def test_one_blocklet_is_read_by_several_tasks_each_row_once(one_blocklet):
    path, data = one_blocklet
    parts, got = _read(path)
    windows = [piece.pages for p in parts for piece in p.pieces]
    assert len(parts) == 3 and windows == [(0, 3), (3, 6), (6, 7)], windows
    assert got.sort_by("id").equals(data)


def test_page_windows_keep_a_filter_and_the_deletes(one_blocklet):
    path, data = one_blocklet
    CarbonTable.open(path).delete("v < 100")
    keep = pc.greater_equal(data.column("v"), 100)
    _parts, got = _read(path)
    assert got.sort_by("id").equals(data.filter(keep))
    # a filter on the sort order's first column prunes whole windows' pages; the rest stay exact
    _parts, got = _read(path, filter="id >= 70000 AND id < 150000")
    want = data.filter(pc.and_(keep, pc.and_(pc.greater_equal(data.column("id"), 70_000),
                                            pc.less(data.column("id"), 150_000))))
    assert got.sort_by("id").equals(want)


def test_row_positions_of_page_windows_are_the_whole_blockets(one_blocklet):
    """The positions DELETE / UPDATE use (page, row in page) name the same rows whichever window read them."""
    path, _data = one_blocklet
    _parts, windowed = _read(path, **{ROW_POSITIONS_OPTION: "true"})
    page, row = windowed.column("__carbon_page").to_numpy(), windowed.column("__carbon_row").to_numpy()
    ids = windowed.column("id").to_numpy()
    assert len(ids) == ROWS and set(page) == set(range(7))
    assert ((page * 32_000 + row) == ids).all()  # rows are written in order, 32,000 to a page


def test_a_pruned_blocklet_is_split_by_its_own_share_of_the_file(tmp_path, monkeypatch):
    """Windows are sized by the bytes of the blocklets the plan keeps, not the whole file's: of a file of
    several blocklets, each read in two windows, a filter keeping one blocklet is two tasks, not as many as
    the whole file would take."""
    rows_in = 3 * ROWS
    data = pa.table({"id": pa.array(range(rows_in), pa.int64()),
                     "v": pa.array([(i * 2_654_435_761) % 4_294_967_291 for i in range(rows_in)], pa.int64())})
    path = str(tmp_path / "t")
    carbon_ds.write_table(data, path, blocklet_size=1)  # 1 MB blocklets
    files = [f.path for f in CarbonTable.open(path).files()]
    with CarbonDataFile(files[0]) as f:
        blocklets, rows = f.num_blocklets, f.blocklet_row_counts
    assert len(files) == 1 and blocklets >= 2, blocklets
    size = os.path.getsize(files[0])
    monkeypatch.setattr(input_partitions, "SPLIT_BYTES", size // (2 * blocklets) + 1)  # two windows a blocklet
    monkeypatch.setattr(input_partitions, "OPEN_COST", 1)
    monkeypatch.setattr(input_partitions, "PACK_BYTES", 1)
    parts, got = _read(path)
    assert len(parts) >= 2 * blocklets - 1 and got.sort_by("id").equals(data)
    parts, got = _read(path, filter=f"id < {rows[0] // 2}")
    assert len(parts) == 2 and got.sort_by("id").equals(data.slice(0, rows[0] // 2))
