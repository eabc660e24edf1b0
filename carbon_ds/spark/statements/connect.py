"""Spark Connect sessions and ``carbon_ds.sql`` (docs/spark.md, "Spark Connect").

carbon_ds.sql runs CarbonData's statements (CREATE TABLE, segments, compaction, ...) in the calling
Python process: it reads and writes the table's files itself and sends only queries to Spark. On a Connect
session that is right when the client reaches the table folders under the same names as the server: a
server on this machine, or a shared store (s3://, hdfs://, ...). A local path on a server elsewhere names a
folder of another machine, so such statements are refused before any file is touched.
"""

from __future__ import annotations

from typing import Any

from carbon_ds.errors import CarbonTableError

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (no JVM in this process)."""
    return getattr(spark, "_jsparkSession", None) is None and hasattr(spark, "client")


def server_host(spark: Any) -> str | None:
    """The host of a Connect session's server; None when it cannot be told."""
    try:
        return str(spark.client._builder.host)
    except AttributeError:
        return None


def check_reachable(spark: Any, path: str, what: str) -> None:
    """Refuse a local ``path`` on a Connect session whose server runs on another machine.

    Raises:
        CarbonTableError: naming the path, the server and what to do instead.
    """
    if not is_connect(spark) or "://" in path:
        return
    host = server_host(spark)
    if host is None or host.lower() in LOCAL_HOSTS:
        return
    raise CarbonTableError(
        f"carbon_ds.sql on Spark Connect: {what} is the local path {path}, but the Connect server runs on "
        f"{host}; carbon_ds.sql reads and writes table files in this process, so it needs table folders on a "
        "store both reach under one name (s3://, hdfs://, abfs://...) or a server on this machine. Queries "
        "(spark.sql, spark.read.format('carbondata')) work on any Connect server that has carbon-ds installed"
    )
