"""Parsed footers and column-chunk headers are shared between opens of files with the same bytes, within a
byte budget (least recently used first out)."""

from __future__ import annotations

import pyarrow as pa

from carbon_ds.api import write_table
from carbon_ds.readers import CarbonDataFile, carbon_file


def _files(tmp_path, n: int) -> list[str]:
    paths = []
    for i in range(n):
        write_table(pa.table({"a": pa.array(range(i * 100, i * 100 + 50)), "s": [f"v{i}"] * 50}),
                    str(tmp_path / f"t{i}"))
        paths += [str(p) for p in (tmp_path / f"t{i}").rglob("*.carbondata")]
    return paths


def test_chunk_headers_are_parsed_once_per_content_and_kept_within_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(carbon_file, "_PARSED", carbon_file.OrderedDict())
    monkeypatch.setattr(carbon_file, "_parsed_bytes", 0)
    paths = _files(tmp_path, 4)
    with CarbonDataFile(paths[0]) as f, CarbonDataFile(paths[0]) as g:
        assert f.read_column_chunk(0, 0) is g.read_column_chunk(0, 0)  # one parse for the same bytes
        assert f.read().equals(g.read())
    with CarbonDataFile(paths[1]) as h:
        # other bytes, another parse: the cache is keyed by content, never by path
        assert h.read_column_chunk(0, 0) is not CarbonDataFile(paths[0]).read_column_chunk(0, 0)
    sizes = [len(data) for _kind, data in carbon_file._PARSED]
    assert carbon_file._parsed_bytes == sum(sizes)
    # a budget of about two entries: reading every file keeps it, dropping the least recently used first
    budget = sorted(sizes)[-1] * 2
    monkeypatch.setattr(carbon_file, "_PARSED_BUDGET", budget)
    for p in paths:
        with CarbonDataFile(p) as f:
            assert f.read().num_rows == 50
    assert 0 < carbon_file._parsed_bytes <= budget
    assert carbon_file._parsed_bytes == sum(len(data) for _kind, data in carbon_file._PARSED)
    with CarbonDataFile(paths[-1]) as f:
        last = f.read_column_chunk(0, 1)
    assert any(v is last for v in carbon_file._PARSED.values())  # the newest entries stay
