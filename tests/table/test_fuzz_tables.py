"""A bounded sample of benchmarks/fuzz.py in CI: one file of a written table (data, index, segment file,
tablestatus, schema, delete delta) or of the real corpus is mutated and read in a worker process. Every
case must end in a carbon_ds.errors type or correct-looking data: no other exception, no crash, no hang."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


# an unfiltered read takes every file whole by its footer; a filtered one plans from the index files
@pytest.mark.parametrize(("cases", "seed", "extra"), [(160, 7, []), (80, 11, ["--filter", "id >= 100 AND id < 500"])],
                         ids=["whole", "filtered"])
def test_fuzzed_tables_fail_only_with_our_errors(cases, seed, extra):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/fuzz.py"), "--cases", str(cases), "--seed", str(seed), "--json",
         "--case-timeout", "60", *extra],
        capture_output=True, text=True, timeout=600, env=env, check=True,
    )
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    totals = summary["totals"]
    assert summary["examples"]["crash"] == [] and summary["examples"]["hang"] == [], summary["examples"]
    assert totals.get("crash", 0) == 0 and totals.get("hang", 0) == 0
    assert totals.get("error", 0) > 0  # the mutations reach the checks
    assert sum(totals.values()) == cases
