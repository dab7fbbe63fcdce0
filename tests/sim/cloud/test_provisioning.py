"""ProvisioningRequests: Kueue's provisioning check and the autoscaler answering it (seeds/000, 003)."""

from tests.sim.helpers import GPU_TOLERATION, Sim, cond, is_true, job, node_pool

PR = "autoscaling.x-k8s.io"


def setup(provisioning_class, pool, extra_config=""):
    return f"""
apiVersion: v1
kind: Namespace
metadata: {{name: default}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: dws-flavor}}
spec:
  nodeLabels: {{cloud.google.com/gke-nodepool: dws-t4-nodepool}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {{name: dws-prov}}
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters: {{apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: dws-config}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {{name: broken}}
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters: {{apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: missing}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata: {{name: dws-config}}
spec:
  provisioningClassName: {provisioning_class}
  managedResources: [nvidia.com/gpu]
{extra_config}
---
""" + pool


DWS_POOL = node_pool("dws-t4-nodepool", size=0, minSize=0, maxSize=1, gpus=1, model="Tesla T4",
                     machine="n1-standard-2", queuedProvisioning=True, provisioningDelay="2m",
                     capacityLimit=[{"from": "0s", "until": "5m", "nodes": 0}])
FLAVORS = {"cpu": "dws-flavor", "memory": "dws-flavor", "nvidia.com/gpu": "dws-flavor"}


def admitted_job(sim, name, checks=("dws-prov",)):
    sim.create(job(name, ns="default", queue="dws-local-queue", gpus=1, cpu="100m", runtime="120s",
                   tolerations=GPU_TOLERATION))
    sim.run(1)
    wl = sim.workload_of_job("default", name)["metadata"]["name"]
    sim.kueue.admit("default", wl, flavors=FLAVORS, checks=checks)
    sim.run(1)
    return wl


def check_state(sim, wl, check="dws-prov"):
    for c in sim.get("workloads", "default", wl)["status"].get("admissionChecks") or []:
        if c["name"] == check:
            return c
    return None


def test_admission_checks_of_the_controller_become_active():
    sim = Sim(setup("queued-provisioning.gke.io", DWS_POOL))
    sim.run(1)
    ok = cond(sim.get("admissionchecks", None, "dws-prov"), "Active")
    assert (ok["status"], ok["reason"]) == ("True", "Active")
    bad = cond(sim.get("admissionchecks", None, "broken"), "Active")
    assert (bad["status"], bad["reason"]) == ("False", "BadParametersRef")
    assert bad["message"] == 'provisioningrequestconfigs.kueue.x-k8s.io "missing" not found'


def test_dws_request_waits_for_the_pool_then_provisions_nodes_and_the_job_runs():
    sim = Sim(setup("queued-provisioning.gke.io", DWS_POOL))
    sim.run(1)
    wl = admitted_job(sim, "sample-job")
    pr_name = f"{wl}-dws-prov-1"
    pr = sim.get("provisioningrequests", "default", pr_name)
    assert pr is not None, [p["metadata"]["name"] for p in sim.list("provisioningrequests")]
    assert pr["spec"]["provisioningClassName"] == "queued-provisioning.gke.io"
    assert pr["spec"]["podSets"] == [{"podTemplateRef": {"name": f"ppt-{pr_name}-main"}, "count": 1}]
    assert pr["metadata"]["ownerReferences"][0]["name"] == wl
    acc = cond(pr, "Accepted")
    assert (acc["status"], acc["reason"], acc["message"]) == \
        ("True", "SuccessfullyQueued", "Provisioning Request was successfully queued.")
    prov = cond(pr, "Provisioned")
    assert (prov["status"], prov["reason"]) == ("False", "ResourcePoolExhausted")
    assert prov["message"] == ("Waiting for resources. Currently there are not enough resources available to "
                               "fulfill the request.")
    state = check_state(sim, wl)
    assert state["state"] == "Pending" and state["message"] == prov["message"]
    assert not is_true(sim.get("workloads", "default", wl), "Admitted")
    assert sim.get("jobs", "default", "sample-job")["spec"]["suspend"] is True
    # The pool may grow at 5m; the nodes take 2m to come up.
    sim.run(5 * 60 - sim.t + 60)
    assert sim.list("nodes") == []
    assert cond(sim.get("provisioningrequests", "default", pr_name), "Provisioned")["status"] == "False"
    sim.run(7 * 60 - sim.t)
    [node] = sim.list("nodes")
    assert node["metadata"]["labels"]["cloud.google.com/gke-nodepool"] == "dws-t4-nodepool"
    prov = cond(sim.get("provisioningrequests", "default", pr_name), "Provisioned")
    assert (prov["status"], prov["reason"], prov["message"]) == \
        ("True", "Provisioned", "Provisioning Request was successfully provisioned.")
    state = check_state(sim, wl)
    assert state["state"] == "Ready"
    assert state["podSetUpdates"][0]["annotations"]["autoscaling.x-k8s.io/consume-provisioning-request"] == pr_name
    sim.run(1)
    assert is_true(sim.get("workloads", "default", wl), "Admitted")
    [pod] = sim.pods_of("default")
    assert pod["metadata"]["annotations"]["autoscaling.x-k8s.io/consume-provisioning-request"] == pr_name
    assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"] == node["metadata"]["name"]
    sim.run(125)
    assert is_true(sim.get("workloads", "default", wl), "Finished")
    assert sim.get("provisioningrequests", "default", pr_name) is None  # finished: request deleted
    sim.run(11 * 60)
    assert sim.list("nodes") == []  # the DWS node goes once idle
    assert sim.times == sorted(sim.times)


def test_dws_requests_queue_in_order_for_a_small_pool():
    pool = node_pool("dws-t4-nodepool", size=0, maxSize=1, gpus=1, model="Tesla T4", machine="n1-standard-2",
                     queuedProvisioning=True, provisioningDelay="2m")
    sim = Sim(setup("queued-provisioning.gke.io", pool))
    sim.run(1)
    first = admitted_job(sim, "first")
    second = admitted_job(sim, "second")
    pr1 = sim.get("provisioningrequests", "default", f"{first}-dws-prov-1")
    pr2 = sim.get("provisioningrequests", "default", f"{second}-dws-prov-1")
    assert cond(pr1, "Provisioned") is None  # scaling up
    assert cond(pr2, "Provisioned")["reason"] == "ResourcePoolExhausted"  # maxSize 1 is taken
    sim.run(125)
    assert is_true(sim.get("provisioningrequests", "default", f"{first}-dws-prov-1"), "Provisioned")
    assert not is_true(sim.get("provisioningrequests", "default", f"{second}-dws-prov-1"), "Provisioned")


def test_check_capacity_answers_from_free_capacity_without_scaling():
    pool = node_pool("dws-t4-nodepool", size=1, gpus=1, model="Tesla T4", machine="n1-standard-2")
    sim = Sim(setup("check-capacity.autoscaling.x-k8s.io", pool))
    sim.run(1)
    first = admitted_job(sim, "first")
    pr1 = sim.get("provisioningrequests", "default", f"{first}-dws-prov-1")
    assert cond(pr1, "Accepted")["reason"] == "Accepted"
    found = cond(pr1, "Provisioned")
    assert (found["status"], found["reason"], found["message"]) == ("True", "CapacityIsFound",
                                                                    "Capacity is found in the cluster")
    sim.run(1)
    assert is_true(sim.get("workloads", "default", first), "Admitted")
    second = admitted_job(sim, "second")
    pr2 = sim.get("provisioningrequests", "default", f"{second}-dws-prov-1")
    nf = cond(pr2, "Provisioned")
    assert (nf["status"], nf["reason"]) == ("False", "CapacityIsNotFound")
    assert check_state(sim, second)["message"] == "Capacity is not found, CA will try to find it later."
    assert len(sim.list("nodes")) == 1
    sim.run(125)  # the first job ends and frees the GPU
    assert is_true(sim.get("provisioningrequests", "default", f"{second}-dws-prov-1"), "Provisioned")
    assert check_state(sim, second)["state"] == "Ready"
    assert len(sim.list("nodes")) == 1


def test_check_capacity_requests_made_together_take_the_capacity_in_turn():
    """Two requests for the node's one GPU, made at one instant: the first checked finds it and
    books it (cluster-autoscaler's checkcapacity class commits a found request to its snapshot
    before it checks the next, and holds it for the request's pods), so the other is not found,
    rather than both being told yes."""
    pool = node_pool("dws-t4-nodepool", size=1, gpus=1, model="Tesla T4", machine="n1-standard-2")
    sim = Sim(setup("check-capacity.autoscaling.x-k8s.io", pool))
    sim.run(1)
    names = []
    for name in ("older", "newer"):
        sim.create(job(name, ns="default", queue="dws-local-queue", gpus=1, cpu="100m", runtime="120s",
                       tolerations=GPU_TOLERATION))
        sim.run(1)
        names.append(sim.workload_of_job("default", name)["metadata"]["name"])
    for wl in names:  # both reserved at one instant: their requests are checked in one pass
        sim.kueue.admit("default", wl, flavors=FLAVORS, checks=("dws-prov",))
    sim.run(1)
    found = {wl: cond(sim.get("provisioningrequests", "default", f"{wl}-dws-prov-1"), "Provisioned") for wl in names}
    assert sorted((c["status"], c["reason"]) for c in found.values()) == [("False", "CapacityIsNotFound"),
                                                                        ("True", "CapacityIsFound")]
    second = next(wl for wl, c in found.items() if c["status"] == "False")
    sim.run(125)  # the first job ends and frees the GPU: the other's request finds it then
    assert is_true(sim.get("provisioningrequests", "default", f"{second}-dws-prov-1"), "Provisioned")


def test_failed_request_is_retried_with_backoff_then_rejected():
    pool = node_pool("dws-t4-nodepool", size=1, gpus=1, model="Tesla T4", machine="n1-standard-2")
    sim = Sim(setup("best-effort-atomic-scale-up.autoscaling.x-k8s.io", pool,
                    "  retryStrategy: {backoffLimitCount: 1, backoffBaseSeconds: 30}"))
    sim.run(1)
    # A fixed pool can't grow: the request waits; the autoscaler then gives up on it.
    wl = admitted_job(sim, "unlucky")
    pr = sim.get("provisioningrequests", "default", f"{wl}-dws-prov-1")
    assert cond(pr, "Provisioned")["reason"] == "CapacityIsNotFound"

    def fail(name):
        pr = sim.get("provisioningrequests", "default", name)
        pr["status"]["conditions"].append({"type": "Failed", "status": "True", "reason": "FailedToBookCapacity",
                                           "message": "no capacity", "lastTransitionTime": "2023-11-14T22:20:00Z"})
        sim.store.update_status(PR, "provisioningrequests", pr)
        sim.run(1)

    fail(f"{wl}-dws-prov-1")
    state = check_state(sim, wl)
    assert state["state"] == "Retry" and state["message"] == "Retrying after failure: no capacity"
    assert state["requeueAfterSeconds"] == 30
    # Kueue evicts for the retry (check reset to Pending, retryCount 1) and admits again later.
    sim.kueue.evict("default", wl, "AdmissionCheck")
    sim.run(1)
    assert not is_true(sim.get("workloads", "default", wl), "QuotaReserved")
    sim.kueue.admit("default", wl, flavors=FLAVORS, checks=("dws-prov",))
    sim.run(1)
    assert sim.get("provisioningrequests", "default", f"{wl}-dws-prov-2") is not None
    fail(f"{wl}-dws-prov-2")
    state = check_state(sim, wl)
    assert state["state"] == "Rejected" and state["message"] == "no capacity"
