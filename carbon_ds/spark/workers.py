"""Can Spark's Python workers import carbon-ds? Checked once per interpreter, on a local master.

Spark starts its Python workers with ``SparkContext.pythonExec`` (``PYSPARK_PYTHON``, else ``python3`` on
PATH). When that is not the Python carbon-ds is installed in (a virtualenv not activated, no
``PYSPARK_PYTHON``), every read fails inside a worker and Spark reports it as a Java trace of about 150 lines
ending in ``ModuleNotFoundError``. On a local master the workers run on this machine, so the driver can ask
that interpreter first and say what is wrong in one line. Other masters' workers run elsewhere: there the
same failure is shortened when it happens (``carbon_ds.spark.messages.surface``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from functools import lru_cache
from typing import Any

from carbon_ds.errors import CarbonDependencyError, see

# what a task imports first: the data source module and, through it, pyarrow and carbon_ds
PROBE = "import carbon_ds.spark.source.datasource"


def worker_python(spark: Any) -> str | None:
    """The Python executable Spark's workers run, or None when it cannot be told (Spark Connect)."""
    return getattr(_context(spark), "pythonExec", None)


def needs_check(spark: Any) -> bool:
    return str(getattr(_context(spark), "master", "")).startswith("local")


def _context(spark: Any) -> Any:
    # a Spark Connect session has no SparkContext (asking for it raises)
    return spark.sparkContext if getattr(spark, "_jsparkSession", None) is not None else None


def check_workers(spark: Any) -> None:
    """Raise a one-line CarbonDependencyError when the local workers' Python cannot import carbon-ds."""
    exe = worker_python(spark)
    if exe is None or not needs_check(spark):
        return
    problem = _problem(exe)
    if problem is not None:
        raise CarbonDependencyError(
            f"Spark's Python workers run {exe!r}, which cannot import carbon-ds ({problem}); expected the "
            f"Python carbon-ds is installed in: set PYSPARK_PYTHON={sys.executable} before creating the "
            "SparkSession, or activate that virtualenv" + see("cluster.md"))


@lru_cache(maxsize=8)
def _problem(exe: str) -> str | None:
    """None when ``exe`` imports carbon-ds, else the last line of what it printed."""
    found = shutil.which(exe)
    if found is None:
        return "no such executable"
    # not realpath: a virtualenv's python is a link to the base interpreter, which lacks its packages
    if os.path.abspath(found) == os.path.abspath(sys.executable):
        return None  # this very interpreter, which has carbon-ds
    try:
        done = subprocess.run([found, "-c", PROBE], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{type(e).__name__}: {e}"
    if done.returncode == 0:
        return None
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else f"exit status {done.returncode}"

