"""Spark's Python workers import the installed PySpark (compiled once) instead of Spark's pyspark.zip when both
are one release. The oracle is the PySpark installation itself: its version.py and the zip Spark ships."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")

import carbon_ds  # noqa: E402
from carbon_ds.spark.bridge.extension import DAEMON_CONF  # noqa: E402
from carbon_ds.spark.worker_daemon import installed_pyspark  # noqa: E402

SITE = str(Path(pyspark.__file__).resolve().parents[1])
DAEMON_MODULE = "carbon_ds.spark.worker_daemon"  # what Spark is told to run: the module's import name
SHIPPED_ZIP = Path(pyspark.__file__).resolve().parent / "python" / "lib" / "pyspark.zip"


def _zip(path: Path, version_py: str | None) -> str:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("pyspark/__init__.py", "")
        if version_py is not None:
            z.writestr("pyspark/version.py", version_py)
    return str(path)


def test_the_installed_copy_is_chosen_only_for_the_zips_own_release(tmp_path):
    for name in "abcd":
        (tmp_path / name).mkdir()
    same = _zip(tmp_path / "a" / "pyspark.zip", f"__version__: str = {pyspark.__version__!r}\n")
    assert installed_pyspark([same, SITE]) == SITE
    # plain assignment, as older releases write it
    plain = _zip(tmp_path / "pyspark.zip", f"__version__ = {pyspark.__version__!r}\n")
    assert installed_pyspark([plain, SITE]) == SITE
    assert installed_pyspark([_zip(tmp_path / "b" / "pyspark.zip", "__version__: str = '3.5.0'\n"), SITE]) is None
    assert installed_pyspark([_zip(tmp_path / "c" / "pyspark.zip", None), SITE]) is None
    (tmp_path / "d" / "pyspark.zip").write_bytes(b"not a zip")
    assert installed_pyspark([str(tmp_path / "d" / "pyspark.zip"), SITE]) is None
    # no zip on the path: Spark's layout is not there, nothing to change
    assert installed_pyspark([SITE]) is None
    # a zip but no installed copy beside it
    assert installed_pyspark([same, str(tmp_path)]) is None


@pytest.mark.skipif(not SHIPPED_ZIP.is_file(), reason="this PySpark ships no python/lib/pyspark.zip")
def test_a_worker_started_through_the_daemon_module_imports_compiled_pyspark():
    zips = os.pathsep.join(str(p) for p in sorted(SHIPPED_ZIP.parent.glob("*.zip")))
    probe = ("import sys, carbon_ds.spark.worker_daemon as d; routed = d.prefer_installed(); "
             "import pyspark.worker; print(routed, pyspark.worker.__file__)")
    env = {**os.environ, "PYTHONPATH": zips}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    routed, where = out.stdout.split()
    assert routed == "True"
    assert where.startswith(SITE) and ".zip" not in where
    plain = subprocess.run([sys.executable, "-c", "import pyspark.worker; print(pyspark.worker.__file__)"],
                           env=env, capture_output=True, text=True, check=True)
    assert str(SHIPPED_ZIP) in plain.stdout  # without it, Spark's zip comes first


def test_configure_spark_names_the_daemon_unless_the_builder_does():
    from pyspark.sql import SparkSession

    assert carbon_ds.configure_spark(SparkSession.builder)._options[DAEMON_CONF] == DAEMON_MODULE
    own = SparkSession.builder.config(DAEMON_CONF, "my.daemon")
    assert carbon_ds.configure_spark(own)._options[DAEMON_CONF] == "my.daemon"


def test_the_sessions_workers_run_the_installed_pyspark(spark):
    if spark.sparkContext.getConf().get(DAEMON_CONF, None) != DAEMON_MODULE:
        pytest.skip("the test session was not made by carbon_ds.configure_spark (no extension jar)")
    def where(_: int) -> tuple[str, bool]:
        import pyspark.worker

        from carbon_ds.spark.worker_heap import in_daemon_worker

        return pyspark.worker.__file__, in_daemon_worker()

    got = spark.sparkContext.parallelize(range(2), 2).map(where).collect()
    assert all(f.startswith(SITE) and ".zip" not in f for f, _ in got), got
    # the worker heap's settling still knows it runs in a daemon-forked worker
    assert all(daemon for _, daemon in got), got
