"""Run a scenario headless in virtual time (`kueuetop sim run`); the cluster comes from `sim.wiring`."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kueuetop.sim.clock import SimClock
from kueuetop.sim.report import build_report
from kueuetop.sim.scenarios.scenario import Scenario
from kueuetop.sim.wiring import SimParts, build_cluster

# A fixed epoch for virtual runs makes reports reproducible: 2026-01-01T00:00:00Z.
VIRTUAL_EPOCH = 1_767_225_600.0


def run_scenario(scenario: Scenario, duration: float, *, until_idle: bool = False,
                 record_events: bool = True,
                 on_built: Callable[[SimParts], None] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run in virtual time; returns (report, stats). `on_built`: called with the cluster before
    it runs (to watch its store)."""
    clock = SimClock(VIRTUAL_EPOCH)
    parts = build_cluster(scenario, clock, record_events=record_events)
    if on_built is not None:
        on_built(parts)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    parts.cluster.run_for(duration, until_idle=until_idle)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    store = parts.cluster.store
    wls, _ = store.list("kueue.x-k8s.io", "workloads", copy=False)
    cqs, _ = store.list("kueue.x-k8s.io", "clusterqueues", copy=False)
    lqs, _ = store.list("kueue.x-k8s.io", "localqueues", copy=False)
    faults = parts.extra.get("node-faults")
    errors = parts.cluster.errors + parts.actions.errors + (faults.errors if faults is not None else []) + [f"malformed {k}: {v}" for k, v in parts.kueue.broken.items()]
    report = build_report(scenario.name, clock.start, clock.now(), wls, cqs, lqs, parts.recorder.events, errors)
    stats = {"wallSeconds": round(wall, 3), "cpuSeconds": round(cpu, 3), "cycles": parts.kueue.cycles,
             "simulatedSeconds": round(clock.now() - clock.start, 3)}
    return report, stats
