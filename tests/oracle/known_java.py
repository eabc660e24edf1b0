"""Filters Apache CarbonData 2.3.0 answers wrongly over its own files, and the exact shape of each mistake.

A filter of a case whose answer over carbon-ds's files differs from SQL's is excused only when it is one of these
and differs in the listed way (``excuse``); each is shown on files CarbonData itself writes
(``demo_jobs`` / ``DEMOS``, checked by test_carbondata_oracle.py), so a CarbonData that fixes one fails that
check and the excuse goes. docs/compatibility.md lists them for users.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from oracle_cases import Case, expected_rows, make_case, oracle_write_job

NO_DICT_INTEGERS = ("smallint", "int", "bigint")

LESS_THAN = ("`<` over a no-dictionary primitive dimension (a TIMESTAMP column, or a SMALLINT / INT / BIGINT sort "
             "column) returns no row")
NULLS_IN_RANGE = ("`>` / `>=` over a TIMESTAMP column or a SMALLINT / INT / BIGINT / STRING sort column also return "
                  "null rows (when the page's statistics put every row above the literal, a null's stored bytes too)")
INFINITE_LITERAL = ("`<`, `<=`, `>`, `>=` against Infinity or -Infinity over a DOUBLE / FLOAT column also return null "
                    "(and infinite) rows, and in a file holding nulls drop the others")
BOOLEAN_NULLS_AFTER_DELETE = ("a BOOLEAN page with deleted rows (delete deltas) reads its nulls as false when read "
                              "without a filter (DirectCompressCodec fills the vector in bulk and skips the nulls)")
EMPTY_STRING_FLOOR = "`>= ''` over a STRING column also returns its null rows"
SIGNED_ZERO = ("comparisons over FLOAT / DOUBLE tell -0.0 from 0.0 (Java's Double.compare): -0.0 != 0.0 and "
               "-0.0 < 0.0 hold")


def _column(case: Case, name: str):
    return next(c for c in case.columns if c.name == name)


def _no_dict_primitive(case: Case, name: str) -> bool:
    col = _column(case, name)
    return col.kind == "timestamp" or (col.kind in NO_DICT_INTEGERS and name in case.options.get("sort_columns", []))


def _sorted_string(case: Case, name: str) -> bool:
    return _column(case, name).kind == "string" and name in case.options.get("sort_columns", [])


def excuse(case: Case, spec: dict, got: list[int]) -> str | None:
    """Which known mistake of CarbonData's explains ``got`` (row ids) for ``spec`` over the case's rows, or None."""
    want = expected_rows(case, spec)
    values = _column(case, spec["column"]).values
    extra, missing = set(got) - set(want), set(want) - set(got)
    op = spec["op"]
    if op == "<" and _no_dict_primitive(case, spec["column"]) and not got:
        return LESS_THAN
    if (op in (">", ">=") and (_no_dict_primitive(case, spec["column"]) or _sorted_string(case, spec["column"]))
            and not missing and all(values[i] is None for i in extra)):
        return NULLS_IN_RANGE
    if (op == ">=" and spec["type"] == "string" and spec["value"] == "" and not missing
            and all(values[i] is None for i in extra)):
        return EMPTY_STRING_FLOOR
    if (op in ("<", "<=", ">", ">=") and spec["type"] in ("float", "double")
            and spec["value"] in ("Infinity", "-Infinity")
            and all(values[i] is None or math.isinf(values[i]) for i in extra)):
        return INFINITE_LITERAL
    if (spec["type"] in ("float", "double") and any(v == 0 and str(v).startswith("-") for v in values if v is not None)
            and all(values[i] == 0 for i in extra | missing)):
        return SIGNED_ZERO
    return None


# ---------------------------------------------------------------------- each mistake on CarbonData's own files
NULL = "\\N"
_LT = ([("rid", "int"), ("i", "int"), ("t", "timestamp")],
       [["0", "-5", "2000-01-01 00:00:00.000"], ["1", "3", "2001-01-01 00:00:00.000"], ["2", "10", NULL]],
       {"sort_columns": "i", "sort_scope": "local_sort"})
_RANGE = ([("rid", "int"), ("s", "smallint"), ("t", "timestamp")],
          [["0", NULL, NULL], ["1", "5", "2001-01-01 00:00:00.000"]], {"sort_columns": "s", "sort_scope": "no_sort"})
_SORTED_TEXT = ([("rid", "int"), ("s", "string")], [["0", NULL], ["1", "a"]],
                {"sort_columns": "s", "sort_scope": "no_sort"})
_INF = ([("rid", "int"), ("d", "double")], [["0", NULL], ["1", "1.5"], ["2", "-2.0"]], {"sort_columns": ""})
# 0.123456789 has more digits than an adaptive page keeps: the page is stored as plain doubles, -0.0 too
_ZERO = ([("rid", "int"), ("d", "double")], [["0", "-0.0"], ["1", "0.123456789"], ["2", "0.0"]], {"sort_columns": ""})
_TEXT = ([("rid", "int"), ("s", "string")], [["0", NULL], ["1", "a"], ["2", ""]], {"sort_columns": ""})
_TS_2001 = str(978307200000000)  # 2001-01-01 in microseconds

# (mistake, folder, filter, SQL's answer, CarbonData's answer)
DEMOS: list[tuple[str, str, dict, list[int], list[int]]] = [
    (LESS_THAN, "lt", {"op": "<", "column": "i", "type": "int", "value": "4"}, [0, 1], []),
    (LESS_THAN, "lt", {"op": "<", "column": "t", "type": "timestamp", "value": _TS_2001}, [0], []),
    (NULLS_IN_RANGE, "range", {"op": ">=", "column": "s", "type": "smallint", "value": "-85"}, [1], [0, 1]),
    (NULLS_IN_RANGE, "sorted_text", {"op": ">", "column": "s", "type": "string", "value": "0"}, [1], [0, 1]),
    (INFINITE_LITERAL, "inf", {"op": ">", "column": "d", "type": "double", "value": "-Infinity"}, [1, 2], [0]),
    (INFINITE_LITERAL, "inf", {"op": ">=", "column": "d", "type": "double", "value": "-Infinity"}, [1, 2], [0]),
    (INFINITE_LITERAL, "inf", {"op": "<", "column": "d", "type": "double", "value": "Infinity"}, [1, 2], [0]),
    (EMPTY_STRING_FLOOR, "text", {"op": ">=", "column": "s", "type": "string", "value": ""}, [1, 2], [0, 1, 2]),
    (SIGNED_ZERO, "zero", {"op": "!=", "column": "d", "type": "double", "value": "0.0"}, [1], [0, 1]),
]
_BOOLS = ([("rid", "int"), ("b", "boolean")], [["0", NULL], ["1", "true"], ["2", NULL], ["3", "false"]],
          {"sort_columns": ""})
# (mistake, folder, rows CarbonData should read, rows it reads) after CarbonData's own delete of rid 1
VALUE_DEMOS = [(BOOLEAN_NULLS_AFTER_DELETE, "bools", [["0", None], ["2", None], ["3", False]],
                [["0", False], ["2", False], ["3", False]])]
_TABLES = {"lt": _LT, "range": _RANGE, "sorted_text": _SORTED_TEXT, "inf": _INF, "text": _TEXT, "zero": _ZERO, "bools": _BOOLS}


def demo_jobs(root: str) -> list[dict[str, Any]]:
    """CarbonWriter jobs for the demo folders, then one read job per demo (ids ``demo-<n>``)."""
    jobs: list[dict[str, Any]] = []
    for name, (schema, rows, props) in _TABLES.items():
        jobs.append({"id": f"demo-write-{name}", "kind": "write", "out": f"{root}/{name}",
                     "schema": [{"name": n, "type": t} for n, t in schema], "files": [rows],
                     "tableProperties": props, "loadOptions": {"bad_records_action": "FAIL"},
                     "carbonProperties": {"carbon.column.compressor": "snappy"}})
    for n, (_, name, spec, _, _) in enumerate(DEMOS):
        jobs.append({"id": f"demo-{n}", "kind": "read", "paths": [f"{root}/{name}"], "projection": ["rid"],
                     "filter": spec})
    jobs.append({"id": "demo-delete-bools", "kind": "delete", "path": f"{root}/bools",
                 "filter": {"op": "=", "column": "rid", "type": "int", "value": "1"}})
    for n, (_, name, _, _) in enumerate(VALUE_DEMOS):
        jobs.append({"id": f"demo-values-{n}", "kind": "read", "paths": [f"{root}/{name}"], "projection": None,
                     "filter": None})
    return jobs


def boolean_nulls_read_false(got: list[list], want: list[list], booleans: set[int]) -> bool:
    """Whether ``got`` differs from ``want`` (rows keyed by their first cell) only by BOOLEAN cells (positions
    ``booleans``) read as false where null was written: BOOLEAN_NULLS_AFTER_DELETE."""
    a, b = {r[0]: r for r in got}, {r[0]: r for r in want}
    if a.keys() != b.keys():
        return False
    differing = [(i, x, y) for k in a for i, (x, y) in enumerate(zip(a[k], b[k], strict=True)) if x != y]
    return bool(differing) and all(i in booleans and x is False and y is None for i, x, y in differing)


# ---------------------------------------------------------------------- why tables are read one segment at a time
SEGMENT_FOLDERS = ("CarbonReader over a folder holding several Fact/Part0/Segment_<n> folders loses rows of a filter "
                   "that the same folders read one by one return")
# seeded case 43 (BIGINT sort column, three files, an IN filter): CarbonData writes each file range into its own
# segment folder
SEGMENTS_CASE = 43


def segment_jobs(root: str) -> tuple[Case, dict, list[dict[str, Any]]]:
    """CarbonWriter jobs writing SEGMENTS_CASE as one segment folder per file range under ``root``, then its IN
    filter read over ``root`` (job ``segments-root``) and over the folders one by one (``segments-apart``)."""
    case = make_case(SEGMENTS_CASE)
    spec = next(f for f in case.filters if f["op"] == "in")
    wire = {k: v for k, v in spec.items() if k != "py"}
    folders = [f"{root}/Fact/Part0/Segment_{n}" for n in range(len(case.files))]
    jobs = [oracle_write_job(dataclasses.replace(case, files=[bounds]), folder, f"segments-write-{n}")
            for n, (bounds, folder) in enumerate(zip(case.files, folders, strict=True))]
    jobs.append({"id": "segments-root", "kind": "read", "path": root, "projection": ["rid"], "filter": wire})
    jobs.append({"id": "segments-apart", "kind": "read", "paths": folders, "projection": ["rid"], "filter": wire})
    return case, spec, jobs
