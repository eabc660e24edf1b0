"""Apache CarbonData 2.3.0 reading tables carbon-ds writes by its other ways in: Spark's
``df.write.format("carbondata")``, compaction and UPDATE / DELETE.

Each table is read by CarbonData the way its engines read a table (``CarbonTableInputFormat`` over the table
status, segment files, update status and delete deltas: the harness's "table" jobs), whole and under filters,
and compared with the rows that should be there, computed apart with pyarrow. Every type of the seeded cases
(oracle_cases.py), nulls of every kind, sort columns and local dictionaries are in the data.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from carbondata_oracle import Oracle, as_multiset, canon_table
from known_java import boolean_nulls_read_false, excuse
from oracle_cases import COMPLEX, PRIMITIVES, ROW_ID, Case, expected_rows, make_rows, random_filters

from carbon_ds import CarbonTable, write_table

pytestmark = [pytest.mark.slow, pytest.mark.spark]

KINDS = [*PRIMITIVES, *COMPLEX]
FILTERS = 24  # per table


def _case_of(table: pa.Table, like: Case, options: dict) -> Case:
    """``like``'s columns holding the rows of ``table`` (in row id order)."""
    table = table.sort_by(ROW_ID)
    columns = [dataclasses.replace(c, values=table.column(c.name).to_pylist()) for c in like.columns]
    return Case(like.seed, columns, options=options)


def _spark_table(spark, case: Case, work: Path) -> Case:
    """Two appends through Spark's DataFrame writer, with sort columns and a local dictionary threshold."""
    table = case.table
    # timestamps with a zone: Spark reads them as TIMESTAMP (a naive one would be TIMESTAMP_NTZ)
    fields = [pa.field(f.name, pa.timestamp("ms", "UTC")) if pa.types.is_timestamp(f.type) else f
              for f in table.schema]
    pq.write_table(table.cast(pa.schema(fields)), str(work / "rows.parquet"))
    df = spark.read.parquet(str(work / "rows.parquet"))
    sort = [c.name for c in case.columns if c.kind in ("int", "string") and c.name != ROW_ID]
    path = str(work / "spark")
    for part in (df.filter(f"{ROW_ID} % 2 = 0"), df.filter(f"{ROW_ID} % 2 = 1")):
        (part.write.format("carbondata").mode("append").option("sort_columns", ",".join(sort))
         .option("local_dictionary_threshold", "50").save(path))
    return _case_of(table, case, {"sort_columns": sort})


def _compacted_table(case: Case, work: Path) -> Case:
    """Four loads under different writer options, merged by a major compaction."""
    table = case.table
    path = str(work / "compacted")
    sort = [c.name for c in case.columns if c.kind in ("bigint", "date", "timestamp")]
    loads = [dict(local_dictionary_enable=False), dict(compressor="zstd"),
             dict(local_dictionary_threshold=3), dict(compressor="gzip")]
    step = -(-table.num_rows // len(loads))
    for n, options in enumerate(loads):
        write_table(table.slice(n * step, step), path, sort_columns=sort, **options)
    merged = CarbonTable.open(path).compact("major")
    assert merged, "the major compaction merged nothing"
    return _case_of(table, case, {"sort_columns": sort})


def _updated_table(case: Case, work: Path) -> Case:
    """Two loads, then an UPDATE of two columns and a DELETE, both by row id ranges across the loads."""
    table = case.table
    path = str(work / "updated")
    half = table.num_rows // 2
    sort = [c.name for c in case.columns if c.kind == "smallint"]
    write_table(table.slice(0, half), path, sort_columns=sort)
    write_table(table.slice(half), path)
    t = CarbonTable.open(path)
    text = next(c for c in case.columns if c.kind == "string")
    number = next(c for c in case.columns if c.kind == "double")
    t.update({text.name: "updated", number.name: 2.5}, f"{ROW_ID} >= 40 AND {ROW_ID} < 220")
    t.delete(f"{ROW_ID} >= 200 AND {ROW_ID} < 260")
    rid = table.column(ROW_ID)
    changed = pc.and_(pc.greater_equal(rid, 40), pc.less(rid, 220))
    for col, value in ((text.name, "updated"), (number.name, 2.5)):
        i = table.schema.get_field_index(col)
        table = table.set_column(i, col, pc.if_else(changed, pa.scalar(value, table.schema.field(i).type),
                                                   table.column(col)))
    rid = table.column(ROW_ID)
    table = table.filter(pc.invert(pc.and_(pc.greater_equal(rid, 200), pc.less(rid, 260))))
    return _case_of(table, case, {"sort_columns": sort})


class Tables:
    """The three tables and every CarbonData answer about them (one JVM)."""

    def __init__(self, spark, oracle: Oracle, work: Path):
        self.tables: dict[str, Case] = {}
        self.paths: dict[str, Path] = {}
        for name, seed, build in (("spark", 9001, lambda c, w: _spark_table(spark, c, w)),
                                  ("compacted", 9002, _compacted_table), ("updated", 9003, _updated_table)):
            folder = work / name
            folder.mkdir()
            self.tables[name] = build(make_rows(seed, KINDS, 320), folder)
            self.paths[name] = folder / name
        jobs = []
        for name, case in self.tables.items():
            case.filters = random_filters(case, case.seed, FILTERS)
            for g, names in enumerate(case.groups()):
                jobs.append(self._job(f"{name}-g{g}", name, names))
            for n, spec in enumerate(case.filters):
                jobs.append(self._job(f"{name}-f{n}", name, [ROW_ID], {k: v for k, v in spec.items() if k != "py"}))
        self.results = oracle.run(jobs, work / "jobs")

    def _job(self, job_id: str, name: str, names: list[str], spec: dict | None = None) -> dict:
        return {"id": job_id, "kind": "table", "path": str(self.paths[name]), "projection": names, "filter": spec}

    def rows(self, job_id: str) -> list[list]:
        result = self.results[job_id]
        if not result["ok"]:
            raise AssertionError(f"CarbonData failed on job {job_id}:\n{result['error'][:3000]}")
        return result["rows"]


@pytest.fixture(scope="module")
def tables(spark, oracle: Oracle, tmp_path_factory) -> Tables:
    return Tables(spark, oracle, tmp_path_factory.mktemp("writer-paths"))


@pytest.mark.parametrize("name", ["spark", "compacted", "updated"])
def test_carbondata_reads_the_table_exactly(tables: Tables, name: str):
    case = tables.tables[name]
    for g, names in enumerate(case.groups()):
        rows = tables.rows(f"{name}-g{g}")
        got = as_multiset(rows)
        want = as_multiset(canon_table(case.table.select(names)))
        booleans = {i for i, n in enumerate(names) if n.endswith("_boolean")}
        if name == "updated" and got != want and boolean_nulls_read_false(
                rows, [json.loads(r) for r in want], booleans):
            continue  # CarbonData's own reading of any table with deletes: known_java.BOOLEAN_NULLS_AFTER_DELETE
        assert got == want, f"{name}: CarbonData read columns {names} as {_diff(got, want)}"


@pytest.mark.parametrize("name", ["spark", "compacted", "updated"])
def test_carbondata_filters_the_table_exactly(tables: Tables, name: str):
    case = tables.tables[name]
    rids = case.columns[0].values
    assert len(case.filters) >= FILTERS // 2
    failures = []
    for n, spec in enumerate(case.filters):
        got = sorted(int(r[0]) for r in tables.rows(f"{name}-f{n}"))
        positions = {v: i for i, v in enumerate(rids)}
        want = sorted(rids[i] for i in expected_rows(case, spec))
        # a row id that is not in the table (a deleted row) is never excused
        known = all(r in positions for r in got) and excuse(case, spec, [positions[r] for r in got]) is not None
        if got != want and not known:
            failures.append(f"filter {_spec(spec)}: CarbonData answers {_diff(got, want)}")
    assert not failures, f"{name}: {len(failures)} filter(s) differ:\n" + "\n".join(failures[:10])


def _spec(spec: dict) -> str:
    return str({k: v for k, v in spec.items() if k != "py"})


def _diff(got: list, want: list) -> str:
    extra = sorted(set(got) - set(want))[:3]
    missing = sorted(set(want) - set(got))[:3]
    return (f"{len(got)} rows where {len(want)} were expected; unexpected {[str(r)[:300] for r in extra]}, "
            f"missing {[str(r)[:300] for r in missing]}")


def test_cases_hold_every_kind(tables: Tables):
    for case in tables.tables.values():
        assert {c.kind for c in case.columns if c.name != ROW_ID} == set(KINDS)
        assert any(None in c.values for c in case.columns if c.kind in COMPLEX)
