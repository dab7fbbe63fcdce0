"""Assemble a simulated cluster from a scenario, and run one headless (`kueuetop sim run`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kueuetop.kueue.config import KueueConfig, parse_kueue_config
from kueuetop.sim.clock import SimClock
from kueuetop.sim.cluster import SimCluster
from kueuetop.sim.kueue.controller import KueueController
from kueuetop.sim.recorder import EventRecorder
from kueuetop.sim.report import build_report
from kueuetop.sim.scenarios.scenario import Scenario, ScenarioStep
from kueuetop.sim.scenarios.scripted_actions import ScriptedActions

# A fixed epoch for virtual runs makes reports reproducible: 2026-01-01T00:00:00Z.
VIRTUAL_EPOCH = 1_767_225_600.0
_SIM_ONLY_KINDS = {"NodePool", "SimConfig"}


@dataclass
class SimParts:
    cluster: SimCluster
    kueue: KueueController
    actions: ScriptedActions
    recorder: EventRecorder
    extra: dict[str, Any]


def kueue_config_fields(scenario: Scenario) -> dict[str, Any]:
    """The scenario's Kueue configuration, in Kueue's Configuration field names."""
    cfg = scenario.config or {}
    return dict(cfg.get("kueue") or {k: v for k, v in cfg.items()
                                     if k in ("fairSharing", "waitForPodsReady", "featureGates")})


def kueue_config_of(scenario: Scenario) -> KueueConfig:
    return parse_kueue_config(kueue_config_fields(scenario))


def build_cluster(scenario: Scenario, clock: SimClock, *, record_events: bool = True) -> SimParts:
    cluster = SimCluster(scenario, clock)
    store = cluster.store
    kueue = KueueController(store, kueue_config_of(scenario), record_events=record_events)
    _write_manager_config(store, kueue_config_fields(scenario))
    actions = ScriptedActions(store)
    recorder = EventRecorder(clock.start, clock=clock)
    store.subscribe(recorder.on_event)
    extra: dict[str, Any] = {}
    handlers: list[Callable[[ScenarioStep, float], bool]] = [actions.handle_step]
    for c in _workload_controllers(scenario, store, cluster, extra, handlers, record_events):
        cluster.add_controller(c)
    cluster.add_controller(kueue)
    cluster.add_controller(actions)

    def handle(step: ScenarioStep, now: float) -> bool:
        if any(h(step, now) for h in handlers):
            return True
        # SimConfig is read at build time; NodePools belong to the node pool controller.
        return step.obj is not None and step.obj.get("kind") in _SIM_ONLY_KINDS

    cluster.step_handler = handle
    return SimParts(cluster, kueue, actions, recorder, extra)


def _write_manager_config(store: Any, fields: dict[str, Any]) -> None:
    """Kueue's ConfigMap, as its manifests install it (read by the console like a real one's)."""
    from kueuetop.sim.kueue import configmap as KC

    if store.try_get("", "namespaces", None, KC.NAMESPACE, copy=False) is None:
        store.create("", "namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                        "metadata": {"name": KC.NAMESPACE}})
    store.create("", "configmaps", KC.manager_configmap(fields))


def _workload_controllers(scenario: Scenario, store, cluster: SimCluster, extra: dict, handlers: list,
                          record_events: bool) -> list:
    """Job/Pod integrations, provisioning, node pools and the kubelet (in that order)."""
    from kueuetop.sim.controllers_wiring import build

    return build(scenario, store, cluster, extra, handlers, record_events=record_events)


def run_scenario(scenario: Scenario, duration: float, *, until_idle: bool = False,
                 record_events: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run in virtual time; returns (report, stats)."""
    clock = SimClock(VIRTUAL_EPOCH)
    parts = build_cluster(scenario, clock, record_events=record_events)
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
