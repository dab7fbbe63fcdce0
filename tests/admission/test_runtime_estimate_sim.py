"""Runtime estimates from runs the simulator really finished: batch/v1 Jobs go through Kueue's job
integration, are admitted, run their pods on a node pool and finish; the console's store sees the
Workloads, the run history records them, and the estimates read it back (also after a restart)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kueuetop.admission.runtime_estimate import estimate_runtimes
from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.snapshot import ClusterSnapshot
from kueuetop.sim.clock import SimClock
from kueuetop.sim.runner import VIRTUAL_EPOCH
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.wiring import build_cluster
from kueuetop.store import Entry, Op, Store, StoreEvent
from kueuetop.store import events as K
from kueuetop.store.run_history import RunHistory, follow_store, load_run_history, save_run_history

# One node of 2 GPUs, a ClusterQueue of 2 GPUs: the three Jobs run one after the other.
SCENARIO = """apiVersion: kueuetop.io/v1
kind: NodePool
metadata: {name: gpu-np}
spec:
  machineType: g2-standard-24
  gpu: {model: "NVIDIA L4", count: 2, memoryMiB: 23034}
  zones: [us-central1-c]
  size: 1
  autoscaling: false
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: l4}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-a}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors: [{name: l4, resources: [{name: cpu, nominalQuota: 100}, {name: memory, nominalQuota: 1000Gi},
                                     {name: nvidia.com/gpu, nominalQuota: 2}]}]
---
apiVersion: v1
kind: Namespace
metadata: {name: ns}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq-a, namespace: ns}
spec: {clusterQueue: cq-a}
"""
JOB = """---
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: ns
  labels: {{kueue.x-k8s.io/queue-name: lq-a{extra}}}
  annotations: {{kueuetop.io/runtime: "{runtime}"}}
spec:
  suspend: true
  template:
    spec:
      tolerations: [{{key: "nvidia.com/gpu", operator: "Exists", effect: NoSchedule}}]
      containers: [{{name: main, image: x, resources: {{requests: {{cpu: "1", memory: 1Gi, nvidia.com/gpu: "2"}}}}}}]
      restartPolicy: Never
"""
JOBS = [("job-0", "10m", ""), ("job-1", "20m", ""),
        ("job-2", "15m", ', kueue.x-k8s.io/max-exec-time-seconds: "3600"')]


def _run(tmp_path: Path, seconds: float) -> list[dict[str, Any]]:
    f = tmp_path / "runs.yaml"
    f.write_text(SCENARIO + "".join(JOB.format(name=n, runtime=r, extra=x) for n, r, x in JOBS))
    parts = build_cluster(load_scenario(str(f)), SimClock(VIRTUAL_EPOCH), record_events=False)
    parts.cluster.run_for(seconds, until_idle=True)
    wls, _ = parts.cluster.store.list("kueue.x-k8s.io", "workloads", copy=False)
    return wls


def _feed(store: Store, objs: list[dict[str, Any]]) -> None:
    entries = []
    for d in objs:
        m = d["metadata"]
        entries.append(Entry((m["namespace"], m["name"]), None, parse_object(d), m["uid"], m["resourceVersion"]))
    store.apply(StoreEvent(Op.REPLACE, K.WORKLOADS, "sim", entries=tuple(entries)))


def test_finished_runs_seen_by_the_store_are_the_jobs_runtimes(tmp_path: Path) -> None:
    store = Store()
    history = RunHistory("sim")
    follow_store(store, history)
    _feed(store, _run(tmp_path, 4 * 3600))
    assert sorted(r.runtime for r in history.records()) == [600, 900, 1200]
    assert {r.cluster_queue for r in history.records()} == {"cq-a"}

    path = tmp_path / "state" / "run-history.json"
    assert save_run_history(path, history) == ""
    again, warning = load_run_history(path, "sim")  # a new console on the same cluster
    assert warning == "" and sorted(r.runtime for r in again.records()) == [600, 900, 1200]

    # The same Jobs at their start (one just admitted, two pending): estimated from the three
    # runs, their median expected.
    snap = ClusterSnapshot.from_objects(
        [parse_object(d) for d in _run(tmp_path, 0)] + [parse_object(o) for o in _lq_objects()])
    out = estimate_runtimes(snap, again, VIRTUAL_EPOCH)
    assert {e.expected for e in out.values()} == {900}
    assert {e.basis for e in out.values()} == {"3 finished runs of this shape in ns/lq-a"}
    # Kueue copied job-2's label into its Workload: the bound is there, and does not bind.
    bounds = sorted((e.upper_bound or 0) for e in out.values())
    assert bounds == [0, 0, 3600]


def test_mid_run_snapshot_conditions_on_the_running_job(tmp_path: Path) -> None:
    objs = _run(tmp_path, 1500)  # job-1 ran 0–1200 s; job-0 admitted at 1200 s; job-2 waits
    store = Store()
    history = RunHistory("sim")
    follow_store(store, history)
    _feed(store, objs)
    assert [r.runtime for r in history.records()] == [1200]
    snap = store.snapshot()
    out = estimate_runtimes(snap, history, VIRTUAL_EPOCH + 1500)
    running = [e for k, e in out.items() if snap.workloads[k].has_quota_reservation]
    pending = [e for k, e in out.items() if not snap.workloads[k].has_quota_reservation]
    assert len(running) == 1 and len(pending) == 1
    # one run of 1200 s: ±50 %; the running one has run 300 s, less than the optimistic end
    assert (running[0].optimistic, running[0].expected, running[0].pessimistic) == (600, 1200, 1800)
    assert pending[0].upper_bound == 3600 and pending[0].expected == 1200


def _lq_objects() -> list[dict[str, Any]]:
    return [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
             "metadata": {"name": "lq-a", "namespace": "ns"}, "spec": {"clusterQueue": "cq-a"}}]
