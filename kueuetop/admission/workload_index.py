"""Per-ClusterQueue indexes of workloads, kept up to date incrementally between cycles.

A scheduling cycle needs, per CQ: the workloads holding quota (usage and preemption candidates)
and the pending workloads in queue order. Rebuilding those from 20k–100k workloads every cycle
would dominate the simulator, so the index diffs a new snapshot against the previous one by
object identity (unchanged objects are reused as-is) and updates only what changed.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kueuetop.admission.quota_tree import FR
from kueuetop.kueue.cluster_queue import STOP_NONE
from kueuetop.kueue.config import KueueConfig
from kueuetop.kueue.snapshot import ClusterSnapshot, WorkloadKey
from kueuetop.kueue.workload import ADMISSION_GATED_BY_ANNOTATION, Workload

SortKey = tuple[int, float, str, str, str]


def queue_order_timestamp(wl: Workload, config: KueueConfig) -> float:
    """Kueue: pkg/workload/workload.go Ordering.GetQueueOrderTimestamp."""
    ev = wl.condition("Evicted")
    if ev is not None and ev.status == "True" and ev.last_transition is not None:
        wfpr = config.wait_for_pods_ready
        by_timeout = ev.reason == "PodsReadyTimeout"
        if by_timeout and (wfpr is None or wfpr.requeuing_timestamp == "Eviction"):
            return ev.last_transition
        if ev.reason == "AdmissionCheck":
            return ev.last_transition
    if not config.priority_sorting_within_cohort:
        pc = wl.condition("Preempted")
        if (pc is not None and pc.status == "True" and pc.reason == "InCohortReclaimWhileBorrowing"
                and pc.last_transition is not None):
            return pc.last_transition + 0.001
    return wl.meta.creation or 0.0


def sort_key(wl: Workload, config: KueueConfig) -> SortKey:
    """Queue order: higher effective priority, earlier queue-order timestamp, then UID (Kueue:
    pkg/cache/queue/cluster_queue.go queueOrderingFunc)."""
    return (-wl.effective_priority, queue_order_timestamp(wl, config), wl.uid, wl.namespace, wl.name)


def queued_in(wl: Workload, snapshot: ClusterSnapshot) -> str | None:
    """The CQ whose queue holds this pending workload, or None when Kueue keeps it out of every
    queue: finished, reserving, inactive, admission-gated, OnHold, waiting for replacement pods,
    LocalQueue missing or stopped."""
    if wl.is_finished or wl.has_quota_reservation or not wl.active:
        return None
    if wl.meta.annotations.get(ADMISSION_GATED_BY_ANNOTATION):
        return None
    qr = wl.condition("QuotaReserved")
    if qr is not None and qr.status == "False" and qr.reason == "OnHold":
        return None
    if wl.is_true("WaitingForReplacementPods"):
        return None
    lq = snapshot.local_queues.get((wl.namespace, wl.queue_name))
    if lq is None or lq.stop_policy != STOP_NONE:
        return None
    return lq.cluster_queue


def parked_until(wl: Workload) -> float:
    """Until when the workload is in the queue but not poppable: forever with Requeued=False,
    else until its backoff ends (§6.1); -inf when it is poppable now."""
    rq = wl.condition("Requeued")
    if rq is not None and rq.status == "False":
        return math.inf
    rs = wl.requeue_state
    return rs.requeue_at if rs is not None and rs.requeue_at is not None else -math.inf


def parked(wl: Workload, now: float) -> bool:
    """In the queue but not poppable: Requeued=False or backoff not over (§6.1)."""
    return parked_until(wl) > now


@dataclass(slots=True)
class Entry:
    wl: Workload
    cq: str
    reserving: bool
    usage: dict[FR, int]
    key: SortKey | None  # pending only
    parked_until: float = -math.inf  # pending only: `parked_until(wl)`, cached for head scans


class WorkloadIndex:
    """Per ClusterQueue: the quota-holding workloads, their usage, and the queued workloads in
    queue order; `update(snapshot)` patches it to a new snapshot. Owned by an EngineCache."""

    def __init__(self) -> None:
        self.entries: dict[WorkloadKey, Entry] = {}
        self.reserving: dict[str, dict[WorkloadKey, Entry]] = {}
        self.pending: dict[str, list[tuple[SortKey, WorkloadKey]]] = {}
        self.cq_usage: dict[str, dict[FR, int]] = {}
        self._lq_fingerprint: dict = {}
        self._lq_source: Mapping | None = None  # the LocalQueues mapping the fingerprint is of
        self._config: KueueConfig | None = None
        # What the latest update() changed, so per-cycle bookkeeping that depends on which
        # workloads are pending (QueueState.last_assignments) can look at those keys only.
        self.serial = 0  # update() calls so far
        self.reserving_version: dict[str, int] = {}  # per CQ: bumped when its reserving set changes
        # Per CQ: the usage of its quota-holding entries by effective priority (preemption's
        # quick bound on what any eviction could free).
        self.usage_by_priority: dict[str, dict[int, dict[FR, int]]] = {}
        self.total_by_priority: dict[int, dict[FR, int]] = {}  # the same over every CQ
        self.touched: set[WorkloadKey] = set()  # keys added or dropped by the latest update()
        self.rebuilt = True  # the latest update() started from scratch (touched is incomplete)
        # Per CQ: bumped whenever its pending list changes, so a head found by a scan can be
        # reused while neither the list nor the CQ's inadmissible set changed (queue_order.head_of).
        self.pending_version: dict[str, int] = {}
        # ClusterQueues whose usage, and whose pending list, the latest update() changed (what
        # the cache's quota tree and heads memo follow).
        self.usage_changed: set[str] = set()
        self.pending_changed: set[str] = set()
        self.added_pending: dict[str, list[WorkloadKey]] = {}  # per CQ, by the latest update()
        # ClusterQueues with a workload queued, and the same in name order once asked for: a
        # cycle looks for heads only there (most of 1,000 queues have none on `xl`).
        self.queued_cqs: set[str] = set()
        self._queued_sorted: list[str] | None = None
        self._seen: Mapping[WorkloadKey, Workload] | None = None  # workloads of the latest update()

    # maintenance ----------------------------------------------------------------
    def update(self, snapshot: ClusterSnapshot) -> WorkloadIndex:
        serial = self.serial + 1
        rebuilt = not self.entries
        # The same LocalQueues mapping as last time (snapshots share unchanged parts): same
        # fingerprint, without walking thousands of LocalQueues every cycle.
        lqs = snapshot.local_queues
        if lqs is not self._lq_source or snapshot.config != self._config:
            lq_fp = {k: (lq.cluster_queue, lq.stop_policy) for k, lq in lqs.items()}
            if lq_fp != self._lq_fingerprint or snapshot.config != self._config:
                self.__init__()  # queue membership may have moved wholesale: rebuild
                self._lq_fingerprint = lq_fp
                self._config = snapshot.config
                rebuilt = True
            self._lq_source = lqs
        self.serial, self.rebuilt, self.touched = serial, rebuilt, set()
        self.added_pending, self.usage_changed, self.pending_changed = {}, set(), set()
        changed = None if rebuilt else snapshot.workloads_changed_since(self._seen)
        if changed is None:
            self._scan_all(snapshot)
        else:  # the snapshot says which keys changed since the one we indexed last
            self._apply_changes(snapshot, changed)
        self._seen = snapshot.workloads
        return self

    def _scan_all(self, snapshot: ClusterSnapshot) -> None:
        entries = self.entries
        for key, wl in snapshot.workloads.items():
            old = entries.get(key)
            if old is not None and old.wl is wl:
                continue
            if old is not None:
                self._drop(key, old)
            self._add(key, wl, snapshot)
        if len(entries) != len(snapshot.workloads):
            for key in entries.keys() - snapshot.workloads.keys():
                self._drop(key, entries[key])

    def _apply_changes(self, snapshot: ClusterSnapshot, keys: Iterable[WorkloadKey]) -> None:
        entries, wls = self.entries, snapshot.workloads
        for key in keys:
            wl, old = wls.get(key), entries.get(key)
            if old is not None and old.wl is wl:
                continue
            if old is not None:
                self._drop(key, old)
            if wl is not None:
                self._add(key, wl, snapshot)

    def _add(self, key: WorkloadKey, wl: Workload, snapshot: ClusterSnapshot) -> None:
        if wl.has_quota_reservation and wl.admission is not None and not wl.is_finished:
            cq = wl.admission.cluster_queue
            e = Entry(wl, cq, True, wl.usage(), None)
            self.reserving.setdefault(cq, {})[key] = e
            self.reserving_version[cq] = self.reserving_version.get(cq, 0) + 1
            self.usage_changed.add(cq)
            total = self.cq_usage.setdefault(cq, {})
            prio = wl.effective_priority
            by_prio = self.usage_by_priority.setdefault(cq, {}).setdefault(prio, {})
            everywhere = self.total_by_priority.setdefault(prio, {})
            for fr, v in e.usage.items():
                total[fr] = total.get(fr, 0) + v
                by_prio[fr] = by_prio.get(fr, 0) + v
                everywhere[fr] = everywhere.get(fr, 0) + v
        else:
            cq = queued_in(wl, snapshot)
            if cq is None:
                e = Entry(wl, "", False, {}, None)
            else:
                sk = sort_key(wl, snapshot.config)
                e = Entry(wl, cq, False, {}, sk, parked_until(wl))
                lst = self.pending.setdefault(cq, [])
                if not lst:
                    self.queued_cqs.add(cq)
                    self._queued_sorted = None
                bisect.insort(lst, (sk, key))
                self.pending_version[cq] = self.pending_version.get(cq, 0) + 1
                self.pending_changed.add(cq)
                self.added_pending.setdefault(cq, []).append(key)
        self.entries[key] = e
        self.touched.add(key)

    def _drop(self, key: WorkloadKey, e: Entry) -> None:
        del self.entries[key]
        self.touched.add(key)
        if e.reserving:
            self.reserving[e.cq].pop(key, None)
            self.reserving_version[e.cq] = self.reserving_version.get(e.cq, 0) + 1
            self.usage_changed.add(e.cq)
            total = self.cq_usage[e.cq]
            by_prio = self.usage_by_priority[e.cq][e.wl.effective_priority]
            everywhere = self.total_by_priority[e.wl.effective_priority]
            for fr, v in e.usage.items():
                total[fr] = total.get(fr, 0) - v
                by_prio[fr] = by_prio.get(fr, 0) - v
                everywhere[fr] = everywhere.get(fr, 0) - v
        elif e.key is not None:
            lst = self.pending[e.cq]
            i = bisect.bisect_left(lst, (e.key, key))
            if i < len(lst) and lst[i][1] == key:
                del lst[i]
                if not lst:
                    self.queued_cqs.discard(e.cq)
                    self._queued_sorted = None
            self.pending_version[e.cq] = self.pending_version.get(e.cq, 0) + 1
            self.pending_changed.add(e.cq)

    # queries ----------------------------------------------------------------------
    def pending_keys(self, cq: str) -> list[tuple[SortKey, WorkloadKey]]:
        return self.pending.get(cq, [])

    def queued_in_order(self) -> list[str]:
        """ClusterQueues with at least one queued workload, by name."""
        names = self._queued_sorted
        if names is None:
            names = self._queued_sorted = sorted(self.queued_cqs)
        return names

    def reserving_in(self, cq: str) -> dict[WorkloadKey, Entry]:
        return self.reserving.get(cq, {})
