"""Kueue's Job integration and the Job controller in the simulated cluster."""

import hashlib

import pytest

from kueuetop.sim.jobs.framework import workload_name_for_owner
from tests.sim.helpers import GPU_TOLERATION, KUEUE, Sim, cond, is_true, job, node_pool

BASE = """
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: l4}
spec:
  nodeLabels: {cloud.google.com/gke-nodepool: l4-pool}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: high}
value: 1000
---
"""

POOLS = (node_pool("l4-pool", size=2, gpus=2, labels={"cloud.google.com/gke-nodepool": "l4-pool"})
         + "---\n" + node_pool("cpu-pool", size=1, machine="n2-standard-32"))

GPU_FLAVORS = {"cpu": "l4", "memory": "l4", "nvidia.com/gpu": "l4"}


def test_workload_name_follows_kueues_hash():
    # Kueue's own fixture (workload_names_test.go, "RegularInput"): kind/group/owner/uid.
    assert workload_name_for_owner("owner", "uid", "kind", "group") == "kind-owner-2aabf"
    expected = hashlib.sha1(b"Job\nbatch\nsample-job\n0f9d7a1e-1111-4222-8333-944445555666").hexdigest()[:5]
    assert workload_name_for_owner("sample-job", "0f9d7a1e-1111-4222-8333-944445555666", "Job", "batch") == \
        f"job-sample-job-{expected}"
    # "InputThatResultsInTrimmedPrefix": the prefix is cut to 253 - 1 - 5 characters, the hash
    # still covers the full name.
    long = "a" * 247
    name = workload_name_for_owner(long, "uid", "kind", "group")
    assert len(name) == 253 and name.startswith("kind-" + "a" * 242 + "-")
    assert name.endswith(hashlib.sha1(f"kind\ngroup\n{long}\nuid".encode()).hexdigest()[:5])


def test_job_gets_a_workload_as_kueue_builds_it():
    sim = Sim(BASE + POOLS)
    sim.run(1)
    j = sim.create(job("train", parallelism=3, completions=2, gpus=1, tolerations=GPU_TOLERATION,
                       labels={"kueue.x-k8s.io/priority-class": "high"}))
    sim.run(1)
    uid = j["metadata"]["uid"]
    digest = hashlib.sha1(("Job\nbatch\ntrain\n" + uid).encode()).hexdigest()
    name = "job-train-" + digest[:5]
    wl = sim.get("workloads", "team-a", name)
    assert wl is not None, [w["metadata"]["name"] for w in sim.list("workloads")]
    assert wl["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] == uid
    [ref] = wl["metadata"]["ownerReferences"]
    assert ref == {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": uid,
                   "controller": True, "blockOwnerDeletion": True}
    assert wl["spec"]["queueName"] == "lq"
    [ps] = wl["spec"]["podSets"]
    assert ps["name"] == "main" and ps["count"] == 2  # min(parallelism, completions)
    assert ps["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == 1
    assert wl["spec"]["priority"] == 1000
    assert wl["spec"]["priorityClassRef"] == {"group": KUEUE, "kind": "WorkloadPriorityClass", "name": "high"}
    assert wl["metadata"]["annotations"]["kueuetop.io/runtime"] == "120s"
    # Not admitted: the Job stays suspended and has no pods.
    sim.run(60)
    assert sim.get("jobs", "team-a", "train")["spec"]["suspend"] is True
    assert sim.pods_of("team-a") == []


def test_pod_priority_class_sets_workload_priority_and_waits_for_the_class():
    sim = Sim(BASE)
    sim.create(job("j", priority_class="batch-low"))
    sim.run(1)
    assert sim.list("workloads", "team-a") == []  # PriorityClass missing: Kueue retries
    sim.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": "batch-low"}, "value": 50})
    sim.run(1)
    [wl] = sim.list("workloads", "team-a")
    assert wl["spec"]["priority"] == 50
    assert wl["spec"]["priorityClassRef"] == {"group": "scheduling.k8s.io", "kind": "PriorityClass",
                                              "name": "batch-low"}


def test_unsuspended_queued_job_is_suspended_before_it_runs():
    sim = Sim(BASE + POOLS)
    sim.run(1)
    sim.create(job("eager", suspend=False))
    sim.run(5)
    assert sim.get("jobs", "team-a", "eager")["spec"]["suspend"] is True
    assert [p for p in sim.pods_of("team-a") if p["status"].get("phase") == "Running"] == []


def test_admission_unsuspends_with_flavor_selector_and_pods_run_on_matching_nodes():
    sim = Sim(BASE + POOLS)
    sim.run(1)
    sim.create(job("train", parallelism=3, completions=3, gpus=2, runtime="10m"))
    sim.run(1)
    wl = sim.workload_of_job("team-a", "train")
    sim.kueue.admit("team-a", wl["metadata"]["name"], flavors=GPU_FLAVORS)
    sim.run(5)
    j = sim.get("jobs", "team-a", "train")
    assert j["spec"]["suspend"] is False
    tpl = j["spec"]["template"]
    assert tpl["spec"]["nodeSelector"] == {"cloud.google.com/gke-nodepool": "l4-pool"}
    assert GPU_TOLERATION[0] in tpl["spec"]["tolerations"]
    assert tpl["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "main"
    assert tpl["metadata"]["labels"]["kueue.x-k8s.io/cluster-queue-name"] == "cq"
    pods = sim.pods_of("team-a")
    assert len(pods) == 3
    for p in pods:
        assert p["metadata"]["name"].startswith("train-") and len(p["metadata"]["name"]) == len("train-") + 5
        assert p["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "train"
        assert p["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "main"
        assert p["metadata"]["ownerReferences"][0]["kind"] == "Job"
    running = [p for p in pods if p["status"]["phase"] == "Running"]
    pending = [p for p in pods if p["status"]["phase"] == "Pending"]
    # Two L4 nodes with 2 GPUs each hold two 2-GPU pods; the CPU node is never used.
    assert len(running) == 2 and len(pending) == 1
    nodes = {p["spec"]["nodeName"] for p in running}
    assert len(nodes) == 2 and all("l4-pool" in n for n in nodes)
    c = cond(pending[0], "PodScheduled")
    assert c["status"] == "False" and c["reason"] == "Unschedulable"
    assert c["message"].startswith("0/3 nodes are available: ")
    assert "2 Insufficient nvidia.com/gpu" in c["message"]
    assert "1 node(s) didn't match Pod's node affinity/selector" in c["message"]
    js = sim.get("jobs", "team-a", "train")["status"]
    assert js["active"] == 3 and js["ready"] == 2 and js.get("startTime")
    wl = sim.workload_of_job("team-a", "train")
    assert cond(wl, "PodsReady")["status"] == "False"


def test_job_runs_its_runtime_then_finishes_the_workload():
    sim = Sim(BASE + POOLS)
    sim.run(1)
    sim.create(job("short", parallelism=2, gpus=1, runtime="90s"))
    sim.run(1)
    wl = sim.workload_of_job("team-a", "short")
    sim.kueue.admit("team-a", wl["metadata"]["name"], flavors=GPU_FLAVORS)
    sim.run(10)
    wl = sim.workload_of_job("team-a", "short")
    assert cond(wl, "PodsReady")["status"] == "True" and cond(wl, "PodsReady")["reason"] == "Started"
    assert not is_true(wl, "Finished")
    start = sim.t
    sim.run(120)
    j = sim.get("jobs", "team-a", "short")
    assert is_true(j, "Complete") and j["status"]["succeeded"] == 2
    wl = sim.workload_of_job("team-a", "short")
    fin = cond(wl, "Finished")
    assert fin["status"] == "True" and fin["reason"] == "Succeeded" and fin["message"] == "Job finished successfully"
    assert all(p["status"]["phase"] == "Succeeded" for p in sim.pods_of("team-a"))
    # The pods ran their 90 s, not the default runtime.
    assert sim.t - start >= 80
    assert sim.times == sorted(sim.times), "simulated time went backwards"


def test_completions_above_parallelism_run_in_waves():
    sim = Sim(BASE + POOLS)
    sim.run(1)
    sim.create(job("waves", parallelism=2, completions=4, gpus=1, runtime="60s"))
    sim.run(1)
    sim.kueue.admit("team-a", sim.workload_of_job("team-a", "waves")["metadata"]["name"], flavors=GPU_FLAVORS)
    sim.run(30)
    assert len(sim.pods_of("team-a")) == 2
    sim.run(60)
    assert len(sim.pods_of("team-a")) == 4
    sim.run(70)
    assert is_true(sim.get("jobs", "team-a", "waves"), "Complete")
    assert is_true(sim.workload_of_job("team-a", "waves"), "Finished")


@pytest.mark.parametrize("reason,requeued", [("Preempted", "True"), ("ClusterQueueStopped", "False")])
def test_eviction_suspends_the_job_and_releases_quota_after_pods_stop(reason, requeued):
    sim = Sim(BASE + POOLS)
    sim.run(1)
    sim.create(job("victim", parallelism=2, gpus=1, runtime="1h"))
    sim.run(1)
    wl_name = sim.workload_of_job("team-a", "victim")["metadata"]["name"]
    sim.kueue.admit("team-a", wl_name, flavors=GPU_FLAVORS)
    sim.run(30)
    assert len([p for p in sim.pods_of("team-a") if p["status"]["phase"] == "Running"]) == 2
    order = []

    def watch(ev):
        if ev.kind.plural == "pods" and ev.type == "DELETED":
            order.append(("pod-deleted", ev.rv))
        if ev.kind.plural == "workloads" and ev.type == "MODIFIED" and is_true(ev.old, "QuotaReserved") \
                and not is_true(ev.obj, "QuotaReserved"):
            order.append(("quota-released", ev.rv))

    sim.store.subscribe(watch)
    sim.kueue.evict("team-a", wl_name, reason)
    sim.run(5)
    j = sim.get("jobs", "team-a", "victim")
    assert j["spec"]["suspend"] is True
    assert "nodeSelector" not in j["spec"]["template"]["spec"]  # template restored
    assert "startTime" not in j["status"] and not j["status"].get("active")
    assert sim.pods_of("team-a") == []
    wl = sim.get("workloads", "team-a", wl_name)
    assert not is_true(wl, "QuotaReserved") and "admission" not in wl["status"]
    assert cond(wl, "QuotaReserved")["reason"] == "Pending"
    assert cond(wl, "Requeued")["status"] == requeued and cond(wl, "Requeued")["reason"] == reason
    kinds = [k for k, _ in sorted(order, key=lambda x: x[1])]
    assert kinds == ["pod-deleted", "pod-deleted", "quota-released"]
    # Admitted again: it runs again.
    sim.kueue.admit("team-a", wl_name, flavors=GPU_FLAVORS)
    sim.run(5)
    assert sim.get("jobs", "team-a", "victim")["spec"]["suspend"] is False
    assert len([p for p in sim.pods_of("team-a") if p["status"]["phase"] == "Running"]) == 2


def test_deleting_a_job_deletes_its_workload_and_pods():
    sim = Sim(BASE + POOLS)
    sim.run(1)
    sim.create(job("gone", gpus=1, runtime="1h"))
    sim.run(1)
    sim.kueue.admit("team-a", sim.workload_of_job("team-a", "gone")["metadata"]["name"], flavors=GPU_FLAVORS)
    sim.run(5)
    assert len(sim.pods_of("team-a")) == 1
    sim.store.delete("batch", "jobs", "team-a", "gone", propagation="Orphan")
    sim.run(1)
    assert sim.list("workloads", "team-a") == []


def test_unmanaged_job_runs_without_a_workload():
    sim = Sim(BASE + POOLS)
    sim.run(1)
    sim.create(job("plain", queue=None, suspend=False, runtime="30s"))
    sim.run(1)
    assert sim.list("workloads", "team-a") == []
    [pod] = sim.pods_of("team-a")
    assert pod["status"]["phase"] == "Running" and "cpu-pool" in pod["spec"]["nodeName"]
    sim.run(40)
    assert is_true(sim.get("jobs", "team-a", "plain"), "Complete")
