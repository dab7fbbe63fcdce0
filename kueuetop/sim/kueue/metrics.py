"""Kueue's own `/metrics` for the simulated cluster, in Prometheus text format 0.0.4.

Names, types, label names and help texts are Kueue's (pkg/metrics/metrics.go, v0.19; see
reference/kueue.md §7), as client_golang writes them: families sorted by name, labels sorted by
name, series sorted by label values, floats in Go's shortest form (`3.4359738368e+10`). Every
family but `kueue_build_info` carries `replica_role="standalone"` (one manager, no election).

Gauges are read from the Kueue controller's own snapshot (typed objects, `kueue/`) and the
engine's definitions of each fact: reserving and admitted counts and quota sums are the
`QueueTotals` ClusterQueue and LocalQueue status hold, cohort subtree sums come from the quota
tree (`admission/quota_tree.py`), queue activity from `admission/cq_status.py`, and pending
workloads from where the controller's queue holds them, active or inadmissible
(`queue_view.queued_workloads`, the visibility API's source too). Resource gauges are on (the
simulator runs with `metrics.enableClusterQueueResources: true`) and use Kueue's units: Kueue's
int64 resource values (milli-cpu) exported as cores for cpu, the plain count otherwise.
Counters and histograms only the simulator's event stream knows are accumulated in
`KueueCounters`.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kueuetop.admission.cq_status import cluster_queue_active, local_queue_active
from kueuetop.admission.queue_totals import QueueTotals
from kueuetop.admission.quota_tree import QuotaStructure
from kueuetop.kueue.quantity import CPU, INT64_MAX
from kueuetop.kueue.snapshot import ClusterSnapshot
from kueuetop.kueue.workload import Workload
from kueuetop.sim.kueue.queue_view import Queued

__all__ = [
    "ADMISSION_ATTEMPT_BUCKETS",
    "Histogram",
    "KueueBuildInfo",
    "KueueCounters",
    "exponential_buckets",
    "go_float",
    "render_kueue_metrics",
]

REPLICA_ROLE = "standalone"


def exponential_buckets(count: int) -> tuple[float, ...]:
    """Kueue's generateExponentialBuckets: 1, then 2.5 doubling (count bounds in all)."""
    return (1.0, *(2.5 * 2**i for i in range(count - 1)))


WAIT_BUCKETS = exponential_buckets(14)  # quota reserved / checks / ready wait times
ADMISSION_WAIT_BUCKETS = exponential_buckets(16)  # kueue_admission_wait_time_seconds, execution time
ADMISSION_ATTEMPT_BUCKETS = (.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10)  # client_golang DefBuckets


# --------------------------------------------------------------------------------------------
# What the simulator accumulates


@dataclass
class Histogram:
    buckets: tuple[float, ...]
    counts: list[int] = field(default_factory=list)  # per bucket, not cumulative
    sum: float = 0.0
    count: int = 0

    def __post_init__(self) -> None:
        if not self.counts:
            self.counts = [0] * len(self.buckets)

    def observe(self, value: float) -> None:
        if math.isnan(value):
            return
        i = bisect_left(self.buckets, value)  # le is inclusive
        if i < len(self.counts):
            self.counts[i] += 1
        self.sum += value
        self.count += 1


@dataclass
class KueueCounters:
    """Totals Kueue increments as events happen; the simulator calls the `record_*` methods.

    Keys are label values in the order of the metric's label names.
    """

    admission_attempts: dict[str, int] = field(default_factory=dict)  # result
    admission_attempt_duration: dict[str, Histogram] = field(default_factory=dict)
    quota_reserved: dict[tuple[str, str], int] = field(default_factory=dict)  # cq, priority_class
    quota_reserved_wait: dict[tuple[str, str], Histogram] = field(default_factory=dict)
    admitted: dict[tuple[str, str], int] = field(default_factory=dict)
    admission_wait: dict[tuple[str, str], Histogram] = field(default_factory=dict)
    admission_checks_wait: dict[tuple[str, str], Histogram] = field(default_factory=dict)
    finished: dict[tuple[str, str], int] = field(default_factory=dict)
    execution_time: dict[tuple[str, str], Histogram] = field(default_factory=dict)
    evicted: dict[tuple[str, str, str, str], int] = field(default_factory=dict)  # cq, reason, cause, pc
    preempted: dict[tuple[str, str], int] = field(default_factory=dict)  # preempting cq, reason
    # LocalQueue variants, keyed by (namespace, name, …)
    lq_quota_reserved: dict[tuple[str, str, str], int] = field(default_factory=dict)
    lq_admitted: dict[tuple[str, str, str], int] = field(default_factory=dict)
    lq_admission_wait: dict[tuple[str, str, str], Histogram] = field(default_factory=dict)
    lq_finished: dict[tuple[str, str, str], int] = field(default_factory=dict)
    lq_evicted: dict[tuple[str, str, str, str, str], int] = field(default_factory=dict)

    @staticmethod
    def _inc(d: dict, key: tuple | str) -> None:
        d[key] = d.get(key, 0) + 1

    @staticmethod
    def _observe(d: dict, key: tuple | str, buckets: tuple[float, ...], value: float | None) -> None:
        if value is None:
            return
        h = d.get(key)
        if h is None:
            h = d[key] = Histogram(buckets)
        h.observe(max(0.0, value))

    def record_admission_attempt(self, result: str, duration_s: float) -> None:
        """One scheduling cycle: result "success" (≥1 admitted) or "inadmissible"."""
        self._inc(self.admission_attempts, result)
        self._observe(self.admission_attempt_duration, result, ADMISSION_ATTEMPT_BUCKETS, duration_s)

    def record_quota_reserved(self, cq: str, lq_namespace: str, lq_name: str, priority_class: str,
                              wait_s: float) -> None:
        key = (cq, priority_class)
        self._inc(self.quota_reserved, key)
        self._observe(self.quota_reserved_wait, key, WAIT_BUCKETS, wait_s)
        self._inc(self.lq_quota_reserved, (lq_namespace, lq_name, priority_class))

    def record_admitted(self, cq: str, lq_namespace: str, lq_name: str, priority_class: str,
                        wait_s: float, checks_wait_s: float | None = None) -> None:
        """Admitted=True: wait from creation (or last requeue) to admission."""
        key = (cq, priority_class)
        self._inc(self.admitted, key)
        self._observe(self.admission_wait, key, ADMISSION_WAIT_BUCKETS, wait_s)
        self._observe(self.admission_checks_wait, key, WAIT_BUCKETS, checks_wait_s)
        lq_key = (lq_namespace, lq_name, priority_class)
        self._inc(self.lq_admitted, lq_key)
        self._observe(self.lq_admission_wait, lq_key, WAIT_BUCKETS, wait_s)

    def record_finished(self, cq: str, lq_namespace: str, lq_name: str, priority_class: str,
                        execution_s: float | None = None) -> None:
        key = (cq, priority_class)
        self._inc(self.finished, key)
        self._observe(self.execution_time, key, ADMISSION_WAIT_BUCKETS, execution_s)
        self._inc(self.lq_finished, (lq_namespace, lq_name, priority_class))

    def record_eviction(self, cq: str, lq_namespace: str, lq_name: str, reason: str,
                        underlying_cause: str, priority_class: str) -> None:
        """reason: Preempted, PodsReadyTimeout, AdmissionCheck, ClusterQueueStopped, LocalQueueStopped,
        NodeFailures, Deactivated; underlying_cause "" or e.g. RequeuingLimitExceeded."""
        self._inc(self.evicted, (cq, reason, underlying_cause, priority_class))
        self._inc(self.lq_evicted, (lq_namespace, lq_name, reason, underlying_cause, priority_class))

    def record_preemption(self, preempting_cq: str, reason: str) -> None:
        """reason: InClusterQueue, InCohortReclamation, InCohortFairSharing, InCohortReclaimWhileBorrowing."""
        self._inc(self.preempted, (preempting_cq, reason))


@dataclass(frozen=True)
class KueueBuildInfo:
    git_version: str = "v0.19.2"
    git_commit: str = "kueuetop-sim"
    build_date: str = "2026-08-20T00:00:00Z"
    go_version: str = "go1.25.0"
    compiler: str = "gc"
    platform: str = "linux/amd64"


# --------------------------------------------------------------------------------------------
# Text format


def go_float(value: float) -> str:
    """A float as Go's strconv.FormatFloat(v, 'g', -1, 64) prints it (client_golang's format):
    shortest round-trip digits, exponent form when the exponent is < -4 or >= 6."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    sign, digit_tuple, exp = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exp, int)
    ds = "".join(map(str, digit_tuple))
    x = len(ds) + exp - 1  # decimal exponent of the leading digit
    neg = "-" if sign else ""
    if x < -4 or x >= 6:
        mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        return f"{neg}{mant}e{'-' if x < 0 else '+'}{abs(x):02d}"
    if x < 0:
        return f"{neg}0.{'0' * (-x - 1)}{ds}"
    if len(ds) <= x + 1:
        return neg + ds + "0" * (x + 1 - len(ds))
    return f"{neg}{ds[: x + 1]}.{ds[x + 1:]}"


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


Labels = tuple[tuple[str, str], ...]


class _Registry:
    """Families by name; each family's series by sorted label tuple."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.families: dict[str, tuple[str, str, dict[Labels, Any]]] = {}

    def _series(self, name: str, typ: str, help_: str) -> dict[Labels, Any]:
        fam = self.families.get(name)
        if fam is None:
            fam = self.families[name] = (typ, help_, {})
        return fam[2]

    def _labels(self, labels: Mapping[str, str], role: bool) -> Labels:
        items = dict(labels)
        if role:
            items["replica_role"] = self.role
        return tuple(sorted(items.items()))

    def set(self, name: str, typ: str, help_: str, labels: Mapping[str, str], value: float,
            *, role: bool = True) -> None:
        self._series(name, typ, help_)[self._labels(labels, role)] = float(value)

    def add(self, name: str, typ: str, help_: str, labels: Mapping[str, str], value: float) -> None:
        series = self._series(name, typ, help_)
        key = self._labels(labels, True)
        series[key] = series.get(key, 0.0) + float(value)

    def histogram(self, name: str, help_: str, labels: Mapping[str, str], h: Histogram) -> None:
        self._series(name, "histogram", help_)[self._labels(labels, True)] = h

    def render(self) -> str:
        out: list[str] = []
        for name in sorted(self.families):
            typ, help_, series = self.families[name]
            if not series:
                continue
            out.append(f"# HELP {name} {_escape_help(help_)}\n# TYPE {name} {typ}\n")
            # client_golang orders series by label values (label names are the same in a family).
            for key in sorted(series, key=lambda k: tuple(v for _, v in k)):
                value = series[key]
                if isinstance(value, Histogram):
                    out.append(_histogram_lines(name, key, value))
                    continue
                out.append(f"{name}{_fmt_labels(key)} {go_float(value)}\n")
        return "".join(out)


def _fmt_labels(key: Labels, extra: str = "") -> str:
    parts = [f'{k}="{_escape_label(v)}"' for k, v in key]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


def _histogram_lines(name: str, key: Labels, h: Histogram) -> str:
    lines = []
    cumulative = 0
    for bound, n in zip(h.buckets, h.counts, strict=False):
        cumulative += n
        le = 'le="' + go_float(bound) + '"'
        lines.append(f"{name}_bucket{_fmt_labels(key, le)} {cumulative}\n")
    inf = 'le="+Inf"'
    lines.append(f"{name}_bucket{_fmt_labels(key, inf)} {h.count}\n")
    lines.append(f"{name}_sum{_fmt_labels(key)} {go_float(h.sum)}\n")
    lines.append(f"{name}_count{_fmt_labels(key)} {h.count}\n")
    return "".join(lines)


# --------------------------------------------------------------------------------------------
# Help texts (verbatim from Kueue)

_EVICTION_REASONS = """The label 'reason' can have the following values:
- "Preempted" means that the workload was evicted in order to free resources for a workload with a higher priority or reclamation of nominal quota.
- "PodsReadyTimeout" means that the eviction took place due to a PodsReady timeout.
- "AdmissionCheck" means that the workload was evicted because at least one admission check transitioned to False.
- "ClusterQueueStopped" means that the workload was evicted because the ClusterQueue is stopped.
- "LocalQueueStopped" means that the workload was evicted because the LocalQueue is stopped.
- "NodeFailures" means that the workload was evicted due to node failures when using TopologyAwareScheduling.
- "Deactivated" means that the workload was evicted because spec.active is set to false.
The label 'underlying_cause' can have the following values:
- "" means that the value in 'reason' label is the root cause for eviction.
- "AdmissionCheck" means that the workload was evicted by Kueue due to a rejected admission check.
- "MaximumExecutionTimeExceeded" means that the workload was evicted by Kueue due to maximum execution time exceeded.
- "RequeuingLimitExceeded" means that the workload was evicted by Kueue due to requeuing limit exceeded."""
_PENDING_STATUS = """'status' can have the following values:
- "active" means that the workloads are in the admission queue.
- "inadmissible" means there was a failed admission attempt for these workloads and they won't be retried until cluster conditions, which could make this workload admissible, change"""
_ATTEMPT_RESULT = """The label 'result' can have the following values:
- 'success' means that at least one workload was admitted.,
- 'inadmissible' means that no workload was admitted."""

HELP: dict[str, str] = {
    "kueue_admission_attempts_total": "The total number of attempts to admit workloads.\n"
    "Each admission attempt might try to admit more than one workload.\n" + _ATTEMPT_RESULT,
    "kueue_admission_attempt_duration_seconds": "The latency of an admission attempt.\n" + _ATTEMPT_RESULT,
    "kueue_build_info": "Kueue build information. 1 labeled by git version, git commit, build date, go version, "
    "compiler, platform",
    "kueue_pending_workloads": "The number of pending workloads, per 'cluster_queue' and 'status'.\n" + _PENDING_STATUS,
    "kueue_local_queue_pending_workloads": "The number of pending workloads, per 'local_queue' and 'status'.\n"
    + _PENDING_STATUS,
    "kueue_finished_workloads": "The number of finished workloads per 'cluster_queue'.",
    "kueue_local_queue_finished_workloads": "The number of finished workloads, per 'local_queue'.",
    "kueue_quota_reserved_workloads_total": "The total number of quota reserved workloads per 'cluster_queue'",
    "kueue_local_queue_quota_reserved_workloads_total": "The total number of quota reserved workloads per 'local_queue'",
    "kueue_finished_workloads_total": "The total number of finished workloads per 'cluster_queue'",
    "kueue_local_queue_finished_workloads_total": "The total number of finished workloads per 'local_queue'",
    "kueue_execution_time_seconds": "The total execution time of a finished admitted workload (from first admission "
    "to completion, including time across evict/readmit cycles), per 'cluster_queue'",
    "kueue_quota_reserved_wait_time_seconds": "The time between a workload was created or requeued until it got "
    "quota reservation, per 'cluster_queue'",
    "kueue_admitted_workloads_total": "The total number of admitted workloads per 'cluster_queue'",
    "kueue_local_queue_admitted_workloads_total": "The total number of admitted workloads per 'local_queue'",
    "kueue_admission_wait_time_seconds": "The time between a workload was created or requeued until admission, "
    "per 'cluster_queue'",
    "kueue_local_queue_admission_wait_time_seconds": "The time between a workload was created or requeued until "
    "admission, per 'local_queue'",
    "kueue_admission_checks_wait_time_seconds": "The time from when a workload got the quota reservation until "
    "admission, per 'cluster_queue'",
    "kueue_evicted_workloads_total": "The number of evicted workloads per 'cluster_queue',\n" + _EVICTION_REASONS,
    "kueue_local_queue_evicted_workloads_total": "The number of evicted workloads per 'local_queue',\n"
    + _EVICTION_REASONS,
    "kueue_preempted_workloads_total": """The number of preempted workloads per 'preempting_cluster_queue',
The label 'reason' can have the following values:
- "InClusterQueue" means that the workload was preempted by a workload in the same ClusterQueue.
- "InCohortReclamation" means that the workload was preempted by a workload in the same cohort due to reclamation of nominal quota.
- "InCohortFairSharing" means that the workload was preempted by a workload in the same cohort Fair Sharing.
- "InCohortReclaimWhileBorrowing" means that the workload was preempted by a workload in the same cohort due to reclamation of nominal quota while borrowing.""",
    "kueue_reserving_active_workloads": "The number of Workloads that are reserving quota, per 'cluster_queue'",
    "kueue_local_queue_reserving_active_workloads": "The number of Workloads that are reserving quota, per 'localQueue'",
    "kueue_admitted_active_workloads": "The number of admitted Workloads that are active, per 'cluster_queue'",
    "kueue_local_queue_admitted_active_workloads": "The number of admitted Workloads that are active, per 'localQueue'",
    "kueue_cluster_queue_status": "Reports 'cluster_queue' with its 'status' (with possible values 'pending', "
    "'active' or 'terminated').\nFor a ClusterQueue, the metric only reports a value of 1 for one of the statuses.",
    "kueue_local_queue_status": "Reports 'localQueue' with its 'active' status (with possible values 'True', "
    "'False', or 'Unknown').\nFor a LocalQueue, the metric only reports a value of 1 for one of the statuses.",
    "kueue_cluster_queue_resource_reservation": "Reports the cluster_queue's total resource reservation within all "
    "the flavors",
    "kueue_cluster_queue_resource_usage": "Reports the cluster_queue's total resource usage within all the flavors",
    "kueue_local_queue_resource_reservation": "Reports the localQueue's total resource reservation within all the "
    "flavors",
    "kueue_local_queue_resource_usage": "Reports the localQueue's total resource usage within all the flavors",
    "kueue_cluster_queue_nominal_quota": "Reports the cluster_queue's resource nominal quota within all the flavors",
    "kueue_cluster_queue_borrowing_limit": "Reports the cluster_queue's resource borrowing limit within all the "
    "flavors. If borrowingLimit is unset, this metric reports +Inf.",
    "kueue_cluster_queue_lending_limit": "Reports the cluster_queue's resource lending limit within all the flavors. "
    "If lendingLimit is unset, this metric reports +Inf.",
    "kueue_cohort_subtree_quota": "Reports the cohort's nominal quota aggregated within the cohort's subtree. "
    "The values are reported per resource and flavor",
    "kueue_cohort_subtree_admitted_workloads_total": "The total number of admitted workloads per cohort's subtree",
    "kueue_cohort_subtree_resource_reservations": "Reports the cohort's resource reservations aggregated within the "
    "cohort's subtree. The values are reported per resource and flavor",
    "kueue_cohort_subtree_admitted_active_workloads": "The number of admitted Workloads that are active, per "
    "cohort's subtree",
    "kueue_cohort_info": "Reports Cohort hierarchy information. The metric has value 1 and can be joined using labels.",
    "kueue_cluster_queue_info": "Reports ClusterQueue hierarchy information. The metric has value 1 and can be "
    "joined using labels.",
}


# --------------------------------------------------------------------------------------------
# Reading the controller's snapshot


FlavorRes = tuple[str, str]


def _as_float(resource: str, value: int) -> float:
    """A Kueue resource value (kueue/quantity.py `resource_value`: milli-units for cpu, whole
    units otherwise, saturated at int64) as Kueue exports it (v0.19: pkg/resources/amount.go
    Amount.AsApproximateFloat64, called by clusterQueue.reportResourceMetrics,
    LocalQueue.reportResourceMetrics and applyCohortMetricPoint): cores for cpu, the plain
    count otherwise, and +Inf for an amount too large for int64 (AmountFromQuantity's
    Unlimited: at least MaxInt64/1000 cores, or MaxInt64 of anything else)."""
    if resource == CPU:
        return math.inf if value >= _UNLIMITED_MILLI_CPU else value / 1000
    return math.inf if value >= INT64_MAX else float(value)


_UNLIMITED_MILLI_CPU = INT64_MAX // 1000 * 1000


@dataclass
class _QueueTally:
    active: int = 0
    inadmissible: int = 0
    reserving: int = 0
    admitted: int = 0
    finished: int = 0
    reservation: dict[FlavorRes, int] = field(default_factory=dict)  # Kueue resource values
    usage: dict[FlavorRes, int] = field(default_factory=dict)


def _add_usage(into: dict[FlavorRes, int], usage: Mapping[FlavorRes, int]) -> None:
    for fr, v in usage.items():
        into[fr] = into.get(fr, 0) + v


def _cq_status(snapshot: ClusterSnapshot, name: str) -> str:
    """Kueue's ClusterQueue status for kueue_cluster_queue_status: active, or terminating when
    deleted, else pending (Kueue: clusterQueue.updateQueueStatus; the Active condition the
    controller writes comes from the same `cluster_queue_active`)."""
    st = cluster_queue_active(snapshot, name)
    if st.active:
        return "active"
    return "terminating" if st.reason == "Terminating" else "pending"


# --------------------------------------------------------------------------------------------
# Rendering


def render_kueue_metrics(snapshot: ClusterSnapshot,
                         queued: Mapping[tuple[str, str], Queued],
                         counters: KueueCounters | None = None, *,
                         totals: QueueTotals | None = None,
                         build_info: KueueBuildInfo | None = None,
                         replica_role: str = REPLICA_ROLE,
                         resource_metrics: bool = True) -> str:
    """Kueue's `/metrics` text for the Kueue controller's snapshot.

    `queued` holds the pending workloads as the Kueue controller's queue does
    (`queue_view.queued_workloads`); `totals`: the `QueueTotals` the controller keeps over the
    snapshot's workloads (else summed here); `resource_metrics` mirrors enableClusterQueueResources.
    """
    reg = _Registry(replica_role)
    counters = counters or KueueCounters()
    info = build_info or KueueBuildInfo()
    reg.set("kueue_build_info", "gauge", HELP["kueue_build_info"], {
        "git_version": info.git_version, "git_commit": info.git_commit, "build_date": info.build_date,
        "go_version": info.go_version, "compiler": info.compiler, "platform": info.platform}, 1, role=False)

    cq_tally = {name: _QueueTally() for name in snapshot.cluster_queues}
    lq_tally = {key: _QueueTally() for key in snapshot.local_queues}
    for wl in snapshot.workloads.values():
        _tally_workload(snapshot, wl, cq_tally, lq_tally, queued)
    _reservations(snapshot, totals, cq_tally, lq_tally)

    structure = QuotaStructure.build(snapshot.cluster_queues, snapshot.cohorts)
    statuses = {name: _cq_status(snapshot, name) for name in snapshot.cluster_queues}
    _cluster_queue_series(reg, snapshot, structure, statuses, cq_tally, resource_metrics)
    _local_queue_series(reg, snapshot, structure, lq_tally, resource_metrics)
    _cohort_series(reg, snapshot, structure, cq_tally, counters)
    _counter_series(reg, counters)
    return reg.render()


def _tally_workload(snapshot: ClusterSnapshot, wl: Workload, cq_tally: dict[str, _QueueTally],
                    lq_tally: dict[tuple[str, str], _QueueTally],
                    queued: Mapping[tuple[str, str], Queued]) -> None:
    """Finished and pending counts; what holds quota is summed by `QueueTotals` (below)."""
    lq_key = (wl.namespace, wl.queue_name)
    lqt = lq_tally.get(lq_key)
    if wl.is_finished:
        cq_t = cq_tally.get(snapshot.cluster_queue_of(wl) or "")
        if cq_t is not None:
            cq_t.finished += 1
        if lqt is not None:
            lqt.finished += 1
        return
    q = queued.get(wl.key)
    if q is None:
        return  # holds quota, or in no queue: deactivated, gated, no (open) LocalQueue, …
    for tally in (cq_tally.get(q.cluster_queue), lqt):
        if tally is None:
            continue
        if q.inadmissible:
            tally.inadmissible += 1
        else:
            tally.active += 1


def _reservations(snapshot: ClusterSnapshot, totals: QueueTotals | None, cq_tally: dict[str, _QueueTally],
                  lq_tally: dict[tuple[str, str], _QueueTally]) -> None:
    """Reserving and admitted counts and quota sums: the same totals the controller writes into
    ClusterQueue and LocalQueue status (admission/queue_totals.py). A workload counts as admitted
    whether or not it is active, as Kueue's cache counts it (clusterQueue.updateWorkloadUsage)."""
    if totals is None:
        totals = QueueTotals()
        for key, wl in snapshot.workloads.items():
            totals.set(key, wl, snapshot.cluster_queue_of(wl))
    for tally_of, read in ((cq_tally, totals.cq_reservations), (lq_tally, totals.lq_reservations)):
        for key, t in tally_of.items():
            t.reserving, t.admitted, t.reservation, t.usage = read(key)


def _cluster_queue_series(reg: _Registry, snapshot: ClusterSnapshot, structure: QuotaStructure,
                          statuses: Mapping[str, str], tally: Mapping[str, _QueueTally],
                          resource_metrics: bool) -> None:
    for name, cq in snapshot.cluster_queues.items():
        t = tally[name]
        cq_l = {"cluster_queue": name}
        for status, n in (("active", t.active), ("inadmissible", t.inadmissible)):
            reg.set("kueue_pending_workloads", "gauge", HELP["kueue_pending_workloads"],
                    {"cluster_queue": name, "status": status}, n)
        reg.set("kueue_reserving_active_workloads", "gauge", HELP["kueue_reserving_active_workloads"], cq_l,
                t.reserving)
        reg.set("kueue_admitted_active_workloads", "gauge", HELP["kueue_admitted_active_workloads"], cq_l,
                t.admitted)
        reg.set("kueue_finished_workloads", "gauge", HELP["kueue_finished_workloads"], cq_l, t.finished)
        for status in ("pending", "active", "terminating"):
            reg.set("kueue_cluster_queue_status", "gauge", HELP["kueue_cluster_queue_status"],
                    {"cluster_queue": name, "status": status}, 1 if statuses[name] == status else 0)
        if not resource_metrics:
            continue
        for (flavor, res), q in structure.cqs[name].quotas.items():
            labels = {"cohort": cq.cohort, "cluster_queue": name, "flavor": flavor, "resource": res}
            for metric, value in (
                ("kueue_cluster_queue_nominal_quota", q.nominal),
                ("kueue_cluster_queue_borrowing_limit", q.borrowing_limit),
                ("kueue_cluster_queue_lending_limit", q.lending_limit),
                ("kueue_cluster_queue_resource_reservation", t.reservation.get((flavor, res), 0)),
                ("kueue_cluster_queue_resource_usage", t.usage.get((flavor, res), 0)),
            ):
                reg.set(metric, "gauge", HELP[metric], labels, math.inf if value is None else _as_float(res, value))


def _local_queue_series(reg: _Registry, snapshot: ClusterSnapshot, structure: QuotaStructure,
                        tally: Mapping[tuple[str, str], _QueueTally], resource_metrics: bool) -> None:
    for (ns, name), lq in snapshot.local_queues.items():
        t = tally[(ns, name)]
        base = {"name": name, "namespace": ns}
        for status, n in (("active", t.active), ("inadmissible", t.inadmissible)):
            reg.set("kueue_local_queue_pending_workloads", "gauge", HELP["kueue_local_queue_pending_workloads"],
                    {**base, "status": status}, n)
        for metric, n in (("kueue_local_queue_reserving_active_workloads", t.reserving),
                          ("kueue_local_queue_admitted_active_workloads", t.admitted),
                          ("kueue_local_queue_finished_workloads", t.finished)):
            reg.set(metric, "gauge", HELP[metric], base, n)
        current = "True" if local_queue_active(snapshot, (ns, name)).active else "False"
        for status in ("True", "False", "Unknown"):
            reg.set("kueue_local_queue_status", "gauge", HELP["kueue_local_queue_status"],
                    {**base, "active": status}, 1 if status == current else 0)
        if not resource_metrics:
            continue
        # Per quota of its ClusterQueue (Kueue v0.19: LocalQueue.reportResourceMetrics(cqQuotas)).
        node = structure.cqs.get(lq.cluster_queue)
        for flavor, res in node.quotas if node is not None else ():
            labels = {**base, "flavor": flavor, "resource": res}
            reg.set("kueue_local_queue_resource_reservation", "gauge", HELP["kueue_local_queue_resource_reservation"],
                    labels, _as_float(res, t.reservation.get((flavor, res), 0)))
            reg.set("kueue_local_queue_resource_usage", "gauge", HELP["kueue_local_queue_resource_usage"],
                    labels, _as_float(res, t.usage.get((flavor, res), 0)))


def _cohort_series(reg: _Registry, snapshot: ClusterSnapshot, structure: QuotaStructure,
                   tally: Mapping[str, _QueueTally], counters: KueueCounters) -> None:
    """Cohort gauges from the engine's quota tree (admission/quota_tree.py): its subtree quota is
    Kueue's SubtreeQuota (own nominal plus what each child may lend). A tree with a cycle in its
    parent links has no subtree series (Kueue: collectCohortMetricPoints skips HasCycle) and its
    ClusterQueues no parent nor root (clusterQueue.parentAndRootCohort)."""
    for name, node in structure.cohorts.items():
        reg.set("kueue_cohort_info", "gauge", HELP["kueue_cohort_info"],
                {"cohort": name, "parent_cohort": node.parent.name if node.parent is not None else "",
                 "root_cohort": node.root().name}, 1)
    for name, cq in snapshot.cluster_queues.items():
        node = structure.cqs[name]
        linked = node.parent is not None and not node.in_cycle
        reg.set("kueue_cluster_queue_info", "gauge", HELP["kueue_cluster_queue_info"],
                {"cluster_queue": name, "parent_cohort": cq.cohort if linked else "",
                 "root_cohort": node.root().name if linked else ""}, 1)

    for name, node in structure.cohorts.items():
        if node.in_cycle:
            continue
        for (flavor, res), v in node.subtree.items():
            if v > 0:  # Kueue clears non-positive subtree series
                reg.set("kueue_cohort_subtree_quota", "gauge", HELP["kueue_cohort_subtree_quota"],
                        {"cohort": name, "flavor": flavor, "resource": res}, _as_float(res, v))
        reserved: dict[FlavorRes, int] = {}
        active = 0
        for cq_node in node.subtree_cqs():
            _add_usage(reserved, tally[cq_node.name].reservation)
            active += tally[cq_node.name].admitted
        for (flavor, res), v in reserved.items():
            if v > 0:
                reg.set("kueue_cohort_subtree_resource_reservations", "gauge",
                        HELP["kueue_cohort_subtree_resource_reservations"],
                        {"cohort": name, "flavor": flavor, "resource": res}, _as_float(res, v))
        if node.child_cqs or node.child_cohorts:
            reg.set("kueue_cohort_subtree_admitted_active_workloads", "gauge",
                    HELP["kueue_cohort_subtree_admitted_active_workloads"], {"cohort": name}, active)
    for (cq_name, pc), n in counters.admitted.items():
        cq_node = structure.cqs.get(cq_name)
        for cohort in cq_node.path_to_root() if cq_node is not None and not cq_node.in_cycle else ():
            reg.add("kueue_cohort_subtree_admitted_workloads_total", "counter",
                    HELP["kueue_cohort_subtree_admitted_workloads_total"],
                    {"cohort": cohort.name, "priority_class": pc}, n)


def _counter_series(reg: _Registry, c: KueueCounters) -> None:
    def counter(metric: str, names: tuple[str, ...], values: Mapping[Any, int]) -> None:
        for key, n in values.items():
            vals = key if isinstance(key, tuple) else (key,)
            reg.set(metric, "counter", HELP[metric], dict(zip(names, vals, strict=True)), n)

    def hist(metric: str, names: tuple[str, ...], values: Mapping[Any, Histogram]) -> None:
        for key, h in values.items():
            vals = key if isinstance(key, tuple) else (key,)
            reg.histogram(metric, HELP[metric], dict(zip(names, vals, strict=True)), h)

    cq_pc = ("cluster_queue", "priority_class")
    lq_pc = ("namespace", "name", "priority_class")
    counter("kueue_admission_attempts_total", ("result",), c.admission_attempts)
    hist("kueue_admission_attempt_duration_seconds", ("result",), c.admission_attempt_duration)
    counter("kueue_quota_reserved_workloads_total", cq_pc, c.quota_reserved)
    hist("kueue_quota_reserved_wait_time_seconds", cq_pc, c.quota_reserved_wait)
    counter("kueue_admitted_workloads_total", cq_pc, c.admitted)
    hist("kueue_admission_wait_time_seconds", cq_pc, c.admission_wait)
    hist("kueue_admission_checks_wait_time_seconds", cq_pc, c.admission_checks_wait)
    counter("kueue_finished_workloads_total", cq_pc, c.finished)
    hist("kueue_execution_time_seconds", cq_pc, c.execution_time)
    counter("kueue_evicted_workloads_total", ("cluster_queue", "reason", "underlying_cause", "priority_class"),
            c.evicted)
    counter("kueue_preempted_workloads_total", ("preempting_cluster_queue", "reason"), c.preempted)
    counter("kueue_local_queue_quota_reserved_workloads_total", lq_pc, c.lq_quota_reserved)
    counter("kueue_local_queue_admitted_workloads_total", lq_pc, c.lq_admitted)
    hist("kueue_local_queue_admission_wait_time_seconds", lq_pc, c.lq_admission_wait)
    counter("kueue_local_queue_finished_workloads_total", lq_pc, c.lq_finished)
    counter("kueue_local_queue_evicted_workloads_total",
            ("namespace", "name", "reason", "underlying_cause", "priority_class"), c.lq_evicted)
