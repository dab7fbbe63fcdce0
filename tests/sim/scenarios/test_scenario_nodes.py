"""NodePool expansion into GKE-like Node objects (kueuetop.sim.scenarios.nodes)."""

import re

from kueuetop.sim.scenarios.nodes import gpu_product_label, node_name
from kueuetop.sim.scenarios.scenario import expand_node_pool


def pool(name="reserved-np", **spec):
    base = {"clusterName": "gke-batch-refarch", "machineType": "g2-standard-24",
            "gpu": {"model": "NVIDIA L4", "count": 2, "memoryMiB": 23034}}
    base.update(spec)
    return {"apiVersion": "kueuetop.io/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": base}


NAME = re.compile(r"^gke-gke-batch-refarch-reserved-np-[0-9a-f]{8}-[0-9a-z]{4}$")


def test_names_look_like_gke_and_are_unique_and_stable():
    nodes = expand_node_pool(pool(zones=["us-central1-a", "us-central1-b", "us-central1-c"]), 3000)
    names = [n["metadata"]["name"] for n in nodes]
    assert all(NAME.match(n) for n in names), names[:3]
    assert len(set(names)) == 3000
    # one instance-group hash per zone, as in the seed's node list
    assert len({n.rsplit("-", 2)[1] for n in names}) == 3
    again = expand_node_pool(pool(zones=["us-central1-a", "us-central1-b", "us-central1-c"]), 3000)
    assert [n["metadata"]["name"] for n in again] == names


def test_start_continues_the_same_sequence():
    p = pool()
    assert expand_node_pool(p, 3, start=2) == expand_node_pool(p, 5)[2:]


def test_long_cluster_and_pool_names_are_trimmed_like_gke():
    # seeds/002: gke-gke-batch-refarc-team-a-0-compact-4391522a-k57w
    name = node_name("gke-batch-refarch", "team-a-0-compact", "us-central1-c", 0)
    assert name.startswith("gke-gke-batch-refarc-team-a-0-compact-")
    assert len(name.split("-")[-2]) == 8


def test_gpu_node_labels_capacity_and_taints():
    node = expand_node_pool(pool(zones=["us-central1-c"], nodeLabels={"resource-type": "reservation"},
                                 nodeTaints=[{"key": "reserved", "value": "true", "effect": "NoSchedule"}]), 1)[0]
    labels = node["metadata"]["labels"]
    assert labels["cloud.google.com/gke-nodepool"] == "reserved-np"
    assert labels["cloud.google.com/gke-accelerator"] == "nvidia-l4"
    assert labels["cloud.google.com/gke-provisioning"] == "standard"
    assert "cloud.google.com/gke-spot" not in labels
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-L4"
    assert labels["nvidia.com/gpu.count"] == "2"
    assert labels["nvidia.com/gpu.memory"] == "23034"
    assert labels["node.kubernetes.io/instance-type"] == "g2-standard-24"
    assert labels["topology.kubernetes.io/zone"] == "us-central1-c"
    assert labels["topology.kubernetes.io/region"] == "us-central1"
    assert labels["kubernetes.io/hostname"] == node["metadata"]["name"]
    assert labels["resource-type"] == "reservation"
    assert node["status"]["capacity"]["nvidia.com/gpu"] == "2"
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "2"
    assert node["status"]["capacity"]["cpu"] == "24"
    assert node["status"]["allocatable"]["cpu"] == "23870m"  # GKE reserves a little CPU
    assert node["spec"]["taints"] == [
        {"key": "reserved", "value": "true", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
    ]
    assert node["status"]["conditions"][0] == {"type": "Ready", "status": "True", "reason": "KubeletReady",
                                               "message": "kubelet is posting ready status"}


def test_spot_queued_and_cpu_only_pools():
    spot = expand_node_pool(pool("spot-np", spot=True), 1)[0]["metadata"]["labels"]
    assert spot["cloud.google.com/gke-spot"] == "true"
    assert spot["cloud.google.com/gke-provisioning"] == "spot"
    queued = expand_node_pool(pool("dws", queuedProvisioning=True), 1)[0]
    assert queued["metadata"]["labels"]["cloud.google.com/gke-queued"] == "true"
    assert {"key": "cloud.google.com/gke-queued", "value": "true", "effect": "NoSchedule"} in queued["spec"]["taints"]
    cpu = expand_node_pool(pool("default-pool", gpu=None, machineType="e2-standard-8"), 1)[0]
    assert "nvidia.com/gpu" not in cpu["status"]["capacity"]
    assert "taints" not in cpu["spec"]
    assert "cloud.google.com/gke-accelerator" not in cpu["metadata"]["labels"]


def test_explicit_capacity_and_gpu_models():
    node = expand_node_pool(pool("h", machineType="a3-highgpu-8g", capacity={"cpu": "100"},
                                 gpu={"model": "NVIDIA H100 80GB HBM3", "count": 8}), 1)[0]
    assert node["status"]["capacity"]["cpu"] == "100"
    assert node["status"]["capacity"]["memory"] == "1872Gi"
    assert node["metadata"]["labels"]["cloud.google.com/gke-accelerator"] == "nvidia-h100-80gb"
    assert node["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert gpu_product_label("NVIDIA A100-SXM4-40GB") == "NVIDIA-A100-SXM4-40GB"


def test_nodes_are_independent_dicts():
    a, b = expand_node_pool(pool(), 2)
    a["metadata"]["labels"]["x"] = "y"
    a["status"]["capacity"]["cpu"] = "1"
    a["spec"]["taints"].append({"key": "k"})
    assert "x" not in b["metadata"]["labels"]
    assert b["status"]["capacity"]["cpu"] == "24"
    assert len(b["spec"]["taints"]) == 1
