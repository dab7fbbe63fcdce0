"""How far the node pools may grow, as far as the cluster tells: what a forecast places pods on.

Three answers, from what the console could read:

- **cluster-autoscaler's limits**: its status ConfigMap was read; each pool it scales may grow
  to its node groups' maxSize (`autoscaler_status.pool_limits`).
- **fixed**: the status ConfigMap does not exist (a 404, not a 403) and no Node is Karpenter's.
  Nothing that grows pools left a trace, as on an on-premises cluster or reserved capacity: the
  pools are what their Nodes are, and a pod waits for a running one to finish.
  (cluster-autoscaler writes that ConfigMap by default, GKE's and AKS's included; Karpenter
  writes none but labels every node it creates with its NodePool, `karpenter.sh/nodepool`, or
  `karpenter.sh/provisioner-name` before v1beta1.)
- **unknown**: the status could not be read (forbidden, unreachable, unparsable), or Karpenter
  grows the pools with no limit shown to the cluster's users. Pods are taken to run when admitted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from kueuetop.kueue.autoscaler_status import NodeGroupStatus
from kueuetop.kueue.core import Node

KARPENTER_LABELS = ("karpenter.sh/nodepool", "karpenter.sh/provisioner-name")

AUTOSCALER = "autoscaler"
FIXED = "fixed"


class AutoscalerRead(NamedTuple):
    """One read of cluster-autoscaler's status ConfigMap (`sources.autoscaler_status`)."""

    groups: list[NodeGroupStatus] | None  # None: not read, see `why`
    why: str = ""
    absent: bool = False  # the ConfigMap does not exist (the server said 404)


@dataclass(frozen=True, slots=True)
class PoolGrowth:
    """What a forecast may assume of the pools' growth."""

    basis: str  # AUTOSCALER, FIXED, or "" (unknown: pods run when admitted)
    groups: list[NodeGroupStatus] | None = None  # the autoscaler's node groups (AUTOSCALER only)
    why: str = ""  # unknown: why

    @property
    def placed(self) -> bool:
        """Pods wait for nodes in the forecast."""
        return bool(self.basis)


def karpenter_node(nodes: Iterable[Node]) -> str:
    """The name of a Node Karpenter created, "" when none is."""
    for n in nodes:
        labels = n.meta.labels
        if any(labels.get(k) for k in KARPENTER_LABELS):
            return n.name
    return ""


def pool_growth(read: AutoscalerRead, nodes: Iterable[Node]) -> PoolGrowth:
    """The answer (see the module docstring) from a read of the autoscaler's status and the Nodes."""
    if read.groups is not None:
        return PoolGrowth(AUTOSCALER, read.groups)
    if not read.absent:
        return PoolGrowth("", why=read.why)
    karpenter = karpenter_node(nodes)
    if karpenter:
        return PoolGrowth("", why=f"{read.why}, and node {karpenter} is Karpenter's, which grows pools "
                                  "with no limit shown")
    return PoolGrowth(FIXED)
