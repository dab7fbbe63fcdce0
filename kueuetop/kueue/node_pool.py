"""Which node pool a node belongs to, from the labels cloud providers put on nodes.

Shared by the console's fleet views and the forecast's pool builder, so both group nodes alike.
"""

from __future__ import annotations

from collections.abc import Mapping

from kueuetop.kueue.core import Node

# GKE, Karpenter, EKS managed node groups, AKS, then the generic labels some clusters set.
POOL_LABELS = ("cloud.google.com/gke-nodepool", "karpenter.sh/nodepool", "eks.amazonaws.com/nodegroup",
               "kubernetes.azure.com/agentpool", "node.kubernetes.io/pool", "nodepool")


# GKE's queued-provisioning (DWS) nodes: the pool grows only for ProvisioningRequests.
QUEUED_LABEL = "cloud.google.com/gke-queued"


def queued_pool(labels: Mapping[str, str]) -> bool:
    """Whether a pool whose nodes carry these labels is GKE's queued provisioning."""
    return labels.get(QUEUED_LABEL) == "true"


def node_pool(node: Node) -> str:
    """The node's pool name, "" when no pool label is set."""
    labels = node.meta.labels
    return next((labels[k] for k in POOL_LABELS if labels.get(k)), "")
