"""Running per-ClusterQueue and per-LocalQueue totals for their status, kept incrementally.

ClusterQueue and LocalQueue status (pendingWorkloads, reservingWorkloads, admittedWorkloads,
flavorsReservation, flavorsUsage) are sums over the queue's workloads. Recounting them from
every workload after each change costs O(workloads) per queue, which dominates a simulator run
of Kueue's 15,000-workload performance config. Each workload's contribution only depends on
the workload itself and on the (rarely changing) LocalQueue it points to, so the totals are
kept by subtracting a workload's old contribution and adding its new one.

The sums are exactly those `status_updates.cluster_queue_status` / `local_queue_status`
compute from a snapshot; `pending_*` applies the LocalQueue half of `is_queued` at read time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kueuetop.admission.quota_tree import FR
from kueuetop.kueue.cluster_queue import STOP_NONE
from kueuetop.kueue.snapshot import ClusterSnapshot, WorkloadKey
from kueuetop.kueue.workload import ADMISSION_GATED_BY_ANNOTATION, Workload

LQKey = tuple[str, str]
Reservations = tuple[int, int, dict[FR, int], dict[FR, int]]  # reserving, admitted, reserved, used


def workload_may_queue(wl: Workload) -> bool:
    """The workload's own half of Kueue's "in the queue manager": pending, active, not gated,
    not OnHold (the LocalQueue half is `local_queue_open`)."""
    if wl.is_finished or wl.has_quota_reservation or not wl.active:
        return False
    if wl.meta.annotations.get(ADMISSION_GATED_BY_ANNOTATION):
        return False
    qr = wl.condition("QuotaReserved")
    return not (qr is not None and qr.status == "False" and qr.reason == "OnHold")


def local_queue_open(snapshot: ClusterSnapshot, lq_key: LQKey) -> bool:
    """The LocalQueue exists, is not stopped and points at an existing ClusterQueue."""
    lq = snapshot.local_queues.get(lq_key)
    return lq is not None and lq.stop_policy == STOP_NONE and lq.cluster_queue in snapshot.cluster_queues


@dataclass(frozen=True, slots=True)
class _Contribution:
    cq: str | None  # the CQ whose status counts it (snapshot.cluster_queue_of)
    lq: LQKey
    may_queue: bool
    reserving: bool  # holds quota and is not finished
    admitted: bool
    in_cq_reservations: bool  # its admission names `cq` (only those count in CQ usage)
    usage: Mapping[FR, int]


@dataclass(slots=True)
class _Totals:
    reserving: int = 0
    admitted: int = 0
    reserved: dict[FR, int] = field(default_factory=dict)
    used: dict[FR, int] = field(default_factory=dict)
    may_queue_by_lq: dict[LQKey, int] = field(default_factory=dict)

    def apply(self, c: _Contribution, sign: int, reservations: bool) -> None:
        if c.may_queue:
            n = self.may_queue_by_lq.get(c.lq, 0) + sign
            if n:
                self.may_queue_by_lq[c.lq] = n
            else:
                del self.may_queue_by_lq[c.lq]
        if not (reservations and c.reserving):
            return
        self.reserving += sign
        _add(self.reserved, c.usage, sign)
        if c.admitted:
            self.admitted += sign
            _add(self.used, c.usage, sign)

    def reservations(self) -> Reservations:
        return self.reserving, self.admitted, dict(self.reserved), dict(self.used)


def _add(total: dict[FR, int], usage: Mapping[FR, int], sign: int) -> None:
    for fr, v in usage.items():
        total[fr] = total.get(fr, 0) + sign * v


def _contribution(wl: Workload, cq: str | None) -> _Contribution:
    reserving = not wl.is_finished and wl.has_quota_reservation
    return _Contribution(cq, (wl.namespace, wl.queue_name), workload_may_queue(wl), reserving,
                         reserving and wl.is_admitted,
                         wl.admission is not None and wl.admission.cluster_queue == cq,
                         wl.usage() if reserving else {})


class QueueTotals:
    """Totals per ClusterQueue and LocalQueue over the workloads given to `set`."""

    def __init__(self) -> None:
        self._of: dict[WorkloadKey, _Contribution] = {}
        self._cq: dict[str, _Totals] = {}
        self._lq: dict[LQKey, _Totals] = {}

    def set(self, key: WorkloadKey, wl: Workload, cq: str | None) -> None:
        """Record `wl` (counted in ClusterQueue `cq`, i.e. snapshot.cluster_queue_of(wl))."""
        self.discard(key)
        c = _contribution(wl, cq)
        self._of[key] = c
        self._apply(c, 1)

    def discard(self, key: WorkloadKey) -> None:
        c = self._of.pop(key, None)
        if c is not None:
            self._apply(c, -1)

    def _apply(self, c: _Contribution, sign: int) -> None:
        if c.cq is not None:
            self._cq.setdefault(c.cq, _Totals()).apply(c, sign, c.in_cq_reservations)
        self._lq.setdefault(c.lq, _Totals()).apply(c, sign, True)

    # reads ----------------------------------------------------------------------------
    def cq_reservations(self, cq: str) -> Reservations:
        t = self._cq.get(cq)
        return t.reservations() if t is not None else (0, 0, {}, {})

    def lq_reservations(self, lq: LQKey) -> Reservations:
        t = self._lq.get(lq)
        return t.reservations() if t is not None else (0, 0, {}, {})

    def cq_pending(self, snapshot: ClusterSnapshot, cq: str) -> int:
        """Queued workloads counted in `cq` (what `is_queued` counts over the snapshot)."""
        t = self._cq.get(cq)
        if t is None:
            return 0
        return sum(n for lq, n in t.may_queue_by_lq.items() if local_queue_open(snapshot, lq))

    def lq_pending(self, snapshot: ClusterSnapshot, lq: LQKey) -> int:
        t = self._lq.get(lq)
        if t is None or not local_queue_open(snapshot, lq):
            return 0
        return t.may_queue_by_lq.get(lq, 0)
