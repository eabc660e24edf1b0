"""CarbonData's null marker ``@NU#LL$!`` as a value: carbon-ds files mark string nulls exactly in the presence
bitsets (footer extra_info ``null_bitsets = exact``), so the marker text round-trips as text; files without
that key (every file Apache CarbonData writes) keep CarbonData's rule, marker bytes are null."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from carbon_ds.api import read_table, write_table
from carbon_ds.format.pages.decode import NULL_BITSETS_KEY
from carbon_ds.readers import CarbonDataFile
from carbon_ds.readers.carbon_file import read_folder
from carbon_ds.writers import WriterOptions, write_files

M = "@NU#LL$!"
CORPUS = Path(__file__).resolve().parents[3] / "shared/compat/carbondata-real"


def _data() -> pa.Table:
    s = [M, None, "x", M, "", None]
    return pa.table(
        {
            "id": pa.array(range(6), pa.int32()),
            "s": pa.array(s, pa.string()),
            "vc": pa.array(s, pa.string()),
            "bin": pa.array([None if v is None else v.encode() for v in s], pa.binary()),
            "ls": pa.array([[M, None], None, ["x"], [], [None, M, ""], [M]], pa.list_(pa.string())),
            "st": pa.array([{"a": M}, {"a": None}, None, {"a": "y"}, {"a": M}, {"a": ""}],
                           pa.struct([("a", pa.string())])),
        }
    )


@pytest.mark.parametrize("dictionary", [True, False])
@pytest.mark.parametrize("page_rows", [2, 32000])
def test_marker_text_round_trips(tmp_path, dictionary, page_rows):
    want = _data()
    write_files(want, str(tmp_path), options=WriterOptions(
        long_string_columns=["vc"], local_dictionary_enable=dictionary, page_rows=page_rows))
    got = read_folder(str(tmp_path)).sort_by("id")
    # hand-computed: every value as written, nulls where None was written
    assert got.column("s").to_pylist() == [M, None, "x", M, "", None]
    assert got.column("vc").to_pylist() == [M, None, "x", M, "", None]
    assert got.column("bin").to_pylist() == [M.encode(), None, b"x", M.encode(), b"", None]
    assert got.column("ls").to_pylist() == [[M, None], None, ["x"], [], [None, M, ""], [M]]
    # a struct of only null fields reads as null, as CarbonData reads it (tests/format/test_complex_nulls.py)
    assert got.column("st").to_pylist() == [{"a": M}, None, None, {"a": "y"}, {"a": M}, {"a": ""}]
    assert got.column("s").null_count == 2


def test_marker_in_filters_and_tables(tmp_path):
    path = str(tmp_path / "t")
    write_table(_data().select(["id", "s"]), path)
    assert read_table(path, filter=f"s = '{M}'").column("id").to_pylist() == [0, 3]
    assert sorted(read_table(path, filter="s IS NULL").column("id").to_pylist()) == [1, 5]


def test_writer_marks_its_files(tmp_path):
    [f] = write_files(_data(), str(tmp_path))
    with CarbonDataFile(f.path) as cf:
        assert cf.footer.extra_info[NULL_BITSETS_KEY] == "exact"


@pytest.mark.skipif(not CORPUS.is_dir(), reason="real CarbonData corpus not present")
def test_real_files_keep_carbondatas_rule():
    """Apache CarbonData's files have no such key: their marker bytes are null, as Java reads them."""
    files = sorted(CORPUS.rglob("*.carbondata"))
    assert files
    for p in files:
        with CarbonDataFile(str(p)) as cf:
            assert NULL_BITSETS_KEY not in (cf.footer.extra_info or {}), p
