"""A parked head's flavor assignment, reused while every answer it was made of is still the same.

A head that can neither fit nor find preemption targets waits among the inadmissible
workloads, and Kueue requeues all of them each time a workload of their cohort tree finishes
(pkg/queue/manager.go QueueInadmissibleWorkloads). On a busy forecast that is most of the
engine's work: on `large` two thirds of the nominations of a forward run were such heads,
nominated again after a finish that freed too little for them.

The assignment is a function of the workload's pod sets, its ClusterQueue, the quota structure, the
flavors, the last assignment (flavor fungibility's starting point) and, per flavor-resource
tried, three answers: fit or not, the borrowing height, and — where the preemption oracle was
asked — that no candidates exist. When the objects are the same ones and each answer comes out
as before on the cycle's tree (`_same_answer`, fitsResourceQuota's own branches; the oracle's
and the target search's answers asked with the workload as it is now, its priority included), Kueue's
FlavorAssigner would try the same flavors in the same order and reach the same assignment, and
the target search of a Preempt-mode head would come out empty again (`_surely_uncoverable` holds
for it). Only the available quota may differ, and with it the shortfall a pending message
names ("N more needed"): the kept assignment is handed back with those worked out again
(`_with_numbers`). The forecast turns it on for its forward runs (`EngineCache.parked_verdicts`);
the simulator's Kueue runs Kueue's algorithm as written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kueuetop.admission.flavor_assignment import (
    EXCEEDS_MAX_QUOTA,
    FIT,
    NO_FIT,
    PREEMPT,
    AssignmentResult,
    PodSetResult,
    ResourceFit,
    can_preempt_while_borrowing,
    limited_by,
    unused_quota_message,
)
from kueuetop.admission.partial_admission import can_be_partially_admitted
from kueuetop.admission.preemption_classical import _surely_uncoverable
from kueuetop.admission.queue_state import LastAssignment

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from kueuetop.admission.preemption_common import PreemptionContext
    from kueuetop.admission.quota_tree import FR, Node, QuotaStructure, QuotaTree
    from kueuetop.kueue.cluster_queue import ClusterQueue
    from kueuetop.kueue.config import KueueConfig
    from kueuetop.kueue.workload import Workload

KEPT_PER_HEAD = 4  # verdicts kept per parked head, one per flavor its search starts from
# The oracle's answer kept: none ("" — not asked) or no candidates.
_KEPT_ORACLE = ("", "NoCandidates")


@dataclass(frozen=True, slots=True)
class ParkedVerdict:
    pod_sets: tuple  # the workload's (a status write keeps the object; what the assigner reads of it)
    cq: ClusterQueue
    structure: QuotaStructure
    flavors: Mapping
    config: KueueConfig
    starts: tuple[int, ...]  # the flavor each resource's search started from (`_starts`)
    assignment: AssignmentResult


def kept_verdict(pod_sets: tuple, cq: ClusterQueue, structure: QuotaStructure, flavors: Mapping,
                 config: KueueConfig, last: LastAssignment | None, assignment: AssignmentResult) -> ParkedVerdict:
    return ParkedVerdict(pod_sets, cq, structure, flavors, config, _starts(assignment, cq, config, last), assignment)


def _starts(a: AssignmentResult, cq: ClusterQueue, config: KueueConfig, last: LastAssignment | None) -> tuple[int, ...]:
    """Where the flavor search of each requested resource of each pod set the assignment reached
    starts (flavor_assignment._find_flavor): the last assignment says so only under flavor
    fungibility, and a new one each time a head is nominated, often with the same starts."""
    turns = last is not None and config.flavor_fungibility
    out = []
    for i, ps in enumerate(a.pod_sets):
        for r in sorted(ps.requests):
            start = last.next_flavor(i, r) if turns else 0  # type: ignore[union-attr]
            group = cq.group_for(r)
            out.append(start if group is not None and start < len(group.flavors) else 0)
    return tuple(out)


def keepable(assignment: AssignmentResult, has_targets: bool, wl: Workload, partial_admission: bool,
             fair_sharing: bool) -> bool:
    """A nomination whose every answer `reuse` can check again: no fit, or Preempt mode without
    targets; no oracle that found candidates; not one partial admission would retry smaller (its
    reduced counts ask other questions); not under fair sharing (whose oracle weighs shares)."""
    if fair_sharing or has_targets or assignment.mode not in (PREEMPT, NO_FIT):
        return False
    if partial_admission and can_be_partially_admitted(wl.pod_sets):
        return False
    return all(rf.mode == FIT or rf.preemption in _KEPT_ORACLE
               for ps in assignment.pod_sets for attempt in ps.attempts for rf in attempt.resources)


def reuse(kept: Sequence[ParkedVerdict], wl: Workload, cq: ClusterQueue, structure: QuotaStructure,
          flavors: Mapping, config: KueueConfig, last: LastAssignment | None, tree: QuotaTree, node: Node,
          preemption: Callable[[set[FR], Mapping[FR, int]], PreemptionContext]) -> AssignmentResult | None:
    """The assignment of the one of `kept` (the head's last few) that started where this search
    would, when it is what assigning flavors again would give; else None.
    `preemption(frs, usage)`: the preemption question of this head on the cycle's tree."""
    for k in kept:
        if k.pod_sets is not wl.pod_sets or k.cq is not cq or k.structure is not structure \
                or k.flavors is not flavors or k.config is not config \
                or k.starts != _starts(k.assignment, cq, config, last):
            continue
        a = k.assignment
        now: list[int] = []  # each resource's available quota on this tree, in order
        for ps in a.pod_sets:
            for attempt in ps.attempts:
                for rf in attempt.resources:
                    available = _same_answer(rf, cq, tree, node, preemption)
                    if available is None:
                        return None
                    now.append(available)
        if a.mode == PREEMPT and not _surely_uncoverable(preemption(a.frs_needing_preemption(), a.usage)):
            return None  # the nomination's own search (all its resources at once) might find targets now
        return _with_numbers(a, now, tree, node)
    return None


def _with_numbers(a: AssignmentResult, now: Sequence[int], tree: QuotaTree, node: Node) -> AssignmentResult:
    """`a` with each resource's available quota as it is now, and the shortfalls in its pending
    messages ("N more needed") and limits worked out again from it, as a new assignment would."""
    it = iter(now)
    if all(rf.available == next(it) for ps in a.pod_sets for at in ps.attempts for rf in at.resources):
        return a
    it = iter(now)
    pod_sets = []
    for ps in a.pod_sets:
        renamed: dict[str, str] = {}
        attempts = []
        for at in ps.attempts:
            fits = []
            for rf in at.resources:
                available = next(it)
                if available == rf.available:
                    fits.append(rf)
                elif rf.mode == FIT or rf.reason == EXCEEDS_MAX_QUOTA:
                    fits.append(rf._replace(available=available))  # their messages name no shortfall
                else:
                    msg = unused_quota_message(rf.resource, rf.flavor, rf.total - available)
                    renamed[rf.message] = msg
                    fits.append(rf._replace(available=available, message=msg, limited_by=limited_by(
                        node, tree, (rf.flavor, rf.resource), available)))
            attempts.append(at._replace(resources=tuple(fits)))
        # A message names its flavor and resource, each tried once per pod set: renaming is exact.
        # Built directly: dataclasses.replace costs as much again, once per reuse.
        pod_sets.append(PodSetResult(ps.name, ps.count, ps.requests, ps.flavors, ps.modes,
                                     tuple(renamed.get(r, r) for r in ps.reasons), tuple(attempts), ps.no_fit_reason))
    return AssignmentResult(tuple(pod_sets), a.borrowing, a.usage, a.last_state, a.no_fit_reason, a.fr_modes)


def remember(kept: list[ParkedVerdict], verdict: ParkedVerdict) -> list[ParkedVerdict]:
    """`kept` with `verdict` first, the one with its starts replaced. Under flavor fungibility a
    parked head's searches take turns over its flavors (each starts after the last one tried),
    so its verdicts are kept per start, a few at most."""
    return [verdict, *(k for k in kept if k.starts != verdict.starts)][:KEPT_PER_HEAD]


def _same_answer(rf: ResourceFit, cq: ClusterQueue, tree: QuotaTree, node: Node,
                 preemption: Callable[[set[FR], Mapping[FR, int]], PreemptionContext]) -> int | None:
    """The available quota of `rf`'s flavor-resource now, when fitsResourceQuota
    (flavor_assignment.fits_resource_quota) would answer as it did: the same branch, the same
    borrowing height, the oracle (when asked) again without candidates; else None."""
    fr = (rf.flavor, rf.resource)
    val = rf.earlier + rf.requested
    available = tree.available(node, fr)
    if val > rf.potential:
        return available  # ExceedsMaxQuota: the quota structure is the same object
    if (val <= available) != (rf.mode == FIT):
        return None  # the other branch: decided before the height is worked out
    borrow, may_reclaim = tree.lowest_fitting_subtree(node, fr, val)
    if borrow != rf.borrow_level:
        return None
    if rf.mode == FIT:
        return available
    asked = node.quota(fr).nominal >= val or may_reclaim or can_preempt_while_borrowing(cq, False)
    if rf.preemption == "":
        return None if asked else available
    # The oracle answers NoCandidates with the height where it would fit as it is.
    return available if asked and _surely_uncoverable(preemption({fr}, {fr: val})) else None
