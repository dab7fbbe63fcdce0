"""Kueue inside the simulated cluster: the admission engine wired to the object store.

Each round re-parses only the objects that changed since the last one (unchanged Workloads keep
their identity, which the engine's per-ClusterQueue index relies on), runs Kueue's workload
controller, then — when that has nothing to write, as Kueue's scheduler runs on a settled cache —
one scheduling cycle, and writes every decision into the Workload exactly as Kueue would
(`admission.status_updates`). ClusterQueue and LocalQueue status follow the workloads they hold.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections import defaultdict, deque
from collections.abc import Callable
from typing import Any

from kueuetop.admission import status_updates as su
from kueuetop.admission.decisions import Admit, Decision, Evict, MarkAdmitted, Pending, Preempt
from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.kueue_loop import KueueLoop
from kueuetop.admission.queue_state import QueueState, same_queue_state
from kueuetop.admission.queue_totals import QueueTotals
from kueuetop.admission.shared_map import DELETE, SharedMap
from kueuetop.kueue.config import KueueConfig
from kueuetop.kueue.errors import KueueParseError
from kueuetop.kueue.json_copy import clone
from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.snapshot import ClusterSnapshot, WorkloadDelta
from kueuetop.kueue.workload import Workload, reparse_workload
from kueuetop.sim.kueue.metrics import KueueCounters
from kueuetop.sim.storage.objectstore import NotFound, ObjectStore, StoreError, WatchEvent

_log = logging.getLogger(__name__)

KUEUE = "kueue.x-k8s.io"
MAX_EVENTS = 5000  # Kueue's Events kept at once (sim_events.EventWriter keeps as many of the others)
WorkloadKey = tuple[str, str]

# Kinds whose change rebuilds the engine's view of queues, flavors and checks.
_BASE_KINDS = {"ClusterQueue", "LocalQueue", "ResourceFlavor", "Cohort", "AdmissionCheck", "Namespace",
               "WorkloadPriorityClass", "PriorityClass", "ProvisioningRequestConfig"}


def _same_but_status(a: dict, b: dict) -> bool:
    ma, mb = a.get("metadata") or {}, b.get("metadata") or {}
    return (a.get("spec") == b.get("spec") and ma.get("labels") == mb.get("labels")
            and ma.get("deletionTimestamp") == mb.get("deletionTimestamp"))


class KueueController:
    name = "kueue"

    def __init__(self, store: ObjectStore, config: KueueConfig | None = None, record_events: bool = True) -> None:
        self.store = store
        self.config = config or KueueConfig()
        self.record_events = record_events
        # Kueue's loop state: the queue state, the last cycle's snapshot, the EngineCache.
        self.loop = KueueLoop(QueueState())
        self._workloads: dict[WorkloadKey, Workload] = {}
        # The stored object each entry of _workloads was parsed from (stored objects are never
        # mutated), so the next version reparses only what changed.
        self._parsed_from: dict[WorkloadKey, dict] = {}
        self._dirty_wl: set[WorkloadKey] = set()
        self._base_dirty = True
        self._base = ClusterSnapshot(config=self.config)
        self._wls = SharedMap.of()  # _workloads as the latest snapshot saw it
        self._last_snap: tuple[ClusterSnapshot | None, ClusterSnapshot, ClusterSnapshot] | None = None
        # Workload keys changed since the last scheduled snapshot, handed to the engine with
        # each snapshot so its per-cycle bookkeeping skips the (many) unchanged workloads.
        self._changed_since_cycle: set[WorkloadKey] = set()
        self._status_dirty_cq: set[str] = set()
        self._status_dirty_lq: set[tuple[str, str]] = set()
        # The workload controller only needs to look at workloads that changed, whose queues
        # changed, or whose timer (backoff, PodsReady timeout, max execution) is due.
        self._to_reconcile: set[WorkloadKey] = set()
        self._wake: dict[WorkloadKey, float] = {}
        self._by_cq: dict[str, set[WorkloadKey]] = defaultdict(set)
        self._by_lq: dict[tuple[str, str], set[WorkloadKey]] = defaultdict(set)
        self._queues_of: dict[WorkloadKey, tuple[str | None, tuple[str, str]]] = {}
        self._totals = QueueTotals()  # CQ/LQ status sums, kept per workload change
        self.broken: dict[str, str] = {}  # object → parse error, for reports and the console
        self.cycles = 0
        self._last_cycle: tuple[float, ClusterSnapshot, bool] | None = None  # (now, base, fixpoint)
        self._parked_at: float | None = None  # instant of a cycle that moved the queue state, writing nothing
        self.counters = KueueCounters()  # Kueue's /metrics counters and histograms
        # Pending decisions that left a stored object unchanged, with that object: a parked
        # queue's head gets the same verdict cycle after cycle, and working out that nothing
        # changes (a status copy, its resourceRequests) was a tenth of a busy scheduler's time.
        self._unchanged_by: dict[WorkloadKey, tuple[dict, Pending]] = {}
        # The Events recorded, oldest first: at most `max_events` are kept (the oldest deleted),
        # as sim_events.EventWriter does, standing in for the API server's one-hour event TTL.
        self._events: deque[tuple[str, str]] = deque()
        self.max_events = MAX_EVENTS

    # ------------------------------------------------------------------ events
    def on_event(self, ev: WatchEvent) -> None:
        kind = ev.kind.kind
        if kind == "Workload":
            meta = ev.obj.get("metadata") or {}
            self._dirty_wl.add((meta.get("namespace", ""), meta.get("name", "")))
        elif kind in _BASE_KINDS:
            if kind in ("ClusterQueue", "LocalQueue") and ev.old is not None and _same_but_status(ev.old, ev.obj):
                return  # our own status writes: nothing the engine decides on changed
            self._base_dirty = True

    # ------------------------------------------------------------------ views
    @property
    def state(self) -> QueueState:
        """The queue state after the last cycle."""
        return self.loop.state

    @property
    def cache(self) -> EngineCache:
        return self.loop.cache

    @property
    def _prev(self) -> ClusterSnapshot | None:
        return self.loop.prev

    def _refresh(self) -> ClusterSnapshot:
        if self._base_dirty:
            self._base_dirty = False
            objs = []
            for group, plural in ((KUEUE, "clusterqueues"), (KUEUE, "localqueues"), (KUEUE, "resourceflavors"),
                                  (KUEUE, "cohorts"), (KUEUE, "admissionchecks"), ("", "namespaces"),
                                  (KUEUE, "workloadpriorityclasses"), ("scheduling.k8s.io", "priorityclasses"),
                                  (KUEUE, "provisioningrequestconfigs")):
                items, _ = self.store.list(group, plural, copy=False)
                for o in items:
                    parsed = self._parse(o)
                    if parsed is not None:
                        objs.append(parsed)
            self._base = ClusterSnapshot.from_objects(objs, self.config)
            self._status_dirty_cq.update(self._base.cluster_queues)
            self._status_dirty_lq.update(self._base.local_queues)
            self._to_reconcile.update(self._workloads)
            # A LocalQueue's CQ may have changed: re-index every workload's queues.
            for key, wl in self._workloads.items():
                self._index(key, wl)
        changes: dict[WorkloadKey, object] = {}
        for key in self._dirty_wl:
            obj = self.store.try_get(KUEUE, "workloads", key[0], key[1], copy=False)
            old = self._workloads.get(key)
            wl = self._parse_workload(key, old, obj) if obj is not None else None
            if isinstance(old, Workload):
                self._mark_status(key)
            if isinstance(wl, Workload):
                self._workloads[key] = wl
                changes[key] = wl
                self._to_reconcile.add(key)
                self._index(key, wl)
                self._mark_status(key)
            else:
                self._workloads.pop(key, None)
                changes[key] = DELETE
                self._parsed_from.pop(key, None)
                self._to_reconcile.discard(key)
                self._wake.pop(key, None)
                self._unindex(key)
        if self._dirty_wl:
            self._changed_since_cycle.update(self._dirty_wl)
            self._dirty_wl.clear()
        last = self._last_snap
        if not changes and last is not None and last[0] is self._prev and last[1] is self._base:
            return last[2]  # nothing changed since: the same snapshot (most rounds of a settle)
        # The previous cycle's snapshot must keep the workloads it saw, or
        # changed_cluster_queues(prev, cur) never notices finished / evicted workloads and
        # inadmissible heads are never requeued (Kueue's QueueInadmissibleWorkloads): each
        # snapshot has its own version of the map, sharing what did not change with the last.
        wls = self._wls = self._wls.evolve(changes)
        delta = None
        if self._prev is not None:
            delta = WorkloadDelta(self._prev.workloads, wls, frozenset(self._changed_since_cycle))
        snap = dataclasses.replace(self._base, workloads=wls, workload_delta=delta)
        self._last_snap = (self._prev, self._base, snap)
        return snap

    def _unindex(self, key: WorkloadKey) -> None:
        prev = self._queues_of.pop(key, None)
        if prev is not None:
            cq, lq = prev
            if cq is not None:
                self._by_cq[cq].discard(key)
            self._by_lq[lq].discard(key)
        self._totals.discard(key)

    def _index(self, key: WorkloadKey, wl: Workload) -> None:
        self._unindex(key)
        cq = self._base.cluster_queue_of(wl)
        lq = (wl.namespace, wl.queue_name)
        self._queues_of[key] = (cq, lq)
        if cq is not None:
            self._by_cq[cq].add(key)
        self._by_lq[lq].add(key)
        self._totals.set(key, wl, cq)

    def _mark_status(self, key: WorkloadKey) -> None:
        cq, lq = self._queues_of.get(key, (None, None))
        if cq:
            self._status_dirty_cq.add(cq)
        if lq is not None:
            self._status_dirty_lq.add(lq)

    def _parse_workload(self, key: WorkloadKey, old: Workload | None, obj: dict) -> Any:
        prev = self._parsed_from.get(key)
        if old is None or prev is None:
            wl = self._parse(obj)
        else:
            wl = self._parse(obj, lambda o: reparse_workload(old, prev, o, self.loop.cache.parse))
        if isinstance(wl, Workload):
            self._parsed_from[key] = obj
        else:
            self._parsed_from.pop(key, None)
        return wl

    def _parse(self, obj: dict, parser: Callable[[dict], Any] | None = None) -> Any:
        try:
            return parser(obj) if parser is not None else parse_object(obj, self.loop.cache.parse)
        except KueueParseError as exc:
            meta = obj.get("metadata") or {}
            ident = f"{obj.get('kind')} {meta.get('namespace', '')}/{meta.get('name', '')}".replace(" /", " ")
            if self.broken.get(ident) != str(exc):
                _log.warning("ignoring malformed object: %s", exc)
            self.broken[ident] = str(exc)
            return None

    def snapshot(self) -> ClusterSnapshot:
        return self._refresh()

    @property
    def queue_totals(self) -> QueueTotals:
        """The per-queue status sums over the workloads of the latest `snapshot()`."""
        return self._totals

    # ------------------------------------------------------------------ writes
    def _write(self, key: WorkloadKey, decision: Decision, now: float, snap: ClusterSnapshot,
               from_scheduler: bool = False) -> bool:
        try:
            cur = self.store.get(KUEUE, "workloads", key[0], key[1], copy=False)
        except NotFound:
            return False
        pending = isinstance(decision, Pending)
        if pending:
            # Stored objects are never changed in place, and a Pending verdict reads no clock
            # when it changes nothing (conditions move their times only when they change).
            hit = self._unchanged_by.get(key)
            if hit is not None and hit[0] is cur and hit[1] == decision:
                return False
        new = su.apply_decision(cur, decision, now, config=self.config, cache=self.loop.cache.parse)
        wrote = False
        try:
            if new.get("spec") != cur.get("spec"):
                spec = clone(new["spec"])  # apply_decision shares unchanged parts with `cur`
                self.store.patch(KUEUE, "workloads", key[0], key[1], lambda o: {**o, "spec": spec}, copy=False)
                wrote = True
            if new.get("status") != cur.get("status"):
                status = new.get("status") or {}
                self.store.replace_status(KUEUE, "workloads", key[0], key[1], status)
                wrote = True
        except StoreError as exc:
            _log.warning("writing %s for %s/%s failed: %s", type(decision).__name__, key[0], key[1], exc)
            return False
        if pending and not wrote:
            if len(self._unchanged_by) >= 250_000:
                self._unchanged_by.clear()
            self._unchanged_by[key] = (cur, decision)
        if wrote:
            self._count(decision, cur, snap, now)
            if self.record_events:
                preemptor = None
                if isinstance(decision, Preempt):
                    preemptor = self.store.try_get(KUEUE, "workloads", *decision.preemptor, copy=False)
                for ev in su.decision_events(cur, new, decision, now, preemptor=preemptor,
                                             cache=self.loop.cache.parse):
                    if pending:
                        # Only the scheduler records an Event for a pending workload, and always
                        # as "Pending" whatever the condition's reason (scheduler.go
                        # requeueAndUpdate: Eventf(Warning, "Pending", inadmissibleMsg)); the
                        # workload controller's Inadmissible verdicts set the condition alone.
                        if not from_scheduler:
                            continue
                        ev = {**ev, "reason": "Pending"}
                    self._record_event(ev)
        return wrote

    def _count(self, d: Decision, before: dict, snap: ClusterSnapshot, now: float) -> None:
        wl = snap.workloads.get(d.victim if isinstance(d, Preempt) else d.workload)
        if wl is None:
            return
        cq = (wl.admission.cluster_queue if wl.admission else snap.cluster_queue_of(wl)) or ""
        pc = wl.priority_class_name
        if isinstance(d, Admit):
            qr = wl.condition("Requeued")
            since = qr.last_transition if qr and qr.status == "True" and qr.last_transition else wl.meta.creation
            wait = max(0.0, now - (since or now))
            self.counters.record_quota_reserved(d.cluster_queue, wl.namespace, wl.queue_name, pc, wait)
            if d.admitted:
                self.counters.record_admitted(d.cluster_queue, wl.namespace, wl.queue_name, pc, wait)
        elif isinstance(d, MarkAdmitted):
            self.counters.record_admitted(cq, wl.namespace, wl.queue_name, pc, 0.0)
        elif isinstance(d, Preempt):
            pre = snap.workloads.get(d.preemptor)
            self.counters.record_preemption((snap.cluster_queue_of(pre) if pre else "") or "", d.reason)
            self.counters.record_eviction(cq, wl.namespace, wl.queue_name, "Preempted", "", pc)
        elif isinstance(d, Evict):
            self.counters.record_eviction(cq, wl.namespace, wl.queue_name, d.reason.split("DueTo")[0],
                                          d.underlying_cause, pc)

    def _record_event(self, ev: dict) -> None:
        inv = ev.get("involvedObject") or {}
        obj = {"apiVersion": "v1", "kind": "Event",
               "metadata": {"generateName": f"{inv.get('name', 'workload')}.", "namespace": inv.get("namespace") or "default"},
               "involvedObject": inv, "reason": ev.get("reason", ""), "message": ev.get("message", ""),
               "type": ev.get("type", "Normal"), "firstTimestamp": ev.get("timestamp"),
               "lastTimestamp": ev.get("timestamp"), "count": 1,
               "source": {"component": "kueue-admission"}, "reportingComponent": "kueue-admission"}
        try:
            created = self.store.create_object(obj)
        except StoreError:
            return
        meta = created.get("metadata") or {}
        self._events.append((str(meta.get("namespace") or ""), str(meta.get("name") or "")))
        while len(self._events) > self.max_events:
            ns, name = self._events.popleft()
            with contextlib.suppress(StoreError):
                self.store.delete("", "events", ns, name)

    def _write_queue_status(self, snap: ClusterSnapshot, now: float) -> bool:
        if not self._status_dirty_cq and not self._status_dirty_lq:
            return False
        want_cq, want_lq = self._status_dirty_cq, self._status_dirty_lq
        totals = self._totals
        wrote = False
        for name in sorted(want_cq):
            cq = snap.cluster_queues.get(name)
            if cq is None:
                continue
            cur = self.store.try_get(KUEUE, "clusterqueues", None, name, copy=False)
            if cur is None:
                continue
            status = su.cluster_queue_status(snap, name, now, previous=cur.get("status"),
                                             pending_workloads=totals.cq_pending(snap, name),
                                             reservations=totals.cq_reservations(name), cache=self.cache)
            wrote |= self._put_status("clusterqueues", None, name, cur, status)
        for key in sorted(want_lq):
            if key not in snap.local_queues:
                continue
            cur = self.store.try_get(KUEUE, "localqueues", key[0], key[1], copy=False)
            if cur is None:
                continue
            status = su.local_queue_status(snap, key, now, previous=cur.get("status"),
                                           pending_workloads=totals.lq_pending(snap, key),
                                           reservations=totals.lq_reservations(key), cache=self.cache)
            wrote |= self._put_status("localqueues", key[0], key[1], cur, status)
        self._status_dirty_cq = set()
        self._status_dirty_lq = set()
        return wrote

    def _put_status(self, plural: str, ns: str | None, name: str, cur: dict, status: dict) -> bool:
        if cur.get("status") == status:
            return False
        try:
            self.store.replace_status(KUEUE, plural, ns, name, status)
            return True
        except StoreError as exc:
            _log.warning("status of %s %s failed: %s", plural, name, exc)
            return False

    # ------------------------------------------------------------------ loop
    def _controller_pass(self, snap: ClusterSnapshot, now: float) -> tuple[Decision, ...]:
        changed, self._to_reconcile = self._to_reconcile, set()
        return self.loop.reconcile_due(snap, now, changed, self._wake)

    def reconcile(self, now: float) -> bool:
        snap = self._refresh()
        decisions = self._controller_pass(snap, now)
        wrote = False
        for d in decisions:
            key = d.victim if isinstance(d, Preempt) else d.workload
            wrote |= self._write(key, d, now, snap)
        if not wrote and not self._cycle_would_repeat(now):
            self.loop.requeue_inadmissible(snap)
            t0 = time.perf_counter()
            before = self.loop.state
            result = self.loop.schedule(snap, now)
            self.cycles += 1
            admitted = any(isinstance(d, Admit) for d in result.decisions)
            self.counters.record_admission_attempt("success" if admitted else "inadmissible",
                                                   time.perf_counter() - t0)
            self._changed_since_cycle = set()
            fixpoint = same_queue_state(before, result.state)
            self._last_cycle = (now, self._base, fixpoint)
            for d in result.decisions:
                key = d.victim if isinstance(d, Preempt) else d.workload
                wrote |= self._write(key, d, now, snap, from_scheduler=True)
            self._parked_at = now if not wrote and not fixpoint else None
        if wrote:
            # ClusterQueue and LocalQueue status follow the workloads: write them once this
            # instant's workload writes have settled (the round after always comes, as this one
            # wrote), not after every round (Kueue's queue controllers coalesce by key too).
            return True
        if self._dirty_wl or self._base_dirty:
            snap = self._refresh()
        return self._write_queue_status(snap, now)

    def _cycle_would_repeat(self, now: float) -> bool:
        """True when a cycle now would get exactly the last cycle's input — same instant, no
        workload or queue changed since, and the last cycle left the queue state as it found
        it — and so (the engine being pure) make the same decisions, already written. Other
        controllers' rounds at one instant (pods starting, …) then cost no cycle."""
        last = self._last_cycle
        return (last is not None and last[0] == now and last[1] is self._base and last[2]
                and not self._changed_since_cycle and not self._dirty_wl and not self._base_dirty)

    def next_wakeup(self, now: float) -> float | None:
        if self._parked_at == now:
            # The last cycle only parked heads (queue state moved, nothing written): Kueue's
            # scheduler takes the next heads at once, not when something else happens. A cycle
            # that wrote keeps the instant going by itself (and a preemption loop stays bounded
            # by the cluster's per-instant limits, as before).
            return now
        return min(self._wake.values(), default=None)
