"""``dir(carbon_ds)`` (tab completion) and ``help(carbon_ds)`` show every public entry point, the lazily
imported ones (sql, configure_spark, read, explain, optimize, ...) too.

The oracle for "every entry point" is the documentation: each ``carbon_ds.name(`` call or
``carbon_ds.ClassName`` that README.md and docs/*.md show users must be reachable that way.
"""

from __future__ import annotations

import pydoc
import re
import subprocess
import sys
from pathlib import Path

import carbon_ds

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _documented_entry_points() -> set[str]:
    text = "".join(doc.read_text(encoding="utf-8") for doc in DOCS)
    calls = set(re.findall(r"\bcarbon_ds\.([a-z_]+)\(", text))
    classes = set(re.findall(r"\bcarbon_ds\.([A-Z][A-Za-z]+)\b", text))
    return calls | classes


def test_the_documents_use_the_lazy_names():
    """The oracle is not empty: the names that used to be missing from dir() are among them."""
    assert {"sql", "configure_spark", "read", "explain", "optimize", "CarbonTable"} <= _documented_entry_points()


def test_dir_lists_every_documented_entry_point_and_all_of_all():
    names = set(dir(carbon_ds))
    assert _documented_entry_points() <= set(carbon_ds.__all__)
    assert set(carbon_ds.__all__) <= names
    # dir() gives names that exist: every one of them can be fetched
    for name in carbon_ds.__all__:
        assert getattr(carbon_ds, name) is not None


def test_help_lists_every_public_name():
    text = pydoc.render_doc(carbon_ds, renderer=pydoc.plaintext)
    # pydoc documents each name it can fetch: functions under FUNCTIONS as "name(signature)", classes under
    # CLASSES as "class Name(...)"; the docstring alone would not make these
    listed = text[text.index("\nCLASSES\n"):]
    for name in carbon_ds.__all__:
        if name != "__version__":  # pydoc's VERSION section
            assert re.search(rf"^    (class )?{name}\(", listed, re.M), f"help(carbon_ds) does not document {name}"
    doc = carbon_ds.__doc__ or ""
    for name in _documented_entry_points():
        assert re.search(rf"\b{name}\b", doc), f"the module docstring does not list {name}"


def test_help_works_without_pyspark():
    """Without the spark extra, dir() leaves the Spark names out (fetching them raises
    CarbonDependencyError, which would break help()), and the docstring still lists them."""
    code = (
        "import sys, pydoc; sys.modules['pyspark'] = None\nimport carbon_ds\n"
        "text = pydoc.render_doc(carbon_ds, renderer=pydoc.plaintext)\n"
        "print('SQL_IN_DIR', 'sql' in dir(carbon_ds), 'READ_TABLE_IN_DIR', 'read_table' in dir(carbon_ds))\n"
        "print('HELP_NAMES_SQL', 'sql(spark, text)' in text)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "SQL_IN_DIR False READ_TABLE_IN_DIR True" in r.stdout
    assert "HELP_NAMES_SQL True" in r.stdout
