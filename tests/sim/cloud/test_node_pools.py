"""Node pools from scenario documents, and the autoscaler's scale-up and scale-down."""

from tests.sim.helpers import GPU_TOLERATION, Sim, cond, node_pool
from tests.sim.kube.test_kubelet import bare_pod


def pool_nodes(sim, pool):
    return sorted(n["metadata"]["name"] for n in sim.list("nodes")
                  if n["metadata"]["labels"]["cloud.google.com/gke-nodepool"] == pool)


def test_pools_create_ready_nodes_with_pool_labels_at_their_time():
    text = node_pool("reserved", size=3, gpus=8, labels={"team": "a"}) + "---\n" + \
        node_pool("late", size=1, machine="e2-small").replace("name: late", "name: late\n  annotations: {kueuetop.io/at: 2m}")
    sim = Sim(text)
    sim.run(1)
    nodes = pool_nodes(sim, "reserved")
    assert len(nodes) == 3 and pool_nodes(sim, "late") == []
    node = sim.get("nodes", None, nodes[0])
    assert node["metadata"]["labels"]["team"] == "a"
    assert cond(node, "Ready")["status"] == "True"
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    sim.run(120)
    assert len(pool_nodes(sim, "late")) == 1


def test_autoscaler_grows_after_the_provisioning_delay_within_limits_and_shrinks_idle_nodes():
    text = node_pool("spot", size=0, minSize=0, maxSize=4, gpus=1, autoscaling=True, provisioningDelay="90s",
                     capacityLimit=[{"from": "0s", "until": "5m", "nodes": 2}])
    sim = Sim(text)
    sim.run(1)
    assert pool_nodes(sim, "spot") == []
    for i in range(3):
        sim.create(bare_pod(f"p{i}", gpus=1, tolerations=GPU_TOLERATION, runtime="10m",
                            selector={"cloud.google.com/gke-nodepool": "spot"}))
    sim.run(1)
    assert cond(sim.get("pods", "default", "p0"), "PodScheduled")["reason"] == "Unschedulable"
    sim.run(80)
    assert pool_nodes(sim, "spot") == []  # still provisioning
    sim.run(15)
    assert len(pool_nodes(sim, "spot")) == 2  # capacity limit: 2 nodes until 5m
    phases = sorted(sim.get("pods", "default", f"p{i}")["status"]["phase"] for i in range(3))
    assert phases == ["Pending", "Running", "Running"]
    sim.run(300 - sim.t + 95)  # limit lifts at 5m, then the provisioning delay
    assert len(pool_nodes(sim, "spot")) == 3
    assert all(sim.get("pods", "default", f"p{i}")["status"]["phase"] in ("Running", "Succeeded") for i in range(3))
    # Pods end at ~11.6m (two) and 16.5m; a node idle for 10 minutes is removed.
    sim.run(17 * 60 - sim.t)
    assert all(sim.get("pods", "default", f"p{i}")["status"]["phase"] == "Succeeded" for i in range(3))
    assert len(pool_nodes(sim, "spot")) == 3
    sim.run(22 * 60 - sim.t)
    assert len(pool_nodes(sim, "spot")) == 1
    sim.run(27 * 60 - sim.t)
    assert pool_nodes(sim, "spot") == []


def test_fixed_pools_and_queued_pools_do_not_grow_for_pending_pods():
    text = node_pool("fixed", size=1, gpus=1) + "---\n" + node_pool(
        "dws", size=0, maxSize=2, gpus=1, queuedProvisioning=True, labels={"cloud.google.com/gke-nodepool": "dws"})
    sim = Sim(text)
    sim.run(1)
    for i in range(2):
        sim.create(bare_pod(f"f{i}", gpus=1, tolerations=GPU_TOLERATION, runtime="1h"))
    queued = {"key": "cloud.google.com/gke-queued", "operator": "Exists", "effect": "NoSchedule"}
    sim.create(bare_pod("d", gpus=1, tolerations=[*GPU_TOLERATION, queued],
                        selector={"cloud.google.com/gke-nodepool": "dws"}))
    sim.run(600)
    assert len(pool_nodes(sim, "fixed")) == 1 and pool_nodes(sim, "dws") == []
