"""Compile carbon-ds's numba kernels into their on-disk cache before the first test or benchmark needs them.

The decoders are compiled once per combination of stored and column type (numba's ``cache=True`` keeps each
beside its module in ``carbon_ds/format/``), about 0.85 s each on 2 cores. A fresh clone compiles about 150 of them
during its first test run, two minutes spread over whichever tests first read each combination. This
writes one table whose columns take every adaptive width CarbonData's encoders choose (1 to 8 bytes, plain
and as a delta from the maximum), with and without nulls, reads it back whole and filtered, and reads the
real CarbonData files beside the repository when they are there (their Java-written encodings).

Usage: .venv/bin/python scripts/warm-kernels.py  (scripts/setup.sh runs it; a warm cache takes a few seconds)
"""

from __future__ import annotations

import datetime as dt
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa

import carbon_ds
from carbon_ds.errors import CarbonError
from carbon_ds.readers.carbon_file import read_folder

ROWS = 64
CORPUS = Path(__file__).resolve().parents[2] / "shared" / "compat" / "carbondata-real"
# value spans that make the writer store 1, 2, 3, 4 and 8 bytes, and (offset near a type's top) a delta
SPANS = [100, 30_000, 8_000_000, 2_000_000_000, 2**62]


def _ints(kind: pa.DataType, span: int, offset: int, nulls: bool) -> pa.Array:
    info = np.iinfo(kind.to_pandas_dtype())
    top = min(span, int(info.max))
    values = np.linspace(0, top, ROWS, dtype=np.float64).astype(np.int64)
    base = min(offset, int(info.max) - top)
    mask = (np.arange(ROWS) % 5 == 0) if nulls else None
    return pa.array(values + base, kind, mask=mask)


def warm_table() -> pa.Table:
    columns: dict[str, pa.Array] = {}
    for kind in (pa.int8(), pa.int16(), pa.int32(), pa.int64()):
        for span in SPANS:
            for offset in (0, 2**62):
                for nulls in (False, True):
                    name = f"{kind}_{span}_{offset > 0}_{nulls}"
                    columns[name] = _ints(kind, span, offset, nulls)
    for scale in (1, 3):
        for precision in (9, 18, 30):
            for span in (s for s in [*SPANS[:4], 10**17] if len(str(s)) <= precision):
                for nulls in (False, True):
                    values = [None if nulls and i % 5 == 0 else Decimal(i * span // ROWS).scaleb(-scale)
                              for i in range(ROWS)]
                    columns[f"dec{precision}_{scale}_{span}_{nulls}"] = pa.array(values, pa.decimal128(precision,
                                                                                                     scale))
    for kind in (pa.float32(), pa.float64()):
        for step in (0.01, 0.5, 0.001, 50_000.5, 1e9 + 0.25, float(np.pi)):
            for nulls in (False, True):
                mask = (np.arange(ROWS) % 5 == 0) if nulls else None
                columns[f"{kind}_{step}_{nulls}"] = pa.array(np.arange(ROWS) * step - 7, kind, mask=mask)
    day = dt.date(2020, 1, 1)
    stamp = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    for nulls in (False, True):
        columns[f"date_{nulls}"] = pa.array([None if nulls and i % 5 == 0 else day + dt.timedelta(days=i * 97)
                                             for i in range(ROWS)], pa.date32())
        columns[f"ts_{nulls}"] = pa.array([None if nulls and i % 5 == 0 else stamp + dt.timedelta(seconds=i * 3607)
                                           for i in range(ROWS)], pa.timestamp("us", tz="UTC"))
        columns[f"s_{nulls}"] = pa.array([None if nulls and i % 5 == 0 else f"v{i % 7}" for i in range(ROWS)])
        columns[f"bin_{nulls}"] = pa.array([None if nulls and i % 5 == 0 else bytes([i]) * (i % 4)
                                            for i in range(ROWS)], pa.binary())
    columns["b"] = pa.array([i % 3 == 0 for i in range(ROWS)])
    columns["li"] = pa.array([[i, None, -i] for i in range(ROWS)], pa.list_(pa.int32()))
    columns["st"] = pa.array([{"a": i, "b": f"x{i}"} for i in range(ROWS)],
                             pa.struct([("a", pa.int64()), ("b", pa.string())]))
    return pa.table(columns)


def warm(folder: str) -> None:
    rows = warm_table()
    path = str(Path(folder) / "warm")
    carbon_ds.write_table(rows, path, sort_columns="s_False,int32_30000_False_False")
    carbon_ds.write_table(rows, path, local_dictionary_enable=False, compressor="zstd")
    carbon_ds.read_table(path)
    for name in rows.column_names:
        kind = rows.schema.field(name).type
        if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind):
            middle = rows[name].drop_null()[ROWS // 3].as_py()
            carbon_ds.read_table(path, columns=[name], filter=f"`{name}` >= {middle}")
    if CORPUS.is_dir():
        for case in sorted(p for p in CORPUS.iterdir() if p.is_dir()):
            try:
                carbon_ds.read_table(case)
            except CarbonError:
                for data in sorted({f.parent for f in case.rglob("*.carbondata")}):
                    try:
                        read_folder(str(data))
                    except CarbonError:
                        pass  # a case kept to be refused: its error is its test's business


def main() -> int:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="carbon-ds-warm-") as folder:
        warm(folder)
    print(f">> carbon-ds kernels compiled and cached ({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
