"""A core/v1 Event, parsed: what happened to an object, when, how often, and who said so.

Both Event shapes the core/v1 API returns are read: `lastTimestamp`/`count` (legacy recorders)
and `eventTime`/`series` (events.k8s.io recorders, which Kueue's controller-runtime uses).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kueuetop.kueue.fields import parse_time_or_none

# The field selector a console's Events watch uses. Kueue's scheduler records a "Pending" Event
# on a pending Workload each time its reason changes (pkg/scheduler/scheduler.go
# requeueAndUpdate: recorder.Eventf(wl, Normal, "Pending", …)): on a cluster with thousands
# waiting that is most of the Event traffic, and would push every other Event out of the
# console's bound (sources/event_retention.py). Each says what explain says better; a workload's
# own are fetched with its detail (sources/object_events.py). `--all-events` watches them too.
WITHOUT_KUEUE_PENDING = "reason!=Pending"


@dataclass(frozen=True, slots=True)
class ObjectEvent:
    time: float | None  # the last time it happened
    type: str  # Normal / Warning
    reason: str
    message: str
    count: int
    source: str  # reporting component


def _int(raw: Any, default: int) -> int:
    try:
        return int(raw)
    except (TypeError, ValueError):
        return default


def parse_event(item: Mapping[str, Any]) -> ObjectEvent:
    series = item.get("series") if isinstance(item.get("series"), Mapping) else {}
    when = (parse_time_or_none(series.get("lastObservedTime")) or parse_time_or_none(item.get("lastTimestamp"))
            or parse_time_or_none(item.get("eventTime")) or parse_time_or_none(item.get("firstTimestamp"))
            or parse_time_or_none((item.get("metadata") or {}).get("creationTimestamp")))
    count = _int(series.get("count"), 0) or _int(item.get("count"), 1) or 1
    source = item.get("reportingComponent") or (item.get("source") or {}).get("component") or ""
    return ObjectEvent(when, str(item.get("type") or ""), str(item.get("reason") or ""),
                       str(item.get("message") or ""), count, str(source))


def safe_event(raw: object) -> ObjectEvent:
    """`parse_event` that never raises: a malformed Event (fields of the wrong type) reads as
    an Event without time, type or text rather than stopping the informer or the view."""
    if isinstance(raw, dict):
        try:
            return parse_event(raw)
        except (AttributeError, TypeError, ValueError):
            pass
    return ObjectEvent(None, "", "", "", 1, "")
