"""CREATE / REFRESH / SHOW / DROP MATERIALIZED VIEW on Spark (carbon_ds.sql and spark.sql with the extension).

The view is a managed carbondata table named like the view, in the view's database folder of the warehouse
(where CarbonData keeps its views' tables too), listed in the session's catalog like any carbondata table
so every reader reads it by name. Building and refreshing are carbon_ds.table.ops.views's, in this process:
no Spark job. See docs/materialized-views.md.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StringType, StructField, StructType

from carbon_ds.ddl.materialized_views import (
    CreateMaterializedView,
    DropMaterializedView,
    RefreshMaterializedView,
    ShowMaterializedViews,
    ViewQuery,
    view_query,
)
from carbon_ds.ddl.statement_parser import TableName, table_name
from carbon_ds.errors import CarbonError, CarbonTableError
from carbon_ds.fs import Storage
from carbon_ds.names import CONF_MV_REWRITE
from carbon_ds.spark.arrow_schema import arrow_schema
from carbon_ds.spark.local import LOCAL_MAX_ROWS, arrow_frame, local_limit
from carbon_ds.spark.statements import catalog
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.options import parse_bool
from carbon_ds.table.ops import views
from carbon_ds.table.ops.segments import manage as segment_ops
from carbon_ds.table.read.planned_reads import scan_estimate
from carbon_ds.table.read.scan import Scan

__all__ = ["HANDLERS", "OUTPUTS", "answer_from_view", "drop_views_of"]

SHOW_COLUMNS = ["Name", "Main Table", "Status", "Refresh Mode", "Segments Covered", "Reason", "Dimension Tables"]
REFRESH_COLUMNS = ["Refresh", "Segments Aggregated", "Rows"]
OUTPUTS: dict[type, StructType] = {
    CreateMaterializedView: StructType([]),
    DropMaterializedView: StructType([]),
    RefreshMaterializedView: StructType([StructField(c, StringType(), True) for c in REFRESH_COLUMNS]),
    ShowMaterializedViews: StructType([StructField(c, StringType(), True) for c in SHOW_COLUMNS]),
}


def _empty(spark: Any):
    return spark.createDataFrame([], StructType([]))


def _view_entry(spark: Any, db: str | None, name: str, statement: str) -> catalog.Entry | None:
    entry = catalog.lookup(spark, TableName(db, name))
    if entry is not None and not views.is_view(entry.path):
        raise CarbonTableError(f"{statement}: {entry.db}.{entry.name} is a table, not a materialized view "
                               f"(folder {entry.path})")
    return entry


def _create(spark: Any, stmt: CreateMaterializedView, _text: str):
    target = TableName(stmt.db, stmt.name)
    catalog.check_name(target)
    db = (stmt.db or catalog.current_db(spark)).lower()
    vq = view_query(stmt.query)  # the shape first: a refused query names what is not supported
    main = catalog.lookup(spark, table_name(vq.table))
    if main is None:
        raise CarbonTableError(f"CREATE MATERIALIZED VIEW {db}.{stmt.name}: main table {vq.table} is not a "
                               "carbondata table of this session")
    if views.is_view(main.path):
        raise CarbonTableError(f"CREATE MATERIALIZED VIEW {db}.{stmt.name}: {vq.table} is itself a materialized "
                               "view; define the view over its main table")
    if catalog.lookup(spark, target) is not None:
        if stmt.if_not_exists:
            return _empty(spark)
        raise CarbonTableError(f"CREATE MATERIALIZED VIEW: {db}.{stmt.name} already exists")
    try:
        catalog.check_free(spark, target)
    except CarbonTableError:
        if stmt.if_not_exists:
            return _empty(spark)
        raise
    path = catalog.default_location(spark, db, stmt.name)
    if TableHandle.exists(path) or os.path.exists(path):
        raise CarbonTableError(f"CREATE MATERIALIZED VIEW {db}.{stmt.name}: its folder {path} already exists")
    zone = spark.conf.get("spark.sql.session.timeZone", None) or "UTC"
    dims = []
    for join in vq.joins:
        dim = catalog.lookup(spark, table_name(join.table))
        if dim is None or views.is_view(dim.path):
            raise CarbonTableError(f"CREATE MATERIALIZED VIEW {db}.{stmt.name}: dimension table {join.table} is not "
                                   "a carbondata table of this session" if dim is None else
                                   f"CREATE MATERIALIZED VIEW {db}.{stmt.name}: {join.table} is a materialized view; "
                                   "join its main table")
        if catalog.real_path(dim.path) in {catalog.real_path(p) for p in [main.path, *(d.uri for _, d in dims)]}:
            raise CarbonTableError(f"CREATE MATERIALIZED VIEW {db}.{stmt.name}: table {join.table} is joined twice; "
                                   "a view joins each table once")
        dims.append((f"{dim.db}.{dim.name}", TableHandle.open(dim.path)))
    views.create_view(path, f"{db}.{stmt.name.lower()}", TableHandle.open(main.path), f"{main.db}.{main.name}",
                      stmt.query, stmt.refresh_mode, zone, dims)
    entry = catalog.Entry(db, stmt.name.lower(), path, False)
    try:
        if catalog.in_spark_catalog(spark):
            catalog.catalog_create(spark, entry, TableHandle.open(path), managed=True)
        else:
            catalog.publish(spark, catalog.register(spark, db, stmt.name, path))
    except BaseException:
        views.drop_view(path)
        segment_ops.drop_table_files(TableHandle.open(path))
        raise
    return _empty(spark)


def _refresh(spark: Any, stmt: RefreshMaterializedView, _text: str):
    entry = _view_entry(spark, stmt.db, stmt.name, "REFRESH MATERIALIZED VIEW")
    if entry is None:
        raise CarbonTableError(f"REFRESH MATERIALIZED VIEW: no materialized view {TableName(stmt.db, stmt.name)}")
    done = views.refresh_view(entry.path, retention_days=spark.conf.get("carbon.trash.retention.days", None))
    rows = "" if done.rows < 0 else str(done.rows)
    return spark.createDataFrame([(done.kind, ",".join(done.segments), rows)], OUTPUTS[RefreshMaterializedView])


def _row(path: str) -> tuple[str, ...]:
    defn = views.definition(path)
    try:
        state = views.view_status(path)
        status, reason = state.status, state.reason
    except Exception as exc:  # noqa: BLE001 - a view whose main table went away is shown, as stale
        status, reason = "stale", str(exc)
    return (defn.name, defn.main_table, status, defn.refresh_mode, ",".join(defn.covered_ids()), reason,
            ",".join(d["table"] for d in defn.dimensions))


def _database_views(spark: Any, db: str) -> list[str]:
    folder = os.path.dirname(catalog.default_location(spark, db, "x"))
    storage, base = Storage.for_path(folder)
    if not storage.is_dir(base):
        return []
    return [d for d in sorted(storage.list_dirs(base)) if TableHandle.exists(d) and views.is_view(d)]


def _show(spark: Any, stmt: ShowMaterializedViews, _text: str):
    if stmt.table is not None:
        main = catalog.ensure(spark, TableName(stmt.db, stmt.table))
        paths = views.views_of(TableHandle.open(main.path))
    else:
        paths = _database_views(spark, catalog.current_db(spark))
    return spark.createDataFrame([_row(p) for p in paths], OUTPUTS[ShowMaterializedViews])


def _drop(spark: Any, stmt: DropMaterializedView, _text: str):
    entry = _view_entry(spark, stmt.db, stmt.name, "DROP MATERIALIZED VIEW")
    if entry is None:
        if stmt.if_exists:
            return _empty(spark)
        raise CarbonTableError(f"DROP MATERIALIZED VIEW: no materialized view {TableName(stmt.db, stmt.name)}")
    views.drop_view(entry.path)
    table = TableHandle.open(entry.path)
    catalog.catalog_drop(spark, entry)  # Spark deletes a managed table's folder itself
    catalog.drop_view(spark, entry.name)
    catalog.unregister(spark, entry.db, entry.name)
    if TableHandle.exists(entry.path):
        segment_ops.drop_table_files(table)
    return _empty(spark)


def drop_views_of(spark: Any, main_path: str) -> list[str]:
    """DROP TABLE of a main table drops its materialized views first, as CarbonData's DROP TABLE does (a view
    without its main table could never be refreshed or used); the names of the views dropped."""
    dropped = []
    for path in views.views_of(TableHandle.open(main_path)):
        name = views.definition(path).name
        db, _, short = name.partition(".")
        entry = catalog.lookup(spark, TableName(db, short))
        if entry is not None and catalog.real_path(entry.path) == catalog.real_path(path):
            _drop(spark, DropMaterializedView(db, short, True), "")
        else:  # not in this session's catalog: its files and its link still go
            views.drop_view(path)
            segment_ops.drop_table_files(TableHandle.open(path))
        dropped.append(name)
    return dropped


# ------------------------------------------------------------------------------------------ answering queries
def _spark_name(a_func: str, column: str | None) -> str:
    """The column name Spark gives an unaliased aggregate (``sum(speed)``, ``count(1)`` for ``count(*)``)."""
    return "count(1)" if column is None else f"{a_func}({column})"


def _groups_key(vq: ViewQuery) -> set[tuple[str, str | None]]:
    return {(g.column.lower(), g.granularity) for g in vq.groups}


def _same_filter(a: str | None, b: str | None) -> bool:
    return " ".join((a or "").split()).lower() == " ".join((b or "").split()).lower()


def _items(vq: ViewQuery, view: ViewQuery) -> list[tuple[str, str]] | None:
    """(view column, name shown) for each of ``vq``'s columns, or None when ``view`` cannot give them all."""
    if _groups_key(vq) != _groups_key(view) or not _same_filter(vq.where, view.where):
        return None
    view_groups = {(g.column.lower(), g.granularity): g.name for g in view.groups}
    view_aggs = {(a.func, (a.column or "").lower()): a.name for a in view.aggregates}
    items = []
    by_group = {g.name: g for g in vq.groups}
    by_agg = {a.name: a for a in vq.aggregates}
    for name in vq.select_order:
        if name in by_group:
            g = by_group[name]
            source = view_groups[(g.column.lower(), g.granularity)]
            shown = name if name in vq.aliased or g.granularity else g.column
        else:
            a = by_agg[name]
            source = view_aggs.get((a.func, (a.column or "").lower()))
            if source is None:
                return None
            shown = name if name in vq.aliased else _spark_name(a.func, a.column)
        items.append((source, shown))
    return items


def _pinned(spark: Any, path: str, segment: str, items: list[tuple[str, str]], alias: str):
    """The view's rows of ``segment`` (the one whose freshness was checked) read here into a local relation,
    so a refresh or a load landing before the query runs cannot change what it answers; None when that
    segment has been replaced since (the caller asks the main table). ``False``: too big for the driver."""
    limit = local_limit(spark)
    stored, rows = scan_estimate(path, None, segment)
    if limit <= 0 or rows is None or rows > LOCAL_MAX_ROWS or stored > limit:
        return False
    try:
        table = Scan(path, columns=list(dict.fromkeys(s for s, _ in items)), segments=segment).to_arrow()
    except (CarbonError, FileNotFoundError):
        return None  # replaced (and cleaned) since the check
    table = pa.table([table[s] for s, _ in items], names=[shown for _, shown in items])
    schema = from_arrow_schema(table.schema)
    return arrow_frame(spark, table.cast(arrow_schema(schema)), schema).alias(alias)


def answer_from_view(spark: Any, text: str):
    """``text`` answered from an enabled materialized view of its table, or None (run it as it is).

    Only the exact shape of a view's query is answered: the same table, the same grouping columns and
    timeseries (in the view's time zone, which must be the session's), the same WHERE, and a subset of the
    view's aggregates. The view's rows are those of the segment whose freshness was checked, read now (a
    view past ``carbon_ds.sql.localRelationBytes`` or 100,000 rows is read by Spark when the query runs).
    ``carbon_ds.sql.materializedViewRewrite=false`` turns it off."""
    if not parse_bool(spark.conf.get(CONF_MV_REWRITE, "true"), f"spark conf {CONF_MV_REWRITE}", True):
        return None
    head = text.lstrip()[:6].upper()
    if head != "SELECT":
        return None
    try:
        vq = view_query(text)
    except CarbonError:
        return None  # not a shape a view can answer
    main = catalog.lookup(spark, table_name(vq.table))
    if main is None or not TableHandle.exists(main.path):
        return None
    zone = spark.conf.get("spark.sql.session.timeZone", None) or "UTC"
    for path in views.views_of(TableHandle.open(main.path)):
        try:
            defn = views.definition(path)
            if defn.dimensions or vq.joins:
                continue  # joins are answered by the extension's rule (view_rewrite), not by their text
            if any(g.granularity for g in vq.groups) and defn.time_zone != zone:
                continue
            items = _items(vq, defn.parsed)
            name = _view_table(spark, path, defn)
            if items is None or defn.view_segment is None or views.view_status(path, defn).status != "enabled":
                continue
            answer = _pinned(spark, path, defn.view_segment, items, defn.name.partition(".")[2])
        except CarbonError:
            continue  # a view that cannot be read answers nothing
        if answer is None:
            continue
        if answer is False:
            shown = ", ".join(f"{catalog.quote(s)} AS {catalog.quote(n)}" for s, n in items)
            return spark.sql(f"SELECT {shown} FROM {name}")
        return answer
    return None


def _view_table(spark: Any, path: str, defn: views.ViewDefinition) -> str:
    db, _, name = defn.name.partition(".")
    entry = catalog.lookup(spark, TableName(db, name))
    if entry is None or catalog.real_path(entry.path) != catalog.real_path(path):
        raise CarbonTableError(f"materialized view {defn.name} is not in this session's catalog")
    return f"{catalog.quote(db)}.{catalog.quote(name)}"


HANDLERS: dict[type, Any] = {
    CreateMaterializedView: _create,
    RefreshMaterializedView: _refresh,
    ShowMaterializedViews: _show,
    DropMaterializedView: _drop,
}
