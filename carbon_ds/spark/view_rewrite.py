"""The fresh materialized views of a table, for the Spark extension's query rewrite (jvm/src ViewRewrite).

The extension finds an Aggregate over a carbondata relation whose table links views
(``Metadata/mv_links.json``) and asks here, through a schema call with option ``carbon_ds.mv_rewrite``,
which of them may answer it. The answer lists each view of this very table (views.views_of: not of a copy of its folder) that is
``enabled`` now (views.view_status: the
same fingerprint check SHOW MATERIALIZED VIEWS reports, so a stale view is never offered) and has no WHERE
(a view's WHERE is carbon-ds filter text, which the extension cannot compare with Spark's predicates): its
folder, the segment whose freshness was checked (the extension reads exactly that segment), its time zone,
its Spark schema, its grouping columns and its aggregates. The JVM side decides whether the query's shape
is one the view gives. Any failure answers nothing for that view: the query then reads the main table.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.pandas.types import from_arrow_schema

from carbon_ds.errors import CarbonError
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.ops import views

__all__ = ["fresh_views"]


def _describe(path: str) -> dict[str, Any] | None:
    defn = views.definition(path)
    vq = defn.parsed
    if vq.where is not None or defn.view_segment is None:
        return None
    if views.view_status(path, defn).status != "enabled":
        return None
    schema = from_arrow_schema(TableHandle.open(path).schema, prefer_timestamp_ntz=False)
    return {
        "path": path,
        "name": defn.name,
        "segment": defn.view_segment,
        "zone": defn.time_zone,
        "schema": schema.jsonValue(),
        "groups": [{"name": g.name, "column": g.column.lower(), "granularity": g.granularity} for g in vq.groups],
        "aggregates": [{"name": a.name, "func": a.func, "column": None if a.column is None else a.column.lower(),
                        **({"sum": a.name + views.AVG_SUM, "count": a.name + views.AVG_COUNT}
                           if a.func == "avg" else {})}
                       for a in vq.aggregates],
    }


def fresh_views(main: TableHandle | None) -> list[dict[str, Any]]:
    """The views of ``main`` a query may read instead of it now (see the module's docstring)."""
    if main is None:
        return []
    out = []
    try:
        paths = views.views_of(main)
    except (CarbonError, OSError):
        return []
    for path in paths:
        try:
            described = _describe(path)
        except (CarbonError, OSError, ValueError):
            continue  # a view that cannot be read answers nothing
        if described is not None:
            out.append(described)
    return out
