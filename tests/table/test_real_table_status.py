"""Segment lists as CarbonData 2.3 keeps them, built on the real CarbonData 1.1 table of the corpus.

* Versioned table status (CarbonData 2.3.1+, carbon.enable.multi.version.table.status): the live list is
  ``Metadata/tablestatus_<v>`` where ``v`` is the table property ``latestversion``
  (CarbonTable.getTableStatusVersion, CarbonTablePath.getTableStatusFilePath(tablePath, version)); the plain
  ``tablestatus`` left beside it is stale.

The table's 10 rows are CarbonData's examples/spark/src/main/resources/data.csv (see
tests/format/test_global_dictionary.py); their ids are 1..10.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import carbon_ds
from carbon_ds.errors import CarbonTableError
from carbon_ds.fs import Storage
from carbon_ds.table.meta import schema_file

SOURCE = Path(__file__).resolve().parents[3] / "shared/compat/carbondata-real/table-1.1-global-dictionary"
if not SOURCE.is_dir():
    SOURCE = Path("/work/shared/compat/carbondata-real/table-1.1-global-dictionary")
if not SOURCE.is_dir():
    pytest.skip(f"CarbonData 1.1 table not found at {SOURCE}", allow_module_level=True)
VERSION = "1700000000000"


@pytest.fixture
def table(tmp_path: Path) -> Path:
    root = tmp_path / "t"
    shutil.copytree(SOURCE, root)
    return root


def status(root: Path, name: str = "tablestatus") -> list[dict]:
    return json.loads((root / "Metadata" / name).read_text())


def set_property(root: Path, key: str, value: str) -> None:
    storage = Storage.for_path(str(root))[0]
    path = str(root / "Metadata" / "schema")
    info = schema_file.read(storage, path)
    props = dict(info.fact_table.tableProperties or {})
    props[key] = value
    info.fact_table.tableProperties = props
    schema_file.write(storage, path, info)


def versioned(root: Path) -> None:
    """The live list in tablestatus_<VERSION>; the plain file says segment 0 was deleted (stale)."""
    live = status(root)
    (root / "Metadata" / f"tablestatus_{VERSION}").write_text(json.dumps(live))
    stale = [dict(live[0], loadStatus="Marked for Delete")]
    (root / "Metadata" / "tablestatus").write_text(json.dumps(stale))
    set_property(root, "latestversion", VERSION)


def test_versioned_status_is_the_live_list(table: Path):
    versioned(table)
    got = carbon_ds.read_table(str(table), columns=["id"])
    assert sorted(got.column("id").to_pylist()) == list(range(1, 11))
    assert [s.status for s in carbon_ds.CarbonTable.open(str(table)).segments()] == ["Success"]


def test_without_the_property_the_plain_file_counts(table: Path):
    versioned(table)
    set_property(table, "latestversion", "")
    assert carbon_ds.read_table(str(table), columns=["id"]).num_rows == 0


def test_writes_to_a_versioned_table_refuse_naming_the_property(table: Path):
    versioned(table)
    before = sorted(p.name for p in (table / "Metadata").iterdir())
    t = carbon_ds.CarbonTable.open(str(table))
    with pytest.raises(CarbonTableError, match="latestversion"):
        t.delete_segments(["0"])
    with pytest.raises(CarbonTableError, match="latestversion"):
        carbon_ds.write_table(carbon_ds.read_table(str(table)), str(table), mode="append")
    assert sorted(p.name for p in (table / "Metadata").iterdir()) == before
    assert status(table, f"tablestatus_{VERSION}")[0]["loadStatus"] == "Success"
