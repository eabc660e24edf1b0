"""DuckDB over carbon-ds with projection and filter pushdown.

``register(con, "t", path)`` (or ``con.register("t", dataset(path))``) makes ``t`` a name DuckDB queries
through ``carbon_ds.scan``. DuckDB pushes the columns a query needs and the filters of its WHERE clause
only into ``pyarrow.dataset.Dataset`` objects (an Arrow stream it reads whole), so :class:`CarbonDataset` is
one: DuckDB calls its ``scanner(columns=[...], filter=<pyarrow expression>)`` and reads the scanner's
``to_reader()``. The filter is translated into our predicate model, which prunes segments, files, blocklets
and pages by min/max and then filters the rows exactly; a filter that does not translate is applied by
pyarrow to the unpruned stream instead (same rows, more read). DuckDB does not re-check what it pushed.

How robust this is: DuckDB recognises a dataset by ``isinstance(obj, pyarrow.dataset.Dataset)`` and calls
``type(obj).scanner(obj, columns=..., filter=...)`` and ``obj.schema``; that is DuckDB's documented
pushdown route for Arrow datasets, but a Python subclass of ``Dataset`` holds no C++ dataset, so every
other ``Dataset`` method is redefined here or refused with a clear error (never reaching pyarrow's
internals). The tests run real queries through DuckDB, so a DuckDB or pyarrow release that changes
either contract fails them rather than a user's query.

Needs the ``duckdb`` extra: ``pip install 'carbon-ds[duckdb]'``.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from carbon_ds.errors import CarbonError, CarbonOptionError
from carbon_ds.expressions import AlwaysTrue, and_
from carbon_ds.table.read.pruning import Counts, as_expr
from carbon_ds.table.read.scan import Scan


class CarbonDataset(ds.Dataset):
    """A ``pyarrow.dataset.Dataset`` reading a carbon-ds table (or bare folder) through ``carbon_ds.scan``;
    every ``scanner()`` plans and reads anew, so the dataset sees later commits.

    ``counts`` adds up what every scan of this dataset planned and read (segments, files, blocklets,
    pages, rows), as ``Scan.counts`` does for one scan.
    """

    def __init__(self, path: str | os.PathLike, columns: list[str] | None = None, filter: Any = None,
                 segments: str | list | None = None, use_threads: bool = True):
        # Dataset's own constructor refuses to run; this object never uses pyarrow's C++ dataset
        base = Scan(path, columns=columns, filter=filter, segments=segments)  # checks columns and filter now
        self._path, self._segments, self._use_threads = path, segments, use_threads
        self._base_expr = base.expr
        self._table_schema = base.source.schema
        self._schema = base.schema
        self.counts = Counts()
        self.last_filter: str | None = None  # the last filter handed over: our SQL text, or "pyarrow: <expr>"

    def __repr__(self) -> str:
        return f"CarbonDataset({os.fspath(self._path)!r}, columns={self._schema.names})"

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    # ------------------------------------------------------------------ scanning
    def _scan(self, columns: list[str] | None, filter: Any, limit: int | None = None,
              batch_size: int | None = None) -> tuple[Scan, pc.Expression | None]:
        """Our scan for ``columns`` / ``filter``, and the pyarrow filter still to apply (when ``filter``
        did not translate)."""
        cols = list(columns) if columns is not None else self._schema.names
        unknown = [c for c in cols if c not in self._schema.names]
        if unknown:
            raise CarbonOptionError(f"columns {unknown} are not in the dataset of {os.fspath(self._path)} "
                                    f"(columns: {', '.join(self._schema.names)})")
        args = dict(segments=self._segments, batch_size=batch_size, use_threads=self._use_threads)
        if filter is not None:
            try:
                ours = as_expr(filter, self._table_schema)
            except CarbonError:
                if not isinstance(filter, pc.Expression):
                    raise
                # outside our predicate model: pyarrow filters the unpruned stream
                self.last_filter = f"pyarrow: {filter}"
                return Scan(self._path, filter=self._base_expr, columns=self._schema.names, **args), filter
            both = ours if isinstance(self._base_expr, AlwaysTrue) else and_(self._base_expr, ours)
            s = Scan(self._path, columns=cols, filter=both, limit=limit, **args)
            self.last_filter = str(s.expr)
            return s, None
        self.last_filter = None
        return Scan(self._path, columns=cols, filter=self._base_expr, limit=limit, **args), None

    def _reader(self, s: Scan) -> pa.RecordBatchReader:
        s.counts = self.counts  # every scan of this dataset counts into one total, as it plans and reads
        return s.to_reader()

    def scanner(self, columns: list[str] | None = None, filter: Any = None, batch_size: int | None = None,
                **_ignored: Any) -> ds.Scanner:
        """A ``pyarrow.dataset.Scanner`` over the rows matching ``filter`` (a pyarrow expression or any
        carbon-ds filter), with ``columns`` in that order. Options of pyarrow's own scanner that concern its
        file readers (``use_threads``, ``fragment_readahead``, ...) are ignored: our scan reads the files."""
        if isinstance(columns, dict):
            raise CarbonOptionError("columns must be a list of column names; expressions as columns are not "
                                    "supported by CarbonDataset.scanner")
        s, rest = self._scan(columns, filter, batch_size=batch_size)
        reader = self._reader(s)
        if rest is None:
            return ds.Scanner.from_batches(reader)
        cols = list(columns) if columns is not None else self._schema.names
        return ds.Scanner.from_batches(reader, columns=cols, filter=rest)

    def to_batches(self, columns: list[str] | None = None, filter: Any = None, **kwargs: Any):
        return self.scanner(columns=columns, filter=filter, **kwargs).to_batches()

    def to_table(self, columns: list[str] | None = None, filter: Any = None, **kwargs: Any) -> pa.Table:
        return self.scanner(columns=columns, filter=filter, **kwargs).to_table()

    def head(self, num_rows: int, columns: list[str] | None = None, filter: Any = None, **kwargs: Any) -> pa.Table:
        return self.scanner(columns=columns, filter=filter, **kwargs).head(num_rows)

    def count_rows(self, filter: Any = None, **kwargs: Any) -> int:
        s, rest = self._scan(self._schema.names[:1], filter)
        if rest is None:
            return s.count()
        return self.scanner(filter=filter, **kwargs).count_rows()


def _refused(name: str) -> property:
    def fail(self):
        raise CarbonOptionError(f"CarbonDataset.{name} is not supported; CarbonDataset offers schema, scanner, "
                                "to_table, to_batches, head and count_rows")
    return property(fail)


for _name in dir(ds.Dataset):  # every other public Dataset member would reach a C++ dataset that is not there
    if not _name.startswith("_") and _name not in CarbonDataset.__dict__:
        setattr(CarbonDataset, _name, _refused(_name))


def dataset(path: str | os.PathLike, columns: list[str] | None = None, filter: Any = None,
            segments: str | list | None = None, use_threads: bool = True) -> CarbonDataset:
    """The table (or bare folder) at ``path`` as a :class:`CarbonDataset`, which DuckDB queries with
    projection and filter pushdown (``columns``/``filter`` narrow it further for every query)."""
    return CarbonDataset(path, columns=columns, filter=filter, segments=segments, use_threads=use_threads)


def register(con, name: str, path: str | os.PathLike, columns: list[str] | None = None, filter: Any = None,
             segments: str | list | None = None, use_threads: bool = True) -> CarbonDataset:
    """Make ``name`` a relation of the DuckDB connection ``con`` reading the table at ``path``; returns the
    dataset (its ``counts`` tell what the queries read)."""
    d = dataset(path, columns=columns, filter=filter, segments=segments, use_threads=use_threads)
    con.register(name, d)
    return d
