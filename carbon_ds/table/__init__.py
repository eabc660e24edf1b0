"""CarbonData tables. Layers, each importing only itself or those below it::

    table.py     CarbonTable, the facade: one short delegation per operation
    ops/         DELETE/UPDATE, MERGE, segment management, ADD SEGMENT, compaction, materialized views
    loads/       starting a load, the load protocol, the plain load
    read/        planning, pruning, scans (read/ and the loads never import each other)
    partitions/  each partitioning flavour whole: spec, pruning, load, partition DDL (its modules on the
                 floors of what they do)
    meta/        the table folder's files as values, TableHandle, locks, naming, properties
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_LAZY = {
    "CarbonTable": "carbon_ds.table.table",
    "TableHandle": "carbon_ds.table.meta.handle",
    "DataFile": "carbon_ds.table.meta.handle",
    "SegmentInfo": "carbon_ds.table.meta.handle",
}
__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    # lazy, so that importing any carbon_ds.table.* module does not pull in the whole facade
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'carbon_ds.table' has no attribute {name!r}")
    return getattr(import_module(module), name)
