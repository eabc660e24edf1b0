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


def test_format_carbondata_without_register(tmp_path):
    path = tmp_path / "t"
    carbon_ds.write_table(pa.table({"id": pa.array(range(5), pa.int64()), "s": list("abcde")}), str(path))
    script = textwrap.dedent(
        f"""
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        df = spark.read.format("carbondata").load({str(path)!r})
        print("ROWS", df.count(), sorted(r.s for r in df.collect()))
        spark.stop()
        """
    )
    repo = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYTHONPATH=repo)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "ROWS 5 ['a', 'b', 'c', 'd', 'e']" in r.stdout
