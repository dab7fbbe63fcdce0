"""cluster-autoscaler's status text (both formats it has written) and its join to node pools."""

from __future__ import annotations

import pytest

from kueuetop.kueue.autoscaler_status import PoolLimit, pool_limits
from kueuetop.kueue.core import parse_node
from kueuetop.kueue.errors import KueueParseError
from kueuetop.sources.autoscaler_status import parse_autoscaler_status

MIG = "https://www.googleapis.com/compute/v1/projects/p/zones/{zone}/instanceGroups/{base}-grp"

# As cluster-autoscaler >= 1.30 writes it (clusterstate/api ClusterAutoscalerStatus), trimmed.
YAML_STATUS = f"""time: 2026-11-27 10:00:00.000000000 +0000 UTC
autoscalerStatus: Running
clusterWide:
  health:
    status: Healthy
    nodeCounts:
      registered: {{total: 4, ready: 4, notStarted: 0}}
nodeGroups:
- name: {MIG.format(zone="us-central1-a", base="gke-c-gpu-np-1a2b3c4d")}
  health:
    status: Healthy
    nodeCounts:
      registered: {{total: 2, ready: 2, notStarted: 0}}
      longUnregistered: 0
      unregistered: 0
    cloudProviderTarget: 3
    minSize: 0
    maxSize: 5
  scaleUp: {{status: InProgress}}
- name: {MIG.format(zone="us-central1-b", base="gke-c-gpu-np-9f8e7d6c")}
  health:
    status: Healthy
    nodeCounts:
      registered: {{total: 1, ready: 1}}
    cloudProviderTarget: 1
    minSize: 0
    maxSize: 5
- name: {MIG.format(zone="us-central1-a", base="gke-c-nap-a100-55aa66bb")}
  health:
    nodeCounts: {{registered: {{total: 0}}}}
    cloudProviderTarget: 0
    minSize: 0
    maxSize: 2
"""

# The text format of cluster-autoscaler before 1.30.
LEGACY_STATUS = f"""Cluster-autoscaler status at 2024-01-01 10:00:00.0 +0000 UTC:
Cluster-wide:
  Health:      Healthy (ready=3 unready=0 notStarted=0 longNotStarted=0 registered=3 longUnregistered=0)
               LastProbeTime:      2024-01-01 10:00:00 +0000 UTC
  ScaleUp:     NoActivity (ready=3 registered=3)

NodeGroups:
  Name:        {MIG.format(zone="us-central1-a", base="gke-c-gpu-np-1a2b3c4d")}
  Health:      Healthy (ready=2 unready=0 notStarted=0 longNotStarted=0 registered=2 longUnregistered=0 cloudProviderTarget=3 (minSize=0, maxSize=5))
               LastProbeTime:      2024-01-01 10:00:00 +0000 UTC
  ScaleUp:     InProgress (ready=2 cloudProviderTarget=3)

  Name:        spot-pool
  Health:      Healthy (ready=1 unready=0 notStarted=0 longNotStarted=0 registered=1 longUnregistered=0 cloudProviderTarget=1 (minSize=1, maxSize=9))
"""


def _node(name: str, pool: str) -> object:
    return parse_node({"apiVersion": "v1", "kind": "Node",
                       "metadata": {"name": name, "labels": {"cloud.google.com/gke-nodepool": pool}},
                       "status": {"allocatable": {"nvidia.com/gpu": "8"}}})


NODES = [_node("gke-c-gpu-np-1a2b3c4d-ab12", "gpu-np"), _node("gke-c-gpu-np-1a2b3c4d-cd34", "gpu-np"),
         _node("gke-c-gpu-np-9f8e7d6c-ef56", "gpu-np"), _node("spot-pool-xyz", "spot-pool")]


def test_the_yaml_status_sums_a_pools_zones_and_leaves_out_a_group_it_cannot_place() -> None:
    groups = parse_autoscaler_status(YAML_STATUS)
    assert [(g.max_size, g.target, g.registered) for g in groups] == [(5, 3, 2), (5, 1, 1), (2, 0, 0)]
    limits = pool_limits(groups, NODES)
    # gpu-np: two zones' groups; the node auto-provisioned pool has no node and no pool of its name.
    assert limits == {"gpu-np": PoolLimit(max_nodes=10, target=4, registered=3)}
    assert limits["gpu-np"].coming == 1


def test_the_legacy_text_reads_the_same_and_a_group_named_like_a_pool_joins_it() -> None:
    groups = parse_autoscaler_status(LEGACY_STATUS)
    assert [(g.name.rsplit("/", 1)[-1], g.min_size, g.max_size, g.target, g.registered) for g in groups] == [
        ("gke-c-gpu-np-1a2b3c4d-grp", 0, 5, 3, 2), ("spot-pool", 1, 9, 1, 1)]
    assert pool_limits(groups, NODES) == {"gpu-np": PoolLimit(5, 3, 2), "spot-pool": PoolLimit(9, 1, 1)}


@pytest.mark.parametrize("text", ["", "hello", "autoscalerStatus: [", "nodeGroups:\n- {health: {maxSize: 3}}",
                                  "nodeGroups:\n- {name: g, health: {maxSize: -1}}",
                                  "NodeGroups:\n  Name: g\n  Health: Healthy (ready=1)\n"])
def test_a_status_that_does_not_parse_is_one_clear_error(text: str) -> None:
    with pytest.raises(KueueParseError) as e:
        parse_autoscaler_status(text)
    assert str(e.value) and "\n" not in str(e.value)
