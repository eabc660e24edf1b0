"""Named fault-injection points, so crash tests can stop a protocol between any two of its steps.

Production code calls ``point("name")`` at each step of a commit protocol (a no-op unless a test installed
a hook); tests use ``with inject(hook): ...`` where ``hook(name)`` may raise to simulate a crash there.
The points: ``load.segment_file``, ``load.index_moved``, ``load.before_status``, ``load.committed``
(partitioned loads), ``dml.deltas_written``, ``dml.before_status`` (DELETE / UPDATE),
``merge.joined`` (MERGE, after the join, before any file), ``schema.before_write``, ``schema.after_write`` (schema changes), ``stream.committed`` (a streaming
micro-batch's commit point just passed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

_hook: Callable[[str], None] | None = None


def point(name: str) -> None:
    """A step named ``name`` is about to run (or just ran); tests may raise here."""
    if _hook is not None:
        _hook(name)


@contextmanager
def inject(hook: Callable[[str], None]) -> Iterator[None]:
    """Call ``hook(name)`` at every fault point while the block runs."""
    global _hook
    previous, _hook = _hook, hook
    try:
        yield
    finally:
        _hook = previous
