"""Node pools from Node objects: which pool a node is in, and each pool as the forecast reads it.

Pools come from the labels cloud providers put on nodes (GKE, Karpenter, EKS, AKS). The console's
fleet views and the headless `kueuetop forecast` group nodes the same way, so this lives outside
the TUI. Free GPUs are allocatable `nvidia.com/gpu` less the requests of the pods bound to the node
that have not terminated (the pods kueuetop watches: those Kueue manages).
"""

from __future__ import annotations

from collections.abc import Iterable

from kueuetop.admission.forecast_result import PoolCapacity
from kueuetop.kueue.core import Node, Pod

POOL_LABELS = ("cloud.google.com/gke-nodepool", "karpenter.sh/nodepool", "eks.amazonaws.com/nodegroup",
               "kubernetes.azure.com/agentpool", "node.kubernetes.io/pool", "nodepool")
NO_POOL = "-"  # nodes without a pool label, grouped as the console shows them
_DONE = ("Succeeded", "Failed")
_PER_NODE_LABELS = ("kubernetes.io/hostname",)  # never shared by a pool, even of one node


def pool_of(node: Node) -> str:
    labels = node.meta.labels
    return next((labels[k] for k in POOL_LABELS if labels.get(k)), NO_POOL)


def free_gpus(node: Node, pods: Iterable[Pod]) -> int:
    """GPUs of `node` not requested by its pods that still run (or wait to)."""
    used = sum(p.gpus for p in pods if p.node_name == node.name and p.phase not in _DONE)
    return max(0, node.gpus - used)


def pool_capacities(nodes: Iterable[Node], pods: Iterable[Pod]) -> dict[str, PoolCapacity]:
    """Every pool of `nodes` as it stands: free GPUs per Ready, schedulable node; the labels all
    its nodes share; no growth (how far an autoscaler may grow a pool is not in the Node objects)."""
    by_node: dict[str, list[Pod]] = {}
    for p in pods:
        if p.node_name:
            by_node.setdefault(p.node_name, []).append(p)
    members: dict[str, list[Node]] = {}
    for n in sorted(nodes, key=lambda n: n.name):
        members.setdefault(pool_of(n), []).append(n)
    out: dict[str, PoolCapacity] = {}
    for name, ns in members.items():
        shared = dict(ns[0].meta.labels)
        for n in ns[1:]:
            shared = {k: v for k, v in shared.items() if n.meta.labels.get(k) == v}
        for k in _PER_NODE_LABELS:
            shared.pop(k, None)
        usable = [n for n in ns if n.ready and not n.unschedulable]
        free = tuple(free_gpus(n, by_node.get(n.name, ())) for n in usable)
        out[name] = PoolCapacity(name=name, node_labels=shared, gpus_per_node=max((n.gpus for n in ns), default=0),
                                 free_gpus=free, max_nodes=len(free))
    return out
