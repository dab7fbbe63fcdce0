"""The console's forecast worker: when will each pending workload start, recomputed off the UI thread.

A thread owns everything the forecast keeps between runs (its EngineCache, the runtime history
and its file): when the store's snapshot changed, at most every `interval` seconds, it reads
what the forecast needs from the store (the snapshot, the node pools), then estimates every
running and pending workload's runtime from the history, runs the admission engine forward
(`admission.forecast`) and hands the result to the store, which tells the views which rows moved.
On Linux the estimate and the engine run in a child process forked for each forecast
(`forecast_process`): a core of its own, so the UI never waits for it and it never waits for
the UI. Elsewhere, or with `isolate=False`, they run on the thread, which waits while a change
is on its way to the screen or keys come.
The history of finished runs is saved to `$XDG_STATE_HOME/kueuetop/run-history.json` every
minute and on stop, so a fresh console on a long-lived cluster starts with it; the node pools
seen (`store/known_pools.py`), for when they have scaled to zero, beside it in `known-pools.json`.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kueuetop.admission.check_timing import NodeCheck
from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.finish_grid import RESOLUTION
from kueuetop.admission.forecast import (
    OPTIMISTIC,
    PESSIMISTIC,
    RangeRun,
    forecast,
    merge_ranges,
    range_run,
    with_ranges,
)
from kueuetop.admission.forecast_result import Forecast, PoolCapacity, RuntimeEstimate, WorkloadForecast
from kueuetop.admission.runtime_estimate import estimate_runtimes
from kueuetop.kueue.core import Node
from kueuetop.kueue.pool_growth import AutoscalerRead
from kueuetop.kueue.snapshot import ClusterSnapshot, WorkloadKey
from kueuetop.kueue.workload import Workload
from kueuetop.store import Store
from kueuetop.store import events as K
from kueuetop.store import known_pools as KP
from kueuetop.store.run_history import (
    FILE_NAME,
    PodRuns,
    RunHistory,
    cluster_scope,
    follow_store,
    load_run_history,
    save_run_history,
)
from kueuetop.tui import forecast_process
from kueuetop.views.forecast_report import (
    POD_NOTE_RUN,
    checks_from_store,
    pods_note,
    pools_from_store,
    store_pool_growth,
)
from kueuetop.views.what_if import Latest, Pools

log = logging.getLogger(__name__)

PoolLimits = Callable[[], AutoscalerRead]  # one read of cluster-autoscaler's status

INTERVAL = 5.0  # seconds between forecasts at least ("at most once per few seconds")
DUTY = 0.05  # share of one core the forecasts may take on average: a slow one runs less often
TARGET = 10.0  # seconds one forecast (its three runs) may take: its rounds are capped to fit (with DUTY: one every 200 s at most then)
SHOW_WITHIN = 1.5  # seconds: with nothing on screen, the starts placed by then are shown while the run goes on
FIRST_STEPS = 400  # rounds per run before the first forecast has measured this cluster's pace
MIN_STEPS = 100
SAVE_EVERY = 60.0
POOL_LIMITS_EVERY = 60.0  # seconds between reads of the autoscaler's status (one GET each)
_YIELD_MAX = 2.0  # seconds a forecast waits for the screen at most before it runs anyway
READY_WAIT = 60.0  # seconds the first forecast waits for the store's first lists at most
_READY_POLL = 0.1  # seconds between looks at whether they are in, at most (a change of the store looks at once)


class _Stopped(Exception):
    """The console is quitting: a forecast under way is dropped."""


@dataclass
class _Job:
    """One forecast's inputs, read from the store by the forecast thread before it runs."""

    snap: ClusterSnapshot
    now: float
    history: RunHistory | PodRuns  # runs measured from their pods' start when pods are placed
    pools: dict[str, PoolCapacity] | None
    placements: dict | None
    checks: Mapping[str, NodeCheck] | None
    max_steps: int
    pods_note: str
    started: float  # time.monotonic() when the forecast began (one clock for a forked child too)
    early: bool  # nothing on screen: the starts placed by SHOW_WITHIN seconds are shown then

    @property
    def placed(self) -> Pools | None:
        return (self.pools, self.placements or {}) if self.pools is not None else None


def _compute(job: _Job, cache: EngineCache, pause: Callable[[], None], send: forecast_process.Send,
             side_by_side: Callable[[], None] | None = None,
             runtimes: Callable[[], Mapping[WorkloadKey, RuntimeEstimate]] | None = None) -> None:
    """The forecast itself, pure: estimates, the expected run, then its ranges. Sends
    ("early" | "expected" | "ranged", Forecast) as each is known; on the forecast thread or in
    a forked child alike. `side_by_side` (in a child: its heartbeat): the two range runs at once
    (`_side_by_side`). `runtimes`: the estimates as worked out beside the run (`_estimated_beside`),
    read when the run's first round needs them; None: worked out here first."""
    estimates = runtimes if runtimes is not None else estimate_runtimes(job.snap, job.history, job.now)
    asked = False

    def partial(so_far: Callable[[], Forecast]) -> None:
        nonlocal asked
        if asked or not job.early or time.monotonic() - job.started < SHOW_WITHIN:
            return
        early = so_far()
        if any(w.start is not None for w in early.workloads.values()):  # else nothing to show yet
            asked = True
            send(("early", dataclasses.replace(early, pods_note=job.pods_note)))

    # A big cluster's whole future costs seconds of the engine; the first ones matter most. The
    # run stops after the rounds that fit TARGET and says how far it got (`horizon`): later
    # workloads read "beyond" that, rather than the forecast burning a core on them. The
    # expected starts are sent as soon as they are known, the two runs for their ranges
    # (optimistic, pessimistic runtimes) following.
    # With pools, ProvisioningRequest checks pass when their pods find nodes (check_timing).
    result = forecast(job.snap, estimates, job.now, cache=cache, pause=pause, max_steps=job.max_steps,
                      ranges=False, resolution=RESOLUTION, pools=job.pools, placements=job.placements,
                      checks=job.checks, partial=partial)
    result = dataclasses.replace(result, pods_note=job.pods_note)  # shown beside the forecast's age
    send(("expected", result))
    if not result.ranged:
        send(("ranged", _side_by_side(job, result, cache, pause, side_by_side) if side_by_side is not None else
              with_ranges(result, job.snap, cache=cache, pause=pause, max_steps=job.max_steps, resolution=RESOLUTION,
                          pools=job.pools, placements=job.placements, checks=job.checks)))


def _range_run(job: _Job, expected: Forecast, end: str, cache: EngineCache, pause: Callable[[], None]) -> RangeRun:
    return range_run(expected, job.snap, end, cache=cache, pause=pause, max_steps=job.max_steps, resolution=RESOLUTION,
                     pools=job.pools, placements=job.placements, checks=job.checks)


def _side_by_side(job: _Job, expected: Forecast, cache: EngineCache, pause: Callable[[], None],
                  alive: Callable[[], None]) -> Forecast:
    """The two range runs at once, in a forecast child: the pessimistic one in a child of its own
    (forked from this single-threaded process: nothing to guard), the optimistic one here. With
    a second core the ranges come a run's time sooner; a helper that fails is done here instead.
    While this one waits for the helper, the helper's heartbeats are passed on (`alive`)."""
    def pessimistic(send: forecast_process.Send) -> None:
        send(_range_run(job, expected, PESSIMISTIC, cache, forecast_process.heartbeat(send)))

    try:
        helper = forecast_process.start(pessimistic)
    except OSError:
        helper = None
    late: RangeRun | None = None
    try:
        early = _range_run(job, expected, OPTIMISTIC, cache, pause)
        if helper is not None:
            for msg in helper.messages(threading.Event(), on_word=alive):
                late = msg if isinstance(msg, RangeRun) else late
    except forecast_process.ChildFailed:
        late = None
    finally:
        if helper is not None:
            helper.close()
    if late is None:
        late = _range_run(job, expected, PESSIMISTIC, cache, pause)
    return merge_ranges(expected, early, late)


def _in_child(job: _Job, cache: EngineCache) -> Callable[[forecast_process.Send], None]:
    """`_compute` as a forked child runs it: the runtime estimates worked out beside the run's
    first round and sent once, ("runtimes", estimates) (they are the same for all of one
    forecast's results, and most of their size), then each result without them, with the rounds
    counted so far; a heartbeat between rounds."""
    def job_in_child(send: forecast_process.Send) -> None:
        rounds = 0
        alive = forecast_process.heartbeat(send)

        def pause() -> None:
            nonlocal rounds
            rounds += 1
            alive()

        def lean(msg: tuple) -> None:
            kind, result = msg
            send((kind, dataclasses.replace(result, runtimes={}), rounds))
            if kind == "expected" and job.early:
                forecast_process.lower_priority()  # the ranges may wait for the UI (if not below it yet)

        _compute(job, cache, pause, lean, side_by_side=alive, runtimes=_estimated_beside(job, send, alive))
    return job_in_child


def _estimated_beside(job: _Job, send: forecast_process.Send,
                      alive: Callable[[], None]) -> Callable[[], Mapping[WorkloadKey, RuntimeEstimate]]:
    """The runtime estimates worked out in a helper forked from the forecast child, while the
    child runs what of the forecast needs none (its first round: the workload controller over
    every workload, the first cycle over every queue's head); the function returned waits for
    them, sends them on as the helper pickled them, and gives them. A helper that fails has
    them worked out in the child instead. On `large` they take a quarter of a second: a tenth
    of the time to the expected starts."""
    def estimates(send_: forecast_process.Send) -> None:
        send_(("runtimes", estimate_runtimes(job.snap, job.history, job.now)))

    try:
        helper: forecast_process.ForkedJob | None = forecast_process.start(estimates)
    except OSError:
        helper = None

    def runtimes() -> Mapping[WorkloadKey, RuntimeEstimate]:
        got: Mapping[WorkloadKey, RuntimeEstimate] | None = None
        if helper is not None:
            try:
                for msg, pickled in helper.messages(threading.Event(), on_word=alive, raw=True):
                    if isinstance(msg, tuple) and msg[:1] == ("runtimes",):
                        got = msg[1]
                        send(pickled)
            except forecast_process.ChildFailed:
                pass
            finally:
                helper.close()
        if got is None:
            got = estimate_runtimes(job.snap, job.history, job.now)
            send(("runtimes", got))
        return got
    return runtimes


def _moved(old: Forecast | None, new: Forecast) -> set[tuple[str, str]]:
    """Workloads whose answer changed: their rows are redrawn, the rest keep theirs. One placed
    in neither reads as after the run's horizon (`>1h29m`, or `beyond`): when the horizon or
    the run's completeness moved, that text did too (an early view's `>11m` is not the whole run's)."""
    before = old.workloads if old is not None else {}
    out = {k for k in before.keys() - new.workloads.keys()}
    reach_moved = old is None or (old.horizon, old.complete) != (new.horizon, new.complete)
    for k, wf in new.workloads.items():
        prev: WorkloadForecast | None = before.get(k)
        answer_moved = prev is None or (prev.start, prev.earliest, prev.latest, prev.never) != (
            wf.start, wf.earliest, wf.latest, wf.never)
        if answer_moved or (reach_moved and wf.start is None and not wf.never):
            out.add(k)
    return out


class Forecaster:
    """Runs forecasts of the store's cluster on its own thread until stopped."""

    def __init__(self, store: Store, *, server: str = "", context: str = "", state_dir: Path | None = None,
                 interval: float = INTERVAL, busy: Callable[[], bool] = lambda: False,
                 clock: Callable[[], float] = time.time, pool_limits: PoolLimits | None = None,
                 ready: Callable[[], bool] = lambda: True, isolate: bool | None = None) -> None:
        """`ready`: whether the store holds the cluster (every source's first list applied): the
        first forecast waits for it (READY_WAIT at most), then runs at once. A forecast of a
        half-listed cluster would be wrong, and a quick one would set the next a full interval off.
        `isolate`: run each forecast in a forked child (None: where that is safe, `can_fork`)."""
        self.store = store
        self.isolate = forecast_process.can_fork() if isolate is None else isolate
        self._ready = ready
        # cluster-autoscaler's node groups, when they can be read (`sources.autoscaler_status`):
        # then pods wait for nodes in the forecast, as in `kueuetop forecast`; else they run when
        # admitted, and `pods` says why.
        self._pool_limits = pool_limits
        self._limits: tuple[float, AutoscalerRead] | None = None  # (when read, what was read)
        self.pods = POD_NOTE_RUN
        self.interval = interval
        self._busy = busy
        self._clock = clock
        self._path = state_dir / FILE_NAME if state_dir is not None else None
        scope = cluster_scope(server, context)
        if self._path is not None:
            self.history, self.warning = load_run_history(self._path, scope)
            # The pools seen before, for those at zero now (`store/known_pools.py`).
            self.known, known_warning = KP.load_known_pools(self._path.with_name(KP.FILE_NAME), scope)
            self.warning = "; ".join(w for w in (self.warning, known_warning) if w)
        else:
            self.history, self.warning = RunHistory(scope), ""
            self.known = KP.KnownPools(scope)
        # This worker's own (the UI thread's explains keep theirs); a new one per forecast.
        self.cache = EngineCache()
        self.runs = 0
        self.last_seconds = 0.0  # how long the last forecast took (wall)
        self.first_seconds = 0.0  # …until its expected starts were shown (wall)
        self.early_seconds: float | None = None  # …until the soonest were (nothing on screen yet), None: not needed
        self.early_answered = 0  # …and how many workloads had their start shown then
        self.max_steps = FIRST_STEPS  # rounds per forward run: what fits TARGET at the last pace
        self._rounds = 0
        self._result: Forecast | None = None  # the forecast under way's latest result
        self.error = ""  # the last run's failure, one line ("" after a good run)
        # The latest forecast with the snapshot it was run on (the store caches one snapshot
        # object per version) and the pools it placed pods on (None: it did not): the what-if
        # panel reuses it as its "before" when the store has not moved since, and places pods
        # as it did. One tuple, so a reader on another thread never sees a mismatched set.
        self.latest: Latest | None = None
        self._version = -1
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._store_moved = threading.Event()  # the store changed: the first forecast looks whether it is listed
        self._unfollow: Callable[[], None] | None = None
        self._unwatch: Callable[[], None] | None = None
        self._thread = threading.Thread(target=self._run, name="kueuetop-forecast", daemon=True)
        self._saved_at = time.monotonic()

    def start(self) -> Forecaster:
        # Finished workloads already in the store count at once; later ones as they finish.
        self._unfollow = follow_store(self.store, self.history)
        # Until the first forecast: each change of the store (its last list among them) wakes
        # the thread to look whether the cluster is listed, rather than a poll's tenth of a second later.
        self._unwatch = self.store.subscribe(lambda changes: self._store_moved.set(), stage=1)
        self.history.record_all(w for w in self.store.objects(K.WORKLOADS).values() if isinstance(w, Workload))
        self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._wake.set()
        self._store_moved.set()
        if self._unfollow is not None:
            self._unfollow()
            self._unfollow = None
        if self._thread.is_alive():
            self._thread.join(timeout)
        self.save()

    def now(self) -> None:
        """Forecast at the next chance rather than after the interval (a what-if asked, a test)."""
        self._version = -1
        self._wake.set()

    def save(self) -> None:
        if self._path is None:
            return
        if self.known.unsaved:  # rare: a pool seen for the first time, or its nodes changed
            warning = KP.save_known_pools(self._path.with_name(KP.FILE_NAME), self.known)
            if warning:
                log.warning("%s", warning)
        if not self.history.unsaved:
            return
        warning = save_run_history(self._path, self.history)
        if warning:
            log.warning("%s", warning)
        self._saved_at = time.monotonic()

    def run_once(self) -> Forecast | None:
        """One forecast of the store as it is now, handed to the store; None when nothing changed."""
        version = self.store.snapshot_version
        if version == self._version:
            return None
        self._version = version
        started = time.monotonic()
        snap = self.store.snapshot()
        now = self._clock()
        pools, placements = self._pools(now)
        job = _Job(snap=snap, now=now,
                   # With pools the forecast adds each wait for nodes itself: the runs count from their pods' start.
                   history=self.history.from_pods() if pools is not None else self.history,
                   pools=pools, placements=placements,
                   checks=checks_from_store(self.store, snap) if pools is not None else None,
                   max_steps=self.max_steps, pods_note=self.pods, started=started,
                   early=not isinstance(self.store.forecast(), Forecast))
        self._rounds = 0
        self.early_seconds, self.early_answered = None, 0
        self._result = None
        try:
            if self.isolate:
                self._run_forked(job)
            else:
                self._run_here(job)
        finally:
            # What the engine kept is about the forecast's last virtual instant, not the next
            # snapshot: the next run rebuilds it anyway (measured on live `large`: no slower),
            # while keeping it held ~28 MB of virtual workloads between runs. The parsed
            # conditions and pod sets are the cluster's own and stay.
            self.cache = EngineCache(parse=self.cache.parse)
        self.last_seconds = time.monotonic() - started
        if self.last_seconds > 0 and self._rounds:
            pace = self._rounds / self.last_seconds
            self.max_steps = max(MIN_STEPS, int(pace * TARGET / 3))
        self.runs += 1
        return self._result

    def _run_here(self, job: _Job) -> None:
        """`_compute` on this thread, yielding to the UI between rounds (`_pause`)."""
        _compute(job, self.cache, self._pause, lambda msg: self._take(job, *msg))

    def _run_forked(self, job: _Job) -> None:
        """`_compute` in a forked child (`forecast_process`), its results published as they come.
        A child that dies or goes silent turns isolation off: the next forecasts run on this thread."""
        try:
            # The first forecast (nothing on screen: `early`) is what the user waits for: with a
            # core for the UI and one for it, its child runs at the console's priority until its
            # expected starts are sent; on `large` that brought them 0.14 s sooner (2.14 s against
            # 2.28 s, four runs each on 2 vCPUs, the console drawing its first table meanwhile).
            # With one core the UI goes first.
            first = job.early and forecast_process.cores() >= 2
            child = forecast_process.start(_in_child(job, self.cache), locks=[self.history.held()],
                                           nice=0 if first else forecast_process.NICE)
        except OSError as exc:  # no process to be had (memory, a process limit): this one on the thread
            log.warning("forecast process could not start (%s): forecasting on the console's thread", exc)
            self._run_here(job)
            return
        runtimes: Mapping = {}
        try:
            for msg in child.messages(self._stop):
                if msg[0] == "runtimes":  # once, before the first result
                    runtimes = msg[1]
                    continue
                kind, result, rounds = msg
                self._rounds = rounds
                self._take(job, kind, dataclasses.replace(result, runtimes=runtimes))
        except forecast_process.ChildFailed as exc:
            if not exc.raised:
                self.isolate = False
                log.warning("%s: forecasting on the console's thread from now on", exc)
            raise
        finally:
            child.close()
        if self._stop.is_set():
            raise _Stopped

    def _take(self, job: _Job, kind: str, result: Forecast) -> None:
        """One result of the forecast under way: shown unless a better one is on screen."""
        shown = self.store.forecast()
        if kind == "early":  # the soonest starts, while nothing is on screen
            if isinstance(shown, Forecast):
                return
            self.early_seconds = time.monotonic() - job.started
            self.early_answered = sum(1 for w in result.workloads.values() if w.start is not None)
        elif kind == "expected":
            self.first_seconds = time.monotonic() - job.started
            # Later forecasts replace a ranged one whole, so that no range blinks out while they run.
            if isinstance(shown, Forecast) and shown.ranged:
                self._result = result
                return
        self._result = result
        self._publish(job.snap, result, job.placed)

    def _pools(self, now: float) -> tuple[dict[str, PoolCapacity] | None, dict | None]:
        """The node pools and running pods' GPUs when their growth is known (the autoscaler's
        status read at most every POOL_LIMITS_EVERY seconds; `kueue/pool_growth.py`), else
        (None, None): pods run when admitted."""
        if self._pool_limits is None:
            return None, None
        at = time.monotonic()
        if self._limits is None or at - self._limits[0] >= POOL_LIMITS_EVERY:
            self._limits = (at, self._pool_limits())
        growth = store_pool_growth(self.store, self._limits[1])
        self.pods = pods_note(growth)
        self.known.learn_nodes((n for n in self.store.objects(K.NODES).values() if isinstance(n, Node)), now)
        if not growth.placed:
            return None, None
        return pools_from_store(self.store, growth.groups, now, known=self.known)

    def _publish(self, snap: ClusterSnapshot, result: Forecast, placed: Pools | None) -> None:
        old = self.store.forecast()
        self.latest = (snap, result, placed)
        self.store.set_forecast(result, _moved(old if isinstance(old, Forecast) else None, result))

    def _pause(self) -> None:
        """Between the engine's rounds: while keys come or a change is on its way to the screen,
        the UI thread gets the interpreter (a forecast of a large cluster runs for seconds)."""
        self._rounds += 1
        deadline = time.monotonic() + _YIELD_MAX
        while self._busy() and time.monotonic() < deadline and not self._stop.is_set():
            time.sleep(0.01)
        if self._stop.is_set():
            raise _Stopped

    def wait_seconds(self) -> float:
        """Until the next forecast: the interval, or longer after a slow one (DUTY)."""
        return max(self.interval, self.last_seconds / DUTY)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_WAIT
        try:
            while not self._stop.is_set() and time.monotonic() < deadline:
                self._store_moved.clear()
                try:
                    if self._ready():
                        return
                except Exception:  # a failing check must not keep the forecast off
                    log.exception("forecast readiness check failed")
                    return
                self._store_moved.wait(_READY_POLL)
        finally:
            if self._unwatch is not None:
                self._unwatch()
                self._unwatch = None

    def _run(self) -> None:
        self._wait_ready()
        while not self._stop.is_set():
            try:
                if not self.isolate:
                    self._pause()
            except _Stopped:
                return
            try:
                self.run_once()
                self.error = ""
            except _Stopped:
                return
            except Exception as exc:  # a forecast must never take the console down
                self.error = f"forecast failed: {type(exc).__name__}: {exc}"[:200]
                log.exception("forecast failed")
            if time.monotonic() - self._saved_at >= SAVE_EVERY:
                self.save()
            self._wake.wait(self.wait_seconds())
            self._wake.clear()

