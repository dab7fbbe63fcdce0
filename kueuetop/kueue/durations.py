"""Durations as scenario files, Kueue's Configuration and the CLI write them.

`parse_duration` reads Go-style durations ("30s", "5m", "1h30m", "250ms", "1.5h") and plain
numbers (seconds) into float seconds; `format_duration` writes seconds back in the same
style, choosing the shortest exact form ("1h30m", "250ms", "0s").
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from types import MappingProxyType

# Unit → seconds; Go's time.ParseDuration units (µ and μ are both accepted by Go).
_UNITS: Mapping[str, float] = MappingProxyType({
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
})

_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+")

# Go's time.Duration is int64 nanoseconds: ParseDuration answers "invalid duration" past ~292 years.
MAX_SECONDS = (2**63 - 1) / 1e9


class DurationError(ValueError):
    """A value that is not a duration."""


def parse_duration(value: str | int | float) -> float:
    """Seconds in `value`: "30s", "5m", "1h30m", "250ms", "2h", "1.5h", "0", or a number.

    Negative, infinite and NaN durations are rejected; so are bools and empty strings.
    """
    if isinstance(value, bool):
        raise DurationError(f"invalid duration {value!r}")
    if isinstance(value, int | float):
        # A huge int is compared as an int: float() of it would overflow.
        if (isinstance(value, float) and not math.isfinite(value)) or not 0 <= value <= MAX_SECONDS:
            raise DurationError(f"invalid duration {_short(value)}")
        return float(value)
    if not isinstance(value, str):
        raise DurationError(f"invalid duration {value!r}")
    text = value.strip()
    if _NUMBER.fullmatch(text):
        # A bare number means seconds (Go would only take "0"; being lenient is harmless).
        seconds = float(text)
        if seconds > MAX_SECONDS:
            raise DurationError(f"invalid duration {_short(value)}: longer than Go's maximum (about 292 years)")
        return seconds
    pos = 0
    total = 0.0
    for match in _PART.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos == 0 or pos != len(text):
        raise DurationError(f"invalid duration {_short(value)}")
    if total > MAX_SECONDS:
        raise DurationError(f"invalid duration {_short(value)}: longer than Go's maximum (about 292 years)")
    return total


def _short(value: object) -> str:
    """`value` quoted for an error line, cut so a 5,000-digit input does not flood it."""
    text = repr(value) if not isinstance(value, str) else f'"{value}"'
    return text if len(text) <= 40 else f"{text[:37]}…"


def format_duration(seconds: float) -> str:
    """Compact form of `seconds`: 5400 → "1h30m", 0.25 → "250ms", 90.5 → "1m30.5s".

    Values are rounded to the millisecond; `parse_duration(format_duration(x))` gives `x`
    back to within a millisecond.
    """
    if isinstance(seconds, bool) or not math.isfinite(seconds):
        raise DurationError(f"invalid duration {seconds!r}")
    sign = "-" if seconds < 0 else ""
    ms = round(abs(seconds) * 1000)
    if ms == 0:
        return "0s"
    if ms < 1000:
        return f"{sign}{ms}ms"
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    out = sign
    if hours:
        out += f"{hours}h"
    if minutes:
        out += f"{minutes}m"
    if secs or millis:
        out += f"{secs}.{millis:03d}".rstrip("0").rstrip(".") + "s"
    return out
