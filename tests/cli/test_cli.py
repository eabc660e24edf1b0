"""The `carbon-ds` segment subcommands (no Spark)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import carbon_ds.api as api
from carbon_ds.cli import main
from carbon_ds.table import CarbonTable


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "t"
    for i in range(3):
        api.write_table(pa.table({"a": pa.array([i], pa.int64())}), path)
    return str(path)


def test_show_delete_clean(table, capsys):
    assert main(["show-segments", table, "--limit", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "|ID|Status " in out[1] and [line[:3] for line in out[3:5]] == ["|2 ", "|1 "] and len(out) == 6
    assert main(["delete-segment", table, "--ids", "0,1"]) == 0
    assert "marked for delete: 0, 1" in capsys.readouterr().out
    assert main(["delete-segment", table, "--before", "2000-01-01 00:00:00"]) == 2
    assert "carbon-ds: error: Delete segment by date is failed" in capsys.readouterr().err
    assert main(["clean-files", table]) == 0
    out = capsys.readouterr().out
    assert "0: moved to trash" in out and "1: moved to trash" in out and "trash: " in out
    assert main(["clean-files", table, "--force"]) == 0
    assert "trash folder expired" in capsys.readouterr().out
    assert [s.id for s in CarbonTable.open(table).segments()] == ["2"]


def test_errors_exit_2(table, tmp_path, capsys):
    assert main(["delete-segment", table, "--ids", "7"]) == 2
    assert "Invalid ID is: 7" in capsys.readouterr().err
    assert main(["show-segments", str(tmp_path / "nope")]) == 2
    assert "not a CarbonData table" in capsys.readouterr().err
    if not hasattr(CarbonTable, "add_segment"):
        assert main(["add-segment", table, "--path", str(tmp_path), "--format", "parquet", "--dry-run"]) == 2
        assert "ADD SEGMENT is not available yet" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["delete-segment", table])  # --ids or --before is required
