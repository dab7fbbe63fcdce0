"""Write engine decisions into API objects (v1beta2 dicts) exactly as Kueue writes them.

Workload status follows Kueue's pkg/workload (SetQuotaReservation, UnsetQuotaReservationWithCondition,
SyncAdmittedCondition, SetRequeuedCondition, UpdateRequeueState) and pkg/workload/evict
(prepareForEviction, eviction counters); see reference/kueue.md §4.3 and §5.2. Conditions follow
apimeta.SetStatusCondition: lastTransitionTime changes only when the status flips, reason,
message and observedGeneration are always rewritten.

The job-integration half of an eviction (the job stopped, quota released, Requeued set) is
`release_quota`, called by whoever decides that the workload's pods are gone.

Nothing here mutates its arguments; every function returns new dicts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from kueuetop.admission import cq_status
from kueuetop.admission.decisions import (
    ADMISSION_CHECK,
    DEACTIVATED,
    PODS_READY_TIMEOUT,
    PREEMPTED,
    Admit,
    Deactivate,
    Decision,
    Evict,
    MarkAdmitted,
    Pending,
    Preempt,
    ReleaseReservation,
    Requeue,
    ResetRequeueState,
)
from kueuetop.admission.queue_totals import Reservations, local_queue_open, workload_may_queue
from kueuetop.kueue.cluster_queue import STOP_NONE
from kueuetop.kueue.config import KueueConfig
from kueuetop.kueue.fields import parse_time_or_none
from kueuetop.kueue.json_copy import clone
from kueuetop.kueue.parse_cache import ParseCache
from kueuetop.kueue.quantity import format_quantity_for_api
from kueuetop.kueue.quota import ResourceGroup
from kueuetop.kueue.snapshot import ClusterSnapshot
from kueuetop.kueue.workload import PodSetAssignment, Workload, parse_workload, workload_pod_sets
from kueuetop.kueue.workload_api import resource_requests_to_api

if TYPE_CHECKING:
    from kueuetop.admission.engine_cache import EngineCache

KUEUE_API = "kueue.x-k8s.io/v1beta2"
GRANULAR_GATE = "UnadmittedWorkloadsObservability"  # beta, off in Kueue 0.19 (legacy reasons)
NODE_FAILURES = "NodeFailures"
MAX_CONDITION_MESSAGE = 32 * 1024  # api.TruncateConditionMessage

# Requeued=False reasons the workload controller turns into BackoffFinished once requeueAt passes.
BACKOFF_REASONS = (PODS_READY_TIMEOUT, ADMISSION_CHECK)

_HUMAN_PREEMPTION = MappingProxyType({
    "InClusterQueue": "prioritization in the ClusterQueue",
    "InCohortReclamation": "reclamation within the cohort",
    "InCohortFairSharing": "Fair Sharing within the cohort",
    "InCohortReclaimWhileBorrowing": "reclamation within the cohort while borrowing",
})


# time and conditions ---------------------------------------------------------------------------

def fmt_time(t: float) -> str:
    """metav1.Time: RFC 3339 at second precision (Kubernetes truncates)."""
    return datetime.fromtimestamp(math.floor(t), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_time = parse_time_or_none


def granular_reasons(config: KueueConfig | None) -> bool:
    """UnadmittedWorkloadsObservability: granular QuotaReserved/Admitted reasons instead of legacy ones."""
    return bool(config and config.feature_gates.get(GRANULAR_GATE, False))


def _truncate(message: str) -> str:
    if len(message) <= MAX_CONDITION_MESSAGE:
        return message
    return message[: MAX_CONDITION_MESSAGE - 3] + "..."


def find_condition(obj: Mapping, type_: str) -> dict | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == type_:
            return c
    return None


def _is_true(obj: Mapping, type_: str) -> bool:
    c = find_condition(obj, type_)
    return c is not None and c.get("status") == "True"


def set_condition(conditions: list[dict], type_: str, status: bool, reason: str, message: str, now: float,
                  generation: int | None) -> bool:
    """apimeta.SetStatusCondition; returns whether anything changed."""
    st = "True" if status else "False"
    message = _truncate(message)
    for c in conditions:
        if c.get("type") != type_:
            continue
        changed = False
        if c.get("status") != st:
            c["status"] = st
            c["lastTransitionTime"] = fmt_time(now)
            changed = True
        if c.get("reason") != reason:
            c["reason"] = reason
            changed = True
        if c.get("message") != message:
            c["message"] = message
            changed = True
        if generation:
            if c.get("observedGeneration") != generation:
                c["observedGeneration"] = generation
                changed = True
        elif "observedGeneration" in c:
            del c["observedGeneration"]
            changed = True
        return changed
    new: dict[str, Any] = {"type": type_, "status": st}
    if generation:
        new["observedGeneration"] = generation
    new.update(lastTransitionTime=fmt_time(now), reason=reason, message=message)
    conditions.append(new)
    return True


def _remove_condition(conditions: list[dict], type_: str) -> None:
    conditions[:] = [c for c in conditions if c.get("type") != type_]


class _Wl:
    """A mutable working copy of a Workload dict."""

    def __init__(self, wl: Mapping, now: float, granular: bool) -> None:
        # Only .status (and spec.active, for Deactivate) is ever written: copy those, share the
        # rest (pod templates are most of a Workload's size) with the caller's read-only input.
        self.obj: dict = dict(wl)
        self.obj["status"] = clone(self.obj.get("status"))
        if isinstance(self.obj.get("spec"), dict):
            self.obj["spec"] = dict(self.obj["spec"])
        self.now = now
        self.granular = granular
        meta = self.obj["metadata"] = dict(self.obj.get("metadata") or {})
        self.generation: int | None = meta.get("generation") or None
        status = self.obj.get("status")
        if not isinstance(status, dict):
            status = self.obj["status"] = {}
        self.status: dict = status
        conds = status.get("conditions")
        if not isinstance(conds, list):
            conds = []
        self.conditions: list[dict] = conds

    def set(self, type_: str, status: bool, reason: str, message: str, *, gen: bool = True) -> bool:
        return set_condition(self.conditions, type_, status, reason, message, self.now,
                             self.generation if gen else None)

    def cond(self, type_: str) -> dict | None:
        for c in self.conditions:
            if c.get("type") == type_:
                return c
        return None

    def is_true(self, type_: str) -> bool:
        c = self.cond(type_)
        return c is not None and c.get("status") == "True"

    def done(self) -> dict:
        if self.conditions:
            self.status["conditions"] = self.conditions
        else:
            self.status.pop("conditions", None)
        if self.status.get("admission") is not None:
            # Kueue's admission patch clears resourceRequests: the admission's resourceUsage supersedes it.
            self.status.pop("resourceRequests", None)
        for key in ("admissionChecks", "requeueState"):
            if not self.status.get(key):
                self.status.pop(key, None)
        return self.obj

    # pkg/workload helpers ----------------------------------------------------------------------

    def all_checks_ready(self) -> bool:
        return all(c.get("state") == "Ready" for c in self.status.get("admissionChecks") or [])

    def sync_admitted(self) -> bool:
        """SyncAdmittedCondition, including accumulatedPastExecutionTimeSeconds on un-admission."""
        reserved = self.is_true("QuotaReserved")
        ready = self.all_checks_ready()
        admitted = self.is_true("Admitted")
        if self.granular:
            if self.cond("QuotaReserved") is None and self.cond("Admitted") is None:
                return False
        elif admitted == (reserved and ready):
            return False
        status, reason, message = True, "Admitted", "The workload is admitted"
        if not reserved and not ready:
            status = False
            if self.granular:
                reason, message = "NoReservation", "The workload has no reservation"
            else:
                reason, message = "NoReservationUnsatisfiedChecks", "The workload has no reservation and not all checks ready"
        elif not reserved:
            status, reason, message = False, "NoReservation", "The workload has no reservation"
        elif not ready:
            status = False
            reason = "UnsatisfiedAdmissionChecks" if self.granular else "UnsatisfiedChecks"
            message = "The workload has not all checks ready"
        if admitted and not status:
            prev = self.cond("Admitted")
            since = _time(prev.get("lastTransitionTime")) if prev else None
            if since is not None:
                past = self.status.get("accumulatedPastExecutionTimeSeconds") or 0
                self.status["accumulatedPastExecutionTimeSeconds"] = past + int(self.now - since)
        return self.set("Admitted", status, reason, message)

    def unset_quota_reservation(self, reason: str, message: str) -> bool:
        """UnsetQuotaReservationWithCondition; whether anything changed."""
        changed = self.set("QuotaReserved", False, reason, message)
        changed = self.status.pop("admission", None) is not None or changed
        return self.sync_admitted() or changed

    def set_requeued(self, reason: str, message: str, status: bool) -> bool:
        return self.set("Requeued", status, reason, message)

    def set_requeue_at(self, at: float) -> None:
        """SetRequeueState: never move an existing requeueAt earlier."""
        rs = self.status.setdefault("requeueState", {})
        current = _time(rs.get("requeueAt"))
        if current is None or current < math.floor(at):
            rs["requeueAt"] = fmt_time(at)

    def prepare_for_eviction(self, reason: str, message: str) -> None:
        """evict.prepareForEviction."""
        self.set("Evicted", True, reason, message)
        self.status.pop("clusterName", None)
        self.status.pop("nominatedClusterNames", None)
        for check in self.status.get("admissionChecks") or []:
            state = check.get("state", "Pending")
            if state == "Pending":
                continue
            if state == "Retry":
                check["retryCount"] = int(check.get("retryCount") or 0) + 1
            else:
                check.pop("retryCount", None)
            check["state"] = "Pending"
            check["message"] = "Reset to Pending after eviction. Previously: " + state
            check["lastTransitionTime"] = fmt_time(self.now)
            check.pop("podSetUpdates", None)
        self.status.pop("unhealthyNodes", None)
        gated = self.cond("BlockedOnPreemptionGates")
        if gated is not None and gated.get("status") == "True":
            self.set("BlockedOnPreemptionGates", False, reason, message)
        for gate in self.status.get("preemptionGates") or []:
            gate["position"] = "Closed"
            gate["lastTransitionTime"] = fmt_time(self.now)

    def count_eviction(self, reason: str, cause: str) -> None:
        stats = self.status.setdefault("schedulingStats", {})
        evictions = stats.setdefault("evictions", [])
        for e in evictions:
            if e.get("reason") == reason and (e.get("underlyingCause") or "") == cause:
                e["count"] = int(e.get("count") or 0) + 1
                return
        evictions.append({"reason": reason, "underlyingCause": cause, "count": 1})

    def evict(self, reason: str, message: str, cause: str = "") -> None:
        """evict.Evict: Evicted=True, checks reset, counters; Deactivated gets its cause appended."""
        evicted_reason = f"{reason}DueTo{cause}" if reason == DEACTIVATED and cause else reason
        self.prepare_for_eviction(evicted_reason, message)
        self.count_eviction(reason, cause)


# workload decisions ----------------------------------------------------------------------------

def assignment_to_api(psa: PodSetAssignment) -> dict:
    out: dict[str, Any] = {"name": psa.name, "flavors": dict(psa.flavors),
                           "resourceUsage": {r: format_quantity_for_api(r, v) for r, v in psa.resource_usage.items()}}
    if psa.count is not None:
        out["count"] = psa.count
    return out


def resource_requests(wl: Mapping, cache: ParseCache | None = None) -> list[dict]:
    """status.resourceRequests: per pod set, the total requests of all its pods."""
    return resource_requests_to_api(workload_pod_sets(wl, cache))


def _sync_checks(w: _Wl, required: Iterable[str]) -> None:
    """syncAdmissionCheckConditions: required checks present (new ones Pending), others dropped, by name."""
    existing = {c.get("name"): c for c in w.status.get("admissionChecks") or []}
    checks = []
    for name in sorted(set(required)):
        checks.append(existing.get(name) or {"name": name, "state": "Pending",
                                             "lastTransitionTime": fmt_time(w.now), "message": ""})
    w.status["admissionChecks"] = checks


def _apply_admit(w: _Wl, d: Admit) -> None:
    w.status["admission"] = {"clusterQueue": d.cluster_queue,
                             "podSetAssignments": [assignment_to_api(a) for a in d.assignments]}
    w.set("QuotaReserved", True, "QuotaReserved", f"Quota reserved in ClusterQueue {d.cluster_queue}")
    # SetQuotaReservation resets Evicted / Preempted / BlockedOnPreemptionGates to False "Previously: …".
    for type_ in ("Evicted", "Preempted", "BlockedOnPreemptionGates"):
        prev = w.cond(type_)
        if prev is not None and prev.get("status") == "True":
            w.set(type_, False, "QuotaReserved", "Previously: " + str(prev.get("message", "")))
    _sync_checks(w, d.checks)
    w.sync_admitted()


def _apply_evict(w: _Wl, d: Evict) -> None:
    if d.reason == DEACTIVATED:
        # The deactivation "prepare": DeactivationTarget removed, requeueState cleared.
        _remove_condition(w.conditions, "DeactivationTarget")
        w.status.pop("requeueState", None)
    elif d.reason == PODS_READY_TIMEOUT and d.requeue_count is not None:
        w.status.setdefault("requeueState", {})["count"] = d.requeue_count
    if d.requeue_at is not None:
        w.set_requeue_at(d.requeue_at)
    w.evict(d.reason, d.message, d.underlying_cause)


def _apply_requeue(w: _Wl, d: Requeue) -> None:
    if d.reason == "BackoffFinished":
        rs = w.status.get("requeueState")
        if isinstance(rs, dict):
            rs.pop("requeueAt", None)
        cond = w.cond("Requeued")
        if cond is None or cond.get("status") != "False" or cond.get("reason") not in BACKOFF_REASONS:
            return  # Kueue only clears requeueAt then; the queue takes it back
    w.set_requeued(d.reason, d.message, True)


def _apply(w: _Wl, d: Decision, wl: Mapping, cache: ParseCache | None) -> None:
    if isinstance(d, Admit):
        _apply_admit(w, d)
    elif isinstance(d, Preempt):
        if w.is_true("Evicted"):
            return  # preemption already under way
        w.set("Preempted", True, d.reason, d.message, gen=False)
        w.evict(PREEMPTED, d.message)
    elif isinstance(d, Pending):
        w.unset_quota_reservation(d.reason, d.message)
        w.status["resourceRequests"] = resource_requests(wl, cache)
    elif isinstance(d, Evict):
        _apply_evict(w, d)
    elif isinstance(d, ReleaseReservation):
        w.unset_quota_reservation(d.reason, d.message)
    elif isinstance(d, Deactivate):
        w.set("DeactivationTarget", True, d.cause, d.message)
        if d.cause == "MaximumExecutionTimeExceeded":
            w.status.pop("accumulatedPastExecutionTimeSeconds", None)
        # The controller's follow-up Update; the API server bumps metadata.generation for it.
        w.obj.setdefault("spec", {})["active"] = False
    elif isinstance(d, Requeue):
        _apply_requeue(w, d)
    elif isinstance(d, MarkAdmitted):
        w.sync_admitted()
    elif isinstance(d, ResetRequeueState):
        _remove_condition(w.conditions, "DeactivationTarget")
        w.status.pop("requeueState", None)
    else:  # pragma: no cover - exhaustive over Decision
        raise TypeError(f"unknown decision {d!r}")


def apply_decision(wl: Mapping, decision: Decision, now: float, *, config: KueueConfig | None = None,
                   cache: ParseCache | None = None) -> dict:
    """The Workload dict after Kueue wrote `decision` into it at `now`.

    For Preempt, `wl` is the victim. Admission checks are synced (new ones Pending) on Admit.
    `cache`: the caller's ParseCache (the pod sets it reads for status.resourceRequests).
    """
    w = _Wl(wl, now, granular_reasons(config))
    _apply(w, decision, wl, cache)
    return w.done()


def release_quota(wl: Mapping, now: float, *, config: KueueConfig | None = None) -> dict:
    """The job integration's half of an eviction, once the workload's pods have stopped.

    jobframework: Requeued=True only for Preempted and NodeFailures (False otherwise, with the
    eviction reason); QuotaReserved=False (Pending, or PendingEvaluation with granular reasons)
    with the eviction message; admission cleared; Admitted synced. A workload that is not evicted
    or holds no reservation is returned unchanged.
    """
    w = _Wl(wl, now, granular_reasons(config))
    ev = w.cond("Evicted")
    if ev is None or ev.get("status") != "True" or not w.is_true("QuotaReserved"):
        return clone(dict(wl))
    reason, message = str(ev.get("reason", "")), str(ev.get("message", ""))
    w.set_requeued(reason, message, reason in (PREEMPTED, NODE_FAILURES))
    w.unset_quota_reservation("PendingEvaluation" if w.granular else "Pending", message)
    return w.done()


def unset_quota_reservation(wl: Mapping, now: float, reason: str, message: str) -> dict | None:
    """UnsetQuotaReservationWithCondition on a copy: QuotaReserved=False with `reason` and
    `message`, admission cleared, Admitted synced. None when nothing would change."""
    w = _Wl(wl, now, False)
    return w.done() if w.unset_quota_reservation(reason, message) else None


def needs_quota_release(wl: Mapping) -> bool:
    """Evicted=True while still holding a reservation: the job must stop and release it."""
    return _is_true(wl, "Evicted") and _is_true(wl, "QuotaReserved") and not _is_true(wl, "Finished")


# events ----------------------------------------------------------------------------------------

def _event(wl: Mapping, type_: str, reason: str, message: str, now: float) -> dict:
    meta = wl.get("metadata") or {}
    return {
        "type": type_, "reason": reason, "message": message[:1024], "timestamp": fmt_time(now),
        "involvedObject": {"apiVersion": KUEUE_API, "kind": "Workload", "namespace": meta.get("namespace", ""),
                           "name": meta.get("name", ""), "uid": meta.get("uid", "")},
    }


def _priority(wl: Mapping | None, cache: ParseCache | None) -> tuple[int, int, int]:
    if not wl:
        return 0, 0, 0
    parsed = parse_workload(wl, cache)
    return parsed.effective_priority, parsed.priority, parsed.effective_priority - parsed.priority


def _queued_since(wl: Mapping) -> float | None:
    rq = find_condition(wl, "Requeued")
    if rq is not None:
        return _time(rq.get("lastTransitionTime"))
    return _time((wl.get("metadata") or {}).get("creationTimestamp"))


def _seconds_since(t: float | None, now: float) -> str:
    return f"{max(0.0, now - t):.0f}s" if t is not None else "0s"


def decision_events(before: Mapping, after: Mapping, decision: Decision, now: float, *,
                    preemptor: Mapping | None = None, cache: ParseCache | None = None) -> list[dict]:
    """The v1 Events Kueue records for `decision` (Normal/Warning, reason, message), as plain dicts.

    `before`/`after` are the workload (the victim for Preempt) around `apply_decision`;
    `preemptor` is the preempting workload's dict, for the PreemptedWorkload event.
    """
    out: list[dict] = []
    had_admission = (before.get("status") or {}).get("admission") is not None
    if isinstance(decision, Admit):
        if not _is_true(before, "QuotaReserved"):
            out.append(_event(after, "Normal", "QuotaReserved",
                              f"Quota reserved in ClusterQueue {decision.cluster_queue}, wait time since queued was "
                              f"{_seconds_since(_queued_since(after), now)}", now))
        if _is_true(after, "Admitted"):
            out.append(_event(after, "Normal", "Admitted",
                              f"Admitted by ClusterQueue {decision.cluster_queue}, wait time since reservation was 0s",
                              now))
    elif isinstance(decision, MarkAdmitted):
        if _is_true(after, "Admitted") and not _is_true(before, "Admitted"):
            qr = find_condition(after, "QuotaReserved") or {}
            cq = ((after.get("status") or {}).get("admission") or {}).get("clusterQueue", "")
            out.append(_event(after, "Normal", "Admitted",
                              f"Admitted by ClusterQueue {cq}, wait time since reservation was "
                              f"{_seconds_since(_time(qr.get('lastTransitionTime')), now)}", now))
    elif isinstance(decision, Preempt):
        if _is_true(before, "Evicted"):
            return out
        pe, pb, pboost = _priority(preemptor, cache)
        te, tb, tboost = _priority(before, cache)
        prio = (f"; preemptor effective priority: {pe} (base: {pb}, boost: {pboost}); "
                f"preemptee effective priority: {te} (base: {tb}, boost: {tboost})")
        if had_admission:
            out.append(_event(after, "Normal", "EvictedDueToPreempted", decision.message, now))
        out.append(_event(after, "Normal", "Preempted", decision.message + prio, now))
        if preemptor is not None:
            meta = before.get("metadata") or {}
            cq = ((before.get("status") or {}).get("admission") or {}).get("clusterQueue", "")
            out.append(_event(preemptor, "Normal", "PreemptedWorkload",
                              f"Preempted workload {meta.get('namespace')}/{meta.get('name')} (UID: {meta.get('uid', '')}) "
                              f"in ClusterQueue {cq}" + prio, now))
    elif isinstance(decision, Evict):
        if had_admission:
            reason = f"EvictedDueTo{decision.reason}"
            if decision.reason == DEACTIVATED and decision.underlying_cause:
                reason += f"DueTo{decision.underlying_cause}"
            out.append(_event(after, "Normal", reason, decision.message, now))
    elif isinstance(decision, Pending):
        out.append(_event(after, "Warning", decision.reason, decision.message, now))
    elif isinstance(decision, Deactivate):
        if decision.cause == "MaximumExecutionTimeExceeded":
            limit = (before.get("spec") or {}).get("maximumExecutionTimeSeconds")
            out.append(_event(after, "Warning", "MaximumExecutionTimeExceeded",
                              f"The maximum execution time ({limit}s) exceeded", now))
        elif decision.cause == ADMISSION_CHECK:
            out.append(_event(after, "Warning", "AdmissionCheckRejected", f"Deactivated due to {decision.message}", now))
    return out


# ClusterQueue and LocalQueue status ------------------------------------------------------------

def is_queued(snapshot: ClusterSnapshot, wl: Workload) -> bool:
    """In Kueue's queue manager (heap or inadmissible set): pending, active, through a running LocalQueue."""
    return workload_may_queue(wl) and local_queue_open(snapshot, (wl.namespace, wl.queue_name))


def _reservations(wls: Iterable[Workload]) -> tuple[int, int, dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    reserving = admitted = 0
    reserved: dict[tuple[str, str], int] = {}
    used: dict[tuple[str, str], int] = {}
    for wl in wls:
        if wl.is_finished or not wl.has_quota_reservation:
            continue
        reserving += 1
        usage = wl.usage()
        for k, v in usage.items():
            reserved[k] = reserved.get(k, 0) + v
        if wl.is_admitted:
            admitted += 1
            for k, v in usage.items():
                used[k] = used.get(k, 0) + v
    return reserving, admitted, reserved, used


def _flavor_rows(groups: Iterable[ResourceGroup], usage: Mapping[tuple[str, str], int], borrowed: bool) -> list[dict]:
    rows = []
    for g in groups:
        for fq in g.flavors:
            resources = []
            for r in g.covered:
                total = usage.get((fq.name, r), 0)
                row: dict[str, Any] = {"name": r, "total": format_quantity_for_api(r, total)}
                if borrowed:
                    nominal = fq.resources[r].nominal if r in fq.resources else 0
                    row["borrowed"] = format_quantity_for_api(r, max(0, total - nominal))
                resources.append(row)
            rows.append({"name": fq.name, "resources": resources})
    return rows


def cluster_queue_status(snapshot: ClusterSnapshot, name: str, now: float, *,
                         previous: Mapping | None = None, pending_workloads: int | None = None,
                         active: tuple[bool, str, str] | None = None,
                         weighted_share: int | None = None, reservations: Reservations | None = None,
                         cache: EngineCache | None = None) -> dict:
    """status of ClusterQueue `name` as Kueue's ClusterQueue controller writes it.

    `previous` is the current status (to keep the Active condition's lastTransitionTime);
    `pending_workloads` comes from the queue state when known (else: queued workloads counted
    from the snapshot); `active` overrides the Active condition (e.g. the scheduler's cq_status);
    `weighted_share` is written only when fair sharing is on; `reservations` are the totals over
    the CQ's workloads when the caller keeps them (`QueueTotals`), else counted from the snapshot;
    `cache`: the caller's EngineCache (activity is kept there).
    """
    cq = snapshot.cluster_queues[name]
    if reservations is None:
        reservations = _reservations(w for w in snapshot.workloads.values()
                                     if w.admission is not None and w.admission.cluster_queue == name)
    reserving, admitted, reserved, used = reservations
    if pending_workloads is None:
        pending_workloads = sum(1 for w in snapshot.workloads.values()
                                if is_queued(snapshot, w) and snapshot.cluster_queue_of(w) == name)
    if active is None:
        st = cq_status.cluster_queue_active(snapshot, name, cache)
        active = (st.active, st.reason, st.message)
    ok, reason, message = active
    conditions = clone(list((previous or {}).get("conditions") or []))
    set_condition(conditions, "Active", ok, reason, message, now, cq.meta.generation or None)
    status: dict[str, Any] = {
        "conditions": conditions,
        "flavorsReservation": _flavor_rows(cq.resource_groups, reserved, True),
        "flavorsUsage": _flavor_rows(cq.resource_groups, used, True),
        "pendingWorkloads": pending_workloads,
        "reservingWorkloads": reserving,
        "admittedWorkloads": admitted,
    }
    if weighted_share is not None:
        status["fairSharing"] = {"weightedShare": weighted_share}
    return status


def local_queue_status(snapshot: ClusterSnapshot, key: tuple[str, str], now: float, *,
                       previous: Mapping | None = None, pending_workloads: int | None = None,
                       reservations: Reservations | None = None, cache: EngineCache | None = None) -> dict:
    """status of a LocalQueue as Kueue's LocalQueue controller writes it (no `borrowed` in usage).

    `pending_workloads` and `reservations` are taken as given when the caller keeps them
    (`QueueTotals`); otherwise they are counted from the snapshot's workloads.
    """
    lq = snapshot.local_queues[key]
    cq = snapshot.cluster_queues.get(lq.cluster_queue)
    st = cq_status.local_queue_active(snapshot, key, cache)
    ok, reason, message = st.active, st.reason, st.message
    mine: list[Workload] = []
    if reservations is None or (pending_workloads is None and lq.stop_policy == STOP_NONE):
        mine = [w for w in snapshot.workloads.values() if w.namespace == lq.namespace and w.queue_name == lq.name]
    reserving, admitted, reserved, used = reservations if reservations is not None else _reservations(mine)
    if lq.stop_policy != STOP_NONE:
        pending_workloads = 0  # a stopped LocalQueue reports no pending workloads
    elif pending_workloads is None:
        pending_workloads = sum(1 for w in mine if is_queued(snapshot, w))
    conditions = clone(list((previous or {}).get("conditions") or []))
    set_condition(conditions, "Active", ok, reason, message, now, lq.meta.generation or None)
    groups = cq.resource_groups if cq is not None else ()
    return {
        "conditions": conditions,
        "flavorsReservation": _flavor_rows(groups, reserved, False),
        "flavorsUsage": _flavor_rows(groups, used, False),
        "pendingWorkloads": pending_workloads,
        "reservingWorkloads": reserving,
        "admittedWorkloads": admitted,
    }
