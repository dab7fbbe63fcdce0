"""The simulation's event log, read off Workload condition transitions in the store.

It watches what any client would see, so it records the same story whether Kueue's decisions
came from the embedded controller, a scripted action or a kubectl patch.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from kueuetop.sim.storage.objectstore import WatchEvent

ADMITTED, QUOTA_RESERVED, EVICTED, PREEMPTED, FINISHED, DEACTIVATED, CREATED = (
    "admitted", "quotaReserved", "evicted", "preempted", "finished", "deactivated", "created")


@dataclass(frozen=True, slots=True)
class SimEvent:
    time: float  # simulated seconds since the scenario started
    type: str
    namespace: str
    name: str
    cluster_queue: str = ""
    reason: str = ""
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        out = {"time": round(self.time, 3), "type": self.type, "namespace": self.namespace, "name": self.name}
        if self.cluster_queue:
            out["clusterQueue"] = self.cluster_queue
        if self.reason:
            out["reason"] = self.reason
        if self.message:
            out["message"] = self.message
        return out


def _conds(obj: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    if not obj:
        return {}
    status = obj.get("status") or {}
    return {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}


def _became_true(old: dict, new: dict, type_: str) -> dict | None:
    c = new.get(type_)
    if c and c.get("status") == "True":
        prev = old.get(type_)
        if not prev or prev.get("status") != "True":
            return c
    return None


@dataclass
class EventRecorder:
    start: float
    events: list[SimEvent] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    clock: Any = None  # SimClock; times are taken from it when set

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind.kind != "Workload" or ev.type not in ("ADDED", "MODIFIED"):
            return
        new, old = ev.obj, ev.old
        meta = new.get("metadata") or {}
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        t = (self.clock.now() if self.clock is not None else self.start) - self.start
        cq = ((new.get("status") or {}).get("admission") or {}).get("clusterQueue", "")
        old_cq = (((old or {}).get("status") or {}).get("admission") or {}).get("clusterQueue", "")
        nc, oc = _conds(new), _conds(old)
        out: list[SimEvent] = []
        if ev.type == "ADDED":
            out.append(SimEvent(t, CREATED, ns, name))
        c = _became_true(oc, nc, "QuotaReserved")
        if c:
            out.append(SimEvent(t, QUOTA_RESERVED, ns, name, cq, c.get("reason", ""), c.get("message", "")))
        c = _became_true(oc, nc, "Admitted")
        if c:
            out.append(SimEvent(t, ADMITTED, ns, name, cq, c.get("reason", ""), c.get("message", "")))
        c = _became_true(oc, nc, "Evicted")
        if c:
            out.append(SimEvent(t, EVICTED, ns, name, cq or old_cq, c.get("reason", ""), c.get("message", "")))
            p = _became_true(oc, nc, "Preempted")
            if p:
                out.append(SimEvent(t, PREEMPTED, ns, name, cq or old_cq, p.get("reason", ""), p.get("message", "")))
        c = _became_true(oc, nc, "Finished")
        if c:
            out.append(SimEvent(t, FINISHED, ns, name, cq or old_cq, c.get("reason", ""), c.get("message", "")))
        was_active = ((old or {}).get("spec") or {}).get("active", True) is not False
        if old is not None and was_active and (new.get("spec") or {}).get("active", True) is False:
            out.append(SimEvent(t, DEACTIVATED, ns, name, cq or old_cq))
        if out:
            with self._lock:
                self.events.extend(out)
