"""MultiKueue in virtual time: the built-in `multikueue` world (a manager and three workers on one
clock), driven in-process. Dispatching, first-admit-wins, a worker lost and the re-dispatch,
and the per-cluster errors of bad input."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from kueuetop.sim.clock import SimClock
from kueuetop.sim.kueue.multikueue import server_of_kubeconfig
from kueuetop.sim.scenarios.multicluster import load_multicluster, parse_multicluster
from kueuetop.sim.scenarios.scenario import ScenarioError
from kueuetop.sim.serve import load_first_instant
from kueuetop.sim.world import World, build_world

KUEUE = "kueue.x-k8s.io"
EPOCH = 1_800_000_000.0
WORKERS = ("us-central1", "europe-west4", "asia-southeast1")


def _world(text: str | None = None) -> World:
    sc = load_multicluster("multikueue") if text is None else parse_multicluster(text, "test.yaml")
    w = build_world(sc, SimClock(EPOCH, None))
    for p in w.parts.values():
        load_first_instant(p)
    w.connect({n: f"https://{n}.sim.invalid" for n in sc.workers})
    return w


def _cond(obj: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == ctype), None)


def _true(obj: dict[str, Any], ctype: str) -> bool:
    c = _cond(obj, ctype)
    return c is not None and c.get("status") == "True"


def _wls(w: World, cluster: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in w.store(cluster).list(KUEUE, "workloads")[0]}


def _check(wl: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in wl["status"]["admissionChecks"] if c["name"] == "multikueue")


def test_clusters_and_check_become_active() -> None:
    w = _world()
    w.run_for(1)
    mkcs = {o["metadata"]["name"]: o for o in w.store("manager").list(KUEUE, "multikueueclusters")[0]}
    assert set(mkcs) == set(WORKERS)
    for o in mkcs.values():
        assert (_cond(o, "Active") or {}).get("reason") == "Active"
        assert _true(o, "Active")
    ac = w.store("manager").get(KUEUE, "admissionchecks", None, "multikueue")
    assert _true(ac, "Active")


def test_dispatch_to_every_worker_then_first_admission_wins() -> None:
    w = _world()
    w.settle()  # t=0: three Jobs arrive; quota is reserved on the manager and copies go out
    manager = _wls(w, "manager")
    first = {n for n, o in manager.items() if _true(o, "Admitted")}
    assert first, "a worker admitted a copy at t=0"
    for name in first:
        wl = manager[name]
        chosen = wl["status"]["clusterName"]
        assert chosen in WORKERS
        assert _check(wl)["state"] == "Ready"
        assert _check(wl)["message"] == f'The workload got reservation on "{chosen}"'
        assert "nominatedClusterNames" not in wl["status"]
        for worker in WORKERS:
            copy = _wls(w, worker).get(name)
            if worker == chosen:
                assert copy is not None and _true(copy, "Admitted")
                assert copy["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"] == "multikueue"
                job = w.store(worker).get("batch", "jobs", "team-a", wl["metadata"]["ownerReferences"][0]["name"])
                assert job["metadata"]["labels"]["kueue.x-k8s.io/prebuilt-workload-name"] == name
                assert "managedBy" not in job["spec"]
            else:
                assert copy is None, f"{name}: the copy on {worker} was not removed"
    # The manager's own Job runs nowhere here: MultiKueue owns it (spec.managedBy).
    assert not [p for p in w.store("manager").list("", "pods", "team-a")[0]]


def test_pending_workload_is_offered_to_every_worker() -> None:
    """More demand than the workers hold: a Workload whose quota the manager reserved but no
    worker admitted has a copy on every worker and is nominated to all."""
    w = _world()
    w.run_for(15 * 60)
    manager = _wls(w, "manager")
    waiting = [o for o in manager.values() if _true(o, "QuotaReserved") and not _true(o, "Admitted")]
    for wl in waiting:
        assert sorted(wl["status"].get("nominatedClusterNames") or []) == sorted(WORKERS)
        assert all(wl["metadata"]["name"] in _wls(w, x) for x in WORKERS)


def test_worker_lost_redispatches_and_loses_nothing() -> None:
    w = _world()
    w.run_for(120)
    lost = "asia-southeast1"
    on_lost = {n for n, o in _wls(w, "manager").items() if (o.get("status") or {}).get("clusterName") == lost}
    assert on_lost, "the scenario puts work on asia-southeast1 first"
    w.set_worker_up(lost, False)
    w.run_for(60)
    mkc = w.store("manager").get(KUEUE, "multikueueclusters", None, lost)
    assert (_cond(mkc, "Active") or {}).get("reason") == "ClientConnectionFailed"
    ac = w.store("manager").get(KUEUE, "admissionchecks", None, "multikueue")
    assert (_cond(ac, "Active") or {}).get("reason") == "SomeActiveClusters"
    # Within workerLostTimeout (15m) the Workloads stay admitted, as Kueue keeps them.
    for n in on_lost:
        wl = _wls(w, "manager")[n]
        assert _true(wl, "Admitted") and wl["status"]["clusterName"] == lost
        assert "kueue.x-k8s.io/multikueue-worker-lost-since" in wl["metadata"]["annotations"]
    w.run_for(15 * 60)
    for n in on_lost:
        wl = _wls(w, "manager")[n]
        assert wl["status"].get("clusterName") != lost, f"{n} is still placed on the lost worker"
    # Brought back: the copies it held for Workloads now running elsewhere are removed.
    w.set_worker_up(lost, True)
    w.run_for(60)
    placed = {n: (o.get("status") or {}).get("clusterName") for n, o in _wls(w, "manager").items()}
    for n in on_lost:
        if placed[n] != lost:
            assert n not in _wls(w, lost)
    # Every Job ends Finished on the manager, each Workload run to its end exactly once there.
    w.run_for(6 * 3600)
    manager = _wls(w, "manager")
    jobs = {j["metadata"]["name"] for j in w.store("manager").list("batch", "jobs", "team-a")[0]}
    assert len(manager) == len(jobs) == 12
    for n, wl in manager.items():
        assert _true(wl, "Finished"), f"{n} never finished: {wl.get('status')}"
        assert wl["status"]["clusterName"] in WORKERS
    for j in w.store("manager").list("batch", "jobs", "team-a")[0]:
        assert _true(j, "Complete"), j["metadata"]["name"]
    assert w.multikueue.dispatched >= 12


_BAD = """
apiVersion: kueuetop.io/v1
kind: Cluster
metadata: {name: hub}
spec: {role: manager}
---
apiVersion: kueuetop.io/v1
kind: Cluster
metadata: {name: good}
spec: {role: worker}
---
apiVersion: kueuetop.io/v1
kind: Cluster
metadata: {name: broken}
spec: {role: worker}
---
apiVersion: v1
kind: Secret
metadata: {name: broken-kubeconfig, namespace: kueue-system}
data: {config: %s}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata: {name: good}
spec: {clusterSource: {kubeConfig: {location: good-kubeconfig}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata: {name: broken}
spec: {clusterSource: {kubeConfig: {location: broken-kubeconfig}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata: {name: nosecret}
spec: {clusterSource: {kubeConfig: {location: nosecret-kubeconfig}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata: {name: mk}
spec: {clusters: [good, broken]}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: mk}
spec:
  controllerName: kueue.x-k8s.io/multikueue
  parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: mk}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: mk-missing}
spec:
  controllerName: kueue.x-k8s.io/multikueue
  parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: nope}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: f}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 10}]}]
  admissionChecksStrategy: {admissionChecks: [{name: mk}]}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: default}
spec: {clusterQueue: cq}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: not-managed
  labels: {kueue.x-k8s.io/queue-name: q}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: bare}
spec:
  queueName: q
  podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}}}]
"""


def test_bad_input_gives_per_cluster_errors_and_the_rest_works() -> None:
    w = _world(_BAD % base64.b64encode(b"x").decode())
    w.run_for(5)
    m = w.store("hub")
    mkcs = {o["metadata"]["name"]: _cond(o, "Active") for o in m.list(KUEUE, "multikueueclusters")[0]}
    assert mkcs["good"]["status"] == "True"
    assert mkcs["broken"]["reason"] == "BadKubeConfig"
    assert mkcs["broken"]["message"] == 'load client config failed: key "kubeconfig" not found in secret "broken-kubeconfig"'
    assert mkcs["nosecret"]["message"] == 'load client config failed: secrets "nosecret-kubeconfig" not found'
    checks = {o["metadata"]["name"]: _cond(o, "Active") for o in m.list(KUEUE, "admissionchecks")[0]}
    assert checks["mk"]["reason"] == "SomeActiveClusters"
    assert checks["mk"]["message"] == "Inactive clusters: [broken]"
    assert checks["mk-missing"]["reason"] == "BadConfig"
    wls = _wls(w, "hub")
    bare = next(c for c in wls["bare"]["status"]["admissionChecks"] if c["name"] == "mk")
    assert bare["message"] == "No multikueue adapter found"
    job_wl = next(o for n, o in wls.items() if n.startswith("job-not-managed"))
    state = next(c for c in job_wl["status"]["admissionChecks"] if c["name"] == "mk")
    assert state["message"].startswith("The owner is not managed by Kueue")
    # Rejected → Kueue deactivates the Workload.
    assert job_wl["spec"]["active"] is False


def test_kubeconfig_server_is_read_from_the_current_context() -> None:
    text = """
clusters: [{name: a, cluster: {server: "https://a:6443"}}, {name: b, cluster: {server: "https://b:6443"}}]
contexts: [{name: ca, context: {cluster: a}}, {name: cb, context: {cluster: b}}]
current-context: cb
"""
    assert server_of_kubeconfig(text) == "https://b:6443"
    with pytest.raises(ValueError, match="no server"):
        server_of_kubeconfig("clusters: []\n")


@pytest.mark.parametrize(("text", "message"), [
    ("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n", "exactly one Cluster with role manager"),
    ("apiVersion: kueuetop.io/v1\nkind: Cluster\nmetadata: {name: m}\nspec: {role: manager}\n---\n"
     "apiVersion: v1\nkind: Namespace\nmetadata: {name: x, annotations: {kueuetop.io/cluster: nope}}\n",
     "no Cluster named 'nope'"),
    ("apiVersion: kueuetop.io/v1\nkind: Cluster\nmetadata: {name: m}\nspec: {role: manager}\n---\n"
     "apiVersion: kueuetop.io/v1\nkind: Action\nspec: {action: cluster-down, target: cluster/zz}\n",
     "not a worker"),
])
def test_multicluster_scenario_errors(text: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        parse_multicluster(text, "bad.yaml")


def test_scale_variant_is_a_manager_and_ten_workers_of_a_thousand_nodes() -> None:
    sc = load_multicluster("multikueue-xl")
    assert len(sc.workers) == 10 and sc.manager == "manager"
    for w in sc.workers:
        pools = sc.scenarios[w].node_pools
        assert [p["spec"]["size"] for p in pools] == [1000]
    jobs = sc.scenarios["manager"].objects("Job")
    assert len(jobs) == 20_000
    assert all(j["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue" for j in jobs)
    mkcs = sc.scenarios["manager"].objects("MultiKueueCluster")
    assert sorted(m["metadata"]["name"] for m in mkcs) == sorted(sc.workers)


def test_hold_on_the_manager_removes_the_worker_copies() -> None:
    """Hold = spec.active false on the manager's Workload (where Kueue expects it): Kueue evicts
    it there, and MultiKueue removes its copy and Job from the worker."""
    w = _world()
    w.settle()
    name, wl = next((n, o) for n, o in _wls(w, "manager").items() if _true(o, "Admitted"))
    worker = wl["status"]["clusterName"]
    assert name in _wls(w, worker)

    def hold(cur: dict[str, Any]) -> dict[str, Any]:
        cur["spec"]["active"] = False
        return cur

    w.store("manager").patch(KUEUE, "workloads", "team-a", name, hold)
    w.run_for(5)
    after = _wls(w, "manager")[name]
    assert not _true(after, "QuotaReserved") and not _true(after, "Admitted")
    assert "clusterName" not in after["status"]
    assert all(name not in _wls(w, x) for x in WORKERS)
    job = after["metadata"]["ownerReferences"][0]["name"]
    assert w.store(worker).try_get("batch", "jobs", "team-a", job) is None


def test_only_a_file_with_cluster_documents_is_a_multicluster_scenario(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Every scenario has ClusterQueues: a single-cluster file is not taken for a multi-cluster one."""
    from pathlib import Path

    import kueuetop.sim.scenarios as scenarios
    from kueuetop.sim.scenarios.multicluster import is_multicluster

    single = Path(scenarios.__file__).parent / "refarch.yaml"
    assert "kind: ClusterQueue" in single.read_text() and not is_multicluster(str(single))
    multi = next((Path(scenarios.__file__).parent / "multicluster").glob("*.yaml"))
    assert is_multicluster(str(multi))
    copy = tmp_path / "mine.yaml"
    copy.write_text(multi.read_text())
    assert is_multicluster(str(copy))
