"""Kueue's /metrics pending gauges and the visibility API say what the Kueue controller decided.

A served simulated cluster (real Kueue controller, real hooks, HTTP): cq-a has one GPU, taken by
`running`; `boosted` (priority 10, priority-boost +1000) and `high` (priority 100) wait, and
`big` asks for more than the queue has. cq-off names a flavor that does not exist, so it is
inactive and Kueue reports its pending workload as inadmissible.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from kueuetop.admission import queue_order
from kueuetop.sim.apiserver import ApiServer
from kueuetop.sim.clock import SimClock
from kueuetop.sim.runner import VIRTUAL_EPOCH
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import _hooks, paused_hooks
from kueuetop.sim.storage.objectstore import ObjectStore
from kueuetop.sim.wiring import build_cluster
from kueuetop.sources.exposition import parse_exposition

KUEUE = "kueue.x-k8s.io"


def _wl(name: str, queue: str, priority: int, gpus: int, extra: str = "") -> str:
    return (f"---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\n"
            f"metadata: {{name: {name}, namespace: ns, annotations: {{kueuetop.io/runtime: 1h{extra}}}}}\n"
            f"spec:\n  queueName: {queue}\n  priority: {priority}\n"
            f"  podSets: [{{name: main, count: 1, template: {{spec: {{containers: [{{name: c, resources: "
            f"{{requests: {{nvidia.com/gpu: \"{gpus}\"}}}}}}]}}}}}}]\n")


SCENARIO = """apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: f}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-a}
spec:
  queueingStrategy: BestEffortFIFO
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 1}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-off}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: ghost, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq-a, namespace: ns}
spec: {clusterQueue: cq-a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq-off, namespace: ns}
spec: {clusterQueue: cq-off}
""" + _wl("running", "lq-a", 2000, 1) + _wl("boosted", "lq-a", 10, 1, ", kueue.x-k8s.io/priority-boost: '1000'") \
    + _wl("high", "lq-a", 100, 1) + _wl("big", "lq-a", 5, 4) + _wl("stranded", "lq-off", 0, 1)


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.read()


def _pending_gauges(text: str) -> dict[tuple[str, str], float]:
    return {(s.labels["cluster_queue"], s.labels["status"]): s.value for s in parse_exposition(text)
            if s.name == "kueue_pending_workloads"}


def test_metrics_and_visibility_are_the_controllers_queue_state(tmp_path: Path) -> None:
    f = tmp_path / "queues.yaml"
    f.write_text(SCENARIO)
    parts = build_cluster(load_scenario(str(f)), SimClock(VIRTUAL_EPOCH))
    parts.cluster.run_for(10.0)
    srv = ApiServer(parts.cluster.store, hooks=_hooks(parts)).start()
    try:
        gauges = _pending_gauges(_get(srv.url + "/metrics").decode())
        order = [i["metadata"]["name"] for i in json.loads(_get(
            srv.url + "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq-a/pendingworkloads"))["items"]]
    finally:
        srv.stop()
    kueue, store = parts.kueue, parts.cluster.store
    snap = kueue.snapshot()
    # The visibility order is the controller's queue order: effective priority first.
    assert order == [w.name for w in queue_order.pending_workloads(snap, kueue.state, "cq-a")]
    assert order.index("boosted") < order.index("high")
    # Inadmissible = what the controller parked (at the workload's generation) ...
    parked = {k for k, gen in kueue.state.inadmissible.get("cq-a", {}).items()
              if k in snap.workloads and snap.workloads[k].meta.generation == gen
              and not snap.workloads[k].has_quota_reservation}
    assert parked, "the scheduler parked the workloads that do not fit"
    assert gauges[("cq-a", "inadmissible")] == len(parked)
    # ... and every pending workload of an inactive queue (this one used to be counted active).
    assert gauges[("cq-off", "inadmissible")] == 1 and gauges[("cq-off", "active")] == 0
    # Active + inadmissible is the pendingWorkloads the controller writes in the queues' status.
    for cq in ("cq-a", "cq-off"):
        status = store.get(KUEUE, "clusterqueues", None, cq)["status"]
        assert gauges[(cq, "active")] + gauges[(cq, "inadmissible")] == status["pendingWorkloads"]


def test_a_paused_store_is_ordered_by_the_controllers_queue_order_too(tmp_path: Path) -> None:
    f = tmp_path / "queues.yaml"
    f.write_text(SCENARIO)
    store = ObjectStore()
    for step in load_scenario(str(f)).steps:
        if step.obj is not None and step.obj["metadata"]["name"] not in ("running", "big"):
            store.create_object(step.obj)
    srv = ApiServer(store, hooks=paused_hooks(store)).start()
    try:
        items = json.loads(_get(
            srv.url + "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq-a/pendingworkloads"))["items"]
    finally:
        srv.stop()
    # The boost puts `boosted` (priority 10) ahead of `high` (priority 100), as Kueue orders them.
    assert [(i["metadata"]["name"], i["positionInClusterQueue"]) for i in items] == [("boosted", 0), ("high", 1)]


def test_a_server_without_kueue_has_no_kueue_metrics_nor_visibility(tmp_path: Path) -> None:
    store = ObjectStore()
    store.create(KUEUE, "clusterqueues", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                                          "metadata": {"name": "cq-a"}, "spec": {"namespaceSelector": {}}})
    srv = ApiServer(store).start()
    try:
        assert _get(srv.url + "/metrics") == b""
        try:
            _get(srv.url + "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq-a/pendingworkloads")
            raise AssertionError("answered without a Kueue behind it")
        except urllib.error.HTTPError as err:
            assert err.code == 503
    finally:
        srv.stop()
