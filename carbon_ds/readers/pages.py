"""Page pruning of one carbondata blocklet, in the reader: decode only the pages whose min/max can match.

Only the filter columns' DataChunk3 headers are read first; their per-page ``DataChunk2.min_max`` decide
the surviving pages, and only those pages of the needed columns are decoded (every column of a blocklet
shares its page boundaries, so rows stay aligned). The filter columns' chunks read for the headers are
held and decoded from the same bytes. Statistic bytes become values in readers.column_stats, the one place.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from carbon_ds.errors import CarbonFormatError
from carbon_ds.expressions import AlwaysTrue, Expr, might_match
from carbon_ds.format.thrift.structs import ColumnSchema, DataChunk3
from carbon_ds.readers import column_stats as S
from carbon_ds.readers.carbon_file import CarbonDataFile

__all__ = ["BlockletRows", "planned_pages", "read_pruned", "surviving_pages"]


@dataclass(frozen=True)
class BlockletRows:
    """What a pruned read of one blocklet decoded: ``batch`` holds the rows of ``pages`` (page numbers, in
    order), whose row counts are ``page_rows``."""

    batch: pa.RecordBatch
    pages: list[int]
    page_rows: list[int]
    all_pages: bool  # every page of the blocklet survived


def _page_stats(chunk: DataChunk3, column: ColumnSchema) -> list[S.Stats]:
    """The statistics of each page of ``chunk`` (a chunk of ``column``), kept on the parsed header: parsed
    headers are shared by content (see carbon_file), so a query re-reading a file prunes its pages without
    decoding their statistic bytes again. (A struct compares and serialises by its fields only.)"""
    key = (column.column_name.lower(), column.data_type, column.dimension, column.scale, column.precision,
           tuple(column.encoders or ()))
    memo = chunk.__dict__.setdefault("_page_stats", {})
    got = memo.get(key)
    if got is None:
        got = memo[key] = [S.unit_stats([column], [True], dc2.min_max, None) for dc2 in chunk.data_chunk_list or []]
    return got


def surviving_pages(f: CarbonDataFile, blocklet: int, expr: Expr, hold: bool = False) -> tuple[list[int], int]:
    """(pages of ``blocklet`` that might match, page count), from the filter columns' page min/max; with
    ``hold`` the file keeps those columns' chunks for the decode that follows (``f.release`` drops them)."""
    names = {c.lower() for c in expr.columns()}
    columns = f.columns
    trusted = S.trusted_nodes(f.nodes, columns)
    per_column: dict[str, list[S.Stats]] = {}
    n_pages = None
    for i, c in enumerate(columns):
        if c.column_name.lower() not in names or not trusted[i]:
            continue
        chunk = f.read_column_chunk(blocklet, i, hold)
        pages = _page_stats(chunk, c)
        n_pages = len(pages)
        per_column[c.column_name.lower()] = pages
    if n_pages is None:
        n = f.page_count(blocklet)
        return list(range(n)), n
    _check_against_blocklet(f, blocklet, columns, trusted, per_column)
    keep = []
    for j in range(n_pages):
        merged: S.Stats = {}
        for col_pages in per_column.values():
            if j < len(col_pages):
                merged.update(col_pages[j])
        if might_match(expr, S.lookup(merged)):
            keep.append(j)
    return keep, n_pages


def _check_against_blocklet(f: CarbonDataFile, blocklet: int, columns: list[ColumnSchema], trusted: list[bool],
                            per_column: dict[str, list[S.Stats]]) -> None:
    """A blocklet's min/max in the footer is its pages' merged: a page whose statistics were damaged (and
    would rule its rows out wrongly) shows as a difference, refused before any page is pruned by them."""
    blocks = f.footer.blocklet_index_list or []
    index = blocks[blocklet] if blocklet < len(blocks) else None
    if index is None or index.min_max_index is None:
        return
    whole = S.unit_stats(columns, trusted, index.min_max_index, None)
    for name, pages in per_column.items():
        want, got = whole.get(name), S.merge(pages).get(name)
        if want is None or got is None:
            continue
        for what, a, b in (("min", want.min, got.min), ("max", want.max, got.max)):
            if a is None or b is None or a != a or b != b:  # unknown, or NaN
                continue
            if a != b:
                raise CarbonFormatError(
                    f"column {name!r} of blocklet {blocklet}: its pages' {what} is {b!r}, the footer's {a!r} (the "
                    "page statistics and the footer disagree)", f.path)


def planned_pages(f: CarbonDataFile, blocklet: int, prune: Expr | None, window: tuple[int, int] | None = None,
                  hold: bool = False) -> tuple[list[int], int]:
    """(pages of ``blocklet`` to read, its page count): those ``prune`` cannot rule out (every page without
    one), of pages [first, end) only with a ``window`` (Piece.pages). With ``hold``, as surviving_pages."""
    if prune is None or isinstance(prune, AlwaysTrue):
        n = len(f.page_rows(blocklet))
        keep: list[int] | range = range(n)
    else:
        keep, n = surviving_pages(f, blocklet, prune, hold)
    if window is None:
        return list(keep), n
    lo, end = window
    if not 0 <= lo < end <= n:
        raise CarbonFormatError(f"pages {lo} to {end} of blocklet {blocklet} were planned, but it has {n} pages "
                                "(the file changed since the read was planned)", f.path)
    return [j for j in keep if lo <= j < end], n


def read_pruned(f: CarbonDataFile, blocklet: int, columns: list[str] | None, prune: Expr | None = None,
                window: tuple[int, int] | None = None) -> BlockletRows | None:
    """``columns`` of the pages of ``blocklet`` that ``prune`` cannot rule out (all pages without one), of
    pages [first, end) only with a ``window``; None when no page survives."""
    sizes = f.page_rows(blocklet)
    try:
        keep, n = planned_pages(f, blocklet, prune, window, hold=True)
        if not keep:
            return None
        if len(keep) == n:
            return BlockletRows(f.read_blocklet(blocklet, columns), keep, sizes, True)
        return BlockletRows(f.read_blocklet(blocklet, columns, pages=keep), keep, [sizes[j] for j in keep], False)
    finally:
        f.release(blocklet)
