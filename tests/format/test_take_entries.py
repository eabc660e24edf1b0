"""Local dictionary lookups copy the entries in compiled code (decode.take_entries); the oracle is
pyarrow's own take over the same dictionary and keys."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from carbon_ds.format.pages.decode import take_entries


@pytest.mark.parametrize("typ", [pa.string(), pa.binary()])
def test_take_entries_equals_pyarrow_take(typ):
    rng = np.random.default_rng(4)
    words = [None, None] + [("w" * int(rng.integers(0, 30)) + str(i)) for i in range(300)]
    words[57] = None  # a null entry past the two CarbonData reserves
    words[90] = ""
    full = pa.array([w if w is None or typ == pa.string() else w.encode() for w in words], typ)
    for dictionary in (full, full.slice(2)):  # a dictionary whose buffers start further on
        keys = pa.array(rng.integers(0, len(dictionary), 5000).astype(np.int32))
        got = take_entries(dictionary, keys)
        want = dictionary.take(keys)
        got.validate(full=True)
        assert got.equals(want)
        assert got.null_count == want.null_count
    assert take_entries(full, pa.array([], pa.int32())).equals(full.take(pa.array([], pa.int32())))
    assert take_entries(full, pa.array([0, 0, 0], pa.int32())).to_pylist() == [None] * 3


def test_other_dictionaries_go_to_pyarrow():
    d = pa.array([1.5, None, 2.5])
    assert take_entries(d, pa.array([2, 0, 1], pa.int32())).to_pylist() == [2.5, 1.5, None]
