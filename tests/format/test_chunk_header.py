"""The compiled column-chunk header parse against the generic thrift codec (the oracle): the same objects for
every header of the real CarbonData files and of our own files, the same objects or the same error for
hand-made and mutated headers, and the fast pass really taking the well-formed ones."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

import carbon_ds
from carbon_ds.errors import CarbonError
from carbon_ds.format.pages.chunk_header import parse_data_chunk3
from carbon_ds.format.thrift.structs import (
    BlockletMinMaxIndex,
    ChunkCompressionMeta,
    DataChunk2,
    DataChunk3,
    LocalDictionaryChunk,
    LocalDictionaryChunkMeta,
    PresenceMeta,
)
from carbon_ds.readers.carbon_file import CarbonDataFile

CORPUS = Path(__file__).resolve().parents[3] / "shared/compat/carbondata-real"


def _headers(paths: list[Path]) -> list[bytes]:
    out = []
    for p in paths:
        f = CarbonDataFile(str(p))
        for b in range(len(f.footer.blocklet_info_list3)):
            info = f.footer.blocklet_info_list3[b]
            for c in range(len(info.column_data_chunks_offsets)):
                start, length = info.column_data_chunks_offsets[c], info.column_data_chunks_length[c]
                with open(p, "rb") as fh:
                    fh.seek(start)
                    out.append(fh.read(length))
    return out


@pytest.fixture
def generic_calls(monkeypatch) -> list[int]:
    """How often the generic codec parsed a DataChunk3 (the fast pass gave up)."""
    calls = [0]
    generic = DataChunk3.from_bytes.__func__

    def counting(cls, *args, **kwargs):
        calls[0] += 1
        return generic(cls, *args, **kwargs)

    monkeypatch.setattr(DataChunk3, "from_bytes", classmethod(counting))
    return calls


_GENERIC = DataChunk3.from_bytes.__func__


def _oracle(data: bytes) -> DataChunk3:
    return _GENERIC(DataChunk3, data, "f", 7)[0]


def _outcome(parse, data: bytes):
    try:
        return "ok", parse(data)
    except CarbonError as e:
        return "error", type(e), str(e)


@pytest.fixture(scope="module")
def own_headers(tmp_path_factory) -> list[bytes]:
    """Headers of a file of every kind of column carbon-ds writes: nulls (presence bit streams), local
    dictionaries, sort columns, nested types, several pages."""
    n = 70_000
    rows = pa.table({
        "s": pa.array([None if i % 7 == 0 else f"v{i % 50}" for i in range(n)]),
        "wide": pa.array([f"text-{i}" for i in range(n)]),
        "i": pa.array([None if i % 5 == 0 else i for i in range(n)], pa.int32()),
        "l": pa.array(range(n), pa.int64()),
        "f": pa.array([i / 3 for i in range(n)]),
        "d": pa.array([Decimal(i) / 100 for i in range(n)], pa.decimal128(12, 2)),
        "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 400) for i in range(n)]),
        "ts": pa.array([dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=i) for i in range(n)]),
        "b": pa.array([i % 3 == 0 for i in range(n)]),
        "tags": pa.array([[f"t{i % 4}", None] for i in range(n)], pa.list_(pa.string())),
    })
    path = tmp_path_factory.mktemp("headers") / "t"
    carbon_ds.write_table(rows, str(path), sort_columns=["s"])
    return _headers(sorted(path.rglob("*.carbondata")))


def test_every_real_header_parses_to_the_generic_codecs_objects(generic_calls):
    if not CORPUS.is_dir():
        pytest.skip(f"real CarbonData corpus not found at {CORPUS}")
    headers = _headers(sorted(CORPUS.rglob("*.carbondata")))
    assert len(headers) > 40
    assert [parse_data_chunk3(h) for h in headers] == [_oracle(h) for h in headers]
    # CarbonData 2.x string columns carry a local dictionary: those too are the compiled pass's
    assert sum(_oracle(h).local_dictionary is not None for h in headers) >= 4
    assert generic_calls[0] == 0


def test_our_own_headers_parse_to_the_generic_codecs_objects(own_headers, generic_calls):
    parsed = [parse_data_chunk3(h) for h in own_headers]
    assert parsed == [_oracle(h) for h in own_headers]
    assert generic_calls[0] == 0
    pages = [p for c in parsed for p in c.data_chunk_list]
    assert any(p.presence is not None for p in pages)
    assert any(c.local_dictionary is not None for c in parsed)
    assert max(len(c.data_chunk_list) for c in parsed) >= 3


def _every_field() -> DataChunk3:
    page = DataChunk2(
        chunk_meta=ChunkCompressionMeta(compression_codec=2, total_uncompressed_size=2**40,
                                        total_compressed_size=-5, compressor_name="zstd"),
        rowMajor=True, data_page_length=123_456, rowid_page_length=17, rle_page_length=0,
        presence=PresenceMeta(represents_presence=False, present_bit_stream=b"\x01\x02"),
        sort_state=1, encoders=[3, 9, 12], encoder_meta=[b"", b"\xff" * 300],
        min_max=BlockletMinMaxIndex(min_values=[b"a"], max_values=[b"zz"], min_max_presence=[True, False]),
        numberOfRowsInpage=32_000,
    )
    bare = DataChunk2(chunk_meta=ChunkCompressionMeta(compression_codec=0, total_uncompressed_size=0,
                                                      total_compressed_size=0),
                      rowMajor=False, data_page_length=0)
    ld = LocalDictionaryChunk(dictionary_meta=LocalDictionaryChunkMeta(encoders=[], encoder_meta=[b"m"]),
                              dictionary_data=b"\x00" * 20, dictionary_values=b"")
    return DataChunk3(data_chunk_list=[page, bare] + [page] * 14, page_offset=[0, 70_000, -1],
                      page_length=[], local_dictionary=ld)


def test_every_field_and_the_lists_past_fourteen_elements(generic_calls):
    chunk = _every_field()
    data = chunk.to_bytes()
    assert parse_data_chunk3(data) == chunk == _oracle(data)
    assert generic_calls[0] == 0


@pytest.mark.parametrize("data", [
    # DataChunk3 with an empty page list and an unknown i32 field 9: the generic codec skips the field
    bytes([0x19, 0x0C, 0x85, 0x01, 0x00]),
    # page_offset as a SET of i32 (the generic codec takes sets for lists)
    bytes([0x19, 0x0C, 0x1A, 0x15, 0x02, 0x00]),
    # page_offset twice: the last one wins
    bytes([0x19, 0x0C, 0x19, 0x15, 0x02, 0x09, 0x15, 0x04, 0x00]),
    # a ten-byte varint (a value past 63 bits)
    bytes([0x19, 0x0C, 0x19, 0x15] + [0xFF] * 9 + [0x01, 0x00]),
], ids=["unknown-field", "set", "repeated-field", "long-varint"])
def test_shapes_outside_the_compiled_pass_fall_back_to_the_same_answer(data, generic_calls):
    assert _outcome(parse_data_chunk3, data) == _outcome(_oracle, data)
    assert generic_calls[0] == 1


def test_mutated_headers_give_the_generic_codecs_objects_or_its_error(own_headers, generic_calls):
    """Seeded byte changes, insertions and cuts of real and own headers: the same objects or the same
    error as the generic codec (which names file and offset), and the fast pass still taking many."""
    seeds = [h for h in own_headers if len(h) < 4000][:6] + [_every_field().to_bytes()]
    if CORPUS.is_dir():
        seeds += _headers(sorted(CORPUS.rglob("*.carbondata")))[:12]
    rng = random.Random(29)
    cases = 0
    for _ in range(3000):
        b = bytearray(rng.choice(seeds))
        kind = rng.random()
        at = rng.randrange(len(b))
        if kind < 0.15:
            del b[at:]
        elif kind < 0.3:
            b.insert(at, rng.randrange(256))
        else:
            b[at] = rng.randrange(256) if kind < 0.8 else b[at] ^ (1 << rng.randrange(8))
        data = bytes(b)
        fast = _outcome(lambda d: parse_data_chunk3(d, "f", 7), data)
        assert fast == _outcome(_oracle, data), data.hex()
        cases += 1
    assert cases - generic_calls[0] > 500  # many well-formed mutations answered by the compiled pass


def test_a_column_read_uses_the_compiled_pass(tmp_path, generic_calls):
    carbon_ds.write_table(pa.table({"x": pa.array(range(100_000), pa.int64())}), str(tmp_path / "t"))
    assert carbon_ds.read_table(str(tmp_path / "t")).column("x").to_pylist() == list(range(100_000))
    assert generic_calls[0] == 0
