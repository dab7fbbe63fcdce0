"""Kueue's workload controller, the parts outside the scheduler, as a pure function.

`reconcile` walks every unfinished workload the way pkg/controller/core/workload_controller.go
Reconcile does (one pass, first matching rule wins where Kueue returns early) and returns the
decisions Kueue would write: deactivation and reactivation, backoff expiry, queue stop policies
(Hold / HoldAndDrain / resume), admission-check outcomes, the WaitForPodsReady timeout and
maximumExecutionTimeSeconds (reference/kueue.md §5, §6.7, §6.8). `next_event_at` says when a
timer-driven rule will next fire, so a virtual clock can jump there.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kueuetop.admission.cq_status import cluster_queue_active
from kueuetop.admission.decisions import (
    ADMISSION_CHECK,
    CLUSTER_QUEUE_STOPPED,
    DEACTIVATED,
    LOCAL_QUEUE_STOPPED,
    MAXIMUM_EXECUTION_TIME_EXCEEDED,
    PODS_READY_TIMEOUT,
    REQUEUING_LIMIT_EXCEEDED,
    Deactivate,
    Decision,
    Evict,
    MarkAdmitted,
    Pending,
    ReleaseReservation,
    Requeue,
    ResetRequeueState,
)
from kueuetop.admission.status_updates import BACKOFF_REASONS, granular_reasons
from kueuetop.kueue.cluster_queue import HOLD_AND_DRAIN, STOP_NONE
from kueuetop.kueue.config import WaitForPodsReady
from kueuetop.kueue.snapshot import ClusterSnapshot
from kueuetop.kueue.workload import CheckState, Workload

if TYPE_CHECKING:
    from kueuetop.admission.engine_cache import EngineCache

WorkloadKey = tuple[str, str]  # (namespace, name)

WAIT_FOR_START = "WaitForStart"
WAIT_FOR_RECOVERY = "WaitForRecovery"


def requeue_backoff(count: int, base_seconds: float, max_seconds: float) -> float:
    """Kueue's requeue backoff: base·2^(count−1), capped at max (Kueue adds a 0.01 % jitter we omit)."""
    if count < 1:
        return 0.0
    wait = base_seconds * 2 ** (count - 1)
    return min(wait, max_seconds) if max_seconds > 0 else wait


def checks_message(checks: Iterable[CheckState], state: str) -> str:
    """buildAdmissionChecksMessage: `AdmissionCheck(s) in <state> state: "a" (msg); "b"`."""
    ordered = sorted(checks, key=lambda c: c.name)
    parts = [json.dumps(c.name) + (f" ({c.message})" if c.message else "") for c in ordered]
    noun = "AdmissionChecks" if len(ordered) > 1 else "AdmissionCheck"
    return f"{noun} in {state} state: {'; '.join(parts)}"


class _Result:
    def __init__(self) -> None:
        self.decisions: list[Decision] = []
        self.wake: list[float] = []

    def at(self, t: float, now: float) -> None:
        if t > now:
            self.wake.append(t)


def _requeued_false(wl: Workload, reason: str | None = None) -> str | None:
    c = wl.condition("Requeued")
    if c is None or c.status != "False":
        return None
    if reason is not None and c.reason != reason:
        return None
    return c.reason


def _active_phase(wl: Workload, now: float, out: _Result) -> bool:
    """Active workloads: DeactivationTarget, backoff expiry, reactivation. True = Kueue returns here."""
    key = wl.key
    dt = wl.condition("DeactivationTarget")
    if dt is not None and dt.status == "True":
        out.decisions.append(Deactivate(key, dt.reason, dt.message))
        return True
    requeue_at = wl.requeue_state.requeue_at if wl.requeue_state else None
    if requeue_at is not None:
        if requeue_at > now:
            out.at(requeue_at, now)
            return True  # "Waiting for backoff to finish", whatever the workload's state
        if not wl.has_quota_reservation:
            out.decisions.append(Requeue(key, "BackoffFinished", "The workload backoff was finished"))
            return True
    reason = _requeued_false(wl)
    if reason == DEACTIVATED:
        out.decisions.append(Requeue(key, "Reactivated", "The workload was reactivated"))
        return True
    if reason in BACKOFF_REASONS:
        out.decisions.append(Requeue(key, "BackoffFinished", "The workload backoff was finished"))
        return True
    return False


def _inactive_phase(wl: Workload, out: _Result) -> bool:
    """spec.active=false: evict (Deactivated / DeactivatedDueTo<cause>) or drop the backoff state."""
    if not wl.is_evicted:
        dt = wl.condition("DeactivationTarget")
        message = "The workload is deactivated"
        cause = ""
        if dt is not None:
            cause = dt.reason
            message = f"{message} due to {dt.message}"
        out.decisions.append(Evict(wl.key, DEACTIVATED, message, underlying_cause=cause))
        return True
    if wl.requeue_state is not None:
        out.decisions.append(ResetRequeueState(wl.key))
        return True
    return False


def _queue_blocker(snapshot: ClusterSnapshot, wl: Workload, cache: EngineCache | None) -> tuple[str, str] | None:
    """getQueueBlocker: (granular reason, message) when the workload's queues can't take it."""
    lq = snapshot.local_queues.get((wl.namespace, wl.queue_name))
    if lq is None:
        return "Misconfigured", f"LocalQueue {wl.queue_name} doesn't exist"
    if lq.stop_policy != STOP_NONE:
        return "Suspended", f"LocalQueue {wl.queue_name} is inactive"
    if lq.cluster_queue not in snapshot.cluster_queues:
        return "Misconfigured", f"ClusterQueue {lq.cluster_queue} doesn't exist"
    if not cluster_queue_active(snapshot, lq.cluster_queue, cache).active:
        return "Suspended", f"ClusterQueue {lq.cluster_queue} is inactive"
    return None


def _pending_condition(snapshot: ClusterSnapshot, wl: Workload, cache: EngineCache | None,
                       ) -> tuple[str, str] | None:
    """syncQuotaReservedFalseCondition for a workload without reservation (controller-owned reasons only)."""
    granular = granular_reasons(snapshot.config)
    if granular and not wl.active:
        return "Deactivated", "The workload is deactivated"
    qr = wl.condition("QuotaReserved")
    if granular and qr is not None and qr.status == "False" and qr.reason == "OnHold":
        return None
    blocker = _queue_blocker(snapshot, wl, cache)
    if blocker is None:
        return None
    return blocker if granular else ("Inadmissible", blocker[1])


def _checks_phase(wl: Workload, now: float, out: _Result) -> bool:
    """reconcileCheckBasedEviction: Rejected → deactivate; Retry → evict (AdmissionCheck)."""
    if wl.is_evicted:
        return False
    rejected = [c for c in wl.admission_checks if c.state == "Rejected"]
    if rejected:
        out.decisions.append(Deactivate(wl.key, ADMISSION_CHECK, checks_message(rejected, "Rejected")))
        return True
    retry = [c for c in wl.admission_checks if c.state == "Retry"]
    if not retry:
        return False
    # A check asking to retry later sets requeueAt first; Kueue's controller then waits for it
    # before evicting (the early "waiting for backoff" return), so the reservation is held until then.
    times = [c.last_transition + c.requeue_after_seconds for c in retry
             if c.requeue_after_seconds is not None and c.last_transition is not None]
    retry_at = max(times) if times else None
    if retry_at is not None and retry_at > now:
        out.at(retry_at, now)
        return True
    out.decisions.append(Evict(wl.key, ADMISSION_CHECK, "Evicted due to " + checks_message(retry, "Retry"),
                               requeue_at=retry_at))
    return True


def _stop_phase(snapshot: ClusterSnapshot, wl: Workload, admitted: bool, out: _Result) -> bool:
    """reconcileOn{Local,Cluster}QueueActiveState for a workload holding a reservation."""
    granular = granular_reasons(snapshot.config)
    lq = snapshot.local_queues.get((wl.namespace, wl.queue_name))
    if admitted:
        if lq is not None and lq.stop_policy == HOLD_AND_DRAIN and not wl.is_evicted:
            out.decisions.append(Evict(wl.key, LOCAL_QUEUE_STOPPED, "The LocalQueue is stopped"))
            return True
    elif lq is None or lq.meta.deletion is not None:
        out.decisions.append(ReleaseReservation(wl.key, "Misconfigured" if granular else "Inadmissible",
                                                f"LocalQueue {wl.queue_name} is terminating or missing"))
        return True
    elif lq.stop_policy != STOP_NONE:
        out.decisions.append(ReleaseReservation(wl.key, "Suspended" if granular else "Inadmissible",
                                                f"LocalQueue {wl.queue_name} is stopped"))
        return True
    cq_name = snapshot.cluster_queue_of(wl) or ""
    cq = snapshot.cluster_queues.get(cq_name)
    if admitted:
        if cq is not None and cq.stop_policy == HOLD_AND_DRAIN and not wl.is_evicted:
            out.decisions.append(Evict(wl.key, CLUSTER_QUEUE_STOPPED, "The ClusterQueue is stopped"))
            return True
        return False
    if cq is None or cq.meta.deletion is not None:
        out.decisions.append(ReleaseReservation(wl.key, "Misconfigured" if granular else "Inadmissible",
                                                f"ClusterQueue {cq_name} is terminating or missing"))
        return True
    if cq.stop_policy != STOP_NONE:
        out.decisions.append(ReleaseReservation(wl.key, "Suspended" if granular else "Inadmissible",
                                                f"ClusterQueue {cq_name} is stopped"))
        return True
    return False


def _pods_ready_phase(wfpr: WaitForPodsReady, wl: Workload, admitted_at: float | None, now: float,
                      out: _Result) -> None:
    """reconcileNotReadyTimeout (+ triggerDeactivation) for an admitted workload whose pods aren't ready."""
    if admitted_at is None or not wl.active or wl.is_evicted:
        return
    pr = wl.condition("PodsReady")
    if pr is not None and pr.status == "True":
        return
    if pr is None or pr.reason in (WAIT_FOR_START, "PodsReady"):
        cause, deadline = WAIT_FOR_START, admitted_at + wfpr.timeout_seconds
    elif pr.reason == WAIT_FOR_RECOVERY and wfpr.recovery_timeout > 0 and pr.last_transition is not None:
        cause, deadline = WAIT_FOR_RECOVERY, pr.last_transition + wfpr.recovery_timeout
    else:
        return
    if deadline > now:
        out.at(deadline, now)
        return
    count = wl.requeue_state.count if wl.requeue_state else 0
    limit = wfpr.backoff_limit_count
    if limit is not None and count + 1 > limit:
        out.decisions.append(Deactivate(wl.key, REQUEUING_LIMIT_EXCEEDED,
                                        "exceeding the maximum number of re-queuing retries"))
        return
    wait = requeue_backoff(count + 1, wfpr.backoff_base_seconds, wfpr.backoff_max_seconds)
    out.decisions.append(Evict(wl.key, PODS_READY_TIMEOUT, f"Exceeded the PodsReady timeout {wl.namespace}/{wl.name}",
                               underlying_cause=cause, requeue_at=now + wait, requeue_count=count + 1))


def _max_execution_phase(wl: Workload, admitted_at: float | None, now: float, out: _Result) -> None:
    """reconcileMaxExecutionTime: deactivate once admitted time (past + current) reaches the limit."""
    limit = wl.maximum_execution_time_seconds
    if admitted_at is None or limit is None:
        return
    deadline = admitted_at + limit - wl.accumulated_execution_seconds
    if deadline > now:
        out.at(deadline, now)
        return
    if not wl.is_true("DeactivationTarget"):
        out.decisions.append(Deactivate(wl.key, MAXIMUM_EXECUTION_TIME_EXCEEDED, "exceeding the maximum execution time"))


def _reconcile_one(snapshot: ClusterSnapshot, wl: Workload, now: float, out: _Result,
                   cache: EngineCache | None = None) -> None:
    if wl.is_finished:
        return
    if wl.active:
        if _active_phase(wl, now, out):
            return
    elif _inactive_phase(wl, out):
        return
    lq = snapshot.local_queues.get((wl.namespace, wl.queue_name))
    if lq is not None and lq.stop_policy == STOP_NONE and _requeued_false(wl, LOCAL_QUEUE_STOPPED):
        out.decisions.append(Requeue(wl.key, "LocalQueueRestarted", "The LocalQueue was restarted after being stopped"))
        return
    cq = snapshot.cluster_queues.get(snapshot.cluster_queue_of(wl) or "")
    if cq is not None and cq.stop_policy == STOP_NONE and _requeued_false(wl, CLUSTER_QUEUE_STOPPED):
        out.decisions.append(Requeue(wl.key, "ClusterQueueRestarted",
                                     "The ClusterQueue was restarted after being stopped"))
        return
    admitted = wl.is_admitted
    admitted_at = wl.condition("Admitted").last_transition if admitted else None  # type: ignore[union-attr]
    if not admitted:
        if not wl.has_quota_reservation:
            pending = _pending_condition(snapshot, wl, cache)
            qr = wl.condition("QuotaReserved")
            if pending is not None and (qr is None or qr.status != "False" or (qr.reason, qr.message) != pending):
                out.decisions.append(Pending(wl.key, pending[0], pending[1], inadmissible=True))
        elif all(c.state == "Ready" for c in wl.admission_checks):
            # SyncAdmittedCondition: QuotaReserved and every check Ready.
            out.decisions.append(MarkAdmitted(wl.key))
            admitted, admitted_at = True, now
    if not wl.has_quota_reservation:
        return
    if _checks_phase(wl, now, out) or _stop_phase(snapshot, wl, admitted, out):
        return
    wfpr = snapshot.config.wait_for_pods_ready
    if wfpr is not None:
        _pods_ready_phase(wfpr, wl, admitted_at, now, out)
    _max_execution_phase(wl, admitted_at, now, out)


def _run(snapshot: ClusterSnapshot, now: float, cache: EngineCache | None = None) -> _Result:
    out = _Result()
    for key in sorted(snapshot.workloads):
        _reconcile_one(snapshot, snapshot.workloads[key], now, out, cache)
    return out


def reconcile(snapshot: ClusterSnapshot, now: float, cache: EngineCache | None = None) -> tuple[Decision, ...]:
    """What Kueue's workload controller writes at `now`, workload by workload (sorted by key)."""
    return tuple(_run(snapshot, now, cache).decisions)


def reconcile_keys(snapshot: ClusterSnapshot, keys: Iterable[WorkloadKey], now: float,
                   cache: EngineCache | None = None) -> tuple[tuple[Decision, ...], dict[WorkloadKey, float | None]]:
    """reconcile() restricted to `keys`, and each one's next_event_at, in one pass: a
    workload's rules read only itself and its queues, never the other workloads."""
    decisions: list[Decision] = []
    wakes: dict[WorkloadKey, float | None] = {}
    wls = snapshot.workloads
    for key in sorted(k for k in keys if k in wls):
        out = _Result()
        _reconcile_one(snapshot, wls[key], now, out, cache)
        decisions.extend(out.decisions)
        wakes[key] = min(out.wake) if out.wake else None
    return tuple(decisions), wakes


def next_event_at(snapshot: ClusterSnapshot, now: float) -> float | None:
    """The earliest time after `now` at which a timer rule fires (backoff end, PodsReady timeout,
    maximum execution time, admission-check retry), or None when nothing is scheduled."""
    wake = _run(snapshot, now).wake
    return min(wake) if wake else None
