"""How a read's planned pieces become Spark input partitions: a large file split into groups of blocklets
(or windows of a blocklet's pages), small files packed several to a partition as Spark packs small files, and
the size estimates behind both."""

from __future__ import annotations

import os
from dataclasses import replace

import pyarrow as pa

from carbon_ds.errors import CarbonError
from carbon_ds.fs import Storage
from carbon_ds.readers.carbon_file import CarbonDataFile
from carbon_ds.table.read import pruning
from carbon_ds.table.read.snapshot import Snapshot

SPLIT_BYTES = 128 * 1024 * 1024  # a file larger than this is read as several partitions
# Small files (a partitioned table's, many small loads') are read several to a partition up to PACK_BYTES,
# each counted at least OPEN_COST, as Spark packs small files (its maxPartitionBytes and openCostInBytes
# defaults): every partition costs a Python task.
PACK_BYTES = 128 * 1024 * 1024
OPEN_COST = 4 * 1024 * 1024


def stored_bytes(source: Snapshot, file_sizes: dict[str, int]) -> int:
    """The stored bytes of a snapshot's segments, as Spark's size estimate counts a table: each readable
    (chosen) segment's ``dataSize + indexSize`` as its tablestatus records them, or, where a segment records
    none (CarbonData 1.x, hand-made status files), the sizes of its files; a bare folder's files."""
    by_segment: dict[str | None, int] = {}
    for path, segment in source.files:
        by_segment[segment] = by_segment.get(segment, 0) + file_sizes.get(path, 0)
    if source.details is None:
        return sum(by_segment.values())
    total = 0
    for detail in source.details:
        if detail.name not in by_segment:
            continue  # not readable, not chosen, or holding no file
        recorded = [detail.data_size, detail.index_size]
        if all(v is not None and v.isdigit() for v in recorded):
            total += sum(int(v) for v in recorded)
        else:
            total += by_segment[detail.name]
    return total


def _stored_size(source: Snapshot, path: str) -> int:
    try:
        return source.storage.size(path)
    except (OSError, CarbonError):  # a file gone since planning: not split; its read reports it
        return 0


def _width(t: pa.DataType) -> int:
    """Estimated stored bytes per value of ``t`` (variable-length values as 16)."""
    if pa.types.is_boolean(t):
        return 1
    try:
        return max(1, t.bit_width // 8)
    except ValueError:  # variable width or nested
        return 16 if not pa.types.is_nested(t) else 32


def column_share(schema: pa.Schema, columns: list[str] | None) -> float:
    """The share of a row's estimated bytes that ``columns`` of ``schema`` take (1.0 for all columns)."""
    if columns is None:
        return 1.0
    total = sum(_width(f.type) for f in schema)
    wanted = {c.lower() for c in columns}
    read = sum(_width(f.type) for f in schema if f.name.lower() in wanted)
    return min(1.0, max(read, 1) / max(total, 1))


def planning_cores() -> int:
    """The parallelism a plan is sized for: the planning worker runs beside the driver, so its cores stand
    for the ones Spark has (at least two, as on the smallest machine Spark is run on)."""
    return max(2, os.cpu_count() or 1)


def pack_pieces(pieces: list[pruning.Piece], sizes: dict[str, int], min_partitions: int = 1
                ) -> list[list[pruning.Piece]]:
    """Consecutive pieces grouped, one Spark partition per group: each piece counts its file's size (a split
    piece its share, SPLIT_BYTES; at least OPEN_COST); as many groups as PACK_BYTES needs, rounded up to a
    multiple of ``min_partitions`` (as Spark sizes file partitions by bytes per core), the pieces spread so
    the groups cost about the same."""
    if not pieces:
        return []
    costs = [max(OPEN_COST, sizes.get(p.path, 0) if p.blocklets is None or p.external is not None else
                 min(sizes.get(p.path, 0), SPLIT_BYTES)) for p in pieces]
    total = sum(costs)
    cores = max(1, min_partitions)
    wanted = min(len(pieces), -(-max(1, -(-total // PACK_BYTES)) // cores) * cores)
    # each piece goes to the group its cost's midpoint falls in: exactly ``wanted`` even groups where the
    # pieces allow (filling groups up to a limit in turn leaves a lone last one: three groups on two cores
    # take as long as four)
    groups: list[list[pruning.Piece]] = [[] for _ in range(wanted)]
    before = 0
    for p, cost in zip(pieces, costs, strict=True):
        groups[min(wanted - 1, (2 * before + cost) * wanted // (2 * total))].append(p)
        before += cost
    return [g for g in groups if g]


def _split_piece(storage: Storage, piece: pruning.Piece, size: int, split: int = SPLIT_BYTES) -> list[pruning.Piece]:
    """A large file's blocklets in groups of about ``split`` bytes, one Spark partition each (what a partition
    carries: no index claim, the pieces stay small). A file of fewer blocklets than groups (a blocklet closes
    at 64 MB of pages, so a file of one is common) is split by windows of its blocklets' pages instead, as
    Spark splits a Parquet file by its row groups: every core decodes part of it."""
    piece = replace(piece, claim=None, rows=None)
    if piece.external is not None or size <= split:  # an external file is one partition (units as planned)
        return [piece]
    wanted = -(-size // split)
    if piece.blocklets is not None and len(piece.blocklets) >= wanted:
        return _blocklet_groups(piece, piece.blocklets, wanted)
    with CarbonDataFile(piece.path, storage=storage) as f:
        blocklets = piece.blocklets if piece.blocklets is not None else tuple(range(f.num_blocklets))
        n = len(blocklets)
        if n >= wanted:
            return _blocklet_groups(piece, blocklets, wanted)
        # the kept blocklets' share of the file's bytes says how many windows they need (a lookup's one
        # blocklet of a large file is not read by many tasks)
        wanted = -(-(size * n // max(1, f.num_blocklets)) // split)
        if wanted <= n:
            return _blocklet_groups(piece, blocklets, n)
        out = []
        for b in blocklets:
            pages = f.page_count(b)
            step = -(-pages // min(pages, -(-wanted // n))) if pages else 1
            for first in range(0, max(pages, 1), step):
                end = min(pages, first + step)
                window = None if (first, end) == (0, pages) or not pages else (first, end)
                out.append(replace(piece, blocklets=(b,), pages=window))
        return out


def _blocklet_groups(piece: pruning.Piece, blocklets: tuple[int, ...], groups: int) -> list[pruning.Piece]:
    per = -(-len(blocklets) // groups)
    return [replace(piece, blocklets=tuple(blocklets[i : i + per])) for i in range(0, len(blocklets), per)]


def read_sizes(source: Snapshot, columns: list[str] | None) -> tuple[dict[str, int], dict[str, int]]:
    """(each file's stored bytes, the bytes of it a read of ``columns`` decodes): a columnar file's share of
    the row width (a partitioned table's many files, read for a column or two, pack into a few tasks rather
    than one task each); an external file counts whole."""
    share = column_share(source.schema, columns)
    stored = {path: _stored_size(source, path) for path, _seg in source.files}
    return stored, {path: size if path in source.external else int(size * share) for path, size in stored.items()}


def split_for_cores(storage: Storage, pieces: list[pruning.Piece], sizes: dict[str, int]) -> list[pruning.Piece]:
    """``pieces`` with large files split as Spark splits files: by the bytes per core, at most SPLIT_BYTES (a
    narrow read of one big file still keeps every core busy)."""
    total = sum(sizes.get(piece.path, 0) for piece in pieces)
    split = min(SPLIT_BYTES, max(OPEN_COST, total // planning_cores()))
    return [p for piece in pieces for p in _split_piece(storage, piece, sizes.get(piece.path, 0), split)]
