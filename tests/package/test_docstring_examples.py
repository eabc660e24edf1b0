"""Every public name of ``carbon_ds`` has a docstring with an example, and the examples run as written.

The examples are doctests: their printed results are compared with what the call returns. They may use
``carbon_ds``, ``pa``, ``pc``, ``path`` (a fresh two-segment telemetry table), ``arrow_table`` (rows of its
schema), ``tmp`` (an empty folder) and, for the Spark entry points, ``spark`` (the shared session).
"""

from __future__ import annotations

import doctest

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import carbon_ds
from carbon_ds.demo import telemetry

PUBLIC = [n for n in carbon_ds.__all__ if n != "__version__"]
SPARK_NAMES = {n for n, module in carbon_ds._LAZY.items() if module.startswith("carbon_ds.spark.")}


def _examples(name: str) -> doctest.DocTest:
    obj = getattr(carbon_ds, name)
    tests = doctest.DocTestFinder(recurse=False).find(obj, name, globs={})
    return tests[0] if tests else None


@pytest.mark.parametrize("name", PUBLIC)
def test_docstring_has_an_example(name):
    doc = getattr(carbon_ds, name).__doc__ or ""
    assert "Example:" in doc, f"carbon_ds.{name}'s docstring has no Example: section"
    test = _examples(name)
    assert test is not None and test.examples, f"carbon_ds.{name}'s example has no >>> lines"


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=[pytest.mark.spark] if n in SPARK_NAMES else []) for n in PUBLIC]
)
def test_docstring_example_runs(name, tmp_path, request):
    test = _examples(name)
    path = tmp_path / "telemetry"
    for seed in (0, 1):
        carbon_ds.write_table(telemetry.table(300, seed=seed), str(path), sort_columns="vin,ts")
    (tmp_path / "scratch").mkdir()
    test.globs = {"carbon_ds": carbon_ds, "pa": pa, "pc": pc, "path": str(path),
                  "arrow_table": telemetry.table(200, seed=2), "tmp": str(tmp_path / "scratch")}
    if name in SPARK_NAMES:
        test.globs["spark"] = request.getfixturevalue("spark")
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out: list[str] = []
    result = runner.run(test, out=out.append)
    assert result.failed == 0, "".join(out)
    assert result.attempted > 0


def test_a_wrong_example_fails():
    """The runner compares results: an example whose printed value is wrong is reported."""
    test = doctest.DocTestParser().get_doctest(">>> 1 + 1\n3\n", {}, "wrong", None, 0)
    result = doctest.DocTestRunner().run(test, out=lambda _: None)
    assert result.failed == 1
