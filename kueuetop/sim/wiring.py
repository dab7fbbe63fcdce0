"""The one place that creates the simulated cluster's controllers and connects them.

Order matters: controllers reconcile in the order they are added, so within one instant the
pod/job integrations see Kueue's last writes before the kube-scheduler and kubelets run, and
Kueue's controller runs after all of them (then the scenario's scripted actions).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kueuetop.kueue.config import KueueConfig, parse_kueue_config
from kueuetop.sim.clock import SimClock
from kueuetop.sim.cloud.node_pools import NodePoolController
from kueuetop.sim.cloud.provisioning import ProvisioningAutoscaler
from kueuetop.sim.cluster import OneTurn, SimCluster
from kueuetop.sim.jobs.batch_job import JobIntegration
from kueuetop.sim.jobs.perf_runner import PerfRunner
from kueuetop.sim.jobs.pods import PodIntegration
from kueuetop.sim.kube.events import EventWriter
from kueuetop.sim.kube.kubelet import KubeNodes
from kueuetop.sim.kube.node_faults import NodeFaults
from kueuetop.sim.kueue import configmap as KC
from kueuetop.sim.kueue.controller import KueueController
from kueuetop.sim.kueue.provisioning_check import ProvisioningCheck
from kueuetop.sim.recorder import EventRecorder
from kueuetop.sim.scenarios.scenario import Scenario, ScenarioStep
from kueuetop.sim.scenarios.scripted_actions import ScriptedActions
from kueuetop.sim.storage.objectstore import ObjectStore

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
    for c in _workload_controllers(store, cluster, extra, handlers, record_events):
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


def _write_manager_config(store: ObjectStore, fields: dict[str, Any]) -> None:
    """Kueue's ConfigMap, as its manifests install it (read by the console like a real one's)."""
    if store.try_get("", "namespaces", None, KC.NAMESPACE, copy=False) is None:
        store.create("", "namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                        "metadata": {"name": KC.NAMESPACE}})
    store.create("", "configmaps", KC.manager_configmap(fields))


def _workload_controllers(store: ObjectStore, cluster: SimCluster, extra: dict[str, Any],
                          handlers: list[Callable[[ScenarioStep, float], bool]],
                          record_events: bool) -> list[Any]:
    """Node faults, the Pod and Job integrations, the perf runner, Kueue's provisioning check with
    the autoscaler answering its requests (one turn), node pools and the kube-scheduler with the kubelets, in the order
    they run (before Kueue's). Node faults see a step before anyone else and NodePool steps go to
    the node pools; the controllers are kept in `extra` by name for reports and the console."""
    events = EventWriter(store, cluster.clock.now) if record_events else None
    kubelet = KubeNodes(store, events=events)
    pools = NodePoolController(store, kubelet.scheduler, events=events, start=cluster.clock.start)
    handlers.append(pools.handle_step)
    faults = NodeFaults(store, events)
    handlers.insert(0, faults.handle_step)
    check = ProvisioningCheck(store, events=events)
    autoscaler = ProvisioningAutoscaler(store, kubelet.scheduler, pools, pod_templates=check.pod_templates, events=events)
    pods, jobs, perf = PodIntegration(store, events=events), JobIntegration(store, events=events), PerfRunner(store)
    extra.update({c.name: c for c in (faults, pods, jobs, perf, check, autoscaler, pools, kubelet)})
    return [faults, pods, jobs, perf, OneTurn(check, autoscaler), pools, kubelet]
