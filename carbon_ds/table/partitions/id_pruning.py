"""Pruning by HASH / RANGE / LIST partition id before any file is opened: a filter on the partition column
selects partition indexes (``=, <, <=, >, >=, IN, NOT IN`` and AND / OR of them); data files whose name
carries another partition id are skipped. Blocklet min/max pruning then runs on what is left."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from carbon_ds.expressions import (
    Compare,
    Expr,
    ExprVisitor,
    In,
    IsNull,
    NotIn,
    NotNull,
    Predicate,
    StartsWith,
    push_not,
    visit,
)
from carbon_ds.format.thrift.structs import PartitionType
from carbon_ds.fs import basename
from carbon_ds.table.partitions.id_spec import Layout, partition_id_of

Indexes = frozenset[int]


def _coerce(v, sample):
    """The filter literal in the type of the partition values (a date literal against timestamps, ...)."""
    if isinstance(sample, dt.datetime) and isinstance(v, dt.date) and not isinstance(v, dt.datetime):
        return dt.datetime(v.year, v.month, v.day)
    if isinstance(sample, dt.datetime) and isinstance(v, dt.datetime) and (v.tzinfo is None) != (sample.tzinfo is None):
        return v.replace(tzinfo=sample.tzinfo)
    if isinstance(sample, dt.date) and not isinstance(sample, dt.datetime) and isinstance(v, dt.datetime):
        return v.date() if v == dt.datetime(v.year, v.month, v.day, tzinfo=v.tzinfo) else None
    return v


class _Selector(ExprVisitor[Indexes]):
    """Each node -> the partition indexes that may hold a row where it is TRUE (a superset, never less)."""

    def __init__(self, layout: Layout):
        self.layout = layout
        self.col = layout.column.lower()
        n = len(layout.ids)
        self.all: Indexes = frozenset(range(n))

    def _mine(self, column: str) -> bool:
        return column.lower() == self.col

    def _value_indexes(self, v) -> Indexes:
        """Where a row with value ``v`` lives (one index)."""
        lay = self.layout
        sample = (lay.bounds or [x for g in lay.groups for x in g] or [None])[0]
        v = _coerce(v, sample) if sample is not None else v
        if v is None:
            return frozenset()
        if lay.kind == PartitionType.HASH:
            try:
                return frozenset(int(i) for i in lay.indexes(_as_array(v, lay)))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                return self.all
        try:
            if lay.kind == PartitionType.RANGE:
                k = sum(1 for b in lay.bounds if v >= b)
                return frozenset([k + 1 if k < len(lay.bounds) else 0])
            for i, g in enumerate(lay.groups):
                if v in g:
                    return frozenset([i + 1])
            return frozenset([0])
        except TypeError:
            return self.all

    def _range_indexes(self, op: str, v) -> Indexes:
        lay = self.layout
        if lay.kind == PartitionType.HASH:
            return self.all
        sample = (lay.bounds or [x for g in lay.groups for x in g] or [None])[0]
        v = _coerce(v, sample) if sample is not None else v
        if v is None:
            return frozenset()
        try:
            if lay.kind == PartitionType.LIST:
                test = {"<": lambda x: x < v, "<=": lambda x: x <= v, ">": lambda x: x > v, ">=": lambda x: x >= v}[op]
                out = {0}  # unlisted values may match any range
                out |= {i + 1 for i, g in enumerate(lay.groups) if any(test(x) for x in g)}
                return frozenset(out)
            out = set()
            bounds = lay.bounds
            for i in range(1, len(bounds) + 1):
                lo = bounds[i - 2] if i >= 2 else None  # [lo, hi)
                hi = bounds[i - 1]
                if op == "<" and (lo is None or lo < v) or op == "<=" and (lo is None or lo <= v):
                    out.add(i)
                if op in (">", ">=") and hi > v:
                    out.add(i)
            # DEFAULT: [last bound, +inf)
            if op in (">", ">=") or bounds[-1] < v or (op == "<=" and bounds[-1] <= v):
                out.add(0)
            return frozenset(out)
        except TypeError:
            return self.all

    def visit_true(self) -> Indexes:
        return self.all

    def visit_false(self) -> Indexes:
        return frozenset()

    def visit_and(self, left: Indexes, right: Indexes) -> Indexes:
        return left & right

    def visit_or(self, left: Indexes, right: Indexes) -> Indexes:
        return left | right

    def visit_not(self, child: Indexes) -> Indexes:
        return self.all  # what is left after push_not (NOT LIKE) prunes nothing

    def visit_compare(self, node: Compare) -> Indexes:
        if not self._mine(node.column):
            return self.all
        if node.op in ("=", "=="):
            return self._value_indexes(node.value)
        if node.op in ("<", "<=", ">", ">="):
            return self._range_indexes(node.op, node.value)
        return self.all

    def visit_in(self, node: In) -> Indexes:
        if not self._mine(node.column):
            return self.all
        out: set[int] = set()
        for v in node.values:
            out |= self._value_indexes(v)
        return frozenset(out)

    def visit_not_in(self, node: NotIn) -> Indexes:
        lay = self.layout
        if not self._mine(node.column) or lay.kind != PartitionType.LIST:
            return self.all
        if any(v is None for v in node.values):
            return frozenset()  # x NOT IN (..., NULL) is never TRUE
        excluded = set(node.values)
        try:
            return frozenset({0} | {i + 1 for i, g in enumerate(lay.groups) if not set(g) <= excluded})
        except TypeError:
            return self.all

    def visit_is_null(self, node: IsNull) -> Indexes:
        if not self._mine(node.column):
            return self.all
        return frozenset([0])  # nulls always go to partition index 0

    def visit_not_null(self, node: NotNull) -> Indexes:
        return self.all

    def visit_starts_with(self, node: StartsWith) -> Indexes:
        return self.all

    def visit_predicate(self, node: Predicate) -> Indexes:
        return self.all  # computed values: partition bounds say nothing about them


def _as_array(v, layout: Layout) -> pa.Array:
    return pa.array([v]).cast(layout.type)


def selected_indexes(layout: Layout, expr: Expr) -> Indexes:
    """The partition indexes ``expr`` may need."""
    return visit(push_not(expr), _Selector(layout))


def selected_ids(layout: Layout, expr: Expr) -> set[int]:
    return {layout.ids[i] for i in selected_indexes(layout, expr)}


def prune_by_id(layout: Layout, files: list[tuple[str, str | None]], expr: Expr
                ) -> tuple[list[tuple[str, str | None]], set[int], set[int]]:
    """(files kept, partition ids read, partition ids skipped). A file whose name carries no id, or an id
    the layout does not know (an ALTER that stopped half way), is always kept."""
    wanted = selected_ids(layout, expr)
    known = set(layout.ids)
    kept = []
    for path, seg in files:
        pid = partition_id_of(basename(path))
        if pid is None or pid not in known or pid in wanted:
            kept.append((path, seg))
    return kept, wanted & known, known - wanted
