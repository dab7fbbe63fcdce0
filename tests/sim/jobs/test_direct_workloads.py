"""Workloads created without an owner stand for a job of their shape."""

from tests.sim.helpers import Sim, cond, is_true, node_pool

BASE = """
apiVersion: v1
kind: Namespace
metadata: {name: perf}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: rf}
spec: {}
---
""" + node_pool("cpu", size=1, machine="n2-standard-32")


def workload(name, count=2, runtime="100s"):
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": "perf", "annotations": {"kueuetop.io/runtime": runtime}},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": count, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]}}


def test_admitted_workload_runs_pods_for_its_runtime_then_finishes():
    sim = Sim(BASE)
    sim.run(1)
    sim.create(workload("small-0"))
    sim.run(10)
    assert sim.pods_of("perf") == []
    sim.kueue.admit("perf", "small-0", flavors={"cpu": "rf"})
    sim.run(1)
    pods = sim.pods_of("perf")
    assert len(pods) == 2
    assert all(p["metadata"]["ownerReferences"][0]["kind"] == "Workload" for p in pods)
    assert all(p["status"]["phase"] == "Running" for p in pods)
    assert all(p["metadata"]["annotations"]["kueuetop.io/runtime"] == "100s" for p in pods)
    assert cond(sim.get("workloads", "perf", "small-0"), "PodsReady")["status"] == "True"
    sim.run(98)
    assert not is_true(sim.get("workloads", "perf", "small-0"), "Finished")
    sim.run(5)
    fin = cond(sim.get("workloads", "perf", "small-0"), "Finished")
    assert fin["status"] == "True" and fin["reason"] == "Succeeded"


def test_evicted_workload_loses_its_pods_and_quota():
    sim = Sim(BASE)
    sim.run(1)
    sim.create(workload("big", runtime="1h"))
    sim.kueue.admit("perf", "big", flavors={"cpu": "rf"})
    sim.run(10)
    assert len(sim.pods_of("perf")) == 2
    sim.kueue.evict("perf", "big")
    sim.run(1)
    wl = sim.get("workloads", "perf", "big")
    assert sim.pods_of("perf") == []
    assert not is_true(wl, "QuotaReserved") and cond(wl, "Requeued")["status"] == "True"
    assert cond(wl, "PodsReady")["reason"] == "WaitForStart"
    sim.kueue.admit("perf", "big", flavors={"cpu": "rf"})
    sim.run(1)
    assert len([p for p in sim.pods_of("perf") if p["status"]["phase"] == "Running"]) == 2
