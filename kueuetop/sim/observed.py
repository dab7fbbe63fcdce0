"""What a simulation shows from outside, in the forms a forecast is checked against.

A forecast (`admission/forecast.py`) starts from a typed snapshot of the cluster at an instant and
says when each pending workload will be admitted. To measure it against the simulator
(benchmarks/forecast.py, tests/admission/test_forecast_exact.py) four things are read here:

- `snapshot_of`: the typed ClusterSnapshot of the simulator's objects at the current instant, parsed
  from the object store as any client lists them (not the Kueue controller's own snapshot, whose
  objects it has already parsed and whose queue state a console does not have);
- `exact_runtimes`: each workload's true runtime, which the simulator knows and a user does not —
  the perf harness's running-time label (`kueue-perf-*`), else the `kueuetop.io/runtime`
  annotation the pods run for (its default when absent);
- `admissions`: each workload's first admission after a point of the event log: the recorder's
  Admitted transitions, not the object's final condition — a workload may be admitted, preempted
  and admitted again, and a finished pod group's Workload may be gone from the store by the end;
- `node_pools_of`: the node pools with their limits and scale-ups in flight, and where running
  workloads' GPUs are, for a forecast that places pods;
- `observed_runtimes`: how long each finished workload held its last admission as the simulator
  ran it (pods waiting for a node to be added included), to tell that wait apart from the rest.

Times are absolute epoch seconds of the simulator's clock (virtual time when it is virtual).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from kueuetop.admission.check_timing import NodeCheck, node_checks
from kueuetop.admission.forecast_result import PoolCapacity, RuntimeEstimate
from kueuetop.admission.pod_placement import placements_from_cluster, pools_from_cluster
from kueuetop.kueue.config import KueueConfig
from kueuetop.kueue.core import GPU_RESOURCE, parse_node, parse_pod
from kueuetop.kueue.errors import KueueParseError
from kueuetop.kueue.node_pool import POOL_LABELS
from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.pod_workload import owner_uids, workload_of_pod
from kueuetop.kueue.provisioning import ProvisioningRequestConfig
from kueuetop.kueue.snapshot import ClusterSnapshot, WorkloadKey
from kueuetop.kueue.workload import Workload
from kueuetop.sim.jobs.perf_runner import running_seconds, runs_workload
from kueuetop.sim.kube.kubelet import pod_runtime
from kueuetop.sim.recorder import ADMITTED, FINISHED, QUOTA_RESERVED, SimEvent
from kueuetop.sim.scenarios.nodes import pool_labels, pool_zones
from kueuetop.sim.storage.objectstore import ObjectStore

KUEUE = "kueue.x-k8s.io"
UNBOUNDED = 1_000_000  # nodes: an autoscaled pool with no maxSize
# What the engine reads (the Kueue controller lists the same kinds): queues, flavors, cohorts,
# checks, namespaces (their labels select queues) and the Workloads.
SNAPSHOT_KINDS = ((KUEUE, "clusterqueues"), (KUEUE, "localqueues"), (KUEUE, "resourceflavors"),
                  (KUEUE, "cohorts"), (KUEUE, "admissionchecks"), ("", "namespaces"), (KUEUE, "workloads"))


def snapshot_of(store: ObjectStore, config: KueueConfig | None = None) -> ClusterSnapshot:
    """The typed snapshot of what the store holds now; objects the parser refuses are left out,
    as the console leaves them out."""
    objs = []
    for group, plural in SNAPSHOT_KINDS:
        items, _ = store.list(group, plural, copy=False)
        for o in items:
            with contextlib.suppress(KueueParseError):
                objs.append(parse_object(o))
    return ClusterSnapshot.from_objects(objs, config)


def exact_runtime(obj: dict) -> float:
    """Seconds the simulator runs this Workload's job once its pods run (the API dict)."""
    return running_seconds(obj) if runs_workload(obj) else pod_runtime(obj)


def exact_runtimes(store: ObjectStore) -> dict[WorkloadKey, RuntimeEstimate]:
    """A point estimate (optimistic = expected = pessimistic) of every Workload in the store."""
    out: dict[WorkloadKey, RuntimeEstimate] = {}
    items, _ = store.list(KUEUE, "workloads", copy=False)
    for o in items:
        m = o["metadata"]
        s = exact_runtime(o)
        out[(m["namespace"], m["name"])] = RuntimeEstimate(s, s, s, "exact (the simulator's)")
    return out


def admissions(events: Sequence[SimEvent], start: float, since: int = 0,
               type_: str = ADMITTED) -> dict[WorkloadKey, float]:
    """Each workload's first `type_` transition (Admitted; QUOTA_RESERVED for the scheduler's
    decision) among `events[since:]`, as absolute time (`start`: the clock's start, which event
    times count from). `since`: len(recorder.events) at the instant of interest, so only what
    happened after it counts, whatever the event's rounding."""
    out: dict[WorkloadKey, float] = {}
    for ev in events[since:]:
        if ev.type == type_:
            out.setdefault((ev.namespace, ev.name), start + ev.time)
    return out


def admissions_by_cluster_queue(events: Iterable[SimEvent], start: float, before: float,
                                type_: str = QUOTA_RESERVED) -> dict[str, list[float]]:
    """Every `type_` transition a watch saw before `before`, per ClusterQueue, sorted: the
    admission history a console following the cluster has (re-admissions included)."""
    out: dict[str, list[float]] = {}
    for ev in events:
        t = start + ev.time
        if ev.type == type_ and t < before and ev.cluster_queue:
            out.setdefault(ev.cluster_queue, []).append(t)
    for ts in out.values():
        ts.sort()
    return out


def observed_runtimes(events: Iterable[SimEvent]) -> dict[WorkloadKey, float]:
    """Seconds from each finished workload's last admission to its finish, as the simulator ran it."""
    last: dict[WorkloadKey, float] = {}
    out: dict[WorkloadKey, float] = {}
    for ev in events:
        key = (ev.namespace, ev.name)
        if ev.type == ADMITTED:
            last[key] = ev.time
        elif ev.type == FINISHED and key in last:
            out[key] = ev.time - last[key]
    return out


def node_checks_of(store: ObjectStore, snap: ClusterSnapshot) -> dict[str, NodeCheck]:
    """The snapshot's ProvisioningRequest checks with their configs' classes, from the
    simulator's objects (what the console reads from its store: `checks_from_store`)."""
    configs = []
    for raw in store.list("kueue.x-k8s.io", "provisioningrequestconfigs", copy=False)[0]:
        with contextlib.suppress(KueueParseError):
            if isinstance(c := parse_object(raw), ProvisioningRequestConfig):
                configs.append(c)
    return node_checks(snap.admission_checks, configs)


def node_pools_of(store: ObjectStore, pool_controller: Any) -> tuple[dict[str, PoolCapacity], dict[WorkloadKey, tuple]]:
    """The node pools as the forecast reads them, and where running workloads' GPUs are: Nodes and
    Pods from the store, each pool's growth limit and node delay from the simulator's node-pool
    controller (what a real cluster keeps in its cloud's node groups), and the nodes a scale-up
    has asked for and not yet brought (no Node object shows them)."""
    nodes, pods = [], []
    for plural, parse, into in (("nodes", parse_node, nodes), ("pods", parse_pod, pods)):
        for o in store.list("", plural, copy=False)[0]:
            with contextlib.suppress(KueueParseError):
                into.append(parse(o))
    pools_in_sim = getattr(pool_controller, "pools", {}) or {}
    limits = {name: (p.max_size if p.max_size is not None else UNBOUNDED, p.delay) for name, p in pools_in_sim.items()}
    pools = pools_from_cluster(nodes, pods, limits)
    for name, sim_pool in pools_in_sim.items():
        if name not in pools:
            empty = _empty_pool(sim_pool, limits[name])
            if empty is None or empty.name in pools:
                continue
            pools[empty.name] = empty
            name = empty.name
        coming = tuple(s.ready_at for s in sim_pool.upcoming if not s.done for _ in range(s.count))
        pools[name] = dataclasses.replace(pools[name], coming=coming, queued=bool(sim_pool.queued))
    by_owner: dict[str, list[WorkloadKey]] = {}
    for o in store.list(KUEUE, "workloads", copy=False)[0]:
        wl = _parsed(o)
        if isinstance(wl, Workload):
            for uid in owner_uids(wl):
                by_owner.setdefault(uid, []).append(wl.key)
    placements = placements_from_cluster(nodes, pods, lambda p: workload_of_pod(p, lambda uid: by_owner.get(uid, ())))
    return pools, placements


def _empty_pool(pool: Any, limit: tuple[int, float]) -> PoolCapacity | None:
    """An autoscaled pool with no Ready node (scaled to zero, or one node auto-provisioning makes
    per job) as the autoscaler's node group knows it: the labels its every node gets (the
    template's, zone-specific ones left out of a multi-zone pool), GPUs per node and its limits.
    Pools left to ProvisioningRequests are not scaled by the autoscaler, so they are left out, as
    are pools whose nodes carry no GPU. Queued-provisioning pools are kept, marked: the forecast
    grows them for the ProvisioningRequests of the workloads waiting on them."""
    if not (pool.autoscaling or pool.queued) or pool.template is None:
        return None
    zones = pool_zones(pool.doc)
    shared = pool_labels(pool.doc, zones[0])
    for z in zones[1:]:
        other = pool_labels(pool.doc, z)
        shared = {k: v for k, v in shared.items() if other.get(k) == v}
    gpus = int(pool.template[2].get(GPU_RESOURCE, 0))
    if gpus <= 0:
        return None
    max_nodes, delay = limit
    name = next((shared[k] for k in POOL_LABELS if shared.get(k)), pool.name)  # as its Nodes will name it
    return PoolCapacity(name, shared, gpus, (), max_nodes, delay, queued=bool(pool.queued))


def _parsed(obj: dict) -> Any:
    try:
        return parse_object(obj)
    except KueueParseError:
        return None
