"""`kueuetop sim serve`: the simulated cluster behind a Kubernetes-compatible API on loopback.

The simulation runs in its own thread in real time (times a speed factor); API clients —
kueuetop itself, the `kubernetes` client, kubectl, Prometheus — talk to it over HTTP.

Startup is on the path of every `sim serve` and `--demo`: modules needed only when a client
asks for metrics, telemetry or queue order are imported on first use, not here. The server
listens as soon as every object of the scenario's first instant is in the store (its nodes
included); the controllers catch up in the simulation thread afterwards, as Kueue does on a
real cluster right after `kubectl apply`, and watchers see their status writes. A generated
scenario's later steps (its Workloads) are built there too.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import signal
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kueuetop.sim.apiserver import ApiServer, ServerHooks, write_kubeconfig
from kueuetop.sim.apiserver.auth import load_tokens
from kueuetop.sim.apiserver.defaults import prepare_for_create
from kueuetop.sim.clock import SimClock
from kueuetop.sim.cluster import SimCluster
from kueuetop.sim.scenarios.scenario import Scenario, ScenarioStep, split_first_instant
from kueuetop.sim.storage.objectstore import ObjectStore
from kueuetop.sim.wiring import SimParts, build_cluster
from kueuetop.xdg import private_dir

_log = logging.getLogger(__name__)

KUEUE = "kueue.x-k8s.io"
# What kube-apiserver creates at boot: `kubectl create -f job.yaml` lands in "default".
SYSTEM_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
# --kueue-api → the kueue.x-k8s.io versions served, preferred first. v1beta2 is Kueue ≥ 0.15,
# which still serves the deprecated v1beta1; v1beta1 is Kueue ≤ 0.14, which knows nothing newer.
KUEUE_API_VERSIONS = {"v1beta2": ("v1beta2", "v1beta1"), "v1beta1": ("v1beta1",)}


@dataclass
class ServedCluster:
    """A served scenario. The server answers from the start; `caught_up` is set once the
    controllers have settled the first instant and the later steps are scheduled."""

    parts: SimParts
    server: ApiServer
    kubeconfig: Path
    thread: threading.Thread
    caught_up: threading.Event
    admin_token: str | None = None  # the token the kubeconfig carries (fault switches need it)
    ca_pem: bytes | None = None  # the generated CA when serving TLS

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self) -> None:
        self.parts.cluster.stop()
        self.server.stop()
        self.thread.join(timeout=5)
        # The kubeconfig holds a token for a server that is gone: it goes with it.
        with contextlib.suppress(OSError):
            self.kubeconfig.unlink()


def _hooks(parts: SimParts) -> ServerHooks:
    return _kueue_hooks(parts.kueue, parts.cluster.store, parts.cluster.lock, lambda: parts.cluster.now)


def cluster_hooks(parts: SimParts) -> ServerHooks:
    """Kueue's metrics, GPU telemetry and visibility answers of a simulated cluster."""
    return _hooks(parts)


def paused_hooks(store: ObjectStore) -> ServerHooks:
    """Kueue's metrics and visibility for a store no simulation runs on (a paused backlog): a
    Kueue controller reads the store as the serving one does, and never schedules."""
    from kueuetop.sim.kueue.controller import KueueController
    from kueuetop.sim.storage.kinds import get_kind
    from kueuetop.sim.storage.objectstore import WatchEvent

    kueue = KueueController(store, record_events=False)
    lock = threading.RLock()  # writers' threads note changes; hooks read under the same lock

    def note(event: WatchEvent) -> None:
        with lock:
            kueue.on_event(event)

    with lock:
        store.subscribe(note)
        kind = get_kind(KUEUE, "workloads")
        assert kind is not None
        for wl in store.list(KUEUE, "workloads", copy=False)[0]:
            kueue.on_event(WatchEvent("ADDED", kind, wl, None, 0))
    return _kueue_hooks(kueue, store, lock, time.time)


def _kueue_hooks(kueue: Any, store: ObjectStore, lock: Any, clock: Any) -> ServerHooks:

    def metrics_text() -> str:
        from kueuetop.sim.kueue.metrics import render_kueue_metrics
        from kueuetop.sim.kueue.queue_view import queued_workloads

        with lock:
            snap = kueue.snapshot()
            queued = queued_workloads(snap, kueue.state, clock(), kueue.cache.workload_index(snap))
            return render_kueue_metrics(snap, queued, kueue.counters, totals=kueue.queue_totals)

    def pods_by_node() -> dict[str, list[dict]]:
        pods, _ = store.list("", "pods", copy=False)
        out: dict[str, list[dict]] = defaultdict(list)
        for p in pods:
            node = (p.get("spec") or {}).get("nodeName")
            if node:
                out[node].append(p)
        return out

    def dcgm_text(node_name: str | None) -> str:
        from kueuetop.sim.cloud.gpu_telemetry import iter_dcgm_fleet, render_dcgm

        now = clock()
        if node_name is not None:
            node = store.try_get("", "nodes", None, node_name, copy=False)
            if node is None:
                return ""
            pods = store.by_index("", "pods", "spec.nodeName", node_name, copy=False)
            return render_dcgm(node, pods, now)
        nodes, _ = store.list("", "nodes", copy=False)
        return "".join(iter_dcgm_fleet(nodes, pods_by_node(), now))

    def pending_workloads(target: Any, limit: int, offset: int) -> list[dict]:
        from kueuetop.sim.kueue.queue_view import queued_in_cluster_queue

        with lock:
            snap = kueue.snapshot()
            if isinstance(target, tuple):
                lq = snap.local_queues.get(target)
                if lq is None:
                    return []
                cq = lq.cluster_queue
            else:
                cq = target
            items, per_lq = [], defaultdict(int)
            index = kueue.cache.workload_index(snap)
            for pos, q in enumerate(queued_in_cluster_queue(snap, kueue.state, cq, clock(), index)):
                wl = q.workload
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
    """In kueuetop's private directory ($XDG_RUNTIME_DIR/kueuetop, else a checked 0700 one)."""
    return private_dir() / f"sim-{port}.kubeconfig"


def start_served(scenario: Scenario, *, port: int = 0, speed: float = 1.0, token_file: str | None = None,
                 kubeconfig: str | None = None, faults: dict | None = None,
                 kueue_api: str = "v1beta2", tls: bool = False, paused: bool = False) -> ServedCluster:
    """Start the simulation thread and the API server; returns once both are up.

    paused: the clock is held at the scenario's first instant until the caller resumes it
    (`parts.cluster.clock.resume()`): what a test records then starts at a known moment, however
    long the start took.

    kueue_api: "v1beta2" (Kueue ≥ 0.15: v1beta2 preferred, v1beta1 deprecated) or "v1beta1"
    (Kueue ≤ 0.14: v1beta1 only). tls: serve HTTPS with a CA generated now and written into
    the kubeconfig (client-go sends bearer tokens only over TLS). Without a token file every
    client is admin of the API, but the fault switches need a random admin token, which the
    kubeconfig carries. The kubeconfig is created exclusively (never over an existing file or
    symlink) and removed by stop()."""
    if kueue_api not in KUEUE_API_VERSIONS:
        raise ValueError(f"unknown Kueue API version {kueue_api!r}: use one of {', '.join(KUEUE_API_VERSIONS)}")
    tokens = load_tokens(token_file) if token_file else None
    admin = next((t for t, u in (tokens or {}).items() if u.role == "admin"), None)
    switch_token = None if tokens is not None else secrets.token_urlsafe(24)
    server_tls = None
    if tls:
        from kueuetop.sim.apiserver.tls import generate_server_tls

        server_tls = generate_server_tls()
    first, later = split_first_instant(scenario)
    clock = SimClock(time.time(), speed)
    if paused:
        clock.pause()  # the caller resumes it (parts.cluster.clock): nothing happens until then
    parts = build_cluster(first, clock)
    load_first_instant(parts)
    server = ApiServer(parts.cluster.store, port=port, tokens=tokens, faults=faults, hooks=_hooks(parts),
                       kueue_versions=KUEUE_API_VERSIONS[kueue_api],
                       tls=server_tls.server_context() if server_tls else None, admin_token=switch_token).start()
    ca_pem = server_tls.ca_pem if server_tls else None
    try:
        path = Path(kubeconfig) if kubeconfig else default_kubeconfig_path(server.port)
        if not kubeconfig:
            # Left by a server on this port that was killed (kill -9); the directory is checked
            # to be ours and private, so nobody else could have put it there. unlink() removes a
            # symlink itself, never its target.
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        path = write_kubeconfig(path, server.url, token=admin or switch_token, ca_pem=ca_pem)
    except OSError:
        server.stop()
        raise
    caught_up = threading.Event()
    thread = threading.Thread(target=_simulate, args=(parts.cluster, later, caught_up), name="kueuetop-sim",
                              daemon=True)
    thread.start()
    return ServedCluster(parts, server, path, thread, caught_up, admin or switch_token, ca_pem)


@dataclass
class FrozenCluster:
    """A scenario run in virtual time to a moment, then served with no simulation thread: every
    answer is the same until `stop()` (screenshots, snapshot tests)."""

    server: ApiServer
    kubeconfig: Path
    now: float  # the cluster's clock, stopped

    def stop(self) -> None:
        self.server.stop()


def serve_frozen(scenario: Scenario, *, at: float, epoch: float, kubeconfig: Path,
                 kueue_api: str = "v1beta2") -> FrozenCluster:
    """Run `scenario` from `epoch` for `at` seconds of virtual time and serve it frozen on a
    loopback port; the kubeconfig is written to `kubeconfig`."""
    clock = SimClock(epoch, speed=None)
    parts = build_cluster(scenario, clock)
    parts.cluster.settle()
    parts.cluster.run_for(at)
    server = ApiServer(parts.cluster.store, port=0, hooks=_hooks(parts),
                       kueue_versions=KUEUE_API_VERSIONS[kueue_api]).start()
    try:
        path = write_kubeconfig(kubeconfig, server.url)
    except OSError:
        server.stop()
        raise
    return FrozenCluster(server, path, clock.now())


def load_first_instant(parts: SimParts) -> None:
    """Every object due at t=0 into the store, and the Nodes of the scenario's NodePools, with
    no other controller run: what must be served from the first answer. The namespaces a
    Kubernetes API server creates when it boots are added unless the scenario has them."""
    cluster = parts.cluster
    cluster.apply_due_steps()
    with cluster.lock:
        _add_system_namespaces(cluster.store)
        pools = parts.extra.get("node-pools")
        if pools is not None:
            pools.reconcile(cluster.now)


def _add_system_namespaces(store: ObjectStore) -> None:
    kind = store.kind("", "namespaces")
    missing = []
    for name in SYSTEM_NAMESPACES:
        if store.try_get("", "namespaces", None, name, copy=False) is None:
            ns: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            prepare_for_create(kind, ns)
            missing.append(("", "namespaces", ns))
    store.create_many(missing)


def _simulate(cluster: SimCluster, later: Callable[[], Sequence[ScenarioStep]], caught_up: threading.Event) -> None:
    """The simulation thread: controllers catch up with the first instant, then the later
    steps are built and the cluster runs in real time until stopped."""
    cluster.settle()
    try:
        steps = later()
    except Exception:  # a broken generator must not take the served cluster down with it
        _log.exception("cannot build the scenario's later steps; serving without them")
        steps = ()
    cluster.add_steps(steps)
    caught_up.set()
    cluster.run_forever()


def stop_on_signals() -> threading.Event:
    """An event set by SIGINT or SIGTERM. Install it before starting, so a signal that arrives
    while the scenario loads still ends in a clean stop rather than a traceback."""
    done = threading.Event()

    def _stop(signum: int, frame: Any) -> None:
        done.set()

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    return done


class Stoppable(Protocol):
    def stop(self) -> None: ...


def serve_forever(served: Stoppable, done: threading.Event | None = None) -> None:
    """Block until SIGINT/SIGTERM (or `done` is set), then stop cleanly."""
    if done is None:
        done = stop_on_signals()
    while not done.wait(0.2):
        pass
    served.stop()
