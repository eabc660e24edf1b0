"""pandas 2.2+ and 3.x: DataFrames with the types pandas makes (``str`` / ``large_string`` / ``string_view``
strings, ``us`` and ``ns`` datetimes, categoricals, nullable ints) write and read back; ``to_pandas`` gives
the dtypes ``pandas.read_parquet`` gives for the same Arrow data (the oracle), for each ``dtype_backend``."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import carbon_ds
from carbon_ds.errors import CarbonOptionError

pd = pytest.importorskip("pandas")


def _frame():
    stamps = [dt.datetime(2021, 1, 1, 0, 0, 1, 500_000), dt.datetime(2021, 1, 2), None]
    return pd.DataFrame({
        "s": pd.Series(["a", "b", None], dtype="string"),
        "n": pd.array([1, None, 3], dtype="Int64"),
        "ts_us": pd.Series(stamps, dtype="datetime64[us]"),
        "ts_ns": pd.Series(stamps, dtype="datetime64[ns]"),
        "c": pd.Categorical(["x", "y", "x"]),
        "b": pd.array([True, None, False], dtype="boolean"),
    })


def test_pandas_frames_round_trip(tmp_path):
    df = _frame()
    arrow = pa.Table.from_pandas(df, preserve_index=False)
    path = str(tmp_path / "t")
    carbon_ds.write_table(df, path)  # the DataFrame itself: pandas hands Arrow data over __arrow_c_stream__
    for typ in (pa.large_string(), pa.string_view()):
        carbon_ds.write_table(arrow.set_column(0, "s", arrow["s"].cast(typ)), path)
    got = carbon_ds.read_table(path)
    assert got.num_rows == 9
    assert got["s"].to_pylist() == ["a", "b", None] * 3 and got["c"].to_pylist() == ["x", "y", "x"] * 3
    assert got["n"].to_pylist() == [1, None, 3] * 3 and got["b"].to_pylist() == [True, None, False] * 3
    micro = [dt.datetime(2021, 1, 1, 0, 0, 1, 500_000), dt.datetime(2021, 1, 2), None] * 3
    for name in ("ts_us", "ts_ns"):  # CarbonData keeps microseconds; both units land on the same instants
        assert [v.replace(tzinfo=None) if v else None for v in got[name].to_pylist()] == micro


@pytest.mark.parametrize("backend", [None, "numpy_nullable", "pyarrow"])
def test_to_pandas_matches_read_parquet(tmp_path, backend):
    data = pa.table({
        "i": pa.array([1, None, 3], pa.int32()),
        "l": pa.array([1, 2, 3], pa.int64()),
        "s": pa.array(["a", None, "c"]),
        "t": pa.array([dt.datetime(2021, 1, 1), None, dt.datetime(2021, 1, 3)], pa.timestamp("us", tz="UTC")),
        "d": pa.array([Decimal("1.25"), None, Decimal("-3.50")], pa.decimal128(10, 2)),
        "f": pa.array([1.5, None, 2.5], pa.float64()),
        "b": pa.array([True, None, False]),
    })
    path = str(tmp_path / "t")
    carbon_ds.write_table(data, path)
    got = carbon_ds.scan(path).to_pandas(dtype_backend=backend)
    pq.write_table(carbon_ds.read_table(path), tmp_path / "oracle.parquet")
    kwargs = {} if backend is None else {"dtype_backend": backend}
    expected = pd.read_parquet(tmp_path / "oracle.parquet", **kwargs)
    pd.testing.assert_frame_equal(got, expected)
    if backend == "numpy_nullable":
        assert str(got["i"].dtype) == "Int32" and got["i"].isna().tolist() == [False, True, False]


def test_to_pandas_refuses_an_unknown_backend(tmp_path):
    path = str(tmp_path / "t")
    carbon_ds.write_table(pa.table({"a": [1]}), path)
    with pytest.raises(CarbonOptionError, match="dtype_backend must be"):
        carbon_ds.scan(path).to_pandas(dtype_backend="arrow")
