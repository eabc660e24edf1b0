"""Reads that need only a HASH / RANGE / LIST table's partition column, answered from metadata.

Every data file of such a table holds one partition, named by the task number in its file name, and NULLs
always go to the DEFAULT partition (index 0). So in any other partition the column has no NULL, and it holds
one value when the partition can hold only one (a RANGE one integer wide, a LIST of one value) or when the
index's min and max of every blocklet read are that one value. A read of that column alone is then a list of
(value, rows) from the index's row counts less the committed deleted rows: no data page is opened. Spark's
Parquet reads a partition column from folder names the same way (``SELECT hour, count(*) GROUP BY hour``).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from carbon_ds.expressions import AlwaysTrue, Expr
from carbon_ds.expressions.bind import filter_table
from carbon_ds.format.thrift.structs import PartitionType
from carbon_ds.fs import basename
from carbon_ds.table.meta.files.naming import COLUMNAR
from carbon_ds.table.partitions.id_spec import Layout, partition_id_of
from carbon_ds.table.partitions.partitioning import IdPartitioning
from carbon_ds.table.read import pruning
from carbon_ds.table.read.planned_reads import plan
from carbon_ds.table.read.snapshot import Snapshot

MAX_VALUES = 256  # more distinct values than this: read the column (Spark's answer is a CASE over them)


def partition_value_rows(source: Snapshot, names: list[str] | None, expr: Expr) -> list[tuple[Any, int]] | None:
    """[(value, rows)] of the partition column where ``expr`` (on that column only) is TRUE, sorted by value,
    when ``names`` is exactly the partition column and every file read holds one known value of it; None
    when the data must be read."""
    part = source.table.partitioning if source.table is not None else None
    if not isinstance(part, IdPartitioning) or source.external or names is None or len(names) != 1:
        return None
    layout = part.layout
    column = layout.column.lower()
    if names[0].lower() != column or not {c.lower() for c in expr.columns()} <= {column}:
        return None
    p = plan(source, expr)
    columnar = {f.path for f in source.data_files if f.file_format == COLUMNAR}  # not streaming row files
    rows: dict[Any, int] = {}
    for piece in p.pieces:
        value = _piece_value(layout, p, piece)
        if value is None or piece.rows is None or piece.path not in columnar:
            return None
        deleted = piece.deletes.count if piece.deletes is not None else 0
        if deleted and piece.blocklets is not None:
            return None  # deletes are counted per file; a pruned file's share is not known
        rows[value] = rows.get(value, 0) + piece.rows - deleted
        if len(rows) > MAX_VALUES:
            return None
    if not isinstance(expr, AlwaysTrue) and rows:
        field = source.schema.field(names[0])
        values = pa.table({field.name: pa.array(list(rows), field.type)})
        kept = set(filter_table(values, expr).column(0).to_pylist())
        rows = {v: n for v, n in rows.items() if v in kept}
    return sorted(((v, n) for v, n in rows.items() if n > 0), key=lambda vn: vn[0])


def _piece_value(layout: Layout, p: pruning.Plan, piece: pruning.Piece) -> Any:
    """The one value of the partition column in ``piece``, or None when it may hold several or NULL."""
    pid = partition_id_of(basename(piece.path))
    if pid is None or pid not in layout.ids:
        return None
    index = layout.ids.index(pid)
    if index == 0:
        return None  # DEFAULT: NULLs and out-of-range values
    if layout.kind == PartitionType.LIST and len(layout.groups[index - 1]) == 1:
        return layout.groups[index - 1][0]
    if (layout.kind == PartitionType.RANGE and pa.types.is_integer(layout.type) and index >= 2
            and layout.bounds[index - 1] - layout.bounds[index - 2] == 1):
        return layout.bounds[index - 2]
    entry = p.entries.get(piece.path)
    if entry is None or not _exact_stats(layout.type):
        return None
    units = [entry.blocklets[i] for i in (piece.blocklets if piece.blocklets is not None
                                          else range(len(entry.blocklets)))]
    found = {(s.min, s.max) if s is not None else None
             for s in (u.get(layout.column.lower()) for u in units)}
    if len(found) != 1:
        return None
    (pair,) = found
    return pair[0] if pair is not None and pair[0] is not None and pair[0] == pair[1] else None


def _exact_stats(t: pa.DataType) -> bool:
    """Types whose index min/max are whole values with one equality (not strings, which CarbonData may
    truncate, nor floats, with NaN and -0.0)."""
    return (pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t)
            or pa.types.is_decimal(t) or pa.types.is_boolean(t))
