"""Fair sharing: dominant resource share (DRS), the admission tournament and the ClusterQueue
ordering used by fair preemption (reference/kueue.md §6.5, §6.6; Kueue:
pkg/cache/scheduler/fair_sharing.go, pkg/scheduler/fair_sharing_iterator.go,
pkg/scheduler/preemption/fairsharing/ordering.go, fairsharing/least_common_ancestor.go).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from kueuetop.admission.quota_tree import FR, Node, QuotaTree

MAX_INT64 = 9223372036854775807

# A DRS orders as a tuple: (1, unweighted) for a zero-weight node that borrows (+inf, ties broken
# by the unweighted ratio, as Kueue's CompareDRS), else (0, weighted share).
DRSKey = tuple[int, float]


@dataclass(frozen=True, slots=True)
class DRS:
    weight: float
    ratio: float  # unweighted per-mille ratio of the dominant resource
    resource: str
    borrowing: bool

    @property
    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and self.borrowing

    @property
    def weighted(self) -> float:
        if self.zero_weight_borrows:
            return math.inf
        if self.ratio == 0:
            return 0.0
        return self.ratio / self.weight

    @property
    def key(self) -> DRSKey:
        return (1, self.ratio) if self.zero_weight_borrows else (0, self.weighted)

    @property
    def is_zero(self) -> bool:
        return self.ratio == 0 and not self.zero_weight_borrows

    @property
    def weighted_share(self) -> int:
        """status.fairSharing.weightedShare (per-mille, rounded up; MaxInt64 = +inf)."""
        return MAX_INT64 if self.zero_weight_borrows else math.ceil(self.weighted)


def lendable(tree: QuotaTree, parent: Node) -> dict[str, int]:
    """Per resource name: Σ over flavors of the parent's potentialAvailable (Kueue:
    pkg/cache/scheduler/fair_sharing.go calculateLendable)."""
    out: dict[str, int] = {}
    for fr in parent.root().subtree:
        out[fr[1]] = out.get(fr[1], 0) + tree.potential_available(parent, fr)
    return out


def dominant_resource_share(tree: QuotaTree, node: Node, extra: Mapping[FR, int] | None = None) -> DRS:
    """Max over resources of borrowed*1000/lendable (Kueue: pkg/cache/scheduler/fair_sharing.go
    dominantResourceShare)."""
    if node.parent is None:
        return DRS(node.fair_weight, 0.0, "", False)
    borrowed: dict[str, int] = {}
    for fr, quota in node.subtree.items():
        b = (extra.get(fr, 0) if extra else 0) + tree.used(node, fr) - quota
        if b > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + b
    if not borrowed:
        return DRS(node.fair_weight, 0.0, "", False)
    lend = lendable(tree, node.parent)
    ratio, dominant = 0.0, ""
    for r in sorted(borrowed):
        lr = lend.get(r, 0)
        if lr > 0:
            v = borrowed[r] * 1000.0 / lr
            if v > ratio:
                ratio, dominant = v, r
    return DRS(node.fair_weight, ratio, dominant, True)


def borrowing_on(tree: QuotaTree, node: Node, frs: Mapping[FR, int]) -> bool:
    return any(v > 0 and tree.used(node, fr) > node.subtree.get(fr, 0) for fr, v in frs.items())


# -- admission order (tournament) -----------------------------------------------------------
@dataclass
class TournamentEntry:
    cq: Node
    usage: Mapping[FR, int]
    priority: int
    timestamp: float
    payload: object  # the caller's entry
    preemptor: bool = False  # waiting for its preemptions (gate PrioritizePreemptorWorkloads)


def _tournament_scores(tree: QuotaTree, entries: list[TournamentEntry],
                       indices: list[int]) -> dict[tuple[int, str], tuple]:
    """Per (entry, ancestor cohort): (borrows after admission, DRS key) of the child under it."""
    scores: dict[tuple[int, str], tuple] = {}
    for i in indices:
        e = entries[i]
        tree.add_usage(e.cq, e.usage)
        child: Node = e.cq
        for ancestor in e.cq.path_to_root():
            drs = dominant_resource_share(tree, child)
            scores[(i, ancestor.name)] = (borrowing_on(tree, child, e.usage), drs.key)
            child = ancestor
        tree.remove_usage(e.cq, e.usage)
    return scores


def _run(cohort: Node, pending: dict[str, int], entries: list[TournamentEntry],
         scores: dict[tuple[int, str], tuple], priority_sorting: bool) -> int | None:
    candidates: list[int] = []
    for child in cohort.child_cohorts:
        w = _run(child, pending, entries, scores, priority_sorting)
        if w is not None:
            candidates.append(w)
    for child in cohort.child_cqs:
        if child.name in pending:
            candidates.append(pending[child.name])
    if not candidates:
        return None

    def rank(i: int) -> tuple:
        e = entries[i]
        return (not e.preemptor, *scores[(i, cohort.name)], -e.priority if priority_sorting else 0, e.timestamp)

    return min(candidates, key=rank)


def tournament_order(tree: QuotaTree, entries: list[TournamentEntry], priority_sorting: bool = True,
                     ) -> Iterator[TournamentEntry]:
    """Yield entries (one per CQ) in fair-sharing order. At each cohort the child whose share
    after admitting its nominated workload is lowest wins: non-borrowing first (gate
    FairSharingPrioritizeNonBorrowing), then DRS, priority, FIFO.

    Usage is read from `tree` at each pop, so the caller adds the usage of admitted entries
    between pops, as Kueue's iterator sees the cycle's snapshot.
    """
    pending = {e.cq.name: i for i, e in enumerate(entries)}
    while pending:
        first = min(pending.values())
        cq = entries[first].cq
        if cq.parent is None:
            del pending[cq.name]
            yield entries[first]
            continue
        root = cq.root()
        in_tree = [i for i in pending.values() if entries[i].cq.root() is root]
        scores = _tournament_scores(tree, entries, in_tree)
        win = _run(root, pending, entries, scores, priority_sorting)
        if win is None:  # cannot happen: `first` is in this tree
            win = first
        del pending[entries[win].cq.name]
        yield entries[win]


# -- preemption: which ClusterQueue to take from next -------------------------------------------
class TargetOrdering:
    """Kueue: pkg/scheduler/preemption/fairsharing/ordering.go TargetClusterQueueOrdering: from the root, descend into the child with the highest
    DRS that still has candidates; a Cohort wins ties against a CQ."""

    def __init__(self, tree: QuotaTree, preemptor: Node, candidates: Mapping[str, list]):
        self.tree = tree
        self.preemptor = preemptor
        self.ancestors = set(id(a) for a in preemptor.path_to_root())
        self.targets = {k: list(v) for k, v in candidates.items()}
        self.pruned_cqs: set[str] = set()
        self.pruned_cohorts: set[str] = set()

    def has_workload(self, cq: Node) -> bool:
        return bool(self.targets.get(cq.name))

    def pop(self, cq: Node):
        return self.targets[cq.name].pop(0)

    def drop(self, cq: Node) -> None:
        self.pruned_cqs.add(cq.name)

    def __iter__(self) -> Iterator[Node]:
        if self.preemptor.parent is None:
            while self.has_workload(self.preemptor):
                yield self.preemptor
            return
        root = self.preemptor.root()
        while root.name not in self.pruned_cohorts:
            target = self._next(root)
            if target is not None:
                yield target

    def _next(self, cohort: Node) -> Node | None:
        best_cq, best_cq_drs = None, None
        for cq in cohort.child_cqs:
            if cq.name in self.pruned_cqs:
                continue
            drs = dominant_resource_share(self.tree, cq)
            if (drs.is_zero and cq is not self.preemptor) or not self.has_workload(cq):
                self.pruned_cqs.add(cq.name)
            elif best_cq_drs is None or drs.key >= best_cq_drs:
                best_cq, best_cq_drs = cq, drs.key
        best_co, best_co_drs = None, None
        for co in cohort.child_cohorts:
            if co.name in self.pruned_cohorts:
                continue
            drs = dominant_resource_share(self.tree, co)
            if drs.is_zero and id(co) not in self.ancestors:
                self.pruned_cohorts.add(co.name)
            elif best_co_drs is None or drs.key >= best_co_drs:
                best_co, best_co_drs = co, drs.key
        if best_co is None and best_cq is None:
            self.pruned_cohorts.add(cohort.name)
            return None
        if best_co is not None and (best_cq_drs is None or best_co_drs >= best_cq_drs):
            return self._next(best_co)
        return best_cq


def almost_lcas(a: Node, b: Node) -> tuple[Node, Node]:
    """The ancestors of a and b (or themselves) right below their least common ancestor
    (Kueue: pkg/scheduler/preemption/fairsharing/least_common_ancestor.go getAlmostLCAs)."""
    a_path = [a, *a.path_to_root()]
    b_ids = {id(n): n for n in [b, *b.path_to_root()]}
    lca = next((n for n in a_path if id(n) in b_ids), None)
    def below(node: Node) -> Node:
        cur = node
        while cur.parent is not None and cur.parent is not lca:
            cur = cur.parent
        return cur
    return below(a), below(b)
