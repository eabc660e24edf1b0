"""Batch reads of the Spark data source ``carbondata``: planning input partitions and reading them.

The data files of every readable segment, large files split into groups of blocklets and small ones packed
several to an input partition (each partition is a Python task). Spark never pushes a projection to Python
sources, so columns are only pruned when the relation declares them with ``.schema(...)`` (the user, or
the extension's rules for them: jvm/src PruneCarbonRelations); batches are cast to exactly the declared schema, as Spark requires. A
relation declaring no column yields column-less batches that carry the row count (``count(*)``), taken from
the index files when it has no filter.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.expressions import AlwaysTrue, and_, bind
from carbon_ds.expressions.spark import from_spark_filter
from carbon_ds.format.pages import direct_dictionary
from carbon_ds.fs import Storage
from carbon_ds.names import (
    EXACT_FILTER_OPTION,
    FILTER_OPTION,
    PARTIAL_COUNTS_OPTION,
    PRUNED_OPTION,
    SEGMENTS_OPTION,
    UNSCALED_OPTION,
)
from carbon_ds.spark.arrow_schema import arrow_schema
from carbon_ds.spark.messages import entry_point
from carbon_ds.spark.source import partial_counts
from carbon_ds.spark.source.input_partitions import (
    pack_pieces,
    planning_cores,
    read_sizes,
    split_for_cores,
    stored_bytes,
)
from carbon_ds.spark.source.query_version import (
    PlannedSnapshot,
    check_unchanged_since,
    in_task,
    plan_key,
    query_started_ms,
    verified_ms,
    version_at,
    version_of,
)
from carbon_ds.spark.source.read_options import positions_option, resolved_path
from carbon_ds.table.meta.handle import TableHandle, resolve_columns
from carbon_ds.table.meta.options import split_list
from carbon_ds.table.meta.schema.conform import UNSCALED_MAX_PRECISION, conform, has_unscaled_form, unscaled_decimals
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.partitions.id_partition_values import partition_value_rows
from carbon_ds.table.partitions.partitioning import IdPartitioning
from carbon_ds.table.read import pruning
from carbon_ds.table.read.planned_reads import count as count_rows
from carbon_ds.table.read.planned_reads import plan as plan_pieces
from carbon_ds.table.read.snapshot import Snapshot, arrow_schema_of, open_source, open_table
from carbon_ds.table.read.task_reader import POSITION_NAMES, position_tables, read_pieces

COUNT_BATCH_ROWS = 1 << 20  # rows per column-less batch of a rows-only read
# Rows per batch handed to Spark. A blocklet decodes to one batch of up to ~2M rows; Spark converts each
# batch whole before passing any row on, so smaller slices overlap our decoding with the JVM's work and
# keep both sides' buffers small (count/sum over a wide read measured 21-33% faster at 64K rows).
SPARK_BATCH_ROWS = 1 << 16
# planned_table: a read planned to touch at most this many values (rows times the columns it reads), giving
# at most LOCAL_MAX_ROWS rows, is read at planning (600,000 rows of four columns read in about 35 ms; a
# Python task's fixed cost is a few hundred, and it holds a core the query's other scans wait for)
LOCAL_TOUCHED_VALUES = 4_000_000
# Spark ships a local relation's rows inside the tasks of a stage that streams it, and a local relation in
# the result stage is planned again as a Python scan: past some tens of thousands of rows the read at
# planning costs more than it saves (TPC-DS SF 1: a limit of 40,000 rows rather than 100,000 took 14 of the
# queries from 1.62x to 1.37x Parquet's time; Q30, Q83 read date_dim, web_returns, customer whole)
LOCAL_MAX_ROWS = 40_000










# ---------------------------------------------------------------------------------------------- reads


class CarbonPartition(InputPartition):
    """Slot ``index`` of ``count``: the planned (path, blocklets) pieces and the table version they belong
    to (``snapshot``: segment ids, delete statuses, version; None for a bare folder), see carbon_ds.spark.source.query_version.

    Spark keeps planned partitions on a DataFrame's or temporary view's relation and reuses them in later
    queries, so a plan can be stale. A task of a later query re-plans and reads every ``count``-th piece of
    the fresh plan, which still covers each current file exactly once.
    """

    def __init__(self, index: int, count: int, pieces: tuple[pruning.Piece, ...], snapshot: PlannedSnapshot | None):
        super().__init__(index)
        self.index = index
        self.count = count
        self.pieces = pieces  # the planned files, their blocklets and segments
        self.snapshot = snapshot


class CarbonCountPartition(InputPartition):
    """The one partition of a rows-only read (no column, no filter): the row count is taken when the task
    runs, from the index files, so a kept DataFrame or a reused plan still counts the current table."""

    def __init__(self) -> None:
        super().__init__(0)


class CarbonReader(DataSourceReader):
    """The reader Spark gets on every PySpark release so far: it does NOT implement ``pushFilters``.

    Pruning comes only from the relation's own ``filter`` option, which is fixed for the relation, so a
    reused reader or partition list (the stale-reuse defect of PySpark 4.1-4.3, see
    ``pushdown_is_safe``) can never carry another query's filter. Rows are filtered here: exactly by a
    user's filter option; by the extension's (Spark's own Filters, which Spark evaluates again) only where a
    unit's rows are not nearly all kept.
    """

    def __init__(self, path: str, schema: StructType, options: dict[str, str],
                 storage: dict[str, str] | None = None, handle: TableHandle | None = None):
        self.storage = storage  # the store's settings, applied again in every worker (see _resolved)
        self.path = path = resolved_path(path, storage)
        self.segments = options.get(SEGMENTS_OPTION)
        self.filter = options.get(FILTER_OPTION) or None
        # the extension's relation: its filter also holds the Filters Spark keeps above it (loose) unless the
        # user's own filter option, which must hold exactly, is part of it
        self.loose_filter = (self.filter is not None and options.get(PRUNED_OPTION) == "true"
                             and options.get(EXACT_FILTER_OPTION) == "")
        handle = handle if handle is not None else open_table(path)
        self.is_table = handle is not None
        self.handle = handle  # planning reads this table's tablestatus: its schema file is not read again
        self.schema_mtime = handle.storage.mtime_ns(handle.schema_path_of(handle.path)) if handle else None
        self.target = arrow_schema(schema)
        self.source_schema = handle.schema if handle is not None else arrow_schema_of(path)
        # the columns every task reads files through: planning checks the planned version still has them
        self.table_columns = handle.columns if handle is not None else None
        self.positions = positions_option(options)
        self.timestamp_keys = direct_dictionary.TimestampKeys.from_options(options)  # a bad value fails here
        # True when the plan is made for one query only (a stream's batch): its tasks read the planned
        # snapshot as it is, whatever commits land meanwhile, instead of re-planning as a kept plan must
        self.pinned = False

        # Names in the source's spelling; a user-given schema may be any subset, any case.
        data_names = [n for n in self.target.names if not (self.positions and n in POSITION_NAMES)]
        # a relation counting its rows by keys in its tasks declares the keys and the count instead
        self.partial = partial_counts.parse(options.get(PARTIAL_COUNTS_OPTION), self.source_schema)
        if self.partial is not None:
            if self.positions or len(self.target.names) != len(self.partial) + 1:
                raise CarbonOptionError(f"option {PARTIAL_COUNTS_OPTION}: {len(self.partial)} keys need a schema of "
                                        f"the keys and a count, found {self.target.names}")
            data_names = partial_counts.columns(self.partial)
        self.columns = resolve_columns(self.source_schema, data_names, f"carbondata source {path}")
        self.unscaled, self.unscaled_types = self._unscaled(options.get(UNSCALED_OPTION))
        if self.segments and not self.is_table:
            raise CarbonOptionError(f"option segments={self.segments!r} needs a table, {path} has no Metadata/schema")
        self._option_expr()  # a bad filter fails at planning time, naming the option

    def _unscaled(self, text: str | None) -> tuple[list[str], dict[str, pa.DataType]]:
        """The columns of option ``unscaled_decimals``: decimals of at most 18 digits that this relation
        declares as bigint and that reach Spark as their unscaled values (see conform.unscaled_decimals).
        An entry ``name:precision:scale`` (the Spark extension's form) names the decimal Spark rebuilds, which
        the column is cast to first ({lower name: that decimal}); a bare name means the table's own type."""
        entries = [e.split(":") for e in split_list(text)]
        if any(len(e) not in (1, 3) for e in entries):
            raise CarbonOptionError(f"option {UNSCALED_OPTION}={text!r}: expected name or name:precision:scale "
                                    "entries separated by commas")
        declared = {f.name.lower(): f.type for f in self.target}
        out = (resolve_columns(self.source_schema, [e[0] for e in entries], f"option {UNSCALED_OPTION}") if entries
            else [])
        types: dict[str, pa.DataType] = {}
        for name, entry in zip(out, entries, strict=True):
            t = self.source_schema.field(name).type
            if len(entry) == 3:
                try:
                    t = pa.decimal128(int(entry[1]), int(entry[2]))
                except (ValueError, TypeError):
                    raise CarbonOptionError(f"option {UNSCALED_OPTION}: {':'.join(entry)!r} is no decimal "
                                            "precision and scale") from None
                types[name.lower()] = t
            if not has_unscaled_form(t):
                raise CarbonOptionError(f"option {UNSCALED_OPTION}: column {name!r} is {t}; expected a decimal of "
                                        f"at most {UNSCALED_MAX_PRECISION} digits")
            if declared.get(name.lower()) != pa.int64():
                raise CarbonOptionError(f"option {UNSCALED_OPTION}: column {name!r} must be declared bigint in the "
                                        f"schema, found {declared.get(name.lower(), 'no such declared column')}")
        return out, types

    def _option_expr(self):
        try:
            return pruning.as_expr(self.filter, self.source_schema, self.path)
        except CarbonOptionError as e:
            raise CarbonOptionError(f"option filter={self.filter!r}: {e}") from None

    def _prune_expr(self):
        """The predicate that decides which units are read (the pushdown reader adds Spark's filters)."""
        return self._option_expr()

    def _plan(self) -> tuple[Snapshot, list[pruning.Piece], str | None, dict[str, int]]:
        """(the snapshot planned against, the pieces, the snapshot's version digest, file sizes)."""
        handle = self.handle
        if handle is not None and handle.storage.mtime_ns(handle.schema_path_of(handle.path)) != self.schema_mtime:
            handle = TableHandle.open(self.path)  # ALTER TABLE since: _check_schema decides
        # one tablestatus read: files and deletes
        source = open_source(handle if handle is not None else self.path, self.segments)
        version = None
        if source.table is not None:
            self._check_schema(source.table)
            version = version_of(source.details)
        # a columnar file's bytes that this read decodes: its share of the row width (a partitioned table's
        # many files, read for a column or two, pack into a few tasks rather than one task each)
        read = None if self.columns is None else [*self.columns, *self._option_expr().columns()]
        stored, sizes = read_sizes(source, read)
        self._stored_bytes = stored_bytes(source, stored)

        expr = self._prune_expr()
        plan = plan_pieces(source, expr)  # each piece carries its file's committed deletes to its task
        # the rows the plan reads, while the pieces still carry the index's counts (split pieces do not)
        self._touched = (sum(p.rows for p in plan.pieces) if all(p.rows is not None for p in plan.pieces)
                         else None)
        return source, split_for_cores(source.storage, plan.pieces, sizes), version, sizes

    @staticmethod
    def _snapshot(version: str | None, pieces: list[pruning.Piece], now: int) -> PlannedSnapshot | None:
        """What one partition's task needs to know of the planned version (its pieces carry their deletes)."""
        if version is None:
            return None
        return PlannedSnapshot(version, now, tuple(p.segment_id for p in pieces))

    def _rows_only(self) -> bool:
        """A relation declared with no column at all (``.schema(StructType([]))``, e.g. the rewrite of
        ``count(*)`` by the extension's rules): Spark needs only how many rows there are."""
        return not self.target.names and not self.filter and not self.positions

    def planned_rows(self) -> int | None:
        """How many rows the read gives when planning alone knows, for the Spark extension to answer it
        without a Python task: a rows-only read's count from the index files and the row counts ADD SEGMENT
        recorded (CarbonTable.count: no data page is opened), or 0 for a read whose plan keeps no file (every
        blocklet ruled out by the filter option, an empty table); None for any other read."""
        if self._rows_only():
            resolved_path(self.path, self.storage)
            return count_rows(self.path, None, self.segments)
        parts = self.partitions()
        return 0 if all(isinstance(p, CarbonPartition) and not p.pieces for p in parts) else None

    def planned_values(self) -> list[tuple[str, int]] | None:
        """[(value as Spark SQL text, rows)] when the read is a HASH / RANGE / LIST table's partition column
        alone and every file read holds one value of it (carbon_ds.table.partitions.id_partition_values), for the Spark
        extension to make those rows itself without a Python task; None for any other read."""
        handle = self.handle
        if (handle is None or self.positions or self.partial is not None or len(self.columns or []) != 1
                or not isinstance(handle.partitioning, IdPartitioning)):
            return None
        name = self.columns[0]
        stored = self.source_schema.field(name).type
        if not (pa.types.is_integer(stored) or pa.types.is_date(stored) or pa.types.is_boolean(stored)
                or pa.types.is_decimal(stored)):
            return None  # timestamps would pass through the session time zone as text
        # a decimal the extension declares as bigint travels as its unscaled value (option unscaled_decimals)
        scale = self.unscaled_types.get(name.lower(), stored).scale if self.unscaled else None
        source = open_source(handle, self.segments)
        self._check_schema(source.table)
        rows = partition_value_rows(source, self.columns, self._option_expr())
        if not rows:
            return None  # no row: planned_rows says so
        if scale is not None:
            unscaled = [(v.scaleb(scale), n) for v, n in rows]
            if any(u != u.to_integral_value() for u, _n in unscaled):
                return None
            texts = [(str(int(u)), n) for u, n in unscaled]
        else:
            texts = [(str(v).lower() if isinstance(v, bool) else str(v), n) for v, n in rows]
        self._values_planned = True  # of a table's own carbondata files only: keeps_plan needs no plan
        return texts

    def planned_table(self, max_bytes: int) -> pa.Table | None:
        """The read's rows, read here, when it is small: at most LOCAL_TOUCHED_VALUES values (rows times
        columns) planned to be read and at most LOCAL_MAX_ROWS rows and ``max_bytes`` Arrow bytes after the
        filter; else None. The Spark extension then hands them to Spark as a local relation: no Python task,
        whose fixed cost (and the core it holds) is most of a small read's time. The rows are those ``read``
        gives the tasks, filtered exactly."""
        if max_bytes <= 0 or self.positions or not self.target.names:
            return None
        parts = self.partitions()
        touched = getattr(self, "_touched", None)
        width = len({*(self.columns or self.source_schema.names), *self._option_expr().columns()})
        if touched is None or touched * width > LOCAL_TOUCHED_VALUES:
            return None
        batches, rows, nbytes = [], 0, 0
        for part in parts:
            for batch in self._batches(part, loose=False):  # exactly: every row kept here is shipped in tasks
                rows, nbytes = rows + batch.num_rows, nbytes + batch.nbytes
                if rows > LOCAL_MAX_ROWS or nbytes > max_bytes:
                    return None  # read no further: the tasks read it
                batches.append(batch)
        return pa.Table.from_batches(batches, schema=self.target)

    def planned_bytes(self) -> int | None:
        """The stored bytes of the segments this read plans over (``stored_bytes``), for the Spark extension's
        size estimate; None before planning or for a rows-only read."""
        return getattr(self, "_stored_bytes", None)

    @entry_point
    def partitions(self) -> list[InputPartition]:
        planned = getattr(self, "_planned", None)
        if planned is not None:  # planned_rows planned this reader already
            return planned
        resolved_path(self.path, self.storage)
        if self._rows_only():
            return [CarbonCountPartition()]
        source, pieces, version, sizes = self._plan()
        groups = pack_pieces(pieces, sizes, planning_cores()) or [[]]
        n, now = len(groups), ts.now_ms()
        self._planned = [CarbonPartition(i, n, tuple(group), self._snapshot(version, group, now))
                         for i, group in enumerate(groups)]
        return self._planned

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_planned", None)  # the partitions travel to tasks on their own, once each
        return state

    def _task_plan(self, partition: CarbonPartition) -> list[pruning.Piece]:
        """The pieces this task reads, each with its deletes: the partition's own snapshot, or (a plan kept by
        Spark from an earlier query) the table as it is now; see carbon_ds.spark.source.query_version."""
        snap = partition.snapshot
        pieces = list(partition.pieces)
        if snap is not None and in_task() and not self.pinned:
            started = query_started_ms()
            # not planned for this query: re-planned unless the planned version is the one the query began with
            if ((started is None or snap.planned_ms < started) and not self._verified(snap, started)
                    and not self._current_at(snap.version, started)):
                source, fresh, version, _ = self._plan()
                if version != snap.version:
                    if started is not None:
                        check_unchanged_since(source.storage, source.table.path, source.table.tablestatus_path,
                                              source.details, started)
                    pieces = fresh[partition.index :: partition.count]
        return pieces

    @staticmethod
    def _verified(snap: PlannedSnapshot, started: int | None) -> bool:
        """Whether the Spark extension found the table at the planned version after this query began (it
        reused the plan): the version was current when the plan was made and then, so at the query's start."""
        when = verified_ms(snap) if started is not None else None
        return when is not None and snap.planned_ms <= started <= when

    def plan_key(self) -> str | None:
        """The name of this read's plan in the extension's ``VERIFIED_PLANS`` local property (query_version.plan_key)."""
        for part in self.partitions():
            if isinstance(part, CarbonPartition) and part.snapshot is not None:
                return plan_key(part.snapshot)
        return None

    def _current_at(self, version: str, started: int | None) -> bool:
        """Whether the planned ``version`` is the one a query begun at ``started`` reads, from one tablestatus
        read: the table is still at it (schema file unchanged too), or every commit since it came after the
        query began and only added segments (query_version.version_at)."""
        handle = self.handle
        if handle is None or handle.storage.mtime_ns(handle.schema_path_of(handle.path)) != self.schema_mtime:
            return False
        details = handle.load_details()
        return version_of(details) == version or (started is not None and version_at(details, started) == version)

    def keeps_plan(self) -> bool:
        """Whether this read's plan stays right while the table's tablestatus and schema bytes do, so the
        Spark extension may keep it for the next query (jvm/src ReadPlans): a table's carbondata files only.
        Files of external segments (streaming ones included) can change without a commit."""
        if not self.is_table or self.positions:
            return False
        if getattr(self, "_values_planned", False):
            return True
        if self._rows_only():
            return not open_source(self.handle, self.segments).external
        return all(p.external is None for part in self.partitions() if isinstance(part, CarbonPartition)
                   for p in part.pieces)

    def _check_schema(self, table: TableHandle) -> None:
        """The planned version is read through this reader's columns: a schema changed since the reader was
        made (ALTER TABLE) is refused rather than read as a mix of the old and new columns."""
        now = table.schema
        if not now.equals(self.source_schema):
            raise CarbonTableError(
                f"the schema of table {table.uri} changed after this DataFrame was planned (planned columns: "
                f"{_columns_text(self.source_schema)}; now: {_columns_text(now)}); read the table again")

    @entry_point
    def read(self, partition: CarbonPartition | CarbonCountPartition) -> Iterator[pa.RecordBatch]:
        # rows counted in the task must pass every filter: only rows handed to Spark may be loose
        yield from self._batches(partition, self.loose_filter and self.partial is None)

    def _batches(self, partition: CarbonPartition | CarbonCountPartition, loose: bool) -> Iterator[pa.RecordBatch]:
        resolved_path(self.path, self.storage)
        if isinstance(partition, CarbonCountPartition):
            # index row counts less deleted rows (CarbonTable.count): no data page is opened
            yield from _column_less(count_rows(self.path, None, self.segments))
            return
        direct_dictionary.use(self.timestamp_keys)  # a Python worker runs one task at a time
        storage, table_path = Storage.for_path(self.path)
        planned = self._task_plan(partition)
        columns = self.table_columns
        table_path = table_path if self.is_table else None  # a planned file CLEAN FILES moved: from the trash
        if self.positions:
            # every live row with where it lives; the DELETE/UPDATE predicate is Spark's to evaluate
            tables = position_tables(storage, planned, self.columns or [], self.source_schema, columns,
                                     table_path=table_path)
        else:
            # exact filtering by the option only: pushed filters are Spark's to evaluate
            tables = read_pieces(
                storage, planned, self._prune_expr(), self.columns, self.source_schema, exact=self._option_expr(),
                table_columns=columns, table_path=table_path, loose=loose,
            )
        if self.partial is not None:
            yield from partial_counts.counts(tables, self.partial, self.target).to_batches()
            return
        for table in tables:
            if self.target.names:
                # once per unit, before slicing: casts run on whole columns
                table = conform(unscaled_decimals(table, self.unscaled, self.unscaled_types), self.target)
            if table.num_columns and table.column(0).num_chunks > 1:
                table = table.combine_chunks()  # a filtered unit comes in many small pieces
            for b in table.to_batches(max_chunksize=SPARK_BATCH_ROWS):
                # no declared column: keep the row count (conform would rebuild a batch of 0 rows)
                yield b if self.target.names else b.select([])

def _columns_text(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name} {f.type}" for f in schema)


class CarbonPushdownReader(CarbonReader):
    """Adds ``pushFilters`` for PySpark releases without the stale-reuse defect (none released yet).

    Every pushed filter is handed back to Spark, which evaluates it on every row, so Spark's filters only
    ever prune by min/max (never drop rows themselves).
    """

    def __init__(self, path: str, schema: StructType, options: dict[str, str],
                 storage: dict[str, str] | None = None):
        super().__init__(path, schema, options, storage)
        self.pushed = AlwaysTrue()

    @entry_point
    def pushFilters(self, filters):  # noqa: N802 - Spark's name

        parts = []
        for f in filters:
            e = from_spark_filter(f)
            if e is not None:
                try:
                    parts.append(bind(e, self.source_schema))
                except CarbonOptionError:
                    pass  # a filter we cannot type: Spark still applies it
            yield f  # always returned: Spark re-evaluates every filter
        self.pushed = and_(*parts)

    def _prune_expr(self):
        return and_(self._option_expr(), self.pushed)




def _column_less(rows: int) -> Iterator[pa.RecordBatch]:
    """Batches with no column holding ``rows`` rows in all: Spark counts their rows. A batch built from
    no arrays has 0 rows, so each one is a null column's batch with that column dropped."""
    while rows > 0:
        n = min(rows, COUNT_BATCH_ROWS)
        yield pa.RecordBatch.from_arrays([pa.nulls(n)], names=["rows"]).select([])
        rows -= n
















