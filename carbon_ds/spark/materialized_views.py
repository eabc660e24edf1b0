"""CREATE / REFRESH / SHOW / DROP MATERIALIZED VIEW on Spark (carbon_ds.sql and spark.sql with the extension).

The view is a managed carbondata table named like the view, in the view's database folder of the warehouse
(where CarbonData keeps its views' tables too), listed in the session's catalog like any carbondata table
so every reader reads it by name. Building and refreshing are carbon_ds.table.ops.views's, in this process:
no Spark job. See docs/materialized-views.md.
"""

from __future__ import annotations

import os
from typing import Any

from pyspark.sql.types import StringType, StructField, StructType

from carbon_ds.ddl.materialized_views import (
    CreateMaterializedView,
    DropMaterializedView,
    RefreshMaterializedView,
    ShowMaterializedViews,
    view_query,
)
from carbon_ds.ddl.statement_parser import TableName, table_name
from carbon_ds.errors import CarbonTableError
from carbon_ds.fs import Storage
from carbon_ds.spark import catalog
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.ops import segments as segment_ops
from carbon_ds.table.ops import views

__all__ = ["HANDLERS", "OUTPUTS"]

SHOW_COLUMNS = ["Name", "Main Table", "Status", "Refresh Mode", "Segments Covered", "Reason"]
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
    views.create_view(path, f"{db}.{stmt.name.lower()}", TableHandle.open(main.path), f"{main.db}.{main.name}",
                      stmt.query, stmt.refresh_mode, zone)
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
    done = views.refresh_view(entry.path)
    rows = "" if done.rows < 0 else str(done.rows)
    return spark.createDataFrame([(done.kind, ",".join(done.segments), rows)], OUTPUTS[RefreshMaterializedView])


def _row(path: str) -> tuple[str, ...]:
    defn = views.definition(path)
    try:
        state = views.view_status(path)
        status, reason = state.status, state.reason
    except Exception as exc:  # noqa: BLE001 - a view whose main table went away is shown, as stale
        status, reason = "stale", str(exc)
    return (defn.name, defn.main_table, status, defn.refresh_mode, ",".join(defn.covered_ids()), reason)


def _database_views(spark: Any, db: str) -> list[str]:
    folder = os.path.dirname(catalog.default_location(spark, db, "x"))
    storage, base = Storage.for_path(folder)
    if not storage.is_dir(base):
        return []
    return [d for d in sorted(storage.list_dirs(base)) if TableHandle.exists(d) and views.is_view(d)]


def _show(spark: Any, stmt: ShowMaterializedViews, _text: str):
    if stmt.table is not None:
        main = catalog.ensure(spark, TableName(stmt.db, stmt.table))
        paths = [p for p in views.linked_views(TableHandle.open(main.path)) if TableHandle.exists(p)]
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


HANDLERS: dict[type, Any] = {
    CreateMaterializedView: _create,
    RefreshMaterializedView: _refresh,
    ShowMaterializedViews: _show,
    DropMaterializedView: _drop,
}
