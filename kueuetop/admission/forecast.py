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

Admission checks are taken to pass the instant quota is reserved: a forecast cannot know when a
ProvisioningRequest is satisfied, and says so (`Forecast.assumptions`).

Each pending workload gets: the admission time with expected runtimes and, from two more runs
with every runtime at its optimistic and its pessimistic end, the earliest and latest; the
flavors it is given; the workloads whose finish or eviction at that instant, in its cohort tree,
let it in; what it preempts. One the engine never admits once everything running has finished
gets "never" with explain's verdict; one still waiting at the horizon gets no time.

Pure: no clock reads, no I/O. `cache`: the EngineCache the caller owns (the console's forecast
worker keeps one; None builds one per call).
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field

from kueuetop.admission import status_updates as su
from kueuetop.admission.decisions import Admit, Decision, Preempt
from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.explain import explain
from kueuetop.admission.forecast_result import Forecast, PodSetFlavors, RuntimeEstimate, WorkloadForecast
from kueuetop.admission.kueue_loop import KueueLoop
from kueuetop.admission.queue_state import same_queue_state
from kueuetop.admission.shared_map import DELETE, SharedMap
from kueuetop.kueue.snapshot import ClusterSnapshot, WorkloadDelta
from kueuetop.kueue.workload import Workload
from kueuetop.kueue.workload_api import status_from_api, workload_to_api

WorkloadKey = tuple[str, str]

HORIZON = 7 * 24 * 3600.0  # seconds of virtual time a forecast looks ahead at most
MAX_STEPS = 200_000  # loop rounds at most (each a controller pass or a cycle)
CHECKS_ASSUMED = "admission checks are taken to pass the instant quota is reserved"


@dataclass
class _Run:
    """What one forward run saw, per pending workload."""

    start: dict[WorkloadKey, float] = field(default_factory=dict)
    flavors: dict[WorkloadKey, tuple[PodSetFlavors, ...]] = field(default_factory=dict)
    after: dict[WorkloadKey, tuple[WorkloadKey, ...]] = field(default_factory=dict)
    preempts: dict[WorkloadKey, list[WorkloadKey]] = field(default_factory=dict)
    stable: bool = True  # False: the horizon or the step limit ended it with work left
    end: float = 0.0
    final: ClusterSnapshot | None = None
    loop: KueueLoop | None = None


class _World:
    """The unfinished workloads as the forward run changes them, and the job side's timers."""

    def __init__(self, snapshot: ClusterSnapshot, runtimes: Mapping[WorkloadKey, float], now: float,
                 cache: EngineCache) -> None:
        self.base = dataclasses.replace(snapshot, workloads={}, workload_delta=None)
        self.cache = cache
        self.runtimes = runtimes
        self.now = now
        self.wls: dict[WorkloadKey, Workload] = {k: w for k, w in snapshot.workloads.items() if not w.is_finished}
        self.data: dict[WorkloadKey, dict] = {}  # API form, built on a workload's first write
        self.shared = SharedMap.of(self.wls)
        self.changes: dict[WorkloadKey, object] = {}
        self.changed_since_cycle: set[WorkloadKey] = set()
        self.to_reconcile: set[WorkloadKey] = set(self.wls)
        self.wake: dict[WorkloadKey, float] = {}
        self.ends: list[tuple[float, WorkloadKey]] = []  # heap of (finish time, key)
        self.end_of: dict[WorkloadKey, float] = {}
        self.freed_at: dict[float, list[WorkloadKey]] = {}  # instant → workloads that finished or gave quota back
        self.prev_workloads: Mapping[WorkloadKey, Workload] | None = None
        self.jobs_todo: set[WorkloadKey] = set(self.wls)
        self.started: set[WorkloadKey] = set()  # admitted by this round's writes  # workloads the job side has to look at
        for key, wl in self.wls.items():
            if wl.has_quota_reservation and not wl.is_evicted:
                self._schedule_end(key, _admitted_since(wl))

    # -- snapshots -----------------------------------------------------------------------------
    def snapshot(self) -> ClusterSnapshot:
        if self.changes:
            self.shared = self.shared.evolve(self.changes)
            self.changes = {}
        delta = None
        if self.prev_workloads is not None:
            delta = WorkloadDelta(self.prev_workloads, self.shared, frozenset(self.changed_since_cycle))
        return dataclasses.replace(self.base, workloads=self.shared, workload_delta=delta)

    def _set(self, key: WorkloadKey, wl: Workload | None) -> None:
        if wl is None:
            self.wls.pop(key, None)
            self.data.pop(key, None)
            self.wake.pop(key, None)
            self.to_reconcile.discard(key)
            self.changes[key] = DELETE
        else:
            self.wls[key] = wl
            self.changes[key] = wl
            self.to_reconcile.add(key)
        self.changed_since_cycle.add(key)

    def _api(self, key: WorkloadKey) -> dict:
        d = self.data.get(key)
        if d is None:
            d = self.data[key] = workload_to_api(self.wls[key])
        return d

    def write(self, key: WorkloadKey, new: dict) -> bool:
        """Keep `new` (a written version of the workload's API dict) when it differs."""
        old = self._api(key)
        if new.get("status") == old.get("status") and new.get("spec") == old.get("spec"):
            return False
        if new.get("spec") != old.get("spec"):
            meta = new["metadata"] = dict(new.get("metadata") or {})
            meta["generation"] = int(meta.get("generation") or 0) + 1  # the API server's bump on spec writes
        self.data[key] = new
        wl = status_from_api(self.wls[key], new, self.cache.parse)
        self._set(key, wl)
        if wl.is_admitted and not wl.is_evicted:
            self.started.add(key)
        return True

    # -- the job side --------------------------------------------------------------------------
    def _schedule_end(self, key: WorkloadKey, since: float) -> None:
        runtime = self.runtimes.get(key)
        if runtime is None:
            return  # no estimate: it holds its quota for the whole forecast
        end = max(self.now, since + runtime)
        self.end_of[key] = end
        heapq.heappush(self.ends, (end, key))

    def jobs(self, config_wait: bool) -> bool:
        """Pods of new admissions start (PodsReady), evicted ones stop (quota released), due ones
        finish (the workload leaves the forecast). Whether anything was written."""
        wrote = False
        todo, self.jobs_todo = self.jobs_todo, set()
        for key in todo:
            wl = self.wls.get(key)
            if wl is None or wl.is_finished:
                continue
            if _needs_release(wl):
                # The job integration stops the pods; the quota comes back (jobframework).
                if self.write(key, su.release_quota(self._api(key), self.now, config=self.base.config)):
                    wrote = True
                    self.freed_at.setdefault(self.now, []).append(key)
                    self.end_of.pop(key, None)
                continue
            if wl.has_quota_reservation and not wl.is_evicted and key not in self.end_of:
                self._schedule_end(key, self.now)
            if config_wait and wl.is_admitted and not wl.is_true("PodsReady"):
                d = _copy(self._api(key))
                su.set_condition(d["status"].setdefault("conditions", []), "PodsReady", True, "Started",
                                 "All pods reached readiness and the workload is running", self.now, None)
                wrote |= self.write(key, d)
        while self.ends and self.ends[0][0] <= self.now:
            end, key = heapq.heappop(self.ends)
            if self.end_of.get(key) != end:
                continue  # evicted (and maybe readmitted) since: an older timer
            del self.end_of[key]
            self.freed_at.setdefault(self.now, []).append(key)
            self._set(key, None)  # finished: it holds nothing and the engine no longer reads it
            wrote = True
        return wrote

    def next_time(self) -> float | None:
        times = [t for t in self.wake.values() if t > self.now]
        if self.ends:
            times.append(self.ends[0][0])
        return min(times) if times else None


def _needs_release(wl: Workload) -> bool:
    """Evicted while holding a reservation (status_updates.needs_quota_release on the typed form)."""
    return wl.is_evicted and wl.has_quota_reservation and not wl.is_finished


def _admitted_since(wl: Workload) -> float:
    c = wl.condition("Admitted")
    if c is None or c.status != "True" or c.last_transition is None:
        c = wl.condition("QuotaReserved")
    return c.last_transition if c is not None and c.last_transition is not None else 0.0


def _copy(d: dict) -> dict:
    out = dict(d)
    status = dict(d.get("status") or {})
    status["conditions"] = [dict(c) for c in status.get("conditions") or []]
    out["status"] = status
    return out


def _pass_checks(world: _World, key: WorkloadKey) -> None:
    """Admission checks Ready at once (CHECKS_ASSUMED): the workload controller then admits."""
    d = world._api(key)
    checks = (d.get("status") or {}).get("admissionChecks") or []
    if not checks or all(c.get("state") == "Ready" for c in checks):
        return
    new = _copy(d)
    new["status"]["admissionChecks"] = [
        {**c, "state": "Ready", "message": "assumed ready by the forecast", "lastTransitionTime": su.fmt_time(world.now)}
        for c in checks]
    world.write(key, new)


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


def _run(snapshot: ClusterSnapshot, runtimes: Mapping[WorkloadKey, float], now: float, pending: set[WorkloadKey],
         cache: EngineCache, horizon: float, max_steps: int) -> _Run:
    world = _World(snapshot, runtimes, now, cache)
    loop = KueueLoop(None, cache)
    out = _Run(loop=loop)
    waiting = set(pending)
    wait_pods = snapshot.config.wait_for_pods_ready is not None
    cq_of = {k: snapshot.cluster_queue_of(w) or "" for k, w in world.wls.items()}
    roots = {cq: _cohort_root(snapshot, cq) for cq in snapshot.cluster_queues}
    steps = 0

    def apply(decisions: tuple[Decision, ...] | list[Decision]) -> bool:
        wrote = False
        for d in decisions:
            key = d.victim if isinstance(d, Preempt) else d.workload
            if key not in world.wls:
                continue
            before = world.wls[key]
            if world.write(key, su.apply_decision(world._api(key), d, world.now, config=snapshot.config,
                                                  cache=cache.parse)):
                wrote = True
                world.jobs_todo.add(key)
                if isinstance(d, Admit):
                    cq_of[key] = d.cluster_queue
                    if key in waiting and key not in out.flavors:
                        out.flavors[key] = tuple(PodSetFlavors(a.name, dict(a.flavors)) for a in d.assignments)
                    if d.checks:
                        _pass_checks(world, key)
                elif isinstance(d, Preempt) and d.preemptor in waiting and d.preemptor not in out.start:
                    out.preempts.setdefault(d.preemptor, []).append(key)
                if before.has_quota_reservation and not world.wls[key].has_quota_reservation:
                    world.end_of.pop(key, None)
        return wrote

    while True:
        steps += 1
        if steps > max_steps:
            out.stable = False
            break
        snap = world.snapshot()
        due = {k for k, t in world.wake.items() if t <= world.now}
        keys = world.to_reconcile | due
        world.to_reconcile = set()
        wrote = False
        if keys:
            decisions, wakes = loop.reconcile(snap, world.now, keys)
            for k in keys:
                t = wakes.get(k)
                if t is None:
                    world.wake.pop(k, None)
                else:
                    world.wake[k] = t
            wrote = apply(decisions)
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
        for key in world.started & waiting:
            out.start[key] = world.now
            root = roots.get(cq_of.get(key, ""))
            freed = [k for k in world.freed_at.get(world.now, ()) if roots.get(cq_of.get(k, "")) == root]
            out.after[key] = tuple(dict.fromkeys(freed))
            waiting.discard(key)
        world.started.clear()
        if not waiting:
            break
        if wrote or cycled:
            # Kueue's scheduler runs the next cycle at once while queues have heads: a cycle
            # that only parked heads (their Pending status unchanged, nothing written) leaves
            # the next ones to be tried at this same instant, as the simulator's controller does.
            continue
        t = world.next_time()
        if t is None:
            break  # nothing left to happen: whoever still waits never starts
        if t > horizon:
            out.stable = False
            break
        world.freed_at = {k: v for k, v in world.freed_at.items() if k >= world.now}
        world.now = t
    out.end = world.now
    out.final = world.snapshot()
    return out


def _pending(snapshot: ClusterSnapshot) -> set[WorkloadKey]:
    """The workloads a forecast answers for: unfinished, holding no quota."""
    return {k for k, w in snapshot.workloads.items() if not w.is_finished and not w.has_quota_reservation}


def forecast(snapshot: ClusterSnapshot, runtimes: Mapping[WorkloadKey, RuntimeEstimate], now: float, *,
             cache: EngineCache | None = None, horizon: float = HORIZON, max_steps: int = MAX_STEPS,
             ranges: bool = True) -> Forecast:
    """Each pending workload's predicted admission (see the module docstring).

    `runtimes`: total runtime from admission per workload (a running workload's finish is its
    admission time plus it); a workload without one holds its quota to the horizon.
    `ranges`: also run with optimistic and pessimistic runtimes (earliest / latest).
    """
    cache = cache if cache is not None else EngineCache()
    pending = _pending(snapshot)
    end = now + horizon
    expected = _run(snapshot, {k: r.expected for k, r in runtimes.items()}, now, pending, cache, end, max_steps)
    early = late = None
    if ranges:
        early = _run(snapshot, {k: r.optimistic for k, r in runtimes.items()}, now, pending, cache, end, max_steps)
        late = _run(snapshot, {k: r.pessimistic for k, r in runtimes.items()}, now, pending, cache, end, max_steps)
    out: dict[WorkloadKey, WorkloadForecast] = {}
    for key in pending:
        wl = snapshot.workloads[key]
        cq = snapshot.cluster_queue_of(wl) or ""
        start = expected.start.get(key)
        never = ""
        if start is None and expected.stable:
            never = _never(expected, key, wl)
        starts = [s for s in (start, early.start.get(key) if early else None, late.start.get(key) if late else None)
                  if s is not None]
        out[key] = WorkloadForecast(
            key=key, cluster_queue=cq, start=start,
            earliest=min(starts) if start is not None else None,
            latest=max(starts) if start is not None else None,
            flavors=expected.flavors.get(key, ()), after=expected.after.get(key, ()),
            preempts=tuple(expected.preempts.get(key, ())) if start is not None else (), never=never)
    return Forecast(at=now, horizon=end, workloads=out, runtimes=dict(runtimes), complete=expected.stable)


def _never(run: _Run, key: WorkloadKey, wl: Workload) -> str:
    """Why the engine never admits it, once everything it could wait for has finished."""
    if not wl.active:
        return "held (spec.active is false)"
    final = run.final
    if final is None or key not in final.workloads:
        return "not admitted"
    loop = run.loop
    try:
        verdict = explain(final, key, run.end, state=loop.state if loop is not None else None).verdict
    except Exception as exc:  # a verdict is a courtesy: the answer "never" stands without it
        return f"not admitted ({type(exc).__name__})"
    return verdict or "not admitted"
