"""Expansion of a scenario `NodePool` (kueuetop.io/v1) into the Node objects GKE would create.

Names follow GKE: `gke-<cluster>-<pool>-<8 hex per zone>-<4 chars>`, with cluster and pool
trimmed to 32 characters together as GKE does ("gke-gke-batch-refarc-team-a-0-compact-…").
Labels are the ones a real GKE GPU node carries (cloud.google.com/*, nvidia.com/gpu.*,
node.kubernetes.io/instance-type, topology.kubernetes.io/*), so the console's node-pool and
capacity-type logic is exercised by the demo exactly as on a cluster.

Everything here is pure: the same pool document and index always give the same node.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from kueuetop.kueue.quantity import parse_quantity

DEFAULT_CLUSTER = "kueuetop-sim"
DEFAULT_ZONE = "us-central1-c"
KUBELET_VERSION = "v1.31.6-gke.1020000"
# What a GKE 1.31 node on Container-Optimized OS (milestone 117) reports in status.nodeInfo.
CONTAINER_RUNTIME_VERSION = "containerd://1.7.24"
OS_IMAGE = "Container-Optimized OS from Google"
KERNEL_VERSION = "6.1.112+"

# GPU model (nvidia-smi name) → GKE accelerator label, memory MiB, GFD family.
GPU_MODELS: dict[str, tuple[str, int, str]] = {
    "Tesla T4": ("nvidia-tesla-t4", 15360, "turing"),
    "NVIDIA L4": ("nvidia-l4", 23034, "ada-lovelace"),
    "NVIDIA A100-SXM4-40GB": ("nvidia-tesla-a100", 40960, "ampere"),
    "NVIDIA A100-SXM4-80GB": ("nvidia-a100-80gb", 81920, "ampere"),
    "NVIDIA H100 80GB HBM3": ("nvidia-h100-80gb", 81559, "hopper"),
    "NVIDIA H200": ("nvidia-h200-141gb", 143771, "hopper"),
}

# machine type → (vCPU, memory) as GCE sells them; used when a pool gives no capacity.
MACHINE_TYPES: dict[str, tuple[int, str]] = {
    "e2-small": (2, "2Gi"),
    "e2-standard-8": (8, "32Gi"),
    "n1-standard-2": (2, "7680Mi"),
    "n2-standard-32": (32, "128Gi"),
    "g2-standard-24": (24, "96Gi"),
    "g2-standard-96": (96, "384Gi"),
    "a2-highgpu-1g": (12, "85Gi"),
    "a2-highgpu-2g": (24, "170Gi"),
    "a2-highgpu-8g": (96, "680Gi"),
    "a2-ultragpu-8g": (96, "1360Gi"),
    "a3-highgpu-8g": (208, "1872Gi"),
    "a3-megagpu-8g": (208, "1872Gi"),
}

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
_SUFFIX_SPACE = 36**4
# Odd and not a multiple of 3, so `index * _STRIDE` is a bijection modulo 36**4: suffixes
# never collide inside one zone of a pool (up to 1.6 M nodes).
_STRIDE = 1_000_003


def _gke_prefix(cluster: str, pool: str) -> str:
    # GKE keeps "<cluster>-<pool>" readable by trimming the longer of the two first.
    c, p = cluster, pool
    while len(c) + len(p) > 32:
        if len(c) >= len(p):
            c = c[:-1]
        else:
            p = p[:-1]
    return f"gke-{c.rstrip('-')}-{p.rstrip('-')}"


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha1(text.encode()).digest()[:8], "big")


def node_name(cluster: str, pool: str, zone: str, index_in_zone: int) -> str:
    """Name of the `index_in_zone`-th node GKE creates for `pool` in `zone`."""
    group = f"{_digest(f'{cluster}/{pool}/{zone}') & 0xFFFFFFFF:08x}"
    n = (index_in_zone * _STRIDE + _digest(f"{group}/suffix")) % _SUFFIX_SPACE
    suffix = "".join(_BASE36[(n // 36**k) % 36] for k in (3, 2, 1, 0))
    return f"{_gke_prefix(cluster, pool)}-{group}-{suffix}"


def _hex_id(name: str, what: str) -> str:
    return hashlib.sha1(f"{name}/{what}".encode()).hexdigest()[:32]


def _uuid_id(name: str, what: str) -> str:
    h = _hex_id(name, what)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def node_info(name: str) -> dict[str, str]:
    """`status.nodeInfo` as the kubelet reports it: every field set (the `kubernetes` client's
    V1NodeSystemInfo refuses nulls); the machine, system and boot ids are derived from the name
    so the same node always reports the same ids."""
    return {
        "architecture": "amd64",
        "bootID": _uuid_id(name, "boot-id"),
        "containerRuntimeVersion": CONTAINER_RUNTIME_VERSION,
        "kernelVersion": KERNEL_VERSION,
        "kubeProxyVersion": KUBELET_VERSION,
        "kubeletVersion": KUBELET_VERSION,
        "machineID": _hex_id(name, "machine-id"),
        "operatingSystem": "linux",
        "osImage": OS_IMAGE,
        "systemUUID": _uuid_id(name, "system-uuid"),
    }


def gpu_product_label(model: str) -> str:
    """GPU Feature Discovery's `nvidia.com/gpu.product`: the model with dashes for spaces."""
    return "-".join(model.split())


def _allocatable_cpu(cpu: Fraction) -> Fraction:
    # GKE kube-reserved CPU: 6 % of core 1, 1 % of core 2, 0.5 % of cores 3-4, 0.25 % above.
    reserved = Fraction(0)
    for lo, hi, rate in ((0, 1, "0.06"), (1, 2, "0.01"), (2, 4, "0.005")):
        reserved += max(Fraction(0), min(cpu, Fraction(hi)) - lo) * Fraction(rate)
    reserved += max(Fraction(0), cpu - 4) * Fraction("0.0025")
    return cpu - reserved


def _allocatable_memory(mem: Fraction) -> Fraction:
    # GKE kube-reserved memory (25 % of first 4 GiB, 20 % of next 4, 10 % of next 8,
    # 6 % of next 112, 2 % above 128 GiB) plus the 100 MiB hard-eviction threshold.
    gib = Fraction(2**30)
    reserved = Fraction(0)
    bands = ((0, 4, "0.25"), (4, 8, "0.20"), (8, 16, "0.10"), (16, 128, "0.06"))
    for lo, hi, rate in bands:
        reserved += max(Fraction(0), min(mem, hi * gib) - lo * gib) * Fraction(rate)
    reserved += max(Fraction(0), mem - 128 * gib) * Fraction("0.02")
    return max(Fraction(0), mem - reserved - 100 * 2**20)


def _fmt_cpu(value: Fraction) -> str:
    milli = math.floor(value * 1000)
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def _fmt_bytes_ki(value: Fraction) -> str:
    return f"{math.floor(value / 1024)}Ki"


def node_capacity(spec: Mapping[str, Any]) -> dict[str, str]:
    """Node `status.capacity` for a pool spec (explicit `capacity` wins over the machine type)."""
    machine = str(spec.get("machineType") or "")
    cpu, memory = MACHINE_TYPES.get(machine, (8, "32Gi"))
    capacity: dict[str, str] = {
        "cpu": str(cpu),
        "memory": memory,
        "ephemeral-storage": "98831908Ki",
        "pods": "110",
    }
    for key, value in (spec.get("capacity") or {}).items():
        capacity[str(key)] = str(value)
    gpu = spec.get("gpu") or {}
    if int(gpu.get("count", 0) or 0) > 0:
        capacity["nvidia.com/gpu"] = str(int(gpu["count"]))
    return capacity


def node_allocatable(capacity: Mapping[str, str]) -> dict[str, str]:
    """Allocatable as GKE computes it from capacity (system reservations subtracted)."""
    out = dict(capacity)
    try:
        out["cpu"] = _fmt_cpu(_allocatable_cpu(parse_quantity(capacity["cpu"])))
        out["memory"] = _fmt_bytes_ki(_allocatable_memory(parse_quantity(capacity["memory"])))
    except (KeyError, ValueError):
        pass  # odd capacity values are passed through unchanged
    return out


def pool_labels(pool_doc: Mapping[str, Any], zone: str) -> dict[str, str]:
    """Labels every node of the pool carries in `zone` (without the per-node hostname)."""
    spec = pool_doc.get("spec") or {}
    pool = str(spec.get("poolName") or pool_doc["metadata"]["name"])
    machine = str(spec.get("machineType") or "n2-standard-32")
    spot = bool(spec.get("spot"))
    labels = {
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": machine,
        "topology.kubernetes.io/zone": zone,
        "topology.kubernetes.io/region": zone.rsplit("-", 1)[0],
        "cloud.google.com/gke-nodepool": pool,
        "cloud.google.com/gke-os-distribution": "cos",
        "cloud.google.com/machine-family": machine.split("-", 1)[0],
        "cloud.google.com/gke-provisioning": "spot" if spot else "standard",
    }
    if spot:
        labels["cloud.google.com/gke-spot"] = "true"
    if spec.get("queuedProvisioning"):
        labels["cloud.google.com/gke-queued"] = "true"
    gpu = spec.get("gpu") or {}
    count = int(gpu.get("count", 0) or 0)
    if count > 0:
        model = str(gpu.get("model") or "NVIDIA L4")
        accel, memory, family = GPU_MODELS.get(model, ("nvidia-" + gpu_product_label(model).lower(), 0, ""))
        labels.update({
            "cloud.google.com/gke-accelerator": str(gpu.get("accelerator") or accel),
            "cloud.google.com/gke-gpu": "true",
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": gpu_product_label(model),
            "nvidia.com/gpu.count": str(count),
            "nvidia.com/gpu.memory": str(int(gpu.get("memoryMiB") or memory)),
        })
        if family:
            labels["nvidia.com/gpu.family"] = family
    labels.update({str(k): str(v) for k, v in (spec.get("nodeLabels") or {}).items()})
    return labels


def pool_taints(pool_doc: Mapping[str, Any]) -> list[dict[str, str]]:
    """The pool's taints plus the ones GKE adds (GPU, queued provisioning)."""
    spec = pool_doc.get("spec") or {}
    taints = [dict(t) for t in (spec.get("nodeTaints") or [])]
    keys = {t.get("key") for t in taints}
    gpu = spec.get("gpu") or {}
    if int(gpu.get("count", 0) or 0) > 0 and "nvidia.com/gpu" not in keys:
        taints.append({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"})
    if spec.get("queuedProvisioning") and "cloud.google.com/gke-queued" not in keys:
        taints.append({"key": "cloud.google.com/gke-queued", "value": "true", "effect": "NoSchedule"})
    return taints


def pool_zones(pool_doc: Mapping[str, Any]) -> list[str]:
    zones = (pool_doc.get("spec") or {}).get("zones") or [DEFAULT_ZONE]
    return [str(z) for z in zones]


def expand_node_pool(pool_doc: Mapping[str, Any], count: int, *, start: int = 0,
                     cluster: str | None = None) -> list[dict[str, Any]]:
    """Node objects `start` … `start + count - 1` of a NodePool, spread round-robin over zones.

    The cluster name comes from `cluster`, else the pool's `spec.clusterName` (the loader
    fills it from SimConfig), else "kueuetop-sim". Returned dicts are fresh (safe to mutate).
    """
    if count < 0 or start < 0:
        raise ValueError("count and start must be non-negative")
    spec = pool_doc.get("spec") or {}
    pool = str(spec.get("poolName") or pool_doc["metadata"]["name"])
    cluster_name = cluster or str(spec.get("clusterName") or DEFAULT_CLUSTER)
    zones = pool_zones(pool_doc)
    capacity = node_capacity(spec)
    allocatable = node_allocatable(capacity)
    taints = pool_taints(pool_doc)
    labels_by_zone = {z: pool_labels(pool_doc, z) for z in zones}
    project = str(spec.get("project") or "kueuetop-demo")
    nodes = []
    for index in range(start, start + count):
        zone = zones[index % len(zones)]
        name = node_name(cluster_name, pool, zone, index // len(zones))
        labels = dict(labels_by_zone[zone])
        labels["kubernetes.io/hostname"] = name
        node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": labels,
                "annotations": {"kueuetop.io/node-pool": pool_doc["metadata"]["name"]},
            },
            "spec": {"providerID": f"gce://{project}/{zone}/{name}"},
            "status": {
                "capacity": dict(capacity),
                "allocatable": dict(allocatable),
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                "message": "kubelet is posting ready status"}],
                "nodeInfo": node_info(name),
            },
        }
        if taints:
            node["spec"]["taints"] = [dict(t) for t in taints]
        nodes.append(node)
    return nodes
