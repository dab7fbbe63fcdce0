"""The simulated cluster: one object store, one clock, the scenario timeline and controllers.

Controllers see every committed change through the store's subscription, do their work in
`reconcile(now)` and say when they next need to run. The loop settles all controllers at the
current instant, then moves the clock to the earliest next event: in virtual time it jumps
there; in real time it sleeps until then or until a client's write wakes it.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from kueuetop.gc_pacing import sparse_collections
from kueuetop.kueue.api_versions import to_v1beta2
from kueuetop.kueue.json_copy import clone
from kueuetop.sim.apiserver.defaults import apply_defaults, prepare_for_create
from kueuetop.sim.apiserver.patch import merge_patch
from kueuetop.sim.apiserver.validation import validate
from kueuetop.sim.clock import SimClock
from kueuetop.sim.scenarios.scenario import Scenario, ScenarioStep
from kueuetop.sim.storage.kinds import Kind, kind_for_object
from kueuetop.sim.storage.objectstore import Invalid, ObjectStore, StoreError, WatchEvent

_log = logging.getLogger(__name__)

# Safety valve: controllers that keep reporting work at one instant are cut off after this many
# rounds (and the simulation moves on) rather than spinning forever.
MAX_SETTLE_ROUNDS = 200
MAX_SAME_INSTANT = 5_000  # settles at one simulated instant before the run is declared stalled


class Controller(Protocol):
    name: str

    def on_event(self, event: WatchEvent) -> None:
        """Note a committed change (cheap; called on the writer's thread)."""

    def reconcile(self, now: float) -> bool:
        """Do pending work at simulated time `now`; True if anything was written."""

    def next_wakeup(self, now: float) -> float | None:
        """Earliest simulated time this controller has timed work, or None."""


class OneTurn:
    """Controllers that take one turn together: each reconciles in order, and events reach them
    at the same moments (before their turn, not between them). Kueue's provisioning check and
    the autoscaler answering it run this way, so the autoscaler sees a request the round after
    the check created it, as it always has."""

    def __init__(self, *controllers: Controller) -> None:
        self.controllers = controllers
        self.name = "+".join(c.name for c in controllers)

    def on_event(self, event: WatchEvent) -> None:
        for c in self.controllers:
            c.on_event(event)

    def reconcile(self, now: float) -> bool:
        worked = False
        for c in self.controllers:
            worked = c.reconcile(now) or worked
        return worked

    def next_wakeup(self, now: float) -> float | None:
        times = [t for t in (c.next_wakeup(now) for c in self.controllers) if t is not None]
        return min(times) if times else None


class SimCluster:
    def __init__(self, scenario: Scenario, clock: SimClock, store: ObjectStore | None = None) -> None:
        self.scenario = scenario
        self.clock = clock
        # Seeded: UIDs (and so Kueue's workload names, which hash the owner UID) repeat run to run.
        self.store = store or ObjectStore(now=clock.now, seed=0)
        self.controllers: list[Controller] = []
        self._steps = list(scenario.steps)
        self._next_step = 0
        self._steps_closed = False  # drop_later_steps() was called: add_steps() adds nothing
        self.wake = threading.Event()
        self._events: deque[WatchEvent] = deque()
        self.errors: list[str] = []  # scenario steps the API refused, for reports
        self._stop = threading.Event()
        self.lock = threading.RLock()  # one simulation step at a time; API hooks read under it too
        self.store.subscribe(self._on_event)

    # ------------------------------------------------------------------ wiring
    def add_controller(self, controller: Controller) -> None:
        self.controllers.append(controller)

    def _on_event(self, event: WatchEvent) -> None:
        # Writers may be API server threads: queue the event for the simulation thread, so
        # controllers only ever see events between their own reconcile calls.
        self._events.append(event)
        self.wake.set()

    def _deliver_events(self) -> None:
        while self._events:
            event = self._events.popleft()
            for c in self.controllers:
                try:
                    c.on_event(event)
                except Exception:
                    _log.exception("controller %s failed on an event", getattr(c, "name", c))

    def has_pending_events(self) -> bool:
        """Committed changes not yet delivered to the controllers (another cluster's controller
        wrote here, or a client did): this cluster needs another turn."""
        return bool(self._events)

    @property
    def now(self) -> float:
        return self.clock.now()

    @property
    def sim_time(self) -> float:
        """Seconds since the scenario started."""
        return self.clock.elapsed()

    # ------------------------------------------------------------------ steps
    def _apply_step(self, step: ScenarioStep, now: float) -> None:
        handler = getattr(self, "step_handler", None)
        try:
            if handler is not None and handler(step, now):
                return
            if step.kind == "apply" and step.obj is not None:
                self._apply_object(step)
        except StoreError as exc:
            msg = f"{step.origin}: {exc.message}"
            self.errors.append(msg)
            _log.warning("scenario step refused: %s", msg)

    def _apply_object(self, step: ScenarioStep) -> None:
        obj = clone(to_v1beta2(step.obj))
        kind = kind_for_object(obj)
        if kind is None:
            raise StoreError(f"unknown kind {obj.get('kind')} in {obj.get('apiVersion')}")
        if not step.update:
            # What the API server does to a kubectl-applied object: status dropped, defaults, validation.
            prepare_for_create(kind, obj)
            apply_defaults(kind, obj)
            causes = validate(kind, obj, None, kind.versions[0])
            if causes:
                raise Invalid("; ".join(f"{c.get('field', '')}: {c.get('message', '')}" for c in causes), kind)
            # `obj` is this step's own copy: the store takes it over instead of copying it again.
            err = self.store.create_many([(kind.group, kind.plural, obj)])[0]
            if err is not None:
                raise err
            return
        meta = obj.get("metadata") or {}
        doc = _strip_for_merge(obj)
        # kubectl apply of a later document: merge it over the live object.
        self.store.patch(kind.group, kind.plural, meta.get("namespace"), meta["name"],
                         lambda cur: merge_patch(cur, doc))

    def _due_steps(self, now: float) -> list[ScenarioStep]:
        due = []
        # Compare in absolute time, computed exactly as next_step_time() does: at epoch-sized
        # values `now - start` loses ~1e-7 s and would never reach the step's time.
        while (self._next_step < len(self._steps)
               and self.clock.start + self._steps[self._next_step].at <= now):
            due.append(self._steps[self._next_step])
            self._next_step += 1
        return due

    def apply_due_steps(self) -> None:
        """Apply the scenario steps due now and nothing else: no controller runs and no event is
        delivered yet (they wait for the next settle(), which catches up as Kueue does on a
        real cluster right after the objects were created). `sim serve` calls this before it
        listens, so every object of the first instant is served from the first answer."""
        with self.lock:
            now = self.clock.now()
            batch: list[tuple[ScenarioStep, Kind, dict[str, Any]]] = []
            handler = getattr(self, "step_handler", None)
            for step in self._due_steps(now):
                try:
                    if handler is not None and handler(step, now):
                        continue
                    prepared = self._prepare_create(step)
                    if prepared is not None:
                        batch.append((step, *prepared))
                        continue
                    self._create_batch(batch)  # keep the scenario's order around anything else
                    batch = []
                    if step.kind == "apply" and step.obj is not None:
                        self._apply_object(step)
                except StoreError as exc:
                    self._refused(step, exc)
            self._create_batch(batch)

    def _prepare_create(self, step: ScenarioStep) -> tuple[Kind, dict[str, Any]] | None:
        """(kind, object ready to store) for a create step that passes validation, else None
        (the step then goes through _apply_object, which says what is wrong)."""
        if step.kind != "apply" or step.update or step.obj is None:
            return None
        obj = clone(to_v1beta2(step.obj))
        kind = kind_for_object(obj)
        if kind is None:
            return None
        prepare_for_create(kind, obj)
        apply_defaults(kind, obj)
        if validate(kind, obj, None, kind.versions[0]):
            return None
        return kind, obj

    def _refused(self, step: ScenarioStep, exc: StoreError) -> None:
        msg = f"{step.origin}: {exc.message}"
        self.errors.append(msg)
        _log.warning("scenario step refused: %s", msg)

    def _create_batch(self, batch: list[tuple[ScenarioStep, Kind, dict[str, Any]]]) -> None:
        if not batch:
            return
        results = self.store.create_many((kind.group, kind.plural, obj) for _, kind, obj in batch)
        for (step, _, _), exc in zip(batch, results, strict=True):
            if exc is not None:
                self._refused(step, exc)

    def add_steps(self, steps: Iterable[ScenarioStep]) -> None:
        """Append later scenario steps, in time order and none before the last step held: how
        `sim serve` hands over the part of a scenario it builds after it started listening."""
        with self.lock:
            if self._steps_closed:
                return
            self._steps.extend(steps)
        self.wake.set()

    def drop_later_steps(self) -> int:
        """No arrivals after now: forget the scenario steps not applied yet, and any a caller
        would add later (add_steps). The cluster then runs on with what it holds, which is the
        future a forecast from this instant describes. How many steps were dropped."""
        with self.lock:
            dropped = len(self._steps) - self._next_step
            del self._steps[self._next_step:]
            self._steps_closed = True
        return dropped

    def next_step_time(self) -> float | None:
        if self._next_step < len(self._steps):
            return self.clock.start + self._steps[self._next_step].at
        return None

    # ------------------------------------------------------------------ loop
    def settle(self) -> None:
        """Run everything due at the current instant until no controller has more to do."""
        with self.lock:
            now = self.clock.now()
            for step in self._due_steps(now):
                self._apply_step(step, now)
            for _ in range(MAX_SETTLE_ROUNDS):
                worked = False
                for c in self.controllers:
                    self._deliver_events()
                    try:
                        worked = c.reconcile(now) or worked
                    except Exception:  # one broken controller must not stop the cluster
                        _log.exception("controller %s failed", getattr(c, "name", c))
                self._deliver_events()
                if not worked:
                    break
            else:
                _log.warning("controllers did not settle at t=%.3f", now - self.clock.start)

    def next_event(self) -> float | None:
        self._deliver_events()
        now = self.clock.now()
        nxt = self.next_step_time()
        times = [nxt] if nxt is not None else []
        for c in self.controllers:
            t = c.next_wakeup(now)
            if t is not None:
                times.append(max(t, now))
        return min(times) if times else None

    def idle(self) -> bool:
        """Nothing scheduled anywhere: the scenario is over and no controller has timed work."""
        return self.next_event() is None

    def run_for(self, seconds: float, until_idle: bool = False,
                on_step: Callable[[SimCluster], None] | None = None) -> None:
        """Advance the simulation by `seconds` of simulated time (virtual or real)."""
        with sparse_collections():
            self._run_for(seconds, until_idle, on_step)

    def _run_for(self, seconds: float, until_idle: bool,
                 on_step: Callable[[SimCluster], None] | None) -> None:
        end = self.clock.now() + seconds
        same_instant = 0
        while not self._stop.is_set():
            self.settle()
            if on_step is not None:
                on_step(self)
            nxt = self.next_event()
            if until_idle and nxt is None:
                break
            if self.clock.now() >= end:
                break
            target = end if nxt is None else min(nxt, end)
            if self.clock.virtual:
                if target <= self.clock.now():
                    # A controller asks to run again at this same instant: settle once more.
                    same_instant += 1
                    if same_instant >= MAX_SAME_INSTANT:
                        self._stalled()
                        break
                    continue
                same_instant = 0
                self.clock.advance_to(target)
            else:
                self.clock.wait_until(target, self.wake)

    def _stalled(self) -> None:
        # Simulated evictions complete at the instant they are sent, so a preemption loop that
        # takes seconds per turn on a real cluster (Kueue#13662) would spin here forever.
        msg = (f"simulated time stopped at t={self.clock.now() - self.clock.start:.3f}s: the controllers "
               f"kept working at that instant for {MAX_SAME_INSTANT} rounds (a preemption loop? "
               "Kueue's PrioritizePreemptorWorkloads gate breaks the known one)")
        _log.error(msg)
        self.errors.append(msg)

    def run_forever(self) -> None:
        """Real-time serving loop (sim serve): runs until stop()."""
        with sparse_collections():
            while not self._stop.is_set():
                self.settle()
                self.clock.wait_until(self.next_event(), self.wake)

    def stop(self) -> None:
        self._stop.set()
        self.wake.set()


def _strip_for_merge(obj: dict[str, Any]) -> dict[str, Any]:
    """A scenario update document as a merge patch: identity fields out, the rest merges."""
    out = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    meta = dict(out.get("metadata") or {})
    for k in ("name", "namespace", "resourceVersion", "uid", "creationTimestamp"):
        meta.pop(k, None)
    out["metadata"] = meta
    return out
