"""The reader against files written by Apache CarbonData itself (see PROVENANCE.md of the corpus).

Each expectation below says where it comes from: the Java program that wrote the file, a well-known
data set, or (where the writing program is not at hand) the file's own metadata, which the reader
does not use to produce values (encoder-meta min/max, the index file's row counts).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from carbon_ds.errors import CarbonSchemaError
from carbon_ds.format.thrift.structs import BlockIndex, IndexHeader
from carbon_ds.readers import CarbonDataFile, read_folder

CORPUS = Path(__file__).resolve().parents[3] / "shared/compat/carbondata-real"
if not CORPUS.is_dir():
    pytest.skip(f"real CarbonData corpus not found at {CORPUS}", allow_module_level=True)

DATA_FILES = sorted(CORPUS.rglob("*.carbondata"))
INDEX_FILES = sorted(CORPUS.rglob("*.carbonindex"))


def _rel(p: Path) -> str:
    return str(p.relative_to(CORPUS))


def _one(folder: str) -> CarbonDataFile:
    files = sorted((CORPUS / folder).rglob("*.carbondata"))
    assert len(files) == 1, files
    return CarbonDataFile(str(files[0]))


def _index_entries(path: Path) -> list[BlockIndex]:
    data = path.read_bytes()
    _, pos = IndexHeader.from_bytes(data, str(path))
    out = []
    while pos < len(data):
        entry, used = BlockIndex.from_bytes(data[pos:], str(path), pos)
        out.append(entry)
        pos += used
    return out


def test_corpus_is_complete():
    assert len(DATA_FILES) == 11 and len(INDEX_FILES) == 11


@pytest.mark.parametrize("path", DATA_FILES, ids=_rel)
def test_every_readable_column_decodes_with_footer_row_count(path: Path):
    with CarbonDataFile(str(path)) as f:
        assert f.num_rows == int(f.footer.num_rows) == sum(f.blocklet_rows(i) for i in range(f.num_blocklets))
        # every column, the 1.1 table's global-dictionary strings included (tests/format/test_global_dictionary.py)
        names = f.schema.names
        table = f.read(names)
        assert table.num_rows == f.num_rows
        assert table.schema == pa.schema([f.schema.field(n) for n in names])
        table.validate(full=True)


@pytest.mark.parametrize("path", INDEX_FILES, ids=_rel)
def test_index_row_counts_match_data_files(path: Path):
    entries = _index_entries(path)
    assert entries
    for e in entries:
        with CarbonDataFile(str(path.parent / e.file_name)) as f:
            assert e.num_rows == f.num_rows
            if e.file_size:
                assert e.file_size == f.size


@pytest.mark.parametrize("folder", ["sdk-1.3-name-age-a", "sdk-1.3-name-age-b", "sdk-1.3-name-age-c"])
def test_sdk_13_name_age(folder: str):
    # The 1.3 SDK test writer loops i in 0..99 writing ("robot" + i, i); the footer min/max
    # ('robot0'..'robot99', 0..99) and reading agree with that pattern, in that order.
    t = read_folder(str(CORPUS / folder))
    per_file = 100
    files = len(list((CORPUS / folder).glob("*.carbondata")))
    assert t.num_rows == per_file * files
    assert t.column("name").to_pylist() == [f"robot{i}" for i in range(per_file)] * files
    assert t.column("age").to_pylist() == list(range(per_file)) * files
    assert t.schema == pa.schema([("name", pa.string()), ("age", pa.int32())])


def test_sdk_16_all_types():
    # CarbonReaderExample (examples/spark/.../sdk/CarbonReaderExample.java) writes 10 rows i = 0..9 of
    # CSV strings: "robot"+(i%10), i%10000, i, Long.MAX_VALUE-i, i/2.0, true, "2019-03-02",
    # "2019-02-12 03:03:34", "12.345" into DECIMAL(8,2), "varchar", "Hello#World#From#Carbon" ('#' is the
    # array delimiter). The timestamp was parsed in the writer's local zone (UTC+8): the file holds epoch
    # ms 1549911814000 = 2019-02-11T19:03:34Z (also its encoder-meta min and max).
    f = _one("sdk-1.6-all-types")
    assert f.schema.names == ["stringfield", "shortfield", "intfield", "longfield", "doublefield", "boolfield",
                              "datefield", "timefield", "decimalfield", "varcharfield", "arrayfield"]
    t = f.read()
    r = range(10)
    assert t.column("stringfield").to_pylist() == [f"robot{i}" for i in r]
    assert t.column("shortfield").to_pylist() == list(r)
    assert t.column("shortfield").type == pa.int16()
    assert t.column("intfield").to_pylist() == list(r)
    assert t.column("longfield").to_pylist() == [2**63 - 1 - i for i in r]
    assert t.column("doublefield").to_pylist() == [i / 2 for i in r]
    assert t.column("boolfield").to_pylist() == [True] * 10
    assert t.column("datefield").to_pylist() == [dt.date(2019, 3, 2)] * 10
    ts = dt.datetime(2019, 2, 11, 19, 3, 34, tzinfo=dt.UTC)
    assert [v.as_py() for v in t.column("timefield")] == [ts] * 10
    assert t.column("timefield").type == pa.timestamp("us", tz="UTC")
    assert t.column("decimalfield").to_pylist() == [Decimal("12.35")] * 10  # 12.345 rounded HALF_UP to scale 2
    assert t.column("decimalfield").type == pa.decimal128(8, 2)
    assert t.column("varcharfield").to_pylist() == ["varchar"] * 10
    assert t.column("arrayfield").to_pylist() == [["Hello", "World", "From", "Carbon"]] * 10


def test_sdk_16_binary():
    # SDKS3Example (examples/spark/.../sdk/SDKS3Example.java, binary variant) writes ("robot"+i, i, and
    # the same PNG file as image1..image3) for i in 0..9, once per output folder.
    t = read_folder(str(CORPUS / "sdk-1.6-binary"))
    assert t.num_rows == 30
    assert t.schema.names == ["name", "age", "image1", "image2", "image3"]
    assert t.column("name").to_pylist() == [f"robot{i}" for i in range(10)] * 3
    assert t.column("age").to_pylist() == list(range(10)) * 3
    images = set()
    for c in ("image1", "image2", "image3"):
        assert t.column(c).type == pa.binary()
        for v in t.column(c).to_pylist():
            assert v.startswith(b"\x89PNG\r\n\x1a\n") and v.endswith(b"IEND\xaeB`\x82")
            images.add(v)
    assert len(images) == 1  # one picture written everywhere


def test_sdk_16_mnist():
    # The MNIST test set: 10,000 28x28 images; its first labels are 7,2,1,0,4,1,4,9,5,9 and its class
    # sizes are the well-known 980/1135/1032/1010/982/892/958/1028/974/1009. idx is the row number.
    t = _one("sdk-1.6-mnist-test").read()
    assert t.num_rows == 10000
    assert t.column("idx").to_pylist() == list(range(10000))
    digits = t.column("digit").to_pylist()
    assert digits[:10] == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    assert [Counter(digits)[d] for d in range(10)] == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    lengths = set(pa.compute.binary_length(t.column("image")).to_pylist())
    assert lengths == {784}


def test_sdk_20_arrays():
    # TestNonTransactionalCarbonTable writes 3 identical rows of a person with two string arrays. The
    # expected values were read off the file's own page bytes (plain 4-byte LV child pages) and its parent
    # pages' (count, start) pairs (2,0),(2,2),(2,4); age's encoder-meta min = max = 10.
    f = _one("sdk-2.0-arrays")
    t = f.read()
    assert t.schema.names == ["name", "age", "address", "address2"]
    assert t.column("name").to_pylist() == ["bob"] * 3
    assert t.column("age").to_pylist() == [10] * 3
    assert t.column("address").to_pylist() == [["abc", "defg"]] * 3
    assert t.column("address2").to_pylist() == [["ddd", "eee"]] * 3
    assert t.column("address").type == pa.list_(pa.string())


def test_table_11_measures_and_dates():
    # The 1.1 test data (used by CarbonData's Flink input format test): row "1,2015/7/23,china,aaa1,
    # phone197,ASD69643,15000" and ids 1..10 with salary 14999 + id and one day per id from 2015-07-23
    # except the two rows sorted first. Dates are the sort column, so rows come out in date order.
    f = _one("table-1.1-global-dictionary")
    t = f.read(["id", "date", "salary"])
    ids = t.column("id").to_pylist()
    assert sorted(ids) == list(range(1, 11))
    rows = {i: (d, s) for i, d, s in zip(ids, t.column("date").to_pylist(), t.column("salary").to_pylist(),
                                         strict=True)}
    assert rows[1] == (dt.date(2015, 7, 23), 15000)
    assert all(s == 14999 + i for i, (_, s) in rows.items())
    dates = t.column("date").to_pylist()
    assert dates == sorted(dates)


def test_projection_case_insensitive_and_unknown_column():
    f = _one("sdk-1.6-all-types")
    b = f.read_blocklet(0, ["IntField", "stringFIELD"])
    assert b.schema.names == ["intfield", "stringfield"]
    with pytest.raises(CarbonSchemaError, match="nosuch.*available: stringfield"):
        f.read(["nosuch"])


def test_projection_reads_only_requested_ranges():
    f = _one("sdk-1.6-mnist-test")
    reads = []
    original = f._v3._read
    f._v3._read = lambda off, n: reads.append((off, n)) or original(off, n)  # type: ignore[method-assign]
    f.read(["idx"])
    assert sum(n for _, n in reads) < 30_000  # the 2.4 MB image column is never touched


def test_read_column_chunk_and_iter_batches():
    f = _one("sdk-1.6-all-types")
    chunk = f.read_column_chunk(0, 0)
    assert chunk.local_dictionary is not None and len(chunk.data_chunk_list) == 1
    batches = list(f.iter_batches(["intfield"], blocklets=[0]))
    assert len(batches) == 1 and batches[0].num_rows == 10


def test_read_folder_rejects_mixed_schemas(tmp_path):
    import shutil

    a = next((CORPUS / "sdk-1.3-name-age-a").glob("*.carbondata"))
    b = next((CORPUS / "sdk-2.0-arrays").glob("*.carbondata"))
    shutil.copy(a, tmp_path / "a.carbondata")
    (tmp_path / "sub").mkdir()
    shutil.copy(b, tmp_path / "sub" / "b.carbondata")
    with pytest.raises(CarbonSchemaError, match=r"b\.carbondata.*a\.carbondata"):
        read_folder(str(tmp_path))
