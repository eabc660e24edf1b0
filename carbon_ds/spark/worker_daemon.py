"""PySpark's worker daemon, run with the installed PySpark's cached bytecode.

Spark puts its own copy of PySpark (``$SPARK_HOME/python/lib/pyspark.zip``) first on its Python workers'
path. Python keeps no bytecode for modules imported from a zip, so every worker process compiles
``pyspark.worker`` and what it imports again: about 1.7 s of CPU per process, a forked worker per task slot.
Spark starts its task workers through the daemon module its conf names (the workers that plan data source
reads always through ``pyspark.daemon``). When the zip holds the same PySpark
release as the one installed beside carbon-ds (a pip install, where the zip comes from that very package),
this daemon imports PySpark from the installed copy, whose bytecode is cached; otherwise it changes nothing.

``carbon_ds.configure_spark`` names it in ``spark.python.daemon.module`` unless that is already set; Spark
starts it as ``python -m carbon_ds.spark.worker_daemon <worker module>``, as it would ``pyspark.daemon``.
Standard library only before PySpark's own daemon takes over: a daemon must start no thread before it forks.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import zipfile
from collections.abc import Sequence
from types import ModuleType

NAME = "carbon_ds.spark.worker_daemon"
ZIP_NAME = "pyspark.zip"


def _version(source: str) -> str | None:
    """``__version__`` of a ``pyspark/version.py`` text, or None."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if isinstance(target, ast.Name) and target.id == "__version__" and isinstance(node.value, ast.Constant):
            return str(node.value.value)
    return None


def _zip_version(path: str) -> str | None:
    try:
        with zipfile.ZipFile(path) as z:
            return _version(z.read("pyspark/version.py").decode("utf-8"))
    except (OSError, KeyError, zipfile.BadZipFile, UnicodeDecodeError):
        return None


def installed_pyspark(path: Sequence[str]) -> str | None:
    """The folder holding an installed ``pyspark`` package of the same release as the first ``pyspark.zip``
    on ``path``, or None (no zip, no installed copy, another release, or unreadable)."""
    zips = [p for p in path if os.path.basename(p) == ZIP_NAME and os.path.isfile(p)]
    if not zips:
        return None
    folders = [p for p in path if p and os.path.isdir(p)]
    spec = importlib.machinery.PathFinder.find_spec("pyspark", folders)
    if spec is None or not spec.submodule_search_locations:
        return None
    package = list(spec.submodule_search_locations)[0]
    try:
        with open(os.path.join(package, "version.py"), encoding="utf-8") as f:
            installed = _version(f.read())
    except OSError:
        return None
    wanted = _zip_version(zips[0])
    return os.path.dirname(package) if installed is not None and installed == wanted else None


class InstalledPySpark(importlib.abc.MetaPathFinder):
    """Finds the top-level ``pyspark`` package in one folder; its submodules then follow its ``__path__``."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if name != "pyspark":
            return None
        return importlib.machinery.PathFinder.find_spec(name, [self.folder])


def prefer_installed() -> bool:
    """Route ``import pyspark`` to the installed copy when it is the zip's release; whether it did."""
    if "pyspark" in sys.modules:
        return False
    folder = installed_pyspark(sys.path)
    if folder is None:
        return False
    sys.meta_path.insert(0, InstalledPySpark(folder))
    return True


def main() -> None:
    prefer_installed()
    # imported only now, so that PySpark comes from the copy chosen above
    importlib.import_module("pyspark.daemon").manager()


if __name__ == "__main__":
    main()
