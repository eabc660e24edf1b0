"""Planning the reads of many carbondata relations in one Python call, for the Spark extension.

Spark plans a Python data source read with two calls into Python workers: one makes the data source, one
makes its reader, read function and input partitions. A query over eight carbondata relations pays sixteen,
tens of milliseconds each. The extension (jvm/src PruneCarbonRelations) asks once for all the relations one
optimization run made, through a schema call whose option carries the requests; the answer for each is the
byte stream Spark's own planning worker would have written (pyspark's ``write_read_func_and_partitions``),
which the JVM reads with ``PythonDataSourceReadInfo.receive`` and sets on that relation's source. A request
that fails here is answered with null: Spark then plans it the usual way and reports the error as usual.
"""

from __future__ import annotations

import base64
import inspect
import io
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import CaseInsensitiveDict, DataSource, DataSourceReader
from pyspark.sql.types import StructType

from carbon_ds.spark.bridge.protocol import (
    PlanReadsAnswer,
    PlanReadsRequest,
    ReadAnswer,
    ReadSettings,
    ValueCount,
)

try:  # Spark's planning worker; the call is only offered where its writer is there to make the answer
    from pyspark.sql.worker.plan_data_source_read import write_read_func_and_partitions
except ImportError:  # pragma: no cover - a PySpark without it plans every read the usual way
    write_read_func_and_partitions = None


def _writer_arguments(settings: ReadSettings) -> dict[str, Any]:
    """The settings the installed PySpark's writer takes (binary_as_bytes arrived in 4.2)."""
    accepted = inspect.signature(write_read_func_and_partitions).parameters
    wanted = {"max_arrow_batch_size": settings.max_arrow_batch_size, "binary_as_bytes": settings.binary_as_bytes}
    return {k: v for k, v in wanted.items() if k in accepted}


def ipc_base64(table: pa.Table) -> str:
    """``table`` as an Arrow IPC stream in base64: how rows travel in a schema call's JSON answer."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as out:
        out.write_table(table)
    return base64.b64encode(sink.getvalue().to_pybytes()).decode("ascii")


def plan_reads(make_source: Callable[[CaseInsensitiveDict], DataSource], request: PlanReadsRequest
               ) -> PlanReadsAnswer:
    """For each read of ``request`` (its options and schema): ``read``, base64 of Spark's read-info stream;
    ``rows`` where the reader knows its rows at planning (``planned_rows``: a rows-only read's count from
    metadata, or 0 for a read whose plan keeps no file; the JVM then reads a range of n empty rows, or an empty
    relation, instead); ``values`` for a read of a partitioned table's partition column alone whose files each
    hold one value (``planned_values``: the JVM makes n rows of each value over a range); ``arrow``, base64 of
    an Arrow IPC stream, a small read's rows read here (``planned_table``, up to the settings' ``local_bytes``:
    the JVM plans them as a local scan), beside its ``read`` (which the JVM plans where the rows could not be
    checked against the table when they run); or None where it must be planned the usual way. ``keep`` marks
    an answer that stays right while the table's tablestatus and schema bytes do (``keeps_plan``), which the
    JVM may reuse for the same read; ``plan`` names it for the tasks of a query that reuses it
    (carbon_ds.names.VERIFIED_PLANS); ``bytes`` beside a ``read`` gives the stored bytes of the segments it
    plans over (``planned_bytes``), which the JVM sizes the relation from for join planning."""
    if write_read_func_and_partitions is None:
        return PlanReadsAnswer(answers=(None,) * len(request.reads))
    settings = request.settings
    arguments = _writer_arguments(settings)
    answers: list[ReadAnswer | None] = []
    for read in request.reads:
        try:
            options = CaseInsensitiveDict()
            for key, value in read.options.items():
                options[key] = value
            source = make_source(options)
            schema = StructType.fromJson(dict(read.schema))
            reader = source.reader(schema=schema)
            if settings.bytes_only:  # Spark plans the read itself; only its size is asked for
                if hasattr(reader, "planned_bytes"):
                    reader.partitions()
                stored = reader.planned_bytes() if hasattr(reader, "planned_bytes") else None
                answers.append(None if stored is None else ReadAnswer(bytes=int(stored)))
                continue
            values = reader.planned_values() if hasattr(reader, "planned_values") else None
            rows = reader.planned_rows() if values is None and hasattr(reader, "planned_rows") else None
            pushes = getattr(reader.pushFilters, "__func__", None) is not DataSourceReader.pushFilters
            local_bytes = settings.local_bytes
            # a reader taking Spark's filters reads only with them, which this call does not have
            table = (reader.planned_table(local_bytes) if values is None and rows is None and local_bytes > 0
                     and not pushes and hasattr(reader, "planned_table") else None)
            read_info = arrow = stored = None
            if values is None and rows is None:
                if pushes and not settings.filter_pushdown:
                    answers.append(None)  # Spark's worker refuses such a reader with its own message
                    continue
                out = io.BytesIO()
                write_read_func_and_partitions(out, reader=reader, data_source=source, schema=schema, **arguments)
                read_info = base64.b64encode(out.getvalue()).decode("ascii")
                if table is not None:  # the read stays the relation's, should its rows be read again
                    arrow = ipc_base64(table)
                # the extension's size estimate of this read (SizedPythonTable)
                stored = reader.planned_bytes() if hasattr(reader, "planned_bytes") else None
            keep = getattr(reader, "keeps_plan", None) is not None and bool(reader.keeps_plan())
            # named in the local property the JVM sets on reuse (names.VERIFIED_PLANS)
            key = reader.plan_key() if keep and read_info is not None else None
            answers.append(ReadAnswer(
                read=read_info, rows=None if rows is None else int(rows),
                values=None if values is None else tuple(ValueCount(v, int(n)) for v, n in values),
                arrow=arrow, bytes=None if stored is None else int(stored), keep=keep, plan=key))
        except Exception:  # noqa: BLE001 - planned again by Spark, which reports it with the relation
            answers.append(None)
    return PlanReadsAnswer(answers=tuple(answers))
