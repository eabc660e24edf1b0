"""The one exception hierarchy of carbon-ds.

Messages say what was expected, what was found, and where (file, offset, column or option).
"""

from __future__ import annotations


class CarbonError(Exception):
    """Base class of every error raised by carbon-ds.

    Example:
        >>> try:
        ...     carbon_ds.read_table(f"{tmp}/no_such_table")
        ... except carbon_ds.CarbonError as e:
        ...     print(type(e).__name__)
        CarbonTableError
    """


class CarbonFormatError(CarbonError):
    """A file does not follow the CarbonData format (corrupt, truncated or unsupported).

    Example:
        >>> _ = open(f"{tmp}/bad.carbondata", "wb").write(b"not carbondata")
        >>> try:
        ...     carbon_ds.CarbonDataFile(f"{tmp}/bad.carbondata")
        ... except carbon_ds.CarbonFormatError as e:
        ...     print(e.path.endswith("bad.carbondata"), e.offset)
        True 0
    """

    def __init__(self, message: str, path: str | None = None, offset: int | None = None):
        self.path = path
        self.offset = offset
        where = []
        if path is not None:
            where.append(str(path))
        if offset is not None:
            where.append(f"offset {offset}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)


class CarbonSchemaError(CarbonError):
    """Data does not match the table schema, or a schema cannot be represented.

    Example:
        >>> try:
        ...     carbon_ds.write_table(pa.table({"x": [1]}), path)
        ... except carbon_ds.CarbonSchemaError as e:
        ...     print(str(e).splitlines()[1])
          column 'vin': expected string, found no such column
    """


class CarbonValueError(CarbonSchemaError):
    """A value in a data file that does not parse as its column's type: the message names the file, the row (and
    line), the column and the value (``detail``: the message without the file)."""

    def __init__(self, detail: str, path: str):
        self.detail = detail
        self.path = path
        super().__init__(f"{path}: {detail}")


class CarbonOptionError(CarbonError, ValueError):
    """An option, argument or SQL clause is invalid.

    Example:
        >>> try:
        ...     carbon_ds.write_table(arrow_table, f"{tmp}/t", compresor="zstd")
        ... except carbon_ds.CarbonOptionError as e:
        ...     print(str(e)[:34])
        unknown write option 'compresor';
    """


class CarbonFilterError(CarbonOptionError):
    """A filter that cannot be parsed or evaluated (names the part at fault: an unknown function, a value
    of the wrong type, a division by zero).

    Example:
        >>> try:
        ...     carbon_ds.scan(path, filter="lowr(vin) = 'x'").to_arrow()
        ... except carbon_ds.CarbonFilterError as e:
        ...     print(type(e).__name__)
        CarbonFilterError
    """


class CarbonTableError(CarbonError):
    """A table-level operation cannot be carried out (missing table, bad state, conflict).

    Example:
        >>> try:
        ...     carbon_ds.CarbonTable.open(tmp)          # a folder with no Metadata/schema
        ... except carbon_ds.CarbonTableError as e:
        ...     print(str(e).split(":")[0])
        not a CarbonData table
    """


class CarbonDependencyError(CarbonError, ImportError):
    """An optional dependency (PySpark, Polars, DuckDB, ...) that a call needs is not installed.

    The message names the extra that installs it (``pip install 'carbon-ds[spark]'``); it is also an
    ``ImportError``.

    Example:
        >>> issubclass(carbon_ds.CarbonDependencyError, ImportError)
        True
    """


class CarbonMissingFileError(CarbonError, FileNotFoundError):
    """A file the table's metadata refers to is not there (deleted outside carbon-ds, or damaged metadata)."""


class CarbonConcurrentError(CarbonTableError):
    """Another writer changed the table while this one held its lock (a lock taken over, a writer outside
    carbon-ds, or two writers on a store without conditional writes); this commit was not applied.

    Nothing of the refused commit is visible: write again once the other writer is done. It is a
    :class:`CarbonTableError`.

    Example:
        >>> issubclass(carbon_ds.CarbonConcurrentError, carbon_ds.CarbonTableError)
        True
    """


class CarbonStatusVersionWarning(UserWarning):
    """A commit wrote a new version of a table's versioned segment list (``Metadata/tablestatus_<version>``,
    CarbonData 2.3.1+): the message holds the ALTER TABLE statement that points CarbonData's metastore at it."""


def see(page: str, anchor: str | None = None) -> str:
    """How the message of an error for a common mistake ends: the documentation page to read (a file of
    docs/, and a heading's anchor on it). tests/package/test_error_docs.py checks that each page and anchor
    named this way exists."""
    return f" (see docs/{page}{'#' + anchor if anchor else ''})"
