"""What a forecast may assume of the node pools' growth (kueue/pool_growth.py): the autoscaler's
limits when its status was read; fixed pools when it has none and no node is Karpenter's;
otherwise nothing, with the reason."""

from __future__ import annotations

from kueuetop.kueue.autoscaler_status import NodeGroupStatus
from kueuetop.kueue.core import parse_node
from kueuetop.kueue.pool_growth import AUTOSCALER, FIXED, AutoscalerRead, pool_growth
from kueuetop.views.forecast_report import POD_NOTE_AUTOSCALER, POD_NOTE_FIXED, pods_note

NO_CONFIGMAP = "autoscaler limits: no configmap kube-system/cluster-autoscaler-status (no cluster-autoscaler writes one)"


def node(name: str, **labels: str) -> object:
    return parse_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                       "status": {"allocatable": {"nvidia.com/gpu": "8"}}})


ON_PREM = [node("dgx-01", **{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}), node("dgx-02")]


def test_the_autoscalers_status_gives_its_limits() -> None:
    groups = [NodeGroupStatus("gke-c-gpu-np-1a2b3c4d-grp", 0, 5, 3, 2)]
    growth = pool_growth(AutoscalerRead(groups), ON_PREM)
    assert (growth.basis, growth.groups, growth.placed) == (AUTOSCALER, groups, True)
    assert pods_note(growth) == POD_NOTE_AUTOSCALER


def test_no_status_and_no_karpenter_node_the_pools_are_fixed() -> None:
    growth = pool_growth(AutoscalerRead(None, NO_CONFIGMAP, absent=True), ON_PREM)
    assert (growth.basis, growth.groups, growth.placed) == (FIXED, None, True)
    assert pods_note(growth) == POD_NOTE_FIXED


def test_a_karpenter_node_means_the_pools_grow_with_no_limit_shown() -> None:
    nodes = [*ON_PREM, node("ip-10-0-1-7.ec2.internal", **{"karpenter.sh/nodepool": "gpu"})]
    growth = pool_growth(AutoscalerRead(None, NO_CONFIGMAP, absent=True), nodes)
    assert not growth.placed and growth.groups is None
    assert "node ip-10-0-1-7.ec2.internal is Karpenter's" in growth.why and growth.why.startswith(NO_CONFIGMAP)
    assert pods_note(growth).startswith("pods run when admitted (node pools not modelled: autoscaler limits: no configmap")
    # Karpenter before v1beta1 labelled its nodes with the Provisioner's name.
    old = [node("ip-10-0-1-8", **{"karpenter.sh/provisioner-name": "default"})]
    assert not pool_growth(AutoscalerRead(None, NO_CONFIGMAP, absent=True), old).placed


def test_a_status_that_cannot_be_read_says_nothing_of_the_pools() -> None:
    # A 403 is not a 404: the autoscaler may well be there; nothing is assumed.
    why = "autoscaler limits: forbidden to get configmap kube-system/cluster-autoscaler-status"
    growth = pool_growth(AutoscalerRead(None, why), ON_PREM)
    assert not growth.placed and growth.why == why
    assert pods_note(growth) == f"pods run when admitted (node pools not modelled: {why})"
