"""``spark.sql`` as the front door for CarbonData's statements, in sessions with the carbon-ds extension.

The extension's parser (jvm/src FrontDoor, StoredAsParser) asks this module's runner, through py4j, about each
statement that starts like one of carbon-ds's (CREATE, DROP, ALTER, SHOW, DELETE, UPDATE, MERGE, CLEAN,
INSERT): ``claim`` answers with the statement's output columns when carbon-ds runs it (the statements and
tables of carbon_ds.spark.statements.sql: ``claims``), and Spark then runs it as a command that calls ``run`` once. So
``spark.sql`` and ``carbon_ds.sql`` run the same code on the same tables.

The runner lives in the Python driver: ``register(spark)`` installs it (``carbon_ds.register``, ``carbon_ds.sql``
and the sessions ``configure_spark`` builds do). A driver without Python (a Scala application, a standalone
Spark Connect server) has none; there Spark's parser answers as it would without carbon-ds.

``register`` also finds the CarbonData tables of the warehouse folder that the session's catalog does not
list yet (a new process without a persistent metastore), so every front door finds them by name.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from pyspark import SparkContext
from pyspark.java_gateway import ensure_callback_server_started
from pyspark.sql import SparkSession

from carbon_ds.ddl.statement_parser import suggest
from carbon_ds.spark import session as spark_session
from carbon_ds.spark.bridge.extension import EXTENSION_CLASS, extension_active
from carbon_ds.spark.bridge.extension import configure_spark as _with_extension
from carbon_ds.spark.statements import catalog
from carbon_ds.spark.statements import sql as statements

__all__ = ["configure_spark", "register", "sql"]

_lock = threading.Lock()
_runner: Runner | None = None
# JVM session id -> the Python session wrapping it (the user's own object where it is known)
_sessions: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_synced: weakref.WeakSet = weakref.WeakSet()


class Runner:
    """The JVM's ``carbonds.spark.FrontDoor$Runner``: claims and runs carbon-ds's statements."""

    def claim(self, jsession: Any, text: str) -> str | None:
        try:
            schema = statements.claimed_output(_python_session(jsession), text)
        except Exception as exc:  # noqa: BLE001 - the JVM raises it as the statement's error
            raise RuntimeError(_describe(exc)) from None
        return None if schema is None else schema.json()

    def run(self, jsession: Any, text: str) -> Any:
        try:
            return statements.run_claimed(_python_session(jsession), text)._jdf
        except Exception as exc:  # noqa: BLE001 - the JVM raises it as the statement's error
            raise RuntimeError(_describe(exc)) from None

    def hint(self, text: str) -> str | None:
        return suggest(text)

    class Java:
        implements = ["carbonds.spark.FrontDoor$Runner"]


def _describe(exc: BaseException) -> str:
    """``carbon_ds.errors.CarbonTableError: <message>`` (the form carbon_ds.sql raises again as that error)."""
    kind = type(exc)
    return f"{kind.__module__}.{kind.__qualname__}: {exc}"


def _python_session(jsession: Any) -> Any:
    """The Python SparkSession of a JVM session: the user's own when registered, else a new wrapper."""
    key = str(jsession.sessionUUID())
    found = _sessions.get(key)
    if found is not None:
        return found
    wrapper = SparkSession(SparkContext._active_spark_context, jsession)
    _sessions[key] = wrapper
    return wrapper


def _server_has_extension(context: Any) -> bool:
    return EXTENSION_CLASS in (context.getConf().get("spark.sql.extensions") or "")


def _install(context: Any) -> None:
    """Install the runner in the JVM of ``context`` (the SparkContext of a driver started with the extension)."""
    global _runner
    gateway = context._gateway
    with _lock:
        if _runner is not None and gateway.jvm.carbonds.spark.FrontDoor.installed():
            return
        ensure_callback_server_started(gateway)
        runner = Runner()
        gateway.jvm.carbonds.spark.FrontDoor.install(runner)
        _runner = runner


def register(spark: Any) -> None:
    """Register the ``carbondata`` source in ``spark`` and, in a session with the carbon-ds extension, make
    ``spark.sql`` run CarbonData's statements (the runner) and list the warehouse folder's CarbonData tables
    in the session's catalog. Calling it again is cheap.

    Example:
        >>> carbon_ds.register(spark)
        >>> spark.read.format("carbondata").load(path).count() == carbon_ds.CarbonTable.open(path).count()
        True
    """
    spark_session.register(spark)
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        # a Spark Connect client; a server in this very process (remote("local")) runs the statements here
        local = SparkContext._active_spark_context
        if local is not None and _server_has_extension(local):
            _install(local)
        return
    if not extension_active(spark):
        return  # without the extension carbon_ds.sql is the way in
    _sessions[str(jsession.sessionUUID())] = spark
    _install(spark.sparkContext)
    if spark not in _synced:
        catalog.adopt_warehouse_tables(spark)
        _synced.add(spark)


def sql(spark: Any, text: str) -> Any:
    """Run CarbonData's statements (``CREATE TABLE ... STORED AS carbondata``, INSERT, DELETE, UPDATE, MERGE
    INTO, SHOW SEGMENTS, ALTER TABLE ... ADD SEGMENT / COMPACT, CLEAN FILES, ...) and any other Spark SQL;
    a ``;``-separated script runs statement by statement. Queries go to Spark, planned at this call by the
    extension's rules where they are on (they then read only the columns and rows they need). Returns the (last) statement's DataFrame; registers the session
    first. The statements: docs/sql.md.

    A carbon-ds error raised inside Spark while planning arrives as that carbon-ds error (Spark's as cause).
    An error in a script's statement carries a note naming the statement and its position; the statements
    before it have run.

    Example:
        >>> _ = carbon_ds.sql(spark, "CREATE TABLE doc_trips (vin STRING, speed DOUBLE) STORED AS carbondata")
        >>> _ = carbon_ds.sql(spark, "INSERT INTO doc_trips VALUES ('LSVAU2180N2005162', 61.5)")
        >>> carbon_ds.sql(spark, "SELECT speed FROM doc_trips").collect()[0].speed
        61.5
        >>> _ = carbon_ds.sql(spark, "DROP TABLE doc_trips")
    """
    register(spark)
    return statements.sql(spark, text)


class _Builder:
    """A SparkSession.Builder whose sessions are registered (``register``) as they are made."""

    def __init__(self, builder: Any) -> None:
        self._builder = builder

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._builder, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            out = attr(*args, **kwargs)
            return self if out is self._builder else out
        return call

    def getOrCreate(self) -> Any:  # noqa: N802 - Spark's name
        spark = self._builder.getOrCreate()
        register(spark)
        return spark

    def create(self) -> Any:
        spark = self._builder.create()
        register(spark)
        return spark


def configure_spark(builder: Any) -> Any:
    """``builder`` with the carbon-ds extension (carbon_ds.spark.bridge.extension.configure_spark); the sessions it
    makes are registered, so ``spark.sql`` runs CarbonData's statements from the first one.

    Example:
        >>> from pyspark.sql import SparkSession
        >>> spark = carbon_ds.configure_spark(SparkSession.builder).getOrCreate()
        >>> _ = spark.sql("CREATE TABLE doc_events (id BIGINT) STORED AS carbondata")   # spark.sql runs it
        >>> _ = spark.sql("DROP TABLE doc_events")
    """
    return _Builder(_with_extension(builder))


configure_spark.__doc__ = (configure_spark.__doc__ or "") + "\n\n" + (_with_extension.__doc__ or "")
