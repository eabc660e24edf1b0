"""Tables that keep only versioned status files, as CarbonData 2.3.1+ writes them with
carbon.enable.multi.version.table.status=true: every commit writes ``Metadata/tablestatus_<epoch ms>``
(CarbonUpdateUtil / SegmentStatusManager: ``String.valueOf(System.currentTimeMillis())``), no plain
``tablestatus`` exists, and the live version lives in the metastore. CarbonData, finding such a table by path,
takes the largest numeric suffix, skipping ``tablestatus.history`` (CarbonScalaUtil.getLatestTableStatusVersion
/ getTableStatusVersionFiles); a named version without its file is "Table Status Version file {tablestatus_<v>}
not found" (SegmentStatusManager.readFileAsString).

Built on the real CarbonData 1.1 table of the corpus (10 rows, ids 1..10) for reads, on carbon-ds tables for
commits.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pyarrow as pa
import pytest

import carbon_ds
from carbon_ds.cli import main
from carbon_ds.errors import CarbonConcurrentError, CarbonStatusVersionWarning, CarbonTableError
from carbon_ds.fs import Storage
from carbon_ds.table.meta.schema import schema_file
from carbon_ds.table.meta.status import status_versions

SOURCE = Path(__file__).resolve().parents[3] / "shared/compat/carbondata-real/table-1.1-global-dictionary"
if not SOURCE.is_dir():
    SOURCE = Path("/work/shared/compat/carbondata-real/table-1.1-global-dictionary")
OLD, NEW = "1700000000000", "1700000000500"


def meta(root: Path) -> Path:
    return root / "Metadata"


def names(root: Path) -> list[str]:
    return sorted(p.name for p in meta(root).iterdir())


@pytest.fixture
def real(tmp_path: Path) -> Path:
    """The real table with its one segment listed in the newest version only; the older version lists none
    (as after a first commit of an empty list), and neither plain file nor property exists."""
    if not SOURCE.is_dir():
        pytest.skip(f"CarbonData 1.1 table not found at {SOURCE}")
    root = tmp_path / "warehouse" / "sales.db" / "orders"
    shutil.copytree(SOURCE, root)
    live = json.loads((meta(root) / "tablestatus").read_text())
    (meta(root) / "tablestatus").unlink()
    (meta(root) / f"tablestatus_{OLD}").write_text("[]")
    (meta(root) / f"tablestatus_{NEW}").write_text(json.dumps(live))
    # neither of these is a version: CarbonData skips the history file, and only digits make a version
    (meta(root) / "tablestatus.history").write_text(json.dumps([dict(live[0], loadName="9")]))
    return root


def ids(root: Path, **kw) -> list[int]:
    return sorted(carbon_ds.read_table(str(root), columns=["id"], **kw).column("id").to_pylist())


def test_the_newest_version_file_is_read(real: Path):
    assert ids(real) == list(range(1, 11))
    t = carbon_ds.CarbonTable.open(str(real))
    assert t.status_version == NEW
    assert t.live_status().source == status_versions.FROM_NEWEST
    assert [s.id for s in t.segments()] == ["0"]


def test_an_older_version_is_read_when_named(real: Path):
    assert ids(real, status_version=OLD) == []
    assert carbon_ds.CarbonTable.open(str(real), status_version=int(NEW)).count() == 10


def test_a_named_version_without_its_file_is_an_error_naming_it(real: Path):
    with pytest.raises(CarbonTableError, match=r"tablestatus_1699 not found .*read option status_version.*"
                                               rf"present: {OLD}, {NEW}"):
        ids(real, status_version="1699")
    with pytest.raises(CarbonTableError, match="must be digits"):
        ids(real, status_version="latest")


def test_a_version_the_schema_names_without_its_file_is_an_error(real: Path):
    """It used to read as an empty table."""
    storage = Storage.for_path(str(real))[0]
    schema_path = str(meta(real) / "schema")
    info = schema_file.read(storage, schema_path)
    info.fact_table.tableProperties = {**(info.fact_table.tableProperties or {}), "latestversion": "1699"}
    schema_file.write(storage, schema_path, info)
    with pytest.raises(CarbonTableError, match=r"tablestatus_1699 not found .*latestversion in Metadata/schema"):
        carbon_ds.read_table(str(real))


def test_a_plain_file_beside_versions_wins_when_no_version_is_named(real: Path):
    """CarbonData takes the newest version only when the plain file is absent."""
    (meta(real) / "tablestatus").write_text("[]")
    assert ids(real) == []
    assert carbon_ds.CarbonTable.open(str(real)).live_status().source == status_versions.FROM_PLAIN


def test_inspect_names_the_live_file(real: Path, capsys):
    assert main(["inspect", str(real)]) == 0
    out = capsys.readouterr().out
    assert f"Metadata/tablestatus_{NEW} (live: newest tablestatus_<version> file (no plain tablestatus))" in out
    assert f"versioned table status: version {NEW}; 1 other version file(s), newest other {OLD}" in out


# ------------------------------------------------------------------ commits
@pytest.fixture
def ours(tmp_path: Path) -> Path:
    """A carbon-ds table of two segments whose list became a version file (as after CarbonData's first
    commit with versioning on)."""
    root = tmp_path / "warehouse" / "sales.db" / "items"
    carbon_ds.write_table(pa.table({"a": [1, 2, 3]}), str(root))
    carbon_ds.write_table(pa.table({"a": [4]}), str(root))
    (meta(root) / "tablestatus").rename(meta(root) / f"tablestatus_{OLD}")
    return root


def rows(root: Path) -> list[int]:
    return sorted(carbon_ds.read_table(str(root)).column("a").to_pylist())


def test_an_append_commits_a_new_version_and_says_how_to_point_the_metastore_at_it(ours: Path):
    before = (meta(ours) / f"tablestatus_{OLD}").read_bytes()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        carbon_ds.write_table(pa.table({"a": [5, 6]}), str(ours))
    assert "tablestatus" not in names(ours)  # never a plain file beside the versions
    assert (meta(ours) / f"tablestatus_{OLD}").read_bytes() == before  # versions are never rewritten
    newest = status_versions.newest(carbon_ds.CarbonTable.open(str(ours)).storage, str(ours))
    assert int(newest) > int(OLD)
    assert rows(ours) == [1, 2, 3, 4, 5, 6]
    assert rows(ours) == [1, 2, 3, 4, 5, 6]
    said = [str(w.message) for w in caught if w.category is CarbonStatusVersionWarning]
    # one warning, for the commit (the load's reservation wrote a version too, and says nothing)
    assert said == [said[0]]
    assert f"ALTER TABLE sales.items SET SERDEPROPERTIES ('latestversion'='{newest}')" in said[0]
    # the reservation and the commit: two new versions, the older one listing the segment In Progress
    new_versions = [v for v in status_versions.versions(carbon_ds.CarbonTable.open(str(ours)).storage, str(ours))
                    if str(v) != OLD]
    assert len(new_versions) == 2 and str(new_versions[-1]) == newest
    reserved = json.loads((meta(ours) / f"tablestatus_{new_versions[0]}").read_text())
    assert reserved[-1]["loadStatus"] == "In Progress"
    assert carbon_ds.read_table(str(ours), status_version=OLD).num_rows == 4


def test_segment_changes_commit_versions_too(ours: Path):
    t = carbon_ds.CarbonTable.open(str(ours))
    with pytest.warns(CarbonStatusVersionWarning, match="ALTER TABLE sales.items"):
        t.delete_segments(["0"])
    assert "tablestatus" not in names(ours)
    assert rows(ours) == [4]
    with pytest.warns(CarbonStatusVersionWarning):
        t.delete("a = 4")
    assert rows(ours) == []
    assert "tablestatus" not in names(ours)


def test_a_version_committed_meanwhile_refuses_the_commit(ours: Path, monkeypatch):
    """Another writer's version appearing after the edit read its base: nothing is written."""
    t = carbon_ds.CarbonTable.open(str(ours))
    real_newest = status_versions.newest

    def newest_after_other_writer(storage, path):
        (meta(ours) / "tablestatus_1700000000100").write_text((meta(ours) / f"tablestatus_{OLD}").read_text())
        return real_newest(storage, path)

    with t.edit_status("DELETE SEGMENT") as edit:  # noqa: PT012 - the commit happens on leaving the block
        monkeypatch.setattr(status_versions, "newest", newest_after_other_writer)
        edit.entries[0].status = "Marked for Delete"
        with pytest.raises(CarbonConcurrentError, match="committed version 1700000000100"):
            edit.commit()
        edit.entries[0].status = "Success"  # leave the block with nothing to write
    assert names(ours) == ["schema", "segments", f"tablestatus_{OLD}", "tablestatus_1700000000100"]


def test_writes_refuse_a_table_opened_at_a_named_version(ours: Path):
    t = carbon_ds.CarbonTable.open(str(ours), status_version=OLD)
    with pytest.raises(CarbonTableError, match="named by the read option status_version"):
        t.delete_segments(["0"])
    assert names(ours) == ["schema", "segments", f"tablestatus_{OLD}"]


def test_alter_statement_names_the_database_only_from_a_warehouse_folder():
    assert (status_versions.alter_statement("/w/db1.db/t", "5") ==
        "ALTER TABLE db1.t SET SERDEPROPERTIES ('latestversion'='5')")
    assert (status_versions.alter_statement("s3://bucket/store/t/", "5") ==
        "ALTER TABLE t SET SERDEPROPERTIES ('latestversion'='5')")
