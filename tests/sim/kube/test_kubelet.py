"""Scheduling, running and finishing pods on the simulated nodes."""

from tests.sim.helpers import GPU_TOLERATION, Sim, cond, node_pool


def bare_pod(name, *, gpus=0, cpu="1", selector=None, tolerations=None, runtime=None, ns="default"):
    requests = {"cpu": cpu}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
    spec = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if selector:
        spec["nodeSelector"] = selector
    if tolerations:
        spec["tolerations"] = tolerations
    meta = {"name": name, "namespace": ns}
    if runtime:
        meta["annotations"] = {"kueuetop.io/runtime": runtime}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


POOLS = (node_pool("a100", size=1, gpus=8, model="NVIDIA A100-SXM4-40GB", machine="a2-highgpu-8g")
         + "---\n" + node_pool("l4", size=2, gpus=1) + "---\n" + node_pool("cpu", size=1, machine="e2-standard-8"))


def running_on(sim, name, ns="default"):
    p = sim.get("pods", ns, name)
    return p["spec"].get("nodeName") if p["status"].get("phase") == "Running" else None


def test_gpu_pods_need_a_toleration_matching_labels_and_free_gpus():
    sim = Sim(POOLS)
    sim.run(1)
    sim.create(bare_pod("no-toleration", gpus=1))
    sim.create(bare_pod("wrong-model", gpus=1, tolerations=GPU_TOLERATION,
                        selector={"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}))
    sim.create(bare_pod("a100-6", gpus=6, tolerations=GPU_TOLERATION,
                        selector={"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}))
    sim.create(bare_pod("a100-4", gpus=4, tolerations=GPU_TOLERATION,
                        selector={"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}))
    sim.create(bare_pod("l4-1", gpus=1, tolerations=GPU_TOLERATION,
                        selector={"cloud.google.com/gke-nodepool": "l4"}))
    sim.run(1)
    assert running_on(sim, "no-toleration") is None
    msg = cond(sim.get("pods", "default", "no-toleration"), "PodScheduled")["message"]
    assert "node(s) had untolerated taint {nvidia.com/gpu: present}" in msg and msg.startswith("0/4 nodes")
    assert running_on(sim, "wrong-model") is None
    assert "a100" in running_on(sim, "a100-6")
    assert running_on(sim, "a100-4") is None  # 6 of 8 GPUs taken
    assert "Insufficient nvidia.com/gpu" in cond(sim.get("pods", "default", "a100-4"), "PodScheduled")["message"]
    assert "-l4-" in running_on(sim, "l4-1")
    # Deleting the 6-GPU pod frees the node: the waiting pod is placed at once.
    sim.store.delete("", "pods", "default", "a100-6")
    sim.run(1)
    assert "a100" in running_on(sim, "a100-4")


def test_pods_succeed_after_their_runtime_and_free_the_node():
    sim = Sim(node_pool("cpu", size=1, machine="e2-standard-8"), default_runtime=500)
    sim.run(1)
    sim.create(bare_pod("first", cpu="6", runtime="45s"))
    sim.create(bare_pod("second", cpu="6"))
    sim.run(1)
    first = sim.get("pods", "default", "first")
    assert first["status"]["phase"] == "Running" and first["status"]["startTime"]
    assert cond(first, "Ready")["status"] == "True"
    assert first["status"]["containerStatuses"][0]["state"]["running"]
    assert sim.get("pods", "default", "second")["status"]["phase"] == "Pending"
    sim.run(43)  # started at 1 s: runs until 46 s
    assert sim.t == 45 and sim.get("pods", "default", "first")["status"]["phase"] == "Running"
    sim.run(1)
    first = sim.get("pods", "default", "first")
    assert first["status"]["phase"] == "Succeeded"
    assert first["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    assert sim.get("pods", "default", "second")["status"]["phase"] == "Running"
    sim.run(499)
    assert sim.get("pods", "default", "second")["status"]["phase"] == "Running"
    sim.run(1)  # the default runtime (500 s here) from 46 s
    assert sim.get("pods", "default", "second")["status"]["phase"] == "Succeeded"
    assert sim.times == sorted(sim.times)


def test_not_ready_nodes_and_malformed_pods_are_skipped():
    sim = Sim(node_pool("cpu", size=1, machine="e2-standard-8"))
    sim.run(1)
    [node] = sim.list("nodes")
    node["status"]["conditions"][0]["status"] = "False"
    sim.store.update_status("", "nodes", node)
    bad = bare_pod("bad")
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    sim.create(bad)
    sim.create(bare_pod("waits"))
    sim.run(1)
    assert not sim.get("pods", "default", "bad")["spec"].get("nodeName")
    c = cond(sim.get("pods", "default", "waits"), "PodScheduled")
    assert "untolerated taint {node.kubernetes.io/not-ready: }" in c["message"]
    node = sim.list("nodes")[0]
    node["status"]["conditions"][0]["status"] = "True"
    sim.store.update_status("", "nodes", node)
    sim.run(1)
    assert sim.get("pods", "default", "waits")["status"]["phase"] == "Running"


def test_pods_of_a_shape_that_fits_nowhere_cost_one_node_scan_until_capacity_frees(monkeypatch):
    sim = Sim(node_pool("cpu", size=2, machine="e2-standard-8"), default_runtime=500)
    sim.run(1)
    sim.create(bare_pod("hog-0", cpu="7", runtime="30s"))
    sim.create(bare_pod("hog-1", cpu="7", runtime="30s"))
    sim.run(1)
    scans = []
    real = sim.kubelet.scheduler.find_node
    monkeypatch.setattr(sim.kubelet.scheduler, "find_node", lambda p, free=None: scans.append(p) or real(p, free))
    for i in range(20):
        sim.create(bare_pod(f"big-{i}", cpu="4"))
    sim.create(bare_pod("small", cpu="500m"))  # another shape: still looked for, and it fits
    sim.run(1)
    big_scans = [p for p in scans if p.requests.get("cpu") == 4000]
    assert len(big_scans) == 1  # the first big pod found no node; the other 19 share its verdict
    assert sim.get("pods", "default", "small")["status"]["phase"] == "Running"
    for i in range(20):
        pod = sim.get("pods", "default", f"big-{i}")
        assert pod["status"]["phase"] == "Pending"
        assert "Insufficient cpu" in cond(pod, "PodScheduled")["message"]
    # The hogs finish: capacity grows, the verdict is dropped and big pods are placed again.
    sim.run(30)
    running = [i for i in range(20) if running_on(sim, f"big-{i}")]
    assert len(running) == 2  # 8 CPUs per node, 500m taken by `small` on one of them
    assert len([p for p in scans if p.requests.get("cpu") == 4000]) > 1


def test_waiting_pods_keep_kube_schedulers_order_and_a_stuck_shape_costs_one_look(monkeypatch):
    """After a capacity change the waiting pods are tried by priority, then age, across shapes
    and together with new pods; a shape that still fits nowhere is passed over after its first
    pod (its other pods already carry the message), and a node change rewrites every message."""
    sim = Sim(node_pool("cpu", size=1, machine="e2-standard-8"), default_runtime=500)
    sim.run(1)
    sim.create(bare_pod("hog", cpu="7", runtime="30s"))
    sim.create(bare_pod("tick", cpu="500m", runtime="10s"))
    sim.run(1)

    def pod(name, cpu, priority):
        p = bare_pod(name, cpu=cpu)
        p["spec"]["priority"] = priority
        return p

    sim.create(pod("low-big", "1500m", 0))
    sim.run(1)
    sim.create(pod("high-big", "4", 10))
    sim.create(pod("mid-small", "2", 5))
    for i in range(30):
        sim.create(pod(f"stuck-{i}", "7500m", 1))  # never fits next to anything
    sim.run(1)
    assert all(running_on(sim, n) is None for n in ("low-big", "high-big", "mid-small"))
    looked = []
    real = sim.kubelet.scheduler._entry
    monkeypatch.setattr(sim.kubelet.scheduler, "_entry", lambda key: looked.append(key[1]) or real(key))
    sim.run(8)  # `tick` ends: capacity changes, nothing new fits
    assert "tick" not in looked and sum(n.startswith("stuck-") for n in looked) == 1
    assert all(running_on(sim, n) is None for n in ("low-big", "high-big", "mid-small"))
    # The hog ends: high-big (10), mid-small (5) and a later pod of priority 3 are placed;
    # low-big (0), the oldest, no longer fits.
    sim.create(pod("new-3", "1500m", 3))
    sim.run(20)
    assert running_on(sim, "high-big") and running_on(sim, "mid-small") and running_on(sim, "new-3")
    assert running_on(sim, "low-big") is None
    # A node joins: every waiting pod's FitError names the two nodes now.
    sim.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "extra", "labels": {}},
                              "status": {"allocatable": {"cpu": "1", "pods": "110"},
                                         "conditions": [{"type": "Ready", "status": "True"}]}})
    sim.run(1)
    messages = {cond(sim.get("pods", "default", f"stuck-{i}"), "PodScheduled")["message"] for i in range(30)}
    assert len(messages) == 1 and next(iter(messages)).startswith("0/2 nodes are available")


def test_buckets_skipped_by_their_free_bounds_place_pods_as_a_full_scan_would():
    """find_node passes over a bucket of nodes when its bound says none has enough free: over
    random binds and finishes, it picks the very node a scan of every node picks (the `free`
    override path scans without the bounds)."""
    import random

    from kueuetop.sim.kube.scheduler import Placement

    rng = random.Random(7)
    sim = Sim(node_pool("gpu", size=6, gpus=4, machine="g2-standard-48") + "---\n"
              + node_pool("cpu", size=3, machine="e2-standard-8"), default_runtime=50)
    sim.run(1)
    kubelet = sim.kubelet.scheduler
    shapes = [{"cpu": 1000}, {"cpu": 4000, "memory": 8 << 30}, {"cpu": 7000},
              {"cpu": 12000, "nvidia.com/gpu": 1}, {"cpu": 2000, "nvidia.com/gpu": 2}, {"cpu": 40_000}]
    tol = tuple(Placement.from_shape(kubelet._shape_of(bare_pod("t", gpus=1, tolerations=GPU_TOLERATION))).tolerations)
    checked = placed = 0
    for step in range(60):
        for i in range(rng.randint(1, 6)):
            gpus = rng.choice([0, 0, 1, 2])
            sim.create(bare_pod(f"p{step}-{i}", gpus=gpus, cpu=rng.choice(["500m", "2", "6", "11"]),
                                tolerations=GPU_TOLERATION, runtime=f"{rng.randint(1, 9)}s"))
        sim.run(rng.choice([1, 2, 3]))
        for req in shapes:
            p = Placement(req, tolerations=tol)
            everything = {n: kubelet.free(n) for n in kubelet.nodes()}
            found = kubelet.find_node(p)
            assert found == kubelet.find_node(p, everything)
            checked += 1
            placed += found is not None
    assert checked == 360 and 0 < placed < checked  # both answers were exercised
