"""The Events of one object, fetched when asked (as `kubectl describe` does), not watched.

Watching every Event of a cluster with 20,000 Workloads would cost more memory than the rest of
the console; a detail screen asks for its object's Events with a field selector on
`involvedObject` and polls again while it is open (kueue/event.py reads each).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kueuetop.kueue.event import ObjectEvent, parse_event
from kueuetop.sources.kube_http import request

MAX_EVENTS = 200  # per object; a workload stuck pending for days collects many "Pending" events


def parse_events(items: Iterable[Any]) -> list[ObjectEvent]:
    """Events oldest first (no time: first); items that are not objects are skipped."""
    out = [parse_event(i) for i in items if isinstance(i, Mapping)]
    out.sort(key=lambda e: e.time or 0.0)
    return out[-MAX_EVENTS:]


def fetch_object_events(api: Any, namespace: str, kind: str, name: str, timeout: float = 10.0) -> list[ObjectEvent]:
    """GET the namespace's Events about `kind`/`name`; raises ApiError / transport errors."""
    path = f"/api/v1/namespaces/{namespace}/events"
    query = {"fieldSelector": f"involvedObject.kind={kind},involvedObject.name={name}"}
    body = request(api, path, query, timeout=timeout)
    items = body.get("items") if isinstance(body, Mapping) else None
    return parse_events(items if isinstance(items, list) else [])
