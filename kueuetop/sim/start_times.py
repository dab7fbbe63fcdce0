"""When each workload of a simulated run started: the first of its pods to run (what the people
waiting for it see), else its first admission when no pod of it was seen (a workload without
pods, or pods this watcher cannot tie to it). `sim run --from-recording --with` compares two runs
by these.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from kueuetop.sim.scenarios.scenario import Scenario
from kueuetop.sim.storage.objectstore import WatchEvent

Key = tuple[str, str]


@dataclass
class PodStarts:
    """Watches a simulated store: the first moment (seconds since `start`) a pod owned by each
    Workload had a startTime."""

    clock: Any  # SimClock
    start: float
    first: dict[Key, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind.kind != "Pod" or ev.type not in ("ADDED", "MODIFIED"):
            return
        if not (ev.obj.get("status") or {}).get("startTime"):
            return
        meta = ev.obj.get("metadata") or {}
        for owner in meta.get("ownerReferences") or ():
            if owner.get("kind") == "Workload" and owner.get("name"):
                key = (str(meta.get("namespace") or ""), str(owner["name"]))
                with self._lock:
                    self.first.setdefault(key, self.clock.now() - self.start)


@dataclass(frozen=True)
class RunStarts:
    created: dict[Key, float]  # seconds since the run's start
    started: dict[Key, float]
    cluster_queue: dict[Key, str]
    report: dict[str, Any]  # the ordinary `sim run` report of the run


def run_starts(scenario: Scenario, duration: float) -> RunStarts:
    """Run `scenario` for `duration` simulated seconds and say when each workload started."""
    from kueuetop.sim.runner import run_scenario

    watchers: list[PodStarts] = []

    def watch(parts: Any) -> None:
        clock = parts.cluster.clock
        w = PodStarts(clock, clock.start)
        parts.cluster.store.subscribe(w.on_event)
        watchers.append(w)

    report, stats = run_scenario(scenario, duration, on_built=watch)
    report["run"] = stats
    created: dict[Key, float] = {}
    admitted: dict[Key, float] = {}
    cqs: dict[Key, str] = {}
    for e in report.get("events") or ():
        key = (e["namespace"], e["name"])
        if e["type"] == "created":
            created.setdefault(key, float(e["time"]))
        elif e["type"] == "admitted":
            admitted.setdefault(key, float(e["time"]))
            cqs.setdefault(key, e.get("clusterQueue") or "")
    for row in report.get("workloads") or ():
        key = (row["namespace"], row["name"])
        if row.get("clusterQueue") and not cqs.get(key):
            cqs[key] = row["clusterQueue"]
    pods = watchers[0].first if watchers else {}
    started = {k: pods.get(k, t) for k, t in admitted.items()}
    return RunStarts(created, started, cqs, report)
