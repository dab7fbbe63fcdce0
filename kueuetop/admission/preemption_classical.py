"""Classical preemption (reference/kueue.md §6.5; Kueue: pkg/scheduler/preemption/preemption.go
classicalPreemptions, classical/hierarchical_preemption.go, classical/candidate_generator.go).

Candidates come from the preemptor's ClusterQueue (withinClusterQueue) and from the ClusterQueues
of the cohort tree that are above nominal on the contested flavor-resources (reclaimWithinCohort),
classified as hierarchical reclaim / reclaim without borrowing / reclaim while borrowing; they are
removed in CandidatesOrdering until the preemptor fits, then filled back in reverse.

Beyond Kueue (kueuetop's fast paths, off with EngineCache(fast_paths=False)): candidate lists and
sorted pools kept across cycles per ClusterQueue and preemptor class, and two bounds that answer
"no targets" before any search when even every allowed candidate could not free enough.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple

from kueuetop.admission import decisions as d
from kueuetop.admission.preemption_common import (
    PreemptionContext,
    Target,
    cq_node,
    fill_back_workloads,
    quota_reservation_time,
    remove_workload,
    restore_snapshot,
    satisfies_preemption_policy,
    workload_fits,
    workload_uses_resources,
)
from kueuetop.admission.quota_tree import FR, Node, QuotaTree
from kueuetop.admission.workload_index import Entry, queue_order_timestamp
from kueuetop.kueue.cluster_queue import LOWER_OR_NEWER_EQUAL, LOWER_PRIORITY, NEVER
from kueuetop.kueue.workload import Workload

# Candidate variants (Kueue: pkg/scheduler/preemption/classical/hierarchical_preemption.go).
V_NEVER, V_WITHIN_CQ, V_HIERARCHICAL, V_RECLAIM_NO_BORROW, V_RECLAIM_WHILE_BORROWING = range(5)
_VARIANT_REASON = MappingProxyType({
    V_WITHIN_CQ: d.IN_CLUSTER_QUEUE,
    V_HIERARCHICAL: d.IN_COHORT_RECLAMATION,
    V_RECLAIM_NO_BORROW: d.IN_COHORT_RECLAMATION,
    V_RECLAIM_WHILE_BORROWING: d.IN_COHORT_RECLAIM_WHILE_BORROWING,
})


def classify_preemption_variant(ctx: PreemptionContext, e: Entry, advantage: bool,
                                same: bool | None = None) -> int:
    """The candidate variant of e, which uses some of ctx.frs (_using_entries); `same`: whether
    e counts as in the preemptor's own CQ (default: whether it is).

    Kueue: pkg/scheduler/preemption/classical/hierarchical_preemption.go classifyPreemptionVariant."""
    if same is None:
        same = e.cq == ctx.cq.name
    pol = ctx.cq.preemption
    if not satisfies_preemption_policy(ctx, e, pol.within_cluster_queue if same else pol.reclaim_within_cohort):
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
class CandidateElem:
    """Kueue: pkg/scheduler/preemption/classical/candidate_generator.go candidateElem."""

    # Shared between searches (memoized lists): never changed once built.
    entry: Entry
    variant: int
    lca: Node | None
    key: tuple  # candidates_ordering without its "same ClusterQueue" part, constant in a group


class KeptEntries(NamedTuple):
    """_using_entries' answer for one ClusterQueue and flavor-resources."""

    version: int  # the queue's reserving_version it was read at
    instant: float | None  # the `now` its keys read (an entry without QuotaReserved time), else None
    entries: list[tuple[Entry, tuple]]


class Derived(NamedTuple):
    """An answer derived from other kept values, valid while those are the same objects."""

    source: Any
    value: Any


class KeptTotal(NamedTuple):
    """_others_allowed's sum, valid for one index update."""

    serial: int
    total: int


def _base_order_key(e: Entry, now: float) -> tuple:
    return (not e.wl.is_evicted, e.wl.effective_priority, -quota_reservation_time(e.wl, now), e.wl.uid)


def _cq_memo(ctx: PreemptionContext) -> dict:
    """Answers derived from one ClusterQueue's quota-holding entries, kept across cycles in the
    cache: each is stored with that queue's `reserving_version` and recomputed once it moves.
    Answers that can never be hit again are swept out each time the memo doubled (see _sweep)."""
    memo = ctx.cache.candidate_memo()
    if len(memo) >= ctx.cache.candidates_sweep_at:
        _sweep(memo, ctx)
        ctx.cache.candidates_sweep_at = max(SWEEP_FLOOR, 2 * len(memo))
    return memo


SWEEP_FLOOR = 1_024  # memo entries before the first sweep


def _sweep(memo: dict, ctx: PreemptionContext) -> None:
    """Drop the answers whose sources moved: a stale answer is never returned (every lookup
    checks its source), but it keeps the workloads of an old snapshot alive, and a long-lived
    cache (a forecast worker's, the simulator's) otherwise collects one per preemptor class,
    flavor set and cohort level it ever met. An answer is live while what it was derived from is
    the current answer it was checked against: `using` lists at their queue's version and
    instant, `cands` lists from a live `using` list, pools from live `cands` lists, totals at the
    index's serial."""
    versions, now, serial = ctx.index.reserving_version, ctx.now, ctx.index.serial
    live_using: set[int] = set()
    for k, v in list(memo.items()):
        if k[0] == "using":
            if v.version == versions.get(k[1], 0) and (v.instant is None or v.instant == now):
                live_using.add(id(v.entries))
            else:
                del memo[k]
        elif k[0] == "others" and v.serial != serial:
            del memo[k]
    live_cands: set[int] = set()
    for k, v in list(memo.items()):
        if k[0] == "cands":
            if id(v.source) in live_using:
                live_cands.add(id(v.value))
            else:
                del memo[k]
    for k, v in list(memo.items()):
        if k[0] == "pool":
            if not all(id(part[2]) in live_cands for part in v.source):
                del memo[k]
        elif k[0] == "same-pool" and id(v.source) not in live_cands:
            del memo[k]


def _using_entries(ctx: PreemptionContext, cq_name: str, frs: frozenset[FR]) -> list[tuple[Entry, tuple]]:
    """The CQ's quota-holding entries that use any of `frs`, with their base order keys."""
    memo = _cq_memo(ctx)
    k = ("using", cq_name, frs)
    version = ctx.index.reserving_version.get(cq_name, 0)
    hit = memo.get(k)
    # A key reads `now` only for an entry without a QuotaReserved time: then it is kept for
    # that instant alone.
    if hit is not None and hit.version == version and (hit.instant is None or hit.instant == ctx.now):
        return hit.entries
    found, at = [], None
    for e in ctx.index.reserving_in(cq_name).values():
        if workload_uses_resources(e, frs):
            found.append((e, _base_order_key(e, ctx.now)))
            if at is None and _reserved_time_missing(e.wl):
                at = ctx.now
    memo[k] = KeptEntries(version, at, found)
    return found


def _reserved_time_missing(wl: Workload) -> bool:
    c = wl.condition("QuotaReserved")
    return c is None or c.status != "True" or c.last_transition is None


def get_candidates_from_cq(ctx: PreemptionContext, cq_name: str, lca: Node | None, advantage: bool,
                           same: bool | None = None) -> list[CandidateElem]:
    """The CQ's candidates as classified for this preemptor (a shared, read-only list).
    Kueue: pkg/scheduler/preemption/classical/hierarchical_preemption.go getCandidatesFromCQ.

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
    if hit is not None and hit.source is using:
        return hit.value
    found = []
    for e, key in using:
        v = classify_preemption_variant(ctx, e, advantage, same)
        if v != V_NEVER:
            found.append(CandidateElem(e, v, lca, key))
    memo[k] = Derived(using, found)
    return found


def _above_nominal_cqs(tree: QuotaTree, current: Node, frs: frozenset[FR], keep: bool = True,
                       ) -> list[tuple[Node, Node]]:
    """The ClusterQueues under `current` reached through cohorts that are above nominal on
    `frs` and themselves above nominal, in the walk order of Kueue's collectCandidatesInSubtree
    (pkg/scheduler/preemption/classical/hierarchical_preemption.go),
    each with the child of `current` it lies under. Kept (`keep`) in the tree's memo while its
    usage is unchanged."""
    k = ("above", current, frs)
    hit = tree.memo.get(k) if keep else None
    if hit is not None and hit.source == tree.version:
        return hit.value
    out: list[tuple[Node, Node]] = []
    # Depth first, cohorts before ClusterQueues at each level, as the recursive walk goes; with a
    # stack of iterators rather than a recursive closure, which would hold itself (and the tree)
    # in a reference cycle until the next garbage collection.
    stack = [(current, None, iter(current.child_cohorts))]
    while stack:
        node, top, cohorts = stack[-1]
        child = next(cohorts, None)
        if child is not None:
            if not tree.within_nominal(child, frs):
                stack.append((child, top or child, iter(child.child_cohorts)))
            continue
        stack.pop()
        for cq in node.child_cqs:
            if not tree.within_nominal(cq, frs):
                out.append((cq, top or cq))
    if keep:
        tree.memo[k] = Derived(tree.version, out)
    return out


class _Pool:
    """Candidates in CandidatesOrdering (one group: hierarchy, priority or the own CQ), each
    with the child of the walked cohort it lies under (`tops`), so one sorted pool serves
    every head of that cohort: a head skips the part under its own subtree."""

    __slots__ = ("by_top", "cands", "split", "tops", "total")

    def __init__(self, pairs: list[tuple[CandidateElem, Node | None]]) -> None:
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


class CandidateIterator:
    """The search order of classical preemption: groups hierarchy, priority, own CQ; evicted
    candidates of every group before the others; inside a group by the base order key.

    Kueue: pkg/scheduler/preemption/classical/candidate_generator.go candidateIterator (Next
    without its validity check: see candidate_is_valid); `has_hierarchy` / `has_priority` are
    the negations of its NoCandidateForHierarchicalReclaim / NoCandidateFromOtherQueues."""

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
    parts = [(cq_node, top, get_candidates_from_cq(ctx, cq_node.name, current, advantage, False))
             for cq_node, top in _above_nominal_cqs(ctx.tree, current, frs)]
    memo = _cq_memo(ctx)
    # What classify_preemption_variant reads for another CQ's workload (cheaper to hash than the whole policy).
    k = ("pool", current, frs, advantage, pol.reclaim_within_cohort, pol.borrow_within_cohort,
         pol.max_priority_threshold, ctx.preemptor.effective_priority, ts_in)
    hit = memo.get(k)
    if hit is not None and len(hit.source) == len(parts) and all(
            a[0] is b[0] and a[1] is b[1] and a[2] is b[2] for a, b in zip(hit.source, parts, strict=True)):
        return hit.value
    pool = _Pool([(c, top) for _, top, cands in parts for c in cands])
    memo[k] = Derived(parts, pool)
    return pool


def collect_same_queue_candidates(ctx: PreemptionContext) -> _Pool:
    """Kueue: pkg/scheduler/preemption/classical/hierarchical_preemption.go
    collectSameQueueCandidates, as a sorted pool kept in the cache while the queue's list is."""
    if ctx.cq.preemption.within_cluster_queue == NEVER:
        return _Pool([])
    memo = _cq_memo(ctx)
    lst = get_candidates_from_cq(ctx, ctx.cq.name, None, False)
    k = ("same-pool", ctx.cq.name, frozenset(ctx.frs), ctx.cq.preemption, ctx.preemptor.effective_priority)
    hit = memo.get(k)
    if hit is None or hit.source is not lst:
        hit = memo[k] = Derived(lst, _Pool([(c, None) for c in lst]))
    return hit.value


def new_candidate_iterator(ctx: PreemptionContext) -> CandidateIterator:
    """collectCandidatesForHierarchicalReclaim plus the own CQ's candidates, in search order
    (Kueue: pkg/scheduler/preemption/classical/candidate_generator.go NewCandidateIterator),
    from pools shared by the heads of a cohort (fast paths)."""
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
    return CandidateIterator(hierarchy, priority, collect_same_queue_candidates(ctx))


def plain_candidate_iterator(ctx: PreemptionContext) -> CandidateIterator:
    """The candidates as collectCandidatesForHierarchicalReclaim gathers them for this one
    preemptor, each group sorted (no pools shared between heads, nothing kept)."""
    hierarchy: list[CandidateElem] = []
    priority: list[CandidateElem] = []
    frs = frozenset(ctx.frs)
    if ctx.node.parent is not None and ctx.cq.preemption.reclaim_within_cohort != NEVER:
        advantage, remaining = ctx.tree.quantities_fit_in_quota(ctx.node, ctx.usage)
        previous: Node | None = None
        for current in ctx.node.path_to_root():
            for member, top in _above_nominal_cqs(ctx.tree, current, frs, keep=False):
                if top is previous or member is ctx.node:
                    continue
                (hierarchy if advantage else priority).extend(
                    get_candidates_from_cq(ctx, member.name, current, advantage))
            fits, remaining = ctx.tree.quantities_fit_in_quota(current, remaining)
            advantage = advantage or fits
            previous = current
    same = (get_candidates_from_cq(ctx, ctx.cq.name, None, False)
            if ctx.cq.preemption.within_cluster_queue != NEVER else [])

    def pool(found: list[CandidateElem]) -> _Pool:
        return _Pool([(c, None) for c in found])

    return CandidateIterator([(pool(hierarchy), _NOTHING)] if hierarchy else [],
                             [(pool(priority), _NOTHING)] if priority else [], pool(same))


def candidate_is_valid(ctx: PreemptionContext, c: CandidateElem, borrow: bool) -> bool:
    """A cross-CQ candidate stays valid while its CQ (and the cohorts up to the common ancestor)
    are still above nominal; some may only be used without borrowing.

    Kueue: pkg/scheduler/preemption/classical/candidate_generator.go candidateIsValid."""
    if c.entry.cq == ctx.cq.name:
        return True
    if borrow and c.variant == V_RECLAIM_NO_BORROW:
        return False
    node = cq_node(ctx, c.entry.cq)
    if ctx.tree.within_nominal(node, ctx.frs):
        return False
    for anc in node.path_to_root():
        if anc is c.lca:
            break
        if ctx.tree.within_nominal(anc, ctx.frs):
            return False
    return True


def queue_under_nominal_in_resources_needing_preemption(ctx: PreemptionContext) -> bool:
    """Kueue: pkg/scheduler/preemption/preemption.go queueUnderNominalInResourcesNeedingPreemption."""
    return all(ctx.tree.used(ctx.node, fr) < ctx.node.quota(fr).nominal for fr in ctx.frs)


def _cannot_cover(ctx: PreemptionContext, candidates: CandidateIterator) -> bool:
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
_WIDTH = MappingProxyType({NEVER: 0, LOWER_PRIORITY: 1, LOWER_OR_NEWER_EQUAL: 2})


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
    if hit is not None and hit.serial == ctx.index.serial:
        return hit.total
    by_cq = ctx.index.usage_by_priority
    total = sum(_allowed(by_cq.get(name), fr, policy, p_in) for name in _cohort_others(ctx))
    memo[k] = KeptTotal(ctx.index.serial, total)
    return total


def classical_preemptions(ctx: PreemptionContext) -> list[Target]:
    """The targets of classical preemption, [] when none make the preemptor fit: up to two
    attempts (with and without borrowing), each removing valid candidates in order until the
    preemptor fits, then filling back (Kueue: pkg/scheduler/preemption/preemption.go
    classicalPreemptions; minimalPreemptions before v0.10)."""
    fast = ctx.cache.fast_paths
    if fast and _surely_uncoverable(ctx):
        return []
    everything = new_candidate_iterator(ctx) if fast else plain_candidate_iterator(ctx)
    if not everything.size or (fast and _cannot_cover(ctx, everything)):
        return []
    forbidden = ctx.cq.preemption.borrow_within_cohort == NEVER
    if (not everything.has_hierarchy and not everything.has_priority) or (
            forbidden and not queue_under_nominal_in_resources_needing_preemption(ctx)):
        attempts = [True]
    elif forbidden and not everything.has_hierarchy:
        attempts = [False, True]
    else:
        attempts = [True, False]
    for borrow in attempts:
        chosen: list[tuple[Entry, str]] = []
        for c in everything:
            if not candidate_is_valid(ctx, c, borrow):
                continue
            remove_workload(ctx, c.entry)
            chosen.append((c.entry, _VARIANT_REASON[c.variant]))
            if workload_fits(ctx, borrow):
                chosen = fill_back_workloads(ctx, chosen, borrow)
                restore_snapshot(ctx, [e for e, _ in chosen])
                return [Target(e.wl, e.cq, r, e.usage) for e, r in chosen]
        restore_snapshot(ctx, [e for e, _ in chosen])
    return []


