"""Installing carbon-ds makes `format("carbondata")` work in a fresh session with no register() call:
Spark imports top-level `pyspark_*` modules and registers their DefaultSource."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

import carbon_ds

pytest.importorskip("pyspark")


@pytest.mark.slow
def test_format_carbondata_without_register_from_any_folder(tmp_path):
    """As installed by scripts/setup.sh, run from a folder outside the repository with no PYTHONPATH:
    format("carbondata"), USING carbondata and carbon_ds.read all find the source."""
    path = tmp_path / "t"
    carbon_ds.write_table(pa.table({"id": pa.array(range(5), pa.int64()), "s": list("abcde")}), str(path))
    script = textwrap.dedent(
        f"""
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        df = spark.read.format("carbondata").load({str(path)!r})
        print("ROWS", df.count(), sorted(r.s for r in df.collect()))
        spark.sql("CREATE TEMPORARY VIEW v USING carbondata OPTIONS (path '{path}')")
        print("VIEW", spark.sql("SELECT count(*) AS n FROM v").collect()[0].n)
        spark.stop()
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        import carbon_ds
        print("READ", carbon_ds.read(spark, {str(path)!r}, columns=["s"], filter="id > 2").count())
        spark.stop()
        """
    )
    repo = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYSPARK_PYTHON"] = sys.executable
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    assert not str(cwd).startswith(str(repo))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300,
                       cwd=cwd)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "ROWS 5 ['a', 'b', 'c', 'd', 'e']" in r.stdout
    assert "VIEW 5" in r.stdout and "READ 2" in r.stdout
