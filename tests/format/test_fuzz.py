"""Seeded mutation and truncation of every real file: the reader must raise a CarbonError or return
well-formed data, never crash, hang or allocate by a corrupt length."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pyarrow as pa
import pytest

from carbon_ds.errors import CarbonError
from carbon_ds.readers import CarbonDataFile

CORPUS = Path(__file__).resolve().parents[3] / "shared/compat/carbondata-real"
if not CORPUS.is_dir():
    pytest.skip(f"real CarbonData corpus not found at {CORPUS}", allow_module_level=True)

FILES = sorted(CORPUS.rglob("*.carbondata"))
SMALL_CASES = 800  # per file under 64 KB
LARGE_CASES = 200  # the megabyte files: most of their bytes are image payload
# Hang guards, generous for a loaded 2-core machine: one case, and all cases of one file
CASE_LIMIT_S = 10.0
TOTAL_LIMIT_S = 120.0


class MemoryStorage:
    """Just enough of carbon_ds.fs.Storage to serve one in-memory file."""

    def __init__(self, data: bytes):
        self.data = data

    def open(self, path: str) -> pa.NativeFile:
        return pa.BufferReader(self.data)


def _mutate(rng: random.Random, data: bytes, meta_end: int, footer_at: int) -> bytes:
    b = bytearray(data)
    kind = rng.random()
    if kind < 0.2:
        return bytes(b[: rng.randrange(len(b))])
    # favour the structural bytes: header and first chunk headers, and the footer with its offset
    if rng.random() < 0.5:
        lo, hi = 0, min(len(b), meta_end)
    else:
        lo, hi = min(footer_at, len(b) - 1), len(b)
    if rng.random() < 0.25:
        lo, hi = 0, len(b)
    for _ in range(rng.randint(1, 6)):
        pos = rng.randrange(lo, hi)
        if kind < 0.6:
            b[pos] ^= 1 << rng.randrange(8)
        elif kind < 0.8:
            b[pos] = rng.choice([0x00, 0xFF, 0x7F, 0x80, rng.randrange(256)])
        else:
            n = rng.randint(1, 8)
            b[pos : pos + n] = rng.randbytes(n)
    return bytes(b)


def _check(path: str, data: bytes) -> str:
    try:
        f = CarbonDataFile(path, MemoryStorage(data))  # type: ignore[arg-type]
        names = [n for n in f.schema.names]
        for name in names:
            try:
                t = f.read([name])
            except CarbonError:
                continue
            t.validate(full=True)
            assert t.num_rows == f.num_rows
            assert t.schema.field(0).type == f.schema.field(name).type
        return "ok"
    except CarbonError:
        return "error"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_mutations(path: Path):
    data = path.read_bytes()
    footer_at = int.from_bytes(data[-8:], "big")
    with CarbonDataFile(str(path)) as f:
        meta_end = max(o + n for o, n in zip(f.blocklet_info(0).column_data_chunks_offsets,
                                              f.blocklet_info(0).column_data_chunks_length, strict=True))
        meta_end = min(meta_end, 4096)
    cases = SMALL_CASES if len(data) < 65536 else LARGE_CASES
    rng = random.Random(f"{path.name}-{len(data)}")
    outcomes = {"ok": 0, "error": 0}
    start = time.monotonic()
    for i in range(cases):
        mutated = _mutate(rng, data, meta_end, footer_at)
        t0 = time.monotonic()
        outcomes[_check(f"{path.name}#case{i}", mutated)] += 1
        # a hang guard, not a speed test: a case takes milliseconds, a hang never ends, and a loaded
        # 2-core machine can stall one case for seconds
        took = time.monotonic() - t0
        assert took < CASE_LIMIT_S, f"{path.name} case {i} took {took:.1f} s (limit {CASE_LIMIT_S} s)"
    assert outcomes["error"] > 0  # the mutations do reach the checks
    took = time.monotonic() - start
    assert took < TOTAL_LIMIT_S, f"{path.name}: {cases} cases took {took:.0f} s (limit {TOTAL_LIMIT_S} s)"


def test_truncation_at_every_tail_offset():
    path = CORPUS / "sdk-1.6-all-types"
    data = next(path.glob("*.carbondata")).read_bytes()
    for cut in range(len(data) - 400, len(data)):
        assert _check("cut", data[:cut]) == "error"


STRUCTURAL_CASES = 30  # most of the time goes to writing the edited footers (200,000-element lists)


@pytest.mark.parametrize("path", [p for p in FILES if p.stat().st_size < 65536],
                         ids=lambda p: str(p.relative_to(CORPUS)))
def test_structural_edits(path: Path):
    """One Thrift field of the footer, the file header or a column chunk's header edited and the file
    written back well-formed (benchmarks/fuzz_mutate.py): counts and offsets set to neighbours and extremes,
    list elements repeated up to 200,000 times. Each read is refused or returns well-formed rows, fast and
    without allocating by a claimed size."""
    import resource
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from fuzz_mutate import edit_carbondata

    data = path.read_bytes()
    rng = random.Random(f"structural-{path.name}")
    outcomes = {"ok": 0, "error": 0}
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for i in range(STRUCTURAL_CASES):
        try:
            edited, label = edit_carbondata(rng, data)
        except CarbonError:
            continue  # an edit the writer refuses to encode (more columns than the format's limit)
        t0 = time.monotonic()
        outcomes[_check(f"{path.name}#case{i}", edited)] += 1
        assert time.monotonic() - t0 < 2.0, f"case {i} ({label}) took too long"
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 300, f"peak memory grew by {grown_mb:.0f} MB"
    assert outcomes["error"] > 0
