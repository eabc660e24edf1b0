"""Apache CarbonData 2.3.0 itself as the oracle, both directions, over seeded cases (tests/oracle/oracle_cases.py)
and cases drawn by hypothesis (hypothesis_cases.py).

Every case is written twice: by carbon-ds (``write_table`` with its options, one segment per file range) and
by CarbonData's SDK (``CarbonWriter``, CSV rows, the same table properties and compressor). One JVM then runs
every CarbonData job of the module (writes, CarbonReader reads, filtered reads). Checked:

* CarbonData reads carbon-ds's table exactly: every row, every value (bits of floats, scale of decimals);
* carbon-ds reads CarbonData's folder as CarbonData's own reader does, and as the rows that were written;
* CarbonData's filtered reads over carbon-ds's files return the rows that match (SQL's answer): our min/max in
  footers, index files and pages never make it skip a row. A filter CarbonData answers wrongly over its own
  files as well is forgiven only in the exact shape listed in known_java.py, and each of those mistakes is
  shown on a file CarbonData writes;
* carbon-ds's filtered reads of CarbonData's folder return exactly the matching rows.

carbon-ds's tables are read by CarbonReader one segment folder at a time (``segment_folders``).

``CARBON_DS_ORACLE_CASES`` sets the number of seeded cases (default 300), ``CARBON_DS_ORACLE_HYPOTHESIS`` the
number drawn by hypothesis (hypothesis_cases.py, default 40).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from carbondata_oracle import Oracle, as_multiset, canon_table, phase
from hypothesis_cases import hypothesis_cases
from known_java import DEMOS, SEGMENT_FOLDERS, VALUE_DEMOS, demo_jobs, excuse, segment_jobs
from oracle_cases import ROW_ID, Case, expected_rows, make_case, oracle_write_job, write_options

import carbon_ds

N_CASES = int(os.environ.get("CARBON_DS_ORACLE_CASES", "300"))
N_HYPOTHESIS = int(os.environ.get("CARBON_DS_ORACLE_HYPOTHESIS", "40"))
pytestmark = pytest.mark.slow  # about seven minutes for 340 cases on two busy cores


def float_division_only(got: list[str], want: list[str]) -> bool:
    """Whether two readings (JSON rows keyed by their first cell, the row id) differ only in FLOAT cells one ulp
    apart. CarbonData's AdaptiveFloatingCodec stores a FLOAT as round(v * 10^k) from the digits of
    Float.toString; its vector decoder (what CarbonReader uses without a filter) divides that integer in float,
    (float) stored / (float) 10^k, which rounds an integer past 2^24 first and can land one ulp from the value
    written, while its row decoder and its filters divide in double and get the value back. carbon-ds reads the
    value written (and writes FLOAT pages both decoders read exactly)."""
    a = {r[0]: r for r in map(json.loads, got)}
    b = {r[0]: r for r in map(json.loads, want)}
    if a.keys() != b.keys():
        return False
    differing = [(x, y) for key in a for x, y in zip(a[key], b[key], strict=True) if x != y]
    return bool(differing) and all(
        isinstance(x, str) and isinstance(y, str) and x.startswith("f:") and y.startswith("f:") and "NaN" not in x + y
        and abs(int(x[2:], 16) - int(y[2:], 16)) == 1 for x, y in differing)


class Run:
    """The module's cases, written both ways, and every CarbonData answer about them."""

    def __init__(self, oracle: Oracle, work: Path):
        started = time.monotonic()
        self.cases = [make_case(seed) for seed in range(N_CASES)] + hypothesis_cases(N_HYPOTHESIS)
        self.ours = {c.seed: work / f"ours-{c.seed}" for c in self.cases}
        self.theirs = {c.seed: work / f"theirs-{c.seed}" for c in self.cases}
        self.write_errors: dict[int, str] = {}
        drawn = time.monotonic()
        for case in self.cases:
            table = case.table
            try:
                for a, b in case.files:
                    carbon_ds.write_table(table.slice(a, b - a), str(self.ours[case.seed]), **write_options(case))
            except Exception as e:  # reported by the test that reads it
                self.write_errors[case.seed] = f"{type(e).__name__}: {e}"
        written = time.monotonic()
        phase(f"{len(self.cases)} cases drawn in {drawn - started:.1f} s, written by carbon-ds in {written - drawn:.1f} s")
        jobs = []
        for case in self.cases:
            s = case.seed
            jobs.append(oracle_write_job(case, str(self.theirs[s]), f"write-{s}"))
            ours = segment_folders(self.ours[s])
            for g, names in enumerate(case.groups()):
                jobs.append(self._read(f"ours-{s}-g{g}", ours, names))
                jobs.append(self._read(f"theirs-{s}-g{g}", [self.theirs[s]], names))
            for n, spec in enumerate(case.filters):
                # over carbon-ds's files only: the answer is checked against SQL's, CarbonData's own mistakes
                # against the files it writes (known_java.py)
                wire = {k: v for k, v in spec.items() if k != "py"}
                jobs.append(self._read(f"ours-{s}-f{n}", ours, [ROW_ID], wire))
        jobs.extend(demo_jobs(str(work / "demo")))
        self.segments_case, self.segments_filter, more = segment_jobs(str(work / "segments"))
        jobs.extend(more)
        phase(f"CarbonData's jobs built in {time.monotonic() - written:.1f} s")
        self.results = oracle.run(jobs, work / "jobs")

    @staticmethod
    def _read(job_id: str, paths: list[Path], names: list[str], spec: dict | None = None) -> dict:
        return {"id": job_id, "kind": "read", "paths": [str(p) for p in paths], "projection": names, "filter": spec}

    def rows(self, job_id: str) -> list[str]:
        result = self.results[job_id]
        if not result["ok"]:
            raise AssertionError(f"CarbonData failed on job {job_id}:\n{result['error'][:3000]}")
        return as_multiset(result["rows"])

    def ids(self, job_id: str) -> list[int]:
        return sorted(int(r[0]) for r in json_rows(self, job_id))


def segment_folders(table: Path) -> list[Path]:
    """A table's segment folders: CarbonReader reads a flat folder, and over a table root holding several
    ``Fact/Part0/Segment_<n>`` its filtered reads lose rows, over CarbonData's own folders too
    (test_carbondata_reads_several_segment_folders_apart)."""
    folders = sorted((table / "Fact" / "Part0").glob("Segment_*"), key=lambda p: p.name)
    return [f for f in folders if any(f.glob("*.carbondata"))]


def json_rows(run: Run, job_id: str) -> list[list]:
    result = run.results[job_id]
    if not result["ok"]:
        raise AssertionError(f"CarbonData failed on job {job_id}:\n{result['error'][:3000]}")
    return result["rows"]


@pytest.fixture(scope="module")
def run(oracle: Oracle, tmp_path_factory) -> Run:
    return Run(oracle, tmp_path_factory.mktemp("carbondata-oracle"))


def describe(case: Case) -> str:
    return (f"case {case.seed}: columns {[(c.name, str(c.arrow)) for c in case.columns]}, options {case.options}, "
            f"{len(case.columns[0].values)} rows in files {case.files}")


def report(failures: list[str]) -> None:
    if failures:
        raise AssertionError(f"{len(failures)} difference(s):\n" + "\n".join(failures[:10]))


def test_cases_cover_every_type_and_option(run: Run):
    if N_CASES < 300:
        pytest.skip(f"coverage is asserted for the default 300 cases, not {N_CASES}")
    kinds = {c.kind for case in run.cases for c in case.columns}
    assert kinds >= {"int", "smallint", "bigint", "float", "double", "boolean", "string", "varchar", "date",
                     "timestamp", "binary", "decimal", "array", "struct", "map"}
    precisions = {c.arrow.precision for case in run.cases for c in case.columns if c.kind == "decimal"}
    assert {1, 9, 10, 18, 19, 38} <= precisions
    options = {(k, str(v)) for case in run.cases for k, v in case.options.items() if not isinstance(v, list)}
    assert {("compressor", "zstd"), ("compressor", "gzip"), ("compressor", "snappy"),
            ("local_dictionary_enable", "False"), ("local_dictionary_enable", "True"),
            ("sort_scope", "local_sort"), ("sort_scope", "no_sort"), ("blocklet_size", "1")} <= options
    assert any(len(case.columns[0].values) > 32_000 for case in run.cases)  # several pages
    assert sum(len(case.filters) for case in run.cases) >= N_CASES


def test_carbondata_reads_what_carbon_ds_writes(run: Run):
    failures = []
    for case in run.cases:
        if case.seed in run.write_errors:
            failures.append(f"{describe(case)}: carbon-ds could not write it: {run.write_errors[case.seed]}")
            continue
        table = case.table
        for g, names in enumerate(case.groups()):
            want = as_multiset(canon_table(table.select(names)))
            got = run.rows(f"ours-{case.seed}-g{g}")
            if got != want:
                failures.append(f"{describe(case)}: CarbonData read columns {names} as {_diff(got, want)}")
    report(failures)


def test_carbon_ds_reads_what_carbondata_writes(run: Run):
    failures = []
    for case in run.cases:
        write = run.results[f"write-{case.seed}"]
        if not write["ok"]:
            failures.append(f"{describe(case)}: CarbonData could not write it: {write['error'][:1500]}")
            continue
        ours_read = carbon_ds.read_table(str(run.theirs[case.seed]), columns=case.names)
        written = case.their_table
        for g, names in enumerate(case.groups()):
            theirs = run.rows(f"theirs-{case.seed}-g{g}")
            ours = as_multiset(canon_table(ours_read.select(names)))
            if ours != theirs:
                written_rows = as_multiset(canon_table(written.select(names)))
                if ours == written_rows and float_division_only(theirs, ours):
                    continue  # CarbonReader's vector decoder, not the file: see float_division_only
                failures.append(f"{describe(case)}: carbon-ds read columns {names} as {_diff(ours, theirs)} "
                                "(CarbonData's own reading)")
            elif theirs != as_multiset(canon_table(written.select(names))):
                failures.append(f"{describe(case)}: both read CarbonData's file as other rows than were written: "
                                f"{_diff(theirs, as_multiset(canon_table(written.select(names))))}")
    report(failures)


def filter_answers(run: Run) -> tuple[list[str], list[str], int]:
    """CarbonData's filtered reads over carbon-ds's files against SQL's answer: (differences, differences that
    are a known mistake of CarbonData's, count)."""
    failures, java_side, compared = [], [], 0
    for case in run.cases:
        if case.seed in run.write_errors:
            continue
        for n, spec in enumerate(case.filters):
            compared += 1
            ours = run.ids(f"ours-{case.seed}-f{n}")
            want = expected_rows(case, spec)
            if ours == want:
                continue
            where = f"{describe(case)}, filter {_spec(spec)}"
            known = excuse(case, spec, ours)
            if known is None:
                failures.append(f"{where}: over carbon-ds's files CarbonData answers {_diff(ours, want)}")
            else:
                java_side.append(f"{where}: {known}")
    return failures, java_side, compared


def test_carbondata_filtered_reads_over_our_files_lose_no_row(run: Run):
    failures, java_side, compared = filter_answers(run)
    # the differential's figures (pytest -rP shows them)
    print(f"{len(run.cases)} cases, {compared} filters: {len(failures)} differences over carbon-ds's files, "
          f"{len(java_side)} known CarbonData mistakes (known_java.py)")
    assert compared >= N_CASES
    report(failures)


def test_carbondata_filter_mistakes_show_on_its_own_files(run: Run):
    """Every mistake ``excuse`` forgives is CarbonData's: it makes it over a file CarbonData wrote."""
    failures = []
    for n, (mistake, folder, spec, sql, answer) in enumerate(DEMOS):
        write = run.results[f"demo-write-{folder}"]
        assert write["ok"], write.get("error", "")[:2000]
        got = sorted(int(r[0]) for r in json_rows(run, f"demo-{n}"))
        assert got != sql
        if got != answer:
            failures.append(f"{mistake}: filter {spec} over CarbonData's own file gave rows {got}, not {answer}")
    for n, (mistake, folder, sql, answer) in enumerate(VALUE_DEMOS):
        got = sorted(json_rows(run, f"demo-values-{n}"))
        assert got != sql
        if got != answer:
            failures.append(f"{mistake}: CarbonData read its own folder {folder} as {got}, not {answer}")
    report(failures)


def test_carbondata_reads_several_segment_folders_apart(run: Run):
    """Why carbon-ds's tables are handed to CarbonReader one segment folder at a time: over CarbonData's own
    segment folders its filtered read of the root loses rows that reading the folders one by one returns."""
    for n in range(len(run.segments_case.files)):
        write = run.results[f"segments-write-{n}"]
        assert write["ok"], write.get("error", "")[:2000]
    want = expected_rows(run.segments_case, run.segments_filter)
    apart, root = run.ids("segments-apart"), run.ids("segments-root")
    assert apart == want, f"CarbonData's folders read one by one answer {_diff(apart, want)}"
    assert set(root) < set(want), f"{SEGMENT_FOLDERS}: no longer so (the root read answers {root}, SQL {want})"


def test_carbon_ds_filtered_reads_of_carbondata_files(run: Run):
    failures = []
    for case in run.cases:
        if not run.results[f"write-{case.seed}"]["ok"]:
            continue
        for spec in case.filters:
            value = spec.get("py")
            op = spec["op"]
            cond = ((spec["column"], op, list(value) if op in ("in", "not in") else value)
                if op not in ("is null", "is not null") else (spec["column"], op, None))
            got = sorted(carbon_ds.read_table(str(run.theirs[case.seed]), columns=[ROW_ID], filter=[cond])
                         .column(ROW_ID).to_pylist())
            want = expected_rows(case, spec, theirs=True)
            if got != want:
                failures.append(f"{describe(case)}, filter {_spec(spec)}: carbon-ds read {_diff(got, want)}")
    report(failures)


def _spec(spec: dict) -> str:
    return str({k: v for k, v in spec.items() if k != "py"})


def _diff(got: list, want: list) -> str:
    extra = sorted(set(got) - set(want))[:3]
    missing = sorted(set(want) - set(got))[:3]
    return (f"{len(got)} rows where {len(want)} were expected; unexpected {[str(r)[:300] for r in extra]}, "
            f"missing {[str(r)[:300] for r in missing]}")
