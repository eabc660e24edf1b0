"""The carbon-ds Spark session extension: a Catalyst rule (jvm/src, built into carbon_ds/jars by
scripts/build-jvm.sh) that gives every plan over a ``carbondata`` relation only the columns and rows it
needs, whoever built the plan (DataFrame calls, ``spark.sql`` over views, Spark Connect). See docs/sql.md.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame

from carbon_ds.names import CONF_EXTENSION
from carbon_ds.spark import worker_daemon
from carbon_ds.table.meta.options import parse_bool

__all__ = ["EXTENSION_CLASS", "JAR", "configure_spark", "extension_active", "extension_rules_on", "is_query", "jar_path",
           "run_query"]

EXTENSION_CLASS = "carbonds.spark.CarbonExtensions"
# spark.python.daemon.module: PySpark's daemon, importing PySpark's compiled copy (carbon_ds.spark.worker_daemon)
DAEMON_CONF = "spark.python.daemon.module"
JAR = Path(__file__).resolve().parents[2] / "jars" / "carbon-ds-spark.jar"
_warned = False
# First keywords of the statements a query plan answers (anything else is a command, run as written).
QUERY_KEYWORDS = frozenset({"SELECT", "WITH", "INSERT", "FROM", "TABLE"})


def jar_path() -> Path | None:
    """The extension jar shipped in the package, or None when it was not built (no JDK at install time)."""
    return JAR if JAR.is_file() else None


def _append(current: str | None, item: str) -> str:
    parts = [p for p in (current or "").split(",") if p.strip()]
    return ",".join(parts if item in parts else [*parts, item])


def configure_spark(builder: Any) -> Any:
    """``builder`` (a ``SparkSession.Builder``) with the carbon-ds extension jar on ``spark.jars`` and its
    class in ``spark.sql.extensions``, both appended to what the builder already has. Without the jar
    (carbon-ds installed where no JDK was) it warns once and adds neither: queries still work, reading every
    column of every row.

    Unless the builder names one, Spark's Python task workers start through ``carbon_ds.spark.worker_daemon``:
    PySpark's own daemon, importing the installed PySpark's compiled modules instead of compiling those of
    Spark's ``pyspark.zip`` again in every worker process, when both are the same release.

    ``spark = carbon_ds.configure_spark(SparkSession.builder.master("local[2]")).getOrCreate()``
    """
    global _warned
    options = getattr(builder, "_options", {})
    if DAEMON_CONF not in options:
        builder = builder.config(DAEMON_CONF, worker_daemon.NAME)
    jar = jar_path()
    if jar is None:
        if not _warned:
            _warned = True
            warnings.warn(f"carbon_ds: the Spark extension jar {JAR} is missing (built by scripts/build-jvm.sh, "
                          "which needs a JDK 17+ 'javac'); Spark queries over carbondata, carbon_ds.sql's too, "
                          "read every column of every row; carbon_ds.read(spark, path, columns, filter) still "
                          "reads only what it is given", stacklevel=2)
        return builder
    builder = builder.config("spark.jars", _append(options.get("spark.jars"), str(jar)))
    return builder.config("spark.sql.extensions", _append(options.get("spark.sql.extensions"), EXTENSION_CLASS))


def extension_active(spark: Any) -> bool:
    """Whether ``spark`` was started with the carbon-ds extension."""
    try:
        value = spark.conf.get("spark.sql.extensions", "") or ""
    except Exception:  # noqa: BLE001 - a session that cannot answer has no extension we know of
        return False
    return EXTENSION_CLASS in [p.strip() for p in value.split(",")]


def extension_rules_on(spark: Any) -> bool:
    """Whether ``spark`` runs the extension's rules: started with it, and not switched off by
    ``carbon_ds.extension.enabled=false``."""
    return extension_active(spark) and parse_bool(spark.conf.get(CONF_EXTENSION, "true"),
                                                  f"spark conf {CONF_EXTENSION}", True)


def is_query(text: str) -> bool:
    """Whether ``text`` starts (after comments and parentheses) like a query or INSERT ... SELECT."""
    rest = text.lstrip()
    while True:
        if rest.startswith("--"):
            rest = rest.partition("\n")[2].lstrip()
        elif rest.startswith("/*"):
            rest = rest.partition("*/")[2].lstrip()
        elif rest.startswith("("):
            rest = rest[1:].lstrip()
        else:
            break
    word = rest.split(None, 1)[0] if rest else ""
    return word.upper() in QUERY_KEYWORDS


def run_query(spark: Any, text: str) -> DataFrame:
    """``spark.sql(text)``. Where the extension's rules are on, a query is planned by them in one JVM call
    (jvm/src PlannedQueries) at this call, so it reads the tables as they are now, and small reads may be
    answered on the driver; a command, a write or a statement over no carbondata relation runs as written.
    Elsewhere Spark plans it as written: every carbondata relation then reads every column of every row."""
    if is_query(text) and hasattr(spark, "_jsparkSession") and extension_rules_on(spark):
        try:
            planned = spark._jvm.carbonds.spark.PlannedQueries.planned(spark._jsparkSession, text)
        except Exception:  # noqa: BLE001 - an older jar without the class: Spark plans the statement itself
            planned = None
        if planned is not None:
            return DataFrame(planned, spark)
    return spark.sql(text)
