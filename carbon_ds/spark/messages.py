"""Our error messages through Spark: short inside the Python workers, first on the driver.

Spark wraps anything a Python data source raises into its own error whose text is a traceback with our
message at the very end. Two measures keep the message in front of the user:

- ``entry_point`` (on every data source entry point) re-raises a carbon-ds error from the entry point
  itself, so the traceback Spark ships is one frame long instead of the whole call chain (and, after the
  call, keeps a reused worker's heap out of its per-call collection: ``carbon_ds.spark.worker_heap``);
- ``surface`` (around ``carbon_ds.sql`` and ``carbon_ds.read``) finds a carbon-ds error inside a Spark
  error and raises it again as the same carbon-ds type, with our message as its first line and Spark's
  error kept as the cause; a Python worker that cannot import carbon-ds at all (``PYSPARK_PYTHON`` not the
  Python carbon-ds is installed in) becomes one CarbonDependencyError line (``missing_in_workers``).
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from carbon_ds import errors
from carbon_ds.errors import CarbonError
from carbon_ds.spark import worker_heap

F = TypeVar("F", bound=Callable[..., Any])

# "carbon_ds.errors.CarbonTableError: <message>" up to Spark's own trailer (SQLSTATE, JVM frames)
_OURS = re.compile(r"carbon_ds\.errors\.(?P<kind>Carbon\w*Error): (?P<message>.*?)"
                   r"(?=\n\s*SQLSTATE:|\n\s*at |\n\s*JVM stacktrace:|\n\n|\Z)", re.DOTALL)
_NO_MODULE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")


def entry_point(fn: F) -> F:
    """Re-raise carbon-ds errors from ``fn`` with a one-frame traceback (generators too); settle the worker's
    heap when it returns (``worker_heap.settle``: nothing outside a PySpark daemon worker)."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def stream(*args: Any, **kwargs: Any) -> Iterator[Any]:
            try:
                yield from fn(*args, **kwargs)
            except CarbonError as exc:
                raise exc.with_traceback(None) from None
            finally:
                worker_heap.settle()
        return stream  # type: ignore[return-value]

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except CarbonError as exc:
            raise exc.with_traceback(None) from None
        finally:
            worker_heap.settle()
    return call  # type: ignore[return-value]


def ours(exc: BaseException) -> CarbonError | None:
    """The carbon-ds error a Spark error carries in its text (the innermost one), or None."""
    if isinstance(exc, CarbonError):
        return None
    found = list(_OURS.finditer(str(exc)))
    if not found:
        return None
    kind = getattr(errors, found[-1].group("kind"), None)
    if not (isinstance(kind, type) and issubclass(kind, CarbonError)):
        return None
    return kind(found[-1].group("message").strip())


def missing_in_workers(exc: BaseException) -> CarbonError | None:
    """A Python worker that could not import carbon-ds (or what it needs) as one line, or None."""
    text = str(exc)
    found = _NO_MODULE.search(text)
    if found is None or "carbon_ds" not in text and "pyspark_carbondata" not in text:
        return None
    return errors.CarbonDependencyError(
        f"Spark's Python workers cannot import carbon-ds (No module named {found.group(1)!r}); expected them to "
        "run the Python carbon-ds is installed in: set PYSPARK_PYTHON to it (on every worker) before creating "
        "the SparkSession" + errors.see("cluster.md"))


@contextmanager
def surface() -> Iterator[None]:
    """Raise a carbon-ds error that Spark wrapped as that error (Spark's error becomes its cause)."""
    try:
        yield
    except CarbonError:
        raise
    except Exception as exc:
        mine = ours(exc) or missing_in_workers(exc)
        if mine is None:
            raise
        raise mine from exc
