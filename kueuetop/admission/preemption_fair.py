"""Fair-sharing preemption (reference/kueue.md §6.5; Kueue: pkg/scheduler/preemption/preemption.go
fairPreemptions, runFirstFsStrategy, runSecondFsStrategy, fairsharing/ordering.go, fairsharing/strategy.go).

ClusterQueues with the highest share give first (the TargetClusterQueueOrdering), each candidate
taken when the configured strategy allows it; the second strategy retries what the first
skipped; what turned out unnecessary is filled back.
"""

from __future__ import annotations

from collections.abc import Callable

from kueuetop.admission import decisions as d
from kueuetop.admission.fair_sharing import TargetOrdering, almost_lcas, dominant_resource_share
from kueuetop.admission.preemption_common import (
    PreemptionContext,
    Target,
    candidates_ordering,
    cq_node,
    fill_back_workloads,
    remove_workload,
    restore_snapshot,
    satisfies_preemption_policy,
    workload_fits,
    workload_uses_resources,
)
from kueuetop.admission.quota_tree import FR, Node, QuotaTree
from kueuetop.admission.workload_index import Entry
from kueuetop.kueue.cluster_queue import NEVER
from kueuetop.kueue.config import LESS_THAN_INITIAL_SHARE, LESS_THAN_OR_EQUAL_TO_FINAL_SHARE


def cq_is_borrowing(tree: QuotaTree, node: Node, frs: set[FR]) -> bool:
    """Kueue: pkg/scheduler/preemption/preemption.go cqIsBorrowing."""
    return node.parent is not None and any(tree.borrowing(node, fr) for fr in frs)


def find_candidates(ctx: PreemptionContext) -> list[Entry]:
    """The preemptor's own ClusterQueue's workloads its withinClusterQueue policy allows, and the
    workloads of borrowing ClusterQueues of its cohort tree reclaimWithinCohort allows, each
    using a contested flavor-resource (Kueue: pkg/scheduler/preemption/preemption.go
    findCandidates, findCandidatesForPolicy)."""
    out: list[Entry] = []
    pol = ctx.cq.preemption
    if pol.within_cluster_queue != NEVER:
        out.extend(e for e in ctx.index.reserving_in(ctx.cq.name).values()
                   if satisfies_preemption_policy(ctx, e, pol.within_cluster_queue)
                   and workload_uses_resources(e, ctx.frs))
    if ctx.node.parent is not None and pol.reclaim_within_cohort != NEVER:
        for other in ctx.node.root().subtree_cqs():
            if other is ctx.node or not cq_is_borrowing(ctx.tree, other, ctx.frs):
                continue
            out.extend(e for e in ctx.index.reserving_in(other.name).values()
                       if satisfies_preemption_policy(ctx, e, pol.reclaim_within_cohort)
                       and workload_uses_resources(e, ctx.frs))
    return out


Strategy = Callable[[tuple, tuple, tuple], bool]  # (preemptor new share, target old, target new)


def parse_strategy(name: str) -> Strategy:
    """Kueue: pkg/scheduler/preemption/fairsharing/strategy.go LessThanOrEqualToFinalShare
    (rule S2-a) and LessThanInitialShare (rule S2-b)."""
    if name == LESS_THAN_INITIAL_SHARE:
        return lambda new_pre, old_tgt, new_tgt: new_pre < old_tgt
    return lambda new_pre, old_tgt, new_tgt: new_pre <= new_tgt


def _by_cq(entries: list[Entry]) -> dict[str, list[Entry]]:
    out: dict[str, list[Entry]] = {}
    for e in entries:
        out.setdefault(e.cq, []).append(e)
    return out


class _FairSearch:
    """One fair-sharing search: the cycle's tree with the preemptor's usage added (shares must
    include the incoming workload) and the targets taken so far."""

    def __init__(self, ctx: PreemptionContext) -> None:
        self.ctx, self.tree, self.node = ctx, ctx.tree, ctx.node
        self.chosen: list[tuple[Entry, str]] = []

    def take(self, e: Entry, reason: str) -> bool:
        """Remove e's usage, record it as a target; whether the preemptor fits now."""
        ctx, tree, node = self.ctx, self.tree, self.node
        remove_workload(ctx, e)
        self.chosen.append((e, reason))
        tree.remove_usage(node, ctx.usage)
        fits = workload_fits(ctx, True)
        tree.add_usage(node, ctx.usage)
        return fits

    def shares(self, target: Node) -> tuple[tuple, tuple]:
        """(preemptor's new share, target's old share) at their almost-LCAs (Kueue:
        pkg/scheduler/preemption/fairsharing/target.go ComputeShares)."""
        pre_lca, tgt_lca = almost_lcas(self.node, target)
        return (dominant_resource_share(self.tree, pre_lca).key,
                dominant_resource_share(self.tree, tgt_lca).key)

    def target_share_after_removal(self, target: Node, e: Entry) -> tuple:
        """Kueue: pkg/scheduler/preemption/fairsharing/target.go ComputeTargetShareAfterRemoval."""
        cand_node = cq_node(self.ctx, e.cq)
        self.tree.remove_usage(cand_node, e.usage)
        _, tgt_lca = almost_lcas(self.node, target)
        share = dominant_resource_share(self.tree, tgt_lca).key
        self.tree.add_usage(cand_node, e.usage)
        return share


def run_first_fs_strategy(search: _FairSearch, candidates: list[Entry], strategy: Strategy,
                          ) -> tuple[bool, list[Entry]]:
    """Take candidates from the ClusterQueues the ordering offers (highest share first) while the
    first strategy allows; (fits, the candidates it skipped, for the second strategy).

    Kueue: pkg/scheduler/preemption/preemption.go runFirstFsStrategy."""
    ctx, tree, node = search.ctx, search.tree, search.node
    gate_within = ctx.config.feature_gates.get("FairSharingPreemptWithinNominal", True)
    within_nominal = gate_within and not any(tree.borrowing(node, fr) for fr in ctx.frs)
    retry: list[Entry] = []
    ordering = TargetOrdering(tree, node, _by_cq(candidates))
    for cand_cq in ordering:
        if cand_cq is node:
            if search.take(ordering.pop(cand_cq), d.IN_CLUSTER_QUEUE):
                return True, retry
            continue
        if within_nominal:
            if search.take(ordering.pop(cand_cq), d.IN_COHORT_RECLAMATION):
                return True, retry
            continue
        new_pre, old_tgt = search.shares(cand_cq)
        while ordering.has_workload(cand_cq):
            e = ordering.pop(cand_cq)
            new_tgt = search.target_share_after_removal(cand_cq, e)
            if strategy(new_pre, old_tgt, new_tgt):
                if search.take(e, d.IN_COHORT_FAIR_SHARING):
                    return True, retry
                break  # shares changed: pick the next CQ again
            retry.append(e)
    return False, retry


def run_second_fs_strategy(search: _FairSearch, retry: list[Entry]) -> bool:
    """Retry what the first strategy skipped under LessThanInitialShare, one workload per
    ClusterQueue offered; whether the preemptor fits.

    Kueue: pkg/scheduler/preemption/preemption.go runSecondFsStrategy."""
    ordering = TargetOrdering(search.tree, search.node, _by_cq(retry))
    for cand_cq in ordering:
        new_pre, old_tgt = search.shares(cand_cq)
        e = ordering.pop(cand_cq)
        if new_pre < old_tgt and search.take(e, d.IN_COHORT_FAIR_SHARING):
            return True
        ordering.drop(cand_cq)
    return False


def fair_preemptions(ctx: PreemptionContext) -> list[Target]:
    """The targets of fair-sharing preemption, [] when none make the preemptor fit.

    Kueue: pkg/scheduler/preemption/preemption.go fairPreemptions."""
    candidates = find_candidates(ctx)
    if not candidates:
        return []
    candidates.sort(key=lambda e: candidates_ordering(e, ctx.cq.name, ctx.now))
    strategies = (ctx.config.fair_sharing.preemption_strategies if ctx.config.fair_sharing else ()) or (
        LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE)
    search = _FairSearch(ctx)
    ctx.tree.add_usage(ctx.node, ctx.usage)
    fits, retry = run_first_fs_strategy(search, candidates, parse_strategy(strategies[0]))
    if not fits and len(strategies) > 1 and retry:
        fits = run_second_fs_strategy(search, retry)
    ctx.tree.remove_usage(ctx.node, ctx.usage)
    if not fits:
        restore_snapshot(ctx, [e for e, _ in search.chosen])
        return []
    chosen = fill_back_workloads(ctx, search.chosen, True)
    restore_snapshot(ctx, [e for e, _ in chosen])
    return [Target(e.wl, e.cq, r, e.usage) for e, r in chosen]
