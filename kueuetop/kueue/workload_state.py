"""The state a person sees for a Workload, derived from its conditions.

Order of checks follows reference/kueue.md §4.5, which refines Kueue's pkg/workload.Status()
(finished → admitted → quotaReserved → pending, what kueuectl prints) with the reasons a
pending workload can be stuck for. `kueue_status` keeps Kueue's own four-valued status so
reports and `kubectl kueue list workload` agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kueuetop.kueue.meta import Condition
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
    return _status(_true_types(wl.conditions))


def _true_types(conditions: tuple[Condition, ...]) -> frozenset[str]:
    return frozenset(c.type for c in conditions if c.status == "True")


def _status(true: frozenset[str]) -> str:
    if "Finished" in true:
        return "finished"
    if "Admitted" in true:
        return "admitted"
    if "QuotaReserved" in true:
        return "quotaReserved"
    return "pending"


def derive_state(wl: Workload, now: float | None = None) -> WorkloadState:
    # One pass over the conditions (the store derives every changed workload's state, 1,000 at
    # a time in a burst): the first condition of each type, as find_condition reads them.
    by_type: dict[str, Condition] = {}
    for c in wl.conditions:
        by_type.setdefault(c.type, c)
    true = frozenset(t for t, c in by_type.items() if c.status == "True")
    status = _status(true)

    def cond(type_: str) -> tuple[str, str]:
        c = by_type.get(type_)
        return (c.reason, c.message) if c else ("", "")

    if "Finished" in true:
        return WorkloadState(Phase.FINISHED, status, *cond("Finished"))
    if "Admitted" in true:
        if "Evicted" in true:
            return WorkloadState(Phase.EVICTING, status, *cond("Evicted"))
        return WorkloadState(Phase.ADMITTED, status, *cond("PodsReady") if "PodsReady" in by_type else cond("Admitted"))
    if "QuotaReserved" in true:
        if "Evicted" in true:
            return WorkloadState(Phase.EVICTING, status, *cond("Evicted"))
        pending = [c for c in wl.admission_checks if c.state != "Ready"]
        if pending:
            msg = "; ".join(f"{c.name}: {c.state}" + (f" ({c.message})" if c.message else "") for c in pending)
            return WorkloadState(Phase.RESERVED, status, "WaitingForAdmissionChecks", msg)
        return WorkloadState(Phase.RESERVED, status, *cond("QuotaReserved"))
    if not wl.active:
        reason, message = cond("Evicted") if "Evicted" in true else ("", "")
        return WorkloadState(Phase.INACTIVE, status, reason or "Deactivated",
                             message or "The workload is deactivated (spec.active=false)")
    gated_by = wl.meta.annotations.get(ADMISSION_GATED_BY_ANNOTATION)
    if gated_by:
        return WorkloadState(Phase.GATED, status, "AdmissionGated", f"admission gated by {gated_by}")
    qr = by_type.get("QuotaReserved")
    if qr is not None and qr.status == "False" and qr.reason == "OnHold":
        return WorkloadState(Phase.ON_HOLD, status, qr.reason, qr.message)
    requeue_at = wl.requeue_state.requeue_at if wl.requeue_state else None
    rq = by_type.get("Requeued")
    if rq is not None and rq.status == "False":
        return WorkloadState(Phase.BLOCKED, status, rq.reason, rq.message, until=requeue_at)
    if requeue_at is not None and (now is None or requeue_at > now):
        return WorkloadState(Phase.BACKOFF, status, "Backoff", "waiting for the requeue backoff", until=requeue_at)
    if qr is not None:
        return WorkloadState(Phase.PENDING, status, qr.reason, qr.message)
    return WorkloadState(Phase.PENDING, status)
