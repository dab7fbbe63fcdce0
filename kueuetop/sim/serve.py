"""`kueuetop sim serve`: the simulated cluster behind a Kubernetes-compatible API on loopback.

The simulation runs in its own thread in real time (times a speed factor); API clients —
kueuetop itself, the `kubernetes` client, kubectl, Prometheus — talk to it over HTTP.
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kueuetop.admission import queue_order
from kueuetop.sim.apiserver import ApiServer, ServerHooks, write_kubeconfig
from kueuetop.sim.apiserver.auth import load_tokens
from kueuetop.sim.clock import SimClock
from kueuetop.sim.gpu_telemetry import iter_dcgm_fleet, render_dcgm
from kueuetop.sim.kueue_metrics import render_kueue_metrics
from kueuetop.sim.runner import SimParts, build_cluster
from kueuetop.sim.scenario import Scenario

KUEUE = "kueue.x-k8s.io"


@dataclass
class ServedCluster:
    parts: SimParts
    server: ApiServer
    kubeconfig: Path
    thread: threading.Thread

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self) -> None:
        self.parts.cluster.stop()
        self.server.stop()
        self.thread.join(timeout=5)


def _hooks(parts: SimParts) -> ServerHooks:
    cluster, kueue, store = parts.cluster, parts.kueue, parts.cluster.store

    def metrics_text() -> str:
        with cluster.lock:
            kueue.counters.inadmissible = {k for m in kueue.state.inadmissible.values() for k in m}
            cqs, _ = store.list(KUEUE, "clusterqueues", copy=False)
            lqs, _ = store.list(KUEUE, "localqueues", copy=False)
            wls, _ = store.list(KUEUE, "workloads", copy=False)
            cohorts, _ = store.list(KUEUE, "cohorts", copy=False)
            return render_kueue_metrics(cqs, lqs, wls, cohorts, kueue.counters, now=cluster.now)

    def pods_by_node() -> dict[str, list[dict]]:
        pods, _ = store.list("", "pods", copy=False)
        out: dict[str, list[dict]] = defaultdict(list)
        for p in pods:
            node = (p.get("spec") or {}).get("nodeName")
            if node:
                out[node].append(p)
        return out

    def dcgm_text(node_name: str | None) -> str:
        now = cluster.now
        if node_name is not None:
            node = store.try_get("", "nodes", None, node_name, copy=False)
            if node is None:
                return ""
            pods = store.by_index("", "pods", "spec.nodeName", node_name, copy=False)
            return render_dcgm(node, pods, now)
        nodes, _ = store.list("", "nodes", copy=False)
        return "".join(iter_dcgm_fleet(nodes, pods_by_node(), now))

    def pending_workloads(target: Any, limit: int, offset: int) -> list[dict]:
        with cluster.lock:
            snap = kueue.snapshot()
            if isinstance(target, tuple):
                lq = snap.local_queues.get(target)
                if lq is None:
                    return []
                cq = lq.cluster_queue
            else:
                cq = target
            items, per_lq = [], defaultdict(int)
            for pos, wl in enumerate(queue_order.pending_workloads(snap, kueue.state, cq)):
                lq_key = (wl.namespace, wl.queue_name)
                lq_pos = per_lq[lq_key]
                per_lq[lq_key] += 1
                if isinstance(target, tuple) and lq_key != target:
                    continue
                meta: dict[str, Any] = {"name": wl.name, "namespace": wl.namespace,
                                        "creationTimestamp": time.strftime(
                                            "%Y-%m-%dT%H:%M:%SZ", time.gmtime(wl.meta.creation or 0))}
                if wl.meta.owners:
                    meta["ownerReferences"] = [{"apiVersion": o.api_version, "kind": o.kind, "name": o.name,
                                                "uid": o.uid, "controller": o.controller} for o in wl.meta.owners]
                items.append({"metadata": meta, "priority": wl.priority, "localQueueName": wl.queue_name,
                              "positionInClusterQueue": pos, "positionInLocalQueue": lq_pos})
        return items[offset: offset + limit] if limit else items[offset:]

    return ServerHooks(metrics_text=metrics_text, dcgm_text=dcgm_text, pending_workloads=pending_workloads)


def default_kubeconfig_path(port: int) -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / "kueuetop" / f"sim-{port}.kubeconfig"


def start_served(scenario: Scenario, *, port: int = 0, speed: float = 1.0, token_file: str | None = None,
                 kubeconfig: str | None = None, faults: dict | None = None) -> ServedCluster:
    """Start the simulation thread and the API server; returns once both are up."""
    clock = SimClock(time.time(), speed)
    parts = build_cluster(scenario, clock)
    tokens = load_tokens(token_file) if token_file else None
    server = ApiServer(parts.cluster.store, port=port, tokens=tokens, faults=faults, hooks=_hooks(parts)).start()
    admin = next((t for t, u in (tokens or {}).items() if u.role == "admin"), None)
    port_used = int(server.url.rsplit(":", 1)[1])
    path = write_kubeconfig(kubeconfig or default_kubeconfig_path(port_used), server.url, token=admin)
    parts.cluster.settle()  # objects at t=0 exist before the first client connects
    thread = threading.Thread(target=parts.cluster.run_forever, name="kueuetop-sim", daemon=True)
    thread.start()
    return ServedCluster(parts, server, path, thread)


def serve_forever(served: ServedCluster) -> None:
    """Block until SIGINT/SIGTERM, then stop cleanly."""
    done = threading.Event()

    def _stop(signum: int, frame: Any) -> None:
        done.set()

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    while not done.wait(0.5):
        pass
    served.stop()
