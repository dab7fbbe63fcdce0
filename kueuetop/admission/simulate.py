"""A small, pure admission loop over API dicts: Kueue's controllers and scheduler until nothing changes.

Each step parses the objects and runs Kueue's loop (`kueue_loop.KueueLoop`): the workload
controller and, when that has nothing to write, one scheduling cycle; decisions are
written with `status_updates`, evicted workloads give their quota back (at once or after
`release_delay`), and the loop repeats until a step changes nothing. With `advance_clock` the
clock then jumps to the next timer (backoff end, PodsReady timeout, delayed release, a
workload's `kueuetop.io/runtime` end) up to `until`.

This is what what-if previews and the engine's multi-step tests run; the full simulator with
pods, nodes and an API server runs the same KueueLoop and `status_updates` over its store.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kueuetop.admission import status_updates as su
from kueuetop.admission.decisions import Admit, Deactivate, Decision, Evict, MarkAdmitted, Preempt, Requeue
from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.kueue_loop import KueueLoop, Scheduler
from kueuetop.admission.workload_controller import next_event_at
from kueuetop.kueue.config import KueueConfig
from kueuetop.kueue.durations import parse_duration
from kueuetop.kueue.errors import KueueParseError
from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.parse_cache import ParseCache
from kueuetop.kueue.snapshot import ClusterSnapshot
from kueuetop.kueue.workload import Workload

WorkloadKey = tuple[str, str]
RUNTIME_ANNOTATION = "kueuetop.io/runtime"


@dataclass(frozen=True, slots=True)
class SimEvent:
    """One line of the event log."""

    time: float
    kind: str  # quotaReserved | admitted | evicted | preempted | deactivated | requeued | released | finished
    workload: WorkloadKey
    reason: str = ""
    message: str = ""
    cluster_queue: str = ""
    by: WorkloadKey | None = None  # the preemptor, for "preempted"


@dataclass(frozen=True)
class SimulationResult:
    objects: tuple[dict, ...]
    events: tuple[SimEvent, ...]
    kueue_events: tuple[dict, ...]  # the v1 Events Kueue would record (status_updates.decision_events)
    steps: int
    stable: bool  # False when max_steps ran out before a fixed point
    now: float  # the clock at the end
    state: Any = None  # the scheduler's QueueState after the last cycle

    def workloads(self) -> dict[WorkloadKey, dict]:
        return {_key(o): o for o in self.objects if o.get("kind") == "Workload"}


def _key(obj: Mapping) -> WorkloadKey:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace", ""), meta.get("name", ""))


def _decision_key(d: Decision) -> WorkloadKey:
    return d.victim if isinstance(d, Preempt) else d.workload


@dataclass
class _World:
    objects: list[dict]
    config: KueueConfig
    now: float
    index: dict[WorkloadKey, int] = field(default_factory=dict)
    parsed: dict[WorkloadKey, Workload] = field(default_factory=dict)
    base: ClusterSnapshot = field(default_factory=ClusterSnapshot)
    events: list[SimEvent] = field(default_factory=list)
    kueue_events: list[dict] = field(default_factory=list)
    evicted_at: dict[WorkloadKey, float] = field(default_factory=dict)
    parse_cache: ParseCache = field(default_factory=ParseCache)  # this run's: versions share their parts

    def load(self) -> None:
        others = []
        for i, o in enumerate(self.objects):
            try:
                parsed = parse_object(o, self.parse_cache)
            except KueueParseError:
                continue  # kinds the engine doesn't read (Events, …) or broken objects
            if isinstance(parsed, Workload):
                self.index[parsed.key] = i
                self.parsed[parsed.key] = parsed
            else:
                others.append(parsed)
        self.base = ClusterSnapshot.from_objects(others, self.config)

    def snapshot(self) -> ClusterSnapshot:
        return dataclasses.replace(self.base, workloads=dict(self.parsed))

    def get(self, key: WorkloadKey) -> dict | None:
        i = self.index.get(key)
        return self.objects[i] if i is not None else None

    def put(self, key: WorkloadKey, new: dict) -> bool:
        old = self.objects[self.index[key]]
        if new == old:
            return False
        if new.get("spec") != old.get("spec"):
            # The API server bumps metadata.generation on spec writes (spec.active=false).
            meta = new.setdefault("metadata", {})
            meta["generation"] = int(meta.get("generation") or 0) + 1
        self.objects[self.index[key]] = new
        self.parsed[key] = parse_object(new, self.parse_cache)
        return True


def _log(world: _World, d: Decision, before: dict, after: dict) -> None:
    t = world.now
    key = _decision_key(d)
    cq = ((before.get("status") or {}).get("admission") or {}).get("clusterQueue", "")
    if isinstance(d, Admit):
        world.events.append(SimEvent(t, "admitted" if d.admitted else "quotaReserved", key, cluster_queue=d.cluster_queue))
    elif isinstance(d, MarkAdmitted):
        world.events.append(SimEvent(t, "admitted", key, cluster_queue=cq))
    elif isinstance(d, Preempt):
        world.events.append(SimEvent(t, "preempted", key, d.reason, d.message, cq, by=d.preemptor))
    elif isinstance(d, Evict):
        world.events.append(SimEvent(t, "evicted", key, d.reason, d.message, cq))
    elif isinstance(d, Deactivate):
        world.events.append(SimEvent(t, "deactivated", key, d.cause, d.message, cq))
    elif isinstance(d, Requeue):
        world.events.append(SimEvent(t, "requeued", key, d.reason, d.message))


def _apply_all(world: _World, decisions: Iterable[Decision]) -> bool:
    changed = False
    for d in decisions:
        key = _decision_key(d)
        before = world.get(key)
        if before is None:
            continue
        after = su.apply_decision(before, d, world.now, config=world.config, cache=world.parse_cache)
        preemptor = world.get(d.preemptor) if isinstance(d, Preempt) else None
        if world.put(key, after):
            changed = True
            _log(world, d, before, after)
            world.kueue_events.extend(su.decision_events(before, after, d, world.now, preemptor=preemptor,
                                                           cache=world.parse_cache))
            if su.needs_quota_release(after) and not su.needs_quota_release(before):
                world.evicted_at[key] = world.now
    return changed


def _release(world: _World, delay: float) -> bool:
    changed = False
    for key, wl in list(world.parsed.items()):
        if not (wl.is_evicted and wl.has_quota_reservation and not wl.is_finished):
            continue
        since = world.evicted_at.setdefault(key, world.now)
        if world.now < since + delay:
            continue
        before = world.objects[world.index[key]]
        if world.put(key, su.release_quota(before, world.now, config=world.config)):
            changed = True
            world.evicted_at.pop(key, None)
            cq = ((before.get("status") or {}).get("admission") or {}).get("clusterQueue", "")
            world.events.append(SimEvent(world.now, "released", key, cluster_queue=cq))
    return changed


def _runtime(wl: Workload) -> float | None:
    raw = wl.meta.annotations.get(RUNTIME_ANNOTATION)
    if not raw:
        return None
    try:
        return parse_duration(raw)
    except ValueError:
        return None


def _pods(world: _World) -> tuple[bool, list[float]]:
    """The job side: pods become ready on admission (WaitForPodsReady) and finish after their runtime."""
    changed = False
    wake: list[float] = []
    for key, wl in list(world.parsed.items()):
        if not wl.is_admitted or wl.is_finished or wl.is_evicted:
            continue
        obj = world.objects[world.index[key]]
        if world.config.wait_for_pods_ready is not None and not wl.is_true("PodsReady"):
            w = copy.deepcopy(obj)
            conds = w.setdefault("status", {}).setdefault("conditions", [])
            su.set_condition(conds, "PodsReady", True, "Started",
                             "All pods reached readiness and the workload is running", world.now, None)
            changed |= world.put(key, w)
            obj = w
        runtime = _runtime(wl)
        admitted = wl.condition("Admitted")
        if runtime is None or admitted is None or admitted.last_transition is None:
            continue
        end = admitted.last_transition + runtime
        if end > world.now:
            wake.append(end)
            continue
        w = copy.deepcopy(obj)
        conds = w.setdefault("status", {}).setdefault("conditions", [])
        su.set_condition(conds, "Finished", True, "Succeeded", "Job finished successfully", world.now,
                         w.get("metadata", {}).get("generation") or None)
        if world.put(key, w):
            changed = True
            world.events.append(SimEvent(world.now, "finished", key, "Succeeded",
                                         cluster_queue=wl.admission.cluster_queue if wl.admission else ""))
    return changed, wake


def simulate(objects: Iterable[Mapping], now: float, *, config: KueueConfig | None = None, state: Any = None,
             max_steps: int = 200, release_delay: float = 0.0, advance_clock: bool = False,
             until: float | None = None, pods_run: bool = True, schedule: Scheduler | None = None,
             cache: EngineCache | None = None) -> SimulationResult:
    """Run Kueue's controllers and scheduler over `objects` until nothing changes.

    `release_delay`: seconds between an eviction and the job integration releasing the quota.
    `advance_clock`: after a fixed point, jump to the next timer (≤ `until`) and go on.
    `pods_run`: admitted workloads' pods become ready (WaitForPodsReady) and finish after
    their `kueuetop.io/runtime` annotation; False leaves pods alone (no PodsReady, no finish).
    `cache`: the EngineCache the default scheduler keeps its structures in (None: one for this run).
    """
    world = _World([copy.deepcopy(dict(o)) for o in objects], config or KueueConfig(), now)
    world.load()
    if state is not None and hasattr(state, "requeue_all"):
        # Callers simulate after changing something (a what-if patch); parked workloads get
        # another look, as Kueue's queue manager gives them after any change in their cohort tree.
        state = state.requeue_all()
    loop = KueueLoop(state, cache, schedule)
    steps = 0
    stable = False
    while steps < max_steps:
        steps += 1
        wake: list[float] = []
        changed = _apply_all(world, loop.reconcile(world.snapshot(), world.now)[0])
        if not changed:
            result = loop.cycle(world.snapshot(), world.now)
            changed = _apply_all(world, getattr(result, "decisions", ()))
        changed |= _release(world, release_delay)
        if pods_run:
            pods_changed, wake = _pods(world)
            changed |= pods_changed
        if changed:
            continue
        if not advance_clock:
            stable = True
            break
        wake += [t + release_delay for t in world.evicted_at.values()]
        timer = next_event_at(world.snapshot(), world.now)
        if timer is not None:
            wake.append(timer)
        future = [t for t in wake if t > world.now and (until is None or t <= until)]
        if not future:
            stable = True
            break
        world.now = min(future)
    return SimulationResult(tuple(world.objects), tuple(world.events), tuple(world.kueue_events), steps, stable,
                            world.now, loop.state)
