"""Preemption targets: Kueue's Preemptor (reference/kueue.md §6.5; Kueue:
pkg/scheduler/preemption/preemption.go GetTargets, preemption_oracle.go SimulatePreemption).

get_targets dispatches to classical preemption (preemption_classical) or, with fair sharing on,
to fair-sharing preemption (preemption_fair); what both share is in preemption_common.
"""

from __future__ import annotations

from kueuetop.admission.preemption_classical import classical_preemptions
from kueuetop.admission.preemption_common import PreemptionContext, Target, cq_node
from kueuetop.admission.preemption_fair import fair_preemptions
from kueuetop.admission.quota_tree import FR


def get_targets(ctx: PreemptionContext) -> list[Target]:
    """The workloads to evict so the preemptor fits, [] when there is no way.

    Kueue: pkg/scheduler/preemption/preemption.go GetTargets / getTargets."""
    # The search removes and restores usage, leaving the tree as it found it (usage depends
    # only on what is added, not on the order): its version goes back too, so what was
    # memoized on the tree stays valid for the next head.
    version = ctx.tree.version
    try:
        if ctx.config.fair_sharing is not None:
            return fair_preemptions(ctx)
        return classical_preemptions(ctx)
    finally:
        ctx.tree.version = version


TargetMemo = dict[tuple[frozenset, frozenset], list[Target]]


def memo_targets(ctx: PreemptionContext, memo: TargetMemo | None) -> list[Target]:
    """get_targets, remembered per (flavor-resources, usage) for one preemptor and one tree
    state: the flavor assigner's oracle and the nomination ask the same question for
    single-resource workloads (Kueue computes both too; the answer can't differ)."""
    if memo is None or not ctx.cache.fast_paths:
        return get_targets(ctx)
    key = (frozenset(ctx.frs), frozenset(ctx.usage.items()))
    found = memo.get(key)
    if found is None:
        found = memo[key] = get_targets(ctx)
    return found


def make_oracle(ctx: PreemptionContext, memo: TargetMemo | None = None):
    """The flavor assigner's preemption oracle: can one flavor-resource be freed, and at which
    borrowing height would the preemptor then fit? (Kueue:
    pkg/scheduler/preemption/preemption_oracle.go PreemptionOracle.SimulatePreemption)

    `memo` may be shared with the nomination's own target search while the tree is unchanged.
    """
    def oracle(fr: FR, quantity: int) -> tuple[str, int]:
        sub = PreemptionContext(ctx.tree, ctx.index, ctx.cluster_queues, ctx.preemptor, ctx.cq, ctx.node,
                                {fr}, {fr: quantity}, ctx.config, ctx.now, ctx.cache)
        targets = memo_targets(sub, memo)
        if not targets:
            return "NoCandidates", ctx.tree.lowest_fitting_subtree(ctx.node, fr, quantity)[0]
        version = ctx.tree.version
        for t in targets:
            ctx.tree.remove_usage(cq_node(ctx, t.cluster_queue), t.usage)
        borrow = ctx.tree.lowest_fitting_subtree(ctx.node, fr, quantity)[0]
        for t in targets:
            ctx.tree.add_usage(cq_node(ctx, t.cluster_queue), t.usage)
        ctx.tree.version = version  # restored (see get_targets)
        if any(t.cluster_queue == ctx.cq.name for t in targets):
            return "Preempt", borrow
        return "Reclaim", borrow
    return oracle
