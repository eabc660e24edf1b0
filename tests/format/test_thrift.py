"""The compact-protocol codec: round trips, wire bytes checked by hand, unknown fields, corrupt input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from carbon_ds.errors import CarbonFormatError, CarbonSchemaError
from carbon_ds.format.thrift.codec import MAX_STRING_BYTES, CompactReader, CompactWriter, Struct
from carbon_ds.format.thrift.structs import (
    MAX_COLUMNS,
    BlockletMinMaxIndex,
    ColumnSchema,
    FileFooter3,
    FileHeader,
    SegmentInfo,
)


class Inner(Struct):
    FIELDS = {1: ("a", "i32", True), 2: ("s", "string", False)}


class Everything(Struct):
    FIELDS = {
        1: ("flag", "bool", False),
        2: ("b", "byte", False),
        3: ("i16", "i16", False),
        4: ("i32", "i32", False),
        5: ("i64", "i64", False),
        6: ("d", "double", False),
        7: ("s", "string", False),
        8: ("bin", "binary", False),
        9: ("ints", ("list", "i64"), False),
        10: ("bools", ("list", "bool"), False),
        11: ("m", ("map", "string", "i32"), False),
        30: ("inner", Inner, False),  # id jump > 15 uses the long field header
        31: ("inners", ("list", Inner), False),
    }


i32s = st.integers(-(2**31), 2**31 - 1)
i64s = st.integers(-(2**63), 2**63 - 1)
inners = st.builds(Inner, a=i32s, s=st.one_of(st.none(), st.text(max_size=20)))


@settings(max_examples=200, deadline=None)
@given(
    flag=st.one_of(st.none(), st.booleans()),
    b=st.one_of(st.none(), st.integers(-128, 127)),
    i16=st.one_of(st.none(), st.integers(-(2**15), 2**15 - 1)),
    i32=st.one_of(st.none(), i32s),
    i64=st.one_of(st.none(), i64s),
    d=st.one_of(st.none(), st.floats(allow_nan=False)),
    s=st.one_of(st.none(), st.text(max_size=40)),
    bin=st.one_of(st.none(), st.binary(max_size=40)),
    ints=st.one_of(st.none(), st.lists(i64s, max_size=40)),
    bools=st.one_of(st.none(), st.lists(st.booleans(), max_size=20)),
    m=st.one_of(st.none(), st.dictionaries(st.text(max_size=8), i32s, max_size=5)),
    inner=st.one_of(st.none(), inners),
    inner_list=st.one_of(st.none(), st.lists(inners, max_size=17)),
)
def test_round_trip(flag, b, i16, i32, i64, d, s, bin, ints, bools, m, inner, inner_list):
    obj = Everything(flag=flag, b=b, i16=i16, i32=i32, i64=i64, d=d, s=s, bin=bin, ints=ints, bools=bools, m=m,
                     inner=inner, inners=inner_list)
    data = obj.to_bytes()
    back, used = Everything.from_bytes(data)
    assert used == len(data)
    assert back == obj


def test_wire_bytes_by_hand():
    # field 1 i32 = 3 -> header 0x15 (delta 1, type 5), zigzag(3) = 6; field 2 string "ab" -> 0x18 0x02 'a' 'b'; stop
    assert Inner(a=3, s="ab").to_bytes() == bytes([0x15, 0x06, 0x18, 0x02, 0x61, 0x62, 0x00])
    # negative numbers zigzag: -1 -> 1
    assert Inner(a=-1).to_bytes() == bytes([0x15, 0x01, 0x00])
    # list of 3 i64 [1, 2, 3]: header 0x36, then zigzag varints 2, 4, 6
    w = CompactWriter()
    w.write_value(("list", "i64"), [1, 2, 3])
    assert bytes(w.buf) == bytes([0x36, 0x02, 0x04, 0x06])
    # bool field true: type nibble 1 carries the value
    assert Everything(flag=True).to_bytes() == bytes([0x11, 0x00])


def test_unknown_fields_are_skipped():
    # write with a struct that has more fields, read with one that knows only field 1
    data = Everything(i32=7, s="x", ints=[1, 2], inner=Inner(a=1), m={"k": 1}, flag=False).to_bytes()

    class Narrow(Struct):
        FIELDS = {4: ("i32", "i32", False)}

    narrow, used = Narrow.from_bytes(data)
    assert narrow.i32 == 7 and used == len(data)


def test_missing_required_field_is_an_error():
    with pytest.raises(CarbonFormatError, match="missing required field 'a'"):
        Inner.from_bytes(bytes([0x28, 0x01, 0x61, 0x00]))  # only field 2 present
    with pytest.raises(ValueError, match="required"):
        Inner(s="x").to_bytes()


def test_required_fields_of_format_structs_are_written():
    footer = FileFooter3(num_rows=0, segment_info=SegmentInfo(num_cols=0, column_cardinalities=[]),
                         blocklet_index_list=[])
    back, _ = FileFooter3.from_bytes(footer.to_bytes())
    assert back.num_rows == 0 and back.blocklet_index_list == [] and back.segment_info.column_cardinalities == []


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "unexpected end"),
        (bytes([0x15]), "unexpected end"),
        (bytes([0x18, 0x7F]), "exceeds"),  # a string of 127 bytes with none left
        (bytes([0x19, 0xF5, 0xFF, 0xFF, 0xFF, 0x0F]), "exceeds"),  # a list of 4 billion i32
        (bytes([0x15] + [0xFF] * 11), "varint"),
        (bytes([0x1C] * 200), "nested deeper"),  # struct in struct in struct ...
    ],
)
def test_corrupt_input_gives_clean_errors(data, message):
    class Deep(Struct):
        FIELDS = {}

    with pytest.raises(CarbonFormatError, match=message):
        Deep.from_bytes(data, path="bad.bin")


def test_error_names_path_and_offset():
    with pytest.raises(CarbonFormatError) as e:
        FileHeader.from_bytes(bytes([0x15, 0x06]), path="x.carbondata", base_offset=100)
    assert "x.carbondata" in str(e.value) and "offset 102" in str(e.value)
    assert e.value.path == "x.carbondata" and e.value.offset == 102


def test_type_mismatch_is_an_error():
    # field 1 of Inner (i32) written as a string
    with pytest.raises(CarbonFormatError, match="expected wire type"):
        Inner.from_bytes(bytes([0x18, 0x01, 0x61, 0x00]))


def test_real_header_round_trips_byte_for_byte(corpus):
    for path in sorted(corpus.rglob("*.carbondata")):
        data = path.read_bytes()
        header, used = FileHeader.from_bytes(data, str(path))
        assert header.version == 3
        again, _ = FileHeader.from_bytes(header.to_bytes())
        assert again == header, path
        if "sdk-2.0" not in str(path):  # 2.0 headers carry ColumnSchema field 18, which we skip on purpose
            assert header.to_bytes() == data[:used], path
        assert all(isinstance(c, ColumnSchema) for c in header.column_schema)


def test_bool_list_reader_accepts_both_encodings():
    # Java writes 1 (true) / 2 (false) for bools in containers
    r = CompactReader(bytes([0x21, 0x01, 0x02]))
    assert r.read_value(9, ("list", "bool")) == [True, False]
    mm = BlockletMinMaxIndex(min_values=[b"a"], max_values=[b"b"], min_max_presence=[True, False])
    assert BlockletMinMaxIndex.from_bytes(mm.to_bytes())[0] == mm


# ------------------------------------------------------------------ bounded work for hostile metadata


def _one_column() -> ColumnSchema:
    return ColumnSchema(data_type=0, column_name="c", column_id="c", columnar=True, encoders=[], dimension=True)


def _header_declaring(n: int, elements: int) -> bytes:
    """A FileHeader whose column list (field 2, wire bytes by hand) declares ``n`` columns and holds
    ``elements`` of them."""
    head = bytes([0x15, 0x06])  # field 1 (version), i32 zigzag 3
    varint = bytearray()
    while True:
        varint.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            break
    return head + bytes([0x19, 0xFC]) + bytes(varint) + _one_column().to_bytes() * elements + b"\x00"


def test_a_column_list_past_the_limit_is_refused_from_its_header():
    # the list header is read before any element: a million declared columns cost nothing
    with pytest.raises(CarbonFormatError, match="list of 1000000 columns exceeds the limit of 20000 columns") as e:
        FileHeader.from_bytes(_header_declaring(1_000_000, 1), path="wide.carbondata")
    assert "wide.carbondata" in str(e.value)
    with pytest.raises(CarbonFormatError, match="list of 20001 columns exceeds the limit of 20000 columns"):
        FileHeader.from_bytes(_header_declaring(MAX_COLUMNS + 1, MAX_COLUMNS + 1))
    h, _ = FileHeader.from_bytes(_header_declaring(MAX_COLUMNS, MAX_COLUMNS))
    assert len(h.column_schema) == MAX_COLUMNS


def test_writer_refuses_more_columns_than_readers_take():
    with pytest.raises(CarbonSchemaError, match="20001 columns exceed the limit of 20000"):
        FileHeader(version=3, column_schema=[_one_column()] * (MAX_COLUMNS + 1)).to_bytes()


def test_struct_list_longer_than_its_bytes_could_hold_is_refused():
    # a ColumnSchema takes at least 11 bytes (4 required fields of two bytes, 2 bools of one, a stop
    # byte): 100 declared columns in 200 bytes cannot be
    assert len(_one_column().to_bytes()) >= 11
    data = _header_declaring(100, 0) + b"\x00" * 200
    with pytest.raises(CarbonFormatError, match="list of 100 elements exceeds the 201 bytes left"):
        FileHeader.from_bytes(data)


def test_text_string_past_the_limit_is_refused():
    class Named(Struct):
        FIELDS = {1: ("name", "string", True), 2: ("blob", "binary", False)}

    big = MAX_STRING_BYTES + 1
    w = CompactWriter()
    w.write_struct(Named(name="x" * big))
    with pytest.raises(CarbonFormatError, match=f"string of {big} bytes exceeds the limit of {MAX_STRING_BYTES}"):
        Named.from_bytes(bytes(w.buf))
    w = CompactWriter()
    w.write_struct(Named(name="x", blob=b"\x00" * big))  # binaries (page data, index files) are not text
    assert len(Named.from_bytes(bytes(w.buf))[0].blob) == big
