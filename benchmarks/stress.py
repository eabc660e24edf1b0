"""Stress a table: N appending writers, readers, a DELETE/UPDATE worker and CLEAN FILES for T seconds,
then check every row by id.

    python benchmarks/stress.py --seconds 120 --writers 3 --readers 1
    AWS_ENDPOINT_URL=http://127.0.0.1:5000 ... python benchmarks/stress.py --table s3://bucket/stress
    python benchmarks/stress.py --s3-loopback --seconds 120 --writers 2   # starts moto's S3 on 127.0.0.1
    CARBON_DS_S3_CONDITIONAL=0 python benchmarks/stress.py --s3-loopback ...  # as a single-writer store

Each worker is a process and logs what it committed (a call that returned). At the end the table must hold
exactly the committed ids minus the deleted ones, each once, with the updated value where updated; a call
that raised may or may not have committed, and its ids are only reported ("uncertain"). Readers check that
no read ever shows an id twice.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.fs as pafs

from carbon_ds.api import read_table, write_table
from carbon_ds.errors import CarbonError
from carbon_ds.fs import Storage
from carbon_ds.table.table import CarbonTable

BATCH = 500


def _log(path: str, rec: dict) -> None:
    with open(path, "a") as fh:
        fh.write(json.dumps(rec) + "\n")


def writer(table: str, w: int, until: float, log: str) -> None:
    k = 0
    while time.time() < until:
        lo = (w * 1_000_000) + k * BATCH
        ids = pa.array(range(lo, lo + BATCH), pa.int64())
        try:
            write_table(pa.table({"id": ids, "s": pa.array(["w"] * BATCH)}), table)
            _log(log, {"append": [lo, lo + BATCH]})
        except CarbonError as e:
            _log(log, {"uncertain": [lo, lo + BATCH], "error": str(e)[:200]})
        k += 1


def mutator(table: str, until: float, log: str, seed: int) -> None:
    rng = random.Random(seed)
    while time.time() < until:
        time.sleep(0.5)
        try:
            ids = sorted(read_table(table, columns=["id"]).column("id").to_pylist())
        except CarbonError:
            continue
        if not ids:
            continue
        victim, target = rng.choice(ids), rng.choice(ids)
        op = "delete" if rng.random() < 0.5 else "update"
        try:
            if op == "delete":
                CarbonTable.open(table).delete(f"id = {victim}")
                _log(log, {"delete": victim})
            else:
                CarbonTable.open(table).update({"s": "u"}, f"id = {target}")
                _log(log, {"update": target})
        except CarbonError as e:
            _log(log, {"uncertain_" + op: victim if op == "delete" else target, "error": str(e)[:200]})
        if rng.random() < 0.2:
            try:
                CarbonTable.open(table).clean_files()
                _log(log, {"clean": 1})
            except CarbonError as e:
                _log(log, {"clean_error": str(e)[:200]})


def reader(table: str, until: float, log: str) -> None:
    while time.time() < until:
        try:
            ids = read_table(table, columns=["id"]).column("id").to_pylist()
        except CarbonError as e:
            _log(log, {"read_error": str(e)[:200]})
            continue
        _log(log, {"read": len(ids), "duplicates": len(ids) - len(set(ids))})


def s3_loopback() -> subprocess.Popen:
    """Start moto's S3 server on a free port of 127.0.0.1, point AWS_* at it and create the bucket."""
    server = shutil.which("moto_server", path=os.path.dirname(sys.executable))
    if server is None:
        raise SystemExit("--s3-loopback needs moto[server] (pip install 'moto[server]')")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([server, "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.environ.update({"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1",
                       "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"})
    fs = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http", access_key="test",
                           secret_key="test", region="us-east-1", allow_bucket_creation=True)
    for _ in range(100):
        try:
            fs.create_dir("carbon-stress")
            return proc
        except OSError:
            time.sleep(0.2)
    proc.terminate()
    raise SystemExit("moto's S3 server did not start")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", default=None, help="table path or URI (default: a new local folder)")
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--writers", type=int, default=3)
    ap.add_argument("--readers", type=int, default=1)
    ap.add_argument("--s3-loopback", action="store_true", help="run against moto's S3 server on 127.0.0.1")
    args = ap.parse_args()
    server = s3_loopback() if args.s3_loopback else None
    try:
        run(args, "s3://carbon-stress/t" if server else args.table)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)


def run(args: argparse.Namespace, table_arg: str | None) -> None:
    work = tempfile.mkdtemp(prefix="carbon-stress-")
    table = table_arg or os.path.join(work, "t")
    write_table(pa.table({"id": pa.array([-1], pa.int64()), "s": ["seed"]}), table)
    until = time.time() + args.seconds
    log = os.path.join(work, "log.jsonl")
    procs = [mp.Process(target=writer, args=(table, w, until, log)) for w in range(args.writers)]
    procs += [mp.Process(target=reader, args=(table, until, log)) for _ in range(args.readers)]
    procs.append(mp.Process(target=mutator, args=(table, until, log, 13)))
    t0 = time.time()
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    elapsed = time.time() - t0
    committed, uncertain, deleted, updated, uncertain_rows = {-1}, set(), set(), set(), set()
    stats = {"appends": 0, "failed_appends": 0, "deletes": 0, "updates": 0, "failed_dml": 0, "cleans": 0,
             "reads": 0, "read_errors": 0, "duplicates_seen": 0}
    with open(log) as fh:
        for line in fh:
            r = json.loads(line)
            if "append" in r:
                committed.update(range(*r["append"]))
                stats["appends"] += 1
            elif "uncertain" in r:
                uncertain.update(range(*r["uncertain"]))
                stats["failed_appends"] += 1
            elif "delete" in r:
                deleted.add(r["delete"])
                stats["deletes"] += 1
            elif "update" in r:
                updated.add(r["update"])
                stats["updates"] += 1
            elif "uncertain_delete" in r or "uncertain_update" in r:
                uncertain_rows.add(r.get("uncertain_delete", r.get("uncertain_update")))
                stats["failed_dml"] += 1
            elif "clean" in r:
                stats["cleans"] += 1
            elif "read" in r:
                stats["reads"] += 1
                stats["duplicates_seen"] += r["duplicates"]
            elif "read_error" in r:
                stats["read_errors"] += 1
    final = read_table(table)
    ids = final.column("id").to_pylist()
    s = dict(zip(ids, final.column("s").to_pylist(), strict=True))
    want = committed - deleted
    have = set(ids)
    lost = sorted((want - have) - uncertain_rows)
    extra = sorted((have - want) - uncertain - uncertain_rows)
    wrong = sorted(i for i in updated - deleted - uncertain_rows if i in have and s[i] != "u")
    storage, fs_path = Storage.for_path(table)
    result = {"table": table, "conditional_writes": storage.conditional_writes(fs_path),
              "writers": args.writers, "readers": args.readers, "seconds": round(elapsed, 1), "rows": len(ids), "duplicates": len(ids) - len(have),
              "lost": len(lost), "unexpected": len(extra), "update_lost": len(wrong), **stats,
              "rows_per_second_appended": round(len(committed) / elapsed, 1)}
    print(json.dumps(result, indent=2))
    if lost or extra or wrong or len(ids) != len(have) or stats["duplicates_seen"]:
        raise SystemExit(f"inconsistent: lost {lost[:10]}, unexpected {extra[:10]}, update lost {wrong[:10]}")


if __name__ == "__main__":
    main()
