"""``carbon_ds.sql(spark, text)``: CarbonData's DDL and segment statements on Spark 4, everything else
through ``spark.sql``. See docs/sql.md for the statements and docs/segments.md for their behaviour."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import LongType, StringType, StructField, StructType

from carbon_ds.ddl.script import split_statements
from carbon_ds.ddl.statement_parser import (
    AddSegment,
    AlterCarbonPartition,
    AlterPartition,
    AlterSchema,
    CleanFiles,
    Compact,
    CreateTable,
    DeleteRows,
    DeleteSegments,
    DropTable,
    Insert,
    MergeInto,
    ShowPartitions,
    ShowSegments,
    Unsupported,
    UpdateRows,
    parse,
    suggest,
)
from carbon_ds.ddl.types import arrow_schema, arrow_type
from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.fs import Storage, is_inside
from carbon_ds.names import SOURCE
from carbon_ds.spark.bridge.extension import run_query
from carbon_ds.spark.messages import surface
from carbon_ds.spark.session import register
from carbon_ds.spark.statements import catalog
from carbon_ds.spark.statements import materialized_views as mv
from carbon_ds.spark.statements.compaction_tasks import compact_with_spark
from carbon_ds.spark.statements.connect import check_reachable
from carbon_ds.spark.statements.dml import run_row_dml
from carbon_ds.spark.statements.merge_into import run_merge_statement
from carbon_ds.spark.writes.dataframe_write import write as write_by_partition
from carbon_ds.table.meta.files.new_table_folder import check_new_table_folder
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.options import parse_bool, split_list
from carbon_ds.table.meta.schema.conform import check_schema
from carbon_ds.table.meta.schema.properties import TableProperties
from carbon_ds.table.ops import views
from carbon_ds.table.ops.segments import manage as segment_ops
from carbon_ds.table.partitions.hive_ddl import add_partition, drop_partitions
from carbon_ds.table.partitions.id_spec import spec_from_properties
from carbon_ds.table.table import CarbonTable

__all__ = ["sql", "parse"]

CLEAN_OPTIONS = ("force", "retention_days")
ADD_SEGMENT_FORMATS = ("carbondata", "carbon", "parquet", "orc", "csv", "json", "text")


def _empty(spark: Any):
    return spark.createDataFrame([], StructType([]))


def _string_columns(columns: list[str] | tuple[str, ...]) -> StructType:
    return StructType([StructField(c, StringType(), True) for c in columns])


def _strings(spark: Any, columns: list[str], rows: list[tuple]):
    return spark.createDataFrame([tuple(str(v) for v in r) for r in rows], _string_columns(columns))


def _longs(columns: list[str]) -> StructType:
    return StructType([StructField(c, LongType(), True) for c in columns])


_DML_COLUMNS = ["num_affected_rows"]
_MERGE_COLUMNS = ["num_affected_rows", "num_updated_rows", "num_deleted_rows", "num_inserted_rows"]
# What each statement returns (spark.sql's command declares these columns before it runs: front_door.py)
OUTPUTS: dict[type, StructType] = {
    CreateTable: StructType([]), DropTable: StructType([]), AlterSchema: StructType([]),
    AlterPartition: StructType([]), AlterCarbonPartition: StructType([]), Insert: StructType([]),
    Unsupported: StructType([]),
    AddSegment: _string_columns(["Segment ID"]),
    ShowSegments: _string_columns(segment_ops.COLUMNS),
    DeleteSegments: _string_columns(["Segment ID", "Status"]),
    CleanFiles: _string_columns(["Segment", "Action"]),
    Compact: _string_columns(["Merged Segment", "Source Segments", "Rows"]),
    ShowPartitions: _string_columns(["partition"]),
    DeleteRows: _longs(_DML_COLUMNS), UpdateRows: _longs(_DML_COLUMNS), MergeInto: _longs(_MERGE_COLUMNS),
    **mv.OUTPUTS,
}


def _registered(spark: Any) -> None:
    # The views are `USING carbondata`: the data source must be known to this session first.
    register(spark)


def _bool(value: str, key: str) -> bool:
    return parse_bool(value, f"option {key!r}")


def _create(spark: Any, stmt: CreateTable):
    """CREATE [EXTERNAL] TABLE: the CarbonData table folder, then the session's record of it (Spark's catalog
    with the extension, else the registry and a view). A table declared EXTERNAL or given a LOCATION keeps
    its files on DROP; one made in the warehouse folder is managed (catalog.py's owner rule)."""
    catalog.check_name(stmt.table)
    db = (stmt.table.db or catalog.current_db(spark)).lower()
    name = f"{db}.{stmt.table.name}"
    if stmt.external and stmt.location is None:
        raise CarbonTableError(f"CREATE EXTERNAL TABLE {name}: an external table needs LOCATION '<folder>' (the "
                               "folder whose data it reads and never deletes)")
    existing = catalog.lookup(spark, stmt.table)
    if existing is not None and (existing.registered or stmt.location is None):
        if stmt.if_not_exists:
            catalog.ensure(spark, stmt.table)
            return _empty(spark)
        raise CarbonTableError(f"table {name} already exists at {existing.path}")
    if existing is None:
        try:
            catalog.check_free(spark, stmt.table)
        except CarbonTableError:
            if stmt.if_not_exists:  # Spark's IF NOT EXISTS: an existing name makes the statement a no-op
                return _empty(spark)
            raise
    path = catalog.local_path(stmt.location) if stmt.location else catalog.default_location(spark, db, stmt.table.name)
    check_reachable(spark, path, f"the folder of table {name}")
    exists = CarbonTable.exists(path)
    if not exists:
        try:
            check_new_table_folder(*Storage.for_path(path))
        except CarbonTableError as exc:
            where = "LOCATION" if stmt.location else "the table's default location"
            raise CarbonTableError(f"CREATE TABLE {name}: {where} {path} is a non-empty folder that is not a "
                                   f"CarbonData table ({exc})") from None
    if exists and stmt.location is None:
        raise CarbonTableError(f"table {name}: a CarbonData table already exists at {path}")
    if not exists and not stmt.columns:
        raise CarbonTableError(f"CREATE TABLE {name} without columns takes them from the CarbonData table at "
                               f"LOCATION, but {path} holds none; give the columns or an existing table's folder")
    external = stmt.external or stmt.location is not None
    if exists:  # LOCATION over an existing table: adopt it when the columns agree
        if stmt.columns or stmt.partition_columns:
            check_schema(CarbonTable.open(path).schema, arrow_schema(stmt.columns + stmt.partition_columns),
                         f"table at {path}")
    else:
        _create_folder(stmt, path)
    entry = catalog.Entry(db, stmt.table.name.lower(), path, external)
    try:
        if catalog.in_spark_catalog(spark):
            catalog.catalog_create(spark, entry, TableHandle.open(path), managed=not external)
        else:
            catalog.publish(spark, catalog.register(spark, db, stmt.table.name, path, external=external))
    except BaseException:
        if not exists:  # the folder this statement made goes with the statement
            segment_ops.drop_table_files(CarbonTable.open(path))
        raise
    return _empty(spark)


def _create_folder(stmt: CreateTable, path: str) -> None:
    schema = arrow_schema(stmt.columns + stmt.partition_columns)
    props = dict(stmt.properties)
    sort_columns = split_list(props.pop("sort_columns", None)) or None
    long_strings = split_list(props.pop("long_string_columns", None)) or None
    if stmt.external:
        props["_external"] = "true"  # CarbonData's marker of a table whose data DROP TABLE keeps
    pcols = [c for c, _t in stmt.partition_columns]
    spec = spec_from_properties(pcols[0], props) if len(pcols) == 1 else None
    if spec is None and any(k.lower() == "partition_type" for k in props):
        raise CarbonOptionError(f"CREATE TABLE {stmt.table}: PARTITION_TYPE needs exactly one column in "
                                f"PARTITIONED BY, found {len(pcols)}")
    if spec is not None:  # the layout is the table's now; the properties that asked for it are spent
        props = {k: v for k, v in props.items()
                 if k.lower() not in ("partition_type", "partition_num", "range_info", "list_info")}
    CarbonTable.create(
        path,
        schema,
        partition_by=(pcols or None) if spec is None else None,
        partition=spec,
        sort_columns=sort_columns,
        properties=props,
        long_string_columns=long_strings,
    )


def _drop(spark: Any, stmt: DropTable):
    """DROP TABLE: forget the table; delete its folder only when it is managed (catalog.py's owner rule)."""
    entry = catalog.lookup(spark, stmt.table)
    if entry is None:
        return None  # not ours: Spark drops (or complains about) its own tables
    if views.is_view(entry.path):  # as in CarbonData: a view's table goes with DROP MATERIALIZED VIEW only
        if stmt.if_exists:
            return _empty(spark)
        raise CarbonTableError(f"DROP TABLE {entry.db}.{entry.name}: it is a materialized view; use DROP "
                               f"MATERIALIZED VIEW {entry.db}.{entry.name}")
    deletes = (not entry.external and CarbonTable.exists(entry.path)
               and not any(not o.external for o in catalog.owners(spark, entry.path, entry.db, entry.name)))
    table = CarbonTable.open(entry.path) if deletes else None
    if table is not None:
        if TableProperties(table.properties, table.uri).external:
            table, deletes = None, False
        else:
            # External segments may point anywhere, even inside the table folder: their bytes are never ours.
            inside = [d.path for d in table.load_details()
                      if d.path and is_inside(catalog.local_path(d.path), table.path)]
            if inside:
                raise CarbonTableError(
                    f"DROP TABLE {entry.db}.{entry.name}: external segment folder(s) {', '.join(inside)} lie "
                    f"inside the table folder {table.uri}; delete those segments first so their files are not removed")
    if CarbonTable.exists(entry.path):
        mv.drop_views_of(spark, entry.path)
    catalog.catalog_drop(spark, entry)  # Spark deletes a managed table's folder itself
    catalog.drop_view(spark, entry.name)
    catalog.unregister(spark, entry.db, entry.name)
    if table is not None and CarbonTable.exists(entry.path):
        segment_ops.drop_table_files(table)
    return _empty(spark)


def _add_segment(spark: Any, stmt: AddSegment):
    entry = catalog.ensure(spark, stmt.table)
    opts = dict(stmt.options)
    path = opts.pop("path", None)
    if not path or not path.strip():
        raise CarbonOptionError(f"ADD SEGMENT needs option 'path', found options {stmt.options}")
    fmt = opts.pop("format", "carbondata").strip().lower()
    if fmt not in ADD_SEGMENT_FORMATS:
        raise CarbonOptionError(f"ADD SEGMENT format must be one of {', '.join(ADD_SEGMENT_FORMATS)}, found {fmt!r}")
    partition = opts.pop("partition", None)
    table = CarbonTable.open(entry.path)
    add = getattr(table, "add_segment", None)
    if add is None:
        raise CarbonTableError("ADD SEGMENT is not available yet")
    added = add(path.strip(), format=fmt, partition=partition, options=opts)
    ids = [added] if isinstance(added, str) else list(added or [])
    return _strings(spark, ["Segment ID"], [(i,) for i in ids])


def _show(spark: Any, stmt: ShowSegments):
    entry = catalog.ensure(spark, stmt.table)
    rows = segment_ops.segment_rows(CarbonTable.open(entry.path), stmt.limit)
    return _strings(spark, list(segment_ops.COLUMNS), [tuple(r[c] for c in segment_ops.COLUMNS) for r in rows])


def _delete(spark: Any, stmt: DeleteSegments):
    entry = catalog.ensure(spark, stmt.table)
    table = CarbonTable.open(entry.path)
    ids = table.delete_segments(stmt.ids) if stmt.ids is not None else table.delete_segments_before(stmt.before)
    return _strings(spark, ["Segment ID", "Status"], [(i, "Marked for Delete") for i in ids])


def _clean(spark: Any, stmt: CleanFiles):
    unknown = sorted(set(stmt.options) - set(CLEAN_OPTIONS))
    if unknown:
        raise CarbonOptionError(
            f"CLEAN FILES: unknown option(s) {', '.join(unknown)}; valid options: {', '.join(CLEAN_OPTIONS)}"
        )
    force = _bool(stmt.options["force"], "force") if "force" in stmt.options else False
    retention = stmt.options.get("retention_days") or spark.conf.get("carbon.trash.retention.days", None)
    entry = catalog.ensure(spark, stmt.table)
    result = CarbonTable.open(entry.path).clean_files(force=force, retention_days=retention)
    return _strings(spark, ["Segment", "Action"], result.rows())


def _compact(spark: Any, stmt: Compact):
    """ALTER TABLE ... COMPACT: one row per merged segment (its id, the segments merged, rows)."""
    table = CarbonTable.open(catalog.ensure(spark, stmt.table).path)
    merged = compact_with_spark(spark, table, stmt.kind, stmt.segments,  # one Spark task per compaction task
                                include_external=stmt.include_external)
    return _strings(spark, ["Merged Segment", "Source Segments", "Rows"],
                    [(m.segment, ",".join(m.sources), str(m.rows)) for m in merged])


def _insert(spark: Any, stmt: Insert, text: str):
    entry = catalog.lookup(spark, stmt.table)
    if entry is None:
        return None
    entry = catalog.ensure(spark, stmt.table)
    if stmt.partition is not None:
        return _insert_partition(spark, stmt, text, entry.path)
    start, end = stmt.span
    query = text[end:].strip()
    if _is_source_query(query):
        table = CarbonTable.open(entry.path)
        if table.partitioning is not None and table.partitioning.routed_by_id:
            return _insert_by_partition(spark, stmt, table, query, entry.path)
    return spark.sql(text[:start] + catalog.quote(entry.name) + text[end:])


_QUERY_WORDS = ("SELECT", "WITH", "FROM", "VALUES", "TABLE")


def _is_source_query(query: str) -> bool:
    """Whether what follows ``INSERT INTO t`` is the rows' query itself (not a column list)."""
    head = query.lstrip("( \t\n")
    return head.split(None, 1)[0].upper() in _QUERY_WORDS if head else False


def _insert_by_partition(spark: Any, stmt: Insert, table: CarbonTable, query: str, path: str):
    """INSERT into a HASH / RANGE / LIST partitioned table: Spark runs the query (columns matched by
    position, cast to the table's types as Spark's INSERT does), and the rows are repartitioned by
    partition id before the writer's tasks, one partition per task (carbon_ds.spark.writes.dataframe_write)."""
    df = run_query(spark, query)
    names = table.schema.names
    if len(df.columns) != len(names):
        raise CarbonTableError(
            f"INSERT into {stmt.table}: the query gives {len(df.columns)} columns, expected {len(names)} "
            f"({', '.join(names)})"
        )
    struct = from_arrow_schema(table.schema, prefer_timestamp_ntz=False)
    df = df.toDF(*names).select([F.col(f"`{f.name}`").cast(f.dataType) for f in struct.fields])
    write_by_partition(df, path, mode="overwrite" if stmt.overwrite else "append")
    return _empty(spark)


def _insert_partition(spark: Any, stmt: Insert, text: str, path: str):
    """INSERT INTO|OVERWRITE t PARTITION (c = v, d) SELECT ...: Spark runs the SELECT (its columns: the
    non-static columns, dynamic partition columns last, matched by position), the rows are written with
    the static values through the data source's ``partition`` option. An overwrite replaces the folders
    inside the static spec; with no static value, only the partitions the query writes (dynamic)."""



    table = CarbonTable.open(path)
    pcols = table.partition_columns
    if not pcols:
        raise CarbonTableError(f"INSERT ... PARTITION: table {stmt.table} at {path} is not partitioned")
    by_lower = {c.lower(): c for c in pcols}
    unknown = [c for c in stmt.partition if c.lower() not in by_lower]
    if unknown:
        raise CarbonTableError(f"INSERT ... PARTITION names {', '.join(unknown)}; partition columns: {', '.join(pcols)}")
    static = {by_lower[k.lower()]: v for k, v in stmt.partition.items() if v is not ...}
    plower = {c.lower() for c in pcols}
    names = [n for n in table.schema.names if n.lower() not in plower] + [c for c in pcols if c not in static]
    df = spark.sql(text[stmt.query_start:])
    if len(df.columns) != len(names):
        raise CarbonTableError(
            f"INSERT ... PARTITION into {stmt.table}: the query gives {len(df.columns)} columns, expected "
            f"{len(names)} ({', '.join(names)})"
        )
    struct = from_arrow_schema(pa.schema([table.schema.field(n) for n in names]), prefer_timestamp_ntz=False)
    df = df.toDF(*names).select([F.col(f"`{f.name}`").cast(f.dataType) for f in struct.fields])
    writer = df.write.format(SOURCE).mode("overwrite" if stmt.overwrite else "append")
    if static:
        writer = writer.option("partition", json.dumps(static))
    elif stmt.overwrite:
        writer = writer.option("partition_overwrite_mode", "dynamic")
    writer.save(path)
    return _empty(spark)


def _show_partitions(spark: Any, stmt: ShowPartitions):
    entry = catalog.ensure(spark, stmt.table)
    table = CarbonTable.open(entry.path)
    rows = table.show_partitions()
    return _strings(spark, ["partition"], [(p,) for p in rows])


def _alter_carbon_partition(spark: Any, stmt: AlterCarbonPartition):
    entry = catalog.ensure(spark, stmt.table)
    table = CarbonTable.open(entry.path)
    if table.partitioning is None or table.partitioning.flavour != "id":
        raise CarbonOptionError(f"ALTER TABLE {stmt.table} {stmt.action.upper()} PARTITION by id or value list "
                                "needs a RANGE or LIST partitioned table; for Hive-style partitions give "
                                "PARTITION (col = value, ...)")
    if stmt.action == "add":
        table.add_partition(stmt.values)
    elif stmt.action == "split":
        table.split_partition(stmt.partition_id, stmt.values)
    else:
        table.drop_partition(stmt.partition_id, stmt.with_data)
    catalog.publish(spark, entry)
    return _empty(spark)


def _alter_partition(spark: Any, stmt: AlterPartition):
    entry = catalog.ensure(spark, stmt.table)
    if any(v is ... for v in stmt.spec.values()):
        raise CarbonOptionError(f"{stmt.action.upper()} PARTITION needs a value for every column it names, "
                                f"found {stmt.spec!r}")
    if stmt.action == "add":
        add_partition(CarbonTable.open(entry.path), stmt.spec, stmt.location, if_not_exists=stmt.if_exists)
        return _empty(spark)
    drop_partitions(CarbonTable.open(entry.path), stmt.spec, if_exists=stmt.if_exists)
    return _empty(spark)


def _alter_schema(spark: Any, stmt: AlterSchema, text: str):
    """ADD / DROP COLUMNS, CHANGE, SET / UNSET TBLPROPERTIES: one schema change, then the session's view
    is re-created so later queries see the new columns (docs/schema-evolution.md)."""
    if catalog.lookup(spark, stmt.table) is None:
        return spark.sql(text)  # not a carbondata table: Spark's statement
    entry = catalog.ensure(spark, stmt.table)
    table = CarbonTable.open(entry.path)
    if stmt.action == "add":
        prefix = "default.value."
        other = [k for k in stmt.properties if not k.startswith(prefix)]
        if other:
            raise CarbonOptionError(f"ALTER TABLE ... ADD COLUMNS: TBLPROPERTIES may only hold "
                                    f"'DEFAULT.VALUE.<column>', found {', '.join(repr(k) for k in other)}")
        defaults = {k[len(prefix):]: v for k, v in stmt.properties.items()}
        names = {n.lower() for n, _t in stmt.columns}
        stray = [c for c in defaults if c not in names]
        if stray:
            raise CarbonOptionError(f"ALTER TABLE ... ADD COLUMNS: default value for {', '.join(stray)}, which "
                                    "is not among the columns added")
        with table.update_schema() as u:
            for name, type_text in stmt.columns:
                u.add_column(name, arrow_type(type_text, name), default=defaults.get(name.lower()))
    elif stmt.action == "drop":
        with table.update_schema() as u:
            for name in stmt.names:
                u.drop_column(name)
    elif stmt.action == "change":
        old, new = stmt.names[0], stmt.new_name or stmt.names[0]
        want = None if stmt.type_text is None else arrow_type(stmt.type_text, new)  # RENAME COLUMN keeps it
        current = {f.name.lower(): f.type for f in table.schema}
        with table.update_schema() as u:
            if new != old:
                u.rename_column(old, new)
            if want is not None and old.lower() in current and not current[old.lower()].equals(want):
                u.widen_column(new, want)
    elif stmt.action == "set":
        table.set_properties(stmt.properties)
    else:
        table.unset_properties(stmt.names)
    catalog.publish(spark, entry)
    return _empty(spark)


def sql(spark: Any, text: str):
    """Run a statement, or a ``;``-separated script statement by statement; CarbonData statements here,
    the rest through ``spark.sql`` (a query planned at this call by the extension's rules where they are on:
    bridge.extension.run_query). Returns the (last) statement's DataFrame.

    A carbon-ds error raised inside Spark while planning arrives as that carbon-ds error (Spark's as cause).
    An error in a script's statement carries a note naming the statement and its position; the statements
    before it have run."""
    if not isinstance(text, str) or not split_statements(text):
        raise CarbonOptionError(f"sql() needs a statement, found {text!r}")
    statements = split_statements(text)
    out = None
    for k, stmt in enumerate(statements, 1):
        try:
            with surface():
                out = _statement(spark, stmt.text)
        except Exception as e:
            if len(statements) > 1:
                e.add_note(f"carbon_ds.sql: in statement {k} of {len(statements)}, at character {stmt.start} of "
                           f"the script: {stmt.text[:80]!r}; the {k - 1} statement(s) before it have run")
            raise
    return out


def _parse(text: str):
    try:
        return parse(text)
    except CarbonOptionError:
        if text.lstrip()[:4].upper() == "DROP":
            return None  # DROP TABLE forms we do not parse (PURGE, ...) are Spark's
        raise


# Statements carbon-ds runs whatever the table: CarbonData's own, or a carbondata CREATE
_ALWAYS_OURS = (CreateTable, AddSegment, ShowSegments, DeleteSegments, CleanFiles, Compact, AlterCarbonPartition,
                *mv.HANDLERS)


def _ours(spark: Any, stmt: Any) -> bool:
    """Whether carbon-ds runs ``stmt`` (else it is Spark's statement on a table that is not carbondata)."""
    if isinstance(stmt, _ALWAYS_OURS):
        return True
    entry = catalog.lookup(spark, stmt.table)
    if entry is None:
        return False
    if isinstance(stmt, Insert):  # Spark writes plain inserts into carbondata tables itself
        if stmt.partition is not None:
            return True
        table = CarbonTable.open(entry.path)
        return table.partitioning is not None and table.partitioning.routed_by_id
    return True


def claimed_output(spark: Any, text: str) -> StructType | None:
    """The columns ``text`` returns when carbon-ds runs it, None when it is Spark's statement.

    Raises:
        CarbonOptionError: a malformed CarbonData statement (named as carbon_ds.sql names it).
    """
    with surface():
        stmt = _parse(text)
        if stmt is None or not _ours(spark, stmt):
            return None
        return OUTPUTS[type(stmt)]


def run_claimed(spark: Any, text: str):
    """Run a statement ``claimed_output`` claimed: the same handlers as carbon_ds.sql."""
    with surface():
        return _statement(spark, text)


def _statement(spark: Any, text: str):
    stmt = _parse(text)
    if stmt is None:
        answered = mv.answer_from_view(spark, text)  # a query a materialized view gives exactly
        if answered is not None:
            return answered
        # queries and INSERT ... SELECT read only the columns and rows they need (docs/sql.md)
        hint = suggest(text)
        if hint is None:
            return run_query(spark, text)
        try:
            return run_query(spark, text)
        except Exception as exc:  # Spark's parse error of a misspelt CarbonData statement: say what was meant
            if CarbonOptionError.__name__ in str(exc):
                raise
            raise CarbonOptionError(hint.split(": ", 1)[1]) from exc
    _registered(spark)
    handler = _HANDLERS.get(type(stmt))
    if handler is None:
        raise AssertionError(f"unhandled statement {stmt!r}")  # pragma: no cover
    return handler(spark, stmt, text)


def _drop_statement(spark: Any, stmt: DropTable, text: str):
    out = _drop(spark, stmt)
    return spark.sql(text) if out is None else out


def _unsupported(spark: Any, stmt: Unsupported, text: str):
    if catalog.lookup(spark, stmt.table) is None:
        return spark.sql(text)  # not a carbondata table: Spark's statement
    raise CarbonOptionError(
        f"ALTER TABLE ... {stmt.what} is not supported on carbondata table {stmt.table} (it would change "
        "Spark's catalog and not the table); ALTER TABLE forms carbon-ds runs: ADD SEGMENT, ADD/DROP COLUMNS, "
        "CHANGE, RENAME COLUMN, ALTER COLUMN ... TYPE, SET/UNSET TBLPROPERTIES, COMPACT, ADD/DROP/SPLIT "
        "PARTITION")


def _row_dml(spark: Any, stmt: DeleteRows | UpdateRows, text: str):
    # the WHERE (and SET) are Spark's: any Spark SQL predicate; the deltas are written here (docs/dml.md)
    n = run_row_dml(spark, CarbonTable.open(catalog.ensure(spark, stmt.table).path), stmt)
    return spark.createDataFrame([(n,)], OUTPUTS[type(stmt)])


def _merge_statement(spark: Any, stmt: MergeInto, text: str):
    # the join, conditions and values are Spark's; the deltas and the new segment are committed here
    m = run_merge_statement(spark, CarbonTable.open(catalog.ensure(spark, stmt.table).path), stmt)
    return spark.createDataFrame(
        [(m.rows_updated + m.rows_deleted + m.rows_inserted, m.rows_updated, m.rows_deleted, m.rows_inserted)],
        OUTPUTS[MergeInto])


def _insert_statement(spark: Any, stmt: Insert, text: str):
    out = _insert(spark, stmt, text)
    return run_query(spark, text) if out is None else out


# Every statement carbon-ds runs itself: its parsed type -> handler(spark, statement, text)
_HANDLERS: dict[type, Any] = {
    CreateTable: lambda spark, stmt, _text: _create(spark, stmt),
    DropTable: _drop_statement,
    AddSegment: lambda spark, stmt, _text: _add_segment(spark, stmt),
    ShowSegments: lambda spark, stmt, _text: _show(spark, stmt),
    DeleteSegments: lambda spark, stmt, _text: _delete(spark, stmt),
    CleanFiles: lambda spark, stmt, _text: _clean(spark, stmt),
    ShowPartitions: lambda spark, stmt, _text: _show_partitions(spark, stmt),
    AlterPartition: lambda spark, stmt, _text: _alter_partition(spark, stmt),
    AlterSchema: _alter_schema,
    Compact: lambda spark, stmt, _text: _compact(spark, stmt),
    AlterCarbonPartition: lambda spark, stmt, _text: _alter_carbon_partition(spark, stmt),
    Unsupported: _unsupported,
    DeleteRows: _row_dml,
    UpdateRows: _row_dml,
    MergeInto: _merge_statement,
    Insert: _insert_statement,
    **mv.HANDLERS,
}

