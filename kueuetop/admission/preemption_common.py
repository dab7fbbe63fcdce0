"""What classical and fair-sharing preemption share (Kueue: pkg/scheduler/preemption/preemption.go,
common/ordering.go, common/preemption_policy.go): the context of one search, its targets, the
candidate order, the policy check, the fits check and the fill-back.

A search works on the cycle's quota tree (Kueue's cache Snapshot): it removes candidates'
usage and restores it before returning, so the tree is left as it was found.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from kueuetop.admission import decisions as d
from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.quota_tree import FR, Node, QuotaTree
from kueuetop.admission.workload_index import Entry, WorkloadIndex, queue_order_timestamp
from kueuetop.kueue.cluster_queue import ANY, LOWER_OR_NEWER_EQUAL, LOWER_PRIORITY, ClusterQueue
from kueuetop.kueue.config import KueueConfig
from kueuetop.kueue.workload import JOB_UID_LABEL, Workload

# Kueue: pkg/scheduler/preemption/preemption.go HumanReadablePreemptionReasons
HUMAN_REASONS = MappingProxyType({
    d.IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    d.IN_COHORT_RECLAMATION: "reclamation within the cohort",
    d.IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
    d.IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
})


@dataclass(frozen=True, slots=True)
class Target:
    """A workload to evict and why (Kueue: pkg/scheduler/preemption/preemption.go Target)."""

    workload: Workload
    cluster_queue: str
    reason: str
    usage: Mapping[FR, int]


def preemption_message(preemptor: Workload, reason: str) -> str:
    """Kueue: pkg/scheduler/preemption/preemption.go preemptionMessage."""
    uid = preemptor.uid or "UNKNOWN"
    job_uid = preemptor.meta.labels.get(JOB_UID_LABEL) or "UNKNOWN"
    return (f"Preempted to accommodate a workload (UID: {uid}, JobUID: {job_uid}) "
            f"due to {HUMAN_REASONS.get(reason, 'UNKNOWN')}")


@dataclass
class PreemptionContext:
    """One target search (Kueue: pkg/scheduler/preemption/preemption.go preemptionCtx)."""

    tree: QuotaTree  # the cycle's tree; temporarily modified, always restored
    index: WorkloadIndex
    cluster_queues: Mapping[str, ClusterQueue]
    preemptor: Workload
    cq: ClusterQueue
    node: Node
    frs: set[FR]  # flavor-resources that need preemption
    usage: Mapping[FR, int]  # the preemptor's assignment usage
    config: KueueConfig
    now: float
    cache: EngineCache  # the caller's: candidate lists kept across cycles, or fast_paths off


def quota_reservation_time(wl: Workload, now: float) -> float:
    """Kueue: pkg/scheduler/preemption/common/ordering.go quotaReservationTime."""
    c = wl.condition("QuotaReserved")
    if c is None or c.status != "True" or c.last_transition is None:
        return now
    return c.last_transition


def candidates_ordering(e: Entry, preemptor_cq: str, now: float) -> tuple:
    """The sort key of Kueue's CandidatesOrdering (pkg/scheduler/preemption/common/ordering.go):
    evicted first, other CQs first, lower priority, most recently quota-reserved, UID."""
    return (not e.wl.is_evicted, e.cq == preemptor_cq, e.wl.effective_priority,
            -quota_reservation_time(e.wl, now), e.wl.uid)


def workload_uses_resources(e: Entry, frs: set[FR]) -> bool:
    """Kueue: pkg/scheduler/preemption/classical/candidate_generator.go WorkloadUsesResources."""
    return any(fr in frs for fr, v in e.usage.items() if v)


def satisfies_preemption_policy(ctx: PreemptionContext, e: Entry, policy: str) -> bool:
    """The policy (withinClusterQueue or reclaimWithinCohort) lets the preemptor evict e
    (Kueue: pkg/scheduler/preemption/common/preemption_policy.go SatisfiesPreemptionPolicy)."""
    if policy == ANY:
        return True
    p_in, p_cand = ctx.preemptor.effective_priority, e.wl.effective_priority
    if policy == LOWER_PRIORITY:
        return p_in > p_cand
    if policy == LOWER_OR_NEWER_EQUAL:
        if p_in > p_cand:
            return True
        return p_in == p_cand and (queue_order_timestamp(ctx.preemptor, ctx.config)
                                   < queue_order_timestamp(e.wl, ctx.config))
    return False


def workload_fits(ctx: PreemptionContext, allow_borrowing: bool) -> bool:
    """Kueue: pkg/scheduler/preemption/preemption.go workloadFits."""
    tree, node = ctx.tree, ctx.node
    for fr, v in ctx.usage.items():
        if not allow_borrowing and tree.borrowing_with(node, fr, v):
            return False
        if v > tree.available(node, fr):
            return False
    return True


def cq_node(ctx: PreemptionContext, cq: str) -> Node:
    n = ctx.tree.cq(cq)
    assert n is not None
    return n


def remove_workload(ctx: PreemptionContext, e: Entry) -> None:
    """Kueue: pkg/cache/scheduler/snapshot.go Snapshot.RemoveWorkload (on the cycle's tree)."""
    ctx.tree.remove_usage(cq_node(ctx, e.cq), e.usage)


def restore_snapshot(ctx: PreemptionContext, entries: list[Entry]) -> None:
    """Kueue: pkg/scheduler/preemption/preemption.go restoreSnapshot."""
    for e in entries:
        ctx.tree.add_usage(cq_node(ctx, e.cq), e.usage)


def fill_back_workloads(ctx: PreemptionContext, targets: list[tuple[Entry, str]], allow_borrowing: bool,
                        ) -> list[tuple[Entry, str]]:
    """Walk the chosen targets in reverse (all but the last) and keep out any whose eviction
    turns out unnecessary (Kueue: pkg/scheduler/preemption/preemption.go fillBackWorkloads)."""
    targets = list(targets)
    for i in range(len(targets) - 2, -1, -1):
        e = targets[i][0]
        ctx.tree.add_usage(cq_node(ctx, e.cq), e.usage)
        if workload_fits(ctx, allow_borrowing):
            targets[i] = targets[-1]  # Kueue's O(1) delete keeps this order
            targets.pop()
        else:
            remove_workload(ctx, e)
    return targets


