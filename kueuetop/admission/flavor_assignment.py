"""Flavor assignment (reference/kueue.md §6.3; Kueue: pkg/scheduler/flavorassigner/flavorassigner.go).

For each pod set, each resource group gets one flavor for all the resources it covers. Flavors
are tried in spec order starting after the one tried last time; each is checked for eligibility
(taints/tolerations, nodeSelector/affinity on the group's label keys) and quota
(`fitsResourceQuota`: Fit / Preempt / NoFit). Flavor fungibility decides whether to stop or keep
scanning, and which scanned flavor is best. Every attempt is kept as data for explain().
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from kueuetop.admission.queue_state import LastAssignment, cq_fingerprint, workload_shape
from kueuetop.admission.quota_tree import FR, Node, QuotaTree
from kueuetop.kueue.cluster_queue import NEVER as POLICY_NEVER
from kueuetop.kueue.cluster_queue import (
    PREEMPTION_OVER_BORROWING,
    TRY_NEXT_FLAVOR,
    ClusterQueue,
)
from kueuetop.kueue.flavor import ResourceFlavor, flavor_mismatch
from kueuetop.kueue.quantity import format_resource_value
from kueuetop.kueue.quota import ResourceGroup
from kueuetop.kueue.scheduling_terms import tolerated
from kueuetop.kueue.workload import PodSet, PodSetAssignment, Workload

if TYPE_CHECKING:
    from kueuetop.admission.engine_cache import EngineCache

# Representative modes (FlavorAssignmentMode).
NO_FIT, PREEMPT, FIT = "NoFit", "Preempt", "Fit"
_MODE_RANK = MappingProxyType({NO_FIT: 0, PREEMPT: 1, FIT: 2})

# Granular preemption modes, worst to best (flavorassigner preemptionMode).
PM_NO_FIT, PM_NO_CANDIDATES, PM_PREEMPT, PM_RECLAIM, PM_FIT = range(5)
_PM_NAMES = MappingProxyType({PM_NO_FIT: "NoFit", PM_NO_CANDIDATES: "NoCandidates", PM_PREEMPT: "Preempt",
             PM_RECLAIM: "Reclaim", PM_FIT: "Fit"})
_BIG = 1 << 62
_PM_OF = MappingProxyType({"NoCandidates": PM_NO_CANDIDATES, "Preempt": PM_PREEMPT, "Reclaim": PM_RECLAIM})  # oracle answers

# Granular QuotaReserved reasons for a NoFit assignment, by severity.
NO_MATCHING_FLAVOR = "NoMatchingFlavor"
EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
WAITING_FOR_QUOTA = "WaitingForQuota"
_SEVERITY = MappingProxyType({"": 0, WAITING_FOR_QUOTA: 2, EXCEEDS_MAX_QUOTA: 3, NO_MATCHING_FLAVOR: 4})

# Oracle: (flavor-resource, quantity) → ("NoCandidates" | "Preempt" | "Reclaim", borrowing level)
Oracle = Callable[[FR, int], tuple[str, int]]


def _most_severe(a: str, b: str) -> str:
    return a if _SEVERITY.get(a, 0) >= _SEVERITY.get(b, 0) else b


def qty(resource: str, value: int) -> str:
    return format_resource_value(resource, value)


class ResourceFit(NamedTuple):
    """How one resource of a pod set fared in one flavor. A named tuple: every resource of every
    flavor tried makes one, and it is five times cheaper to make than a frozen dataclass."""

    resource: str
    flavor: str
    earlier: int  # requested in this flavor by earlier pod sets of the workload
    requested: int  # this pod set's request
    available: int  # unused quota reachable by the CQ (own + cohort, within limits)
    potential: int  # maximum capacity with zero usage (potentialAvailable)
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None
    mode: str  # Fit | Preempt | NoFit
    preemption: str  # "" | NoCandidates | Preempt | Reclaim
    borrow_level: int
    reason: str  # "" | WaitingForQuota | ExceedsMaxQuota
    limited_by: str  # "" | nominalQuota | borrowingLimit | cohort
    message: str

    @property
    def total(self) -> int:
        return self.earlier + self.requested

    @property
    def more_needed(self) -> int:
        return max(0, self.total - self.available)


class FlavorAttempt(NamedTuple):
    """One flavor tried for one resource group of a pod set (a named tuple, as ResourceFit)."""

    flavor: str
    covered: tuple[str, ...]
    mode: str  # Fit | Preempt | NoFit
    preemption: str
    borrow_level: int
    mismatch: str = ""  # eligibility failure (Kueue's text)
    resources: tuple[ResourceFit, ...] = ()

    @property
    def eligible(self) -> bool:
        return not self.mismatch


@dataclass(frozen=True, slots=True)
class PodSetResult:
    name: str
    count: int
    requests: Mapping[str, int]  # total for `count` pods
    flavors: Mapping[str, str]  # resource → flavor ({} when no flavor could be assigned)
    modes: Mapping[str, str]  # resource → Fit | Preempt
    reasons: tuple[str, ...]
    attempts: tuple[FlavorAttempt, ...]
    no_fit_reason: str = ""

    @property
    def mode(self) -> str:
        if not self.reasons:
            return FIT
        if not self.flavors and self.requests:
            return NO_FIT
        return min(self.modes.values(), key=_MODE_RANK.__getitem__, default=FIT)

    @property
    def message(self) -> str:
        return ", ".join(sorted(self.reasons))


@dataclass(frozen=True)
class AssignmentResult:
    pod_sets: tuple[PodSetResult, ...]
    borrowing: int  # height of the smallest cohort subtree holding the extra usage (0 = none)
    usage: Mapping[FR, int]
    last_state: LastAssignment | None = None
    no_fit_reason: str = ""
    fr_modes: Mapping[FR, str] = field(default_factory=dict)

    @cached_property
    def mode(self) -> str:
        # Asked many times per nomination (ordering, processing, status): worked out once.
        if not self.pod_sets:
            return NO_FIT
        return min((ps.mode for ps in self.pod_sets), key=_MODE_RANK.__getitem__)

    @property
    def borrows(self) -> bool:
        return self.borrowing > 0

    def frs_needing_preemption(self) -> set[FR]:
        return {fr for fr, m in self.fr_modes.items() if m == PREEMPT}

    def message(self) -> str:
        """One clause per pod set that doesn't fit (Kueue: pkg/scheduler/flavorassigner/flavorassigner.go Assignment.Message)."""
        parts = [f"couldn't assign flavors to pod set {ps.name}: {ps.message}"
                 for ps in self.pod_sets if ps.reasons]
        return "; ".join(parts)

    def to_assignments(self) -> tuple[PodSetAssignment, ...]:
        return tuple(
            PodSetAssignment(ps.name, dict(ps.flavors),
                             {r: v for r, v in ps.requests.items() if r in ps.flavors}, ps.count)
            for ps in self.pod_sets
        )

    def flavor_set(self) -> set[str]:
        return {f for ps in self.pod_sets for f in ps.flavors.values()}


@dataclass
class AssignContext:
    wl: Workload
    cq: ClusterQueue
    node: Node
    tree: QuotaTree
    flavors: Mapping[str, ResourceFlavor]
    last: LastAssignment | None = None
    fair_sharing: bool = False
    oracle: Oracle | None = None
    fungibility: bool = True  # FlavorFungibility feature gate
    cache: EngineCache | None = None  # the caller's (None: nothing kept between calls)


def _is_preferred(a: tuple[int, int], b: tuple[int, int], preference: str) -> bool:
    """Is granular mode a better than b (Kueue: pkg/scheduler/flavorassigner/flavorassigner.go isPreferred)."""
    if a[0] == PM_NO_FIT:
        return False
    if b[0] == PM_NO_FIT:
        return True
    a_none, b_none = a[0] == PM_NO_CANDIDATES, b[0] == PM_NO_CANDIDATES
    if a_none != b_none:
        return not a_none
    if preference == PREEMPTION_OVER_BORROWING:
        if a[1] != b[1]:
            return a[1] < b[1]
        return a[0] > b[0]
    if a[0] != b[0]:
        return a[0] > b[0]
    return a[1] < b[1]


def _should_try_next(mode: tuple[int, int], cq: ClusterQueue) -> bool:
    """Keep scanning on NoFit / no candidates, or when the flavor needs preemption (borrowing)
    and whenCanPreempt (whenCanBorrow) is TryNextFlavor (Kueue: pkg/scheduler/flavorassigner/flavorassigner.go shouldTryNextFlavor)."""
    if mode[0] in (PM_NO_FIT, PM_NO_CANDIDATES):
        return True
    if mode[0] in (PM_PREEMPT, PM_RECLAIM) and cq.fungibility.when_can_preempt == TRY_NEXT_FLAVOR:
        return True
    return mode[1] != 0 and cq.fungibility.when_can_borrow == TRY_NEXT_FLAVOR


def _pm_to_mode(pm: int) -> str:
    return FIT if pm == PM_FIT else NO_FIT if pm == PM_NO_FIT else PREEMPT


def group_label_keys(group: ResourceGroup, flavors: Mapping[str, ResourceFlavor],
                     cache: EngineCache | None = None) -> frozenset[str]:
    """The node label keys of the group's flavors (Kueue: pkg/scheduler/flavorassigner/flavorassigner.go, the keys
    checkFlavorForPodSets matches the pod's selector and affinity on). Kept in the cache by
    identity of both: every head of a ClusterQueue asks again with the same objects."""
    if cache is None or not cache.fast_paths:
        return _label_keys_of(group, flavors)
    memo = cache.label_keys
    hit = memo.get((id(group), id(flavors)))
    if hit is not None and hit[0] is group and hit[1] is flavors:
        return hit[2]
    found = _label_keys_of(group, flavors)
    if len(memo) >= 4096:
        memo.clear()
    memo[(id(group), id(flavors))] = (group, flavors, found)  # both held: their ids stay theirs
    return found


def _label_keys_of(group: ResourceGroup, flavors: Mapping[str, ResourceFlavor]) -> frozenset[str]:
    keys: set[str] = set()
    for fq in group.flavors:
        rf = flavors.get(fq.name)
        if rf is not None:
            keys.update(rf.node_labels)
    return frozenset(keys)


def eligibility(rf: ResourceFlavor | None, name: str, ps: PodSet, label_keys: frozenset[str]) -> str:
    """Kueue's checkFlavorForPodSets message (pkg/scheduler/flavorassigner/flavorassigner.go), or "" when the pod set may use
    the flavor."""
    if rf is None:
        return f"flavor {name} not found"
    why = flavor_mismatch(rf, ps.shape, label_keys)
    if why is None:
        return ""
    if why.startswith("untolerated taint"):
        tolerations = ps.shape.tolerations + rf.tolerations
        for t in rf.node_taints:
            if t.effect in ("NoSchedule", "NoExecute") and not tolerated(t, tolerations):
                return f"untolerated taint {{{t.key} {t.value} {t.effect} <nil>}} in flavor {name}"
    return f"flavor {name} doesn't match node affinity"


def can_preempt_while_borrowing(cq: ClusterQueue, fair_sharing: bool) -> bool:
    """Kueue: pkg/scheduler/flavorassigner/flavorassigner.go canPreemptWhileBorrowing."""
    return (cq.preemption.borrow_within_cohort != POLICY_NEVER
            or (fair_sharing and cq.preemption.reclaim_within_cohort != POLICY_NEVER))


def limited_by(node: Node, tree: QuotaTree, fr: FR, available: int) -> str:
    """Which limit keeps `available` where it is, for the explanation of a shortfall."""
    if node.parent is None:
        return "nominalQuota"
    q = node.quota(fr)
    if q.borrowing_limit is not None:
        local = node.local_quota(fr)
        used = tree.used(node, fr)
        capped = (tree.local_available(node, fr) + (node.subtree.get(fr, 0) - local)
                  - max(0, used - local) + q.borrowing_limit)
        if capped <= available:
            return "borrowingLimit"
    return "cohort"


def unused_quota_message(res: str, flv: str, more_needed: int) -> str:
    return f"insufficient unused quota for {res} in flavor {flv}, {qty(res, more_needed)} more needed"


def fits_resource_quota(ctx: AssignContext, fr: FR, earlier: int, request: int) -> ResourceFit:
    """fitsResourceQuota for one flavor-resource, with `earlier` = usage of earlier pod sets
    (Kueue: pkg/scheduler/flavorassigner/flavorassigner.go)."""
    node, tree = ctx.node, ctx.tree
    q = node.quota(fr)
    available = tree.available(node, fr)
    potential = tree.potential_available(node, fr)
    val = earlier + request
    res, flv = fr[1], fr[0]

    def out(pm: int, borrow: int, reason: str, message: str, limited: str = "") -> ResourceFit:
        return ResourceFit(res, flv, earlier, request, available, potential, q.nominal, q.borrowing_limit,
                           q.lending_limit, _pm_to_mode(pm), _PM_NAMES[pm] if pm not in (PM_FIT, PM_NO_FIT) else "",
                           borrow, reason, limited, message)

    if val > potential:
        limited = "nominalQuota" if node.parent is None else (
            "borrowingLimit" if q.borrowing_limit is not None
            and potential == node.subtree.get(fr, 0) + q.borrowing_limit else "cohort")
        msg = (f"insufficient quota for {res} in flavor {flv}, previously considered podsets requests "
               f"({qty(res, earlier)}) + current podset request ({qty(res, request)}) > maximum capacity "
               f"({qty(res, potential)})")
        return out(PM_NO_FIT, 0, EXCEEDS_MAX_QUOTA, msg, limited)
    borrow, may_reclaim = tree.lowest_fitting_subtree(node, fr, val)
    if val <= available:
        return out(PM_FIT, borrow, "", "")
    msg = unused_quota_message(res, flv, val - available)
    limited = limited_by(node, tree, fr, available)
    if (q.nominal >= val or may_reclaim or can_preempt_while_borrowing(ctx.cq, ctx.fair_sharing)) \
            and ctx.oracle is not None:
        possibility, borrow_after = ctx.oracle(fr, val)
        pm = _PM_OF[possibility]
        return out(pm, borrow_after, "", msg, limited)
    return out(PM_NO_FIT, borrow, WAITING_FOR_QUOTA, msg, limited)


@dataclass
class _GroupOutcome:
    flavors: dict[str, str]  # resource → flavor
    modes: dict[str, tuple[int, int]]  # resource → granular mode
    reasons: list[str]
    attempts: list[FlavorAttempt]
    tried_idx: int
    failed: bool
    no_fit_reason: str


def _find_flavor(ctx: AssignContext, ps_idx: int, ps: PodSet, group: ResourceGroup, resource: str,
                 requests: Mapping[str, int], usage: Mapping[FR, int]) -> _GroupOutcome:
    """Kueue: pkg/scheduler/flavorassigner/flavorassigner.go findFlavorForPodSets (one resource group of one pod set)."""
    cq = ctx.cq
    preference = cq.fungibility.preference
    keys = group_label_keys(group, ctx.flavors, ctx.cache)
    wanted = sorted(r for r in requests if r in group.covered)
    reasons: list[str] = []
    attempts: list[FlavorAttempt] = []
    best: dict[str, tuple[str, tuple[int, int]]] | None = None
    best_mode = (PM_NO_FIT, _BIG)
    attempted = -1
    start = ctx.last.next_flavor(ps_idx, resource) if (ctx.last is not None and ctx.fungibility) else 0
    if start >= len(group.flavors):
        start = 0
    for idx in range(start, len(group.flavors)):
        attempted = idx
        fname = group.flavors[idx].name
        mismatch = eligibility(ctx.flavors.get(fname), fname, ps, keys)
        if mismatch:
            reasons.append(mismatch)
            attempts.append(FlavorAttempt(fname, group.covered, NO_FIT, "", 0, mismatch=mismatch))
            continue
        rep = (PM_FIT, 0)
        assigned: dict[str, tuple[str, tuple[int, int]]] = {}
        fits: list[ResourceFit] = []
        for r in wanted:
            fr = (fname, r)
            rf = fits_resource_quota(ctx, fr, usage.get(fr, 0), requests[r])
            fits.append(rf)
            if rf.message:
                reasons.append(rf.message)
            pm = _PM_OF.get(rf.preemption, PM_FIT if rf.mode == FIT else PM_NO_FIT)
            mode = (pm, rf.borrow_level)
            if _is_preferred(rep, mode, preference):
                rep = mode  # keep the worst mode across resources
            if rep[0] == PM_NO_FIT:
                continue
            assigned[r] = (fname, mode)
        attempts.append(FlavorAttempt(fname, group.covered, _pm_to_mode(rep[0]),
                                      _PM_NAMES[rep[0]] if rep[0] not in (PM_FIT, PM_NO_FIT) else "",
                                      rep[1] if rep[0] != PM_NO_FIT else 0, resources=tuple(fits)))
        if ctx.fungibility:
            if not _should_try_next(rep, cq):
                best, best_mode = assigned, rep
                break
            if _is_preferred(rep, best_mode, preference):
                best, best_mode = assigned, rep
        elif rep[0] > best_mode[0]:
            best, best_mode = assigned, rep
            if rep[0] == PM_FIT:
                break
    tried = -1 if attempted == len(group.flavors) - 1 else attempted
    if best_mode[0] == PM_NO_FIT or not best:
        # the least severe blocker among alternative flavors of the group decides (resolveNoFitReason)
        per_flavor = []
        for a in attempts:
            if a.mismatch:
                per_flavor.append(NO_MATCHING_FLAVOR)
            else:
                worst = ""
                for rf in a.resources:
                    worst = _most_severe(worst, rf.reason)
                per_flavor.append(worst or WAITING_FOR_QUOTA)
        reason = min(per_flavor, key=lambda x: _SEVERITY.get(x, 0)) if per_flavor else NO_MATCHING_FLAVOR
        return _GroupOutcome({}, {}, reasons, attempts, tried, True, reason)
    flavors = {r: f for r, (f, _) in best.items()}
    modes = {r: m for r, (_, m) in best.items()}
    return _GroupOutcome(flavors, modes, [] if best_mode[0] == PM_FIT else reasons, attempts, tried, False, "")


def assign_flavors(ctx: AssignContext, counts: Sequence[int] | None = None) -> AssignmentResult:
    """FlavorAssigner.Assign for the given pod counts (None = spec counts) (Kueue: pkg/scheduler/flavorassigner/flavorassigner.go
    Assign, assignFlavors)."""
    wl, cq = ctx.wl, ctx.cq
    usage: dict[FR, int] = {}
    fr_modes: dict[FR, str] = {}
    pod_sets: list[PodSetResult] = []
    tried_state: list[dict[str, int]] = []
    borrowing = 0
    covers_pods = cq.group_for("pods") is not None
    overall_no_fit = ""
    for i, ps in enumerate(wl.pod_sets):
        count = ps.count if counts is None else counts[i]
        requests = ps.total(count)
        if covers_pods:
            requests["pods"] = count
        requests = {r: v for r, v in requests.items() if v}
        flavors: dict[str, str] = {}
        modes: dict[str, str] = {}
        reasons: list[str] = []
        attempts: list[FlavorAttempt] = []
        tried: dict[str, int] = {}
        failed = False
        no_fit = ""
        for r in sorted(requests):
            if r in flavors:
                continue  # assigned together with its resource group
            group = cq.group_for(r)
            if group is None:
                reasons = [f"resource {r} unavailable in ClusterQueue"]
                flavors, failed, no_fit = {}, True, NO_MATCHING_FLAVOR
                break
            out = _find_flavor(ctx, i, ps, group, r, requests, usage)
            attempts.extend(out.attempts)
            if out.failed:
                reasons = out.reasons
                flavors, failed, no_fit = {}, True, out.no_fit_reason
                break
            for res, f in out.flavors.items():
                flavors[res] = f
                m = out.modes[res]
                modes[res] = _pm_to_mode(m[0])
                borrowing = max(borrowing, m[1])
                tried[res] = out.tried_idx
            reasons.extend(out.reasons)
        result = PodSetResult(ps.name, count, requests, flavors, modes, tuple(reasons), tuple(attempts), no_fit)
        pod_sets.append(result)
        tried_state.append(tried)
        if failed:
            overall_no_fit = _most_severe(overall_no_fit, no_fit)
            break
        for res, f in flavors.items():
            fr = (f, res)
            usage[fr] = usage.get(fr, 0) + requests[res]
            prev = fr_modes.get(fr)
            if prev is None or _MODE_RANK[modes[res]] < _MODE_RANK[prev]:
                fr_modes[fr] = modes[res]
    last = LastAssignment(tuple(tried_state), cq_fingerprint(cq, ctx.cache), workload_shape(wl, ctx.cache))
    return AssignmentResult(tuple(pod_sets), borrowing, usage, last, overall_no_fit, fr_modes)


def pending_reason(result: AssignmentResult) -> str:
    """Granular QuotaReserved reason for an assignment that can't be admitted now."""
    if result.mode == NO_FIT:
        return result.no_fit_reason or WAITING_FOR_QUOTA
    return WAITING_FOR_QUOTA
