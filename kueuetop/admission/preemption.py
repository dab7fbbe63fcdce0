"""Preemption targets (reference/kueue.md §6.5; Kueue preemption.go, classical/*.go, fair_strategy.go).

Classical: candidates from the preemptor's CQ (withinClusterQueue) and from CQs of the cohort
tree that are above nominal on the contested flavor-resources (reclaimWithinCohort), classified
as hierarchical reclaim / reclaim without borrowing / reclaim while borrowing; removed in
CandidatesOrdering until the preemptor fits, then filled back in reverse.
Fair sharing: ClusterQueues with the highest share give first, subject to the configured
strategies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kueuetop.admission import decisions as d
from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.fair_sharing import TargetOrdering, almost_lcas, dominant_resource_share
from kueuetop.admission.quota_tree import FR, Node, QuotaTree
from kueuetop.admission.workload_index import Entry, WorkloadIndex, queue_order_timestamp
from kueuetop.kueue.cluster_queue import ANY, LOWER_OR_NEWER_EQUAL, LOWER_PRIORITY, NEVER, ClusterQueue
from kueuetop.kueue.config import LESS_THAN_INITIAL_SHARE, LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, KueueConfig
from kueuetop.kueue.workload import JOB_UID_LABEL, Workload

HUMAN_REASONS = {
    d.IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    d.IN_COHORT_RECLAMATION: "reclamation within the cohort",
    d.IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
    d.IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
}

# Candidate variants (classical/hierarchical_preemption.go).
V_NEVER, V_WITHIN_CQ, V_HIERARCHICAL, V_RECLAIM_NO_BORROW, V_RECLAIM_WHILE_BORROWING = range(5)
_VARIANT_REASON = {
    V_WITHIN_CQ: d.IN_CLUSTER_QUEUE,
    V_HIERARCHICAL: d.IN_COHORT_RECLAMATION,
    V_RECLAIM_NO_BORROW: d.IN_COHORT_RECLAMATION,
    V_RECLAIM_WHILE_BORROWING: d.IN_COHORT_RECLAIM_WHILE_BORROWING,
}


@dataclass(frozen=True, slots=True)
class Target:
    workload: Workload
    cluster_queue: str
    reason: str
    usage: Mapping[FR, int]


def preemption_message(preemptor: Workload, reason: str) -> str:
    uid = preemptor.uid or "UNKNOWN"
    job_uid = preemptor.meta.labels.get(JOB_UID_LABEL) or "UNKNOWN"
    return (f"Preempted to accommodate a workload (UID: {uid}, JobUID: {job_uid}) "
            f"due to {HUMAN_REASONS.get(reason, 'UNKNOWN')}")


@dataclass
class PreemptionContext:
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


def _quota_reserved_time(wl: Workload, now: float) -> float:
    c = wl.condition("QuotaReserved")
    if c is None or c.status != "True" or c.last_transition is None:
        return now
    return c.last_transition


def candidate_order_key(e: Entry, preemptor_cq: str, now: float) -> tuple:
    """CandidatesOrdering: evicted first, other CQs first, lower priority, most recently
    quota-reserved, UID."""
    return (not e.wl.is_evicted, e.cq == preemptor_cq, e.wl.effective_priority,
            -_quota_reserved_time(e.wl, now), e.wl.uid)


def _uses(e: Entry, frs: set[FR]) -> bool:
    return any(fr in frs for fr, v in e.usage.items() if v)


def _priority_allows(ctx: PreemptionContext, e: Entry, policy: str) -> bool:
    """The policy (withinClusterQueue or reclaimWithinCohort) lets the preemptor evict e."""
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


def _classify(ctx: PreemptionContext, e: Entry, advantage: bool, same: bool | None = None) -> int:
    """The candidate variant of e, which uses some of ctx.frs (_using_entries); `same`: whether
    e counts as in the preemptor's own CQ (default: whether it is)."""
    if same is None:
        same = e.cq == ctx.cq.name
    pol = ctx.cq.preemption
    if not _priority_allows(ctx, e, pol.within_cluster_queue if same else pol.reclaim_within_cohort):
        return V_NEVER
    if same:
        return V_WITHIN_CQ
    if advantage:
        return V_HIERARCHICAL
    if pol.borrow_within_cohort == NEVER:
        return V_RECLAIM_NO_BORROW
    p_in, p_cand = ctx.preemptor.effective_priority, e.wl.effective_priority
    threshold = pol.max_priority_threshold
    if p_cand >= p_in or (threshold is not None and p_cand > threshold):
        return V_RECLAIM_NO_BORROW
    return V_RECLAIM_WHILE_BORROWING


@dataclass(slots=True)
class _Candidate:
    # Shared between searches (memoized lists): never changed once built.
    entry: Entry
    variant: int
    lca: Node | None
    key: tuple  # candidate_order_key without its "same ClusterQueue" part, constant in a group


def _base_order_key(e: Entry, now: float) -> tuple:
    return (not e.wl.is_evicted, e.wl.effective_priority, -_quota_reserved_time(e.wl, now), e.wl.uid)


def _cq_memo(ctx: PreemptionContext) -> dict:
    """Answers derived from one ClusterQueue's quota-holding entries, kept across cycles in the
    cache: each is stored with that queue's `reserving_version` and recomputed once it moves."""
    return ctx.cache.candidate_memo()


def _using_entries(ctx: PreemptionContext, cq_name: str, frs: frozenset[FR]) -> list[tuple[Entry, tuple]]:
    """The CQ's quota-holding entries that use any of `frs`, with their base order keys."""
    memo = _cq_memo(ctx)
    k = ("using", cq_name, frs)
    version = ctx.index.reserving_version.get(cq_name, 0)
    hit = memo.get(k)
    # A key reads `now` only for an entry without a QuotaReserved time: then it is kept for
    # that instant alone.
    if hit is not None and hit[0] == version and (hit[1] is None or hit[1] == ctx.now):
        return hit[2]
    found, at = [], None
    for e in ctx.index.reserving_in(cq_name).values():
        if _uses(e, frs):
            found.append((e, _base_order_key(e, ctx.now)))
            if at is None and _reserved_time_missing(e.wl):
                at = ctx.now
    memo[k] = (version, at, found)
    return found


def _reserved_time_missing(wl: Workload) -> bool:
    c = wl.condition("QuotaReserved")
    return c is None or c.status != "True" or c.last_transition is None


def _from_cq(ctx: PreemptionContext, cq_name: str, lca: Node | None, advantage: bool,
             same: bool | None = None) -> list[_Candidate]:
    """The CQ's candidates as classified for this preemptor (a shared, read-only list).

    A preemptor's classification of another workload depends only on the preemptor's CQ and
    its policy, priority (and queue-order time for LowerOrNewerEqualPriority) and on
    `advantage`: every head of a cohort with those equal gets the same list, so the list is
    kept, across cycles, while the CQ's quota-holding workloads stay the same."""
    frs = frozenset(ctx.frs)
    pol = ctx.cq.preemption
    if same is None:
        same = cq_name == ctx.cq.name
    policy = pol.within_cluster_queue if same else pol.reclaim_within_cohort
    p_in = ctx.preemptor.effective_priority
    ts_in = queue_order_timestamp(ctx.preemptor, ctx.config) if policy == LOWER_OR_NEWER_EQUAL else None
    using = _using_entries(ctx, cq_name, frs)
    memo = _cq_memo(ctx)
    k = ("cands", cq_name, frs, same, advantage, lca, pol, p_in, ts_in)
    hit = memo.get(k)
    if hit is not None and hit[0] is using:
        return hit[1]
    found = []
    for e, key in using:
        v = _classify(ctx, e, advantage, same)
        if v != V_NEVER:
            found.append(_Candidate(e, v, lca, key))
    memo[k] = (using, found)
    return found


def _above_nominal_cqs(tree: QuotaTree, current: Node, frs: frozenset[FR], keep: bool = True,
                       ) -> list[tuple[Node, Node]]:
    """The ClusterQueues under `current` reached through cohorts that are above nominal on
    `frs` and themselves above nominal, in collectCandidatesForHierarchicalReclaim's walk order,
    each with the child of `current` it lies under. Kept (`keep`) in the tree's memo while its
    usage is unchanged."""
    k = ("above", current, frs)
    hit = tree.memo.get(k) if keep else None
    if hit is not None and hit[0] == tree.version:
        return hit[1]
    out: list[tuple[Node, Node]] = []

    def walk(node: Node, top: Node | None) -> None:
        for child in node.child_cohorts:
            if not tree.within_nominal(child, frs):
                walk(child, top or child)
        for child in node.child_cqs:
            if not tree.within_nominal(child, frs):
                out.append((child, top or child))

    walk(current, None)
    if keep:
        tree.memo[k] = (tree.version, out)
    return out


class _Pool:
    """Candidates in CandidatesOrdering (one group: hierarchy, priority or the own CQ), each
    with the child of the walked cohort it lies under (`tops`), so one sorted pool serves
    every head of that cohort: a head skips the part under its own subtree."""

    __slots__ = ("by_top", "cands", "split", "tops", "total")

    def __init__(self, pairs: list[tuple[_Candidate, Node | None]]) -> None:
        pairs.sort(key=lambda p: p[0].key)
        self.cands = [c for c, _ in pairs]
        self.tops = [t for _, t in pairs]
        self.split = sum(1 for c in self.cands if not c.key[0])  # evicted ones sort first
        self.total: dict[FR, int] | None = None  # usage sums, when first asked for
        self.by_top: dict[Node | None, tuple[int, dict[FR, int]]] | None = None

    def _sums(self) -> None:
        self.total, self.by_top = {}, {}
        for c, top in zip(self.cands, self.tops, strict=True):
            n, u = self.by_top.get(top, (0, {}))
            for fr, v in c.entry.usage.items():
                u[fr] = u.get(fr, 0) + v
                self.total[fr] = self.total.get(fr, 0) + v
            self.by_top[top] = (n + 1, u)

    def count(self, skip: object) -> int:
        if skip is _NOTHING or not self.cands:
            return len(self.cands)
        if self.by_top is None:
            self._sums()
        return len(self.cands) - self.by_top.get(skip, (0, {}))[0]  # type: ignore[union-attr,arg-type]

    def usage(self, fr: FR, skip: object) -> int:
        if self.total is None:
            self._sums()
        return self.total.get(fr, 0) - self.by_top.get(skip, (0, {}))[1].get(fr, 0)  # type: ignore[union-attr,arg-type]


_NOTHING = object()  # a `skip` no candidate lies under


class _Ordered:
    """The search order of classical preemption: groups hierarchy, priority, own CQ; evicted
    candidates of every group before the others; inside a group by the base order key."""

    def __init__(self, hierarchy: list[tuple[_Pool, object]], priority: list[tuple[_Pool, object]],
                 same: _Pool) -> None:
        self.groups = [*(_one(hierarchy)), *(_one(priority)), (same, _NOTHING)]
        self.has_hierarchy = any(p.count(x) for p, x in hierarchy)
        self.has_priority = any(p.count(x) for p, x in priority)
        self.size = sum(p.count(x) for p, x in self.groups)

    def usage(self, fr: FR) -> int:
        return sum(p.usage(fr, x) for p, x in self.groups)

    def __iter__(self):
        for evicted in (True, False):
            for pool, skip in self.groups:
                tops, cands = pool.tops, pool.cands
                for i in (range(pool.split) if evicted else range(pool.split, len(cands))):
                    if tops[i] is not skip:
                        yield cands[i]


def _one(pools: list[tuple[_Pool, object]]) -> list[tuple[_Pool, object]]:
    """A group's pools as one: levels of a cohort hierarchy are merged into a fresh pool."""
    if len(pools) <= 1:
        return pools
    pairs = [(c, None) for pool, skip in pools for c, t in zip(pool.cands, pool.tops, strict=True) if t is not skip]
    return [(_Pool(pairs), _NOTHING)]


def _level_pool(ctx: PreemptionContext, current: Node, advantage: bool) -> _Pool:
    """The candidates of every ClusterQueue reached under `current` (as collectCandidatesFor
    HierarchicalReclaim walks it), classified as another CQ's. Depends on the preemptor only
    through its policy, priority and queue-order time, and on which queues are above nominal
    and their candidates: kept (across cycles) while those are the same."""
    frs = frozenset(ctx.frs)
    pol = ctx.cq.preemption
    ts_in = (queue_order_timestamp(ctx.preemptor, ctx.config)
             if pol.reclaim_within_cohort == LOWER_OR_NEWER_EQUAL else None)
    parts = [(cq_node, top, _from_cq(ctx, cq_node.name, current, advantage, False))
             for cq_node, top in _above_nominal_cqs(ctx.tree, current, frs)]
    memo = _cq_memo(ctx)
    # What _classify reads for another CQ's workload (cheaper to hash than the whole policy).
    k = ("pool", current, frs, advantage, pol.reclaim_within_cohort, pol.borrow_within_cohort,
         pol.max_priority_threshold, ctx.preemptor.effective_priority, ts_in)
    hit = memo.get(k)
    if hit is not None and len(hit[0]) == len(parts) and all(
            a[0] is b[0] and a[1] is b[1] and a[2] is b[2] for a, b in zip(hit[0], parts, strict=True)):
        return hit[1]
    pool = _Pool([(c, top) for _, top, cands in parts for c in cands])
    memo[k] = (parts, pool)
    return pool


def _same_pool(ctx: PreemptionContext) -> _Pool:
    if ctx.cq.preemption.within_cluster_queue == NEVER:
        return _Pool([])
    memo = _cq_memo(ctx)
    lst = _from_cq(ctx, ctx.cq.name, None, False)
    k = ("same-pool", ctx.cq.name, frozenset(ctx.frs), ctx.cq.preemption, ctx.preemptor.effective_priority)
    hit = memo.get(k)
    if hit is None or hit[0] is not lst:
        hit = memo[k] = (lst, _Pool([(c, None) for c in lst]))
    return hit[1]


def _ordered_candidates(ctx: PreemptionContext) -> _Ordered:
    """collectCandidatesForHierarchicalReclaim plus the own CQ's candidates, in search order."""
    hierarchy: list[tuple[_Pool, object]] = []
    priority: list[tuple[_Pool, object]] = []
    if ctx.node.parent is not None and ctx.cq.preemption.reclaim_within_cohort != NEVER:
        advantage, remaining = ctx.tree.quantities_fit_in_quota(ctx.node, ctx.usage)
        previous: Node | None = None
        for current in ctx.node.path_to_root():
            # The preemptor's own CQ is a direct child of the first `current`, then under `previous`.
            (hierarchy if advantage else priority).append(
                (_level_pool(ctx, current, advantage), previous or ctx.node))
            fits, remaining = ctx.tree.quantities_fit_in_quota(current, remaining)
            advantage = advantage or fits
            previous = current
    return _Ordered(hierarchy, priority, _same_pool(ctx))


def _plain_ordered_candidates(ctx: PreemptionContext) -> _Ordered:
    """The candidates as collectCandidatesForHierarchicalReclaim gathers them for this one
    preemptor, each group sorted (no pools shared between heads, nothing kept)."""
    hierarchy: list[_Candidate] = []
    priority: list[_Candidate] = []
    frs = frozenset(ctx.frs)
    if ctx.node.parent is not None and ctx.cq.preemption.reclaim_within_cohort != NEVER:
        advantage, remaining = ctx.tree.quantities_fit_in_quota(ctx.node, ctx.usage)
        previous: Node | None = None
        for current in ctx.node.path_to_root():
            for cq_node, top in _above_nominal_cqs(ctx.tree, current, frs, keep=False):
                if top is previous or cq_node is ctx.node:
                    continue
                (hierarchy if advantage else priority).extend(_from_cq(ctx, cq_node.name, current, advantage))
            fits, remaining = ctx.tree.quantities_fit_in_quota(current, remaining)
            advantage = advantage or fits
            previous = current
    same = _from_cq(ctx, ctx.cq.name, None, False) if ctx.cq.preemption.within_cluster_queue != NEVER else []

    def pool(found: list[_Candidate]) -> _Pool:
        return _Pool([(c, None) for c in found])

    return _Ordered([(pool(hierarchy), _NOTHING)] if hierarchy else [],
                    [(pool(priority), _NOTHING)] if priority else [], pool(same))


def _workload_fits(ctx: PreemptionContext, allow_borrowing: bool) -> bool:
    tree, node = ctx.tree, ctx.node
    for fr, v in ctx.usage.items():
        if not allow_borrowing and tree.borrowing_with(node, fr, v):
            return False
        if v > tree.available(node, fr):
            return False
    return True


def _node(ctx: PreemptionContext, cq: str) -> Node:
    n = ctx.tree.cq(cq)
    assert n is not None
    return n


def _remove(ctx: PreemptionContext, e: Entry) -> None:
    ctx.tree.remove_usage(_node(ctx, e.cq), e.usage)


def _restore(ctx: PreemptionContext, entries: list[Entry]) -> None:
    for e in entries:
        ctx.tree.add_usage(_node(ctx, e.cq), e.usage)


def _valid(ctx: PreemptionContext, c: _Candidate, borrow: bool) -> bool:
    """candidateIsValid: a cross-CQ candidate stays valid while its CQ (and the cohorts up to
    the common ancestor) are still above nominal; some may only be used without borrowing."""
    if c.entry.cq == ctx.cq.name:
        return True
    if borrow and c.variant == V_RECLAIM_NO_BORROW:
        return False
    node = _node(ctx, c.entry.cq)
    if ctx.tree.within_nominal(node, ctx.frs):
        return False
    for anc in node.path_to_root():
        if anc is c.lca:
            break
        if ctx.tree.within_nominal(anc, ctx.frs):
            return False
    return True


def _fill_back(ctx: PreemptionContext, targets: list[tuple[Entry, str]], allow_borrowing: bool,
               ) -> list[tuple[Entry, str]]:
    """Walk the chosen targets in reverse (all but the last) and keep out any whose eviction
    turns out unnecessary."""
    targets = list(targets)
    for i in range(len(targets) - 2, -1, -1):
        e = targets[i][0]
        ctx.tree.add_usage(_node(ctx, e.cq), e.usage)
        if _workload_fits(ctx, allow_borrowing):
            targets[i] = targets[-1]  # Kueue's O(1) delete keeps this order
            targets.pop()
        else:
            _remove(ctx, e)
    return targets


def _queue_under_nominal(ctx: PreemptionContext) -> bool:
    return all(ctx.tree.used(ctx.node, fr) < ctx.node.quota(fr).nominal for fr in ctx.frs)


def _cannot_cover(ctx: PreemptionContext, candidates: _Ordered) -> bool:
    """No subset of the candidates can make the preemptor fit: for some flavor-resource, even
    evicting all of them frees less than the shortfall.

    Removing usage u anywhere in the tree raises a node's `available` by at most u, so when
    Σ candidates' usage < usage − available, both attempts of the search would fail; skipping
    it returns the same [] without removing and restoring every candidate.
    """
    tree, node = ctx.tree, ctx.node
    for fr, v in ctx.usage.items():
        short = v - tree.available(node, fr)
        if short > 0 and candidates.usage(fr) < short:
            return True
    return False


def _allowed(by_priority: Mapping[int, Mapping[FR, int]] | None, fr: FR, policy: str, p_in: int) -> int:
    """Usage of `fr` in `by_priority` (usage per effective priority) by the workloads whose
    priority `policy` could let a preemptor of priority `p_in` evict (LowerOrNewerEqualPriority:
    every equal one counted)."""
    if policy == NEVER or not by_priority:
        return 0
    total = 0
    if policy == LOWER_PRIORITY:
        for p, u in by_priority.items():
            if p < p_in:
                total += u.get(fr, 0)
    elif policy == LOWER_OR_NEWER_EQUAL:
        for p, u in by_priority.items():
            if p <= p_in:
                total += u.get(fr, 0)
    else:  # Any (or unknown: no bound)
        for u in by_priority.values():
            total += u.get(fr, 0)
    return total


# Policies by how much they could allow (the widest of two bounds the cluster-wide check).
_WIDTH = {NEVER: 0, LOWER_PRIORITY: 1, LOWER_OR_NEWER_EQUAL: 2}


def _cohort_others(ctx: PreemptionContext) -> list[str]:
    """The other ClusterQueues of the preemptor's cohort tree (kept per node in the cache)."""
    if not ctx.cache.fast_paths:
        return _others_of(ctx.node)
    return ctx.cache.cohort_others.get(ctx.node, _others_of)


def _others_of(node: Node) -> list[str]:
    return [n.name for n in node.root().subtree_cqs() if n is not node]


def _surely_uncoverable(ctx: PreemptionContext) -> bool:
    """_cannot_cover without collecting the candidates: for some flavor-resource even every
    workload the policies could ever allow — the own CQ's under withinClusterQueue, the rest of
    the cohort tree's under reclaimWithinCohort, by priority alone, then only those of its
    queues above nominal — frees less than the shortfall. Candidates are a subset of those, so
    the search would return [] as well.

    Most preemption questions on a busy cluster end here: a best-effort head asks the oracle
    for every resource of every flavor, and nothing ranks below it."""
    tree, node, pol, index = ctx.tree, ctx.node, ctx.cq.preemption, ctx.index
    p_in = ctx.preemptor.effective_priority
    within = pol.within_cluster_queue
    reclaim = pol.reclaim_within_cohort if node.parent is not None else NEVER
    wider = within if _WIDTH.get(within, 3) >= _WIDTH.get(reclaim, 3) else reclaim
    for fr, v in ctx.usage.items():
        short = v - tree.available(node, fr)
        if short <= 0:
            continue
        # Every CQ's allowed usage at once first: nothing of a lower priority anywhere is common.
        if _allowed(index.total_by_priority, fr, wider, p_in) < short:
            return True
        own = _allowed(index.usage_by_priority.get(ctx.cq.name), fr, within, p_in)
        if own >= short:
            continue
        if reclaim == NEVER or own + _others_allowed(ctx, fr, reclaim, p_in) < short:
            return True
        if own + _borrowing_others_allowed(ctx, fr, reclaim, p_in) < short:
            return True
    return False


def _borrowing_others_allowed(ctx: PreemptionContext, fr: FR, policy: str, p_in: int) -> int:
    """_allowed over the other ClusterQueues of the cohort tree that are above nominal on the
    searched flavor-resources: collectCandidatesForHierarchicalReclaim only takes candidates
    from queues (under cohorts) not within nominal, so the rest can never be candidates."""
    tree, by_cq, frs = ctx.tree, ctx.index.usage_by_priority, ctx.frs
    total = 0
    for name in _cohort_others(ctx):
        other = tree.cq(name)
        if other is not None and not tree.within_nominal(other, frs):
            total += _allowed(by_cq.get(name), fr, policy, p_in)
    return total


def _others_allowed(ctx: PreemptionContext, fr: FR, policy: str, p_in: int) -> int:
    """_allowed summed over the rest of the preemptor's cohort tree. Kept for the index's
    current update: the heads of one cohort, requeued together, ask it in turn."""
    memo = _cq_memo(ctx)
    k = ("others", ctx.node, fr, policy, p_in)
    hit = memo.get(k)
    if hit is not None and hit[0] == ctx.index.serial:
        return hit[1]
    by_cq = ctx.index.usage_by_priority
    total = sum(_allowed(by_cq.get(name), fr, policy, p_in) for name in _cohort_others(ctx))
    memo[k] = (ctx.index.serial, total)
    return total


def classical_targets(ctx: PreemptionContext) -> list[Target]:
    fast = ctx.cache.fast_paths
    if fast and _surely_uncoverable(ctx):
        return []
    everything = _ordered_candidates(ctx) if fast else _plain_ordered_candidates(ctx)
    if not everything.size or (fast and _cannot_cover(ctx, everything)):
        return []
    forbidden = ctx.cq.preemption.borrow_within_cohort == NEVER
    if (not everything.has_hierarchy and not everything.has_priority) or (
            forbidden and not _queue_under_nominal(ctx)):
        attempts = [True]
    elif forbidden and not everything.has_hierarchy:
        attempts = [False, True]
    else:
        attempts = [True, False]
    for borrow in attempts:
        chosen: list[tuple[Entry, str]] = []
        for c in everything:
            if not _valid(ctx, c, borrow):
                continue
            _remove(ctx, c.entry)
            chosen.append((c.entry, _VARIANT_REASON[c.variant]))
            if _workload_fits(ctx, borrow):
                chosen = _fill_back(ctx, chosen, borrow)
                _restore(ctx, [e for e, _ in chosen])
                return [Target(e.wl, e.cq, r, e.usage) for e, r in chosen]
        _restore(ctx, [e for e, _ in chosen])
    return []


# -- fair sharing -----------------------------------------------------------------------------
def _cq_borrowing(tree: QuotaTree, node: Node, frs: set[FR]) -> bool:
    return node.parent is not None and any(tree.borrowing(node, fr) for fr in frs)


def _fair_candidates(ctx: PreemptionContext) -> list[Entry]:
    out: list[Entry] = []
    pol = ctx.cq.preemption
    if pol.within_cluster_queue != NEVER:
        out.extend(e for e in ctx.index.reserving_in(ctx.cq.name).values()
                   if _priority_allows(ctx, e, pol.within_cluster_queue) and _uses(e, ctx.frs))
    if ctx.node.parent is not None and pol.reclaim_within_cohort != NEVER:
        for other in ctx.node.root().subtree_cqs():
            if other is ctx.node or not _cq_borrowing(ctx.tree, other, ctx.frs):
                continue
            out.extend(e for e in ctx.index.reserving_in(other.name).values()
                       if _priority_allows(ctx, e, pol.reclaim_within_cohort) and _uses(e, ctx.frs))
    return out


def _strategy(name: str):
    if name == LESS_THAN_INITIAL_SHARE:
        return lambda new_pre, old_tgt, new_tgt: new_pre < old_tgt
    return lambda new_pre, old_tgt, new_tgt: new_pre <= new_tgt


def fair_targets(ctx: PreemptionContext) -> list[Target]:
    candidates = _fair_candidates(ctx)
    if not candidates:
        return []
    candidates.sort(key=lambda e: candidate_order_key(e, ctx.cq.name, ctx.now))
    tree, node = ctx.tree, ctx.node
    strategies = (ctx.config.fair_sharing.preemption_strategies if ctx.config.fair_sharing else ()) or (
        LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE)
    chosen: list[tuple[Entry, str]] = []
    tree.add_usage(node, ctx.usage)  # shares must include the incoming workload

    def take(e: Entry, reason: str) -> bool:
        _remove(ctx, e)
        chosen.append((e, reason))
        tree.remove_usage(node, ctx.usage)
        fits = _workload_fits(ctx, True)
        tree.add_usage(node, ctx.usage)
        return fits

    def by_cq(entries: list[Entry]) -> dict[str, list[Entry]]:
        out: dict[str, list[Entry]] = {}
        for e in entries:
            out.setdefault(e.cq, []).append(e)
        return out

    def shares(target: Node) -> tuple:
        pre_lca, tgt_lca = almost_lcas(node, target)
        return dominant_resource_share(tree, pre_lca).key, dominant_resource_share(tree, tgt_lca).key

    fits = False
    gate_within = ctx.config.feature_gates.get("FairSharingPreemptWithinNominal", True)
    within_nominal = gate_within and not any(tree.borrowing(node, fr) for fr in ctx.frs)
    first = _strategy(strategies[0])
    retry: list[Entry] = []
    ordering = TargetOrdering(tree, node, by_cq(candidates))
    for cand_cq in ordering:
        if cand_cq is node:
            if take(ordering.pop(cand_cq), d.IN_CLUSTER_QUEUE):
                fits = True
                break
            continue
        if within_nominal:
            if take(ordering.pop(cand_cq), d.IN_COHORT_RECLAMATION):
                fits = True
                break
            continue
        new_pre, old_tgt = shares(cand_cq)
        passed = False
        while ordering.has_workload(cand_cq):
            e = ordering.pop(cand_cq)
            cand_node = _node(ctx, e.cq)
            tree.remove_usage(cand_node, e.usage)
            _, tgt_lca = almost_lcas(node, cand_cq)
            new_tgt = dominant_resource_share(tree, tgt_lca).key
            tree.add_usage(cand_node, e.usage)
            if first(new_pre, old_tgt, new_tgt):
                passed = True
                fits = take(e, d.IN_COHORT_FAIR_SHARING)
                break  # shares changed: pick the next CQ again
            retry.append(e)
        if passed and fits:
            break
    if not fits and len(strategies) > 1 and retry:
        ordering = TargetOrdering(tree, node, by_cq(retry))
        for cand_cq in ordering:
            new_pre, old_tgt = shares(cand_cq)
            e = ordering.pop(cand_cq)
            if new_pre < old_tgt and take(e, d.IN_COHORT_FAIR_SHARING):
                fits = True
                break
            ordering.drop(cand_cq)
    tree.remove_usage(node, ctx.usage)
    if not fits:
        _restore(ctx, [e for e, _ in chosen])
        return []
    chosen = _fill_back(ctx, chosen, True)
    _restore(ctx, [e for e, _ in chosen])
    return [Target(e.wl, e.cq, r, e.usage) for e, r in chosen]


def get_targets(ctx: PreemptionContext) -> list[Target]:
    """The workloads to evict so the preemptor fits, [] when there is no way."""
    # The search removes and restores usage, leaving the tree as it found it (usage depends
    # only on what is added, not on the order): its version goes back too, so what was
    # memoized on the tree stays valid for the next head.
    version = ctx.tree.version
    try:
        if ctx.config.fair_sharing is not None:
            return fair_targets(ctx)
        return classical_targets(ctx)
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
    """SimulatePreemption for the flavor assigner: can one flavor-resource be freed?

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
            ctx.tree.remove_usage(_node(ctx, t.cluster_queue), t.usage)
        borrow = ctx.tree.lowest_fitting_subtree(ctx.node, fr, quantity)[0]
        for t in targets:
            ctx.tree.add_usage(_node(ctx, t.cluster_queue), t.usage)
        ctx.tree.version = version  # restored (see get_targets)
        if any(t.cluster_queue == ctx.cq.name for t in targets):
            return "Preempt", borrow
        return "Reclaim", borrow
    return oracle
