"""When admission checks pass in the forecast: a ProvisioningRequest's when the workload's pods find
nodes on the pools (check-capacity: free capacity only; other classes: the pools grow, queued
pools only for them), other checks at once; and which workloads holding quota it answers."""

from __future__ import annotations

import pytest

from kueuetop.admission.check_timing import NodeCheck, node_checks, provisioning_waits
from kueuetop.admission.forecast import forecast, pending_workloads
from kueuetop.admission.forecast_result import PoolCapacity, RuntimeEstimate
from kueuetop.admission.pod_placement import pools_from_cluster
from kueuetop.kueue.core import parse_node
from kueuetop.kueue.provisioning import CHECK_CAPACITY, QUEUED_PROVISIONING, parse_provisioning_request_config
from tests.builders import (
    T0,
    admission_check,
    admit,
    cluster_queue,
    flavor,
    fq,
    group,
    local_queue,
    namespace,
    snapshot,
    ts,
    workload,
)

NS = "team-a"
GPU = "nvidia.com/gpu"
POOL = "cloud.google.com/gke-nodepool"
NOW = T0 + 100
BEST_EFFORT = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"


def exact(seconds: float) -> RuntimeEstimate:
    return RuntimeEstimate(seconds, seconds, seconds, "exact")


def config(name: str, cls: str, managed: list[str] | None = None):  # type: ignore[no-untyped-def]
    spec: dict = {"provisioningClassName": cls}
    if managed is not None:
        spec["managedResources"] = managed
    return parse_provisioning_request_config({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ProvisioningRequestConfig",
                                              "metadata": {"name": name}, "spec": spec})


def prov_check(name: str, config_name: str) -> dict:
    d = admission_check(name)
    d["spec"]["parameters"] = {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": config_name}
    return d


def base(checks: list[str]) -> list[dict]:
    return [flavor("l4", labels={POOL: "gpu"}), namespace(NS), prov_check("prov", "prov-config"),
            admission_check("other", controller="example.com/approval"),
            cluster_queue("cq", group(GPU, fq("l4", **{GPU: 16})), checks=checks), local_queue(NS, "lq", "cq")]


def waiting(name: str, gpus: int, checks: list[str], since: float = T0) -> dict:
    """Quota reserved at `since`, not admitted: `checks` Pending."""
    w = admit(workload(NS, name, "lq", {GPU: str(gpus)}, created=since - 10), "cq", {GPU: "l4"}, at=since, admitted=False)
    w["status"]["admissionChecks"] = [{"name": c, "state": "Pending", "lastTransitionTime": ts(since)} for c in checks]
    return w


def running(name: str, gpus: int, since: float = T0) -> dict:
    return admit(workload(NS, name, "lq", {GPU: str(gpus)}, created=since - 60), "cq", {GPU: "l4"}, at=since)


def pools(free: tuple[int, ...], max_nodes: int, delay: float = 120.0, queued: bool = False) -> dict[str, PoolCapacity]:
    return {"gpu": PoolCapacity("gpu", {POOL: "gpu"}, 8, free, max_nodes, delay, queued=queued)}


@pytest.mark.parametrize(("cls", "admitted_after"), [(CHECK_CAPACITY, 500.0), (BEST_EFFORT, 120.0),
                                                     (QUEUED_PROVISIONING, 120.0)])
def test_a_provisioning_check_passes_when_the_pods_find_nodes(cls: str, admitted_after: float) -> None:
    # r holds the pool's one node until NOW + 500; the pool may grow by a node (Ready 120 s after
    # it is asked for). check-capacity looks at free capacity and never grows the pool: w is
    # admitted when r's GPUs free. The other classes scale up: admitted when the new node is Ready.
    snap = snapshot(*base(["prov"]), running("r", 8), waiting("w", 8, ["prov"]))
    checks = node_checks(snap.admission_checks, [config("prov-config", cls)])
    runtimes = {(NS, "r"): exact(600), (NS, "w"): exact(300)}
    f = forecast(snap, runtimes, NOW, pools=pools((0,), max_nodes=2), placements={(NS, "r"): (("gpu", 0, 8),)},
                 checks=checks)
    w = f.workloads[(NS, "w")]
    assert w.start == NOW + admitted_after and w.pods_start == w.start
    assert w.flavors and w.flavors[0].flavors == {GPU: "l4"}  # the flavors it holds already
    # Without pools nothing times the check: the workload holding quota is not answered.
    assert (NS, "w") not in forecast(snap, runtimes, NOW).workloads


def test_a_pending_workload_is_admitted_when_its_provisioning_request_has_nodes_not_at_reservation() -> None:
    # p has no quota yet; it gets it at NOW (16 GPUs of quota, 8 used), then its check waits for a
    # new node (Ready 300 s later): admission at NOW + 300; the forward run does not count its
    # reservation as its start.
    snap = snapshot(*base(["prov"]), running("r", 8), workload(NS, "p", "lq", {GPU: "8"}, created=T0 + 1))
    checks = node_checks(snap.admission_checks, [config("prov-config", QUEUED_PROVISIONING)])
    runtimes = {(NS, "r"): exact(3600), (NS, "p"): exact(300)}
    placed = {(NS, "r"): (("gpu", 0, 8),)}
    f = forecast(snap, runtimes, NOW, pools=pools((0,), max_nodes=2, delay=300.0), placements=placed, checks=checks)
    assert f.workloads[(NS, "p")].start == NOW + 300
    # The same without the check: admitted at reservation, its pods wait for the node.
    snap2 = snapshot(*base([]), running("r", 8), workload(NS, "p", "lq", {GPU: "8"}, created=T0 + 1))
    p2 = forecast(snap2, runtimes, NOW, pools=pools((0,), max_nodes=2, delay=300.0), placements=placed).workloads[(NS, "p")]
    assert (p2.start, p2.pods_start) == (NOW, NOW + 300)


def test_a_queued_pool_grows_only_for_provisioning_requests() -> None:
    # The pool is GKE's queued provisioning: w's ProvisioningRequest grows it; p, in a queue with
    # no check, waits as its pods would (cluster-autoscaler does not scale a queued pool for them).
    objs = base(["prov"])
    objs += [cluster_queue("plain", group(GPU, fq("l4", **{GPU: 16}))), local_queue(NS, "lq-plain", "plain")]
    p = admit(workload(NS, "p", "lq-plain", {GPU: "8"}, created=T0 - 5), "plain", {GPU: "l4"}, at=T0)
    snap = snapshot(*objs, waiting("w", 8, ["prov"]), p)
    checks = node_checks(snap.admission_checks, [config("prov-config", QUEUED_PROVISIONING)])
    f = forecast(snap, {(NS, "w"): exact(300), (NS, "p"): exact(300)}, NOW,
                 pools=pools((), max_nodes=1, delay=240.0, queued=True), placements={}, checks=checks)
    assert f.workloads[(NS, "w")].start == NOW + 240


def test_check_capacity_for_pods_no_pool_takes_never_passes() -> None:
    # The flavor's nodes are in no pool the forecast knows: elsewhere such pods run at once, but
    # check-capacity finds no capacity for them, now or later.
    objs = [flavor("a100", labels={POOL: "a100"}), namespace(NS), prov_check("prov", "prov-config"),
            cluster_queue("cq", group(GPU, fq("a100", **{GPU: 8})), checks=["prov"]), local_queue(NS, "lq", "cq")]
    w = admit(workload(NS, "w", "lq", {GPU: "8"}, created=T0 - 10), "cq", {GPU: "a100"}, at=T0, admitted=False)
    w["status"]["admissionChecks"] = [{"name": "prov", "state": "Pending", "lastTransitionTime": ts(T0)}]
    snap = snapshot(*objs, w)
    checks = node_checks(snap.admission_checks, [config("prov-config", CHECK_CAPACITY)])
    f = forecast(snap, {(NS, "w"): exact(300)}, NOW, pools=pools((8,), max_nodes=1), placements={}, checks=checks)
    got = f.workloads[(NS, "w")]
    assert got.start is None and f.complete
    assert "admission check prov never passes" in got.never
    # Best-effort scale-up on the same: no known pool to wait for, so taken to run at once.
    scaling = node_checks(snap.admission_checks, [config("prov-config", BEST_EFFORT)])
    assert forecast(snap, {(NS, "w"): exact(300)}, NOW, pools=pools((8,), max_nodes=1), placements={},
                    checks=scaling).workloads[(NS, "w")].start == NOW


def test_which_workloads_holding_quota_are_answered() -> None:
    snap = snapshot(*base(["prov", "other"]), waiting("both", 8, ["prov", "other"]), waiting("prov-only", 8, ["prov"]),
                    waiting("passed", 8, []), running("r", 8))
    checks = node_checks(snap.admission_checks, [config("prov-config", QUEUED_PROVISIONING)])
    assert set(checks) == {"prov"}  # the approval controller's is not a ProvisioningRequest's
    # Only one waiting for nothing but ProvisioningRequests: "other" passes when its controller says.
    assert pending_workloads(snap, checks) == {(NS, "prov-only")}
    assert pending_workloads(snap, None) == set()


def test_a_check_for_resources_the_workload_does_not_ask_passes_at_once() -> None:
    # Kueue creates no ProvisioningRequest for a workload requesting none of the config's
    # managedResources: the check is Ready at once (pkg/controller/admissionchecks/provisioning).
    snap = snapshot(*base(["prov"]), waiting("w", 8, ["prov"]))
    wl = snap.workloads[(NS, "w")]
    managed = node_checks(snap.admission_checks, [config("prov-config", QUEUED_PROVISIONING, ["example.com/tpu"])])
    assert provisioning_waits(wl, managed) is None
    gpus = node_checks(snap.admission_checks, [config("prov-config", QUEUED_PROVISIONING, [GPU])])
    assert provisioning_waits(wl, gpus) == (("prov",), True)
    # Its config not known: a ProvisioningRequest check all the same, taken to grow the pools.
    assert node_checks(snap.admission_checks, []) == {"prov": NodeCheck()}
    assert NodeCheck().scales and not NodeCheck(CHECK_CAPACITY).scales


def test_gke_queued_provisioning_nodes_make_a_queued_pool() -> None:
    """A live cluster's DWS nodes carry `cloud.google.com/gke-queued: "true"`: their pool is queued
    (grown, and used, only for ProvisioningRequests); an ordinary pool is not."""
    def node(name: str, pool_name: str, queued: bool) -> dict:
        labels = {POOL: pool_name, **({"cloud.google.com/gke-queued": "true"} if queued else {})}
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": {},
                "status": {"allocatable": {GPU: "8"}, "conditions": [{"type": "Ready", "status": "True"}]}}

    built = pools_from_cluster([parse_node(node("d-1", "dws", True)), parse_node(node("g-1", "gpu", False))], [], {})
    assert (built["dws"].queued, built["gpu"].queued) == (True, False)


def test_the_oldest_provisioning_request_is_served_first() -> None:
    # x and y wait on check-capacity for the GPUs r frees at NOW + 500. y's request is the older
    # (its check went Pending at T0 - 300), though its quota was reserved again later (T0 + 50,
    # after a queue was stopped and resumed, say): cluster-autoscaler serves the oldest request
    # first, so y is admitted at NOW + 500 and x when y's run ends.
    x = waiting("x", 8, ["prov"], since=T0)
    y = waiting("y", 8, ["prov"], since=T0 + 50)
    y["status"]["admissionChecks"][0]["lastTransitionTime"] = ts(T0 - 300)
    snap = snapshot(*base(["prov"]), running("r", 8), x, y)
    checks = node_checks(snap.admission_checks, [config("prov-config", CHECK_CAPACITY)])
    runtimes = {(NS, "r"): exact(600), (NS, "x"): exact(300), (NS, "y"): exact(300)}
    f = forecast(snap, runtimes, NOW, pools=pools((0,), max_nodes=1), placements={(NS, "r"): (("gpu", 0, 8),)},
                 checks=checks)
    assert (f.workloads[(NS, "y")].start, f.workloads[(NS, "x")].start) == (NOW + 500, NOW + 800)
