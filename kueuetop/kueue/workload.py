"""Workload: a job's scheduling request as Kueue sees it (kueue.x-k8s.io/v1beta2)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kueuetop.kueue.api_versions import V1BETA2 as V1BETA2_API
from kueuetop.kueue.api_versions import to_v1beta2
from kueuetop.kueue.fields import Fields, object_fields
from kueuetop.kueue.meta import Condition, Meta, condition_true, find_condition, parse_conditions, parse_meta
from kueuetop.kueue.pod_requests import PodShape, parse_pod_shape

if TYPE_CHECKING:
    from kueuetop.kueue.parse_cache import ParseCache

PRIORITY_BOOST_ANNOTATION = "kueue.x-k8s.io/priority-boost"
ADMISSION_GATED_BY_ANNOTATION = "kueue.x-k8s.io/admission-gated-by"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PODSET_LABEL = "kueue.x-k8s.io/podset"
# On a MultiKueue worker's copy of a manager's Workload: the manager's origin name (Kueue:
# pkg/controller/admissionchecks/multikueue, kueue.MultiKueueOriginLabel).
MULTIKUEUE_ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
CHECK_STATES = ("Pending", "Ready", "Retry", "Rejected")

# (flavor, resource) → Kueue resource value
FlavorResource = tuple[str, str]


@dataclass(frozen=True, slots=True)
class PodSet:
    name: str
    count: int
    shape: PodShape
    min_count: int | None = None

    @property
    def requests(self) -> Mapping[str, int]:
        """Per-pod requests."""
        return self.shape.requests

    def total(self, count: int | None = None) -> dict[str, int]:
        n = self.count if count is None else count
        return {k: v * n for k, v in self.shape.requests.items()}


@dataclass(frozen=True, slots=True)
class PodSetAssignment:
    name: str
    flavors: Mapping[str, str]  # resource → flavor
    resource_usage: Mapping[str, int]
    count: int | None = None


@dataclass(frozen=True, slots=True)
class Admission:
    cluster_queue: str
    pod_set_assignments: tuple[PodSetAssignment, ...] = ()


@dataclass(frozen=True, slots=True)
class CheckState:
    name: str
    state: str
    message: str = ""
    last_transition: float | None = None
    requeue_after_seconds: int | None = None
    retry_count: int = 0


@dataclass(frozen=True, slots=True)
class RequeueState:
    count: int = 0
    requeue_at: float | None = None


@dataclass(frozen=True, slots=True)
class EvictionCount:
    reason: str
    underlying_cause: str
    count: int


@dataclass(frozen=True, slots=True)
class Workload:
    meta: Meta
    queue_name: str
    pod_sets: tuple[PodSet, ...]
    priority: int = 0
    priority_class_name: str = ""
    priority_class_kind: str = ""  # "WorkloadPriorityClass" | "PriorityClass" | ""
    active: bool = True
    maximum_execution_time_seconds: int | None = None
    conditions: tuple[Condition, ...] = ()
    admission: Admission | None = None
    requeue_state: RequeueState | None = None
    admission_checks: tuple[CheckState, ...] = ()
    reclaimable_pods: Mapping[str, int] = field(default_factory=dict)
    accumulated_execution_seconds: int = 0
    evictions: tuple[EvictionCount, ...] = ()
    # status.resourceRequests is set (Kueue writes it with each Pending status, clears it on
    # admission): nothing decides on it, but a status written back (workload_api) must hold it
    # for Kueue's next identical Pending to be the no-op it is on the cluster.
    requests_in_status: bool = field(default=False, compare=False)

    # identity -----------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def namespace(self) -> str:
        return self.meta.namespace

    @property
    def key(self) -> tuple[str, str]:
        return (self.meta.namespace, self.meta.name)

    @property
    def uid(self) -> str:
        return self.meta.uid

    @property
    def effective_priority(self) -> int:
        """spec.priority plus the (alpha) priority-boost annotation."""
        boost = self.meta.annotations.get(PRIORITY_BOOST_ANNOTATION)
        if boost:
            try:
                return self.priority + int(boost)
            except ValueError:
                pass
        return self.priority

    # conditions ---------------------------------------------------------------
    def condition(self, type_: str) -> Condition | None:
        return find_condition(self.conditions, type_)

    def is_true(self, type_: str) -> bool:
        return condition_true(self.conditions, type_)

    @property
    def has_quota_reservation(self) -> bool:
        return condition_true(self.conditions, "QuotaReserved")

    @property
    def is_admitted(self) -> bool:
        return condition_true(self.conditions, "Admitted")

    @property
    def is_finished(self) -> bool:
        return condition_true(self.conditions, "Finished")

    @property
    def is_evicted(self) -> bool:
        return condition_true(self.conditions, "Evicted")

    def check_state(self, name: str) -> CheckState | None:
        for c in self.admission_checks:
            if c.name == name:
                return c
        return None

    # quota --------------------------------------------------------------------
    def usage(self) -> dict[FlavorResource, int]:
        """Quota held by the admission: per (flavor, resource), minus reclaimable pods.

        Kueue's workload.Info.FlavorResourceUsage: resourceUsage of each podSetAssignment,
        scaled down by status.reclaimablePods (dynamic reclaim).
        """
        out: dict[FlavorResource, int] = {}
        if self.admission is None:
            return out
        by_name = {ps.name: ps for ps in self.pod_sets}
        for psa in self.admission.pod_set_assignments:
            usage = dict(psa.resource_usage)
            reclaim = self.reclaimable_pods.get(psa.name, 0)
            ps = by_name.get(psa.name)
            if reclaim and ps is not None:
                count = psa.count if psa.count is not None else ps.count
                kept = max(0, count - reclaim)
                usage = {r: v * kept for r, v in ps.requests.items()}
            for resource, value in usage.items():
                flavor = psa.flavors.get(resource)
                if flavor is None:
                    continue  # resource not governed by the ClusterQueue
                key = (flavor, resource)
                out[key] = out.get(key, 0) + value
        return out


def _parse_pod_set(p: Fields) -> PodSet:
    name = p.str("name", "main")
    count = p.int("count", 1, minimum=0)
    min_count = p.opt_int("minCount", minimum=1)
    if min_count is not None and min_count > count:
        raise p.error("minCount", f"must be <= count ({count}), got {min_count}")
    shape = parse_pod_shape(p.sub("template").sub("spec"))
    return PodSet(name=name, count=count, shape=shape, min_count=min_count)


def _pod_sets_key(raw: object) -> str | None:
    # repr of JSON data (what API objects hold) is exact and cheaper than json.dumps; two
    # orderings of one content only cost a cache miss.
    return repr(raw) if isinstance(raw, list) else None


def parse_pod_sets(spec: Fields) -> tuple[PodSet, ...]:
    """spec.podSets, validated (required, non-empty, unique names). With the caller's ParseCache
    (`spec.cache`), pod sets already parsed are the ones kept: they are most of a Workload's parse
    cost and repeat across the versions of one Workload (status writes keep the spec) and across
    the Workloads a job template stamps out; PodSets are frozen, so sharing them is safe."""
    cache = spec.cache
    key = _pod_sets_key(spec.raw("podSets")) if cache is not None else None
    pod_sets = cache.pod_sets.get(key) if cache is not None and key is not None else None
    if pod_sets is None:
        pod_sets = tuple(_parse_pod_set(p) for p in spec.items("podSets", required=True))
        if cache is not None and key is not None:
            cache.keep_pod_sets(key, pod_sets)
    if not pod_sets:
        raise spec.error("podSets", "at least one pod set is required")
    names = [ps.name for ps in pod_sets]
    if len(set(names)) != len(names):
        raise spec.error("podSets", f"duplicate pod set names {names}")
    return pod_sets


def workload_pod_sets(data: Mapping, cache: ParseCache | None = None) -> tuple[PodSet, ...]:
    """Only the pod sets of a Workload dict (cheaper than parse_workload when that is all
    a caller needs)."""
    f, _, _ = object_fields(to_v1beta2(data), "Workload", cache)
    return parse_pod_sets(f.sub("spec"))


def _parse_admission(status: Fields) -> Admission | None:
    if not status.has("admission"):
        return None
    a = status.sub("admission")
    psas = []
    for psa in a.items("podSetAssignments"):
        flavors = psa.str_map("flavors")
        psas.append(PodSetAssignment(
            name=psa.str("name", "main"),
            flavors=flavors,
            resource_usage=psa.resources("resourceUsage"),
            count=psa.opt_int("count", minimum=0),
        ))
    return Admission(cluster_queue=a.str("clusterQueue", required=True), pod_set_assignments=tuple(psas))


def _parse_requeue_state(status: Fields) -> RequeueState | None:
    if not status.has("requeueState"):
        return None
    rq = status.sub("requeueState")
    return RequeueState(rq.int("count"), rq.time("requeueAt"))


def _parse_checks(status: Fields) -> tuple[CheckState, ...]:
    if status.raw("admissionChecks", []) == []:
        return ()  # the usual case: none
    return tuple(
        CheckState(
            name=c.str("name", required=True),
            state=c.enum("state", CHECK_STATES, "Pending"),
            message=c.str("message"),
            last_transition=c.time("lastTransitionTime"),
            requeue_after_seconds=c.opt_int("requeueAfterSeconds"),
            retry_count=c.int("retryCount"),
        )
        for c in status.items("admissionChecks")
    )


def _parse_evictions(status: Fields) -> tuple[EvictionCount, ...]:
    stats = status.raw("schedulingStats")
    if type(stats) is dict and stats.get("evictions", []) in (None, []):
        return ()
    return tuple(
        EvictionCount(e.str("reason"), e.str("underlyingCause"), e.int("count"))
        for e in status.sub("schedulingStats").items("evictions")
    )


def parse_workload(data: Mapping, cache: ParseCache | None = None) -> Workload:
    f, _, _ = object_fields(to_v1beta2(data), "Workload", cache)
    spec = f.sub("spec")
    status = f.sub("status")
    pod_sets = parse_pod_sets(spec)
    ref = spec.sub("priorityClassRef")
    reclaimable = {r.str("name", required=True): r.int("count", minimum=0) for r in status.items("reclaimablePods")}
    return Workload(
        meta=parse_meta(f),
        queue_name=spec.str("queueName"),
        pod_sets=pod_sets,
        priority=spec.int("priority"),
        priority_class_name=ref.str("name"),
        priority_class_kind=ref.str("kind"),
        active=spec.bool("active", True),
        maximum_execution_time_seconds=spec.opt_int("maximumExecutionTimeSeconds", minimum=1),
        conditions=parse_conditions(status),
        admission=_parse_admission(status),
        requeue_state=_parse_requeue_state(status),
        admission_checks=_parse_checks(status),
        reclaimable_pods=reclaimable,
        accumulated_execution_seconds=status.int("accumulatedPastExecutionTimeSeconds"),
        evictions=_parse_evictions(status),
        requests_in_status=status.raw("resourceRequests") is not None,
    )


_SHARED_STATUS_PARTS = ("admission", "admissionChecks", "schedulingStats", "requeueState", "reclaimablePods")


def reparse_workload(prev: Workload, prev_data: Mapping, data: Mapping, cache: ParseCache | None = None) -> Workload:
    """parse_workload(data) for a new version of `prev_data` (which parsed into `prev`).

    Stored API objects are never mutated and a new version shares the parts it did not change
    with the old one (a status write keeps .spec, a decision keeps .status.admission...). A part
    that is the very same object as before parses to the same value, so it is taken from `prev`;
    everything else is parsed as parse_workload does, with the same checks and errors. Most
    writes to a Workload are status writes: this skips the spec and pod sets, most of the cost.
    """
    if (type(data) is not dict or type(prev_data) is not dict
            or data.get("apiVersion") != prev_data.get("apiVersion") or data.get("apiVersion") != V1BETA2_API
            or data.get("spec") is not prev_data.get("spec") or data.get("kind") != "Workload"):
        return parse_workload(data, cache)
    meta, prev_meta = data.get("metadata"), prev_data.get("metadata")
    if type(meta) is not dict or type(prev_meta) is not dict or meta.keys() != prev_meta.keys():
        return parse_workload(data, cache)
    for k, v in meta.items():
        if k != "resourceVersion" and v is not prev_meta[k]:
            return parse_workload(data, cache)
    f, _, _ = object_fields(data, "Workload", cache)
    rv = f.sub("metadata").str("resourceVersion")
    status = f.sub("status")
    raw_status = data.get("status")
    prev_status = prev_data.get("status")
    same = {k: False for k in _SHARED_STATUS_PARTS}
    if type(raw_status) is dict and type(prev_status) is dict:
        for k in _SHARED_STATUS_PARTS:
            v = raw_status.get(k)
            same[k] = v is not None and v is prev_status.get(k)
        if not same["schedulingStats"]:  # a new stats object often keeps its evictions list
            stats, prev_stats = raw_status.get("schedulingStats"), prev_status.get("schedulingStats")
            same["schedulingStats"] = (type(stats) is dict and type(prev_stats) is dict
                                       and stats.keys() == prev_stats.keys()
                                       and all(v is prev_stats[k] for k, v in stats.items()))
    reclaimable = (prev.reclaimable_pods if same["reclaimablePods"] else
                   {r.str("name", required=True): r.int("count", minimum=0) for r in status.items("reclaimablePods")})
    return replace(
        prev,
        meta=prev.meta if rv == prev.meta.resource_version else replace(prev.meta, resource_version=rv),
        conditions=parse_conditions(status),
        admission=prev.admission if same["admission"] else _parse_admission(status),
        requeue_state=prev.requeue_state if same["requeueState"] else _parse_requeue_state(status),
        admission_checks=prev.admission_checks if same["admissionChecks"] else _parse_checks(status),
        reclaimable_pods=reclaimable,
        accumulated_execution_seconds=status.int("accumulatedPastExecutionTimeSeconds"),
        evictions=prev.evictions if same["schedulingStats"] else _parse_evictions(status),
        requests_in_status=status.raw("resourceRequests") is not None,
    )


def with_conditions(prev: Workload, data: Mapping, cache: ParseCache | None = None) -> Workload:
    """`prev` with the status conditions `data` holds: for a writer that changed nothing else of
    `prev`'s API form (a forecast's PodsReady), the rest is not read again."""
    f, _, _ = object_fields(to_v1beta2(data), "Workload", cache)
    return replace(prev, conditions=parse_conditions(f.sub("status")))


def with_status(prev: Workload, data: Mapping, cache: ParseCache | None = None) -> Workload:
    """`prev` with the parts Kueue's status writers change read from `data`: the status,
    `spec.active` and `metadata.generation` (bumped by a spec write). The rest — identity,
    labels, pod sets, priority — stays `prev`'s, not parsed again: a writer never changes it."""
    f, _, _ = object_fields(to_v1beta2(data), "Workload", cache)
    status = f.sub("status")
    generation = f.sub("metadata").int("generation")
    meta = prev.meta if generation == prev.meta.generation else replace(prev.meta, generation=generation)
    return replace(
        prev,
        meta=meta,
        active=f.sub("spec").bool("active", True),
        conditions=parse_conditions(status),
        admission=_parse_admission(status),
        requeue_state=_parse_requeue_state(status),
        admission_checks=_parse_checks(status),
        reclaimable_pods={r.str("name", required=True): r.int("count", minimum=0) for r in status.items("reclaimablePods")},
        accumulated_execution_seconds=status.int("accumulatedPastExecutionTimeSeconds"),
        evictions=_parse_evictions(status),
        requests_in_status=status.raw("resourceRequests") is not None,
    )
