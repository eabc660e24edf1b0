"""Hostile-file fuzzing of whole tables: mutate one file of a written table (data, index, segment file,
tablestatus, schema, delete delta) or of the real CarbonData corpus, then read it.

Every case must end as one of:
  error   a carbon_ds.errors type (the file is refused, naming it),
  same    exactly the original rows,
  silent  rows read "successfully" but different from the original (undetected corruption),
never as crash (any other exception) or hang (the worker is killed after --case-timeout seconds).

    python benchmarks/fuzz.py --cases 4000            # thousands, prints and saves the tally
    python benchmarks/fuzz.py --cases 150 --json      # the bounded sample tests/table/test_fuzz_tables.py runs
    python benchmarks/fuzz.py --filter "id >= 0"      # tables read with a filter: planned by their index files

Cases run in a worker process, so a hang or a hard crash is seen and the run goes on with the next case.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from decimal import Decimal
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "shared/compat/carbondata-real"
KINDS = (".carbondata", ".carbonindex", ".carbonindexmerge", ".segment", "tablestatus", "schema", ".deletedelta")


def build_table(root: str) -> str:
    """A small table with every kind of metadata file: two segments, a delete delta, several types."""
    import pyarrow as pa

    from carbon_ds.api import write_table
    from carbon_ds.table.table import CarbonTable

    path = os.path.join(root, "t")
    for seg in range(2):
        n = 300
        ids = list(range(seg * n, seg * n + n))
        write_table(pa.table({
            "id": pa.array(ids, pa.int64()),
            "s": pa.array([None if i % 17 == 0 else ("@NU#LL$!" if i % 23 == 0 else f"v{i % 40}") for i in ids]),
            "d": pa.array([i / 8 for i in ids], pa.float64()),
            "dec": pa.array([Decimal(i) / 100 for i in ids], pa.decimal128(12, 2)),
            "ts": pa.array([dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(minutes=i) for i in ids],
                           pa.timestamp("ms", tz="UTC")),
            "l": pa.array([[i, i + 1] if i % 5 else None for i in ids], pa.list_(pa.int32())),
        }), path)
    CarbonTable.open(path).delete("id IN (7, 57, 107, 307, 407, 599)")
    return path


def _files(table: str) -> list[str]:
    out = []
    for dirpath, _, names in os.walk(table):
        for n in names:
            if n.endswith(KINDS) or n in ("tablestatus", "schema"):
                if not n.endswith(".lock"):
                    out.append(os.path.join(dirpath, n))
    return sorted(out)


def mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    if not b:
        return b"\x00"
    kind = rng.random()
    if kind < 0.15:
        return bytes(b[: rng.randrange(len(b))])
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(len(b))
        if kind < 0.6:
            b[pos] ^= 1 << rng.randrange(8)
        elif kind < 0.8:
            b[pos] = rng.choice([0x00, 0xFF, 0x7F, 0x80, rng.randrange(256)])
        else:
            n = rng.randint(1, 8)
            b[pos : pos + n] = rng.randbytes(n)
    return bytes(b)


# ---------------------------------------------------------------- worker side


def _read_all(path: str, single_file: bool, filter: str | None = None):
    from carbon_ds.api import read_table
    from carbon_ds.readers import CarbonDataFile

    if single_file:
        with CarbonDataFile(path) as f:
            t = f.read()
        t.validate(full=True)
        return t
    t = read_table(path, filter=filter)  # an unfiltered read takes every file whole and never its index
    t.validate(full=True)
    return t.sort_by("id")


def worker() -> None:
    """Read cases from stdin (JSON lines), answer one JSON line each."""
    from carbon_ds.errors import CarbonError

    for line in sys.stdin:
        case = json.loads(line)
        try:
            got = _read_all(case["path"], case["single"], case.get("filter"))
            with open(case["expected"], "rb") as fh:
                import pyarrow as pa

                want = pa.ipc.open_file(fh).read_all()
            out = "same" if got.equals(want) else "silent"
            msg = ""
            if out == "silent":  # which columns changed: says what kind of damage went unnoticed
                changed = [n for n in want.column_names if n not in got.column_names or got.num_rows != want.num_rows
                           or not got.column(n).equals(want.column(n))]
                msg = f"rows {want.num_rows} -> {got.num_rows}, columns changed: {', '.join(changed) or 'none'}"
        except CarbonError as e:
            out, msg = "error", str(e)[:200]
        except Exception as e:  # noqa: BLE001 - the point is to find these
            out, msg = "crash", "".join(traceback.format_exception(e)[-3:])[-800:]
        print(json.dumps({"outcome": out, "message": msg}), flush=True)


# ---------------------------------------------------------------- driver side


class Worker:
    def __init__(self, env: dict):
        self.env = env
        self.proc: subprocess.Popen | None = None

    def run(self, case: dict, timeout: float) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True, env=self.env)
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(case) + "\n")
        self.proc.stdin.flush()
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            return {"outcome": "hang", "message": f"no answer in {timeout}s"}
        line = self.proc.stdout.readline()
        if not line:
            rc = self.proc.wait()
            self.proc = None
            return {"outcome": "crash", "message": f"worker died with exit code {rc}"}
        return json.loads(line)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()  # type: ignore[union-attr]
            self.proc.wait(timeout=30)


def run(cases: int, seed: int, case_timeout: float, corpus: bool = True, filter: str | None = None) -> dict:
    import pyarrow as pa

    env = dict(os.environ)
    root = tempfile.mkdtemp(prefix="carbon-fuzz-")
    tally: dict[str, dict[str, int]] = {}
    examples: dict[str, list[str]] = {"crash": [], "hang": [], "silent": []}
    w = Worker(env)
    try:
        table = build_table(root)
        sources = [(table, f, False) for f in _files(table)]
        if corpus and CORPUS.is_dir():
            sources += [(str(p), str(p), True) for p in sorted(CORPUS.rglob("*.carbondata"))
                        if p.stat().st_size < 1 << 20]
        expected = {}
        for src, _, single in sources:
            if src not in expected:
                t = _read_all(src, single, filter)
                expected[src] = os.path.join(root, f"expected-{len(expected)}.arrow")
                with pa.OSFile(expected[src], "wb") as sink, pa.ipc.new_file(sink, t.schema) as wr:
                    wr.write_table(t)
        rng = random.Random(seed)
        start = time.monotonic()
        work = ""
        for i in range(cases):
            if work:
                shutil.rmtree(work)
            # a fresh folder per case: readers cache metadata by path and file name
            work = os.path.join(root, f"case{i}")
            src, victim, single = rng.choice(sources)
            kind = "corpus" if single else next((k for k in KINDS if os.path.basename(victim).endswith(k)), "?")
            if single:
                os.makedirs(work)
                target = os.path.join(work, os.path.basename(victim))
                shutil.copyfile(victim, target)
                read_path = target
            else:
                shutil.copytree(src, work)
                target = os.path.join(work, os.path.relpath(victim, src))
                read_path = work
            with open(target, "rb") as fh:
                data = fh.read()
            with open(target, "wb") as fh:
                fh.write(mutate(rng, data))
            res = w.run({"path": read_path, "single": single, "expected": expected[src], "filter": filter},
                        case_timeout)
            tally.setdefault(kind, {}).setdefault(res["outcome"], 0)
            tally[kind][res["outcome"]] += 1
            last = res["message"].strip().splitlines()[-1:] or [""]
            seen = {e.split(": ", 1)[-1] for e in examples.get(res["outcome"], [])}
            cap = 100 if res["outcome"] == "silent" else 20  # every silent case, to explain them
            if res["outcome"] in examples and len(examples[res["outcome"]]) < cap and (
                    last[0] not in seen or res["outcome"] == "silent"):
                examples[res["outcome"]].append(f"case {i} ({kind}): {last[0]}")
        elapsed = time.monotonic() - start
    finally:
        w.close()
        shutil.rmtree(root, ignore_errors=True)
    totals: dict[str, int] = {}
    for per in tally.values():
        for k, v in per.items():
            totals[k] = totals.get(k, 0) + v
    return {"cases": cases, "seed": seed, "seconds": round(elapsed, 1), "totals": totals, "by_file": tally,
            "examples": examples}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--case-timeout", type=float, default=30.0)
    ap.add_argument("--no-corpus", action="store_true")
    ap.add_argument("--filter", help="read the tables with this SQL filter (exercises index pruning)")
    ap.add_argument("--json", action="store_true", help="print only the JSON summary")
    ap.add_argument("--out", default="benchmarks/results")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker()
        return
    summary = run(args.cases, args.seed, args.case_timeout, corpus=not args.no_corpus, filter=args.filter)
    if args.json:
        print(json.dumps(summary))
        return
    print(json.dumps(summary, indent=2))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "fuzz.json"), "w") as fh:
        json.dump(summary, fh, indent=2)


if __name__ == "__main__":
    main()
