"""The forecast with node pools, on pools worked out by hand: pods wait for an autoscaled pool's new
nodes or for GPUs a finish or a preemption frees, and a job's runtime counts from its pods' start.
Also the builders of the pools and placements from Nodes and Pods."""

from __future__ import annotations

from datetime import UTC, datetime

from kueuetop.admission.forecast import forecast
from kueuetop.admission.forecast_result import PoolCapacity, RuntimeEstimate
from kueuetop.admission.pod_placement import placements_from_cluster, pools_from_cluster
from kueuetop.kueue.core import Pod, parse_node, parse_pod
from tests.builders import (
    T0,
    admit,
    cluster_queue,
    flavor,
    fq,
    group,
    local_queue,
    namespace,
    snapshot,
    workload,
)

NS = "team-a"
GPU = "nvidia.com/gpu"
POOL_LABEL = "cloud.google.com/gke-nodepool"


def exact(seconds: float) -> RuntimeEstimate:
    return RuntimeEstimate(seconds, seconds, seconds, "exact")


def base(quota: int, within: str | None = None) -> list[dict]:
    return [flavor("l4", labels={POOL_LABEL: "gpu"}), flavor("cpu"), namespace(NS),
            cluster_queue("cq", group(GPU, fq("l4", **{GPU: quota})), within=within),  # type: ignore[arg-type]
            cluster_queue("cq-cpu", group("cpu", fq("cpu", cpu=10))),
            local_queue(NS, "lq", "cq"), local_queue(NS, "lq-cpu", "cq-cpu")]


def pool(free: tuple[int, ...], max_nodes: int, delay: float = 60.0) -> dict[str, PoolCapacity]:
    return {"gpu": PoolCapacity("gpu", {POOL_LABEL: "gpu", "zone": "z1"}, 8, free, max_nodes, delay),
            "other": PoolCapacity("other", {POOL_LABEL: "other"}, 8, (8, 8), 2)}


def running(name: str, n: int, since: float, priority: int = 0) -> dict:
    return admit(workload(NS, name, "lq", {GPU: str(n)}, priority=priority, created=since - 60), "cq", {GPU: "l4"}, at=since)


def test_pods_start_when_the_pool_has_scaled_up_and_the_next_job_waits_for_that_run() -> None:
    # r fills the pool's one node; a gets quota now, its pod needs a new node (Ready 60 s later)
    # and runs 300 s from then; b waits for a's quota until a ends, then takes a's node at once.
    snap = snapshot(*base(quota=16), running("r", 8, T0),
                    workload(NS, "a", "lq", {GPU: "8"}, created=T0 + 1), workload(NS, "b", "lq", {GPU: "8"}, created=T0 + 2))
    now = T0 + 100
    runtimes = {(NS, "r"): exact(3600), (NS, "a"): exact(300), (NS, "b"): exact(300)}
    f = forecast(snap, runtimes, now, pools=pool((0,), max_nodes=2), placements={(NS, "r"): (("gpu", 0, 8),)})
    a, b = f.workloads[(NS, "a")], f.workloads[(NS, "b")]
    assert (a.start, a.pods_start) == (now, now + 60)
    assert (b.start, b.pods_start) == (now + 360, now + 360)
    assert b.after == ((NS, "a"),)
    # Without pools, pods run at admission: a ends at now + 300 and b starts then.
    plain = forecast(snap, runtimes, now)
    assert plain.workloads[(NS, "b")].start == now + 300 and plain.workloads[(NS, "b")].pods_start is None


def test_on_a_full_pool_pods_wait_for_a_finish_in_the_order_of_admission() -> None:
    # One node, at its maximum: a has quota now but its pod waits for r's GPUs (r ends at T0 + 600);
    # b gets r's quota then and waits for a's pod to end (T0 + 600 + 300).
    snap = snapshot(*base(quota=16), running("r", 8, T0),
                    workload(NS, "a", "lq", {GPU: "8"}, created=T0 + 1), workload(NS, "b", "lq", {GPU: "8"}, created=T0 + 2))
    runtimes = {(NS, "r"): exact(600), (NS, "a"): exact(300), (NS, "b"): exact(300)}
    f = forecast(snap, runtimes, T0 + 100, pools=pool((0,), max_nodes=1), placements={(NS, "r"): (("gpu", 0, 8),)})
    a, b = f.workloads[(NS, "a")], f.workloads[(NS, "b")]
    assert (a.start, a.pods_start) == (T0 + 100, T0 + 600)
    assert (b.start, b.pods_start) == (T0 + 600, T0 + 900)


def test_two_pods_of_one_job_on_a_half_free_pool_start_when_the_second_has_a_node() -> None:
    # Node 0 has 4 GPUs free, node 1 none (r's, until T0 + 500): a's first 4-GPU pod runs at once,
    # its second waits for r's node. Pods are bound one by one (no gang scheduling): with a short
    # run the first pod ends first and the second takes its GPUs.
    snap = snapshot(*base(quota=16), running("r", 8, T0), workload(NS, "a", "lq", {GPU: "4"}, count=2, created=T0 + 1))
    for run, pods_start in ((1000, T0 + 500), (300, T0 + 400)):
        runtimes = {(NS, "r"): exact(500), (NS, "a"): exact(run)}
        f = forecast(snap, runtimes, T0 + 100, pools=pool((4, 0), max_nodes=2), placements={(NS, "r"): (("gpu", 1, 8),)})
        assert f.workloads[(NS, "a")].pods_start == pods_start, run


def test_a_preemption_frees_the_victims_gpus_at_once() -> None:
    snap = snapshot(*base(quota=8, within="LowerPriority"), running("low", 8, T0),
                    workload(NS, "high", "lq", {GPU: "8"}, priority=100, created=T0 + 10))
    now = T0 + 20
    f = forecast(snap, {(NS, "low"): exact(3600), (NS, "high"): exact(600)}, now,
                 pools=pool((0,), max_nodes=1), placements={(NS, "low"): (("gpu", 0, 8),)})
    high = f.workloads[(NS, "high")]
    assert high.preempts == ((NS, "low"),)
    assert (high.start, high.pods_start) == (now, now)


def test_pods_without_gpus_run_at_admission() -> None:
    snap = snapshot(*base(quota=8), running("r", 8, T0), workload(NS, "c", "lq-cpu", {"cpu": "2"}, created=T0))
    f = forecast(snap, {(NS, "r"): exact(3600), (NS, "c"): exact(60)}, T0 + 5,
                 pools=pool((0,), max_nodes=1), placements={(NS, "r"): (("gpu", 0, 8),)})
    assert (f.workloads[(NS, "c")].start, f.workloads[(NS, "c")].pods_start) == (T0 + 5, T0 + 5)


def test_a_pod_larger_than_any_node_never_starts() -> None:
    snap = snapshot(*base(quota=16), workload(NS, "big", "lq", {GPU: "16"}, created=T0))
    f = forecast(snap, {(NS, "big"): exact(60)}, T0, pools=pool((8,), max_nodes=4), placements={})
    big = f.workloads[(NS, "big")]
    assert big.start == T0 and big.pods_start is None


def _node(name: str, pool_name: str, gpus: int, ready: bool = True, zone: str = "z1", **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {POOL_LABEL: pool_name, "zone": zone, "kubernetes.io/hostname": name}},
            "spec": dict(spec),
            "status": {"allocatable": {GPU: str(gpus), "cpu": "32"},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def _pod(name: str, node: str, gpus: int, phase: str = "Running", job: str = "", started: str = "") -> Pod:
    return parse_pod({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": name, "namespace": NS, "labels": {"job": job}},
                      "spec": {"nodeName": node, "containers": [{"name": "m", "resources": {"requests": {GPU: str(gpus)}}}]},
                      "status": {"phase": phase, **({"startTime": started} if started else {})}})


def test_pools_and_placements_are_built_from_nodes_and_their_pods() -> None:
    nodes = [parse_node(n) for n in (
        _node("g-b", "gpu", 8, zone="z2"), _node("g-a", "gpu", 8), _node("g-c", "gpu", 8, ready=False),
        _node("g-d", "gpu", 8, unschedulable=True), _node("o-a", "other", 4))]
    pods = [_pod("p1", "g-a", 4, job="j1"), _pod("p2", "g-a", 2, job="j2"),
            _pod("p3", "g-b", 8, job="j1", started="2026-01-01T00:03:00Z"),
            _pod("done", "g-b", 8, phase="Succeeded", job="j3"), _pod("cpu", "o-a", 0, job="j2")]
    pools = pools_from_cluster(nodes, pods, {"gpu": (5, 90.0)})
    gpu, other = pools["gpu"], pools["other"]
    assert gpu.free_gpus == (2, 0) and gpu.gpus_per_node == 8 and (gpu.max_nodes, gpu.provisioning_delay) == (5, 90.0)
    assert gpu.node_labels == {POOL_LABEL: "gpu"}  # zone and hostname differ between its nodes
    assert (other.free_gpus, other.max_nodes, other.provisioning_delay) == ((4,), 1, 0.0)  # no limits: fixed

    def workload_of(p: Pod) -> tuple[str, str] | None:
        return (NS, "wl-" + p.meta.labels["job"])

    placements = placements_from_cluster(nodes, pods, workload_of)
    start = datetime(2026, 1, 1, 0, 3, tzinfo=UTC).timestamp()
    assert placements == {(NS, "wl-j1"): (("gpu", 0, 4, None), ("gpu", 1, 8, start)), (NS, "wl-j2"): (("gpu", 0, 2, None),)}


def per_job_pools() -> dict[str, PoolCapacity]:
    """Two compact pools of one flavor, as node auto-provisioning makes them per job: pg-1 scaled
    to zero (a new node takes 180 s), pg-2 with a free node that only pg-2's job may use."""
    labels = {POOL_LABEL: "gpu"}  # the flavor's nodeLabels select both
    return {"pg-1": PoolCapacity("pg-1", {**labels, "placement-group": "pg-1"}, 8, (), 2, 180.0),
            "pg-2": PoolCapacity("pg-2", {**labels, "placement-group": "pg-2"}, 8, (8,), 2, 180.0)}


def test_a_job_waits_for_its_own_placement_groups_pool_not_a_free_node_of_another() -> None:
    # j1 selects pg-1, which has no node: its pod waits for a scale-up from zero, although pg-2 has
    # a free node its flavor's labels would allow. j2 selects pg-2 and runs at once.
    snap = snapshot(*base(quota=16),
                    workload(NS, "j1", "lq", {GPU: "8"}, created=T0 + 1, node_selector={"placement-group": "pg-1"}),
                    workload(NS, "j2", "lq", {GPU: "8"}, created=T0 + 2, node_selector={"placement-group": "pg-2"}))
    now = T0 + 10
    f = forecast(snap, {(NS, "j1"): exact(300), (NS, "j2"): exact(300)}, now, pools=per_job_pools(), placements={})
    j1, j2 = f.workloads[(NS, "j1")], f.workloads[(NS, "j2")]
    assert (j1.start, j1.pods_start) == (now, now + 180)
    assert (j2.start, j2.pods_start) == (now, now)
    # A required node affinity selects the same way.
    term = [{"key": "placement-group", "operator": "In", "values": ["pg-1"]}]
    snap = snapshot(*base(quota=16), workload(NS, "j3", "lq", {GPU: "8"}, created=T0 + 1, affinity_terms=[term]))
    f = forecast(snap, {(NS, "j3"): exact(300)}, now, pools=per_job_pools(), placements={})
    assert f.workloads[(NS, "j3")].pods_start == now + 180


def test_a_running_jobs_runtime_counts_from_its_pods_start_not_its_admission() -> None:
    # r was admitted at T0 but its pods waited for a node until T0 + 180; it runs 600 s from then,
    # so a (waiting for r's quota) starts at T0 + 780, not T0 + 600.
    snap = snapshot(*base(quota=8), running("r", 8, T0), workload(NS, "a", "lq", {GPU: "8"}, created=T0 + 1))
    runtimes = {(NS, "r"): exact(600), (NS, "a"): exact(60)}
    now = T0 + 200
    f = forecast(snap, runtimes, now, pools=pool((0,), max_nodes=1), placements={(NS, "r"): (("gpu", 0, 8, T0 + 180),)})
    assert f.workloads[(NS, "a")].start == T0 + 780
    # With no start time known, from the admission as before.
    f = forecast(snap, runtimes, now, pools=pool((0,), max_nodes=1), placements={(NS, "r"): (("gpu", 0, 8),)})
    assert f.workloads[(NS, "a")].start == T0 + 600


_SAME_INSTANT = """
from tests.admission.test_forecast_pools import exact, pool, NS, GPU, POOL_LABEL
from kueuetop.admission.forecast import forecast
from tests.builders import T0, cluster_queue, flavor, fq, group, local_queue, namespace, snapshot, workload
names = ["zeta", "alpha", "mid", "omega"]
objs = [flavor("l4", labels={POOL_LABEL: "gpu"}), namespace(NS)]
for n in names:
    objs += [cluster_queue("cq-" + n, group(GPU, fq("l4", **{GPU: 8}))), local_queue(NS, "lq-" + n, "cq-" + n)]
snap = snapshot(*objs, *(workload(NS, n, "lq-" + n, {GPU: "8"}, created=T0 + i) for i, n in enumerate(names)))
f = forecast(snap, {(NS, n): exact(600) for n in names}, T0 + 100, pools=pool((8, 8), max_nodes=4), placements={})
print([f.workloads[(NS, n)].start - (T0 + 100) for n in names], [f.workloads[(NS, n)].pods_start - (T0 + 100) for n in names])
"""


def test_pods_admitted_at_one_instant_take_the_free_nodes_in_admission_order_whatever_the_hash_seed() -> None:
    # Four 8-GPU workloads of four ClusterQueues get quota in one cycle; two free nodes, two more
    # 60 s after a scale-up. The first two admitted (oldest first) run at once, the other two on
    # the new nodes: in every process, whatever order its string hashes would give a set.
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    seen = set()
    for seed in ("0", "1", "2", "3", "4", "5"):
        out = subprocess.run([sys.executable, "-c", _SAME_INSTANT], cwd=root, capture_output=True, text=True,
                             env={**os.environ, "PYTHONHASHSEED": seed}, check=True).stdout.strip()
        seen.add(out)
    assert seen == {"[0.0, 0.0, 0.0, 0.0] [0.0, 0.0, 60.0, 60.0]"}
