"""Spark confs set for a block of a test and put back after (shared by the Spark tests)."""

from __future__ import annotations

from contextlib import contextmanager


@contextmanager
def confs(spark, **values):
    """Sets ``values`` (conf name: value) on the session for the block, then restores what was there."""
    old = {k: spark.conf.get(k, None) for k in values}
    for k, v in values.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)
