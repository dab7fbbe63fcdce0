"""The simulated cluster-autoscaler's status ConfigMap, `kube-system/cluster-autoscaler-status`.

cluster-autoscaler (GKE's too) writes its view of every node group it scales into this ConfigMap;
since 1.30 as YAML (`clusterstate/api` `ClusterAutoscalerStatus`). A console reads from it how far
each pool may grow and what a scale-up has asked for, which no Node shows. Here each autoscaled
NodePool is a GKE node pool: one managed instance group per zone, named as GKE names them (its
nodes are "<group base>-<4 chars>"), the pool's maxSize and minSize spread over its zones, the
target its nodes plus the nodes asked for and not yet created (placed on zones as
`expand_node_pool` will place them).

Written only when a group's figures change, with the time of that change (the real one rewrites
it every loop, ~10 s; the reader only needs the figures).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

from kueuetop.kueue.autoscaler_status import STATUS_KEY, STATUS_NAME, STATUS_NAMESPACE
from kueuetop.sim.scenarios.nodes import DEFAULT_CLUSTER, node_name, pool_zones
from kueuetop.sim.storage.objectstore import ObjectStore, StoreError

Obj = dict[str, Any]
CONFIGMAP_UID = "cluster-autoscaler-status"  # a controller's own object: no seeded uid is drawn for it


def _spread(total: int, parts: int, i: int) -> int:
    return total // parts + (1 if i < total % parts else 0)


def node_groups(pools: Iterable[Any]) -> list[Obj]:
    """The `nodeGroups` entries for the autoscaled pools (objects of sim.cloud.node_pools.Pool)."""
    out: list[Obj] = []
    for pool in sorted(pools, key=lambda p: p.name):
        if not pool.autoscaling or pool.max_size is None:
            continue
        spec = pool.spec
        name = str(spec.get("poolName") or pool.name)
        cluster = str(spec.get("clusterName") or DEFAULT_CLUSTER)
        project = str(spec.get("project") or "kueuetop-demo")
        zones = pool_zones(pool.doc)
        pending = pool.pending_count()
        for i, zone in enumerate(zones):
            base = node_name(cluster, name, zone, 0).rsplit("-", 1)[0]
            registered = sum(1 for n in pool.nodes if n.startswith(base + "-"))
            coming = sum(1 for k in range(pool.next_index, pool.next_index + pending) if k % len(zones) == i)
            out.append({
                "name": f"https://www.googleapis.com/compute/v1/projects/{project}/zones/{zone}/instanceGroups/{base}-grp",
                "health": {"status": "Healthy",
                           "nodeCounts": {"registered": {"total": registered, "ready": registered, "notStarted": 0},
                                          "longUnregistered": 0, "unregistered": 0},
                           "cloudProviderTarget": registered + coming,
                           "minSize": _spread(pool.min_size, len(zones), i),
                           "maxSize": _spread(pool.max_size, len(zones), i)},
                "scaleUp": {"status": "InProgress" if coming else "NoActivity"},
            })
    return out


class AutoscalerStatus:
    """Keeps the ConfigMap in step with the node pools (call `sync` after they change)."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self._last: list[Obj] | None = None

    def sync(self, pools: Iterable[Any], now_rfc3339: str) -> bool:
        groups = node_groups(pools)
        if groups == self._last or (not groups and self._last is None):
            return False
        self._last = groups
        text = yaml.safe_dump({"time": now_rfc3339, "autoscalerStatus": "Running", "nodeGroups": groups},
                              sort_keys=False)
        obj: Obj = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": STATUS_NAME, "namespace": STATUS_NAMESPACE,
                                 "annotations": {"cluster-autoscaler.kubernetes.io/last-updated": now_rfc3339}},
                    "data": {STATUS_KEY: text}}
        try:
            current = self.store.try_get("", "configmaps", STATUS_NAMESPACE, STATUS_NAME, copy=False)
            if current is None:
                self.store.create("", "configmaps", obj, uid=CONFIGMAP_UID)
            else:
                obj["metadata"] = {**current["metadata"], "annotations": obj["metadata"]["annotations"]}
                self.store.update("", "configmaps", obj)
        except StoreError:
            return False
        return True
