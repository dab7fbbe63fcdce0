"""The cohort tree of ClusterQueues and Cohorts with quota and usage (Kueue: pkg/cache/scheduler/resource_node.go).

Per node and flavor-resource (fr):
  SubtreeQuota = own nominal + Σ children (child.SubtreeQuota − child.localQuota)
  localQuota   = max(0, SubtreeQuota − lendingLimit) if lendingLimit is set, else 0
  usage above a node's localQuota bubbles up to its parent as parent usage.

`QuotaStructure` is the immutable shape (built once per snapshot); `QuotaTree` adds usage and is
cheap to copy, so one scheduling cycle can accumulate usage on its own copy.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from kueuetop.kueue.cluster_queue import ClusterQueue
from kueuetop.kueue.cohort import Cohort
from kueuetop.kueue.quota import ResourceGroup, ResourceQuota

FR = tuple[str, str]  # (flavor, resource)
_NO_QUOTA = ResourceQuota(0)
_NO_USAGE: Mapping = MappingProxyType({})


@dataclass(eq=False)
class Node:
    """A ClusterQueue or a Cohort in the tree (structure only; usage lives in QuotaTree)."""

    name: str
    is_cq: bool
    quotas: dict[FR, ResourceQuota] = field(default_factory=dict)
    subtree: dict[FR, int] = field(default_factory=dict)
    parent: Node | None = None
    child_cqs: list[Node] = field(default_factory=list)
    child_cohorts: list[Node] = field(default_factory=list)
    fair_weight: float = 1.0
    in_cycle: bool = False  # this node's cohort chain has a cycle
    explicit: bool = True  # a Cohort object exists (implicit cohorts only have names)

    key: str = field(init=False, repr=False)  # the usage key: CQs and cohorts may share names

    def __post_init__(self) -> None:
        # Asked for at every usage lookup (millions per busy run): built once.
        self.key = ("cq/" if self.is_cq else "cohort/") + self.name

    def quota(self, fr: FR) -> ResourceQuota:
        return self.quotas.get(fr, _NO_QUOTA)

    def local_quota(self, fr: FR) -> int:
        """Capacity visible only inside this subtree because of a lendingLimit."""
        lending = self.quotas[fr].lending_limit if fr in self.quotas else None
        if lending is None:
            return 0
        return max(0, self.subtree.get(fr, 0) - lending)

    def path_to_root(self) -> Iterator[Node]:
        """Ancestors, parent first."""
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def root(self) -> Node:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def height(self) -> int:
        """Distance to the furthest leaf (Kueue getNodeHeight: a cohort with only CQs is 1)."""
        h = min(len(self.child_cqs) + len(self.child_cohorts), 1)
        for c in self.child_cohorts:
            h = max(h, c.height() + 1)
        return h

    def subtree_cqs(self) -> Iterator[Node]:
        if self.is_cq:
            yield self
            return
        yield from self.child_cqs
        for c in self.child_cohorts:
            yield from c.subtree_cqs()


def _quotas(groups: Iterable[ResourceGroup]) -> dict[FR, ResourceQuota]:
    out: dict[FR, ResourceQuota] = {}
    for g in groups:
        for fq in g.flavors:
            for res, q in fq.resources.items():
                out[(fq.name, res)] = q
    return out


@dataclass
class QuotaStructure:
    cqs: dict[str, Node]
    cohorts: dict[str, Node]

    @staticmethod
    def build(cluster_queues: Mapping[str, ClusterQueue], cohorts: Mapping[str, Cohort]) -> QuotaStructure:
        cohort_nodes: dict[str, Node] = {}

        def cohort_node(name: str) -> Node:
            node = cohort_nodes.get(name)
            if node is None:
                obj = cohorts.get(name)
                node = Node(name, False, _quotas(obj.resource_groups) if obj else {},
                            fair_weight=obj.fair_weight if obj else 1.0, explicit=obj is not None)
                cohort_nodes[name] = node
            return node

        for name, obj in cohorts.items():
            node = cohort_node(name)
            if obj.parent:
                parent = cohort_node(obj.parent)
                node.parent = parent
                parent.child_cohorts.append(node)
        # A cycle in parent links disables every member (and every CQ below it).
        for node in list(cohort_nodes.values()):
            seen: set[str] = set()
            cur: Node | None = node
            while cur is not None and cur.name not in seen:
                seen.add(cur.name)
                cur = cur.parent
            if cur is not None:  # revisited a name: cycle reachable from `node`
                node.in_cycle = True
        for node in cohort_nodes.values():
            if node.in_cycle and node.parent is not None:
                # cut the loop so tree walks terminate; the members are inactive anyway
                if node in node.parent.child_cohorts:
                    node.parent.child_cohorts.remove(node)
                node.parent = None

        cq_nodes: dict[str, Node] = {}
        for name, cq in cluster_queues.items():
            node = Node(name, True, _quotas(cq.resource_groups), fair_weight=cq.fair_weight)
            node.subtree = {fr: q.nominal for fr, q in node.quotas.items()}
            if cq.cohort:
                parent = cohort_node(cq.cohort)
                node.parent = parent
                parent.child_cqs.append(node)
                node.in_cycle = parent.in_cycle
            cq_nodes[name] = node

        for node in cohort_nodes.values():
            if node.parent is None:
                _accumulate_subtree(node)
        return QuotaStructure(cq_nodes, cohort_nodes)

    def cq_has_cycle(self, cq: str) -> bool:
        node = self.cqs.get(cq)
        return node is not None and node.in_cycle


def _accumulate_subtree(node: Node) -> None:
    """SubtreeQuota bottom-up (see the module docstring)."""
    node.subtree = {fr: q.nominal for fr, q in node.quotas.items()}
    for child in (*node.child_cohorts, *node.child_cqs):
        if not child.is_cq:
            _accumulate_subtree(child)
        for fr, q in child.subtree.items():
            node.subtree[fr] = node.subtree.get(fr, 0) + q - child.local_quota(fr)


class QuotaTree:
    """Usage on top of a QuotaStructure: available / potentialAvailable / borrowing."""

    __slots__ = ("_available", "_changes", "_shared", "memo", "structure", "usage", "version")

    def __init__(self, structure: QuotaStructure, usage: dict[str, dict[FR, int]] | None = None):
        self.structure = structure
        self.usage: dict[str, dict[FR, int]] = usage if usage is not None else {}
        # Node keys whose usage dict another tree shares (`clone`): copied before the first write.
        self._shared: set[str] = set()
        # A new number for every usage change (never reused by this tree, so a state once left
        # never matches again), so answers computed from the usage can be kept in `memo` (this
        # tree's own) until it changes; code that undoes its own trial changes may put the old
        # number back.
        self._changes = 0
        self.version = 0
        self.memo: dict = {}
        self._available: dict[tuple[Node, FR], tuple[int, int]] = {}  # (version, available) per ask

    # construction ------------------------------------------------------------
    @staticmethod
    def build(structure: QuotaStructure, cq_usage: Mapping[str, Mapping[FR, int]]) -> QuotaTree:
        """From per-CQ usage totals; cohort usage is accumulated bottom-up (accumulateFromChild)."""
        tree = QuotaTree(structure)
        for name, node in structure.cqs.items():
            tree.usage[node.key] = dict(cq_usage.get(name, {}))
        for node in structure.cohorts.values():
            if node.parent is None:
                tree._accumulate(node)
        return tree

    def _accumulate(self, node: Node) -> dict[FR, int]:
        """`node`'s usage from its children's, bottom-up (a method, not a recursive closure: that
        would hold itself and the tree in a reference cycle until a garbage collection)."""
        u: dict[FR, int] = {}
        for child in node.child_cohorts:
            cu = self._accumulate(child)
            for fr, v in cu.items():
                u[fr] = u.get(fr, 0) + max(0, v - child.local_quota(fr))
        for child in node.child_cqs:
            for fr, v in self.usage[child.key].items():
                u[fr] = u.get(fr, 0) + max(0, v - child.local_quota(fr))
        self.usage[node.key] = u
        return u

    def clone(self) -> QuotaTree:
        # Copy-on-write: both trees share every node's usage dict until one of them changes it.
        t = QuotaTree(self.structure, dict(self.usage))
        t._shared = set(self.usage)
        self._shared = set(self.usage)
        return t

    def _own(self, key: str) -> dict[FR, int]:
        """This node's usage dict, safe to change."""
        u = self.usage.get(key)
        if u is None:
            u = self.usage[key] = {}
        elif key in self._shared:
            u = self.usage[key] = dict(u)
            self._shared.discard(key)
        return u

    def cq(self, name: str) -> Node | None:
        return self.structure.cqs.get(name)

    def used(self, node: Node, fr: FR) -> int:
        return self.usage.get(node.key, _NO_USAGE).get(fr, 0)

    # queries (Kueue: pkg/cache/scheduler/resource_node.go) ---------------------
    def local_available(self, node: Node, fr: FR) -> int:
        """Kueue: pkg/cache/scheduler/resource_node.go LocalAvailable."""
        return max(0, node.local_quota(fr) - self.used(node, fr))

    def available(self, node: Node, fr: FR) -> int:
        """What this node can still take: local leftovers + what the parent can give, capped by
        borrowingLimit. May be negative after over-admission (Kueue:
        pkg/cache/scheduler/resource_node.go available)."""
        if node.parent is None:
            return node.subtree.get(fr, 0) - self.used(node, fr)
        # Asked for each resource of each flavor by the assigner, the oracle and the parked
        # verdicts of every head, on a tree that changes far less often: kept per version.
        k = (node, fr)
        hit = self._available.get(k)
        if hit is not None and hit[0] == self.version:
            return hit[1]
        v = self._compute_available(node, fr)
        self._available[k] = (self.version, v)
        return v

    def _compute_available(self, node: Node, fr: FR) -> int:
        assert node.parent is not None
        parent_available = self.available(node.parent, fr)
        bl = node.quotas[fr].borrowing_limit if fr in node.quotas else None
        if bl is not None:
            stored_in_parent = node.subtree.get(fr, 0) - node.local_quota(fr)
            used_in_parent = max(0, self.used(node, fr) - node.local_quota(fr))
            parent_available = min(stored_in_parent - used_in_parent + bl, parent_available)
        return self.local_available(node, fr) + parent_available

    def potential_available(self, node: Node, fr: FR) -> int:
        """The most this node could get with zero usage everywhere, respecting borrowing limits
        (Kueue: pkg/cache/scheduler/resource_node.go potentialAvailable)."""
        if node.parent is None:
            return node.subtree.get(fr, 0)
        avail = node.local_quota(fr) + self.potential_available(node.parent, fr)
        bl = node.quotas[fr].borrowing_limit if fr in node.quotas else None
        if bl is not None:
            avail = min(node.subtree.get(fr, 0) + bl, avail)
        return avail

    def borrowing(self, node: Node, fr: FR) -> bool:
        return self.used(node, fr) > node.subtree.get(fr, 0)

    def borrowing_with(self, node: Node, fr: FR, val: int) -> bool:
        return self.used(node, fr) + val > node.subtree.get(fr, 0)

    def within_nominal(self, node: Node, frs: Iterable[FR]) -> bool:
        """Kueue: pkg/cache/scheduler/resource_node.go IsWithinNominalInResources."""
        return all(self.used(node, fr) <= node.subtree.get(fr, 0) for fr in frs)

    def fits(self, node: Node, usage: Mapping[FR, int]) -> bool:
        return all(v <= self.available(node, fr) for fr, v in usage.items() if v)

    def quantities_fit_in_quota(self, node: Node, requests: Mapping[FR, int]) -> tuple[bool, dict[FR, int]]:
        """Kueue: pkg/cache/scheduler/resource_node.go QuantitiesFitInQuota."""
        fits = True
        remaining: dict[FR, int] = {}
        for fr, v in requests.items():
            if self.used(node, fr) + v > node.subtree.get(fr, 0):
                fits = False
            remaining[fr] = max(0, v - self.local_available(node, fr))
        return fits, remaining

    def lowest_fitting_subtree(self, cq: Node, fr: FR, val: int) -> tuple[int, bool]:
        """(borrowing level, may reclaim in the hierarchy) (Kueue:
        pkg/scheduler/preemption/classical/hierarchical_preemption.go FindHeightOfLowestSubtreeThatFits).

        Level 0 = fits in the CQ's own quota; otherwise the height of the lowest cohort whose
        subtree quota holds it. The flag is true when that subtree is not the whole tree.
        """
        if not (cq.parent is not None and self.borrowing_with(cq, fr, val)):
            return 0, cq.parent is not None
        remaining = val - self.local_available(cq, fr)
        node = cq.parent
        for node in cq.path_to_root():
            if not self.borrowing_with(node, fr, remaining):
                return node.height(), node.parent is not None
            remaining -= self.local_available(node, fr)
        return node.height(), node.parent is not None

    # mutation (addUsage / removeUsage) ----------------------------------------
    def add(self, node: Node, fr: FR, val: int) -> None:
        """Kueue: pkg/cache/scheduler/resource_node.go addUsage."""
        self._changes += 1
        self.version = self._changes
        while True:
            local_avail = self.local_available(node, fr)
            u = self._own(node.key)
            u[fr] = u.get(fr, 0) + val
            if node.parent is None or val <= local_avail:
                return
            val -= local_avail
            node = node.parent

    def remove(self, node: Node, fr: FR, val: int) -> None:
        """Kueue: pkg/cache/scheduler/resource_node.go removeUsage."""
        self._changes += 1
        self.version = self._changes
        while True:
            u = self._own(node.key)
            stored_in_parent = u.get(fr, 0) - node.local_quota(fr)
            u[fr] = u.get(fr, 0) - val
            if stored_in_parent <= 0 or node.parent is None:
                return
            val = min(val, stored_in_parent)
            node = node.parent

    def add_usage(self, cq: Node, usage: Mapping[FR, int]) -> None:
        for fr, v in usage.items():
            if v:
                self.add(cq, fr, v)

    def remove_usage(self, cq: Node, usage: Mapping[FR, int]) -> None:
        for fr, v in usage.items():
            if v:
                self.remove(cq, fr, v)

    # reporting ----------------------------------------------------------------
    def borrowed(self, cq: Node, fr: FR) -> int:
        """Usage above nominal (status.flavorsUsage[].resources[].borrowed)."""
        return max(0, self.used(cq, fr) - cq.quota(fr).nominal)


class KeptQuotaTree:
    """The quota tree of the ClusterQueues' usage, kept between cycles (an EngineCache field):
    most cycles change the usage of a few ClusterQueues out of hundreds, so their difference is
    added and removed (addUsage / removeUsage keep every cohort's share as building from the
    totals would) instead of building the whole tree; each cycle works on a copy."""

    def __init__(self) -> None:
        self.structure: QuotaStructure | None = None
        self.tree: QuotaTree | None = None
        self.seen: dict[str, dict[FR, int]] = {}  # per CQ, the usage the tree holds

    def tree_for(self, structure: QuotaStructure, cq_usage: Mapping[str, Mapping[FR, int]],
                 changed: set[str] | None = None) -> QuotaTree:
        """A copy of the tree for these usage totals; `changed`: the only ClusterQueues whose
        totals may differ from the last call's (None: any)."""
        tree = self.tree
        if tree is None or self.structure is not structure:
            tree = self.tree = QuotaTree.build(structure, cq_usage)
            self.structure = structure
            self.seen = {name: dict(cq_usage.get(name, {})) for name in structure.cqs}
            return tree.clone()
        seen = self.seen
        cqs = structure.cqs
        for name in (cqs if changed is None else changed):
            node = cqs.get(name)
            if node is None:
                continue  # usage of a ClusterQueue the structure does not hold: build ignores it too
            now = cq_usage.get(name) or {}
            was = seen[name]
            if now == was:
                continue
            for fr in was.keys() | now.keys():
                delta = now.get(fr, 0) - was.get(fr, 0)
                if delta > 0:
                    tree.add(node, fr, delta)
                elif delta < 0:
                    tree.remove(node, fr, -delta)
            seen[name] = dict(now)
        return tree.clone()
