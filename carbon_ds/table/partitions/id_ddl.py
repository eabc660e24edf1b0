"""SHOW / ADD / SPLIT / DROP PARTITION on HASH, RANGE and LIST tables, with CarbonData 1.3-1.5's meaning.

- ADD PARTITION('v', ...): RANGE appends upper bounds (above the last), LIST appends values or groups; the
  DEFAULT partition's rows are re-distributed under the new layout.
- SPLIT PARTITION(id) INTO('a', 'b', ...): the partition becomes several (new ids after the highest ever
  given); its rows are re-distributed. RANGE: the last new bound must be the partition's upper bound; LIST:
  the new groups must hold exactly the partition's values. DEFAULT (0) cannot be split.
- DROP PARTITION(id): the layout loses the partition and its rows move (RANGE: into the next partition, the
  last one's into DEFAULT; LIST: into DEFAULT). ``WITH DATA`` deletes the rows too. DEFAULT cannot go.

Each is one commit: every segment holding a file of an affected partition is rewritten into one new segment
(its live rows under the new layout) and marked "Marked for Delete" in the same tablestatus write. The schema
file changes on the side that keeps pruning safe if a crash falls between the two writes: DROP writes it
first (the moved rows sit in files whose id the new layout no longer knows, and such files are always read),
ADD and SPLIT after the data commit (new ids are unknown to the old layout and always read; rows that keep an
old id stay inside that id's old range).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from carbon_ds import faults
from carbon_ds.errors import CarbonOptionError, CarbonTableError
from carbon_ds.format.thrift.structs import PartitionType
from carbon_ds.fs import basename
from carbon_ds.table.loads.load_base import reserve
from carbon_ds.table.meta.handle import TableHandle
from carbon_ds.table.meta.schema import schema_file
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.tablestatus import LoadDetail
from carbon_ds.table.partitions.id_load import CarbonPartitionLoad
from carbon_ds.table.partitions.id_spec import Layout, build_layout, parse_list_info, partition_id_of
from carbon_ds.table.read.planned_reads import table_rows


def layout_of(table: TableHandle, operation: str) -> Layout:
    layout = table.id_layout
    if layout is None:
        raise CarbonTableError(f"{operation}: table {table.uri} has no HASH/RANGE/LIST partitions")
    return layout


def show_partitions(table: TableHandle) -> list[str]:
    """SHOW PARTITIONS rows: ``vin = HASH_NUMBER(5)``; ``0, country = DEFAULT``, ``2, country = UK, US``;
    ``1, logdate < 2014/01/01``, ``2, 2014/01/01 <= logdate < 2015/01/01``."""
    return layout_of(table, "SHOW PARTITIONS").show_rows()


def _alterable(table: TableHandle, operation: str) -> Layout:
    layout = layout_of(table, operation)
    if layout.kind == PartitionType.HASH:
        raise CarbonOptionError(f"{operation}: table {table.uri} is HASH partitioned; ADD, SPLIT and DROP "
                                "PARTITION only support RANGE and LIST partitions")
    return layout


def _index_of(layout: Layout, pid: int) -> int:
    if pid not in layout.ids:
        raise CarbonOptionError(f"Invalid Partition Id {pid}\n Use show partitions table_name to get the list of "
                                f"valid partitions (ids: {', '.join(map(str, layout.ids))})")
    return layout.ids.index(pid)


def _groups(values: list) -> list[list[str]]:
    """ADD/SPLIT values: each a value or a parenthesised group ('(c, d)') or a tuple."""
    out: list[list[str]] = []
    for v in values:
        if isinstance(v, (tuple, list)):
            out.append([str(x) for x in v])
        else:
            out.extend(parse_list_info(str(v)))
    return out


def _next_id(table: TableHandle, layout: Layout) -> int:
    """Above the highest id ever given, and above any id a file carries (an ALTER that stopped half way)."""
    found = [partition_id_of(basename(f.path)) for f in table.files()]
    return max([layout.max_partition, *[p for p in found if p is not None]]) + 1


def _new_layout(table: TableHandle, old: Layout, ids: list[int], range_text: list[str],
                list_text: list[list[str]], max_partition: int) -> Layout:
    return build_layout(old.kind, old.column, old.type, ids, len(ids), max_partition, range_text, list_text,
                        {k.lower(): v for k, v in table.properties.items()}, old.column_schema)


def add_partition(table: TableHandle, values: list, location: str | None = None, if_not_exists: bool = False
                  ) -> list[int]:
    """ALTER TABLE ADD PARTITION: ``values`` new RANGE bounds or LIST values; returns the new partition ids.
    (``location`` and ``if_not_exists`` belong to Hive-style partitions and are refused.)"""
    old = _alterable(table, "ADD PARTITION")
    if location is not None or if_not_exists:
        raise CarbonOptionError(f"ADD PARTITION on table {table.uri} ({old.type_name}): LOCATION and IF NOT EXISTS apply "
                                "to Hive-style partitions only")
    values = list(values)
    groups = _groups(values)
    first = _next_id(table, old)
    new_ids = list(range(first, first + (len(groups) if old.kind == PartitionType.LIST else
                                         len([v for g in groups for v in g]))))
    if old.kind == PartitionType.RANGE:
        bounds = [v for g in groups for v in g]
        new = _new_layout(table, old, old.ids + new_ids, old.range_text + bounds, [], new_ids[-1])
    else:
        new = _new_layout(table, old, old.ids + new_ids, [], old.list_text + groups, new_ids[-1])
    _rewrite(table, old, new, {0}, set(), schema_first=False)
    return new_ids


def split_partition(table: TableHandle, pid: int, values: list) -> list[int]:
    """ALTER TABLE SPLIT PARTITION(pid) INTO(values): returns the new partition ids."""
    if int(pid) == 0:
        raise CarbonOptionError("Cannot split default partition! Use ADD PARTITION to add ranges or values")
    old = _alterable(table, "SPLIT PARTITION")
    idx = _index_of(old, int(pid))
    groups = _groups(values)
    first = _next_id(table, old)
    if old.kind == PartitionType.RANGE:
        bounds = [v for g in groups for v in g]
        new_ids = list(range(first, first + len(bounds)))
        upper = old.range_text[idx - 1]
        new = _new_layout(table, old, old.ids[:idx] + new_ids + old.ids[idx + 1:],
                          old.range_text[:idx - 1] + bounds + old.range_text[idx:], [], new_ids[-1])
        if new.bounds[idx - 1 + len(bounds) - 1] != old.bounds[idx - 1]:
            raise CarbonOptionError(f"SPLIT PARTITION({pid}): the last new bound must be the partition's upper "
                                    f"bound {upper}; found {bounds[-1]}")
    else:
        new_ids = list(range(first, first + len(groups)))
        new = _new_layout(table, old, old.ids[:idx] + new_ids + old.ids[idx + 1:], [],
                          old.list_text[:idx - 1] + groups + old.list_text[idx:], new_ids[-1])
        split_values = {v for g in new.groups[idx - 1: idx - 1 + len(groups)] for v in g}
        if split_values != set(old.groups[idx - 1]):
            raise CarbonOptionError(f"SPLIT PARTITION({pid}): the new lists must hold exactly the partition's "
                                    f"values ({', '.join(old.list_text[idx - 1])}); found "
                                    f"{', '.join(v for g in groups for v in g)}")
    _rewrite(table, old, new, {int(pid)}, set(), schema_first=False)
    return new_ids


def drop_partition(table: TableHandle, pid: int, with_data: bool = False) -> None:
    """ALTER TABLE DROP PARTITION(pid) [WITH DATA]."""
    if int(pid) == 0:
        raise CarbonOptionError("Cannot drop default partition! Please use delete statement!")
    old = _alterable(table, "DROP PARTITION")
    idx = _index_of(old, int(pid))
    ids = old.ids[:idx] + old.ids[idx + 1:]
    if old.kind == PartitionType.RANGE:
        if len(old.range_text) == 1:
            raise CarbonOptionError(f"DROP PARTITION({pid}): the table's only range partition cannot be dropped")
        new = _new_layout(table, old, ids, old.range_text[:idx - 1] + old.range_text[idx:], [], old.max_partition)
    else:
        if len(old.list_text) == 1:
            raise CarbonOptionError(f"DROP PARTITION({pid}): the table's only list partition cannot be dropped")
        new = _new_layout(table, old, ids, [], old.list_text[:idx - 1] + old.list_text[idx:], old.max_partition)
    _rewrite(table, old, new, {int(pid)}, {int(pid)} if with_data else set(), schema_first=True)


def _write_schema(table: TableHandle, layout: Layout) -> None:
    table.info.fact_table.partitionInfo = layout.to_info()
    schema_file.write(table.storage, table.schema_path, table.info)


def _rewrite(table: TableHandle, old: Layout, new: Layout, affected: set[int], dropped: set[int],
             schema_first: bool) -> None:
    """Rewrite every segment holding an ``affected`` partition's file under ``new`` (rows of ``dropped``
    partitions left out) and store ``new``; one tablestatus write swaps the segments."""
    with table.update_lock("ALTER TABLE PARTITION"):
        segs = sorted({f.segment_id for f in table.files() if partition_id_of(basename(f.path)) in affected},
                      key=lambda s: (len(s), s))
        if schema_first:
            _write_schema(table, new)
            faults.point("partition.schema_written")
        if segs:
            data = table_rows(table, None, segs)
            if dropped and data.num_rows:
                keep = ~np.isin(old.partition_ids(data.column(old.column)), sorted(dropped))
                data = data.filter(pa.array(keep))
            load = CarbonPartitionLoad(table, reserve(table))
            load.layout = new
            replaced = set(segs)

            def swap(entries: list[LoadDetail]) -> None:
                now = str(ts.now_ms())
                for e in entries:
                    if e.name in replaced and e.status in ts.READABLE:
                        e.status = ts.MARKED_FOR_DELETE
                        e.modification_time = now

            try:
                load.write([data])
                faults.point("partition.rewritten")
                load.stage(swap)
                load.commit()
            except BaseException:
                load.abort()
                raise
            faults.point("partition.committed")
        if not schema_first:
            _write_schema(table, new)
