"""What the simulated controllers write besides their objects: v1 Events and status conditions.

`EventWriter` records core/v1 Events the way client-go's recorder does (name
`<object>.<hex nanoseconds>`, `involvedObject`, `source.component`, first/last timestamp,
`count`), each source through its own `EventCorrelator` (`event_correlator.py`): repeats are
count bumps, similar messages are combined, and a source's Events about one object are
rate-limited as client-go's spam filter does. The number kept is capped (oldest deleted first),
standing in for the API server's one-hour event TTL, so the 100,000-workload scenarios stay
within memory.

`set_condition` is apimachinery's `meta.SetStatusCondition`: the transition time only moves
when the status changes.
"""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from kueuetop.sim.kube.event_correlator import EventCorrelator
from kueuetop.sim.storage.objectstore import NotFound, ObjectStore, StoreError, rfc3339

_log = logging.getLogger(__name__)

Obj = dict[str, Any]

# Components as they appear in `kubectl describe` (source.component / reportingComponent).
KUEUE = "kueue-admission"
JOB_CONTROLLER = "job-controller"
SCHEDULER = "default-scheduler"
KUBELET = "kubelet"
CLUSTER_AUTOSCALER = "cluster-autoscaler"


def set_condition(conditions: list[Obj], type_: str, status: str, reason: str, message: str,
                  now: float, observed_generation: int | None = None) -> bool:
    """Add or update a condition in place; True if anything changed (meta.SetStatusCondition)."""
    for c in conditions:
        if isinstance(c, dict) and c.get("type") == type_:
            changed = False
            if c.get("status") != status:
                c["status"] = status
                c["lastTransitionTime"] = rfc3339(now)
                changed = True
            for key, value in (("reason", reason), ("message", message)):
                if c.get(key) != value:
                    c[key] = value
                    changed = True
            if observed_generation is not None and c.get("observedGeneration") != observed_generation:
                c["observedGeneration"] = observed_generation
                changed = True
            return changed
    cond: Obj = {"type": type_, "status": status, "lastTransitionTime": rfc3339(now),
                 "reason": reason, "message": message}
    if observed_generation is not None:
        cond["observedGeneration"] = observed_generation
    conditions.append(cond)
    return True


def find_condition(obj: Obj | None, type_: str) -> Obj | None:
    """The condition of that type in obj.status.conditions, tolerating malformed data."""
    status = (obj or {}).get("status")
    if not isinstance(status, dict):
        return None
    for c in status.get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == type_:
            return c
    return None


def condition_is(obj: Obj | None, type_: str, status: str = "True") -> bool:
    c = find_condition(obj, type_)
    return c is not None and c.get("status") == status


def conditions_of(status: Obj) -> list[Obj]:
    """status.conditions as a list that can be edited in place (created if missing)."""
    conds = status.get("conditions")
    if not isinstance(conds, list):
        conds = []
        status["conditions"] = conds
    return conds


def patch_status(store: ObjectStore, group: str, plural: str, namespace: str | None, name: str,
                 fn: Callable[[Obj], bool]) -> Obj | None:
    """Run fn(status dict) on the current object and store it through the status subresource
    when fn reports a change. Returns the stored object (read-only), or None when the object is
    gone or the write was refused."""
    def apply(cur: Obj) -> Obj:
        status = cur.get("status")
        if not isinstance(status, dict):
            status = {}
            cur["status"] = status
        fn(status)
        return cur

    try:
        return store.patch(group, plural, namespace, name, apply, status=True, copy=False)
    except NotFound:
        return None
    except StoreError as exc:
        _log.warning("status write to %s %s/%s refused: %s", plural, namespace, name, exc.message)
        return None


def write_condition(store: ObjectStore, group: str, plural: str, namespace: str | None, name: str,
                    type_: str, status: str, reason: str, message: str, now: float,
                    observed_generation: int | None = None) -> Obj | None:
    """set_condition on the stored object's status, written through the status subresource.

    Copy-on-write: only the status dict, its conditions list and the condition that changes
    are new; the rest (admission, checks...) is shared with the previous version. Returns the
    stored object (read-only), or None when it is gone or the write was refused."""
    def edit(cur: Any) -> Obj:
        st = dict(cur) if isinstance(cur, dict) else {}
        conds = st.get("conditions")
        st["conditions"] = [dict(c) if isinstance(c, dict) else c for c in conds] if isinstance(conds, list) else []
        set_condition(st["conditions"], type_, status, reason, message, now, observed_generation)
        return st

    try:
        return store.rewrite_status(group, plural, namespace, name, edit)
    except NotFound:
        return None
    except StoreError as exc:
        _log.warning("status write to %s %s/%s refused: %s", plural, namespace, name, exc.message)
        return None


class EventWriter:
    """Records v1 Events for the simulated controllers (see the module docstring)."""

    def __init__(self, store: ObjectStore, now: Callable[[], float], *, max_events: int = 5000,
                 enabled: bool = True) -> None:
        self.store = store
        self.now = now
        self.max_events = max_events
        self.enabled = enabled
        # (source, correlation key) → (namespace, event name) of the Events written, oldest first.
        self._recent: OrderedDict[tuple, tuple[str, str]] = OrderedDict()
        # One correlator per recording process: (component, host), as each has its own recorder.
        self._correlators: dict[tuple[str, str], EventCorrelator] = {}
        self._seq = 0

    def emit(self, obj: Obj, reason: str, message: str, *, type_: str = "Normal",
             component: str = KUEUE, host: str = "") -> None:
        """Record an Event about obj (an API object dict). Never raises."""
        if not self.enabled or not isinstance(obj, dict):
            return
        try:
            self._emit(obj, reason, message, type_, component, host)
        except Exception:  # events are best effort, as in client-go
            _log.exception("recording event %s failed", reason)

    def _emit(self, obj: Obj, reason: str, message: str, type_: str, component: str, host: str) -> None:
        meta = obj.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        now = self.now()
        correlator = self._correlators.get((component, host))
        if correlator is None:
            correlator = self._correlators[(component, host)] = EventCorrelator()
        c = correlator.correlate(now, (str(obj.get("kind", "")), str(meta.get("namespace", "")),
                                       str(meta.get("name", "")), uid, str(obj.get("apiVersion", ""))),
                                 type_, reason, message)
        if c.skip:
            return
        key = (component, host, *c.key)
        seen = self._recent.get(key)
        if seen is not None:
            ns, name = seen

            def bump(ev: Obj) -> Obj:
                ev["count"] = c.count
                ev["lastTimestamp"] = rfc3339(now)
                ev["message"] = c.message  # a combined Event carries the latest message
                return ev

            try:
                self.store.patch("", "events", ns, name, bump)
                self._recent.move_to_end(key)
                return
            except NotFound:  # expired: client-go creates it again, count kept
                del self._recent[key]
        namespace = str(meta.get("namespace") or "default")
        self._seq += 1
        # client-go names events "<object>.<UnixNano in hex>"; the sequence keeps names unique
        # when many events share one simulated instant.
        name = f"{meta.get('name', 'unknown')}.{int(now * 1e9) + self._seq:x}"
        event: Obj = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion", ""), "kind": obj.get("kind", ""),
                "namespace": meta.get("namespace", ""), "name": meta.get("name", ""),
                "uid": uid, "resourceVersion": meta.get("resourceVersion", ""),
            },
            "reason": reason, "message": c.message, "type": type_,
            "source": {"component": component, **({"host": host} if host else {})},
            "firstTimestamp": rfc3339(c.first), "lastTimestamp": rfc3339(now), "count": c.count,
            "reportingComponent": component, "reportingInstance": host,
        }
        if not meta.get("namespace"):
            event["involvedObject"].pop("namespace")
        self.store.create_object(event)
        self._recent[key] = (namespace, name)
        while len(self._recent) > self.max_events:
            _, (old_ns, old_name) = self._recent.popitem(last=False)
            with contextlib.suppress(StoreError):
                self.store.delete("", "events", old_ns, old_name)


class NullEvents(EventWriter):
    """An EventWriter that records nothing (scale runs, tests)."""

    def __init__(self) -> None:  # no store needed
        self.enabled = False

    def emit(self, obj: Obj, reason: str, message: str, *, type_: str = "Normal",
             component: str = KUEUE, host: str = "") -> None:
        return None
