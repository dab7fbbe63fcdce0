"""Several simulated clusters on one clock: a MultiKueue manager and its workers.

Each cluster is a full embedded cluster (its own store, Kueue, nodes, GPU telemetry, built by
`wiring.build_cluster`); the manager also runs Kueue's MultiKueue controller, which reaches the
workers through a `Network` keyed by the server URL in each worker's kubeconfig Secret. One
thread drives every cluster: at each instant all clusters settle, in turn, until none has more
to do (a worker's admission wakes the manager, whose Job creation wakes the worker), then the
shared clock moves to the earliest event of any of them.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from kueuetop.gc_pacing import sparse_collections
from kueuetop.kueue.durations import parse_duration
from kueuetop.sim.apiserver.kubeconfig import kubeconfig_dict
from kueuetop.sim.clock import SimClock
from kueuetop.sim.kueue import configmap as KC
from kueuetop.sim.kueue.multikueue import (
    SECRET_KEY,
    WORKER_LOST_TIMEOUT,
    MultiKueueController,
    Network,
    Remote,
)
from kueuetop.sim.scenarios.multicluster import ClusterFault, MultiClusterScenario
from kueuetop.sim.storage.objectstore import ObjectStore, StoreError
from kueuetop.sim.wiring import SimParts, build_cluster

MAX_WORLD_ROUNDS = 100  # cross-cluster rounds at one instant before moving on


def secret_name(worker: str) -> str:
    return f"{worker}-kubeconfig"


def worker_secret(worker: str, url: str, token: str | None = None, ca_pem: bytes | None = None) -> dict[str, Any]:
    """The Secret a manager's MultiKueueCluster reads: kubeconfig under key `kubeconfig`."""
    text = yaml.safe_dump(kubeconfig_dict(url, token, context=worker, ca_pem=ca_pem), sort_keys=False)
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": secret_name(worker), "namespace": KC.NAMESPACE},
            "data": {SECRET_KEY: base64.b64encode(text.encode()).decode()}}


def _worker_lost_timeout(config: dict[str, Any]) -> float:
    mk = (config.get("kueue") or {}).get("multiKueue") or config.get("multiKueue") or {}
    value = mk.get("workerLostTimeout") if isinstance(mk, dict) else None
    if value is None:
        return WORKER_LOST_TIMEOUT
    return parse_duration(str(value))


@dataclass
class World:
    scenario: MultiClusterScenario
    clock: SimClock
    parts: dict[str, SimParts]
    network: Network
    multikueue: MultiKueueController
    wake: threading.Event
    errors: list[str] = field(default_factory=list)
    _faults: list[ClusterFault] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    on_cluster_fault: Callable[[str, bool], None] | None = None  # served worlds stop/start the API

    @property
    def manager(self) -> SimParts:
        return self.parts[self.scenario.manager]

    def store(self, cluster: str) -> ObjectStore:
        return self.parts[cluster].cluster.store

    # ------------------------------------------------------------------ wiring
    def connect(self, urls: dict[str, str], tokens: dict[str, str | None] | None = None,
                ca_pems: dict[str, bytes | None] | None = None) -> None:
        """Register each worker at its URL and write its kubeconfig Secret on the manager,
        unless the scenario brings its own Secret of that name (a wrong one, say)."""
        brought = {(o.get("metadata") or {}).get("name") for o in self.manager.cluster.scenario.objects("Secret")}
        store = self.manager.cluster.store
        for worker in self.scenario.workers:
            parts = self.parts[worker]
            self.network.register(urls[worker], Remote(worker, parts.cluster.store, parts.cluster.lock))
            if secret_name(worker) in brought:
                continue
            secret = worker_secret(worker, urls[worker], (tokens or {}).get(worker), (ca_pems or {}).get(worker))
            with self.manager.cluster.lock:
                try:
                    store.create("", "secrets", secret)
                except StoreError as exc:
                    self.errors.append(f"secret for {worker}: {exc.message}")
        self.wake.set()

    def set_worker_up(self, worker: str, up: bool) -> None:
        """A worker's API goes away (up=False) or comes back; its own simulation keeps running,
        as a partitioned cluster's would."""
        if worker not in self.scenario.workers:
            raise ValueError(f"no worker cluster named {worker!r}")
        if self.on_cluster_fault is not None:
            self.on_cluster_fault(worker, up)
        self.network.set_up(worker, up)
        self.wake.set()

    # ------------------------------------------------------------------ loop
    def _apply_due_faults(self) -> None:
        while self._faults and self.clock.start + self._faults[0].at <= self.clock.now():
            f = self._faults.pop(0)
            self.set_worker_up(f.cluster, f.action == "cluster-up")

    def _pending(self) -> bool:
        return self.multikueue.has_work() or any(p.cluster.has_pending_events() for p in self.parts.values())

    def settle(self) -> None:
        self._apply_due_faults()
        for _ in range(MAX_WORLD_ROUNDS):
            for p in self.parts.values():
                p.cluster.settle()
            if not self._pending():
                break

    def next_event(self) -> float | None:
        times = [t for t in (p.cluster.next_event() for p in self.parts.values()) if t is not None]
        if self._faults:
            times.append(self.clock.start + self._faults[0].at)
        return min(times) if times else None

    def run_for(self, seconds: float) -> None:
        """Advance every cluster by `seconds` of simulated time (virtual or real)."""
        with sparse_collections():
            end = self.clock.now() + seconds
            same_instant = 0
            while not self._stop.is_set():
                self.settle()
                now = self.clock.now()
                if now >= end:
                    break
                nxt = self.next_event()
                if nxt is not None and nxt <= now:
                    same_instant += 1  # a controller asks again at this instant
                    if same_instant >= MAX_WORLD_ROUNDS:
                        self.errors.append(f"simulated time stopped at t={now - self.clock.start:.3f}s")
                        break
                    continue
                same_instant = 0
                self.clock.wait_until(end if nxt is None else min(nxt, end), self.wake)

    def run_forever(self) -> None:
        with sparse_collections():
            while not self._stop.is_set():
                self.settle()
                self.clock.wait_until(self.next_event(), self.wake)

    def stop(self) -> None:
        self._stop.set()
        for p in self.parts.values():
            p.cluster.stop()
        self.wake.set()


def build_world(scenario: MultiClusterScenario, clock: SimClock, *, record_events: bool = True) -> World:
    """Every cluster of the scenario built on one clock, the manager with MultiKueue; no worker
    is reachable until `World.connect`."""
    wake = threading.Event()
    parts: dict[str, SimParts] = {}
    for decl in scenario.clusters:
        p = build_cluster(scenario.scenarios[decl.name], clock, record_events=record_events)
        p.cluster.wake = wake  # any cluster's write wakes the one simulation thread
        parts[decl.name] = p
    network = Network()
    manager = parts[scenario.manager]
    mk = MultiKueueController(manager.cluster.store, network,
                              worker_lost_timeout=_worker_lost_timeout(manager.cluster.scenario.config),
                              wake=wake.set)
    manager.cluster.add_controller(mk)
    manager.extra["multikueue"] = mk
    return World(scenario, clock, parts, network, mk, wake, _faults=list(scenario.faults))
