"""Imports one module per forked child, each child the first in its process to import anything of the package.

Run as ``python import_alone.py PRELOAD...``: the parent imports the PRELOAD modules (the third-party and
standard modules the package imports at its top level), then reads module names from stdin, one a line, and
answers each with one JSON line: {"module": name, "ok": bool, "error": traceback text}. A child is forked
from the parent as it was after the preloads, so every module is still imported alone as far as the package
is concerned, while the seconds numpy, pyarrow, numba and pyspark take to load are paid once, not per module.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback


def _import_in_child(module: str) -> dict:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: import, report, leave without running the parent's exit handlers
        os.close(read_end)
        try:
            importlib.import_module(module)
            text = ""
        except BaseException:  # noqa: BLE001 - every failure is the answer
            text = traceback.format_exc()
        with os.fdopen(write_end, "w", encoding="utf-8") as out:
            out.write(text)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, encoding="utf-8") as got:
        text = got.read()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 and not text:
        text = f"the child importing {module} ended with status {os.waitstatus_to_exitcode(status)}"
    return {"module": module, "ok": not text, "error": text}


def main(preload: list[str]) -> None:
    sys.path[0] = ""  # the working directory first, as for ``python -c``: the package as the test runs it
    for name in preload:
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # an optional dependency that is not installed: the child's import says what that means
    # a preload that brings the package in (an entry point, say) would make no child's import alone
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("carbon_ds", "pyspark_carbondata"))
    for line in sys.stdin:
        module = line.strip()
        if not module:
            continue
        if loaded:
            answer = {"module": module, "ok": False, "error": f"the preloads imported {loaded[:5]} already"}
        else:
            answer = _import_in_child(module)
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
