"""The one exception hierarchy of carbon-ds.

Messages say what was expected, what was found, and where (file, offset, column or option).
"""

from __future__ import annotations


class CarbonError(Exception):
    """Base class of every error raised by carbon-ds."""


class CarbonFormatError(CarbonError):
    """A file does not follow the CarbonData format (corrupt, truncated or unsupported)."""

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
    """Data does not match the table schema, or a schema cannot be represented."""


class CarbonValueError(CarbonSchemaError):
    """A value in a data file that does not parse as its column's type: the message names the file, the row (and
    line), the column and the value (``detail``: the message without the file)."""

    def __init__(self, detail: str, path: str):
        self.detail = detail
        self.path = path
        super().__init__(f"{path}: {detail}")


class CarbonOptionError(CarbonError, ValueError):
    """An option, argument or SQL clause is invalid."""


class CarbonFilterError(CarbonOptionError):
    """A filter that cannot be translated into carbon-ds predicates (names the part that cannot)."""


class CarbonTableError(CarbonError):
    """A table-level operation cannot be carried out (missing table, bad state, conflict)."""


class CarbonDependencyError(CarbonError, ImportError):
    """An optional dependency (PySpark, Polars, DuckDB, ...) that a call needs is not installed."""


class CarbonMissingFileError(CarbonError, FileNotFoundError):
    """A file the table's metadata refers to is not there (deleted outside carbon-ds, or damaged metadata)."""


class CarbonConcurrentError(CarbonTableError):
    """Another writer changed the table while this one held its lock (a lock taken over, a writer outside
    carbon-ds, or two writers on a store without conditional writes); this commit was not applied."""


class CarbonStatusVersionWarning(UserWarning):
    """A commit wrote a new version of a table's versioned segment list (``Metadata/tablestatus_<version>``,
    CarbonData 2.3.1+): the message holds the ALTER TABLE statement that points CarbonData's metastore at it."""
