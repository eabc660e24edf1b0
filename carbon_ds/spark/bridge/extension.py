"""The carbon-ds Spark session extension: a Catalyst rule (jvm/src, built into carbon_ds/jars by
scripts/build-jvm.sh) that gives every plan over a ``carbondata`` relation only the columns and rows it
needs, whoever built the plan (DataFrame calls, ``spark.sql`` over views, Spark Connect). See docs/sql.md.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from carbon_ds.names import CONF_EXTENSION
from carbon_ds.table.meta.options import parse_bool

__all__ = ["EXTENSION_CLASS", "JAR", "configure_spark", "extension_active", "extension_rules_on", "jar_path"]

EXTENSION_CLASS = "carbonds.spark.CarbonExtensions"
JAR = Path(__file__).resolve().parents[2] / "jars" / "carbon-ds-spark.jar"
_warned = False


def jar_path() -> Path | None:
    """The extension jar shipped in the package, or None when it was not built (no JDK at install time)."""
    return JAR if JAR.is_file() else None


def _append(current: str | None, item: str) -> str:
    parts = [p for p in (current or "").split(",") if p.strip()]
    return ",".join(parts if item in parts else [*parts, item])


def configure_spark(builder: Any) -> Any:
    """``builder`` (a ``SparkSession.Builder``) with the carbon-ds extension jar on ``spark.jars`` and its
    class in ``spark.sql.extensions``, both appended to what the builder already has. Without the jar
    (carbon-ds installed where no JDK was) it warns once and returns the builder unchanged: queries still
    work, reading every column unless they go through ``carbon_ds.sql``.

    ``spark = carbon_ds.configure_spark(SparkSession.builder.master("local[2]")).getOrCreate()``
    """
    global _warned
    jar = jar_path()
    if jar is None:
        if not _warned:
            _warned = True
            warnings.warn(f"carbon_ds: the Spark extension jar {JAR} is missing (built by scripts/build-jvm.sh, "
                          "which needs a JDK 17+ 'javac'); Spark queries over carbondata read every column "
                          "unless they go through carbon_ds.sql", stacklevel=2)
        return builder
    options = getattr(builder, "_options", {})
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
