"""GPU → pod → Workload join and the admitted-but-idle rule (pure)."""

from __future__ import annotations

from kueuetop.kueue.gpu import GpuSample
from kueuetop.sources.dcgm import PodRef
from kueuetop.sources.gpu_join import BUSY, IDLE, LOW, STALE, UNKNOWN, pod_workloads, workload_gpu_use

WL_API = "kueue.x-k8s.io/v1beta2"
ADMITTED = {"conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}]}


def obj(kind: str, ns: str, name: str, uid: str, owners=(), labels=None, status=None, api="v1") -> dict:
    meta = {"name": name, "namespace": ns, "uid": uid, "labels": labels or {},
            "ownerReferences": [{"apiVersion": a, "kind": k, "name": n, "uid": u, "controller": True}
                                for a, k, n, u in owners]}
    return {"apiVersion": api, "kind": kind, "metadata": meta, "status": status or {}}


def wl(ns: str, name: str, uid: str, owners=(), labels=None, admitted=True) -> dict:
    return obj("Workload", ns, name, uid, owners, labels, ADMITTED if admitted else {}, WL_API)


def test_pod_to_workload_rules() -> None:
    pods = [
        obj("Pod", "a", "job1-x", "p1", [("batch/v1", "Job", "job1", "j1")]),  # Job owns Workload
        obj("Pod", "a", "job2-x", "p2", [("batch/v1", "Job", "job2", "j2")]),  # job-uid label only
        obj("Pod", "a", "plain", "p3"),  # plain-pod integration: Workload owned by the Pod
        obj("Pod", "a", "direct-0", "p4", [(WL_API, "Workload", "direct", "w4")]),  # Workload owns pod
        obj("Pod", "a", "js-0", "p5", [("batch/v1", "Job", "js-job", "j5")]),  # Job → JobSet → Workload
        obj("Pod", "a", "grp-0", "p6", labels={"kueue.x-k8s.io/pod-group-name": "grp"}),
        obj("Pod", "a", "lbl-0", "p7", labels={"batch.kubernetes.io/controller-uid": "j7"}),
        obj("Pod", "a", "orphan", "p8"),
    ]
    wls = [
        wl("a", "job-job1-1", "w1", [("batch/v1", "Job", "job1", "j1")]),
        wl("a", "job-job2-2", "w2", labels={"kueue.x-k8s.io/job-uid": "j2"}),
        wl("a", "pod-plain-3", "w3", [("v1", "Pod", "plain", "p3")]),
        wl("a", "direct", "w4"),
        wl("a", "jobset-js", "w5", [("jobset.x-k8s.io/v1alpha2", "JobSet", "js", "s5")]),
        wl("a", "grp", "w6"),
        wl("a", "job-lbl-7", "w7", [("batch/v1", "Job", "lbl", "j7")]),
    ]
    owners = [obj("Job", "a", "js-job", "j5", [("jobset.x-k8s.io/v1alpha2", "JobSet", "js", "s5")], api="batch/v1")]
    got = pod_workloads(pods, wls, owners)
    assert got == {("a", "job1-x"): ("a", "job-job1-1"), ("a", "job2-x"): ("a", "job-job2-2"),
                   ("a", "plain"): ("a", "pod-plain-3"), ("a", "direct-0"): ("a", "direct"),
                   ("a", "js-0"): ("a", "jobset-js"), ("a", "grp-0"): ("a", "grp"),
                   ("a", "lbl-0"): ("a", "job-lbl-7")}


def test_owner_cycle_terminates() -> None:
    pods = [obj("Pod", "a", "p", "p1", [("v1", "X", "x", "x1")])]
    owners = [obj("X", "a", "x", "x1", [("v1", "Y", "y", "y1")]), obj("Y", "a", "y", "y1", [("v1", "X", "x", "x1")])]
    assert pod_workloads(pods, [], owners) == {}


def gpu(node: str, g: str, util: float | None, pod: str = "", ns: str = "a", stale: bool = False) -> GpuSample:
    return GpuSample(node, g, util=util, namespace=ns if pod else "", pod=pod, at=1000.0, stale=stale)


def test_workload_states() -> None:
    pods = [obj("Pod", "a", f"{n}-0", f"p-{n}", [(WL_API, "Workload", n, f"w-{n}")])
            for n in ("busy", "idle", "short", "gap", "stale", "nodata", "shared")]
    wls = [wl("a", n, f"w-{n}") for n in ("busy", "idle", "short", "gap", "stale", "nodata")]
    wls += [wl("a", "shared", "w-shared"), wl("a", "pending", "w-pending", admitted=False)]
    samples = [
        gpu("n1", "0", 90, "busy-0"), gpu("n1", "1", 1, "busy-0"),
        gpu("n2", "0", 1, "idle-0"), gpu("n2", "1", 2, "idle-0"),
        gpu("n3", "0", 1, "short-0"),
        gpu("n4", "0", 1, "gap-0"),
        gpu("n5", "0", 0, "stale-0", stale=True),
        gpu("n6", "0", 3, "other-pod"),  # the shared device names another pod first
    ]
    hist = {
        ("n2", "0"): [(t, 1.0) for t in range(0, 1001, 100)],
        ("n2", "1"): [(t, 2.0) for t in range(0, 1001, 100)],
        ("n3", "0"): [(0, 80.0), *[(t, 1.0) for t in range(700, 1001, 100)]],
        ("n4", "0"): [(0, 1.0), (500, None), (600, 1.0), (1000, 1.0)],
        ("n6", "0"): [(t, 3.0) for t in range(0, 1001, 100)],
    }
    sharers = {("n6", "0"): (PodRef("a", "other-pod"), PodRef("a", "shared-0"))}
    use = workload_gpu_use(samples, pods, wls, now=1000.0, history=hist, sharers=sharers,
                           threshold=5.0, idle_for=600.0)
    states = {k[1]: v.state for k, v in use.items()}
    assert states == {"busy": BUSY, "idle": IDLE, "short": LOW, "gap": LOW, "stale": STALE,
                      "nodata": UNKNOWN, "shared": IDLE}
    assert use[("a", "busy")].util_max == 90 and use[("a", "busy")].util_mean == 45.5
    assert use[("a", "idle")].gpus == (("n2", "0"), ("n2", "1")) and use[("a", "idle")].admitted_but_idle
    assert use[("a", "idle")].idle_seconds == 1000.0
    assert use[("a", "short")].idle_seconds == 300.0
    assert use[("a", "stale")].util_mean is None


def test_without_history_nothing_is_called_idle() -> None:
    pods = [obj("Pod", "a", "p", "p1", [(WL_API, "Workload", "w", "w1")])]
    use = workload_gpu_use([gpu("n", "0", 0.5, "p")], pods, [wl("a", "w", "w1")], now=1.0)
    assert use[("a", "w")].state == LOW


def test_idleness_counts_from_admission() -> None:
    pods = [obj("Pod", "a", "p", "p1", [(WL_API, "Workload", "w", "w1")])]
    w = wl("a", "w", "w1")
    w["status"]["conditions"][1]["lastTransitionTime"] = "1970-01-01T00:13:20Z"  # t = 800
    hist = {("n", "0"): [(t, 0.0) for t in range(0, 1001, 100)]}  # free (0 %) before admission
    use = workload_gpu_use([gpu("n", "0", 0.5, "p")], pods, [w], now=1000.0, history=hist, idle_for=600)
    assert use[("a", "w")].state == LOW and use[("a", "w")].idle_seconds == 200.0
    use = workload_gpu_use([gpu("n", "0", 0.5, "p")], pods, [w], now=1000.0, history=hist, idle_for=600,
                           since_admission=False)
    assert use[("a", "w")].state == IDLE
