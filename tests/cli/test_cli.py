"""The `carbon-ds` segment subcommands (no Spark)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import carbon_ds.api as api
from carbon_ds.cli import main
from carbon_ds.table import CarbonTable
from carbon_ds.writers.carbon_file_writer import CarbonWriter


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
    # segment 0 stays in tablestatus, invisible, as CarbonData keeps it (tests/table/test_segments.py)
    assert [(s.id, s.readable) for s in CarbonTable.open(table).segments()] == [("0", False), ("2", True)]


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


@pytest.mark.parametrize("command", [["show-segments"], ["clean-files"], ["compact"], ["unlock"],
                                     ["delete-segment", "--ids", "0"]])
def test_missing_path_and_sdk_folder_say_what_was_found(command, tmp_path, capsys):
    """A missing path and a CarbonData SDK output folder (.carbondata files, no Metadata/): the error names the
    path, what a table holds, what was there, and the commands that read such a folder; not a Python name."""
    missing = tmp_path / "nope"
    assert main([command[0], str(missing), *command[1:]]) == 2
    err = capsys.readouterr().err
    assert f"{command[0]}: not a CarbonData table: {missing} does not exist" in err
    assert f"expected a table folder holding {missing}/Metadata/schema" in err
    sdk = tmp_path / "sdk"
    sdk.mkdir()
    with CarbonWriter(str(sdk), pa.schema([("a", pa.int64())])) as writer:
        writer.write(pa.table({"a": pa.array([1], pa.int64())}))
    assert main([command[0], str(sdk), *command[1:]]) == 2
    err = capsys.readouterr().err
    assert f"{sdk} holds 1 .carbondata file(s) but no Metadata/ folder, as CarbonData's SDK writes them" in err
    assert "'carbon-ds inspect' and 'carbon-ds explain' read such a folder" in err
    assert "carbon_ds." not in err and "read_table" not in err and "Traceback" not in err
    # and those two commands do read it
    assert main(["explain", str(sdk)]) == 0
    assert "rows       read          1 of          1" in capsys.readouterr().out


def test_add_segment_dry_run_prints_the_report(table, tmp_path, capsys):
    good = tmp_path / "good"
    good.mkdir()
    pq.write_table(pa.table({"a": pa.array([7, 8], pa.int64())}), good / "part-0.parquet")
    assert main(["add-segment", table, "--path", str(good), "--format", "parquet", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("add segment ok:") and "part-0.parquet rows=2" in out
    bad = tmp_path / "bad"
    bad.mkdir()
    pq.write_table(pa.table({"b": pa.array(["x"])}), bad / "part-0.parquet")
    assert main(["add-segment", table, "--path", str(bad), "--format", "parquet", "--dry-run"]) == 1
    assert "add segment REFUSED" in capsys.readouterr().out
    assert [s.id for s in CarbonTable.open(table).segments()] == ["0", "1", "2"]  # a dry run adds nothing
