"""The node pools kueuetop has seen, per cluster, kept across runs: what a pool's nodes carry
when it has none now.

GPU pools commonly scale to zero between jobs, and a pool without a Node is invisible through the
API: what its nodes carry (the labels a ResourceFlavor's nodeLabels select, GPUs per node) is only
on its Nodes, and cluster-autoscaler's status names node groups, not pools. So whenever kueuetop
reads the Nodes it remembers, per pool: the labels all its nodes share, the GPUs of its largest
node, and the bases of its node names (a GKE node is `<managed instance group base>-<4 chars>`,
which ties the pool to the autoscaler's node groups even when it has no node). A forecast then
places pods on a pool at zero that the autoscaler may grow (`views.forecast_report.pools_from_store`),
and `kueuetop forecast --with 'nodes POOL=+N'` can add nodes to it. A pool never seen with a node
stays unknown: nothing in the cluster says what its nodes would be.

Kept in `xdg.state_dir() / "known-pools.json"` (`cluster_state_file`: one entry per cluster scope,
atomic writes, a corrupt file set aside with a warning). Written only when something was learnt.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kueuetop.kueue.core import Node
from kueuetop.kueue.node_pool import node_pool
from kueuetop.store import cluster_state_file as SF

FILE_NAME = "known-pools.json"  # in kueuetop's state directory (xdg.state_dir())
FILE_VERSION = 1
WHAT = "known node pools"  # the file's kind, in its warnings
MAX_POOLS = 1_000  # per cluster: the most recently seen are kept
MAX_BASES = 64  # node-name bases per pool (one per zone's instance group; recreated groups add more)


@dataclass(frozen=True, slots=True)
class PoolShape:
    """What one pool's nodes carry, as last seen."""

    name: str
    node_labels: Mapping[str, str]  # the labels every node of the pool carried
    gpus_per_node: int  # `nvidia.com/gpu` allocatable of its largest node
    bases: tuple[str, ...] = ()  # its node names without their last dash-part (GKE: instance group bases)
    seen: float = 0.0  # when it was last seen with a node

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "labels": dict(self.node_labels), "gpus": self.gpus_per_node,
                "bases": list(self.bases), "seen": self.seen}


def _shape_from_json(d: Any) -> PoolShape | None:
    if not isinstance(d, dict):
        return None
    name, labels, gpus, bases, seen = d.get("name"), d.get("labels"), d.get("gpus"), d.get("bases", []), d.get("seen", 0)
    if not (isinstance(name, str) and name and isinstance(labels, dict) and isinstance(gpus, int) and gpus >= 0
            and isinstance(bases, list) and isinstance(seen, (int, float))):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()) \
            or not all(isinstance(b, str) for b in bases):
        return None
    return PoolShape(name, dict(labels), gpus, tuple(bases[:MAX_BASES]), float(seen))


def shapes_from_nodes(nodes: Iterable[Node], now: float) -> dict[str, PoolShape]:
    """Per pool label, what its nodes carry now (every node, Ready or not: a NotReady node still
    shows what the pool's nodes are)."""
    members: dict[str, list[Node]] = {}
    for n in nodes:
        pool = node_pool(n)
        if pool:
            members.setdefault(pool, []).append(n)
    out = {}
    for pool, ns in members.items():
        shared = dict(ns[0].meta.labels)
        for n in ns[1:]:
            shared = {k: v for k, v in shared.items() if n.meta.labels.get(k) == v}
        if len(ns) == 1:
            # One node: its own name is no pool's label (a flavor never selects it).
            shared.pop("kubernetes.io/hostname", None)
        bases = sorted({n.name.rsplit("-", 1)[0] for n in ns if "-" in n.name})
        out[pool] = PoolShape(pool, shared, max(n.gpus for n in ns), tuple(bases[:MAX_BASES]), now)
    return out


@dataclass
class KnownPools:
    """One cluster's pools as last seen (`learn` from its Nodes)."""

    scope: str  # run_history.cluster_scope of the cluster
    pools: dict[str, PoolShape] = field(default_factory=dict)
    unsaved: bool = False  # learnt something since the last load or save

    def learn(self, seen: Mapping[str, PoolShape]) -> None:
        """Take what the pools with nodes carry now; a pool's earlier node-name bases are kept (its
        other zones' groups, empty now, are still its own)."""
        for name, shape in seen.items():
            old = self.pools.get(name)
            bases = shape.bases if old is None else tuple(sorted(set(old.bases) | set(shape.bases)))[:MAX_BASES]
            new = PoolShape(name, dict(shape.node_labels), shape.gpus_per_node, bases, shape.seen)
            if old is None or (old.node_labels, old.gpus_per_node, old.bases) != (new.node_labels, new.gpus_per_node,
                                                                               new.bases):
                self.unsaved = True
            self.pools[name] = new
        if len(self.pools) > MAX_POOLS:
            kept = sorted(self.pools.values(), key=lambda p: p.seen, reverse=True)[:MAX_POOLS]
            self.pools = {p.name: p for p in kept}

    def learn_nodes(self, nodes: Iterable[Node], now: float) -> None:
        self.learn(shapes_from_nodes(nodes, now))

    def bases(self) -> dict[str, str]:
        """Node-name base → pool, for tying cluster-autoscaler's node groups to pools."""
        return {b: p.name for p in self.pools.values() for b in p.bases}


def load_known_pools(path: Path | str, scope: str) -> tuple[KnownPools, str]:
    """The pools kept for `scope` in the file at `path`, and a one-line warning ("" when none).
    Never raises on the file's content (see `cluster_state_file`); malformed entries are skipped."""
    path = Path(path)
    known = KnownPools(scope)
    shapes, warning = SF.read_entries(path, WHAT, FILE_VERSION, scope, _shape_from_json, "pool")
    known.pools = {p.name: p for p in shapes}
    return known, warning


def save_known_pools(path: Path | str, known: KnownPools) -> str:
    """Write `known` as its cluster's pools, keeping other clusters'; a one-line warning or ""."""
    path = Path(path)
    try:
        warning = SF.write_cluster(path, WHAT, FILE_VERSION, known.scope,
                                   [p.to_json() for p in sorted(known.pools.values(), key=lambda p: p.name)])
    except OSError as exc:
        return f"{WHAT} {path} could not be saved ({exc.strerror or exc})"
    known.unsaved = False
    return warning
