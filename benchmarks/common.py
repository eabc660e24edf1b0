"""Shared pieces of the benchmark scripts: best-of-N timing, arguments, JSON results."""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable


def pyplot():
    """matplotlib's pyplot drawing to files (the Agg backend), or None when matplotlib (the ``bench`` extra) is
    not installed; imported here because only the chart of a run needs it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install carbon-ds[bench]): no chart", flush=True)
        return None
    return plt


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Best wall time of ``repeat`` runs (the least disturbed by the rest of the machine)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def parser(doc: str | None, rows: int, repeat: int) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=rows)
    ap.add_argument("--repeat", type=int, default=repeat)
    ap.add_argument("--out", default="benchmarks/results")
    return ap


def save(out_dir: str, name: str, payload: dict) -> str:
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name)
    with open(path, "w") as fh:
        json.dump({"machine": platform.platform(), "cpus": os.cpu_count(), **payload}, fh, indent=2)
    print(f"saved {path}")
    return path


def spark_session(memory: str = "6g", master: str = "local[2]", extension: bool = False,
                  conf: dict[str, str] | None = None):
    """A local SparkSession with the carbondata source registered, workers on this interpreter
    (``extension``: with the carbon-ds Catalyst extension, carbon_ds.configure_spark; ``conf``: more settings)."""
    import sys

    from pyspark.sql import SparkSession

    import carbon_ds

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need this interpreter's packages
    builder = carbon_ds.configure_spark(SparkSession.builder) if extension else SparkSession.builder
    builder = (
        builder.master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", memory)
        .config("spark.sql.shuffle.partitions", "2")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    carbon_ds.register(spark)
    return spark
