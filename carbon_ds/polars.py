"""Polars over carbon-ds: ``scan_carbondata(path)`` is a ``LazyFrame`` whose projections, predicates and
``n_rows`` go into the scan.

Polars hands the IO source its predicate as a ``polars.Expr``. Its JSON form is translated into our
predicate model (:mod:`carbon_ds.expressions.polars_filter`) to prune segments, files, blocklets and pages
by min/max; Polars' own predicate is then applied to every batch (the scan does not filter the rows by it a
second time), so a predicate (or a part of one) that does not translate costs speed, never rows.
``filter=`` adds a filter of ours (SQL text, tuples or a pyarrow expression) on top.

Needs the ``polars`` extra: ``pip install 'carbon-ds[polars]'``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import pyarrow as pa

from carbon_ds.errors import CarbonDependencyError, CarbonError
from carbon_ds.expressions import Expr, and_
from carbon_ds.expressions.polars_filter import translate_polars_json
from carbon_ds.table.read.pruning import Counts, as_expr
from carbon_ds.table.read.scan import Scan
from carbon_ds.table.read.snapshot import open_table


def _polars():
    try:
        import polars as pl  # optional dependency: imported on use
        from polars.io.plugins import register_io_source
    except ModuleNotFoundError as e:
        raise CarbonDependencyError(
            "carbon_ds.polars needs polars, which is not installed: pip install 'carbon-ds[polars]'") from e
    return pl, register_io_source


@lru_cache(maxsize=64)
def _polars_types(schema: pa.Schema) -> tuple:
    """(name, Polars type) of each column; converting costs about a millisecond, and a table's schema
    rarely changes between frames."""
    pl, _ = _polars()
    return tuple(pl.from_arrow(schema.empty_table()).schema.items())


def pruning_filter(predicate, schema: pa.Schema) -> tuple[Expr, bool] | None:
    """The part of a Polars predicate our scan can prune with, and whether it keeps exactly Polars' rows
    (see :mod:`carbon_ds.expressions.polars_filter`); ``None`` when nothing of it translates."""
    try:
        text = predicate.meta.serialize(format="json")
    except Exception:  # a Polars without the JSON form: no pruning, Polars still filters
        return None
    return translate_polars_json(text, schema)


def _predicate_columns(predicate, names: list[str]) -> list[str] | None:
    """The columns (of ``names``) the predicate reads, None when Polars cannot say."""
    try:
        wanted = set(predicate.meta.root_names())
    except Exception:  # no way to ask
        return None
    return [n for n in names if n in wanted]


def _with_predicate_columns(with_columns: list[str] | None, predicate, names: list[str]) -> list[str] | None:
    """The columns to read: the projection plus those the predicate names (Polars 2 may hand a predicate on
    columns it did not ask for, and filters before projecting)."""
    if with_columns is None or predicate is None:
        return with_columns
    wanted = _predicate_columns(predicate, names)
    if wanted is None:  # read every column, Polars' filter then finds what it names
        return None
    extra = [n for n in wanted if n not in with_columns]
    return with_columns + extra if extra else with_columns


def _matching(pl, batch: pa.RecordBatch, predicate, on: list[str] | None) -> pa.RecordBatch | None:
    """The rows of ``batch`` where Polars' predicate is true, found by Polars on the columns the predicate
    reads (``on``) alone and taken in Arrow: every eager Polars call is a query of its own (a fraction of a
    millisecond), and converting every column before filtering costs more than the filter when few rows
    match (a lookup's page: 32,000 rows in, a few hundred out). None when the predicate reads no column or
    gives a mask of another length: Polars then filters the whole frame."""
    if not on:
        return None
    mask = pl.from_arrow(batch.select(on)).select(predicate).to_series()
    if mask.len() != batch.num_rows:  # an expression of another length (an aggregate): Polars' own way
        return None
    return batch.filter(mask.to_arrow())


def scan_carbondata(path: str | os.PathLike, filter: Any = None, segments: str | list | None = None,
                    use_threads: bool = True, counts: Counts | None = None):
    """A ``polars.LazyFrame`` reading the table (or bare folder) at ``path`` through ``carbon_ds.scan``.

    ``counts``, if given, adds up what every scan the frame starts planned and read (segments, files,
    blocklets, pages, rows), as ``Scan.counts`` does for one scan.
    """
    pl, register_io_source = _polars()
    # the filter (and segments) checked now, not at collect time; a table's schema file is all a frame
    # needs before it is collected (a bare folder's schema comes from its files)
    table = open_table(path) if segments is None else None
    if table is not None:
        schema = table.schema
        expr = as_expr(filter, schema)
    else:
        base = Scan(path, filter=filter, segments=segments)
        schema, expr = base.source.schema, base.expr
        table = base.source.table if base.source.table is not None else path
    polars_schema = pl.Schema(_polars_types(schema))
    # each collect reads the table's segments as they are then, through the schema the frame was made with

    def open_scan(columns: list[str] | None, predicate, limit: int | None, batch_size: int | None
                  ) -> tuple[Scan, bool]:
        """The scan, and whether it filters the rows exactly as Polars' predicate would."""
        args = dict(columns=columns, segments=segments, limit=limit, batch_size=batch_size, use_threads=use_threads)
        got = pruning_filter(predicate, schema) if predicate is not None else None
        if got is not None:
            extra, exact = got
            try:
                if exact:  # the scan's row filter keeps Polars' rows: no Polars call per batch
                    return Scan(table, filter=and_(expr, extra), **args), True
                # Polars' predicate only prunes here: the source filters every batch with it below
                return Scan(table, filter=expr, prune=extra, **args), False
            except CarbonError:  # a literal our model does not take for that column: prune by ours alone
                pass
        return Scan(table, filter=expr, **args), False

    def source(with_columns: list[str] | None, predicate, n_rows: int | None,
               batch_size: int | None) -> Iterator:
        read = _with_predicate_columns(with_columns, predicate, schema.names)
        s, exact = open_scan(read, predicate, n_rows if predicate is None else None, batch_size)
        if counts is not None:
            s.counts = counts  # counted as planned and read: a stream Polars stops early may never be closed
        on = _predicate_columns(predicate, s.schema.names) if predicate is not None and not exact else None
        left = n_rows
        def frame(batch: pa.RecordBatch):
            """The batch's rows Polars' predicate keeps, in the columns Polars asked for."""
            kept = batch if predicate is None or exact else _matching(pl, batch, predicate, on)
            if kept is None:  # Polars filters the whole frame itself
                df = pl.from_arrow(pa.Table.from_batches([batch], schema=s.schema)).filter(predicate)
                return df.select(with_columns) if read != with_columns else df
            if read != with_columns:
                kept = kept.select(with_columns)
            return pl.from_arrow(pa.Table.from_batches([kept], schema=kept.schema))

        for batch in s.to_batches():
            df = frame(batch)
            if left is not None:
                df = df.head(left)
                left -= df.height
            yield df
            if left == 0:
                return

    return register_io_source(source, schema=polars_schema)
