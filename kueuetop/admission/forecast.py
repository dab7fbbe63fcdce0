"""When will each pending workload start: Kueue's loop run forward in virtual time from a snapshot.

From a cluster snapshot at `now` and a runtime for every running and pending workload, the
forecast runs what the simulator's Kueue controller runs — the workload controller
(`reconcile`, only for the workloads that changed or whose timer is due) and, when that writes
nothing, one scheduling cycle (`KueueLoop`) — and writes each decision the way Kueue writes it
(`status_updates`). The job side is the simulator's: an evicted workload's pods stop and its
quota is released at once; an admitted workload's pods are ready at once and finish after its
runtime, counted from its latest admission (a preempted job starts over). Then the clock jumps
to the next finish or controller timer (backoff, PodsReady timeout, …). No workload arrives
after `now`. So with exact runtimes the forecast is the simulator's future, admission by
admission (tests/admission/test_forecast_exact.py holds it to that).

With `pools` the pods also need nodes (`pod_placement`): an admitted workload's pods wait for
free GPUs or for an autoscaled pool's new nodes, and its runtime counts from when they start.

A workload answers when it is admitted: quota reserved and every admission check Ready. With
`pools`, a ProvisioningRequest check passes when the workload's pods find nodes (check-capacity:
on the free capacity as it is; other classes: the pools grow for them), `check_timing`; every
other check is taken to pass the instant quota is reserved, and the output says so
(`CHECKS_ASSUMED`). With pools, a workload whose quota is reserved at `now` while only
ProvisioningRequest checks wait is answered too (`pending_workloads`): with such checks that wait
is often most of the wait.

Each pending workload gets: the admission time with expected runtimes and, from two more runs
with every runtime at its optimistic and its pessimistic end, the earliest and latest; the
flavors it is given; the workloads whose finish or eviction at that instant, in its cohort tree,
let it in; what it preempts. One the engine never admits once everything running has finished
gets "never" with explain's verdict; one still waiting at the horizon gets no time.

With estimated runtimes the caller passes a `resolution`: finishes are rounded to a grid
(`finish_grid`), as the estimates cannot place them to the second, and the forward run has far
fewer instants to go through. `with_ranges` adds the earliest and latest to a forecast made
without them, so a caller can show the expected starts first.

Pure: no clock reads, no I/O. `cache`: the EngineCache the caller owns (the console's forecast
worker keeps one; None builds one per call).
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from kueuetop.admission import status_updates as su
from kueuetop.admission.check_timing import (
    NodeCheck,
    node_checks,
    provisioning_waits,
    waiting_checks,
)
from kueuetop.admission.decisions import Admit, Decision, Pending, Preempt
from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.explain import explain
from kueuetop.admission.finish_grid import finish_grid
from kueuetop.admission.forecast_result import (
    Forecast,
    PodSetFlavors,
    PoolCapacity,
    RuntimeEstimate,
    WorkloadForecast,
)
from kueuetop.admission.kueue_loop import KueueLoop
from kueuetop.admission.pod_placement import GpuPlacement, PodPlacer, gpu_pods
from kueuetop.admission.queue_state import same_queue_state
from kueuetop.admission.shared_map import DELETE, SharedMap
from kueuetop.gc_pacing import sparse_collections
from kueuetop.kueue.run_times import admitted_at
from kueuetop.kueue.snapshot import ClusterSnapshot, WorkloadDelta
from kueuetop.kueue.workload import PodSetAssignment, Workload, with_conditions
from kueuetop.kueue.workload_api import status_from_api, workload_to_api

WorkloadKey = tuple[str, str]

# Runtimes per workload, or a function that gives them when first asked (they may still be on
# their way when the run starts: `_World.begin` reads them).
Runtimes = Mapping[WorkloadKey, float] | Callable[[], Mapping[WorkloadKey, float]]
Estimates = Mapping[WorkloadKey, RuntimeEstimate] | Callable[[], Mapping[WorkloadKey, RuntimeEstimate]]

HORIZON = 7 * 24 * 3600.0  # seconds of virtual time a forecast looks ahead at most
MAX_STEPS = 200_000  # loop rounds at most (each a controller pass or a cycle)


@dataclass
class _Run:
    """What one forward run saw, per pending workload."""

    start: dict[WorkloadKey, float] = field(default_factory=dict)
    pods_start: dict[WorkloadKey, float] = field(default_factory=dict)
    flavors: dict[WorkloadKey, tuple[PodSetFlavors, ...]] = field(default_factory=dict)
    after: dict[WorkloadKey, tuple[WorkloadKey, ...]] = field(default_factory=dict)
    preempts: dict[WorkloadKey, list[WorkloadKey]] = field(default_factory=dict)
    stable: bool = True  # False: the horizon or the step limit ended it with work left
    end: float = 0.0
    final: ClusterSnapshot | None = None
    loop: KueueLoop | None = None


class _World:
    """The unfinished workloads as the forward run changes them, and the job side's timers."""

    def __init__(self, snapshot: ClusterSnapshot, runtimes: Runtimes, now: float,
                 cache: EngineCache, pools: Mapping[str, PoolCapacity] | None = None,
                 placements: Mapping[WorkloadKey, tuple[GpuPlacement, ...]] | None = None,
                 resolution: Callable[[float, float], float] | None = None,
                 checks: Mapping[str, NodeCheck] | None = None) -> None:
        self.base = dataclasses.replace(snapshot, workloads={}, workload_delta=None)
        self.resolution = resolution  # rounds each finish to the grid (None: exact finishes)
        self.cache = cache
        # The runtimes are first read by the job side, at the first round's end (`begin`): a
        # caller may still be working them out (the console's forecast child, beside the run).
        self._runtimes = runtimes
        self.runtimes: Mapping[WorkloadKey, float] = {}
        self.begun = False
        self.now = now
        self.wls: dict[WorkloadKey, Workload] = {k: w for k, w in snapshot.workloads.items() if not w.is_finished}
        self.data: dict[WorkloadKey, dict] = {}  # API form, built on a workload's first write
        # Per workload, the Pending decision last written into it and the API dict that came out
        # (or was left as it was): the same Pending on that very dict changes nothing (its
        # condition already says so), and a parked head is told the same at every instant its
        # cohort tree requeues it. Per forward run; read only with the cache's fast paths on.
        self.pending_written: dict[WorkloadKey, tuple[Pending, dict]] = {}
        # A Pending that would change only the message of the QuotaReserved=False condition our
        # last Pending wrote ("N more needed" moving as quota frees), with its instant: nothing
        # the engine decides reads that message, so it is written when the workload's dict is
        # next read (`_api`: before any other write to it) or the run's end asks for the final
        # statuses — each parked head's message moving as quota frees took a third of the
        # writes of a forward run on `large`. With the cache's fast paths only.
        self.deferred: dict[WorkloadKey, tuple[Pending, float]] = {}
        self.shared = SharedMap.of(self.wls)
        self.changes: dict[WorkloadKey, object] = {}
        self.changed_since_cycle: set[WorkloadKey] = set()
        self.to_reconcile: set[WorkloadKey] = set(self.wls)
        self.wake: dict[WorkloadKey, float] = {}
        self.ends: list[tuple[float, WorkloadKey]] = []  # heap of (finish time, key)
        self.ends_at: dict[float, list[WorkloadKey]] = {}  # the same, by instant (stale entries too)
        self.end_of: dict[WorkloadKey, float] = {}
        self.freed_now: list[WorkloadKey] = []  # finished or gave quota back at this instant
        self.prev_workloads: Mapping[WorkloadKey, Workload] | None = None
        # Workloads the job side has to look at, in the order they were written: pods of workloads
        # admitted at one instant queue for nodes in admission order (a set's order would vary
        # from one process to the next with the string hash seed).
        self.jobs_todo: dict[WorkloadKey, None] = dict.fromkeys(self.wls)
        self.started: set[WorkloadKey] = set()  # admitted by this round's writes
        self.endless: set[WorkloadKey] = set()  # running with no runtime: their end is unknown
        self.root_of: Callable[[Workload], str] = lambda wl: ""  # set by the run: the workload's cohort tree
        self.queued: dict[str, set[WorkloadKey]] = {}  # per tree: active workloads holding no quota
        self.pools = pools
        self.pods = PodPlacer(pools, now) if pools is not None else None  # None: pods run at admission
        self.pod_pools: dict = {}  # gpu_pods' memo: the pools per pod shape and flavor
        self.pods_started: set[WorkloadKey] = set()  # pods started this round
        # ProvisioningRequest checks wait for the pods to be placed (only with pools): per
        # workload, the checks passed when its last pod is.
        self.node_checks: Mapping[str, NodeCheck] = checks or {}  # None without pools (`timed_checks`)
        self.check_waits: dict[WorkloadKey, tuple[str, ...]] = {}
        # What `begin` does once the runtimes are known, in this order: the runs under way end
        # (key, since), the pods still waiting for nodes learn how long they will run.
        self._ends_to_schedule: list[tuple[WorkloadKey, float]] = []
        self._pods_to_time: list[WorkloadKey] = []
        self._stopped_early: set[WorkloadKey] = set()  # gave quota back before `begin`
        running = [(self._queued_since(w), admitted_at(w) or 0.0, k) for k, w in self.wls.items()
                   if w.has_quota_reservation and not w.is_evicted]
        for _, since, key in sorted(running):
            if self.pods is not None:
                waits = self._provisioning(key)
                if waits is not None:
                    self.pods.await_request(key, waits[1])
                # Without placements its pods are taken as bound where nobody knows: they free no GPUs.
                pods = self._gpu_pods(self.wls[key]) if placements is not None else []
                placed = placements.get(key, ()) if placements is not None else ()
                if self.pods.seed(key, pods, placed, None):
                    self._pods_to_time.append(key)
                    if waits is not None:
                        self.check_waits[key] = waits[0]
                    continue  # pods still wait for nodes: its run has not begun, it ends after they start
                # Its pods run: the runtime counts from when they started, which is later than
                # the admission when they waited for nodes (a pool scaled up for them).
                started = PodPlacer.started_at(placed)
                if started is not None:
                    since = max(since, started)
            self._ends_to_schedule.append((key, since))

    def begin(self) -> None:
        """Read the runtimes and time the runs under way at the snapshot (before the job side's
        first look: nothing before it reads an end). What gave its quota back since holds none."""
        if self.begun:
            return
        self.begun = True
        runtimes = self._runtimes() if callable(self._runtimes) else self._runtimes
        self.runtimes = runtimes
        if self.pods is not None:
            for key in self._pods_to_time:
                if key in self.pods.waiting and key not in self._stopped_early:
                    self.pods.runtime[key] = runtimes.get(key)
        for key, since in self._ends_to_schedule:
            if key not in self._stopped_early:
                self._schedule_end(key, since)
        self._ends_to_schedule, self._pods_to_time = [], []

    # -- snapshots -----------------------------------------------------------------------------
    def snapshot(self) -> ClusterSnapshot:
        if self.changes:
            self.shared = self.shared.evolve(self.changes)
            self.changes = {}
        delta = None
        if self.prev_workloads is not None:
            delta = WorkloadDelta(self.prev_workloads, self.shared, frozenset(self.changed_since_cycle))
        return dataclasses.replace(self.base, workloads=self.shared, workload_delta=delta)

    def track(self, root_of: Callable[[Workload], str]) -> None:
        """Follow, per cohort tree, which workloads still want quota (see `skip_quiet_ends`)."""
        self.root_of = root_of
        for key, wl in self.wls.items():
            self._track(key, None, wl)

    def _track(self, key: WorkloadKey, old: Workload | None, new: Workload | None) -> None:
        if old is not None:
            self.queued.get(self.root_of(old), set()).discard(key)
        if new is not None and new.active and not new.has_quota_reservation and not new.is_finished:
            self.queued.setdefault(self.root_of(new), set()).add(key)

    def skip_quiet_ends(self, t: float) -> bool:
        """The instant `t` is nothing but ends in trees where no workload wants quota: those runs
        leave the forward run at once and no round is spent on the instant (what a cycle there
        would do: nothing, the engine being pure and no head of another tree having changed).
        False, and nothing done, when the instant has anything else (or pods are placed: nodes
        are shared across trees)."""
        if self.pods is not None or any(w == t for w in self.wake.values()):
            return False
        due = []
        for key in self.ends_at.get(t, ()):
            if self.end_of.get(key) == t:
                wl = self.wls.get(key)
                if wl is None or self.queued.get(self.root_of(wl)):
                    return False
                due.append(key)
        if not due:
            return False
        self.ends_at.pop(t, None)
        while self.ends and self.ends[0][0] <= t:
            end, key = heapq.heappop(self.ends)
            if self.end_of.get(key) == end:
                del self.end_of[key]
                self._set(key, None)
        return True

    def pending_unchanged(self, d: Pending) -> bool:
        """`d` was the last Pending written into the workload (or deferred) and nothing was
        written since: applying it again would leave the workload as it is."""
        later = self.deferred.get(d.workload)
        if later is not None:
            return later[0] == d
        seen = self.pending_written.get(d.workload)
        return seen is not None and seen[1] is self.data.get(d.workload) and seen[0] == d

    def defer_pending(self, d: Pending) -> bool:
        """Keep `d` for later when the last write to the workload was a Pending of the same reason
        (its condition then differs in the message alone: the same status, reason, generation
        and resource requests)."""
        seen = self.pending_written.get(d.workload)
        if seen is None or seen[1] is not self.data.get(d.workload) or seen[0].reason != d.reason:
            return False
        self.deferred[d.workload] = (d, self.now)
        return True

    def flush(self, key: WorkloadKey) -> None:
        """Write the Pending deferred for `key`, as of the instant it was decided."""
        d, at = self.deferred.pop(key)
        new = su.apply_decision(self.data[key], d, at, config=self.base.config, cache=self.cache.parse)
        self.write(key, new)
        self.pending_written[key] = (d, self.data[key])

    def flush_all(self) -> None:
        for key in list(self.deferred):  # a finished workload's was dropped with it (`_set`)
            self.flush(key)

    def note_pending(self, d: Pending) -> None:
        """`d` was just applied to the workload (written, or found already there)."""
        self.pending_written[d.workload] = (d, self._api(d.workload))

    def _set(self, key: WorkloadKey, wl: Workload | None) -> None:
        self._track(key, self.wls.get(key), wl)
        if wl is None:
            self.wls.pop(key, None)
            self.data.pop(key, None)
            self.deferred.pop(key, None)
            self.wake.pop(key, None)
            self.check_waits.pop(key, None)
            self.to_reconcile.discard(key)
            self.changes[key] = DELETE
        else:
            self.wls[key] = wl
            self.changes[key] = wl
            self.to_reconcile.add(key)
        self.changed_since_cycle.add(key)

    def _api(self, key: WorkloadKey) -> dict:
        if key in self.deferred:
            self.flush(key)  # what is read next is the workload as Kueue would have written it
        d = self.data.get(key)
        if d is None:
            d = self.data[key] = workload_to_api(self.wls[key])
        return d

    def write(self, key: WorkloadKey, new: dict, conditions_only: bool = False) -> bool:
        """Keep `new` (a written version of the workload's API dict) when it differs.
        `conditions_only`: the writer changed the status conditions alone (re-read only them)."""
        old = self._api(key)
        if new.get("status") == old.get("status") and new.get("spec") == old.get("spec"):
            return False
        if new.get("spec") != old.get("spec"):
            meta = new["metadata"] = dict(new.get("metadata") or {})
            meta["generation"] = int(meta.get("generation") or 0) + 1  # the API server's bump on spec writes
            conditions_only = False
        self.data[key] = new
        read = with_conditions if conditions_only else status_from_api
        wl = read(self.wls[key], new, self.cache.parse)
        self._set(key, wl)
        if wl.is_admitted and not wl.is_evicted:
            self.started.add(key)
        return True

    # -- the job side --------------------------------------------------------------------------
    def _gpu_pods(self, wl: Workload) -> list:
        assert self.pools is not None and self.pods is not None
        return gpu_pods(wl, self.base.flavors, self.pools, self.pod_pools, keep_unplaced=wl.key in self.pods.no_scale)

    def _queued_since(self, wl: Workload) -> float:
        """Where its pods stand in the line for nodes: from its admission, or for one whose
        ProvisioningRequests wait, from when they were made (the check went Pending then), the
        oldest request being served first."""
        since = admitted_at(wl) or 0.0
        if self.node_checks and not wl.is_admitted:
            made = [c.last_transition for c in wl.admission_checks
                    if c.name in self.node_checks and c.state != "Ready" and c.last_transition is not None]
            if made:
                return min(made)
        return since

    def _provisioning(self, key: WorkloadKey) -> tuple[tuple[str, ...], bool] | None:
        """Its pending ProvisioningRequest checks (which wait for its pods' nodes) and whether
        the pools grow for them; None when none waits so (no pools, admitted, other checks)."""
        wl = self.wls[key]
        if not self.node_checks or not wl.has_quota_reservation or wl.is_admitted:
            return None
        return provisioning_waits(wl, self.node_checks)

    def checks_on_reservation(self, key: WorkloadKey) -> None:
        """Quota was just reserved with checks to pass: the ProvisioningRequests wait for the
        pods (placed by `jobs`, the pools not grown for check-capacity ones), the others pass now."""
        waits = self._provisioning(key)
        if waits is not None:
            self.check_waits[key] = waits[0]
            if self.pods is not None:
                self.pods.await_request(key, waits[1])
        _pass_checks(self, key, skip=waits[0] if waits is not None else ())

    def stopped(self, key: WorkloadKey) -> None:
        """It gave its quota back: no end to wait for; its pods are deleted, their GPUs free."""
        if not self.begun:
            self._stopped_early.add(key)
        self.end_of.pop(key, None)
        self.check_waits.pop(key, None)  # a new reservation asks again
        if self.pods is not None:
            self.pods.release(key)

    def _schedule_end(self, key: WorkloadKey, since: float) -> None:
        runtime = self.runtimes.get(key)
        if runtime is None:
            self.endless.add(key)  # no estimate: it holds its quota for the whole forecast
            return
        end = since + runtime if self.resolution is None else self.resolution(since, runtime)
        end = max(self.now, end)
        self.end_of[key] = end
        heapq.heappush(self.ends, (end, key))
        self.ends_at.setdefault(end, []).append(key)

    def jobs(self, config_wait: bool) -> bool:
        """Pods of new admissions start (PodsReady), evicted ones stop (quota released), due ones
        finish (the workload leaves the forecast). Whether anything was written."""
        self.begin()
        wrote = False
        todo, self.jobs_todo = self.jobs_todo, {}
        for key in todo:
            wl = self.wls.get(key)
            if wl is None or wl.is_finished:
                continue
            if _needs_release(wl):
                # The job integration stops the pods; the quota comes back (jobframework).
                self.stopped(key)
                if self.write(key, su.release_quota(self._api(key), self.now, config=self.base.config)):
                    wrote = True
                    self.freed_now.append(key)
                continue
            if wl.has_quota_reservation and not wl.is_evicted and key not in self.end_of:
                if self.pods is None:
                    self._schedule_end(key, self.now)
                elif not self.pods.holds(key):
                    # The job's pods are created and queue for nodes; the runtime clock waits for them.
                    self.pods.admit(key, self._gpu_pods(wl), self.runtimes.get(key))
            if config_wait and (self.pods is None or key in self.end_of):
                wrote |= self._pods_ready(key)
        self.ends_at.pop(self.now, None)
        while self.ends and self.ends[0][0] <= self.now:
            end, key = heapq.heappop(self.ends)
            if self.end_of.get(key) != end:
                continue  # evicted (and maybe readmitted) since: an older timer
            del self.end_of[key]
            self.freed_now.append(key)
            if self.pods is not None:
                self.pods.release(key)
            self._set(key, None)  # finished: it holds nothing and the engine no longer reads it
            wrote = True
        if self.pods is not None:
            for key in self.pods.step(self.now):
                names = self.check_waits.pop(key, None)
                if names is not None:
                    # The nodes its ProvisioningRequests asked for are there: Provisioned, the
                    # checks Ready; the workload controller admits at this instant.
                    wrote |= _pass_checks(self, key)
                # Its last pod is bound and starts (the kubelet runs it at once): the run begins.
                self.pods_started.add(key)
                self._schedule_end(key, self.now)
                if config_wait:
                    wrote |= self._pods_ready(key)
        return wrote

    def _pods_ready(self, key: WorkloadKey) -> bool:
        wl = self.wls.get(key)
        if wl is None or not wl.is_admitted or wl.is_true("PodsReady"):
            return False
        d = _copy(self._api(key))
        su.set_condition(d["status"].setdefault("conditions", []), "PodsReady", True, "Started",
                         "All pods reached readiness and the workload is running", self.now, None)
        return self.write(key, d, conditions_only=True)

    def next_time(self) -> float | None:
        times = [t for t in self.wake.values() if t > self.now]
        if self.ends:
            times.append(self.ends[0][0])
        if self.pods is not None and (t := self.pods.next_time()) is not None:
            times.append(t)
        return min(times) if times else None


def _needs_release(wl: Workload) -> bool:
    """Evicted while holding a reservation (status_updates.needs_quota_release on the typed form)."""
    return wl.is_evicted and wl.has_quota_reservation and not wl.is_finished


def _copy(d: dict) -> dict:
    out = dict(d)
    status = dict(d.get("status") or {})
    status["conditions"] = [dict(c) for c in status.get("conditions") or []]
    out["status"] = status
    return out


def _pass_checks(world: _World, key: WorkloadKey, skip: tuple[str, ...] = ()) -> bool:
    """The workload's admission checks Ready now, but those in `skip` (CHECKS_ASSUMED, or its
    pods placed): the workload controller then admits once all are. Whether anything changed."""
    d = world._api(key)
    checks = (d.get("status") or {}).get("admissionChecks") or []
    if all(c.get("state") == "Ready" or c.get("name") in skip for c in checks):
        return False
    new = _copy(d)
    new["status"]["admissionChecks"] = [
        c if c.get("state") == "Ready" or c.get("name") in skip else
        {**c, "state": "Ready", "message": "taken as ready by the forecast", "lastTransitionTime": su.fmt_time(world.now)}
        for c in checks]
    return world.write(key, new)


def _flavors_of(assignments: Iterable[PodSetAssignment]) -> tuple[PodSetFlavors, ...]:
    """The flavors each pod set of an admission was given, as a forecast reports them."""
    return tuple(PodSetFlavors(a.name, dict(a.flavors)) for a in assignments)


def _cohort_root(snapshot: ClusterSnapshot, cq: str) -> str:
    q = snapshot.cluster_queues.get(cq)
    name = q.cohort if q is not None else ""
    if not name:
        return "cq:" + cq
    seen = {name}
    while True:
        c = snapshot.cohorts.get(name)
        if c is None or not c.parent or c.parent in seen:
            return "cohort:" + name
        name = c.parent
        seen.add(name)


def _run(snapshot: ClusterSnapshot, runtimes: Runtimes, now: float, pending: set[WorkloadKey],
         cache: EngineCache, horizon: float, max_steps: int, pause: Callable[[], bool | None] | None,
         pools: Mapping[str, PoolCapacity] | None = None,
         placements: Mapping[WorkloadKey, tuple[GpuPlacement, ...]] | None = None,
         resolution: Callable[[float, float], float] | None = None,
         checks: Mapping[str, NodeCheck] | None = None,
         partial: Callable[[Callable[[], _Run]], None] | None = None) -> _Run:
    # A forward run builds and drops statuses and assignments by the million, freed by reference
    # counting: Python's young collections every 700 allocations found nothing and took a fifth
    # of a `large` run (kueuetop/gc_pacing.py).
    # It reads admissions, not pending messages: a parked head's assignment is reused while nothing
    # it was made of changed (admission/parked_verdicts.py), per run.
    with sparse_collections():
        cache.parked_verdicts = {}
        try:
            return _run_forward(snapshot, runtimes, now, pending, cache, horizon, max_steps, pause, pools,
                                placements, resolution, checks, partial)
        finally:
            cache.parked_verdicts = None


def _run_forward(snapshot: ClusterSnapshot, runtimes: Runtimes, now: float,
                 pending: set[WorkloadKey], cache: EngineCache, horizon: float, max_steps: int,
                 pause: Callable[[], bool | None] | None, pools: Mapping[str, PoolCapacity] | None,
                 placements: Mapping[WorkloadKey, tuple[GpuPlacement, ...]] | None,
                 resolution: Callable[[float, float], float] | None,
                 checks: Mapping[str, NodeCheck] | None,
                 partial: Callable[[Callable[[], _Run]], None] | None) -> _Run:
    world = _World(snapshot, runtimes, now, cache, pools, placements, resolution, checks)
    loop = KueueLoop(None, cache)
    out = _Run(loop=loop)
    # A held workload stays held: nothing in a forward run reactivates one, so the run need not
    # go on for its sake (it is answered "never: held").
    waiting = {k for k in pending if snapshot.workloads[k].active}
    pods_waiting = set(pending) if pools is not None else set()  # admitted or not, pods not started
    wait_pods = snapshot.config.wait_for_pods_ready is not None
    cq_of = {k: snapshot.cluster_queue_of(w) or "" for k, w in world.wls.items()}
    roots = {cq: _cohort_root(snapshot, cq) for cq in snapshot.cluster_queues}
    world.track(lambda wl: roots.get(snapshot.cluster_queue_of(wl) or "", ""))
    for key in sorted(pending):
        wl = world.wls.get(key)
        if wl is not None and wl.has_quota_reservation and not wl.is_evicted:
            # Quota reserved at `now`, checks still to pass: it answers when they do (those
            # waiting for its pods' nodes, `check_waits`, when the pods are placed; the rest now).
            if wl.admission is not None:
                out.flavors[key] = _flavors_of(wl.admission.pod_set_assignments)
            _pass_checks(world, key, skip=world.check_waits.get(key, ()))
    steps = 0
    freed: dict[str, dict[WorkloadKey, None]] = {}  # per cohort tree, what gave quota back at this instant
    freed_upto = 0  # how much of world.freed_now is in `freed`

    def apply(decisions: tuple[Decision, ...] | list[Decision]) -> bool:
        wrote = False
        for d in decisions:
            key = d.victim if isinstance(d, Preempt) else d.workload
            if key not in world.wls:
                continue
            before = world.wls[key]
            if isinstance(d, Pending) and cache.fast_paths and (world.pending_unchanged(d) or world.defer_pending(d)):
                continue  # written into this very version already, or only its message moves
            if world.write(key, su.apply_decision(world._api(key), d, world.now, config=snapshot.config,
                                                  cache=cache.parse)):
                wrote = True
                world.jobs_todo[key] = None
                if isinstance(d, Admit):
                    cq_of[key] = d.cluster_queue
                    if key in waiting and key not in out.flavors:
                        out.flavors[key] = _flavors_of(d.assignments)
                    if d.checks:
                        world.checks_on_reservation(key)
                elif isinstance(d, Preempt) and d.preemptor in waiting and d.preemptor not in out.start:
                    out.preempts.setdefault(d.preemptor, []).append(key)
                if before.has_quota_reservation and not world.wls[key].has_quota_reservation:
                    world.stopped(key)
            if isinstance(d, Pending) and cache.fast_paths:
                world.note_pending(d)
        return wrote

    def so_far() -> _Run:
        """What the run has placed up to the current instant, as if it had stopped there."""
        return _Run(start=dict(out.start), pods_start=dict(out.pods_start), flavors=dict(out.flavors),
                    after=dict(out.after), preempts={k: list(v) for k, v in out.preempts.items()},
                    stable=False, end=world.now)

    while True:
        steps += 1
        if partial is not None:
            partial(so_far)
        if pause is not None and pause():
            out.stable = False  # the caller's budget: answered up to here, like the horizon
            break
        if steps > max_steps:
            out.stable = False
            break
        snap = world.snapshot()
        changed, world.to_reconcile = world.to_reconcile, set()
        wrote = apply(loop.reconcile_due(snap, world.now, changed, world.wake))
        cycled = False  # the cycle moved the queue state: heads may be left for another one now
        if not wrote:
            loop.requeue_inadmissible(snap)
            world.prev_workloads = snap.workloads
            world.changed_since_cycle = set()
            before_state = loop.state
            result = loop.schedule(snap, world.now)
            wrote = apply(result.decisions)
            cycled = before_state is None or not same_queue_state(before_state, loop.state)
        wrote |= world.jobs(wait_pods)
        started = world.started & waiting
        if started:
            # Whose finish or eviction at this instant, in the same cohort tree, let them in
            # (followed as the instant's list grows: one instant may see hundreds of cycles).
            for k in world.freed_now[freed_upto:]:
                freed.setdefault(roots.get(cq_of.get(k, ""), ""), {})[k] = None
            freed_upto = len(world.freed_now)
            for key in started:
                out.start[key] = world.now
                out.after[key] = tuple(freed.get(roots.get(cq_of.get(key, ""), ""), ()))
            waiting -= started
        world.started.clear()
        for key in world.pods_started & pods_waiting:
            out.pods_start[key] = world.now
        pods_waiting -= world.pods_started
        world.pods_started.clear()
        if not waiting and not pods_waiting:
            break
        if wrote or cycled:
            # Kueue's scheduler runs the next cycle at once while queues have heads: a cycle
            # that only parked heads (their Pending status unchanged, nothing written) leaves
            # the next ones to be tried at this same instant, as the simulator's controller does.
            continue
        t = world.next_time()
        while t is not None and t <= horizon and world.skip_quiet_ends(t):
            t = world.next_time()
        if t is None:
            # Nothing left to happen: whoever still waits never starts — unless a workload whose
            # end is unknown still holds quota (then the answer is "not within the horizon").
            out.stable = not any(k in world.wls and world.wls[k].has_quota_reservation for k in world.endless)
            break
        if t > horizon:
            out.stable = False
            break
        world.freed_now, freed, freed_upto = [], {}, 0
        world.now = t
    out.end = world.now
    world.flush_all()
    out.final = world.snapshot()
    return out


def _relevant(snapshot: ClusterSnapshot, pending: set[WorkloadKey]) -> ClusterSnapshot:
    """The snapshot without the workloads of cohort trees where nothing is pending: quota, fair
    sharing and preemption never cross a cohort tree (Kueue: pkg/cache/scheduler cohort
    snapshots), so their runs cannot move any answer, and each of their ends would cost the
    forward run an instant. Only without node pools: nodes are shared across trees."""
    roots = {cq: _cohort_root(snapshot, cq) for cq in snapshot.cluster_queues}
    wanted = {roots.get(snapshot.cluster_queue_of(snapshot.workloads[k]) or "") for k in pending}
    keep = {k: w for k, w in snapshot.workloads.items()
            if k in pending or roots.get(snapshot.cluster_queue_of(w) or "") in wanted}
    if len(keep) == len(snapshot.workloads):
        return snapshot
    return dataclasses.replace(snapshot, workloads=keep, workload_delta=None)


def pending_workloads(snapshot: ClusterSnapshot, checks: Mapping[str, NodeCheck] | None = None) -> set[WorkloadKey]:
    """The workloads a forecast answers for: unfinished and holding no quota; with `checks` (node
    pools known), also those holding quota while only ProvisioningRequest checks wait, whose pass
    the forecast times. One waiting for any other check is not answered: when that passes is
    not the cluster's capacity to tell."""
    timed = checks or {}

    def answered(w: Workload) -> bool:
        if not w.has_quota_reservation:
            return True
        names = waiting_checks(w)
        return bool(timed and names) and not w.is_admitted and not w.is_evicted and all(n in timed for n in names)

    return {k for k, w in snapshot.workloads.items() if not w.is_finished and answered(w)}


def forecast(snapshot: ClusterSnapshot, runtimes: Estimates, now: float, *,
             cache: EngineCache | None = None, horizon: float = HORIZON, max_steps: int = MAX_STEPS,
             ranges: bool = True, pause: Callable[[], bool | None] | None = None,
             pools: Mapping[str, PoolCapacity] | None = None,
             placements: Mapping[WorkloadKey, tuple[GpuPlacement, ...]] | None = None,
             resolution: float = 0.0, checks: Mapping[str, NodeCheck] | None = None,
             partial: Callable[[Callable[[], Forecast]], None] | None = None) -> Forecast:
    """Each pending workload's predicted admission (see the module docstring).

    `runtimes`: total runtime from admission per workload (a running workload's finish is its
    admission time plus it); a workload without one holds its quota to the horizon. May be a
    function giving them: it is called once, at the end of the run's first round (the engine's
    first cycle needs none), so a caller can work them out beside it.
    `ranges`: also run with optimistic and pessimistic runtimes (earliest / latest).
    `pause`: called between rounds; a caller on a thread beside a UI lets the UI go first there,
    and a true answer ends the run there (a caller's time budget): the workloads not placed by
    then have no start, `complete` is False and `horizon` is where the run got to.
    `pools`: the node pools (`pod_placement.pools_from_cluster`); with them pods wait for nodes,
    a pending workload's runtime counts from its pods' start and `pods_start` is filled. None:
    pods run at admission. `placements`: where running workloads' GPUs are, (pool, node index,
    GPUs) per workload; a running workload's GPU pods missing from it are still to place, and
    then its runtime counts from their start, like a pending one's.
    None: every running workload's pods are taken as bound, but where is unknown, so their finish
    frees no pool's GPUs.
    `resolution`: with estimated runtimes, each finish is rounded to a grid of this step near
    `now`, coarser further out (`finish_grid`), so finishes close together are one instant; 0:
    every finish exactly where its runtime puts it.
    `checks`: the cluster's ProvisioningRequest checks with their classes (`check_timing.node_checks`);
    None: every one in the snapshot, each taken to grow the pools (its config unknown). Read only
    with `pools`.
    `partial`: called between rounds with a function that gives the forecast as far as the
    expected run has got (incomplete, its horizon the instant reached): a caller with nothing on
    screen yet may show the soonest starts before the run ends.
    """
    cache = cache if cache is not None else EngineCache()
    timed = timed_checks(snapshot, pools, checks)
    pending = pending_workloads(snapshot, timed)
    end = now + horizon
    nodes = (pools, placements, _grid(now, resolution), timed)
    full, snapshot = snapshot, (_relevant(snapshot, pending) if pools is None else snapshot)

    known: list[Mapping[WorkloadKey, RuntimeEstimate]] = []

    def estimates() -> Mapping[WorkloadKey, RuntimeEstimate]:
        if not known:
            known.append(runtimes() if callable(runtimes) else runtimes)
        return known[0]

    def answer(run: _Run) -> Forecast:
        out: dict[WorkloadKey, WorkloadForecast] = {}
        for key in pending:
            wl = full.workloads[key]
            start = run.start.get(key)
            out[key] = WorkloadForecast(
                key=key, cluster_queue=full.cluster_queue_of(wl) or "", start=start, earliest=start, latest=start,
                flavors=run.flavors.get(key, ()), after=run.after.get(key, ()),
                preempts=tuple(run.preempts.get(key, ())) if start is not None else (),
                never=_never(run, key, wl) if start is None and run.stable else "",
                pods_start=run.pods_start.get(key))
        return Forecast(at=now, horizon=end if run.stable else min(end, run.end), workloads=out,
                        runtimes=dict(estimates()), complete=run.stable, ranged=not pending,
                        pods_placed=pools is not None)

    on_round = None if partial is None else (lambda so_far: partial(lambda: answer(so_far())))
    expected = _run(snapshot, lambda: {k: r.forward for k, r in estimates().items()}, now, pending, cache, end,
                    max_steps, pause, *nodes, partial=on_round)
    result = answer(expected)
    if not ranges:
        return result
    return with_ranges(result, full, cache=cache, max_steps=max_steps, pause=pause, pools=pools,
                       placements=placements, resolution=resolution, checks=checks)


def with_ranges(expected: Forecast, snapshot: ClusterSnapshot, *, cache: EngineCache | None = None,
                max_steps: int = MAX_STEPS, pause: Callable[[], bool | None] | None = None,
                pools: Mapping[str, PoolCapacity] | None = None,
                placements: Mapping[WorkloadKey, tuple[GpuPlacement, ...]] | None = None,
                resolution: float = 0.0, checks: Mapping[str, NodeCheck] | None = None) -> Forecast:
    """`expected` (a forecast of `snapshot` without ranges, the same other arguments) with each
    start's earliest and latest: two more forward runs, every runtime at its optimistic and at its
    pessimistic end. Apart so that a caller can show the expected starts while these run; the
    two runs are `range_run` and `merge_ranges`, for a caller that runs them side by side."""
    cache = cache if cache is not None else EngineCache()
    early, late = (range_run(expected, snapshot, end, cache=cache, max_steps=max_steps, pause=pause, pools=pools,
                             placements=placements, resolution=resolution, checks=checks)
                   for end in (OPTIMISTIC, PESSIMISTIC))
    return merge_ranges(expected, early, late)


OPTIMISTIC, PESSIMISTIC = "optimistic", "pessimistic"


@dataclass(frozen=True)
class RangeRun:
    """What `merge_ranges` needs of one range run (small: it may come from another process)."""

    start: Mapping[WorkloadKey, float]
    stable: bool
    end: float


def range_run(expected: Forecast, snapshot: ClusterSnapshot, end: str, *, cache: EngineCache | None = None,
              max_steps: int = MAX_STEPS, pause: Callable[[], bool | None] | None = None,
              pools: Mapping[str, PoolCapacity] | None = None,
              placements: Mapping[WorkloadKey, tuple[GpuPlacement, ...]] | None = None,
              resolution: float = 0.0, checks: Mapping[str, NodeCheck] | None = None) -> RangeRun:
    """One of `with_ranges`' runs: every runtime at its `end` (OPTIMISTIC or PESSIMISTIC)."""
    cache = cache if cache is not None else EngineCache()
    now, runtimes = expected.at, expected.runtimes
    pending = set(expected.workloads)
    relevant = _relevant(snapshot, pending) if pools is None else snapshot
    nodes = (pools, placements, _grid(now, resolution), timed_checks(snapshot, pools, checks))
    # The range runs go as far in virtual time as the expected one got: a budget that cut it
    # short (max_steps, pause) bounds them too, and the answers are about the same workloads.
    span = expected.horizon
    pick = (lambda r: r.optimistic) if end == OPTIMISTIC else (lambda r: r.pessimistic)
    run = _run(relevant, {k: pick(r) for k, r in runtimes.items()}, now, pending, cache, span, max_steps, pause, *nodes)
    return RangeRun(start=run.start, stable=run.stable, end=run.end)


def merge_ranges(expected: Forecast, early: RangeRun, late: RangeRun) -> Forecast:
    """`expected` with each start's earliest and latest from the optimistic and pessimistic runs."""
    out: dict[WorkloadKey, WorkloadForecast] = {}
    for key, wf in expected.workloads.items():
        if wf.start is None:
            out[key] = wf
            continue
        starts = [s for s in (wf.start, early.start.get(key), late.start.get(key)) if s is not None]
        latest = max(starts)
        if not late.stable and key not in late.start:
            latest = max(latest, late.end)  # the pessimistic run stopped first: later than where it got to
        out[key] = dataclasses.replace(wf, earliest=min(starts), latest=latest)
    return dataclasses.replace(expected, workloads=out, ranged=True)


def _grid(now: float, resolution: float) -> Callable[[float, float], float] | None:
    return finish_grid(now, resolution) if resolution > 0 else None


def timed_checks(snapshot: ClusterSnapshot, pools: Mapping[str, PoolCapacity] | None,
                 checks: Mapping[str, NodeCheck] | None) -> Mapping[str, NodeCheck] | None:
    """The checks a forecast with these `pools` times (`forecast`'s `checks`): none without pools;
    `checks`, or when not given every ProvisioningRequest check of the snapshot, taken to scale."""
    if pools is None:
        return None
    return checks if checks is not None else node_checks(snapshot.admission_checks, ())


def _never(run: _Run, key: WorkloadKey, wl: Workload) -> str:
    """Why the engine never admits it, once everything it could wait for has finished."""
    if not wl.active:
        return "held (spec.active is false)"
    final = run.final
    if final is None or key not in final.workloads:
        return "not admitted"
    last = final.workloads[key]
    if last.has_quota_reservation and (names := waiting_checks(last)):
        return f"quota reserved, admission check {', '.join(names)} never passes: its pods find no nodes"

    loop = run.loop
    try:
        verdict = explain(final, key, run.end, state=loop.state if loop is not None else None).verdict
    except Exception as exc:  # a verdict is a courtesy: the answer "never" stands without it
        return f"not admitted ({type(exc).__name__})"
    return verdict or "not admitted"
