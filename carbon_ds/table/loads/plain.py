"""The load of an unpartitioned table: every task writes into ``Fact/Part0/Segment_N/``."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from carbon_ds.fs import basename
from carbon_ds.table.loads.load_base import Load, TaskResult, mark_success, sort_for_load, writer_options
from carbon_ds.table.meta.files import segment_file as segfiles
from carbon_ds.table.meta.schema.conform import conform
from carbon_ds.table.meta.status import tablestatus as ts
from carbon_ds.table.meta.status.tablestatus import LoadDetail
from carbon_ds.writers.carbon_file_writer import CarbonWriter


class PlainLoad(Load):
    """A load into the segment folder; the segment file lists the tasks' index files."""

    def write_task(self, task_no: int, batches: Iterable[pa.RecordBatch | pa.Table]) -> TaskResult:
        """With sort columns the task's rows are gathered and sorted before writing (CarbonData's LOCAL_SORT
        sorts a whole task); without, batches stream straight to the writer."""
        table, reservation = self.table, self.reservation
        schema = table.schema
        options = writer_options(table, self.options)
        folder = segfiles.segment_dir(table.path, reservation.segment_id)
        writer = CarbonWriter(folder, schema, options, task_no=task_no, segment_no=reservation.segment_id,
                              timestamp=reservation.load_start_ms, storage=table.storage, columns=table.columns)
        try:
            if options.is_sort and not self.presorted:
                parts = [conform(b, schema) for b in batches]
                parts = [pa.Table.from_batches([p]) if isinstance(p, pa.RecordBatch) else p for p in parts]
                if parts:
                    writer.write(sort_for_load(pa.concat_tables(parts).combine_chunks(), options.sort_columns))
            else:
                for b in batches:
                    writer.write(conform(b, schema))
            written = writer.close()
        except BaseException:
            writer.abort()
            raise
        result = TaskResult(reservation.segment_id, task_no)
        result.data_files = [(w.file_name, int(w.file_size), int(w.num_rows)) for w in written]
        index_path = getattr(writer, "index_path", None)
        if written and index_path:
            result.index_files = [(basename(index_path), table.storage.size(index_path))]
        return result

    def _commit(self, results: list[TaskResult]) -> LoadDetail:
        table, reservation = self.table, self.reservation
        seg = reservation.segment_id
        index_names = [n for r in results for n, _s in r.index_files]
        data_size = sum(s for r in results for _n, s, _r in r.data_files)
        index_size = sum(s for r in results for _n, s in r.index_files)
        end = ts.now_ms()
        seg_name = segfiles.segment_file_name(seg, end)
        # Written before the status flip and under a fresh name: until the flip nothing refers to it.
        segfiles.write(table.storage, table.path, seg_name, segfiles.for_load(seg, index_names))
        with table.edit_status("LOAD (commit)") as edit:
            entries = edit.entries
            entry = mark_success(table, entries, reservation, end, seg_name, data_size, index_size)
            if reservation.overwrite:
                for other in entries:
                    if other is not entry and other.status in ts.READABLE:
                        other.status = ts.MARKED_FOR_DELETE
                        other.modification_time = str(end)
            self.apply_staged(entries)
        return entry

    def _remove_files(self) -> None:
        table = self.table
        table.storage.delete_dir(segfiles.segment_dir(table.path, self.reservation.segment_id))
