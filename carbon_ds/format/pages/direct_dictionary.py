"""Direct-dictionary TIMESTAMP surrogates: how CarbonData maps a stored key back to a time.

Tables created through CarbonData's Spark SQL (1.x and 2.x) give every TIMESTAMP dimension the encodings
DICTIONARY + DIRECT_DICTIONARY; their pages hold int keys. Java's ``TimeStampDirectDictionaryGenerator``
(core/keygenerator/directdictionary/timestamp) defines them:

* ``getValueFromSurrogate(key)`` = ``(key - 2) * granularity + cutOff`` epoch milliseconds; key 1
  (``CarbonCommonConstants.DIRECT_DICT_VALUE_NULL``) is null;
* ``generateKey`` stored a time before the cut-off as null (its key would be negative);
* granularity comes from the JVM's ``carbon.timegranularity`` (``TimeStampGranularityConstants``:
  SECOND, MINUTE, HOUR, DAY = ``TimeStampGranularityTypeValue`` 1000, 60000, 3600000, 86400000 ms; anything
  else means SECOND) and the cut-off from ``carbon.cutOffTimestamp`` (unset: 0), parsed in the writer's
  ``carbon.timestamp.format`` (default ``yyyy-MM-dd HH:mm:ss``).

Nothing in the table records the two settings, so a table written under others must be read with the
same ones. Like CarbonData's carbon.properties the setting is process-wide (``use``; Python API
``carbon_ds.set_timestamp_keys``); Spark reads take read options ``timestamp_granularity`` and
``cutoff_timestamp`` and set it in each task.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from carbon_ds.errors import CarbonOptionError

NULL_KEY = 1  # CarbonCommonConstants.DIRECT_DICT_VALUE_NULL
GRANULARITY_MS = {"SECOND": 1000, "MINUTE": 60_000, "HOUR": 3_600_000, "DAY": 86_400_000}
GRANULARITY_OPTION = "timestamp_granularity"  # CarbonData's carbon.timegranularity
CUTOFF_OPTION = "cutoff_timestamp"  # CarbonData's carbon.cutOffTimestamp


@dataclass(frozen=True)
class TimestampKeys:
    """The granularity and cut-off (both in milliseconds) a table's timestamp keys were made with."""

    granularity_ms: int = 1000
    cutoff_ms: int = 0

    @classmethod
    def from_options(cls, options: dict[str, str] | None) -> TimestampKeys:
        """From read options: ``timestamp_granularity`` SECOND|MINUTE|HOUR|DAY (any case), ``cutoff_timestamp``
        ``yyyy-MM-dd HH:mm:ss`` (UTC unless it names an offset, e.g. ``+08:00``) or epoch milliseconds."""
        opts = {k.lower(): v for k, v in (options or {}).items() if v is not None}
        gran = str(opts.get(GRANULARITY_OPTION, "SECOND")).strip().upper()
        if gran not in GRANULARITY_MS:
            raise CarbonOptionError(
                f"read option {GRANULARITY_OPTION!r} must be one of {', '.join(GRANULARITY_MS)} "
                f"(CarbonData's carbon.timegranularity), found {opts[GRANULARITY_OPTION]!r}"
            )
        cutoff = opts.get(CUTOFF_OPTION)
        return cls(GRANULARITY_MS[gran], 0 if cutoff is None else _cutoff_ms(str(cutoff)))


def _cutoff_ms(text: str) -> int:
    t = text.strip()
    if t.lstrip("-").isdigit():
        return int(t)
    try:
        when = dt.datetime.fromisoformat(t)
    except ValueError:
        raise CarbonOptionError(
            f"read option {CUTOFF_OPTION!r} must be 'yyyy-MM-dd HH:mm:ss' (CarbonData's carbon.cutOffTimestamp) "
            f"or epoch milliseconds, found {text!r}"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


DEFAULT = TimestampKeys()
_current = DEFAULT


def current() -> TimestampKeys:
    """The setting pages are decoded with."""
    return _current


def use(keys: TimestampKeys) -> None:
    """Decode direct-dictionary timestamps of the files opened from now on in this process with ``keys``."""
    global _current
    _current = keys
