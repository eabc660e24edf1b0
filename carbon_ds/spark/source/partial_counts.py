"""Rows counted by group in a read task, for the Spark extension's partial counts (jvm/src PartialCounts).

A relation with option ``partial_counts`` (``{"keys": [{"column": c}, {"column": ts, "day": {...}}, ...],
"v": 1}``, carbon_ds.spark.bridge.protocol.PartialCountsSpec; a text without ``v`` is version 1) declares the
keys and a count, and its tasks hand Spark one
row per group of the rows they read (after deletes and the relation's own filter, as any read), which Spark
sums. A key is a column's value or the day
of a timestamp in a time zone: Spark's cast of a timestamp to a date (``to_date(ts)``, DateTimeUtils'
microsToDays), the floor of the epoch time moved by the zone's UTC offset at that instant. The JVM sends the
offsets and the instants they change at (``{"offsets": [o0, o1, ...], "at": [t1, ...]}``, epoch seconds,
its own zone rules); past ``"until"`` (a zone still changing its clocks then) the system's time zone
database gives the offsets of ``"zone"``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from carbon_ds.errors import CarbonOptionError
from carbon_ds.names import PARTIAL_COUNTS_OPTION
from carbon_ds.spark.bridge.protocol import VERSION, Day, PartialCountsSpec, from_json
from carbon_ds.table.meta.handle import resolve_columns
from carbon_ds.table.meta.schema.conform import conform

_UNITS_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


@dataclass(frozen=True)
class Zone:
    """UTC offsets in seconds: ``offsets[0]`` before ``at[0]``, ``offsets[i]`` from ``at[i - 1]`` on, until
    ``until`` (None: for ever), after which the time zone database's ``name`` says."""

    offsets: tuple[int, ...]
    at: tuple[int, ...] = ()
    until: int | None = None
    name: str | None = None

    @staticmethod
    def fixed(seconds: int) -> Zone:
        return Zone((seconds,))


@dataclass(frozen=True)
class Key:
    column: str  # in the table's spelling
    day: Zone | None = None  # None: the column's value; else the day of the time in this zone


def parse(text: str | None, schema: pa.Schema) -> list[Key] | None:
    """The keys option ``partial_counts`` asks for, checked against the table's columns; None without it."""
    if not text:
        return None
    shown = text if len(text) <= 200 else text[:200] + "..."
    try:
        spec = from_json(PartialCountsSpec, text)
        entries = [(k.column, None if k.day is None else _zone(k.day)) for k in spec.keys]
    except ValueError as e:  # CarbonOptionError of the decode too: one message names the option's form
        raise CarbonOptionError(f"option {PARTIAL_COUNTS_OPTION}={shown!r}: expected "
                                f"{{\"keys\": [{{\"column\": name}} or "
                                f"{{\"column\": name, \"day\": {{\"offsets\": [...], \"at\": [...]}}}}, ...]}} "
                                f"({e})") from None
    if spec.v != VERSION:  # the keys of another version's spec may mean something else
        raise CarbonOptionError(f"option {PARTIAL_COUNTS_OPTION}={shown!r}: expected version {VERSION} "
                                f"(this package's), found {spec.v}")
    if not entries:
        raise CarbonOptionError(f"option {PARTIAL_COUNTS_OPTION}={shown!r}: no key")
    names = resolve_columns(schema, [c for c, _ in entries], f"option {PARTIAL_COUNTS_OPTION}")
    keys = []
    for name, (_column, zone) in zip(names, entries, strict=True):
        t = schema.field(name).type
        if zone is not None and not pa.types.is_timestamp(t):
            raise CarbonOptionError(f"option {PARTIAL_COUNTS_OPTION}: the day of column {name!r} ({t}); "
                                    "expected a timestamp column")
        keys.append(Key(name, zone))
    return keys


def _zone(day: Day) -> Zone:
    """A key's zone from its request, checked: offsets within 18 hours, one more than the rising instants."""
    offsets, at, until, name = day.offsets, day.at, day.until, day.zone
    if (len(offsets) != len(at) + 1 or any(abs(o) > 18 * 3600 for o in offsets)
            or any(b <= a for a, b in zip(at, at[1:], strict=False)) or (until is not None and not name)):
        raise ValueError("expected whole-second offsets within 18 hours, one more than the rising instants "
                         "they change at, and a zone name with 'until'")
    return Zone(offsets, at, until, name)


def columns(keys: list[Key]) -> list[str]:
    """The table columns the keys read, each once."""
    return list(dict.fromkeys(k.column for k in keys))


def _day(values: pa.Array, zone: Zone) -> pa.Array:
    """date32 of each timestamp in ``zone``: the floor of its time moved by the offset then (also before 1970)."""
    units = _UNITS_PER_SECOND[values.type.unit]
    raw = pc.fill_null(values.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
    if len(zone.offsets) == 1:
        moved = raw + zone.offsets[0] * units
    else:
        seconds = np.floor_divide(raw, units)
        offsets = np.asarray(zone.offsets, np.int64)[np.searchsorted(np.asarray(zone.at, np.int64), seconds,
                                                                     side="right")]
        moved = raw + offsets * units
    days = np.floor_divide(moved, 86_400 * units).astype(np.int32)
    if zone.until is not None:
        late = raw >= zone.until * units
        if late.any():  # past the instants sent: the time zone database's rules for the zone
            local = pc.local_timestamp(values.cast(pa.timestamp(values.type.unit, tz=zone.name)))
            days = np.where(late, local.cast(pa.date32()).cast(pa.int32()).fill_null(0).to_numpy(), days)
    mask = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None
    return pa.array(days, pa.int32(), mask=mask).cast(pa.date32())


def _groups(table: pa.Table, keys: list[Key], target: pa.Schema) -> pa.Table:
    """One unit's rows counted by key, as ``target`` declares them."""
    cols = {}
    for i, key in enumerate(keys):
        values = table.column(key.column).combine_chunks()
        cols[f"k{i}"] = values if key.day is None else _day(values, key.day)
    names = list(cols)
    counted = pa.table(cols).group_by(names, use_threads=False).aggregate([([], "count_all")])
    counted = counted.select(names).append_column("n", counted.column("count_all"))
    return conform(counted.rename_columns(target.names), target)


def counts(tables: Iterable[pa.Table], keys: list[Key], target: pa.Schema) -> pa.Table:
    """The rows of ``tables`` counted by ``keys``, as ``target`` declares them (the keys, then the count)."""
    parts = [_groups(t, keys, target) for t in tables if t.num_rows]
    if len(parts) < 2:
        return parts[0] if parts else target.empty_table()
    keys_out, count_out = target.names[:-1], target.names[-1]
    summed = pa.concat_tables(parts).group_by(keys_out, use_threads=False).aggregate([(count_out, "sum")])
    merged = summed.select(keys_out).append_column(count_out, summed.column(f"{count_out}_sum"))
    return conform(merged, target)
