"""GPU fleet facts from the store: node pool and model of a node, GPUs allocated and idle.

Pools and models come from the labels cloud providers and GPU Feature Discovery put on nodes;
allocation from the pods kueuetop watches (those Kueue manages), idleness from GPU samples.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kueuetop.kueue.core import Node, Pod
from kueuetop.kueue.flavor import ResourceFlavor
from kueuetop.kueue.node_pool import node_pool, queued_pool
from kueuetop.store import events as K
from kueuetop.tui.context import ViewContext

MODEL_LABELS = ("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator", "karpenter.k8s.aws/instance-gpu-name")
_DONE = ("Succeeded", "Failed")


def pool_of(node: Node) -> str:
    return node_pool(node) or "-"


def model_of(node: Node) -> str:
    labels = node.meta.labels
    return next((labels[k] for k in MODEL_LABELS if labels.get(k)), "-")


# Spot as other GPU tools normalise it across clouds (GKE, EKS managed groups, Karpenter, AKS).
_SPOT = (("cloud.google.com/gke-spot", "true"), ("cloud.google.com/gke-preemptible", "true"),
         ("cloud.google.com/gke-provisioning", "spot"), ("karpenter.sh/capacity-type", "spot"),
         ("eks.amazonaws.com/capacityType", "SPOT"), ("kubernetes.azure.com/scalesetpriority", "spot"),
         ("node.kubernetes.io/lifecycle", "spot"))
_RESERVED = (("karpenter.sh/capacity-type", "reserved"), ("eks.amazonaws.com/capacityType", "CAPACITY_BLOCK"))


def capacity_type(node: Node) -> str:
    """spot / reserved / queued (DWS) / flex-start / on-demand, from the provider's node labels."""
    labels = node.meta.labels
    if any(labels.get(k) == v for k, v in _SPOT):
        return "spot"
    # GKE: nodes of a specific reservation carry its name (it is also their nodeSelector).
    if labels.get("cloud.google.com/reservation-name") or any(labels.get(k) == v for k, v in _RESERVED):
        return "reserved"
    if queued_pool(labels):
        return "queued"
    if labels.get("cloud.google.com/gke-flex-start") == "true":
        return "flex-start"
    return "on-demand"


def node_flavors(node: Node, flavors: list[ResourceFlavor]) -> list[str]:
    """ResourceFlavors whose nodeLabels the node carries; a flavor without nodeLabels matches any
    node, so it is named only when no more specific flavor matches."""
    labels = node.meta.labels
    matching = [f for f in flavors if all(labels.get(k) == v for k, v in f.node_labels.items())]
    specific = [f.name for f in matching if f.node_labels]
    return specific or [f.name for f in matching]


@dataclass(slots=True)
class NodeGpus:
    node: Node
    total: int
    allocated: int
    idle: int | None  # allocated GPUs under the idle threshold; None without GPU samples
    util: float | None  # mean utilisation of its GPUs with a current sample
    pods: int


def node_gpus(ctx: ViewContext) -> list[NodeGpus]:
    store = ctx.store
    out = []
    samples = store.gpus()
    by_node: dict[str, list] = {}
    for s in samples.values():
        by_node.setdefault(s.node, []).append(s)
    for node in store.objects(K.NODES).values():
        if not isinstance(node, Node):
            continue
        pods = [store.get(K.PODS, k) for k in store.pods_on_node(node.name)]
        live = [p for p in pods if isinstance(p, Pod) and p.phase not in _DONE]
        allocated = min(node.gpus, sum(p.gpus for p in live)) if node.gpus else sum(p.gpus for p in live)
        gs = by_node.get(node.name, [])
        utils = [s.util for s in gs if s.util is not None and not s.stale]
        idle = None
        if gs:
            idle = sum(1 for s in gs if s.allocated and s.util is not None and not s.stale
                       and s.util < ctx.idle_below)
        out.append(NodeGpus(node, node.gpus, allocated, idle, sum(utils) / len(utils) if utils else None,
                            len(live)))
    return out


def pools_map(ctx: ViewContext) -> Mapping[str, str]:
    return {n.name: pool_of(n) for n in ctx.store.objects(K.NODES).values() if isinstance(n, Node)}
