"""``CarbonTable``: the facade. One short method per operation over ``TableHandle``; the work is in ops/,
read/ and write/, which never import this module."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from carbon_ds.errors import CarbonError
from carbon_ds.table.loads.load_base import Load
from carbon_ds.table.loads.start import start_load
from carbon_ds.table.meta.handle import DataFile, SegmentInfo, TableHandle, resolve_columns
from carbon_ds.table.meta.options import LoadOptions, parse_write
from carbon_ds.table.ops import schema_update as schema_ops
from carbon_ds.table.ops.compaction import compact
from carbon_ds.table.ops.dml import arrow_merge, delete_update
from carbon_ds.table.ops.segments import add as segment_add
from carbon_ds.table.ops.segments import manage as segment_ops
from carbon_ds.table.partitions import hive_ddl, id_ddl
from carbon_ds.table.partitions.id_spec import HashPartition, ListPartition, RangePartition
from carbon_ds.table.partitions.partitioning import HivePartitioning, IdPartitioning
from carbon_ds.table.read import planned_reads
from carbon_ds.table.read.scan import Scan

_PARTITION_DDL = {type(None): hive_ddl, HivePartitioning: hive_ddl, IdPartitioning: id_ddl}

__all__ = ["CarbonTable", "DataFile", "HashPartition", "ListPartition", "RangePartition", "SegmentInfo",
           "resolve_columns"]


class CarbonTable(TableHandle):
    """A CarbonData table: ``CarbonTable.open(path)`` or ``CarbonTable.create(path, schema, ...)``.

    Reading: ``scan``, ``to_arrow``, ``count``, ``files``, ``segments``. Changing: ``load`` (a new segment),
    ``delete``/``update`` (rows), ``add_segment``, ``delete_segments``, ``clean_files``, partitions.

    Example:
        >>> t = carbon_ds.CarbonTable.open(path)
        >>> t.count() == t.to_arrow().num_rows
        True
        >>> deleted = t.delete("speed > 200")          # rows recorded in CarbonData's delete deltas
        >>> t.count() == t.to_arrow().num_rows
        True
    """

    def __repr__(self) -> str:
        schema = self.schema
        cols = ", ".join(f"{f.name}: {f.type}" for f in list(schema)[:6]) + (", ..." if len(schema) > 6 else "")
        try:
            segs = self.segments()
            readable = sum(s.readable for s in segs)
            rows = f"{self.count():,}"
        except CarbonError as e:  # a damaged table still gets a repr
            return f"CarbonTable({self.uri!r}, {len(schema)} columns [{cols}], unreadable: {e})"
        extra = [f"sort_columns={self.sort_columns}"] if self.sort_columns else []
        extra += [f"partition_by={self.partition_columns}"] if self.partition_columns else []
        return (f"CarbonTable({self.uri!r}, {len(schema)} columns [{cols}], {readable} readable segment(s) "
                f"of {len(segs)}, {rows} rows" + "".join(f", {x}" for x in extra) + ")")

    # ------------------------------------------------------------------ reading
    def to_arrow(self, columns: list[str] | None = None, segments: str | list | None = None) -> pa.Table:
        """Every live row of the table (or of the chosen ``segments``, ``"0,2"``), ``columns`` of it."""
        return planned_reads.table_rows(self, columns, segments)

    def scan(self, columns: list[str] | None = None, filter: Any = None, segments: str | list | None = None,
             limit: int | None = None, batch_size: int | None = None, use_threads: bool = True) -> Scan:
        """A lazy, pruned scan (see ``carbon_ds.scan``): ``to_batches()``, ``to_reader()``, ``to_arrow()``,
        ``to_pandas()``, ``count()``, ``explain()``, ``plan()``."""
        return Scan(self, columns, filter, segments, limit, batch_size, use_threads)

    def count(self, filter: Any = None, segments: str | list | None = None) -> int:
        """Rows where ``filter`` (SQL text, expression or tuples) is TRUE; without a filter from the index
        files' row counts alone."""
        return planned_reads.count(self, filter, segments)

    # ------------------------------------------------------------------ loading
    def load(self, overwrite: bool = False, partition: dict | None = None, dynamic: bool = False,
             **options: Any) -> Load:
        """A new load (segment "In Progress"): ``with t.load() as load: load.write(batches)`` commits at the
        end of the block and aborts on an error. ``options`` are write options (see README)."""
        opts: LoadOptions = parse_write(options)
        return start_load(self, opts, overwrite=overwrite, partition=partition, dynamic=dynamic)

    # ------------------------------------------------------------------ segments
    def segment_rows(self, limit: int | None = None) -> list[dict[str, str]]:
        """SHOW SEGMENTS rows (newest first), values as strings."""
        return segment_ops.segment_rows(self, limit)

    def show_segments(self, limit: int | None = None) -> str:
        """SHOW SEGMENTS as a text table, newest first."""
        return segment_ops.show_segments(self, limit)

    def delete_segments(self, ids) -> list[str]:
        """Mark segments "Marked for Delete" (all or nothing); CLEAN FILES removes their files later."""
        return segment_ops.delete_segments(self, ids)

    def delete_segments_before(self, when) -> list[str]:
        """Mark segments whose load started before ``when`` ('yyyy-MM-dd HH:mm:ss', local time)."""
        return segment_ops.delete_segments_before(self, when)

    def clean_files(self, force: bool = False, retention_days: float | None = None):
        """Move files of deleted/compacted segments to ``.Trash`` and expire old trash."""
        return segment_ops.clean_files(self, force=force, retention=retention_days)

    def compact(self, kind: str = "minor", segments: str | list | None = None, lock_timeout: float = 0.0,
                runner=None, settings: dict[str, str] | None = None, include_external: bool = False):
        """ALTER TABLE COMPACT: merge segments (``kind`` minor, major or custom with ``segments``) into one
        re-sorted segment; returns the merged segments (see docs/compaction.md). ``runner``: where the merge
        tasks run (default here; Spark: carbon_ds.spark.statements.compaction_tasks.compact_with_spark); ``settings``:
        CarbonData system-level properties used where the table sets none; ``include_external`` (custom
        only): rewrite the chosen Parquet / ORC / CSV / JSON segments' live rows into carbondata too."""
        return compact.compact(self, kind, segments, lock_timeout, runner=runner, settings=settings,
                                  include_external=include_external)

    def add_segment(self, path: str, format: str | None = "carbondata", partition: str | None = None,
                    options: dict[str, str] | None = None, dry_run: bool = False):
        """Register an existing carbondata/Parquet/ORC/CSV/JSON folder as segment(s) without converting it;
        returns the new ids, or with ``dry_run`` the validation report."""
        return segment_add.add_segment(self, path, format, partition, options, dry_run)

    # ------------------------------------------------------------------ rows
    def delete(self, where: Any = None, **kwargs: Any) -> int:
        """Delete the rows where ``where`` is TRUE through delete deltas; returns rows deleted."""
        return delete_update.delete(self, where, **kwargs)

    def update(self, assignments: dict, where: Any = None, **kwargs: Any) -> int:
        """Set columns of the rows where ``where`` is TRUE; returns rows updated."""
        return delete_update.update(self, assignments, where, **kwargs)

    def merge(self, source: Any, on: str | list[str] | dict[str, str], *, source_alias: str = "source",
              target_alias: str = "target", **kwargs: Any) -> arrow_merge.TableMerger:
        """MERGE ``source`` (Arrow / pandas / Spark rows) into this table on the key columns ``on``; add
        ``when_matched_update(set=...)`` / ``when_matched_update_all()`` / ``when_matched_delete()`` /
        ``when_not_matched_insert(values=...)`` / ``when_not_matched_insert_all()`` clauses, then
        ``execute()`` (one commit; returns MergeMetrics)."""
        return arrow_merge.TableMerger(self, source, on, source_alias, target_alias, **kwargs)

    # ------------------------------------------------------------------ partitions
    def show_partitions(self) -> list[str]:
        """Live partition folders ("day=1/hour=2"), sorted; for HASH/RANGE/LIST tables CarbonData's rows
        ("0, country = DEFAULT", "1, logdate < 2014/01/01", "vin = HASH_NUMBER(5)")."""
        return self._partition_ddl().show_partitions(self)

    def add_partition(self, spec: dict | list, location: str | None = None, if_not_exists: bool = False):
        """ALTER TABLE ADD PARTITION: a Hive spec {col: value} (returns the new segment id when ``location``
        adds data), or for RANGE/LIST tables a list of bounds / values (returns the new partition ids)."""
        return self._partition_ddl().add_partition(self, spec, location, if_not_exists)

    def _partition_ddl(self):
        """The partition DDL module of this table's flavour (Hive's, which explains that an unpartitioned
        table has no partitions, when it has none)."""
        return _PARTITION_DDL[type(self.partitioning)]

    def split_partition(self, partition_id: int, values: list) -> list[int]:
        """ALTER TABLE SPLIT PARTITION(id) INTO(values) on a RANGE/LIST table; returns the new ids."""
        return id_ddl.split_partition(self, partition_id, values)

    def drop_partition(self, partition_id: int, with_data: bool = False) -> None:
        """ALTER TABLE DROP PARTITION(id) [WITH DATA] on a RANGE/LIST table: the rows move to the next range
        (the last one's, and LIST's, to DEFAULT) unless ``with_data``."""
        id_ddl.drop_partition(self, partition_id, with_data)

    def drop_partitions(self, spec: dict, if_exists: bool = False) -> list[str]:
        """ALTER TABLE DROP PARTITION; returns the dropped folders."""
        return hive_ddl.drop_partitions(self, spec, if_exists)

    # ------------------------------------------------------------------ schema
    def update_schema(self) -> schema_ops.UpdateSchema:
        """Staged column changes (add/drop/rename/widen) committed as one schema change:
        ``with t.update_schema() as u: u.add_column("c", pa.int64())``."""
        return schema_ops.update_schema(self)

    def set_properties(self, properties: dict[str, str]) -> None:
        """ALTER TABLE SET TBLPROPERTIES (only properties that may change after creation)."""
        schema_ops.set_properties(self, properties)

    def unset_properties(self, names: list[str]) -> None:
        """ALTER TABLE UNSET TBLPROPERTIES."""
        schema_ops.unset_properties(self, names)
