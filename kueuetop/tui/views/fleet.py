"""GPU fleet facts from the store: node pool and model of a node, GPUs allocated and idle.

Pools and models come from the labels cloud providers and GPU Feature Discovery put on nodes;
allocation from the pods kueuetop watches (those Kueue manages), idleness from GPU samples.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kueuetop.kueue.core import Node, Pod
from kueuetop.store import events as K
from kueuetop.tui.context import ViewContext

POOL_LABELS = ("cloud.google.com/gke-nodepool", "karpenter.sh/nodepool", "eks.amazonaws.com/nodegroup",
               "kubernetes.azure.com/agentpool", "node.kubernetes.io/pool", "nodepool")
MODEL_LABELS = ("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator", "karpenter.k8s.aws/instance-gpu-name")
_DONE = ("Succeeded", "Failed")


def pool_of(node: Node) -> str:
    labels = node.meta.labels
    return next((labels[k] for k in POOL_LABELS if labels.get(k)), "-")


def model_of(node: Node) -> str:
    labels = node.meta.labels
    return next((labels[k] for k in MODEL_LABELS if labels.get(k)), "-")


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
