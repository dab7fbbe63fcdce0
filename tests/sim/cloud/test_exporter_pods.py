"""The simulated GPU Operator: one Running dcgm-exporter pod per GPU node, gone with the node."""

from kueuetop.sim.cloud.gpu_exporters import EXPORTER_APP, EXPORTER_NAMESPACE
from tests.sim.helpers import Sim, node_pool


def exporters(sim: Sim) -> dict[str, dict]:
    return {p["spec"]["nodeName"]: p for p in sim.list("pods", EXPORTER_NAMESPACE)}


def gpu_nodes(sim: Sim) -> set[str]:
    return {n["metadata"]["name"] for n in sim.list("nodes")
            if int(n["status"]["allocatable"].get("nvidia.com/gpu", "0")) > 0}


def test_every_gpu_node_gets_a_running_exporter_that_takes_no_gpu():
    sim = Sim(node_pool("gpus", size=3, gpus=8) + "---\n" + node_pool("cpus", size=2, machine="e2-standard-8"))
    sim.run(1)
    assert sim.get("namespaces", None, EXPORTER_NAMESPACE) is not None
    pods = exporters(sim)
    assert set(pods) == gpu_nodes(sim) and len(pods) == 3
    for node, pod in pods.items():
        assert pod["metadata"]["labels"]["app"] == EXPORTER_APP
        assert pod["status"]["phase"] == "Running"
        c = pod["spec"]["containers"][0]
        assert {"name": "metrics", "containerPort": 9400, "protocol": "TCP"} in c["ports"]
        assert "nvidia.com/gpu" not in str(c.get("resources"))
        assert sim.kubelet.scheduler.free(node)["nvidia.com/gpu"] == 8  # all GPUs still free
    sim.run(3600)
    assert exporters(sim).keys() == pods.keys()  # never "finish" like a job pod
    assert all(p["status"]["phase"] == "Running" for p in exporters(sim).values())


def test_exporters_follow_autoscaled_nodes_and_do_not_keep_them_alive():
    sim = Sim(node_pool("spot", size=2, minSize=0, maxSize=4, gpus=1, autoscaling=True))
    sim.run(1)
    assert len(exporters(sim)) == 2 and set(exporters(sim)) == gpu_nodes(sim)
    sim.run(11 * 60)  # idle nodes are removed after 10 minutes; the exporter is a DaemonSet pod
    assert gpu_nodes(sim) == set()
    assert exporters(sim) == {}


def test_exporter_pods_do_not_change_the_scenario_story(monkeypatch):
    """Uids come from a seeded generator; exporters must not shift the other objects' names."""
    from kueuetop.sim.clock import SimClock
    from kueuetop.sim.cloud import node_pools
    from kueuetop.sim.runner import VIRTUAL_EPOCH
    from kueuetop.sim.scenarios.loader import load_scenario
    from kueuetop.sim.wiring import build_cluster

    names = []
    original = node_pools.NodePoolController.__init__
    for enabled in (True, False):
        def init(self, *a, _enabled=enabled, **kw):
            original(self, *a, exporters=_enabled, **kw)
        monkeypatch.setattr(node_pools.NodePoolController, "__init__", init)
        parts = build_cluster(load_scenario("refarch"), SimClock(VIRTUAL_EPOCH))
        parts.cluster.run_for(900)
        wls, _ = parts.cluster.store.list("kueue.x-k8s.io", "workloads")
        names.append(sorted((w["metadata"]["name"], w["metadata"]["uid"]) for w in wls))
        pods, _ = parts.cluster.store.list("", "pods", EXPORTER_NAMESPACE)
        assert bool(pods) == enabled
    assert names[0] == names[1]
