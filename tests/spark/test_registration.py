"""Registration in every install mode and every session of one SparkContext, and a one-line error when
Spark's Python workers run a Python without carbon-ds.

Spark finds static Python data sources the way pyspark.sql.worker.lookup_data_sources does:
``pkgutil.iter_modules()`` over the worker's sys.path, importing every ``pyspark_*`` module. A session's
runtime registration (``spark.dataSource.register``) is refused with DATA_SOURCE_ALREADY_EXISTS when the
name is unknown to that session but found through the JVM's active session (DataSourceRegistration.
checkDataSourceExists)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest

import carbon_ds
from carbon_ds.errors import CarbonDependencyError
from carbon_ds.spark import workers
from carbon_ds.spark.messages import missing_in_workers, surface

pytest.importorskip("pyspark")
REPO = Path(__file__).resolve().parents[2]
SITE = sysconfig.get_paths()["purelib"]  # this venv's site-packages: pyarrow, pyspark, ...


def _venv(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A venv seeing this venv's packages as a plain sys.path entry (so the .pth files there, carbon-ds's own
    install among them, are not run) and nothing of carbon-ds yet: (its python, its site-packages)."""
    root = tmp_path / name
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "zz_deps.pth").write_text(SITE + "\n")
    return python, site


def _plain_editable(tmp_path: Path) -> tuple[Path, Path]:
    """What ``pip install -e .`` (no config settings) installs: the project's PEP 660 editable wheel."""
    python, site = _venv(tmp_path, "plain")
    out = tmp_path / "wheel"
    out.mkdir()
    build = "from setuptools import build_meta; import sys; print(build_meta.build_editable(sys.argv[1]))"
    done = subprocess.run([sys.executable, "-c", build, str(out)], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    with zipfile.ZipFile(out / done.stdout.strip().splitlines()[-1]) as whl:
        whl.extractall(site)
    return python, site


@pytest.mark.slow
def test_a_plain_editable_install_exposes_pyspark_carbondata_to_spark_lookup(tmp_path):
    python, _site = _plain_editable(tmp_path)
    scan = "import pkgutil; print(sorted(m.name for m in pkgutil.iter_modules() if m.name.startswith('pyspark_')))"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    found = subprocess.run([str(python), "-c", scan], capture_output=True, text=True, env=env, cwd=tmp_path,
                           timeout=120)
    assert found.returncode == 0, found.stderr
    assert "pyspark_carbondata" in found.stdout


@pytest.mark.slow
def test_register_works_in_every_session_when_spark_lookup_finds_nothing(tmp_path):
    """carbon-ds importable only through an import hook (as an editable install with an import hook, or a
    zip, gives): Spark's static lookup misses it, and every session is registered at runtime."""
    python, site = _venv(tmp_path, "hooked")
    (site / "carbon_hook.py").write_text(textwrap.dedent(f"""
        import importlib.machinery, sys
        class Finder:
            @classmethod
            def find_spec(cls, name, path=None, target=None):
                if name.split(".")[0] in ("carbon_ds", "pyspark_carbondata") and "." not in name:
                    return importlib.machinery.PathFinder.find_spec(name, [{str(REPO)!r}])
                return None
        sys.meta_path.append(Finder)
        """))
    (site / "carbon_hook.pth").write_text("import carbon_hook\n")
    table = tmp_path / "t"
    carbon_ds.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), str(table))
    script = textwrap.dedent(f"""
        import carbon_ds, pkgutil
        from pyspark.sql import SparkSession
        print("LOOKUP", any(m.name == "pyspark_carbondata" for m in pkgutil.iter_modules()))
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        other = spark.newSession()
        for i, s in enumerate([spark, other, spark, spark.newSession()]):
            carbon_ds.register(s)
            print("SESSION", i, s.read.format("carbondata").load({str(table)!r}).count())
        carbon_ds.sql(other, "CREATE TABLE t (id BIGINT) STORED AS carbondata LOCATION '{table}'")
        print("SQL", carbon_ds.sql(other, "SELECT count(*) AS n FROM t").collect()[0].n)
        spark.stop()
        """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYSPARK_PYTHON"] = str(python)
    r = subprocess.run([str(python), "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "LOOKUP False" in r.stdout
    assert [line for line in r.stdout.splitlines() if line.startswith("SESSION")] == [
        f"SESSION {i} 3" for i in range(4)]
    assert "SQL 3" in r.stdout


def _spark_stub(python: str) -> SimpleNamespace:
    return SimpleNamespace(_jsparkSession=object(), sparkContext=SimpleNamespace(pythonExec=python, master="local[2]"))


def test_workers_without_carbon_ds_are_reported_in_one_line(tmp_path):
    # an interpreter that cannot import carbon-ds: this one without its site-packages
    bare = tmp_path / "bare-python"
    bare.write_text(f"#!/bin/sh\nexec {sys.executable} -I -S \"$@\"\n")
    bare.chmod(0o755)
    with pytest.raises(CarbonDependencyError) as info:
        workers.check_workers(_spark_stub(str(bare)))
    text = str(info.value)
    assert "\n" not in text
    assert str(bare) in text and f"PYSPARK_PYTHON={sys.executable}" in text
    assert "No module named" in text
    workers.check_workers(_spark_stub(sys.executable))  # this interpreter has carbon-ds
    remote = _spark_stub(str(bare))
    remote.sparkContext.master = "spark://cluster:7077"
    workers.check_workers(remote)  # workers elsewhere: not checked here


def test_a_worker_import_failure_becomes_one_line():
    # the text Spark 4.3 gives for a data source whose worker lacks pyarrow (PYTHON_DATA_SOURCE_ERROR)
    spark_text = ("[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: Traceback (most recent "
                  "call last):\n  File \"/x/carbon_ds/spark/source/datasource.py\", line 23, in <module>\n    import pyarrow "
                  "as pa\nModuleNotFoundError: No module named 'pyarrow'\n SQLSTATE: 38000\n" + "\tat x.y\n" * 150)
    mine = missing_in_workers(RuntimeError(spark_text))
    assert isinstance(mine, CarbonDependencyError) and "'pyarrow'" in str(mine) and "\n" not in str(mine)
    assert missing_in_workers(RuntimeError("ModuleNotFoundError: No module named 'foo' in a user UDF")) is None
    with pytest.raises(CarbonDependencyError, match="PYSPARK_PYTHON"), surface():
        raise RuntimeError(spark_text)
