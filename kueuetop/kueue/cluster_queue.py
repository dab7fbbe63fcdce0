"""ClusterQueue (kueue.x-k8s.io/v1beta2; v1beta1 is converted first)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kueuetop.kueue.api_versions import to_v1beta2
from kueuetop.kueue.fields import Fields, object_fields
from kueuetop.kueue.meta import Condition, Meta, parse_conditions, parse_meta
from kueuetop.kueue.quota import ResourceGroup, parse_fair_weight, parse_resource_groups
from kueuetop.kueue.scheduling_terms import LabelSelector, parse_label_selector

if TYPE_CHECKING:
    from kueuetop.kueue.parse_cache import ParseCache

STRICT_FIFO = "StrictFIFO"
BEST_EFFORT_FIFO = "BestEffortFIFO"
MAY_STOP_SEARCH = "MayStopSearch"
TRY_NEXT_FLAVOR = "TryNextFlavor"
BORROWING_OVER_PREEMPTION = "BorrowingOverPreemption"
PREEMPTION_OVER_BORROWING = "PreemptionOverBorrowing"
NEVER, LOWER_PRIORITY, LOWER_OR_NEWER_EQUAL, ANY = "Never", "LowerPriority", "LowerOrNewerEqualPriority", "Any"
STOP_NONE, HOLD, HOLD_AND_DRAIN = "None", "Hold", "HoldAndDrain"


@dataclass(frozen=True, slots=True)
class FlavorFungibility:
    when_can_borrow: str = MAY_STOP_SEARCH
    when_can_preempt: str = TRY_NEXT_FLAVOR
    preference: str = ""  # "" acts as BorrowingOverPreemption


@dataclass(frozen=True, slots=True)
class Preemption:
    within_cluster_queue: str = NEVER
    reclaim_within_cohort: str = NEVER
    borrow_within_cohort: str = NEVER
    max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class CheckStrategy:
    name: str
    on_flavors: tuple[str, ...] = ()  # empty = every flavor


@dataclass(frozen=True, slots=True)
class FlavorUsage:
    """One row of status.flavorsReservation / flavorsUsage."""

    flavor: str
    resource: str
    total: int
    borrowed: int


@dataclass(frozen=True, slots=True)
class ClusterQueue:
    meta: Meta
    resource_groups: tuple[ResourceGroup, ...] = ()
    cohort: str = ""
    queueing_strategy: str = BEST_EFFORT_FIFO
    namespace_selector: LabelSelector | None = None  # None = no namespace may submit
    fungibility: FlavorFungibility = field(default_factory=FlavorFungibility)
    preemption: Preemption = field(default_factory=Preemption)
    admission_checks: tuple[CheckStrategy, ...] = ()
    stop_policy: str = STOP_NONE
    fair_weight: float = 1.0
    conditions: tuple[Condition, ...] = ()
    pending_workloads: int = 0
    reserving_workloads: int = 0
    admitted_workloads: int = 0
    flavors_reservation: tuple[FlavorUsage, ...] = ()
    flavors_usage: tuple[FlavorUsage, ...] = ()
    weighted_share: int | None = None

    @property
    def name(self) -> str:
        return self.meta.name

    def flavor_names(self) -> list[str]:
        return [fq.name for g in self.resource_groups for fq in g.flavors]

    def group_for(self, resource: str) -> ResourceGroup | None:
        for g in self.resource_groups:
            if resource in g.covered:
                return g
        return None

    def checks_for_flavors(self, flavors: set[str]) -> tuple[str, ...]:
        """Admission checks that apply to a workload assigned these flavors."""
        return tuple(
            c.name for c in self.admission_checks
            if not c.on_flavors or any(f in flavors for f in c.on_flavors)
        )


def parse_flavor_usage(status: Fields, key: str) -> tuple[FlavorUsage, ...]:
    out = []
    for fu in status.items(key):
        fname = fu.str("name")
        for r in fu.items("resources"):
            rname = r.str("name")
            out.append(FlavorUsage(fname, rname, r.quantity("total", rname) or 0,
                                   r.quantity("borrowed", rname) or 0))
    return tuple(out)


def parse_cluster_queue(data: Mapping, cache: ParseCache | None = None) -> ClusterQueue:
    f, _, _ = object_fields(to_v1beta2(data), "ClusterQueue", cache)
    spec = f.sub("spec")
    fung = spec.sub("flavorFungibility")
    fungibility = FlavorFungibility(
        when_can_borrow=fung.enum("whenCanBorrow", (MAY_STOP_SEARCH, TRY_NEXT_FLAVOR), MAY_STOP_SEARCH),
        when_can_preempt=fung.enum("whenCanPreempt", (MAY_STOP_SEARCH, TRY_NEXT_FLAVOR), TRY_NEXT_FLAVOR),
        preference=fung.enum("preference", (BORROWING_OVER_PREEMPTION, PREEMPTION_OVER_BORROWING), ""),
    )
    p = spec.sub("preemption")
    bwc = p.sub("borrowWithinCohort")
    preemption = Preemption(
        within_cluster_queue=p.enum("withinClusterQueue", (NEVER, LOWER_PRIORITY, LOWER_OR_NEWER_EQUAL), NEVER),
        reclaim_within_cohort=p.enum("reclaimWithinCohort", (NEVER, LOWER_PRIORITY, ANY), NEVER),
        borrow_within_cohort=bwc.enum("policy", (NEVER, LOWER_PRIORITY), NEVER),
        max_priority_threshold=bwc.opt_int("maxPriorityThreshold"),
    )
    checks = tuple(
        CheckStrategy(c.str("name", required=True), c.str_list("onFlavors"))
        for c in spec.sub("admissionChecksStrategy").items("admissionChecks")
    )
    ns_sel = parse_label_selector(spec.sub("namespaceSelector")) if spec.has("namespaceSelector") else None
    status = f.sub("status")
    fs = status.sub("fairSharing")
    return ClusterQueue(
        meta=parse_meta(f),
        resource_groups=parse_resource_groups(spec),
        cohort=spec.str("cohortName"),
        queueing_strategy=spec.enum("queueingStrategy", (STRICT_FIFO, BEST_EFFORT_FIFO), BEST_EFFORT_FIFO),
        namespace_selector=ns_sel,
        fungibility=fungibility,
        preemption=preemption,
        admission_checks=checks,
        stop_policy=spec.enum("stopPolicy", (STOP_NONE, HOLD, HOLD_AND_DRAIN), STOP_NONE),
        fair_weight=parse_fair_weight(spec),
        conditions=parse_conditions(status),
        pending_workloads=status.int("pendingWorkloads"),
        reserving_workloads=status.int("reservingWorkloads"),
        admitted_workloads=status.int("admittedWorkloads"),
        flavors_reservation=parse_flavor_usage(status, "flavorsReservation"),
        flavors_usage=parse_flavor_usage(status, "flavorsUsage"),
        weighted_share=fs.opt_int("weightedShare"),
    )
