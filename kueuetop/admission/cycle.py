"""One scheduling cycle (reference/kueue.md §6.2; Kueue: pkg/scheduler/scheduler.go schedule).

heads (one per active CQ) → nominate (flavors, preemption targets, partial admission) →
make_iterator (borrowing level, priority, FIFO; or the fair-sharing tournament) → process_entry
for each against one quota snapshot whose usage accumulates → requeue_and_update for the heads
not admitted → decisions, and the queue state for the next cycle.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from kueuetop.admission import decisions as d
from kueuetop.admission.cq_status import active_map
from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.fair_sharing import TournamentEntry, tournament_order
from kueuetop.admission.flavor_assignment import (
    FIT,
    NO_FIT,
    PREEMPT,
    AssignContext,
    AssignmentResult,
    assign_flavors,
    pending_reason,
)
from kueuetop.admission.parked_verdicts import keepable, kept_verdict, remember, reuse
from kueuetop.admission.partial_admission import can_be_partially_admitted, reduce_counts
from kueuetop.admission.preemption import TargetMemo, make_oracle, memo_targets
from kueuetop.admission.preemption_common import PreemptionContext, Target, preemption_message
from kueuetop.admission.queue_order import heads
from kueuetop.admission.queue_state import ParkedSets, QueueState
from kueuetop.admission.quota_tree import FR, Node, QuotaStructure, QuotaTree
from kueuetop.admission.shared_map import DELETE, SharedMap
from kueuetop.admission.workload_index import WorkloadIndex, queue_order_timestamp
from kueuetop.kueue.cluster_queue import ANY, BEST_EFFORT_FIFO, STRICT_FIFO, ClusterQueue
from kueuetop.kueue.snapshot import ClusterSnapshot, WorkloadKey
from kueuetop.kueue.workload import Workload

# requeue reasons (Kueue queue.RequeueReason)
GENERIC, NAMESPACE_MISMATCH, FAILED_AFTER_NOMINATION, PENDING_PREEMPTION = (
    "", "NamespaceMismatch", "FailedAfterNomination", "PendingPreemption")
PRIORITIZE_PREEMPTORS = "PrioritizePreemptorWorkloads"  # Kueue 0.20 alpha gate, off by default
NO_LONGER_FITS = "Workload no longer fits after processing another workload"
OVERLAPPING = "Workload has overlapping preemption targets with another workload"


@dataclass
class Nomination:
    """A head with what nomination found; explain() and what-if read this too."""

    workload: Workload
    cluster_queue: str
    assignment: AssignmentResult | None = None
    targets: list[Target] = field(default_factory=list)
    message: str = ""
    reason: str = ""  # granular QuotaReserved reason if not admitted
    requeue: str = GENERIC
    status: str = ""  # "" (not nominated) | skipped | nominated | assumed
    preempting: int = 0

    @property
    def mode(self) -> str:
        return self.assignment.mode if self.assignment is not None else NO_FIT

    @property
    def usage(self) -> Mapping[FR, int]:
        return self.assignment.usage if self.assignment is not None else {}


@dataclass(frozen=True)
class CycleResult:
    decisions: tuple[d.Decision, ...]
    state: QueueState
    nominations: tuple[Nomination, ...] = ()


class CycleContext:
    """Everything one cycle shares: snapshot, index, quota tree (cycle copy), activity, cache.

    The tree is copied when first asked for: a cycle without heads (most cycles on a busy
    simulated cluster: pods starting, conditions moving) needs none."""

    __slots__ = ("_tree", "active", "cache", "index", "now", "snapshot", "state")

    def __init__(self, snapshot: ClusterSnapshot, state: QueueState, index: WorkloadIndex,
                 tree: QuotaTree | None, active: Mapping[str, bool], now: float, cache: EngineCache) -> None:
        self.snapshot, self.state, self.index, self.active, self.now = snapshot, state, index, active, now
        self.cache = cache
        self._tree = tree

    @property
    def tree(self) -> QuotaTree:
        if self._tree is None:
            self._tree = _cycle_tree(self.cache, self.snapshot, self.index)
        return self._tree

    @staticmethod
    def build(snapshot: ClusterSnapshot, state: QueueState, now: float,
              cache: EngineCache | None = None) -> CycleContext:
        cache = cache if cache is not None else EngineCache()
        return CycleContext(snapshot, state, cache.workload_index(snapshot), None, active_map(snapshot, cache),
                            now, cache)


def _cycle_tree(cache: EngineCache, snapshot: ClusterSnapshot, index: WorkloadIndex) -> QuotaTree:
    """The cycle's own quota tree of the index's usage (Kueue: pkg/cache Snapshot). With fast
    paths, a copy of the cache's kept tree after it followed the ClusterQueues whose usage
    changed since it last looked; otherwise built from every ClusterQueue's totals."""
    if not cache.fast_paths:
        return QuotaTree.build(QuotaStructure.build(snapshot.cluster_queues, snapshot.cohorts), index.cq_usage)
    structure = cache.quota_structure.get(
        (snapshot.cluster_queues, snapshot.cohorts),
        lambda: QuotaStructure.build(snapshot.cluster_queues, snapshot.cohorts))
    changed, cache.usage_changed = cache.usage_changed, set()
    return cache.quota_tree.tree_for(structure, index.cq_usage, changed)


def _failed_checks(wl: Workload) -> bool:
    """Kueue: pkg/workload HasRetryChecks || HasRejectedChecks."""
    return any(c.state in ("Retry", "Rejected") for c in wl.admission_checks)


def _preemption_ctx(cc: CycleContext, wl: Workload, cq_name: str, frs: set[FR],
                    usage: Mapping[FR, int]) -> PreemptionContext:
    cq = cc.snapshot.cluster_queues[cq_name]
    node = cc.tree.cq(cq_name)
    assert node is not None
    return PreemptionContext(cc.tree, cc.index, cc.snapshot.cluster_queues, wl, cq, node, frs, usage,
                             cc.snapshot.config, cc.now, cc.cache)


def _assign(cc: CycleContext, wl: Workload, cq_name: str, counts: list[int] | None,
            memo: TargetMemo | None = None) -> AssignmentResult:
    """Kueue: pkg/scheduler/flavorassigner/flavorassigner.go New(...).Assign, with the
    preemption oracle of this cycle's tree."""
    cq = cc.snapshot.cluster_queues[cq_name]
    node = cc.tree.cq(cq_name)
    assert node is not None
    cfg = cc.snapshot.config
    actx = AssignContext(wl, cq, node, cc.tree, cc.snapshot.flavors, cc.state.last_assignment(cq, wl, cc.cache),
                         cfg.fair_sharing is not None,
                         make_oracle(_preemption_ctx(cc, wl, cq_name, set(), {}), memo), cfg.flavor_fungibility,
                         cc.cache)
    return assign_flavors(actx, counts)


def _targets(cc: CycleContext, wl: Workload, cq_name: str, a: AssignmentResult,
             memo: TargetMemo | None = None) -> list[Target]:
    return list(memo_targets(_preemption_ctx(cc, wl, cq_name, a.frs_needing_preemption(), a.usage), memo))


def nominate(cc: CycleContext, heads_: list[Workload]) -> list[Nomination]:
    """Every head with its assignment and targets, or why it can't be considered.

    Kueue: pkg/scheduler/scheduler.go nominate (Kueue splits the heads it can consider from the
    inadmissible ones; here each Nomination says which it is)."""
    return [nominate_head(cc, wl, cc.index.entries[wl.key].cq) for wl in heads_]


def nominate_head(cc: CycleContext, wl: Workload, cq_name: str) -> Nomination:
    """The body of Kueue's nominate loop for one head (pkg/scheduler/scheduler.go nominate)."""
    n = Nomination(wl, cq_name)
    snap = cc.snapshot
    cq = snap.cluster_queues.get(cq_name)
    if _failed_checks(wl):
        n.message, n.reason = "The workload has failed admission checks", "Pending"
    elif cq is not None and not cc.active.get(cq_name, False):
        n.message, n.reason = f"ClusterQueue {cq_name} is inactive", "Suspended"
    elif cq is None:
        n.message, n.reason = f"ClusterQueue {cq_name} not found", "Misconfigured"
    elif cq.namespace_selector is None or not cq.namespace_selector.matches(snap.namespace_labels(wl.namespace)):
        n.message, n.reason = "Workload namespace doesn't match ClusterQueue selector", "Misconfigured"
        n.requeue = NAMESPACE_MISMATCH
    else:
        n.assignment, n.targets = _assignments(cc, wl, cq_name, cq)
        n.message = n.assignment.message()
        n.reason = pending_reason(n.assignment)
    return n


def _assignments(cc: CycleContext, wl: Workload, cq_name: str, cq: ClusterQueue) -> tuple[AssignmentResult, list[Target]]:
    """get_assignments, or a parked head's last assignment when nothing it was made of has changed
    (parked_verdicts; only for a caller that turned it on)."""
    parked = cc.cache.parked_verdicts
    if parked is None or not cc.cache.fast_paths:
        return get_assignments(cc, wl, cq_name)
    snap, tree = cc.snapshot, cc.tree
    node = tree.cq(cq_name)
    assert node is not None
    last = cc.state.last_assignment(cq, wl, cc.cache)

    def ask(frs: set[FR], usage: Mapping[FR, int]) -> PreemptionContext:
        return _preemption_ctx(cc, wl, cq_name, frs, usage)

    verdicts = parked.get(wl.key, ())
    kept = reuse(verdicts, wl, cq, tree.structure, snap.flavors, snap.config, last, tree, node, ask)
    if kept is not None:
        return kept, []
    assignment, targets = get_assignments(cc, wl, cq_name)
    if keepable(assignment, bool(targets), wl, snap.config.partial_admission, snap.config.fair_sharing is not None):
        verdict = kept_verdict(wl.pod_sets, cq, tree.structure, snap.flavors, snap.config, last, assignment)
        parked[wl.key] = remember(list(verdicts), verdict)
    else:
        parked.pop(wl.key, None)
    return assignment, targets


def get_assignments(cc: CycleContext, wl: Workload, cq_name: str) -> tuple[AssignmentResult, list[Target]]:
    """The flavor assignment and, when it needs preemption, the targets; with partial admission,
    the largest reduced counts that fit or have targets (Kueue: pkg/scheduler/scheduler.go
    getAssignments, getInitialAssignments; flavorassigner/podset_reducer.go)."""
    snap = cc.snapshot
    memo: TargetMemo = {}  # the tree doesn't change during nomination: one search per question
    full = _assign(cc, wl, cq_name, None, memo)
    assignment, targets = full, []
    if full.mode == PREEMPT:
        targets = _targets(cc, wl, cq_name, full, memo)
    if full.mode != FIT and not targets and snap.config.partial_admission \
            and can_be_partially_admitted(wl.pod_sets):
        def attempt(counts: list[int]) -> tuple[AssignmentResult, list[Target]] | None:
            a = _assign(cc, wl, cq_name, counts, memo)
            if a.mode == FIT:
                return a, []
            if a.mode == PREEMPT:
                t = _targets(cc, wl, cq_name, a, memo)
                if t:
                    return a, t
            return None
        found = reduce_counts(wl.pod_sets, attempt)
        if found is not None:
            assignment, targets = found
    return assignment, targets


def quota_resources_to_reserve(cc: CycleContext, n: Nomination) -> dict[FR, int]:
    """Capacity a preempting head without targets holds back this cycle (Kueue:
    pkg/scheduler/scheduler.go quotaResourcesToReserve)."""
    node = cc.tree.cq(n.cluster_queue)
    assert node is not None and n.assignment is not None
    out: dict[FR, int] = {}
    for fr, u in n.assignment.usage.items():
        q = node.quota(fr)
        used = cc.tree.used(node, fr)
        if n.assignment.borrows:
            out[fr] = u if q.borrowing_limit is None else min(u, q.nominal + q.borrowing_limit - used)
        else:
            out[fr] = max(0, min(u, q.nominal - used))
    return out


class _MinusPreempted:
    """The cycle's tree minus the usage of every workload preempted so far this cycle.

    Kueue's fits() (scheduler.go) removes all those workloads plus the new targets before each
    preempting head's check. Tree usage is a function of per-CQ totals only (add/remove keep
    parent = Σ child usage above localQuota), so keeping the earlier removals applied on a
    copy gives the same answer while each check removes only its own targets.
    """

    def __init__(self, tree: QuotaTree) -> None:
        self.base = tree
        self.tree = tree  # shared until the first preemption

    def add_usage(self, node: Node, usage: Mapping[FR, int]) -> None:
        """Mirror an add the caller made on the cycle's tree."""
        if self.tree is not self.base:
            self.tree.add_usage(node, usage)

    def preempt(self, targets: list[Target]) -> None:
        if not targets:
            return
        if self.tree is self.base:
            self.tree = self.base.clone()
        self._remove(targets)

    def fits_after_removal(self, node: Node, usage: Mapping[FR, int], targets: list[Target]) -> bool:
        self._remove(targets)
        ok = self.tree.fits(node, usage)
        for t in targets:
            self.tree.add_usage(self._node(t), t.usage)
        return ok

    def _remove(self, targets: list[Target]) -> None:
        for t in targets:
            self.tree.remove_usage(self._node(t), t.usage)

    def _node(self, t: Target) -> Node:
        node = self.tree.cq(t.cluster_queue)
        assert node is not None
        return node


class _PreemptedRemovedEachTime:
    """Kueue's fits() as written (scheduler.go): every workload preempted so far this cycle and
    the new targets removed from the cycle's tree for each check, then put back. The plain
    counterpart of _MinusPreempted (fast_paths off)."""

    def __init__(self, tree: QuotaTree) -> None:
        self.tree = tree
        self.preempted: list[Target] = []

    def add_usage(self, node: Node, usage: Mapping[FR, int]) -> None:
        pass  # the caller already added it to the cycle's tree

    def preempt(self, targets: list[Target]) -> None:
        self.preempted.extend(targets)

    def fits_after_removal(self, node: Node, usage: Mapping[FR, int], targets: list[Target]) -> bool:
        removed = [*self.preempted, *targets]
        for t in removed:
            self.tree.remove_usage(self._node(t), t.usage)
        ok = self.tree.fits(node, usage)
        for t in removed:
            self.tree.add_usage(self._node(t), t.usage)
        return ok

    def _node(self, t: Target) -> Node:
        node = self.tree.cq(t.cluster_queue)
        assert node is not None
        return node


def _pods_ready_blocked(cc: CycleContext) -> bool:
    """WaitForPodsReady blockAdmission: an admitted workload is not PodsReady yet (Kueue:
    pkg/scheduler/scheduler.go waitForPodsReadyIfNeeded; pkg/cache/scheduler PodsReadyForAllAdmittedWorkloads)."""
    wfpr = cc.snapshot.config.wait_for_pods_ready
    if wfpr is None or not wfpr.block_admission:
        return False
    for per_cq in cc.index.reserving.values():
        for e in per_cq.values():
            if e.wl.is_admitted and not e.wl.is_true("PodsReady"):
                return True
    return False


def make_iterator(cc: CycleContext, noms: list[Nomination], first: Callable[[Nomination], bool],
                  ) -> Iterator[Nomination]:
    """Classical: smaller borrowing level, higher priority, FIFO. FS: the tournament (Kueue:
    pkg/scheduler/scheduler.go makeIterator, makeClassicalIterator; fair_sharing_iterator.go).

    PrioritizePreemptorWorkloads (alpha, off by default; Kueue#13662): a head that waits for its
    preemptions (`first`) goes before all, so the capacity they free is not taken by another
    queue's head (makeClassicalIterator / entryComparer.less)."""
    cfg = cc.snapshot.config
    prio = cfg.priority_sorting_within_cohort

    def key(n: Nomination) -> tuple:
        a = n.assignment
        return (not first(n), a.borrowing if a else 0, -n.workload.effective_priority if prio else 0,
                queue_order_timestamp(n.workload, cfg))

    ordered = sorted(noms, key=key)
    if cfg.fair_sharing is None:
        yield from ordered
        return
    entries = [TournamentEntry(cc.tree.cq(n.cluster_queue), n.usage,  # type: ignore[arg-type]
                               n.workload.effective_priority, queue_order_timestamp(n.workload, cfg), n,
                               first(n))
               for n in ordered if n.assignment is not None and n.mode != NO_FIT]
    rest = [n for n in ordered if n.assignment is None or n.mode == NO_FIT]
    for e in tournament_order(cc.tree, entries, prio):
        yield e.payload
    yield from rest


def _preemptor_first(cc: CycleContext) -> Callable[[Nomination], bool]:
    if not cc.snapshot.config.feature_gates.get(PRIORITIZE_PREEMPTORS, False):
        return lambda n: False
    return lambda n: cc.state.is_preemptor(n.cluster_queue, n.workload)


def schedule(snapshot: ClusterSnapshot, now: float, state: QueueState | None = None,
             cache: EngineCache | None = None) -> CycleResult:
    """One scheduling cycle over `snapshot` at time `now`; `cache`: the caller's EngineCache
    (None: a fresh one, nothing kept). Holds the cache's lock for the whole cycle."""
    cache = cache if cache is not None else EngineCache()
    with cache.lock:
        result = _schedule(snapshot, now, state or QueueState(), cache)
        if cache.fast_paths:
            cache.pruned = (result.state.last_assignments, cache.index.serial)
        return result


class _CycleRun:
    """What process_entry shares between the entries of one cycle."""

    def __init__(self, cc: CycleContext) -> None:
        cfg = cc.snapshot.config
        self.decisions: list[d.Decision] = []
        self.preempted: dict[WorkloadKey, Target] = {}  # Kueue's preemptedWorkloads
        self.minus_preempted = (_MinusPreempted(cc.tree) if cc.cache.fast_paths
                                else _PreemptedRemovedEachTime(cc.tree))
        self.blocked = _pods_ready_blocked(cc)
        self.granular = cfg.feature_gates.get("UnadmittedWorkloadsObservability", False)
        self.preemptor_first = _preemptor_first(cc)


def _schedule(snapshot: ClusterSnapshot, now: float, state: QueueState, cache: EngineCache) -> CycleResult:
    cc = CycleContext.build(snapshot, state, now, cache)
    noms = nominate(cc, heads(snapshot, state, now, cc.index, cc.active, cache))
    if not noms:  # nothing to order, reserve or admit: only the queue state's bookkeeping
        return CycleResult((), _next_state(cc, noms), ())
    run = _CycleRun(cc)
    for n in make_iterator(cc, noms, run.preemptor_first):
        process_entry(cc, n, run)
    new_state = _next_state(cc, noms)
    for n in noms:
        if n.status != "assumed":
            run.decisions.append(requeue_and_update(cc, n, run.granular))
    return CycleResult(tuple(run.decisions), new_state, tuple(noms))


def process_entry(cc: CycleContext, n: Nomination, run: _CycleRun) -> None:
    """One ordered entry against the cycle's tree: reserve for a preemptor without targets,
    skip on overlapping targets or when it no longer fits, issue its preemptions, wait for
    PodsReady, or admit it (Kueue: pkg/scheduler/scheduler.go processEntry)."""
    if n.assignment is None or n.mode == NO_FIT:
        return
    node = cc.tree.cq(n.cluster_queue)
    assert node is not None
    cq = cc.snapshot.cluster_queues[n.cluster_queue]
    if n.mode == PREEMPT and not n.targets:
        # Hold capacity so lower-priority heads elsewhere can't take it this cycle, unless
        # this CQ can always reclaim it later (reclaimWithinCohort=Any) — and, with
        # PrioritizePreemptorWorkloads, always for a preemptor waiting for its evictions
        # (reserveCapacityForUnreclaimablePreempt).
        if cq.preemption.reclaim_within_cohort != ANY or run.preemptor_first(n):
            reserve = quota_resources_to_reserve(cc, n)
            cc.tree.add_usage(node, reserve)
            run.minus_preempted.add_usage(node, reserve)
        return
    if any(t.workload.key in run.preempted for t in n.targets):
        n.status, n.message, n.reason = "skipped", OVERLAPPING, "WaitingForQuota"
        return
    if not run.minus_preempted.fits_after_removal(node, n.usage, n.targets):
        n.status, n.message, n.reason = "skipped", NO_LONGER_FITS, "WaitingForQuota"
        return
    for t in n.targets:
        run.preempted[t.workload.key] = t
    run.minus_preempted.preempt(n.targets)
    cc.tree.add_usage(node, n.usage)
    run.minus_preempted.add_usage(node, n.usage)
    if n.mode == PREEMPT:
        for t in n.targets:
            if not t.workload.is_evicted:  # already being evicted: nothing new to send
                run.decisions.append(d.Preempt(t.workload.key, n.workload.key, t.reason,
                                               preemption_message(n.workload, t.reason)))
        n.preempting = len(n.targets)
        n.message += f". Pending the preemption of {n.preempting} workload(s)"
        n.reason, n.requeue = "WaitingForPreemptedWorkloads", PENDING_PREEMPTION
        return
    if run.blocked:
        n.status = "nominated"
        n.message = "waiting for all admitted workloads to be in PodsReady condition"
        n.reason = "WaitingForPodsReady" if run.granular else "Waiting"
        return
    n.status = "assumed"
    assignment = n.assignment
    run.decisions.append(d.Admit(n.workload.key, n.cluster_queue, assignment.to_assignments(),
                                 cq.checks_for_flavors(assignment.flavor_set()), assignment.borrows))


def requeue_and_update(cc: CycleContext, n: Nomination, granular: bool) -> d.Pending:
    """The Pending decision of a head that was not admitted: its QuotaReserved=False condition
    and whether its queue parks it (Kueue: pkg/scheduler/scheduler.go requeueAndUpdate)."""
    reason = n.reason if granular else ("Waiting" if n.reason == "Waiting" else "Pending")
    return d.Pending(n.workload.key, reason, n.message, _goes_inadmissible(cc, n), n.preempting)


def _goes_inadmissible(cc: CycleContext, n: Nomination) -> bool:
    """StrictFIFO keeps the head unless the namespace doesn't match; BestEffortFIFO parks it
    unless it failed after nomination or waits for its preemptions (Kueue:
    pkg/cache/queue/cluster_queue.go requeueIfNotPresent)."""
    cq = cc.snapshot.cluster_queues.get(n.cluster_queue)
    requeue = n.requeue
    if n.status and requeue == GENERIC:
        requeue = FAILED_AFTER_NOMINATION
    if cq is not None and cq.queueing_strategy == STRICT_FIFO:
        return requeue == NAMESPACE_MISMATCH
    return requeue not in (FAILED_AFTER_NOMINATION, PENDING_PREEMPTION)


def _next_state(cc: CycleContext, noms: list[Nomination]) -> QueueState:
    state = cc.state
    # Copy-on-write, per mapping and per CQ: the inadmissible sets and last assignments can
    # hold most of 100,000 pending workloads, and most cycles change a few entries or none
    # (the controller compares the result with the state it began from; untouched mappings
    # stay the same objects, so that comparison is by identity).
    inadmissible = _CopyOnWrite(state.inadmissible)
    owned: dict[str, dict[WorkloadKey, int]] = {}

    def writable(cq_name: str) -> dict[WorkloadKey, int]:
        if cq_name not in owned:
            owned[cq_name] = inadmissible.put(cq_name, dict(inadmissible.get(cq_name, _EMPTY)))
        return owned[cq_name]

    last = _Changes(state.last_assignments)
    sticky = _CopyOnWrite(state.sticky)
    preemptors = _CopyOnWrite(state.preemptors)
    for n in noms:
        key, cq_name = n.workload.key, n.cluster_queue
        cq = cc.snapshot.cluster_queues.get(cq_name)
        if n.status == "assumed":
            last.pop(key)
        elif n.status == "skipped" or n.preempting:
            last.pop(key)  # retry every flavor next time
        elif n.assignment is not None and n.assignment.last_state is not None:
            last.set(key, n.assignment.last_state)
        if n.status != "assumed" and _goes_inadmissible(cc, n):
            if inadmissible.get(cq_name, _EMPTY).get(key) != n.workload.meta.generation:
                writable(cq_name)[key] = n.workload.meta.generation
        elif key in inadmissible.get(cq_name, _EMPTY):
            del writable(cq_name)[key]
        if n.preempting and cq is not None and cq.queueing_strategy != STRICT_FIFO:
            sticky.set(cq_name, key)
        elif sticky.get(cq_name) == key:
            sticky.pop(cq_name)
        # requeueIfNotPresent sets the CQ's preemptor on RequeueReasonPendingPreemption (any
        # strategy); the queue forgets it when the workload leaves (admitted or deleted).
        if n.preempting:
            preemptors.set(cq_name, (key, n.workload.meta.generation))
        elif n.status == "assumed" and preemptors.get(cq_name, (None,))[0] == key:
            preemptors.pop(cq_name)
    if cc.snapshot.config.feature_gates.get("SchedulingEquivalenceHashing", True):
        for n in noms:
            if _bulk_moves_equivalents(cc, n):
                _park_equivalents(cc, n, writable(n.cluster_queue))
    for k in _not_pending(cc, last):
        last.pop(k)
    for cq_name in _dead_preemptors(cc, preemptors.value):
        preemptors.pop(cq_name)
    parked = inadmissible.value
    if any(not v for v in owned.values()):
        parked = {k: v for k, v in parked.items() if v}
    if parked is not state.inadmissible:
        parked = ParkedSets(parked, state.inadmissible, owned)
    return replace(state, inadmissible=parked, last_assignments=last.result(), sticky=sticky.value,
                   preemptors=preemptors.value)


_EMPTY: Mapping = MappingProxyType({})
_MISSING = object()


class _CopyOnWrite:
    """A mapping of the previous queue state, copied on its first change."""

    __slots__ = ("owned", "value")

    def __init__(self, value: Mapping) -> None:
        self.value, self.owned = value, False

    def get(self, key: object, default: object = None) -> object:
        return self.value.get(key, default)

    def _own(self) -> dict:
        if not self.owned:
            self.value, self.owned = dict(self.value), True
        return self.value  # type: ignore[return-value]

    def set(self, key: object, value: object) -> None:
        cur = self.value.get(key, _MISSING)
        if cur is not value and cur != value:
            self._own()[key] = value

    def put(self, key: object, value: object) -> object:
        """Store `value` even when it equals what is there (a copy about to be written to)."""
        self._own()[key] = value
        return value

    def pop(self, key: object) -> None:
        if key in self.value:
            del self._own()[key]


class _Changes:
    """Changes to a big mapping of the previous queue state (the last assignments: one per
    pending workload), kept aside and made into the next version of a SharedMap that shares
    every chunk they do not touch."""

    __slots__ = ("base", "changes")

    def __init__(self, base: Mapping) -> None:
        self.base, self.changes = base, {}

    def get(self, key: object, default: object = None) -> object:
        v = self.changes.get(key, _MISSING)
        if v is _MISSING:
            return self.base.get(key, default)
        return default if v is DELETE else v

    def __contains__(self, key: object) -> bool:
        return self.get(key, _MISSING) is not _MISSING

    def __iter__(self) -> Iterator:
        changes = self.changes
        for k in self.base:
            if changes.get(k) is not DELETE:
                yield k
        for k, v in changes.items():
            if v is not DELETE and k not in self.base:
                yield k

    def set(self, key: object, value: object) -> None:
        cur = self.get(key, _MISSING)
        if cur is not value and cur != value:
            self.changes[key] = value

    def pop(self, key: object) -> None:
        if key in self:
            self.changes[key] = DELETE

    def result(self) -> Mapping:
        base = self.base
        if not self.changes:
            return base
        if not isinstance(base, SharedMap):
            base = SharedMap.of(base)
        return base.evolve(self.changes)


def _dead_preemptors(cc: CycleContext, preemptors: Mapping[str, tuple[WorkloadKey, int]]) -> list[str]:
    """Preemptors no longer pending (a deleted or finished one is deleted from its queue)."""
    entries = cc.index.entries
    return [cq for cq, p in preemptors.items() if (e := entries.get(p[0])) is None or e.key is None]


def _bulk_moves_equivalents(cc: CycleContext, n: Nomination) -> bool:
    """Kueue's requeueIfNotPresent with SchedulingEquivalenceHashing (beta, on): a BestEffortFIFO
    head parked as inadmissible for NoFit or PreemptionNoCandidates takes every queued workload
    of the same scheduling shape with it (handleInadmissibleHash)."""
    cq = cc.snapshot.cluster_queues.get(n.cluster_queue)
    if cq is None or cq.queueing_strategy != BEST_EFFORT_FIFO or n.status or n.requeue != GENERIC:
        return False
    if n.assignment is None or not _goes_inadmissible(cc, n):
        return False
    return n.mode == NO_FIT or (n.mode == PREEMPT and not n.targets)


def scheduling_shape(wl: Workload) -> tuple:
    """What Kueue's computeSchedulingHash covers: effective priority and, per pod set, its name,
    count, minCount and pod shape (requests, node selector, affinity, tolerations)."""
    return (wl.effective_priority, wl.pod_sets)


def _park_equivalents(cc: CycleContext, n: Nomination, parked: dict[WorkloadKey, int]) -> None:
    shape = scheduling_shape(n.workload)
    entries = cc.index.entries
    pending = cc.index.pending_keys(n.cluster_queue)
    # Equivalents share the effective priority, which leads the queue order: scan that band,
    # from the head on (what precedes the head was skipped as inadmissible or backing off).
    head = entries[n.workload.key]
    sticky = cc.state.sticky.get(n.cluster_queue) == n.workload.key  # popped out of order
    lo = bisect.bisect_left(pending, (head.key, n.workload.key) if head.key is not None and not sticky
                            else ((-shape[0],),))
    # The band ends where the next (lower) priority starts: ((-p + 1,),) sorts before all of it.
    hi = bisect.bisect_left(pending, ((-shape[0] + 1,),), lo)
    # Every entry of the band has the head's effective priority (the order key leads with it),
    # so only the pod sets remain to compare.
    now, pod_sets = cc.now, shape[1]
    for _, key in pending[lo:hi]:
        if key in parked:  # most of a long band was parked by earlier cycles
            continue
        e = entries[key]
        if e.parked_until > now:  # only the active heap moves
            continue
        wl = e.wl
        # Identical pod sets are usually one shared object (parse cache): test identity first.
        if wl.pod_sets is pod_sets or wl.pod_sets == pod_sets:
            parked[key] = wl.meta.generation


def _not_pending(cc: CycleContext, last: _Changes) -> list[WorkloadKey]:
    """Workloads whose last assignment is to be forgotten: they are no longer pending.

    When the cache's previous cycle pruned this very mapping against the index and only one
    index update happened since, only the keys that update touched can have stopped being
    pending (heads added this cycle are pending); otherwise look at everything.
    """
    index = cc.index
    entries = index.entries

    def gone(k: WorkloadKey) -> bool:
        e = entries.get(k)
        return e is None or e.key is None

    pruned = cc.cache.pruned
    incremental = (cc.cache.fast_paths and pruned is not None and pruned[0] is last.base
                   and not index.rebuilt and pruned[1] == index.serial - 1)
    keys = [k for k in index.touched if k in last] if incremental else list(last)
    return [k for k in keys if gone(k)]
