"""Progress bars for long pure-Python work (writes, ADD SEGMENT checks, CLEAN FILES, DELETE/UPDATE scans).

A bar shows only on a terminal (tqdm's own test of stderr); ``CARBON_DS_PROGRESS=0`` in the environment or
``carbon_ds.progress.enabled = False`` turns bars off everywhere, ``=1`` forces them on.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")

enabled: bool | None = None  # None: on a terminal only

# the bar of the write running in this context: the writers' inner loop advances it page by page, so one
# large batch moves the bar too (a bar counting batches would jump once, at the end)
_rows_bar: ContextVar[tqdm | None] = ContextVar("carbon_ds_rows_bar", default=None)


def _disable() -> bool | None:
    env = os.environ.get("CARBON_DS_PROGRESS", "").strip().lower()
    if enabled is False or env in ("0", "false", "no", "off"):
        return True
    if enabled is True or env in ("1", "true", "yes", "on"):
        return False
    return None  # tqdm: off when stderr is not a terminal


def progress(items: Iterable[T], desc: str, total: int | None = None, unit: str = "it",
             min_items: int = 2) -> Iterator[T]:
    """``items`` with a progress bar named ``desc``; short runs (fewer than ``min_items``) show none."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    if total is not None and total < min_items:
        yield from items
        return
    with tqdm(items, desc=desc, total=total, unit=unit, disable=_disable(), leave=False, dynamic_ncols=True) as bar:
        yield from bar


def row_progress(batches: Iterable[T], desc: str) -> Iterator[T]:
    """Batches (Arrow tables or record batches) with a bar counting their rows."""
    disable = _disable()
    with tqdm(desc=desc, unit=" rows", unit_scale=True, disable=disable, leave=False, dynamic_ncols=True) as bar:
        for b in batches:
            yield b
            bar.update(getattr(b, "num_rows", 0))


@contextmanager
def rows_written(desc: str, total: int | None = None) -> Iterator[None]:
    """A bar counting the rows the writers encode inside the block (``advance``); ``total``: rows expected."""
    disable = _disable()
    with tqdm(desc=desc, total=total, unit=" rows", unit_scale=True, disable=disable, leave=False,
              dynamic_ncols=True) as bar:
        token = _rows_bar.set(None if bar.disable else bar)
        try:
            yield
        finally:
            _rows_bar.reset(token)


def advance(rows: int) -> None:
    """``rows`` more rows written, on the bar of the enclosing ``rows_written`` (if any)."""
    bar = _rows_bar.get()
    if bar is not None:
        bar.update(rows)


@contextmanager
def phase(text: str) -> Iterator[None]:
    """Say ``text`` on the enclosing ``rows_written`` bar while a step that writes no rows runs (a load's sort):
    a bar standing at 0% then says why instead of looking stuck."""
    bar = _rows_bar.get()
    if bar is None:
        yield
        return
    bar.set_postfix_str(text, refresh=True)
    try:
        yield
    finally:
        bar.set_postfix_str("", refresh=True)
