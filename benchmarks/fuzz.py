"""Hostile-file probe: damage one file of a table (data, index, merged index, segment file, tablestatus,
update status, delete delta, schema) or a real CarbonData file, then read it through one route.

    python benchmarks/fuzz.py --cases 2000              # the full run: prints and saves the tally
    python benchmarks/fuzz.py --cases 120 --json        # the bounded sample tests/table/test_fuzz_tables.py runs
    python benchmarks/fuzz.py --case 417 --seed 13      # one case again, with its damage and answer
    python benchmarks/fuzz.py --routes plain,filter     # only these routes (``--no-spark``: all but Spark)

Each case is seeded by (seed, case number) alone: the source, the file, the damage (fuzz_mutate) and the
route (fuzz_routes). Outcomes: error (a carbon_ds.errors type; ``unnamed`` when its message does not name
the damaged file), same, dup (a row id twice), silent (other rows without an error), crash (any other
exception, a MemoryError, a dead worker), hang (no answer in --case-timeout seconds), rss (peak resident
memory of the case over --rss-limit-mb).

Cases run in a forked child of a worker process that has imported everything, under an address-space
limit (RLIMIT_AS, so a bomb ends as a MemoryError rather than swapping the machine); the child's peak RSS
comes from wait4. Spark cases run in a Spark worker (one SparkSession, its Python workers sampled from
/proc for their RSS), killed and restarted on a hang.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fuzz_routes as R  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2] / "shared/compat/carbondata-real"
ADDRESS_LIMIT = 6 << 30  # above what a well-behaved read maps (Arrow's and numba's reservations included)


# ---------------------------------------------------------------- case worker (forks one child per case)
def _child(case: dict, fd: int) -> None:
    limit = case.get("address_limit") or ADDRESS_LIMIT
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        got = R.run_route(case["route"], case["path"])
        res = R.judge_value(got, R.load_expected(case["expected"]))
    except BaseException as e:  # noqa: BLE001 - judged: ours, or a crash
        res = R.judge_error(e, case["target"])
        if res["outcome"] == "crash":
            res["message"] += " | " + "".join(traceback.format_exception(e)[-3:])[-700:]
    os.write(fd, (json.dumps(res) + "\n").encode())


def _run_forked(case: dict, timeout: float) -> dict:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            _child(case, w)
        finally:
            os._exit(0)
    os.close(w)
    out = b""
    deadline = time.monotonic() + timeout
    hung = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            hung = True
            os.kill(pid, signal.SIGKILL)
            break
        ready, _, _ = select.select([r], [], [], left)
        if ready:
            chunk = os.read(r, 1 << 16)
            if not chunk:
                break
            out += chunk
    os.close(r)
    _, status, usage = os.wait4(pid, 0)
    rss_mb = usage.ru_maxrss / 1024
    if hung:
        return {"outcome": "hang", "message": f"no answer in {timeout}s", "rss_mb": rss_mb}
    if not out:
        how = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit code {os.WEXITSTATUS(status)}"
        return {"outcome": "crash", "message": f"the case's process died ({how})", "rss_mb": rss_mb}
    res = json.loads(out.decode())
    res["rss_mb"] = rss_mb
    return res


def case_worker() -> None:
    """Serve cases from stdin (JSON lines), one answer line each."""
    # everything a route imports, loaded before any fork (each child would load it again otherwise)
    import duckdb  # noqa: F401
    import polars  # noqa: F401

    import carbon_ds.duckdb  # noqa: F401
    import carbon_ds.polars  # noqa: F401
    from carbon_ds.api import read_table
    from carbon_ds.readers import CarbonDataFile  # noqa: F401

    for warm in sys.argv[sys.argv.index("--worker") + 1:]:
        read_table(warm)  # compiles (or loads) the numba kernels once
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        case = json.loads(line)
        print(json.dumps(_run_forked(case, case["timeout"])), flush=True)


# ---------------------------------------------------------------- Spark worker
def spark_worker() -> None:
    from common import spark_session

    spark = spark_session(memory="1g")
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        case = json.loads(line)
        try:
            got = R.spark_route(spark, case["route"], case["path"])
            want = R.load_expected(case["expected"]) if case["expected"] else None
            res = R.judge_value(got, want) if want is not None else {"outcome": "same", "message": ""}
            if case.get("save"):
                R.save_expected(got, case["save"])
        except BaseException as e:  # noqa: BLE001
            res = R.judge_error(e, case["target"])
        print(json.dumps(res), flush=True)


def _group_rss_mb(pgid: int) -> float:
    """Resident memory of the Python processes of a process group (the JVM is left out: its heap is sized
    by its own settings)."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:
                continue
            with open(f"/proc/{pid}/status") as fh:
                status = fh.read()
            if "java" in status.split("\n", 1)[0]:
                continue
            rss = next(ln for ln in status.splitlines() if ln.startswith("VmRSS:"))
            total = max(total, int(rss.split()[1]))  # the largest process: the one decoding the case
        except (OSError, StopIteration, ValueError, IndexError):
            continue
    return total / 1024


class Worker:
    """A worker process answering JSON lines; restarted after a hang or a death."""

    def __init__(self, args: list[str], env: dict, start_timeout: float = 300):
        self.args, self.env, self.start_timeout = args, env, start_timeout
        self.proc: subprocess.Popen | None = None

    def _start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, *self.args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=self.env,
                                     start_new_session=True)
        line = self._line(self.start_timeout)
        if line is None or not json.loads(line).get("ready"):
            self.kill()
            raise RuntimeError(f"worker {self.args[0]} did not start")

    def _line(self, timeout: float, sample=None) -> str | None:
        assert self.proc is not None and self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.proc.stdout], [], [], min(left, 0.1))
            if ready:
                return self.proc.stdout.readline()
            if sample is not None:
                sample()

    def run(self, case: dict, timeout: float, sample_rss: bool = False) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(case) + "\n")
        self.proc.stdin.flush()
        peak = [0.0]
        pgid = self.proc.pid

        def sample():
            peak[0] = max(peak[0], _group_rss_mb(pgid))

        line = self._line(timeout + 30, sample if sample_rss else None)  # the worker's own timer comes first
        if line is None:
            self.kill()
            return {"outcome": "hang", "message": f"no answer in {timeout}s", "rss_mb": peak[0]}
        if not line:
            self.kill()
            return {"outcome": "crash", "message": "worker died", "rss_mb": peak[0]}
        res = json.loads(line)
        if sample_rss:
            res["rss_mb"] = peak[0]
        return res

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()  # type: ignore[union-attr]
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None


# ---------------------------------------------------------------- driver
def plan_case(i: int, seed: int, sources: list[tuple[str, str, bool]], routes: list[str]) -> dict:
    """What case ``i`` does, from (seed, i) alone."""
    rng = random.Random(f"{seed}-{i}")
    src, victim, single = rng.choice(sources)
    allowed = [r for r in (R.FILE_ROUTES if single else R.TABLE_ROUTES) if r in routes] or ["file"]
    route = rng.choice(allowed)
    return {"i": i, "src": src, "victim": victim, "single": single, "route": route,
            "kind": "corpus" + R.kind_of(victim) if single else R.kind_of(victim), "rng": rng}


def run(cases: int, seed: int, case_timeout: float, corpus: bool = True, routes: list[str] | None = None,
        only: int | None = None, rss_limit_mb: float = 1024, verbose: bool = False) -> dict:
    from fuzz_mutate import mutate

    from carbon_ds.readers import CarbonDataFile

    routes = list(routes or R.TABLE_ROUTES + R.FILE_ROUTES)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                        os.environ.get("PYTHONPATH", "")])}
    root = tempfile.mkdtemp(prefix="carbon-fuzz-")
    tally: dict[str, dict[str, int]] = {}
    by_route: dict[str, dict[str, int]] = {}
    examples: dict[str, list[str]] = {k: [] for k in ("crash", "hang", "silent", "dup", "unnamed", "rss")}
    peak = {"mb": 0.0, "case": None}
    silent: dict[str, int] = {}
    workers: dict[str, Worker] = {}
    start = time.monotonic()
    try:
        tables = R.build_sources(os.path.join(root, "src"))
        sources = [(t, f, False) for t in tables for f in R.victims(t)]
        if corpus and CORPUS.is_dir():
            sources += [(str(p), str(p), True) for p in sorted(CORPUS.rglob("*.carbondata"))
                        if p.stat().st_size < 1 << 20]
        expected: dict[tuple[str, str], str] = {}
        workers["case"] = Worker(["--worker", *tables], env)
        spark_routes = [r for r in routes if r in R.SPARK_ROUTES]
        if spark_routes:
            workers["spark"] = Worker(["--spark-worker"], env)
        for src in dict.fromkeys(s for s, _v, _single in sources):
            single = not os.path.isdir(src)
            for route in (R.FILE_ROUTES if single else R.TABLE_ROUTES):
                if route not in routes:
                    continue
                out = os.path.join(root, f"expected-{len(expected)}")
                if route in R.SPARK_ROUTES:
                    res = workers["spark"].run({"route": route, "path": src, "expected": None, "save": out,
                                                "target": src}, 600)
                    if res["outcome"] != "same":
                        raise RuntimeError(f"{route} cannot read the undamaged {src}: {res}")
                elif single:
                    with CarbonDataFile(src) as f:
                        R.save_expected(f.read(), out)
                else:
                    R.save_expected(R.run_route(route, src), out)
                expected[(src, route)] = out
        work = ""
        for i in range(cases) if only is None else [only]:
            if work:
                shutil.rmtree(work, ignore_errors=True)
            c = plan_case(i, seed, sources, routes)
            work = os.path.join(root, f"case{i}")  # a fresh folder per case: readers cache metadata by path
            R.copy_source(c["src"], work)
            if c["single"]:
                target = os.path.join(work, os.path.basename(c["victim"]))
                read_path = target
            else:
                target = os.path.join(work, os.path.relpath(c["victim"], c["src"]))
                read_path = work
            with open(target, "rb") as fh:
                data = fh.read()
            damaged, label = mutate(c["rng"], c["kind"].removeprefix("corpus"), data)
            with open(target, "wb") as fh:
                fh.write(damaged)
            case = {"route": c["route"], "path": read_path, "expected": expected[(c["src"], c["route"])],
                    "target": target, "timeout": case_timeout}
            spark = c["route"] in R.SPARK_ROUTES
            res = workers["spark" if spark else "case"].run(case, case_timeout, sample_rss=spark)
            outcome = res["outcome"]
            if outcome == "error" and not res.get("named", True):
                outcome = "unnamed"
            rss = float(res.get("rss_mb") or 0)
            if rss > peak["mb"]:
                peak.update(mb=round(rss, 1), case=i)
            if rss > rss_limit_mb and outcome in ("error", "same", "unnamed"):
                outcome = "rss"
            tally.setdefault(c["kind"], {}).setdefault(outcome, 0)
            tally[c["kind"]][outcome] += 1
            by_route.setdefault(c["route"], {}).setdefault(outcome, 0)
            by_route[c["route"]][outcome] += 1
            line = (f"case {i} ({c['kind']}, {c['route']}, {label}): {res['message'].strip()[-400:]}"
                    f" [{rss:.0f} MB]")
            if outcome == "silent":
                cls = R.silent_class(c["kind"], c["route"], label, res["message"])
                silent[cls] = silent.get(cls, 0) + 1
                line += f" [class: {cls}]"
            if outcome in examples and len(examples[outcome]) < 400:
                examples[outcome].append(line)
            if verbose or only is not None:
                print(f"{outcome}: {line}", flush=True)
        elapsed = time.monotonic() - start
    finally:
        for w in workers.values():
            w.close()
        shutil.rmtree(root, ignore_errors=True)
    totals: dict[str, int] = {}
    for per in tally.values():
        for k, v in per.items():
            totals[k] = totals.get(k, 0) + v
    return {"cases": cases if only is None else 1, "seed": seed, "seconds": round(elapsed, 1), "totals": totals,
            "by_file": tally, "by_route": by_route, "peak_rss_mb": peak, "silent_classes": silent,
            "examples": examples}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--case", type=int, help="run only this case number")
    ap.add_argument("--case-timeout", type=float, default=60.0)
    ap.add_argument("--rss-limit-mb", type=float, default=1024)
    ap.add_argument("--no-corpus", action="store_true")
    ap.add_argument("--routes", help="comma-separated routes (default: all)")
    ap.add_argument("--no-spark", action="store_true", help="every route but Spark's")
    ap.add_argument("--json", action="store_true", help="print only the JSON summary")
    ap.add_argument("--verbose", action="store_true", help="print every case")
    ap.add_argument("--out", default="benchmarks/results")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--spark-worker", action="store_true", help=argparse.SUPPRESS)
    args, _rest = ap.parse_known_args()
    if args.worker:
        case_worker()
        return
    if args.spark_worker:
        spark_worker()
        return
    routes = args.routes.split(",") if args.routes else list(R.TABLE_ROUTES + R.FILE_ROUTES)
    if args.no_spark:
        routes = [r for r in routes if r not in R.SPARK_ROUTES]
    summary = run(args.cases, args.seed, args.case_timeout, corpus=not args.no_corpus, routes=routes,
                  only=args.case, rss_limit_mb=args.rss_limit_mb, verbose=args.verbose)
    if args.json:
        print(json.dumps(summary))
        return
    print(json.dumps({k: v for k, v in summary.items() if k != "examples"}, indent=2))
    for k, lines in summary["examples"].items():
        for ln in lines[:30]:
            print(f"{k}: {ln}")
    if args.case is None:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "fuzz.json"), "w") as fh:
            json.dump(summary, fh, indent=2)


if __name__ == "__main__":
    main()
