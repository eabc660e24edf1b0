"""Global-dictionary columns of the CarbonData 1.1 table (values in Metadata/<column_id>.dict).

The table is apache/carbondata's integration/flink/src/test/resources/store/default/t3 (the store read by
CarbonDataFlinkInputFormatTest). Its rows are CarbonData's example data set
examples/spark/src/main/resources/data.csv (apache/carbondata), written out below as CSV_ROWS; that test
checks the row "1,2015/7/23,china,aaa1,phone197,ASD69643,15000" of the same store.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from carbon_ds.errors import CarbonFormatError
from carbon_ds.format import dictionary as gd
from carbon_ds.format.thrift.structs import ColumnDictionaryChunk, ColumnDictionaryChunkMeta
from carbon_ds.fs import Storage
from carbon_ds.readers.carbon_file import CarbonDataFile

CORPUS = Path(__file__).resolve().parents[3] / "shared/compat/carbondata-real"
TABLE = CORPUS / "table-1.1-global-dictionary"
if not TABLE.is_dir():
    pytest.skip(f"CarbonData 1.1 table not found at {TABLE}", allow_module_level=True)

DATA_REL = "Fact/Part0/Segment_0/part-0-0_batchno0-0-1492585716607.carbondata"
NAME_ID = "0e66a591-a445-4813-8db1-693f727a6901"  # column_id of `name` in the file header

# examples/spark/src/main/resources/data.csv: ID,date,country,name,phonetype,serialname,salary
# (that file's later floatField column is not part of this table's schema)
CSV_ROWS = """\
1,2015/7/23,china,aaa1,phone197,ASD69643,15000
2,2015/7/24,china,aaa2,phone756,ASD42892,15001
3,2015/7/25,china,aaa3,phone1904,ASD37014,15002
4,2015/7/26,china,aaa4,phone2435,ASD66902,15003
5,2015/7/27,china,aaa5,phone2441,ASD90633,15004
6,2015/7/28,china,aaa6,phone294,ASD59961,15005
7,2015/7/29,china,aaa7,phone610,ASD14875,15006
8,2015/7/30,china,aaa8,phone1848,ASD57308,15007
9,2015/7/18,china,aaa9,phone706,ASD86717,15008
10,2015/7/19,usa,aaa10,phone685,ASD30505,15009
"""


def _expected() -> dict[int, dict]:
    out = {}
    for line in CSV_ROWS.splitlines():
        i, d, country, name, phone, serial, salary = line.split(",")
        y, m, day = map(int, d.split("/"))
        out[int(i)] = {
            "id": int(i),
            "date": dt.date(y, m, day),
            "country": country,
            "name": name,
            "phonetype": phone,
            "serialname": serial,
            "salary": int(salary),
        }
    return out


@pytest.fixture
def table_copy(tmp_path: Path) -> Path:
    dst = tmp_path / "t3"
    shutil.copytree(TABLE, dst)
    for p in dst.rglob("*"):
        p.chmod(0o644 if p.is_file() else 0o755)  # the corpus is read-only; the tests alter the copy
    return dst


def _write_dictionary(root: Path, column_id: str, loads: list[list[list[bytes]]], tail: bytes = b"") -> None:
    """Write a .dict/.dictmeta pair as CarbonData's writer lays them out: per load, its chunks back to
    back in .dict and one meta entry (surrogate range, byte range, chunk count) in .dictmeta."""
    data, meta = bytearray(), bytearray()
    top = 0
    for chunks in loads:
        start = len(data)
        for values in chunks:
            data += ColumnDictionaryChunk(values=values).to_bytes()
        n = sum(len(v) for v in chunks)
        meta += ColumnDictionaryChunkMeta(
            min_surrogate_key=top + 1 if n else top,
            max_surrogate_key=top + n,
            start_offset=start,
            end_offset=len(data),
            chunk_count=len(chunks),
        ).to_bytes()
        top += n
    (root / "Metadata" / f"{column_id}.dict").write_bytes(bytes(data) + tail)
    (root / "Metadata" / f"{column_id}.dictmeta").write_bytes(bytes(meta))


def _name_values() -> list[bytes]:
    """The name dictionary's values in file order, read with the thrift structs (not the module under test)."""
    data = (TABLE / "Metadata" / f"{NAME_ID}.dict").read_bytes()
    chunk, used = ColumnDictionaryChunk.from_bytes(data)
    assert used == len(data)
    return chunk.values


# ------------------------------------------------------------------ the real table


def test_every_row_matches_the_source_csv():
    with CarbonDataFile(str(TABLE / DATA_REL)) as f:
        t = f.read()
    assert t.schema.names == ["id", "date", "country", "name", "phonetype", "serialname", "salary"]
    t.validate(full=True)
    rows = t.to_pylist()
    assert len(rows) == 10
    expected = _expected()
    assert {r["id"]: r for r in rows} == expected
    # the file keeps rows in sort-column (date) order; the string columns are un-permuted by their
    # inverted index, so each row's strings must stay with its id
    assert [r["id"] for r in rows] == [9, 10, 1, 2, 3, 4, 5, 6, 7, 8]


def test_projection_of_one_dictionary_column():
    with CarbonDataFile(str(TABLE / DATA_REL)) as f:
        t = f.read(["serialname", "id"])
    got = dict(zip(t.column("id").to_pylist(), t.column("serialname").to_pylist(), strict=True))
    assert got == {i: r["serialname"] for i, r in _expected().items()}


def test_dictionary_file_numbering():
    storage, path = Storage.for_path(TABLE / "Metadata" / f"{NAME_ID}.dict")
    arr = gd.read_global_dictionary(storage, path)
    values = arr.to_pylist()
    # surrogate 0 is unassigned, 1 the null member "@NU#LL$!", then the values in file order
    assert values[0] is None and values[1] is None
    assert _name_values()[0] == gd.NULL_MEMBER
    assert values[2:] == [v.decode() for v in _name_values()[1:]]
    assert sorted(values[2:]) == sorted(r["name"] for r in _expected().values())


def test_dictionary_loaded_once_per_file_object(monkeypatch):
    calls = []
    real = gd.read_global_dictionary

    def counting(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr("carbon_ds.format.v3_file.read_global_dictionary", counting)
    with CarbonDataFile(str(TABLE / DATA_REL)) as f:
        f.read(["name"])
        f.read(["name", "country"])
    assert len(calls) == 2 and len(set(calls)) == 2


# ------------------------------------------------------------------ layouts the writer produces


def test_several_loads_and_chunks_number_on(table_copy: Path):
    # split the real name dictionary into two loads, the second in two chunks: surrogates continue
    # across chunks and loads, so every row must still read its own name
    v = _name_values()
    _write_dictionary(table_copy, NAME_ID, [[v[:4]], [v[4:7], v[7:]]])
    with CarbonDataFile(str(table_copy / DATA_REL)) as f:
        t = f.read(["id", "name"])
    assert dict(zip(t.column("id").to_pylist(), t.column("name").to_pylist(), strict=True)) == {
        i: r["name"] for i, r in _expected().items()
    }


def test_bytes_past_the_last_committed_load_are_ignored(table_copy: Path):
    # an interrupted load leaves chunks after the last .dictmeta end offset; Java truncates them
    v = _name_values()
    tail = ColumnDictionaryChunk(values=[b"uncommitted"]).to_bytes()
    _write_dictionary(table_copy, NAME_ID, [[v]], tail=tail)
    with CarbonDataFile(str(table_copy / DATA_REL)) as f:
        assert sorted(f.read(["name"]).column("name").to_pylist()) == sorted(r["name"] for r in _expected().values())


# ------------------------------------------------------------------ failures


def test_missing_dictionary_file_names_column_and_path(table_copy: Path):
    (table_copy / "Metadata" / f"{NAME_ID}.dict").unlink()
    with CarbonDataFile(str(table_copy / DATA_REL)) as f:
        with pytest.raises(CarbonFormatError, match=rf"'name'.*Metadata/{NAME_ID}\.dict does not exist"):
            f.read(["name"])
        # the other columns, dictionary ones included, still read
        assert f.read(["id", "country"]).num_rows == 10


def test_missing_dictionary_meta(table_copy: Path):
    (table_copy / "Metadata" / f"{NAME_ID}.dictmeta").unlink()
    with CarbonDataFile(str(table_copy / DATA_REL)) as f:
        with pytest.raises(CarbonFormatError, match=r"'name'.*\.dictmeta is missing"):
            f.read(["name"])


def test_data_file_outside_a_table_layout(tmp_path: Path):
    lone = tmp_path / "part.carbondata"
    shutil.copyfile(TABLE / DATA_REL, lone)
    with CarbonDataFile(str(lone)) as f:
        with pytest.raises(CarbonFormatError, match=r"'name'.*Metadata/.*\.dict.*not inside a table"):
            f.read(["name"])
        assert f.read(["id"]).num_rows == 10


@pytest.mark.parametrize(
    "corrupt",
    # the real .dict starts 0x19 (field 1, list), 0xb8 (11 binaries), 0x08 (length of "@NU#LL$!"), ...
    [
        pytest.param(lambda b: b[: len(b) // 2], id="truncated"),
        pytest.param(lambda b: b[:1] + b"\xb5" + b[2:], id="list-of-binary-becomes-list-of-i32"),
        pytest.param(lambda b: b[:2] + b"\xff\xff\xff\xff\x0f" + b[3:], id="huge-value-length"),
        pytest.param(lambda b: b[:1] + b"\xf8\xff\xff\xff\xff\x0f" + b[2:], id="huge-list-count"),
        pytest.param(lambda b: b"\x00" * len(b), id="zeros"),
        pytest.param(lambda b: b[:12] + b"\xff\xfe" + b[14:], id="invalid-utf8"),
    ],
)
def test_corrupt_dictionary_raises_format_error(table_copy: Path, corrupt):
    path = table_copy / "Metadata" / f"{NAME_ID}.dict"
    path.write_bytes(corrupt(path.read_bytes()))
    with CarbonDataFile(str(table_copy / DATA_REL)) as f:
        with pytest.raises(CarbonFormatError, match=rf"'name' global dictionary.*Metadata/{NAME_ID}\.dict"):
            f.read(["name"])


def test_corrupt_dictionary_meta_raises_format_error(table_copy: Path):
    meta = table_copy / "Metadata" / f"{NAME_ID}.dictmeta"
    entry, _ = ColumnDictionaryChunkMeta.from_bytes(meta.read_bytes())
    entry.end_offset += 1000  # claims bytes the .dict does not have
    meta.write_bytes(entry.to_bytes())
    with CarbonDataFile(str(table_copy / DATA_REL)) as f:
        with pytest.raises(CarbonFormatError, match=r"load 0 claims bytes"):
            f.read(["name"])


def test_dictionary_disagreeing_with_its_meta(table_copy: Path):
    meta = table_copy / "Metadata" / f"{NAME_ID}.dictmeta"
    entry, _ = ColumnDictionaryChunkMeta.from_bytes(meta.read_bytes())
    entry.max_surrogate_key -= 1  # one value more in the file than the meta committed
    meta.write_bytes(entry.to_bytes())
    with CarbonDataFile(str(table_copy / DATA_REL)) as f:
        with pytest.raises(CarbonFormatError, match=r"11 values.*surrogates up to 10"):
            f.read(["name"])


def test_surrogate_past_the_dictionary(table_copy: Path):
    # a well-formed dictionary that is too short for the keys in the data file
    _write_dictionary(table_copy, NAME_ID, [[_name_values()[:5]]])
    with CarbonDataFile(str(table_copy / DATA_REL)) as f:
        with pytest.raises(CarbonFormatError, match=r"'name'.*global dictionary key 11 outside"):
            f.read(["name"])
