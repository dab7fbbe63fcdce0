"""Moments in a recording as people type them: `03:12`, `-2h`, `+10m`, an ISO time, `start`, `end`.

* `HH:MM[:SS]`: that time of day (local time), its first occurrence within the recording;
* `-DURATION`: before the recording's end (`-2h`, `-90s`); `+DURATION`: after its start;
* an ISO 8601 time (`2026-11-27T03:12:00Z`, an offset, or local time without one);
* `start`, `end`.

Pure: the time zone comes in as an argument (None: this machine's).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, tzinfo

from kueuetop.kueue.durations import parse_duration

_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}(?:\.\d+)?))?$")


class MomentError(ValueError):
    """`str()` is one line for people."""


def _fmt(t: float, tz: tzinfo | None) -> str:
    return datetime.fromtimestamp(t, tz).strftime("%Y-%m-%d %H:%M:%S")


def parse_moment(text: str, start: float, end: float, tz: tzinfo | None = None) -> float:
    """Epoch seconds of `text` within [start, end]; MomentError when it is not a moment or outside."""
    s = text.strip()
    span = f"the recording runs from {_fmt(start, tz)} to {_fmt(end, tz)}"
    if s == "start":
        return start
    if s in ("end", ""):
        return end
    if s[0] in "+-":
        try:
            d = parse_duration(s[1:])
        except ValueError as exc:
            raise MomentError(f"invalid moment {text!r}: {exc}") from None
        t = start + d if s[0] == "+" else end - d
        if not start <= t <= end:
            raise MomentError(f"{text} is outside the recording ({span})")
        return t
    m = _CLOCK.match(s)
    if m is not None:
        h, mi, sec = int(m[1]), int(m[2]), float(m[3] or 0)
        if h > 23 or mi > 59 or sec >= 60:
            raise MomentError(f"invalid time of day {text!r}")
        day = datetime.fromtimestamp(start, tz).replace(hour=0, minute=0, second=0, microsecond=0)
        while day.timestamp() <= end:
            t = (day + timedelta(hours=h, minutes=mi, seconds=sec)).timestamp()
            if start <= t <= end:
                return t
            day += timedelta(days=1)
        raise MomentError(f"{text} is not within the recording ({span})")
    try:
        when = datetime.fromisoformat(s.replace("z", "Z"))
    except ValueError:
        raise MomentError(f"invalid moment {text!r}: use HH:MM, -2h, +10m, an ISO time, start or end") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=tz) if tz is not None else when.astimezone()
    t = when.timestamp()
    if not start <= t <= end:
        raise MomentError(f"{text} is outside the recording ({span})")
    return t


def utc(t: float) -> str:
    """An exact ISO time for `t` (what --at accepts back)."""
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")
