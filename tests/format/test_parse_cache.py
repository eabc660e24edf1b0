"""Parsed footers and column-chunk headers are shared between opens of files with the same bytes, within a
byte budget (least recently used first out), by way of ``BytesCache``."""

from __future__ import annotations

import pyarrow as pa

from carbon_ds.api import write_table
from carbon_ds.format import v3_file
from carbon_ds.format.thrift.parse_cache import BytesCache
from carbon_ds.readers import CarbonDataFile


def _files(tmp_path, n: int) -> list[str]:
    paths = []
    for i in range(n):
        write_table(pa.table({"a": pa.array(range(i * 100, i * 100 + 50)), "s": [f"v{i}"] * 50}),
                    str(tmp_path / f"t{i}"))
        paths += [str(p) for p in (tmp_path / f"t{i}").rglob("*.carbondata")]
    return paths


def test_chunk_headers_are_parsed_once_per_content_and_kept_within_budget(tmp_path, monkeypatch):
    fresh = BytesCache(v3_file._PARSED.budget_bytes, v3_file._PARSED.max_item_bytes)
    monkeypatch.setattr(v3_file, "_PARSED", fresh)
    paths = _files(tmp_path, 4)
    with CarbonDataFile(paths[0]) as f, CarbonDataFile(paths[0]) as g:
        assert f.read_column_chunk(0, 0) is g.read_column_chunk(0, 0)  # one parse for the same bytes
        assert f.read().equals(g.read())
    with CarbonDataFile(paths[1]) as h:
        # other bytes, another parse: the cache is keyed by content, never by path
        assert h.read_column_chunk(0, 0) is not CarbonDataFile(paths[0]).read_column_chunk(0, 0)
    sizes = [len(data) for _kind, data in fresh.keys()]
    assert fresh.nbytes == sum(sizes)
    # a budget of about two entries: reading every file keeps it, dropping the least recently used first
    budget = sorted(sizes)[-1] * 2
    monkeypatch.setattr(fresh, "budget_bytes", budget)
    for p in paths:
        with CarbonDataFile(p) as f:
            assert f.read().num_rows == 50
    assert 0 < fresh.nbytes <= budget
    assert fresh.nbytes == sum(len(data) for _kind, data in fresh.keys())
    with CarbonDataFile(paths[-1]) as f, CarbonDataFile(paths[-1]) as g:
        assert f.read_column_chunk(0, 1) is g.read_column_chunk(0, 1)  # the newest entries stay


def _counting(value):
    calls = []

    def parse():
        calls.append(1)
        return value
    return parse, calls


def test_bytes_cache_drops_least_recently_used_past_its_budget():
    cache = BytesCache(budget_bytes=8, max_item_bytes=4)
    a, b, c = object(), object(), object()
    assert cache.get_or_parse(b"aaaa", lambda: a) is a
    assert cache.get_or_parse(b"bbbb", lambda: b) is b
    assert cache.get_or_parse(b"aaaa", lambda: object()) is a  # a hit, and now the most recent
    assert cache.get_or_parse(b"cccc", lambda: c) is c
    assert cache.keys() == [(None, b"aaaa"), (None, b"cccc")] and cache.nbytes == 8
    parse, calls = _counting(object())
    cache.get_or_parse(b"toolong", parse)
    cache.get_or_parse(b"toolong", parse)
    assert len(calls) == 2 and len(cache) == 2  # over max_item_bytes: parsed every time, never kept


def test_bytes_cache_keys_by_kind_and_bounds_entries():
    cache = BytesCache(budget_bytes=1 << 20, max_item_bytes=1 << 10, max_entries=2)
    assert cache.get_or_parse(b"x", lambda: 1, kind=int) == 1
    assert cache.get_or_parse(b"x", lambda: "1", kind=str) == "1"
    cache.get_or_parse(b"y", lambda: 2)
    assert cache.keys() == [(str, b"x"), (None, b"y")]
    cache.clear()
    assert len(cache) == 0 and cache.nbytes == 0


def test_bytes_cache_with_copies_gives_every_caller_its_own_object():
    cache = BytesCache(budget_bytes=1 << 20, max_item_bytes=1 << 10, copies=True)
    first = cache.get_or_parse(b"k", lambda: {"v": [1]})
    first["v"].append(2)  # a caller changing its object changes no one else's
    second, third = cache.get_or_parse(b"k", dict), cache.get_or_parse(b"k", dict)
    assert second == third == {"v": [1]} and second is not third
