"""Why a workload waits: a one-line verdict and the evidence behind it.

Checks follow the order Kueue's controllers and scheduler would stop a workload (reference/kueue.md
§4.5, §6.1–6.3, §6.7): finished / admitted / waiting for admission checks, inactive, queue
missing or stopped, namespace selector, Requeued=False or backoff, then the flavor assignment
(every flavor tried, which resource fell short and by how much, which limit was in the way),
and always the position in the ClusterQueue and LocalQueue with the workloads ahead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kueuetop.admission import cq_status
from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.flavor_assignment import (
    FIT,
    NO_FIT,
    AssignContext,
    AssignmentResult,
    FlavorAttempt,
    assign_flavors,
    qty,
)
from kueuetop.admission.queue_order import (
    pending_workloads,
    position_in_cluster_queue,
    position_in_local_queue,
)
from kueuetop.admission.queue_state import QueueState
from kueuetop.admission.quota_tree import FR, QuotaStructure, QuotaTree
from kueuetop.admission.workload_index import WorkloadIndex
from kueuetop.kueue.cluster_queue import STOP_NONE
from kueuetop.kueue.durations import format_duration
from kueuetop.kueue.snapshot import ClusterSnapshot
from kueuetop.kueue.workload import Workload
from kueuetop.kueue.workload_state import Phase, WorkloadState, derive_state

WorkloadKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Shortfall:
    """A resource that did not fit in a flavor."""

    pod_set: str
    flavor: str
    resource: str
    needed: int  # this pod set plus earlier pod sets in the same flavor
    available: int
    more_needed: int
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None
    limited_by: str  # nominalQuota | borrowingLimit | cohort
    reason: str  # WaitingForQuota | ExceedsMaxQuota | "" (preemption would be needed)
    message: str
    potential: int = 0  # the most the flavor could ever give it (potentialAvailable, zero usage)


@dataclass(frozen=True, slots=True)
class AheadEntry:
    workload: WorkloadKey
    priority: int
    requests: Mapping[str, int]  # total over pod sets


@dataclass(frozen=True, slots=True)
class CheckEvidence:
    name: str
    state: str
    message: str


@dataclass(frozen=True)
class Explanation:
    workload: WorkloadKey
    verdict: str
    state: WorkloadState | None = None
    cluster_queue: str = ""
    blocker: str = ""  # inactive | local-queue | cluster-queue | namespace | blocked | backoff | quota | checks
    backoff_until: float | None = None
    checks: tuple[CheckEvidence, ...] = ()
    attempts: tuple[tuple[str, FlavorAttempt], ...] = ()  # (pod set, attempt)
    shortfalls: tuple[Shortfall, ...] = ()
    assignment: AssignmentResult | None = None
    position_in_cluster_queue: int | None = None
    position_in_local_queue: int | None = None
    ahead: tuple[AheadEntry, ...] = field(default_factory=tuple)


def _usage(snapshot: ClusterSnapshot) -> dict[str, dict[FR, int]]:
    out: dict[str, dict[FR, int]] = {}
    for wl in snapshot.workloads.values():
        if wl.admission is None or wl.is_finished or not wl.has_quota_reservation:
            continue
        cq = out.setdefault(wl.admission.cluster_queue, {})
        for fr, v in wl.usage().items():
            cq[fr] = cq.get(fr, 0) + v
    return out


def _requests(wl: Workload) -> dict[str, int]:
    out: dict[str, int] = {}
    for ps in wl.pod_sets:
        for r, v in ps.total().items():
            out[r] = out.get(r, 0) + v
    return out


def _ahead(snapshot: ClusterSnapshot, state: QueueState, wl: Workload, cq: str,
           index: WorkloadIndex) -> tuple[AheadEntry, ...]:
    out = []
    for w in pending_workloads(snapshot, state, cq, index):
        if w.key == wl.key:
            break
        out.append(AheadEntry(w.key, w.effective_priority, _requests(w)))
    return tuple(out)


def _shortfalls(result: AssignmentResult) -> tuple[tuple[tuple[str, FlavorAttempt], ...], tuple[Shortfall, ...]]:
    attempts = []
    shorts = []
    for ps in result.pod_sets:
        for a in ps.attempts:
            attempts.append((ps.name, a))
            for rf in a.resources:
                if rf.mode == FIT:
                    continue
                shorts.append(Shortfall(ps.name, rf.flavor, rf.resource, rf.total, rf.available, rf.more_needed,
                                        rf.nominal, rf.borrowing_limit, rf.lending_limit, rf.limited_by,
                                        rf.reason, rf.message, rf.potential))
    return tuple(attempts), tuple(shorts)


def _quota_verdict(shorts: tuple[Shortfall, ...], attempts: tuple[tuple[str, FlavorAttempt], ...],
                   result: AssignmentResult) -> str:
    if shorts:
        parts = []
        for s in shorts:
            part = f"{s.resource} in {s.flavor} short by {qty(s.resource, s.more_needed)}"
            if s.reason == "ExceedsMaxQuota":
                # Short of the maximum capacity, whatever finishes: the number that never changes
                # (Kueue's message: "... > maximum capacity (N)"). What is free now is in the details.
                limit = (f", borrowingLimit {qty(s.resource, s.borrowing_limit or 0)}"
                         if s.limited_by == "borrowingLimit" else "")
                part = (f"{s.resource} in {s.flavor} short by {qty(s.resource, max(0, s.needed - s.potential))} "
                        f"(asks {qty(s.resource, s.needed)}, exceeds the maximum capacity "
                        f"{qty(s.resource, s.potential)}{limit})")
            elif s.limited_by == "borrowingLimit":
                part += f" (borrowingLimit {qty(s.resource, s.borrowing_limit or 0)})"
            elif s.limited_by == "cohort":
                part += " (cohort has no more to lend)"
            parts.append(part)
        return "waiting for quota: " + "; ".join(parts)
    mismatches = [a.mismatch for _, a in attempts if a.mismatch]
    if mismatches:
        return "no matching flavor: " + "; ".join(mismatches)
    return "not admissible: " + (result.message() or "no flavor fits")


def explain(snapshot: ClusterSnapshot, workload_key: WorkloadKey, now: float,
            state: QueueState | None = None, cache: EngineCache | None = None) -> Explanation:
    """Why `workload_key` is (or is not) admitted at `now`, with structured evidence.

    `cache`: the caller's EngineCache (its workload index is patched to `snapshot`, under its
    lock); None builds what is needed from the snapshot."""
    if cache is None:
        return _explain(snapshot, workload_key, now, state, EngineCache(fast_paths=False))
    with cache.lock:
        return _explain(snapshot, workload_key, now, state, cache)


def _quota_structure(snapshot: ClusterSnapshot, cache: EngineCache) -> QuotaStructure:
    """The cohort tree, from the cache's memo while the ClusterQueues and Cohorts are the same
    mappings (as the cycle takes it): the console explains a few workloads of one snapshot in a
    row, and each structure built is a tree of parent links, garbage only a full collection frees
    (none at all once the console's heap freezer has frozen it, tui/heap.py)."""
    if not cache.fast_paths:
        return QuotaStructure.build(snapshot.cluster_queues, snapshot.cohorts)
    return cache.quota_structure.get((snapshot.cluster_queues, snapshot.cohorts),
                                     lambda: QuotaStructure.build(snapshot.cluster_queues, snapshot.cohorts))


def _explain(snapshot: ClusterSnapshot, workload_key: WorkloadKey, now: float,
             state: QueueState | None, cache: EngineCache) -> Explanation:
    wl = snapshot.workloads.get(workload_key)
    if wl is None:
        return Explanation(workload_key, "workload not found")
    state = state or QueueState()
    st = derive_state(wl, now)
    checks = tuple(CheckEvidence(c.name, c.state, c.message) for c in wl.admission_checks)
    base = {"state": st, "checks": checks}
    if st.phase is Phase.FINISHED:
        return Explanation(wl.key, f"finished ({st.reason})", **base)
    if wl.has_quota_reservation and wl.admission is not None:
        cq_name = wl.admission.cluster_queue
        if wl.is_admitted:
            return Explanation(wl.key, f"admitted in ClusterQueue {cq_name}", cluster_queue=cq_name, **base)
        waiting = [c for c in checks if c.state != "Ready"]
        if waiting:
            detail = "; ".join(f"{c.name}: {c.state}" + (f" ({c.message})" if c.message else "") for c in waiting)
            return Explanation(wl.key, f"quota reserved in {cq_name}; waiting for admission checks: {detail}",
                               cluster_queue=cq_name, blocker="checks", **base)
        return Explanation(wl.key, f"quota reserved in {cq_name}", cluster_queue=cq_name, **base)
    if not wl.active:
        why = f" ({st.reason}: {st.message})" if st.reason else ""
        return Explanation(wl.key, f"held: the workload is deactivated (spec.active=false){why}",
                           blocker="inactive", **base)
    lq = snapshot.local_queues.get((wl.namespace, wl.queue_name))
    if lq is None:
        return Explanation(wl.key, f"LocalQueue {wl.namespace}/{wl.queue_name} doesn't exist",
                           blocker="local-queue", **base)
    cq_name = lq.cluster_queue
    if lq.stop_policy != STOP_NONE:
        return Explanation(wl.key, f"LocalQueue {wl.namespace}/{lq.name} is stopped ({lq.stop_policy})",
                           cluster_queue=cq_name, blocker="local-queue", **base)
    cq = snapshot.cluster_queues.get(cq_name)
    active = cq_status.cluster_queue_active(snapshot, cq_name, cache)
    if cq is None or not active.active:
        stop = f" ({cq.stop_policy})" if cq is not None and cq.stop_policy != STOP_NONE else ""
        return Explanation(wl.key, f"ClusterQueue {cq_name} is inactive{stop}: {active.reason}: {active.message}",
                           cluster_queue=cq_name, blocker="cluster-queue", **base)
    index = cache.workload_index(snapshot)
    pos_cq = position_in_cluster_queue(snapshot, state, wl.key, index)
    pos_lq = position_in_local_queue(snapshot, state, wl.key, index)
    queue = {"cluster_queue": cq_name, "position_in_cluster_queue": pos_cq, "position_in_local_queue": pos_lq,
             "ahead": _ahead(snapshot, state, wl, cq_name, index), **base}
    if cq.namespace_selector is None or not cq.namespace_selector.matches(snapshot.namespace_labels(wl.namespace)):
        return Explanation(wl.key, f"namespace {wl.namespace} doesn't match ClusterQueue {cq_name}'s "
                                   "namespaceSelector", blocker="namespace", **queue)
    until = wl.requeue_state.requeue_at if wl.requeue_state else None
    if st.phase is Phase.BLOCKED:
        when = f" until {format_duration(until - now)} from now" if until is not None and until > now else ""
        return Explanation(wl.key, f"blocked: Requeued=False ({st.reason}){when}", blocker="blocked",
                           backoff_until=until, **queue)
    if st.phase is Phase.BACKOFF and until is not None:
        return Explanation(wl.key, f"backing off for {format_duration(until - now)} more", blocker="backoff",
                           backoff_until=until, **queue)
    tree = QuotaTree.build(_quota_structure(snapshot, cache), _usage(snapshot))
    node = tree.cq(cq_name)
    if node is None:
        return Explanation(wl.key, f"ClusterQueue {cq_name} is not in the quota tree", **queue)
    ctx = AssignContext(wl, cq, node, tree, snapshot.flavors, state.last_assignment(cq, wl, cache),
                        fair_sharing=snapshot.config.fair_sharing is not None, cache=cache)
    result = assign_flavors(ctx)
    attempts, shorts = _shortfalls(result)
    evidence = {"attempts": attempts, "shortfalls": shorts, "assignment": result, **queue}
    if result.mode == FIT:
        where = f"position {pos_cq + 1} in {cq_name}" if pos_cq is not None else cq_name
        return Explanation(wl.key, f"fits now; next in line at {where}", **evidence)
    if result.mode == NO_FIT or shorts:
        return Explanation(wl.key, _quota_verdict(shorts, attempts, result), blocker="quota", **evidence)
    return Explanation(wl.key, f"not admissible: {result.message()}", blocker="quota", **evidence)
