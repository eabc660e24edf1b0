"""A Spark schema as the Arrow schema its rows travel in, on every PySpark in range (4.1 to 4.3)."""

from __future__ import annotations

import inspect

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

# PySpark 4.1 names the time zone of timestamps with timestamp_utc=True; later releases with timezone="UTC"
_UTC = {"timezone": "UTC"} if "timezone" in inspect.signature(to_arrow_schema).parameters else {"timestamp_utc": True}


def arrow_schema(schema: StructType) -> pa.Schema:
    """``schema`` in Arrow types, timestamps with time zone in UTC (as PySpark's Arrow rows carry them)."""
    return to_arrow_schema(schema, **_UTC)
