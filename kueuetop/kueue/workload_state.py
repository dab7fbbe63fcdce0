"""The state a person sees for a Workload, derived from its conditions.

Order of checks follows reference/kueue.md §4.5, which refines Kueue's pkg/workload.Status()
(finished → admitted → quotaReserved → pending, what kueuectl prints) with the reasons a
pending workload can be stuck for. `kueue_status` keeps Kueue's own four-valued status so
reports and `kubectl kueue list workload` agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kueuetop.kueue.workload import ADMISSION_GATED_BY_ANNOTATION, Workload


class Phase(StrEnum):
    FINISHED = "Finished"
    EVICTING = "Evicting"
    ADMITTED = "Admitted"
    RESERVED = "QuotaReserved"
    INACTIVE = "Inactive"
    GATED = "Gated"
    ON_HOLD = "OnHold"
    BLOCKED = "Blocked"
    BACKOFF = "Backoff"
    PENDING = "Pending"


@dataclass(frozen=True, slots=True)
class WorkloadState:
    phase: Phase
    kueue_status: str  # "finished" | "admitted" | "quotaReserved" | "pending"
    reason: str = ""
    message: str = ""
    until: float | None = None  # backoff end, when known

    @property
    def report_state(self) -> str:
        """The five states of `sim run` reports: pending, quotaReserved, admitted, finished, inactive."""
        if self.phase is Phase.INACTIVE:
            return "inactive"
        return self.kueue_status


def kueue_status(wl: Workload) -> str:
    if wl.is_finished:
        return "finished"
    if wl.is_admitted:
        return "admitted"
    if wl.has_quota_reservation:
        return "quotaReserved"
    return "pending"


def derive_state(wl: Workload, now: float | None = None) -> WorkloadState:
    status = kueue_status(wl)

    def cond(type_: str) -> tuple[str, str]:
        c = wl.condition(type_)
        return (c.reason, c.message) if c else ("", "")

    if wl.is_finished:
        return WorkloadState(Phase.FINISHED, status, *cond("Finished"))
    if wl.is_admitted:
        if wl.is_evicted:
            return WorkloadState(Phase.EVICTING, status, *cond("Evicted"))
        return WorkloadState(Phase.ADMITTED, status, *cond("PodsReady") if wl.condition("PodsReady") else cond("Admitted"))
    if wl.has_quota_reservation:
        if wl.is_evicted:
            return WorkloadState(Phase.EVICTING, status, *cond("Evicted"))
        pending = [c for c in wl.admission_checks if c.state != "Ready"]
        if pending:
            msg = "; ".join(f"{c.name}: {c.state}" + (f" ({c.message})" if c.message else "") for c in pending)
            return WorkloadState(Phase.RESERVED, status, "WaitingForAdmissionChecks", msg)
        return WorkloadState(Phase.RESERVED, status, *cond("QuotaReserved"))
    if not wl.active:
        reason, message = cond("Evicted") if wl.is_evicted else ("", "")
        return WorkloadState(Phase.INACTIVE, status, reason or "Deactivated",
                             message or "The workload is deactivated (spec.active=false)")
    gated_by = wl.meta.annotations.get(ADMISSION_GATED_BY_ANNOTATION)
    if gated_by:
        return WorkloadState(Phase.GATED, status, "AdmissionGated", f"admission gated by {gated_by}")
    qr = wl.condition("QuotaReserved")
    if qr is not None and qr.status == "False" and qr.reason == "OnHold":
        return WorkloadState(Phase.ON_HOLD, status, qr.reason, qr.message)
    requeue_at = wl.requeue_state.requeue_at if wl.requeue_state else None
    rq = wl.condition("Requeued")
    if rq is not None and rq.status == "False":
        return WorkloadState(Phase.BLOCKED, status, rq.reason, rq.message, until=requeue_at)
    if requeue_at is not None and (now is None or requeue_at > now):
        return WorkloadState(Phase.BACKOFF, status, "Backoff", "waiting for the requeue backoff", until=requeue_at)
    if qr is not None:
        return WorkloadState(Phase.PENDING, status, qr.reason, qr.message)
    return WorkloadState(Phase.PENDING, status)
