"""scripts/oldest-constraints.txt pins exactly the lower bounds of pyproject.toml's ranges, so the second CI
run (scripts/test-oldest.sh) tests the oldest releases the ranges admit."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _lower_bounds() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in ("polars", "duckdb", "pandas", "spark"):
        specs += project["optional-dependencies"][extra]
    out = {}
    for spec in specs:
        m = re.match(r"([A-Za-z0-9_.-]+)(?:\[[^]]*\])?>=([0-9.]+)", spec)
        assert m, f"{spec!r} in pyproject.toml has no lower bound"
        out[m.group(1).lower()] = m.group(2)
    return out


def _pins() -> dict[str, str]:
    lines = (ROOT / "scripts" / "oldest-constraints.txt").read_text().splitlines()
    return dict(line.split("==") for line in lines if line.strip() and not line.startswith("#"))


def test_constraints_are_the_lower_bounds():
    bounds, pins = _lower_bounds(), _pins()
    assert set(pins) == set(bounds)
    for name, low in bounds.items():
        pinned = pins[name].split(".")
        wanted = low.split(".")
        assert (pinned[:len(wanted)] == wanted and all(p == "0" for p in pinned[len(wanted):]) or
            name == "numpy" and pinned[:2] == wanted[:2]), f"{name}: pinned {pins[name]}, lower bound {low}"
