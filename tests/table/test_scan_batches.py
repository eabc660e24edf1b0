"""Batch sizes of carbon_ds.scan: pyarrow.dataset's default (131,072 rows per batch) is the reference when
batch_size is not given. And what a first write to a path that cannot be a table says."""

from __future__ import annotations

import pyarrow as pa
import pytest

import carbon_ds
from carbon_ds.errors import CarbonTableError


def test_default_batch_size_caps_a_large_blocklet(tmp_path):
    # pyarrow.dataset's default (131,072 rows per batch) is the reference for batches without batch_size
    path = str(tmp_path / "big")
    n = 300_000
    carbon_ds.write_table(pa.table({"id": pa.array(range(n), pa.int64())}), path)
    s = carbon_ds.scan(path, use_threads=False)
    assert len(s.plan()) == 1 and s.plan()[0].blocklets in (None, [0])  # one blocklet holds every row
    sizes = [b.num_rows for b in s.to_batches()]
    assert sizes == [131_072, 131_072, n - 2 * 131_072]
    assert [b.num_rows for b in carbon_ds.scan(path, batch_size=200_000).to_batches()] == [200_000, 100_000]


def test_a_table_path_that_is_a_file_says_so(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("x")
    data = pa.table({"id": pa.array([1], pa.int64())})
    with pytest.raises(CarbonTableError, match=r"a table must be a folder: .*notes.txt is a regular file"):
        carbon_ds.write_table(data, str(f))
    with pytest.raises(CarbonTableError, match=r"notes.txt/t lies below .*notes.txt, which is a regular file"):
        carbon_ds.write_table(data, str(f / "t"))
