"""The forecast with node pools against the simulator: one autoscaled GPU pool, Jobs of two shapes
that wait for scale-ups and for GPUs when the pool is at its maximum. Run to T, build the pools
and placements from the simulator's Nodes and Pods and the NodePool's limits, forecast with exact
runtimes, run on: every pending workload's admission and pods' start are the simulator's."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from kueuetop.admission.forecast import forecast
from kueuetop.admission.forecast_result import RuntimeEstimate
from kueuetop.admission.pod_placement import placements_from_cluster, pools_from_cluster
from kueuetop.kueue.core import Node, Pod, parse_node, parse_pod
from kueuetop.kueue.durations import parse_duration
from kueuetop.kueue.fields import parse_time_or_none
from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.snapshot import ClusterSnapshot
from kueuetop.sim.clock import SimClock
from kueuetop.sim.runner import VIRTUAL_EPOCH
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.wiring import build_cluster
from kueuetop.store import Entry, Op, Store, StoreEvent
from kueuetop.store import events as K

# One L4 pool of 8-GPU nodes: 1 node at t=0, up to 3, a new node Ready 90 s after a scale-up. The
# queue's 32 GPUs are more than the pool's 24: admitted pods also wait for GPUs to free up.
SCENARIO = """apiVersion: kueuetop.io/v1
kind: NodePool
metadata: {name: gpu-np}
spec:
  machineType: g2-standard-96
  gpu: {model: "NVIDIA L4", count: 8, memoryMiB: 23034}
  zones: [us-central1-c]
  size: 1
  maxSize: 3
  autoscaling: true
  provisioningDelay: 90s
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: l4}
spec:
  nodeLabels: {cloud.google.com/gke-nodepool: gpu-np}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors: [{name: l4, resources: [{name: cpu, nominalQuota: 1000}, {name: memory, nominalQuota: 10000Gi},
                                     {name: nvidia.com/gpu, nominalQuota: 32}]}]
---
apiVersion: v1
kind: Namespace
metadata: {name: ns}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: ns}
spec: {clusterQueue: cq}
"""
JOB = """---
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: ns
  labels: {{kueue.x-k8s.io/queue-name: lq}}
  annotations: {{kueuetop.io/runtime: "{runtime}s"}}
spec:
  suspend: true
  parallelism: {pods}
  completions: {pods}
  template:
    spec:
      tolerations: [{{key: "nvidia.com/gpu", operator: "Exists", effect: NoSchedule}}]
      containers: [{{name: main, image: x, resources: {{requests: {{cpu: "1", memory: 1Gi, nvidia.com/gpu: "{gpus}"}}}}}}]
      restartPolicy: Never
"""
# Two shapes: one pod of 8 GPUs, two pods of 4 GPUs; every Job exists at t=0 (none arrives later).
JOBS = [(f"job-{i:02d}", 1 if i % 3 else 2, 8 if i % 3 else 4, 300 + 97 * (i * 7 % 11)) for i in range(15)]


def _scenario(tmp_path: Path) -> Any:
    f = tmp_path / "pools.yaml"
    f.write_text(SCENARIO + "".join(JOB.format(name=n, pods=p, gpus=g, runtime=r) for n, p, g, r in JOBS))
    return load_scenario(str(f))


def _list(store: Any, group: str, plural: str) -> list[dict[str, Any]]:
    return store.list(group, plural, copy=False)[0]


def _workload_join(objs: list[dict[str, Any]], pods: list[dict[str, Any]]) -> Store:
    """The console's store, fed the Workloads and Pods: its pod → Workload join."""
    store = Store()
    for kind, docs in ((K.WORKLOADS, objs), (K.PODS, pods)):
        entries = tuple(Entry((d["metadata"]["namespace"], d["metadata"]["name"]), None, parse_object(d),
                              d["metadata"]["uid"], d["metadata"]["resourceVersion"]) for d in docs)
        store.apply(StoreEvent(Op.REPLACE, kind, "sim", entries=entries))
    return store


def _true_since(wl: dict[str, Any], kind: str) -> float | None:
    """When the condition turned True (Admitted; PodsReady: every pod runs, the last has started)."""
    for c in (wl.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind and c.get("status") == "True":
            return parse_time_or_none(c.get("lastTransitionTime"))
    return None


@pytest.mark.parametrize("T", [50.0, 200.0])  # a scale-up in flight; the pool at its maximum
def test_admissions_and_pods_starts_on_an_autoscaled_pool_are_the_simulators(tmp_path: Path, T: float) -> None:
    scenario = _scenario(tmp_path)
    spec = scenario.node_pools[0]["spec"]
    limits = {"gpu-np": (int(spec["maxSize"]), parse_duration(spec["provisioningDelay"]))}
    runtime = {n: float(r) for n, _, _, r in JOBS}
    parts = build_cluster(scenario, SimClock(VIRTUAL_EPOCH), record_events=False)
    cluster = parts.cluster
    cluster.run_for(T)
    now = cluster.clock.now()
    st = cluster.store

    objs = []
    for group, plural in (("kueue.x-k8s.io", "clusterqueues"), ("kueue.x-k8s.io", "localqueues"),
                          ("kueue.x-k8s.io", "resourceflavors"), ("", "namespaces"), ("kueue.x-k8s.io", "workloads")):
        objs += [parse_object(o) for o in _list(st, group, plural)]
    snap = ClusterSnapshot.from_objects(objs)
    wl_docs = _list(st, "kueue.x-k8s.io", "workloads")
    pod_docs = _list(st, "", "pods")
    join = _workload_join(wl_docs, pod_docs)
    nodes: list[Node] = [parse_node(n) for n in _list(st, "", "nodes")]
    pods: list[Pod] = [parse_pod(p) for p in pod_docs]
    pools = pools_from_cluster(nodes, pods, limits)
    # Nodes asked for and not there yet: no Node shows them (the cloud's node group does).
    upcoming = parts.extra["node-pools"].pools["gpu-np"].upcoming
    coming = tuple(s.ready_at for s in upcoming if not s.done for _ in range(s.count))
    assert bool(coming) == (T < 90)
    pools["gpu-np"] = dataclasses.replace(pools["gpu-np"], coming=coming)
    placements = placements_from_cluster(nodes, pods, lambda p: join.workload_of_pod((p.namespace, p.name)))

    # The Jobs' own runtimes: a running one's counts from its pods' start, which the placements
    # carry (the pods' status.startTime), as a pending one's does in the forecast.
    runtimes = {}
    for d in wl_docs:
        key = (d["metadata"]["namespace"], d["metadata"]["name"])
        run = runtime[d["metadata"]["ownerReferences"][0]["name"]]
        runtimes[key] = RuntimeEstimate(run, run, run, "exact")
    pending = [k for k, w in snap.workloads.items() if not w.has_quota_reservation and not w.is_finished]
    f = forecast(snap, runtimes, now, ranges=False, pools=pools, placements=placements)

    cluster.run_for(24 * 3600, until_idle=True)
    wl_docs = _list(st, "kueue.x-k8s.io", "workloads")
    actual_admit = {(d["metadata"]["namespace"], d["metadata"]["name"]): _true_since(d, "Admitted") for d in wl_docs}
    actual_start = {(d["metadata"]["namespace"], d["metadata"]["name"]): _true_since(d, "PodsReady") for d in wl_docs}
    diffs = []
    for key in sorted(pending):
        got = f.workloads[key]
        want = (actual_admit.get(key), actual_start.get(key))
        if (got.start is None or want[0] is None or abs(got.start - want[0]) > 1
                or got.pods_start is None or want[1] is None or abs(got.pods_start - want[1]) > 1):
            diffs.append(f"{key[1]}: forecast admitted {_rel(got.start, now)} pods {_rel(got.pods_start, now)}, "
                         f"simulator {_rel(want[0], now)} pods {_rel(want[1], now)}")
    assert not diffs, f"{len(diffs)}/{len(pending)} differ (seconds after T):\n" + "\n".join(diffs)
    # The nodes mattered: pods waited for GPUs after admission, which a forecast without pools misses.
    assert sum(1 for k in pending if f.workloads[k].pods_start != f.workloads[k].start) >= 5
    plain = forecast(snap, runtimes, now, ranges=False)
    assert any(plain.workloads[k].start != f.workloads[k].start for k in pending)


def _rel(t: float | None, now: float) -> str:
    return "-" if t is None else f"{t - now:+.0f}"


