"""A short seeded run of benchmarks/fuzz.py, the hostile-file probe: one file of a table (data, index,
merged index, segment file, tablestatus, update status, delete delta, schema) or of the real corpus is
damaged and read through one route, in a forked child under an address-space limit. Every case must end in
a carbon_ds.errors type naming the damaged file, or in the rows of the undamaged table, or in a change of
a kind docs/reliability.md lists as one the format cannot tell: never a crash, a hang, a duplicated row or
more than 1 GB of memory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from fuzz_routes import SILENT_CLASSES  # noqa: E402


def _run(cases: int, seed: int, *extra: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/fuzz.py"), "--cases", str(cases), "--seed", str(seed), "--json",
         "--case-timeout", "60", *extra],
        capture_output=True, text=True, timeout=900, env=env, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _check(summary: dict, cases: int) -> None:
    totals, examples = summary["totals"], summary["examples"]
    for bad in ("crash", "hang", "dup", "rss", "unnamed"):
        assert totals.get(bad, 0) == 0, examples[bad]
    assert totals.get("error", 0) > 0  # the damage reaches the checks
    assert sum(totals.values()) == cases
    assert summary["peak_rss_mb"]["mb"] < 1024
    unexplained = [line for line in examples["silent"] if "[class: ?]" in line]
    assert not unexplained, unexplained
    assert set(summary["silent_classes"]) <= set(SILENT_CLASSES)


@pytest.mark.slow
def test_fuzzed_tables_python_routes():
    # read_table, filtered read_table, counts, scan batches, Polars, DuckDB, single files
    summary = _run(150, 7, "--no-spark")
    _check(summary, 150)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"), reason="Spark needs Java")
def test_fuzzed_tables_spark_routes():
    # the data source's plain and filtered reads (planning and tasks in Spark's Python workers)
    summary = _run(24, 11, "--routes", "spark,spark_filter", "--no-corpus")
    _check(summary, 24)
