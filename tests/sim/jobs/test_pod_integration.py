"""Plain pods with a queue label (seeds/001): gate, Workload, ungate, stop."""

import hashlib

from tests.sim.helpers import Sim, cond, is_true, node_pool

BASE = """
apiVersion: v1
kind: Namespace
metadata: {name: team1}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
spec:
  nodeLabels: {cloud.google.com/gke-nodepool: main}
---
""" + node_pool("main", size=1, machine="n2-standard-32", labels={"cloud.google.com/gke-nodepool": "main"})

FLAVORS = {"cpu": "default-flavor", "memory": "default-flavor"}


def pod(name="skypilot-head", runtime="60s"):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "team1",
                         "labels": {"kueue.x-k8s.io/queue-name": "skypilot-local-queue-team1"},
                         "annotations": {"kueuetop.io/runtime": runtime}},
            "spec": {"containers": [{"name": "ray", "image": "ray",
                                     "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}}]}}


def wl_name(p):
    digest = hashlib.sha1(("Pod\n\n" + p["metadata"]["name"] + "\n" + p["metadata"]["uid"]).encode()).hexdigest()
    return f"pod-{p['metadata']['name']}-{digest[:5]}"


def test_queued_pod_is_gated_until_admitted_then_runs_and_finishes():
    sim = Sim(BASE)
    sim.run(1)
    created = sim.create(pod())
    sim.run(30)
    p = sim.get("pods", "team1", "skypilot-head")
    assert p["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/admission"}]
    assert p["metadata"]["labels"]["kueue.x-k8s.io/managed"] == "true"
    assert "nodeName" not in p["spec"]  # SchedulingGated
    wl = sim.get("workloads", "team1", wl_name(created))
    assert wl is not None
    assert wl["metadata"]["ownerReferences"][0]["kind"] == "Pod"
    assert wl["spec"]["podSets"][0]["count"] == 1 and wl["spec"]["podSets"][0]["name"] == "main"
    assert "schedulingGates" not in wl["spec"]["podSets"][0]["template"]["spec"]
    sim.kueue.admit("team1", wl_name(created), flavors=FLAVORS)
    sim.run(5)
    p = sim.get("pods", "team1", "skypilot-head")
    assert "schedulingGates" not in p["spec"]
    assert p["spec"]["nodeSelector"] == {"cloud.google.com/gke-nodepool": "main"}
    assert p["status"]["phase"] == "Running"
    assert cond(sim.get("workloads", "team1", wl_name(created)), "PodsReady")["reason"] == "Started"
    sim.run(60)
    assert sim.get("pods", "team1", "skypilot-head")["status"]["phase"] == "Succeeded"
    assert cond(sim.get("workloads", "team1", wl_name(created)), "Finished")["reason"] == "Succeeded"


def test_evicted_pod_is_stopped_and_quota_released():
    sim = Sim(BASE)
    sim.run(1)
    created = sim.create(pod(runtime="1h"))
    sim.run(1)
    name = wl_name(created)
    sim.kueue.admit("team1", name, flavors=FLAVORS)
    sim.run(5)
    released = []
    sim.store.subscribe(lambda ev: released.append(ev.obj) if ev.kind.plural == "workloads"
                        and ev.type == "MODIFIED" and is_true(ev.old, "QuotaReserved")
                        and not is_true(ev.obj, "QuotaReserved") else None)
    sim.kueue.evict("team1", name, "ClusterQueueStopped")
    sim.run(1)
    assert sim.get("pods", "team1", "skypilot-head") is None
    assert len(released) == 1 and "admission" not in released[0]["status"]


def test_pods_of_jobs_are_not_gated():
    sim = Sim(BASE)
    sim.run(1)
    p = pod("owned")
    p["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ReplicationController", "name": "rc",
                                         "uid": "u", "controller": True}]
    sim.create(p)
    sim.run(1)
    assert "schedulingGates" not in sim.get("pods", "team1", "owned")["spec"]
    assert sim.list("workloads", "team1") == []
