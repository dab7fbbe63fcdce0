"""Node pools from Node and Pod objects, as `kueuetop forecast` reads them."""

from __future__ import annotations

from kueuetop.kueue.core import parse_node, parse_pod
from kueuetop.views.node_pools import NO_POOL, pool_capacities, pool_of

GPU = "nvidia.com/gpu"


def _node(name: str, pool: str | None, gpus: int, zone: str, ready: bool = True, cordoned: bool = False):
    labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone, "resource-type": "l4"}
    if pool:
        labels["cloud.google.com/gke-nodepool"] = pool
    return parse_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                       "spec": {"unschedulable": cordoned},
                       "status": {"allocatable": {GPU: str(gpus), "cpu": "24"},
                                  "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}})


def _pod(name: str, node: str, gpus: int, phase: str = "Running"):
    return parse_pod({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "team-a"},
                      "spec": {"nodeName": node, "containers": [
                          {"name": "c", "resources": {"requests": {GPU: str(gpus)}}}]},
                      "status": {"phase": phase}})


def test_pools_count_free_gpus_of_usable_nodes() -> None:
    nodes = [_node("l4-a", "l4", 4, "zone-a"), _node("l4-b", "l4", 4, "zone-b"), _node("l4-c", "l4", 4, "zone-a"),
             _node("l4-down", "l4", 4, "zone-a", ready=False), _node("l4-cordoned", "l4", 4, "zone-a", cordoned=True),
             _node("lone", None, 2, "zone-a")]
    pods = [_pod("p1", "l4-a", 3), _pod("p2", "l4-a", 1), _pod("p3", "l4-b", 2), _pod("done", "l4-b", 2, "Succeeded"),
            _pod("over", "lone", 5)]
    pools = pool_capacities(nodes, pods)
    assert set(pools) == {"l4", NO_POOL} and pool_of(nodes[-1]) == NO_POOL
    l4 = pools["l4"]
    # l4-a full, l4-b half (the finished pod holds nothing), l4-c empty; NotReady and cordoned left out.
    assert l4.free_gpus == (0, 2, 4)  # by node name: l4-a, l4-b, l4-c
    assert l4.gpus_per_node == 4 and l4.max_nodes == 3
    # The labels every node shares: not the hostname, not the zone (they differ).
    assert l4.node_labels == {"cloud.google.com/gke-nodepool": "l4", "resource-type": "l4"}
    assert pools[NO_POOL].free_gpus == (0,)  # asked for more than it has: nothing free, never negative
    assert "kubernetes.io/hostname" not in pools[NO_POOL].node_labels
