"""Materialized views: a carbondata table holding a main table's GROUP BY aggregates (docs/materialized-views.md).

Files. The view is an ordinary carbondata table; its ``Metadata/mv_definition.json`` keeps the definition
(the SELECT, the main table's folder, the refresh mode, the time zone timeseries truncates in) and what the
rows cover: the view's one readable segment and, for each main-table segment aggregated, a fingerprint (id,
status, last update/delete stamp, segment file, external path). The main table's ``Metadata/mv_links.json``
lists its views' folders, so a load into it finds the views to refresh.

Status is computed, never stored: a view is "enabled" only when its readable segment is the recorded one
and the main table's readable segments are exactly the covered ones with unchanged fingerprints; any other
state (a new load not aggregated yet, a delete, update, merge, overwrite, compaction or segment deletion,
a crash between the view's commit and its record) is "stale".

Refresh. Incremental when the covered segments are unchanged: only the new segments' rows are aggregated
and merged into the existing groups (sum + sum, count + count, min of mins, max of maxes, avg from its kept
sum and count), so the view holds one row per group. Otherwise a full rebuild.

Joins. A view over a fact (main) table inner-joined to dimension tables records each dimension table's
fingerprints too (``dimensions``) and is linked from each, so a load into any of them finds it. New fact
segments are refreshed incrementally (their rows joined with the dimension tables as they are now, then
merged); any change to a dimension table makes the view stale and its next refresh a full rebuild. Either way the view's rows
are replaced in one overwrite load, and then the segment it replaced is cleaned as CLEAN FILES (without
force) cleans it: its files move to the view's ``.Trash/`` (where a read planned before the refresh still
finds them, for the trash retention), its entry moves to ``tablestatus.history``, expired trash runs go. So
the view's tablestatus stays at its current segment plus the invisible entries CLEAN FILES keeps, however
many refreshes run. ``refresh_after_load`` runs after each committed load into a main table
(loads.py, add_segment.py) for its ``on_commit`` views and never raises: a view it cannot refresh stays stale.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import asdict, dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.ddl.materialized_views import ViewQuery, view_query
from carbon_ds.errors import CarbonError, CarbonOptionError, CarbonTableError
from carbon_ds.fs import Storage
from carbon_ds.table.loads.protocol import reserve_load
from carbon_ds.table.meta.files.data_files import is_stream
from carbon_ds.table.meta.handle import TableHandle, resolve_columns
from carbon_ds.table.meta.status.tablestatus import LoadDetail
from carbon_ds.table.ops.segments import manage as segment_ops
from carbon_ds.table.read.scan import Scan

__all__ = ["DEFINITION", "LINKS", "ViewDefinition", "create_view", "definition", "drop_view", "is_view",
           "linked_views", "refresh_after_load", "refresh_view", "view_status", "views_of"]

DEFINITION = "mv_definition.json"
LINKS = "mv_links.json"
WARNED = "mv_refresh_warning.txt"  # the last refresh failure warned about (each stream batch is a load)
AVG_SUM, AVG_COUNT = "__sum", "__count"  # the columns an avg keeps beside it, for merging
LOCK_TIMEOUT_S = 60.0


@dataclass
class ViewDefinition:
    name: str  # db.name
    main_table: str  # db.name of the main table, as shown
    main_path: str
    query: str
    refresh_mode: str  # on_commit | on_manual
    time_zone: str
    view_segment: str | None = None  # the view's readable segment holding the rows covered
    covered: list[list[str]] = field(default_factory=list)  # main-table segment fingerprints
    # a view over a join: each dimension table's {"table": db.name, "path": folder, "covered": fingerprints},
    # in the order of the SELECT's joins
    dimensions: list[dict] = field(default_factory=list)

    @property
    def parsed(self) -> ViewQuery:
        return view_query(self.query)

    def covered_ids(self) -> list[str]:
        return [fp[0] for fp in self.covered]


@dataclass(frozen=True)
class ViewStatus:
    status: str  # enabled | stale
    reason: str  # why stale ("" when enabled)


def _meta(table_path: str, name: str) -> tuple[Storage, str]:
    storage, path = Storage.for_path(table_path)
    return storage, Storage.join(path, "Metadata", name)


def is_view(path: str) -> bool:
    storage, file = _meta(path, DEFINITION)
    return storage.exists(file)


def definition(path: str) -> ViewDefinition:
    storage, file = _meta(path, DEFINITION)
    try:
        doc = json.loads(storage.read_text(file))
        return ViewDefinition(**doc)
    except FileNotFoundError:
        raise CarbonTableError(f"{path} is not a materialized view (no Metadata/{DEFINITION})") from None
    except (ValueError, TypeError) as exc:
        raise CarbonTableError(f"materialized view at {path}: Metadata/{DEFINITION} is unreadable ({exc})") from None


def _save(path: str, defn: ViewDefinition) -> None:
    storage, file = _meta(path, DEFINITION)
    storage.write_atomic(file, json.dumps(asdict(defn), indent=1).encode())


def linked_views(main: TableHandle) -> list[str]:
    """The folders of the views defined over ``main`` (read with the table's own storage and options)."""
    file = Storage.join(main.path, "Metadata", LINKS)
    if not main.storage.exists(file):
        return []
    try:
        views = json.loads(main.storage.read_text(file)).get("views", [])
    except (ValueError, AttributeError) as exc:
        raise CarbonTableError(f"table {main.uri}: Metadata/{LINKS} is unreadable ({exc})") from None
    return [v for v in views if isinstance(v, str)]


def _real(storage: Storage, path: str) -> str:
    return storage.uri(storage.real_path(path))


def _same_folder(path: str, here: str) -> bool:
    storage, folder = Storage.for_path(path)
    return _real(storage, folder) == here


def views_of(main: TableHandle, as_main: bool = False) -> list[str]:
    """The folders of the views that read ``main``: the linked views that exist and whose definition names
    this very folder as their main table or (unless ``as_main``) as one of their dimension tables. A copy of a
    table's folder carries its link file along; the copy is not the views' table (they never cover its rows),
    so its queries, loads and DROP TABLE leave them alone."""
    here = _real(main.storage, main.path)
    out = []
    for path in linked_views(main):
        try:
            if not TableHandle.exists(path) or not is_view(path):
                continue
            defn = definition(path)
            dims = [] if as_main else [d["path"] for d in defn.dimensions]
            if any(_same_folder(p, here) for p in [defn.main_path, *dims]):
                out.append(path)
        except (CarbonError, OSError):
            continue  # a view that cannot be read is no view of this table's
    return out


def _set_links(main: TableHandle, views: list[str]) -> None:
    file = Storage.join(main.path, "Metadata", LINKS)
    if views:
        main.storage.write_atomic(file, json.dumps({"views": views}, indent=1).encode())
    elif main.storage.exists(file):
        main.storage.delete(file)


# ------------------------------------------------------------------------------------------ fingerprints
def _fingerprint(d: LoadDetail) -> list[str]:
    return [d.name, d.status, d.update_delta_end or "", d.segment_file or "", d.path or ""]


def _current(main: TableHandle) -> tuple[list[list[str]], list[str]]:
    """(fingerprints of the readable segments, ids of streaming segments) of one tablestatus read."""
    details = main.load_details()
    streams = [d.name for d in details if is_stream(d) and not d.readable]
    return [_fingerprint(d) for d in details if d.readable], streams


def _view_segments(view: TableHandle) -> list[str]:
    return [d.name for d in view.load_details() if d.readable or is_stream(d)]


def view_status(path: str, defn: ViewDefinition | None = None) -> ViewStatus:
    """Whether the view at ``path`` is fresh; with ``defn`` (read by the caller), whether the rows that
    definition records are (a caller then reads exactly ``defn.view_segment``)."""
    defn = definition(path) if defn is None else defn
    main = TableHandle.open(defn.main_path)
    current, streams = _current(main)
    if streams:
        return ViewStatus("stale", f"main table has streaming segment(s) {', '.join(streams)}, which grow in place")
    if _view_segments(TableHandle.open(path)) != ([defn.view_segment] if defn.view_segment else []):
        return ViewStatus("stale", "the view's rows are not the ones its record covers (refresh interrupted?)")
    for dim in defn.dimensions:
        if not TableHandle.exists(dim["path"]):
            return ViewStatus("stale", f"dimension table {dim['table']} is gone")
        dim_now, dim_streams = _current(TableHandle.open(dim["path"]))
        if dim_streams or dim_now != dim["covered"]:
            return ViewStatus("stale", f"dimension table {dim['table']} changed since the last refresh (a full "
                                       "rebuild is due)")
    covered = {fp[0]: fp for fp in defn.covered}
    now = {fp[0]: fp for fp in current}
    changed = sorted((s for s in covered if now.get(s) != covered[s]), key=_seg_key)
    if changed:
        return ViewStatus("stale", f"main-table segment(s) {', '.join(changed)} changed or went away since the "
                                   "last refresh")
    new = sorted((s for s in now if s not in covered), key=_seg_key)
    if new:
        return ViewStatus("stale", f"main-table segment(s) {', '.join(new)} not aggregated yet")
    return ViewStatus("enabled", "")


def _seg_key(s: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in s.split("."))


# ------------------------------------------------------------------------------------------ aggregation
def _check_columns(vq: ViewQuery, schemas: list[pa.Schema], names: list[str]) -> dict[str, tuple[int, str]]:
    """(table index, the table's spelling) of each column the view reads, by its lower-case spelling in the
    SELECT (names are case-insensitive); ``schemas`` and ``names``: the main table's, then each join's."""
    found: dict[str, tuple[int, str]] = {}
    wanted = [g.column for g in vq.groups] + [a.column for a in vq.aggregates if a.column]
    for c in wanted:
        i, column = vq.locate(c)
        by_lower = {n.lower(): n for n in schemas[i].names}
        if column.lower() not in by_lower:
            raise CarbonOptionError(f"CREATE MATERIALIZED VIEW: column {column!r} is not a column of {names[i]} "
                                    f"(columns: {', '.join(schemas[i].names)})")
        found[c.lower()] = (i, by_lower[column.lower()])

    def type_of(c: str) -> pa.DataType:
        i, column = found[c.lower()]
        return schemas[i].field(column).type

    for g in vq.groups:
        t = type_of(g.column)
        if g.granularity and not (pa.types.is_timestamp(t) or pa.types.is_date(t)):
            raise CarbonOptionError(f"CREATE MATERIALIZED VIEW: timeseries needs a timestamp or date column, "
                                    f"column {g.column!r} of {names[found[g.column.lower()][0]]} is {t}")
        if g.granularity in ("minute", "hour") and pa.types.is_date(t):
            raise CarbonOptionError(f"CREATE MATERIALIZED VIEW: timeseries of date column {g.column!r} takes "
                                    f"'day', 'week', 'month' or 'year', found {g.granularity!r}")
    for a in vq.aggregates:
        if a.func in ("sum", "avg"):
            t = type_of(a.column)
            if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)):
                raise CarbonOptionError(f"CREATE MATERIALIZED VIEW: {a.func}({a.column}) needs a numeric column, "
                                        f"column {a.column!r} of {names[found[a.column.lower()][0]]} is {t}")
    return found


def _key_type(a: pa.DataType, b: pa.DataType, where: str) -> pa.DataType:
    """The type two join keys are compared in (Spark widens integers alike), or CarbonOptionError."""
    if a == b:
        return a
    if pa.types.is_integer(a) and pa.types.is_integer(b):
        return pa.int64()
    if (pa.types.is_string(a) or pa.types.is_large_string(a)) and (pa.types.is_string(b) or pa.types.is_large_string(b)):
        return pa.large_string()
    raise CarbonOptionError(f"CREATE MATERIALIZED VIEW: join keys {where} have types {a} and {b}; a view joins on "
                            "columns of the same type (or two integer or two string columns)")


def _truncate(values: pa.ChunkedArray, granularity: str, time_zone: str) -> pa.ChunkedArray:
    """timeseries(col, granularity): the start of the minute/hour/day/week (Monday)/month/year holding each
    value, in ``time_zone`` for timestamps."""
    if pa.types.is_date(values.type):
        return pc.floor_temporal(values, unit=granularity, week_starts_monday=True)
    unit = values.type.unit
    zoned = values.cast(pa.timestamp(unit, tz=values.type.tz or "UTC")).cast(pa.timestamp(unit, tz=time_zone))
    floored = pc.floor_temporal(zoned, unit=granularity, week_starts_monday=True)
    return floored.cast(pa.timestamp(unit, tz="UTC")).cast(values.type)


def _sum_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_integer(t):
        return pa.int64()
    if pa.types.is_decimal(t):  # Spark's sum of decimal(p, s): decimal(p + 10, s)
        return pa.decimal128(min(38, t.precision + 10), t.scale)
    return pa.float64()


def _empty_main(main: TableHandle, names: list[str]) -> pa.Table:
    return pa.schema([main.schema.field(n) for n in names]).empty_table()


def _read(table: TableHandle, columns: list[str], where: str | None, segments: list[str]) -> pa.Table:
    return Scan(table, columns, where, segments).to_arrow() if segments else _empty_main(table, columns)


Dimensions = list[tuple[TableHandle, list[str]]]  # each join's dimension table and the segments to read


def _source_rows(main: TableHandle, vq: ViewQuery, segments: list[str], dims: Dimensions) -> tuple[pa.Table, dict[str, str]]:
    """The rows the view groups: ``segments`` of ``main`` (filtered by the view's WHERE), inner-joined with the
    dimension tables' rows; and the column each column of the SELECT (lower case, as written) is among them."""
    names = [str(vq.table), *(j.table for j in vq.joins)]
    tables = [main, *(d for d, _ in dims)]
    found = _check_columns(vq, [t.schema for t in tables], names)
    if not vq.joins:
        read = list(dict.fromkeys(c for _, c in found.values()))
        return _read(main, read, vq.where, segments), {k: c for k, (_, c) in found.items()}
    reads: list[list[str]] = [[] for _ in tables]
    for i, c in found.values():
        reads[i].append(c)
    keys: list[list[tuple[str, str]]] = []  # each join's (fact, dimension) key pairs, as the tables spell them
    for i, join in enumerate(vq.joins, 1):
        keys.append([])
        for fk, dk in join.keys:
            fact_key, dim_key = (resolve_columns(tables[t].schema, [column], f"{names[t]} (a join key of the "
                                                 f"materialized view)")[0] for t, column in ((0, fk), (i, dk)))
            reads[0].append(fact_key)
            reads[i].append(dim_key)
            keys[-1].append((fact_key, dim_key))
    parts = []
    for i, table in enumerate(tables):
        got = _read(table, list(dict.fromkeys(reads[i])), None, segments if i == 0 else dims[i - 1][1])
        parts.append(got.rename_columns([f"{i}.{n}" for n in got.schema.names]))
    joined = parts[0]
    for i, join in enumerate(vq.joins, 1):
        dim, left, right = parts[i], [], []
        for n, ((fk, dk), (fact_key, dim_key)) in enumerate(zip(join.keys, keys[i - 1], strict=True)):
            f_name, d_name = f"0.{fact_key}", f"{i}.{dim_key}"
            t = _key_type(joined[f_name].type, dim[d_name].type, f"{vq.alias}.{fk} = {join.alias}.{dk}")
            left.append(f"__key{i}_{n}")
            right.append(f"__dkey{i}_{n}")
            joined = joined.append_column(left[-1], joined[f_name].cast(t))
            dim = dim.append_column(right[-1], dim[d_name].cast(t))
        # null keys match nothing, as in Spark's inner equi-join
        joined = joined.join(dim, keys=left, right_keys=right, join_type="inner", coalesce_keys=False,
                             use_threads=False)
    return joined, {k: f"{i}.{c}" for k, (i, c) in found.items()}


def _aggregate(main: TableHandle, vq: ViewQuery, time_zone: str, segments: list[str],
               dims: Dimensions | None = None) -> pa.Table:
    """The view's rows over ``segments`` of ``main`` (groups, aggregates, avg's sum and count)."""
    rows, cols = _source_rows(main, vq, segments, dims or [])
    data: dict[str, pa.ChunkedArray | pa.Array] = {}
    for g in vq.groups:
        col = rows[cols[g.column.lower()]]
        data[g.name] = _truncate(col, g.granularity, time_zone) if g.granularity else col
    specs: list[tuple[str, str, pa.compute.FunctionOptions | None]] = []
    for a in vq.aggregates:
        src = f"__in_{a.name}"
        if a.column is None:
            data[src] = pa.nulls(rows.num_rows, pa.int8())
            specs.append((src, "count", pc.CountOptions(mode="all")))
            continue
        col = rows[cols[a.column.lower()]]
        if a.func in ("sum", "avg"):
            col = col.cast(_sum_type(col.type))
        data[src] = col
        if a.func == "avg":
            specs += [(src, "sum", None), (src, "count", pc.CountOptions(mode="only_valid"))]
        elif a.func == "count":
            specs.append((src, "count", pc.CountOptions(mode="only_valid")))
        else:
            specs.append((src, a.func, None))
    table = pa.table(data) if data else pa.table({})
    keys = [g.name for g in vq.groups]
    grouped = table.group_by(keys, use_threads=False).aggregate([(s, f, o) if o else (s, f) for s, f, o in specs])
    return _shape(vq, grouped)


def _shape(vq: ViewQuery, grouped: pa.Table) -> pa.Table:
    """The grouped result as the view's columns: SELECT order, avg's kept sum and count at the end."""
    out: dict[str, pa.ChunkedArray] = {}
    extra: dict[str, pa.ChunkedArray] = {}
    by_name = {g.name: g for g in vq.groups}
    aggs = {a.name: a for a in vq.aggregates}
    for name in vq.select_order:
        if name in by_name:
            out[name] = grouped[name]
            continue
        a = aggs[name]
        src = f"__in_{a.name}"
        if a.func == "avg":
            total, count = grouped[f"{src}_sum"], grouped[f"{src}_count"]
            out[name] = _avg(total, count)
            extra[name + AVG_SUM], extra[name + AVG_COUNT] = total, count
        else:
            out[name] = grouped[f"{src}_{a.func}"]
    return pa.table({**out, **extra})


def _avg(total: pa.ChunkedArray, count: pa.ChunkedArray) -> pa.ChunkedArray:
    zero = pc.equal(count, 0)
    safe = pc.if_else(zero, pa.scalar(None, count.type), count)
    return pc.divide(total.cast(pa.float64()), safe.cast(pa.float64()))


def _merge(vq: ViewQuery, old: pa.Table, new: pa.Table) -> pa.Table:
    """Existing groups and a new segment's partial aggregates as one row per group."""
    keep = [n for n in new.schema.names if n not in {a.name for a in vq.aggregates if a.func == "avg"}]
    both = pa.concat_tables([old.select(keep).cast(new.select(keep).schema), new.select(keep)])
    specs = []
    for a in vq.aggregates:
        if a.func == "avg":
            specs += [(a.name + AVG_SUM, "sum"), (a.name + AVG_COUNT, "sum")]
        else:
            specs.append((a.name, "sum" if a.func in ("sum", "count") else a.func))
    grouped = both.group_by([g.name for g in vq.groups], use_threads=False).aggregate(specs)
    out: dict[str, pa.ChunkedArray] = {}
    extra: dict[str, pa.ChunkedArray] = {}
    aggs = {a.name: a for a in vq.aggregates}
    for name in vq.select_order:
        a = aggs.get(name)
        if a is None:
            out[name] = grouped[name]
        elif a.func == "avg":
            total, count = grouped[name + AVG_SUM + "_sum"], grouped[name + AVG_COUNT + "_sum"]
            out[name] = _avg(total, count)
            extra[name + AVG_SUM], extra[name + AVG_COUNT] = total, count
        else:
            out[name] = grouped[f"{name}_{'sum' if a.func in ('sum', 'count') else a.func}"]
    merged = pa.table({**out, **extra})
    return merged.cast(new.schema)


# ------------------------------------------------------------------------------------------ writing
def _replace_rows(view: TableHandle, rows: pa.Table) -> str:
    """The view's rows replaced by ``rows`` in one overwrite load; the new segment's id."""
    lock = view.update_lock("REFRESH MATERIALIZED VIEW", LOCK_TIMEOUT_S)
    try:
        load = reserve_load(view, overwrite=True, update_lock_token=lock.token, operation="REFRESH MATERIALIZED VIEW")
    except BaseException:
        lock.release()
        raise
    with load:
        load.write([rows.cast(view.schema)])
    return load.committed.name


def _dimension_state(statement: str, dims: list[tuple[str, TableHandle]]) -> list[dict]:
    """Each dimension table's name, folder and readable segments' fingerprints, read once now."""
    out = []
    for dim_name, dim in dims:
        fps, streams = _current(dim)
        if streams:
            raise CarbonTableError(f"{statement}: dimension table {dim_name} has streaming segment(s) "
                                   f"{', '.join(streams)}; a view cannot cover rows that grow in place")
        out.append({"table": dim_name, "path": dim.uri, "covered": fps})
    return out


def _dimension_reads(state: list[dict]) -> Dimensions:
    return [(TableHandle.open(d["path"]), [fp[0] for fp in d["covered"]]) for d in state]


def create_view(path: str, name: str, main: TableHandle, main_name: str, query: str, refresh_mode: str,
                time_zone: str, dimensions: list[tuple[str, TableHandle]] | None = None) -> ViewDefinition:
    """A new view at ``path`` (which must not hold a table), built in full from ``main`` (joined with
    ``dimensions``, (name, table) for each join of the SELECT in order) now."""
    vq = view_query(query)
    dimensions = dimensions or []
    if len(dimensions) != len(vq.joins):
        raise CarbonOptionError(f"CREATE MATERIALIZED VIEW {name}: the SELECT joins {len(vq.joins)} dimension "
                                f"table(s), {len(dimensions)} given")
    current, streams = _current(main)
    if streams:
        raise CarbonTableError(f"CREATE MATERIALIZED VIEW {name}: main table {main_name} has streaming segment(s) "
                               f"{', '.join(streams)}; a view cannot cover rows that grow in place (finish the "
                               "stream's segments first)")
    dim_state = _dimension_state(f"CREATE MATERIALIZED VIEW {name}", dimensions)
    rows = _aggregate(main, vq, time_zone, [fp[0] for fp in current], _dimension_reads(dim_state))
    TableHandle.create(path, rows.schema, properties={"comment": f"materialized view {name} over {main_name}"})
    try:
        view = TableHandle.open(path)
        segment = _replace_rows(view, rows)
        defn = ViewDefinition(name, main_name, main.uri, query, refresh_mode,
                              time_zone, segment, current, dim_state)
        _save(path, defn)
        for table in [main, *(d for _, d in dimensions)]:
            links = linked_views(table)
            _set_links(table, [*links, view.uri] if view.uri not in links else links)
    except BaseException:
        storage, folder = Storage.for_path(path)
        storage.delete_dir(folder)
        raise
    return defn


@dataclass(frozen=True)
class Refreshed:
    kind: str  # "incremental", "full" or "none" (already up to date)
    segments: list[str]  # main-table segments aggregated by this refresh
    rows: int  # the view's rows after it


def refresh_view(path: str, full: bool = False, retention_days: float | str | None = None) -> Refreshed:
    """Bring the view at ``path`` up to date with its main table (see the module's docstring).
    ``retention_days``: how long the replaced rows' files stay in the view's trash (CLEAN FILES' option,
    ``carbon.trash.retention.days``, default 7)."""
    segment_ops.retention_days(retention_days)  # a wrong option is refused before any work
    defn = definition(path)
    vq = defn.parsed
    main = TableHandle.open(defn.main_path)
    view = TableHandle.open(path)
    current, streams = _current(main)
    if streams:
        raise CarbonTableError(f"REFRESH MATERIALIZED VIEW {defn.name}: main table {defn.main_table} has streaming "
                               f"segment(s) {', '.join(streams)}; a view cannot cover rows that grow in place")
    for dim in defn.dimensions:
        if not TableHandle.exists(dim["path"]):
            raise CarbonTableError(f"REFRESH MATERIALIZED VIEW {defn.name}: dimension table {dim['table']} is gone "
                                   f"(folder {dim['path']}); drop the view")
    dim_state = _dimension_state(f"REFRESH MATERIALIZED VIEW {defn.name}",
                                 [(d["table"], TableHandle.open(d["path"])) for d in defn.dimensions])
    covered = {fp[0]: fp for fp in defn.covered}
    now = {fp[0]: fp for fp in current}
    # a changed dimension table changes rows of any group: only a full rebuild is exact
    intact = (_view_segments(view) == ([defn.view_segment] if defn.view_segment else [])
              and all(now.get(s) == fp for s, fp in covered.items())
              and [d["covered"] for d in dim_state] == [d["covered"] for d in defn.dimensions])
    new = [s for s in now if s not in covered]
    if not full and intact and not new:
        return Refreshed("none", [], -1)
    dims = _dimension_reads(dim_state)
    if not full and intact:
        partial = _aggregate(main, vq, defn.time_zone, new, dims)
        old = Scan(view, list(partial.schema.names)).to_arrow()
        rows, kind, read = _merge(vq, old, partial), "incremental", new
    else:
        rows, kind, read = _aggregate(main, vq, defn.time_zone, list(now), dims), "full", list(now)
    defn.view_segment = _replace_rows(view, rows)
    defn.covered = current
    defn.dimensions = dim_state
    _save(path, defn)
    _clean(view, defn.name, retention_days)
    return Refreshed(kind, read, rows.num_rows)


def _clean(view: TableHandle, name: str, retention_days: float | str | None) -> None:
    """CLEAN FILES of the view after a refresh committed. Its failure leaves the refresh standing (the view
    is fresh, the replaced segment merely stays "Marked for Delete" until the next refresh or CLEAN FILES
    cleans it), so it warns instead of failing the refresh."""
    try:
        segment_ops.clean_files(view, retention=retention_days)
    except (CarbonError, OSError) as exc:
        warnings.warn(f"materialized view {name} refreshed, but cleaning the rows it replaced failed: {exc}; "
                      "they stay until the next refresh or CLEAN FILES on the view", stacklevel=3)


def drop_view(path: str) -> ViewDefinition:
    """Unlink the view from its main table (the caller deletes the view's table)."""
    defn = definition(path)
    view_uri = TableHandle.open(path).uri
    for table_path in [defn.main_path, *(d["path"] for d in defn.dimensions)]:
        if TableHandle.exists(table_path):
            table = TableHandle.open(table_path)
            _set_links(table, [v for v in linked_views(table) if v != view_uri])
    return defn


def refresh_after_load(table: TableHandle) -> None:
    """After a committed load into ``table``: refresh its ``on_commit`` views. Never raises (the load is
    committed either way); a view that could not be refreshed stays stale, and a warning says why."""
    try:
        views = views_of(table)
    except (CarbonError, OSError) as exc:
        warnings.warn(f"materialized views of {table.uri} not refreshed: {exc}", stacklevel=2)
        return
    for path in views:
        try:
            if not TableHandle.exists(path):
                continue
            if definition(path).refresh_mode == "on_commit":
                refresh_view(path)
                _warned(path, None)
        except Exception as exc:  # noqa: BLE001 - the load stands; the view stays stale until REFRESH
            if _warned(path, str(exc)):
                warnings.warn(f"materialized view at {path} not refreshed after the load into {table.uri}: {exc}; "
                              "it stays stale until REFRESH MATERIALIZED VIEW (said once until the reason changes)",
                              stacklevel=2)


def _warned(path: str, reason: str | None) -> bool:
    """Whether to warn that the view at ``path`` failed to refresh for ``reason`` (None: it refreshed): once
    per reason, kept in the view's folder because each micro-batch of a stream commits a load, often in
    another process, and a streaming segment keeps failing the same way until it is handed off."""
    storage, file = _meta(path, WARNED)
    try:
        if reason is None:
            if storage.exists(file):
                storage.delete(file)
            return False
        if storage.exists(file) and storage.read_text(file) == reason:
            return False
        storage.write_atomic(file, reason.encode())
    except OSError:
        pass  # a read-only or vanished folder: warn
    return True

