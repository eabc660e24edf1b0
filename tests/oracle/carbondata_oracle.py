"""Apache CarbonData's own SDK (2.3.0, from Maven Central) as the tests' oracle.

``scripts/build-oracle.sh`` builds tests/oracle/java into build/oracle; ``Oracle.run`` hands it a batch of jobs
(write a folder, read a folder with CarbonReader, read a table through CarbonTableInputFormat: see
CarbonOracle.java) and runs them all in one JVM, so the JVM's start is paid once per batch. Rows come back as
``canon`` prints them, and ``canon_arrow`` prints carbon-ds's Arrow values the same way, so the two compare
as text: floats by their bits, decimals with their scale, dates and timestamps as CarbonReader formats them
(``yyyy-MM-dd``, ``yyyy-MM-dd HH:mm:ss.SSS`` in UTC).
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import math
import os
import resource
import shutil
import struct
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("CARBON_DS_ORACLE_DIR", ROOT / "build" / "oracle"))
# CarbonData 2.3 reaches into java.nio / jdk.internal for off-heap buffers; UTC so that CarbonReader's date and
# timestamp text is the instant carbon-ds reads
JVM_OPTIONS = [
    *(f"--add-opens=java.base/{p}=ALL-UNNAMED"
      for p in ("java.nio", "jdk.internal.ref", "sun.nio.ch", "java.lang", "java.util", "java.lang.reflect")),
    "-Duser.timezone=UTC", "-Xmx1g", "-XX:+UseSerialGC", "-Xshare:auto", "-XX:TieredStopAtLevel=1",
]
BATCH_TIMEOUT_S = 3600  # a few minutes on two idle cores; a machine shared with other work takes several times that


def phase(text: str) -> None:
    """A setup phase's time, on stderr (pytest shows it with -s, or beside a failure): where a slow run went."""
    print(f"[oracle] {text}", file=sys.stderr, flush=True)


class OracleUnavailable(Exception):
    """Maven or a JDK is missing, or the build failed (the message says which)."""


class Oracle:
    """The built harness: ``run(jobs)`` returns one result dict per job, read jobs with their ``rows``."""

    def __init__(self, classpath: str, main: str = "CarbonOracle"):
        self.classpath = classpath
        self.main = main

    @classmethod
    def build(cls, module: str = "java", main: str = "CarbonOracle") -> Oracle:
        """The harness of tests/oracle/<module>: "java" (CarbonData 2.3.0, CarbonOracle) or "java1x"
        (CarbonData 1.6.1's writer, CarbonWriter1x)."""
        started = time.monotonic()
        if shutil.which("java") is None:
            raise OracleUnavailable("no 'java' on PATH (a JDK 17+)")
        # parallel test workers (pytest -n) each build: one at a time, so none reads a half-written build
        BUILD.parent.mkdir(parents=True, exist_ok=True)
        with open(BUILD.parent / ".oracle-build.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            done = subprocess.run(["bash", str(ROOT / "scripts" / "build-oracle.sh"), module], capture_output=True,
                                  text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise OracleUnavailable(f"scripts/build-oracle.sh {module} failed ({done.returncode}): {last}")
        phase(f"build of the {module} harness: {time.monotonic() - started:.1f} s")
        build = BUILD if module == "java" else Path(f"{BUILD}-{module}")
        jars = (build / "classpath.txt").read_text().strip()
        return cls(f"{build / 'classes'}{os.pathsep}{jars}", main)

    def run(self, jobs: list[dict], workdir: Path) -> dict[str, dict]:
        """Run ``jobs`` in one JVM; results by job id. A read job's rows (lists of canon values) are in
        ``rows``; a failed job has ``ok`` False and CarbonData's stack trace in ``error``."""
        workdir.mkdir(parents=True, exist_ok=True)
        for n, job in enumerate(jobs):
            if job["kind"] in ("read", "table"):
                job.setdefault("out", str(workdir / f"rows-{n}.jsonl"))
        batch, results = workdir / "batch.json", workdir / "results.json"
        batch.write_text(json.dumps({"jobs": jobs}))
        started, cpu = time.monotonic(), _children_cpu()
        done = subprocess.run(["java", *JVM_OPTIONS, "-cp", self.classpath, self.main, str(batch), str(results)],
                              capture_output=True, text=True, timeout=BATCH_TIMEOUT_S)
        jvm_s, jvm_cpu = time.monotonic() - started, _children_cpu() - cpu
        started = time.monotonic()
        if done.returncode != 0 or not results.exists():
            raise RuntimeError(f"the CarbonData oracle failed ({done.returncode}): {done.stderr[-3000:]}")
        out: dict[str, dict] = {}
        by_id = {job["id"]: job for job in jobs}
        for result in json.loads(results.read_text()):
            job = by_id[result["id"]]
            if result["ok"] and job["kind"] in ("read", "table"):
                with open(job["out"], encoding="utf-8") as f:
                    result["rows"] = [json.loads(line) for line in f]
            out[result["id"]] = result
        slowest = sorted(out.values(), key=lambda r: r.get("ms", 0), reverse=True)[:3]
        phase(f"{len(jobs)} jobs in one JVM: {jvm_s:.1f} s ({jvm_cpu:.1f} s CPU), results read in "
              f"{time.monotonic() - started:.1f} s; slowest jobs "
              + ", ".join(f"{r['id']} {r.get('ms', 0) / 1000:.1f} s" for r in slowest))
        return out


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# ---------------------------------------------------------------------- values as the oracle prints them
def _float_text(value: float, width: int) -> str:
    if math.isnan(value):
        return "f:NaN" if width == 4 else "d:NaN"
    if width == 4:
        return f"f:{struct.unpack('>I', struct.pack('>f', value))[0]:08x}"
    return f"d:{struct.unpack('>Q', struct.pack('>d', value))[0]:016x}"


def canon_arrow(value: Any, typ: pa.DataType) -> Any:
    """An Arrow value (``to_pylist`` form) as CarbonOracle.canon prints what CarbonReader returns."""
    if value is None:
        return None
    if pa.types.is_boolean(typ):
        return bool(value)
    if pa.types.is_integer(typ):
        return str(int(value))
    if pa.types.is_float32(typ):
        return _float_text(value, 4)
    if pa.types.is_floating(typ):
        return _float_text(value, 8)
    if pa.types.is_decimal(typ):
        d = Decimal(value)
        return "n:" + format(abs(d) if d == 0 else d, "f")  # BigDecimal has no negative zero
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return "s:" + value
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
        return "x:" + bytes(value).hex()
    if pa.types.is_date(typ):
        return "s:" + value.isoformat()
    if pa.types.is_timestamp(typ):
        if isinstance(value, dt.datetime):
            value = value.replace(tzinfo=None) if value.tzinfo is None else value.astimezone(dt.UTC).replace(tzinfo=None)
        return "s:" + value.strftime("%Y-%m-%d %H:%M:%S.") + f"{value.microsecond // 1000:03d}"
    if pa.types.is_map(typ):
        return [[canon_arrow(k, typ.key_type) for k, _ in value], [canon_arrow(v, typ.item_type) for _, v in value]]
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return [canon_arrow(v, typ.value_type) for v in value]
    if pa.types.is_struct(typ):
        return [canon_arrow(value.get(f.name), f.type) for f in typ]
    raise TypeError(f"no canonical form for {typ}")


def canon_table(table: pa.Table) -> list[list[Any]]:
    """Every row of ``table`` in canonical form, in the table's column order."""
    columns = [[canon_arrow(v, table.schema.field(i).type) for v in table.column(i).to_pylist()]
               for i in range(table.num_columns)]
    return [list(row) for row in zip(*columns, strict=True)] if columns else []


def as_multiset(rows: list[list[Any]]) -> list[str]:
    """Rows as sorted JSON text: the comparison ignores row order (CarbonReader's follows its file listing)."""
    return sorted(json.dumps(r, sort_keys=True) for r in rows)


# ---------------------------------------------------------------------- types as the oracle spells them
def type_text(typ: pa.DataType, long_string: bool = False) -> str:
    """An Arrow type as CarbonOracle.parseType takes it."""
    if pa.types.is_boolean(typ):
        return "boolean"
    if pa.types.is_int16(typ):
        return "smallint"
    if pa.types.is_int32(typ):
        return "int"
    if pa.types.is_int64(typ):
        return "bigint"
    if pa.types.is_float32(typ):
        return "float"
    if pa.types.is_float64(typ):
        return "double"
    if pa.types.is_decimal(typ):
        return f"decimal({typ.precision},{typ.scale})"
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return "varchar" if long_string else "string"
    if pa.types.is_binary(typ):
        return "binary"
    if pa.types.is_date(typ):
        return "date"
    if pa.types.is_timestamp(typ):
        return "timestamp"
    if pa.types.is_map(typ):
        return f"map<{type_text(typ.key_type)},{type_text(typ.item_type)}>"
    if pa.types.is_list(typ):
        return f"array<{type_text(typ.value_type)}>"
    if pa.types.is_struct(typ):
        return "struct<" + ",".join(f"{f.name}:{type_text(f.type)}" for f in typ) + ">"
    raise TypeError(f"no oracle type for {typ}")
