"""Folders written by Apache CarbonData 1.6.1's SDK (``carbondata-store-sdk`` 1.6.1, CarbonWriter from CSV rows:
tests/oracle/java1x) read by carbon-ds exactly.

The harness writes every folder during the run from seeded rows (oracle_cases.make_rows): every simple type
CarbonData 1.6 has (int, smallint, bigint, float, double, boolean, string, date, timestamp, binary, decimals of
many precisions), nulls in every column, sort columns, local dictionary off, on, and on with a threshold the
columns overflow (fallback to plain pages), one or several files per folder. carbon-ds's read is compared
value by value (as ``canon`` prints them: float bits, decimal scale) with the rows as CarbonData's CSV load keeps
them (oracle_cases.their_value). Values where the 1.x and 2.x CSV loads may differ (NaN, infinities, -0.0) are
left out of the rows written.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from carbondata_oracle import Oracle, as_multiset, canon_table
from oracle_cases import PRIMITIVES, ROW_ID, Case, csv_text, make_rows

import carbon_ds

KINDS = list(PRIMITIVES)  # every simple type; 1.x has no complex-type CSV subtleties worth a second copy
CASES = {
    # name: (seed, rows, null rate, files, writer options)
    "plain": (6101, 120, 0.15, [(0, 70), (70, 120)], {"localDictionary": False}),
    "sorted": (6102, 200, 0.1, [(0, 200)], {"sortBy": ["c0_int", "c6_string", "c7_date"], "localDictionary": True}),
    "dict-fallback": (6103, 300, 0.3, [(0, 150), (150, 300)],
                      {"sortBy": ["c8_timestamp"], "localDictionary": True, "localDictionaryThreshold": 10}),
    "all-null": (6104, 20, 1.0, [(0, 20)], {"localDictionary": True}),
}


def _finite(case: Case) -> Case:
    """The case without NaN, infinities and -0.0 (see the module docstring)."""
    columns = []
    for c in case.columns:
        if c.kind in ("float", "double"):
            values = [None if v is not None and (math.isnan(v) or math.isinf(v)) else (0.0 if v == 0 else v)
                      for v in c.values]
            c = dataclasses.replace(c, values=values)
        columns.append(c)
    return Case(case.seed, columns)


def _type(c) -> str:
    return f"decimal({c.arrow.precision},{c.arrow.scale})" if c.kind == "decimal" else c.kind


@pytest.fixture(scope="module")
def folders(oracle1x: Oracle, tmp_path_factory) -> dict[str, tuple[Case, Path]]:
    work = tmp_path_factory.mktemp("sdk1x")
    jobs, out = [], {}
    for name, (seed, rows, nulls, files, options) in CASES.items():
        case = _finite(make_rows(seed, KINDS, rows, null_rate=nulls))
        folder = work / name
        jobs.append({"id": name, "kind": "write", "out": str(folder),
                     "schema": [{"name": c.name, "type": _type(c)} for c in case.columns],
                     "files": [[[csv_text(c.kind, c.values[i]) for c in case.columns] for i in range(a, b)]
                               for a, b in files], **options})
        out[name] = (case, folder, len(files))
    results = oracle1x.run(jobs, work / "batch")
    for name in CASES:
        assert results[name]["ok"], f"CarbonData 1.6.1 could not write {name}: {results[name]['error'][:3000]}"
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_reads_1x_folder_exactly(folders, name):
    case, folder, n_files = folders[name]
    files = list(folder.glob("*.carbondata"))
    assert len(files) == n_files
    # CarbonData's writer puts its version in each footer's extra_info: these are 1.x files
    assert all(b"1.6.1" in f.read_bytes()[-4096:] for f in files)
    expected = case.their_table
    got = carbon_ds.read_table(str(folder), columns=case.names)
    assert got.num_rows == expected.num_rows
    assert as_multiset(canon_table(got)) == as_multiset(canon_table(expected))


@pytest.mark.parametrize("name", ["plain", "sorted"])
def test_projection_and_filter_of_1x_folder(folders, name):
    case, folder, _ = folders[name]
    expected = case.their_table
    names = [ROW_ID, *reversed(case.names[1:5])]
    got = carbon_ds.read_table(str(folder), columns=names)
    assert as_multiset(canon_table(got)) == as_multiset(canon_table(expected.select(names)))
    # the sort column's min/max in 1.x footers and index files must not make the filtered read skip a row
    col = next(c for c in case.columns if c.kind == "int" and c.name != ROW_ID)
    present = sorted(v for v in col.values if v is not None)
    pivot = present[len(present) // 2]
    got = carbon_ds.read_table(str(folder), columns=[ROW_ID], filter=[(col.name, ">=", pivot)])
    assert sorted(got.column(ROW_ID).to_pylist()) == [i for i, v in enumerate(col.values) if v is not None and v >= pivot]
