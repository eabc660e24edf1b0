"""The load of a HASH / RANGE / LIST partitioned table: each row goes to its partition id, and each
partition's rows are written as their own files in ``Fact/Part0/Segment_N/`` with the id as the file's
task number (``part-0-<id>_batchno<task>-0-<segment>-<ts>``), as CarbonData 1.3-1.5 names them. The task
number moves to ``batchno`` so several tasks of one load can write the same partition."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa

from carbon_ds.errors import CarbonTableError
from carbon_ds.fs import basename
from carbon_ds.table.loads.load_base import TaskResult, sort_for_load, writer_options
from carbon_ds.table.loads.plain import PlainLoad
from carbon_ds.table.meta.files import segment_file as segfiles
from carbon_ds.table.meta.schema.conform import conform
from carbon_ds.table.partitions.id_spec import Layout
from carbon_ds.writers.carbon_file_writer import CarbonWriter


def split_by_partition(data: pa.Table, layout: Layout) -> list[tuple[int, pa.Table]]:
    """(partition id, its rows) for every id present, ids ascending; one vectorised mapping pass."""
    if data.num_rows == 0:
        return []
    ids = layout.partition_ids(data.column(layout.column))
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    cuts = np.flatnonzero(np.diff(sorted_ids)) + 1
    starts = np.concatenate([[0], cuts])
    ends = np.concatenate([cuts, [len(ids)]])
    taken = data.take(pa.array(order))
    return [(int(sorted_ids[s]), taken.slice(int(s), int(e - s))) for s, e in zip(starts, ends, strict=True)]


class CarbonPartitionLoad(PlainLoad):
    """A load whose tasks split their rows by partition id; the commit is the plain one (segment file lists
    every task's index files, one per partition written)."""

    layout: Layout | None = None  # ALTER ... PARTITION writes under the new layout before it is stored

    def write_task(self, task_no: int, batches: Iterable[pa.RecordBatch | pa.Table]) -> TaskResult:
        table, reservation = self.table, self.reservation
        layout = self.layout or table.id_layout
        if layout is None:
            raise CarbonTableError(f"table {table.uri} has no HASH/RANGE/LIST partitioning")
        schema = table.schema
        options = writer_options(table, self.options)
        folder = segfiles.segment_dir(table.path, reservation.segment_id)
        parts = [conform(b, schema) for b in batches]
        parts = [pa.Table.from_batches([p]) if isinstance(p, pa.RecordBatch) else p for p in parts]
        data = pa.concat_tables(parts).combine_chunks() if parts else schema.empty_table()
        result = TaskResult(reservation.segment_id, task_no)
        writers: list[CarbonWriter] = []
        try:
            for pid, rows in split_by_partition(data, layout):
                writer = CarbonWriter(folder, schema, options, task_no=pid, segment_no=reservation.segment_id,
                                      timestamp=reservation.load_start_ms, storage=table.storage,
                                      columns=table.columns, batch_no=task_no)
                writers.append(writer)
                writer.write(sort_for_load(rows, options.sort_columns) if options.is_sort else rows)
                written = writer.close()
                result.data_files += [(w.file_name, int(w.file_size), int(w.num_rows)) for w in written]
                index_path = getattr(writer, "index_path", None)
                if written and index_path:
                    result.index_files.append((basename(index_path), table.storage.size(index_path)))
        except BaseException:
            for w in writers:
                w.abort()
            raise
        return result
