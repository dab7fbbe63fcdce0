"""What cluster-autoscaler says of its node groups: how far each may grow, and what it has asked for.

cluster-autoscaler writes its state into the ConfigMap `kube-system/cluster-autoscaler-status`
(key `status`), GKE's included. Since cluster-autoscaler 1.30 the text is YAML, the
`ClusterAutoscalerStatus` type of its `clusterstate/api` package: per entry of `nodeGroups`, a
`name` and a `health` with `nodeCounts.registered.{total,ready}`, `cloudProviderTarget` (the size
it asked the cloud for), `minSize` and `maxSize`. Before 1.30 it was text, one block per group:

    Name:        https://…/instanceGroups/gke-c-gpu-np-1a2b3c4d-grp
    Health:      Healthy (ready=3 unready=0 … registered=3 longUnregistered=0
                 cloudProviderTarget=3 (minSize=0, maxSize=10))

Both are read (the caller loads the YAML: `sources/autoscaler_status.py`). Node groups are the cloud's (on GKE a managed instance group per zone of a node
pool), not Kubernetes' node pools: `pool_limits` joins them to the pools the Nodes name, by the
group's nodes (a GKE node's name is its instance group's base name and a suffix), else by a
group named like a pool. A group with no node and no such name cannot be placed and is left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kueuetop.kueue.core import Node
from kueuetop.kueue.errors import KueueParseError
from kueuetop.kueue.node_pool import node_pool

STATUS_NAMESPACE = "kube-system"
STATUS_NAME = "cluster-autoscaler-status"
STATUS_KEY = "status"
_OBJ = f"ConfigMap {STATUS_NAMESPACE}/{STATUS_NAME}"


@dataclass(frozen=True, slots=True)
class NodeGroupStatus:
    name: str
    min_size: int
    max_size: int
    target: int  # cloudProviderTarget: the nodes asked of the cloud
    registered: int  # nodes that joined the cluster


@dataclass(frozen=True, slots=True)
class PoolLimit:
    """One node pool's autoscaling limits: its node groups summed."""

    max_nodes: int
    target: int
    registered: int

    @property
    def coming(self) -> int:
        """Nodes asked for that have not joined yet (a scale-up in flight)."""
        return max(0, self.target - self.registered)


def _int(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise KueueParseError(_OBJ, f"data.status {what}", f"want a non-negative integer, got {v!r}")
    return v


def _from_yaml(doc: Mapping[str, Any]) -> list[NodeGroupStatus]:
    out = []
    for i, g in enumerate(doc.get("nodeGroups") or ()):
        if not isinstance(g, Mapping) or not isinstance(g.get("name"), str) or not g["name"]:
            raise KueueParseError(_OBJ, f"data.status nodeGroups[{i}].name", "missing")
        health = g.get("health") if isinstance(g.get("health"), Mapping) else {}
        counts = health.get("nodeCounts") if isinstance(health.get("nodeCounts"), Mapping) else {}
        registered = counts.get("registered") if isinstance(counts.get("registered"), Mapping) else {}
        where = f"nodeGroups[{i}] ({g['name']})"
        out.append(NodeGroupStatus(g["name"], _int(health.get("minSize", 0), f"{where}.minSize"),
                                   _int(health.get("maxSize"), f"{where}.maxSize"),
                                   _int(health.get("cloudProviderTarget", 0), f"{where}.cloudProviderTarget"),
                                   _int(registered.get("total", 0), f"{where}.registered.total")))
    return out


# The legacy text: a group's block starts at "Name:" and its Health line carries the numbers.
_LEGACY_GROUP = re.compile(r"^\s*Name:\s*(\S+)\s*$(.*?)(?=^\s*Name:|\Z)", re.M | re.S)
_LEGACY_NUM = tuple((k, re.compile(rf"\b{k}=(\d+)")) for k in ("registered", "cloudProviderTarget", "minSize", "maxSize"))


def legacy_node_groups(text: str) -> list[NodeGroupStatus]:
    """The node groups of the text status written before cluster-autoscaler 1.30."""
    out = []
    # Only the "NodeGroups:" part names groups; the cluster-wide part has no Name: lines.
    part = text.split("NodeGroups:", 1)[1] if "NodeGroups:" in text else ""
    for m in _LEGACY_GROUP.finditer(part):
        body = m.group(2)
        nums = {k: rx.search(body) for k, rx in _LEGACY_NUM}
        if nums["maxSize"] is None:
            raise KueueParseError(_OBJ, f"data.status node group {m.group(1)}", "no maxSize in its Health line")
        got = {k: int(v.group(1)) if v is not None else 0 for k, v in nums.items()}
        out.append(NodeGroupStatus(m.group(1), got["minSize"], got["maxSize"], got["cloudProviderTarget"],
                                   got["registered"]))
    return out


def status_format(text: str) -> str | None:
    """"yaml" (cluster-autoscaler >= 1.30), "legacy" (the text before it), or None (neither)."""
    if "autoscalerStatus:" in text or "nodeGroups:" in text:
        return "yaml"
    if "Cluster-autoscaler status" in text or "NodeGroups:" in text:
        return "legacy"
    return None


def node_groups(doc: Any) -> list[NodeGroupStatus]:
    """The node groups of the YAML status, loaded (the caller loads it: this layer reads
    documents, not YAML). Raises KueueParseError on a malformed group."""
    if not isinstance(doc, Mapping):
        raise KueueParseError(_OBJ, "data.status", "not a YAML mapping")
    return _from_yaml(doc)


def _base(group: str) -> str:
    """An instance group's base name: the last part of a GCE URL, without GKE's "-grp"."""
    last = group.rstrip("/").rsplit("/", 1)[-1]
    return last[:-4] if last.endswith("-grp") else last


def pool_limits(groups: Iterable[NodeGroupStatus], nodes: Iterable[Node],
                known: Mapping[str, str] | None = None) -> dict[str, PoolLimit]:
    """Per node pool (as `kueue.node_pool` names it), the limits of its node groups summed.
    `known`: node-name base → pool of pools seen before (`store.known_pools`), which ties the
    groups of a pool with no node now to it."""
    by_base: dict[str, str] = dict(known or {})  # a GKE node is "<instance group base>-<4 chars>"
    pools: set[str] = set(by_base.values())
    for n in nodes:
        pool = node_pool(n)
        if pool:
            pools.add(pool)
            by_base[n.name.rsplit("-", 1)[0]] = pool  # what the nodes say now wins over memory
    out: dict[str, PoolLimit] = {}
    for g in groups:
        base = _base(g.name)
        # Other clouds name their groups after the pools.
        pool = by_base.get(base) or (base if base in pools else (g.name if g.name in pools else ""))
        if not pool:
            continue
        was = out.get(pool, PoolLimit(0, 0, 0))
        out[pool] = PoolLimit(was.max_nodes + g.max_size, was.target + g.target, was.registered + g.registered)
    return out
