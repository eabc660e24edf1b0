"""The fresh materialized views of a table, for the Spark extension's query rewrite (jvm/src ViewRewrite).

The extension finds an Aggregate over a carbondata relation whose table links views
(``Metadata/mv_links.json``) and asks here, through a schema call with option ``carbon_ds.mv_rewrite``,
which of them may answer it. The answer lists each view of this very table (views.views_of: not of a copy
of its folder) that is ``enabled`` now (views.view_status: the same fingerprint check SHOW MATERIALIZED
VIEWS reports, so a stale view is never offered) and whose WHERE, if it has one, is a conjunction of plain
conditions that mean the same in carbon-ds's filter and in Spark (``where``: column, operator, values; see
``_where``), which the extension compares with the query's conjuncts. For each: its folder, the segment
whose freshness was checked (the extension reads exactly that segment), its time zone, its Spark schema,
its grouping columns and its aggregates (columns named ``"i:column"``, i the view's table: 0 the main table,
i the i-th dimension table of a join), its join keys as pairs of such columns, and ``tables``: for each of the
view's tables, the index of the query's relation reading it among the request's ``tables`` (their paths),
or null when none does. The JVM side decides whether the query's shape is one the view
gives. Any failure answers nothing for that view: the query then reads the main table.

A small view (at most LOCAL_MAX_ROWS rows and the request's ``localBytes`` stored bytes, the session's
``carbon_ds.sql.localRelationBytes``) also comes with its rows (``arrow``: the segment just checked, read
here, so the rows are exactly those whose freshness was checked): the JVM plans them as a local scan
(jvm/src ViewRows), so a query it answers runs no Python task. A larger view is read by Spark's Python
tasks, as any carbondata relation.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from carbon_ds.errors import CarbonError
from carbon_ds.expressions.filter_parser import parse
from carbon_ds.expressions.tree import And, Compare, Expr, In, IsNull, NotNull
from carbon_ds.fs import Storage
from carbon_ds.spark.arrow_schema import arrow_schema
from carbon_ds.spark.bridge.protocol import (
    Condition,
    JoinKey,
    View,
    ViewAggregate,
    ViewGroup,
    ViewsAnswer,
    ViewsRequest,
)
from carbon_ds.spark.bridge.read_plans import ipc_base64
from carbon_ds.spark.local import LOCAL_MAX_ROWS
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.ops import views
from carbon_ds.table.read.planned_reads import scan_estimate
from carbon_ds.table.read.scan import Scan

__all__ = ["fresh_views"]


_OPS = {"=": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _conjuncts(e: Expr) -> list[Expr]:
    return [*_conjuncts(e.left), *_conjuncts(e.right)] if isinstance(e, And) else [e]


def _plain_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _where(text: str, schema: pa.Schema) -> tuple[Condition, ...] | None:
    """The view's WHERE as conjuncts the extension can compare with Spark's, or None when some conjunct is not
    one whose meaning is surely the same in both: ``IS [NOT] NULL`` of any column; ``= != < <= > >=`` and
    ``IN`` of an integer column with integer literals; ``=``, ``!=`` and ``IN`` of a string column with
    string literals (no ordering of strings, no temporal or floating literals: their parsing and coercion
    differ between the two)."""
    types = {n.lower(): schema.field(n).type for n in schema.names}
    out = []
    for c in _conjuncts(parse(text)):
        column = getattr(c, "column", "").lower()
        t = types.get(column)
        if t is None:
            return None
        if isinstance(c, IsNull | NotNull):
            out.append(Condition(column=column, op="is null" if isinstance(c, IsNull) else "is not null", values=()))
            continue
        values = [c.value] if isinstance(c, Compare) else list(c.values) if isinstance(c, In) else None
        op = _OPS.get(c.op) if isinstance(c, Compare) else "in" if isinstance(c, In) else None
        if values is None or op is None or not values:
            return None
        if pa.types.is_integer(t) and all(_plain_int(v) for v in values):
            pass
        elif pa.types.is_string(t) and op in ("=", "!=", "in") and all(isinstance(v, str) for v in values):
            pass
        else:
            return None
        out.append(Condition(column=column, op=op, values=tuple(values)))
    return tuple(out)


def _real(path: str) -> str | None:
    try:
        storage, folder = Storage.for_path(path)
        return storage.uri(storage.real_path(folder))
    except (CarbonError, OSError, ValueError):
        return None


def _rows(path: str, segment: str, schema: StructType, limit: int) -> str | None:
    """The view's rows of ``segment`` as Spark reads ``schema`` (Arrow IPC, base64), or None when the view
    is over LOCAL_MAX_ROWS rows (past which Spark's shipping of local rows inside its tasks costs more than a
    Python task: carbon_ds.spark.local) or ``limit`` stored bytes, or ``limit`` is 0 (off)."""
    if limit <= 0:
        return None
    stored, rows = scan_estimate(path, None, segment)
    if rows is None or rows > LOCAL_MAX_ROWS or stored > limit:
        return None
    table = Scan(path, columns=schema.names, segments=segment).to_arrow()
    try:
        return ipc_base64(table.cast(arrow_schema(schema)))
    except pa.ArrowException:
        return None  # a type Spark's Arrow conversion does not take here: Spark's tasks read the view


def _describe(path: str, asked: list[str | None], local_bytes: int = 0) -> View | None:
    defn = views.definition(path)
    vq = defn.parsed
    if defn.view_segment is None:
        return None
    where = None
    if vq.where is not None:
        where = _where(vq.where, TableHandle.open(defn.main_path).schema)
        if where is None:
            return None
    if views.view_status(path, defn).status != "enabled":
        return None
    schema = from_arrow_schema(TableHandle.open(path).schema, prefer_timestamp_ntz=False)
    tables = []
    for table in [defn.main_path, *(d["path"] for d in defn.dimensions)]:
        real = _real(table)
        tables.append(asked.index(real) if real is not None and real in asked else None)

    def key(column: str) -> str:
        i, name = vq.locate(column)
        return f"{i}:{name.lower()}"

    return View(
        arrow=_rows(path, defn.view_segment, schema, local_bytes),
        path=path,
        name=defn.name,
        segment=defn.view_segment,
        where=where,
        zone=defn.time_zone,
        schema=schema.jsonValue(),
        tables=tuple(tables),
        keys=tuple(JoinKey(f"0:{fk.lower()}", f"{i}:{dk.lower()}") for i, j in enumerate(vq.joins, 1) for fk, dk in j.keys),
        groups=tuple(ViewGroup(name=g.name, column=key(g.column), granularity=g.granularity) for g in vq.groups),
        aggregates=tuple(ViewAggregate(name=a.name, func=a.func, column=None if a.column is None else key(a.column),
                                       sum=a.name + views.AVG_SUM if a.func == "avg" else None,
                                       count=a.name + views.AVG_COUNT if a.func == "avg" else None)
                         for a in vq.aggregates),
    )


def fresh_views(main: TableHandle | None, request: ViewsRequest | None = None) -> ViewsAnswer:
    """The views of ``main`` (as their main table) a query may read instead of it now (see the module's
    docstring); ``request.tables``: the paths of the tables the query reads (default, or none: ``main``
    alone), ``request.local_bytes``: the largest view (stored bytes) answered with its rows (default 0: none)."""
    if main is None:
        return ViewsAnswer(views=())
    out = []
    try:
        paths = views.views_of(main, as_main=True)
        asked = [_real(p) if isinstance(p, str) else None for p in (request.tables if request else ()) or [main.uri]]
        local_bytes = request.local_bytes if request else 0
    except (CarbonError, OSError, ValueError, TypeError):
        return ViewsAnswer(views=())
    for path in paths:
        try:
            described = _describe(path, asked, local_bytes)
        except (CarbonError, OSError, ValueError):
            continue  # a view that cannot be read answers nothing
        if described is not None:
            out.append(described)
    return ViewsAnswer(views=tuple(out))
