"""How good the admission forecast is, measured against the simulator's own future.

For each scenario a reference run (arrivals as the scenario has them, to idle) gives the busy part
of its timeline; the snapshot instants T are the quantiles of its pending-workload·seconds (where
the queues are longest), or `--at`. Then, per scenario:

1. **Exact mode** (per instant, a fresh run): the cluster runs to T, the scenario's later steps are
   dropped (`SimCluster.drop_later_steps`: no arrivals after T), the forecast starts from the typed
   snapshot of the store with every workload's true runtime (the perf label, else the
   `kueuetop.io/runtime` annotation: `kueuetop.sim.observed.exact_runtimes`), and the simulator runs
   on to idle. Every workload pending at T is compared with its first Admitted transition after T
   (the event recorder). Where pods wait for nodes (autoscaled pools, per-job pools that node
   auto-provisioning makes, provisioning) the workload holds quota longer than its runtime: a
   forecast without pools does not model that, one with them (`specRuntimesWithPools`: every
   pool as the autoscaler knows it, scaled-to-zero ones included, `sim.observed.node_pools_of`)
   does. The same snapshot is also forecast with the runtimes the simulator actually observed
   (last admission → finish); the difference is that wait's share of the error (`podStartError`).
   Workloads holding quota at T while ProvisioningRequest checks wait are answered only by the
   forecast on the pools (the checks pass when their pods find nodes): `awaitingProvisioningWithPools`.
2. **Estimated mode** (one run, what a user gets): arrivals continue; at each T the runtimes are
   `estimate_runtimes` from a RunHistory fed, as the console's is, with every Workload seen to
   finish before T; the two naive baselines of `admission/eta_baselines.py` read the admissions a
   watch saw before T and each workload's position in its ClusterQueue at T (the simulator's
   visibility order, `sim/kueue/queue_view.py`). Errors are |predicted − actual admission| over the
   workloads not admitted at T (pending, or holding quota while admission checks wait) that were
   admitted within the run; coverage is how many got an answer (the baselines, reading queue
   positions, and the forecast without pools answer no workload already holding quota);
   the goal is the forecast's median error at most half of the better baseline's. Where the
   pools' growth is known (`kueue/pool_growth.py`: an autoscaler's status ConfigMap, as in
   refarch; or none and no Karpenter node, fixed pools, as in `large`), `forecastOnPools` is
   what the console and `kueuetop forecast` then give: pods placed on the pools, runs measured
   from their pods' start; it has its own goal line. `--known-distributions N` (scale
   scenarios, whose classes draw runtimes log-uniform between known bounds) adds what a forecast
   knowing the true distributions would give: `knownMedians` (each runtime at its median) and
   `knownDraws` (the median start over N runs with drawn runtimes), a bound on what better
   runtime estimates could reach; `knownSpread`, the true distributions spread over peers as the
   forward run spreads estimates. `--long-lived-history` adds `longLivedHistory`: the forecast
   with the history a cluster running the scenario for long would have (every run of the
   scenario but those being forecast, at random times: `long_lived_history`), with its goal line.
3. Speed: wall and CPU seconds of every forecast call, with ranges (three runs: expected,
   optimistic, pessimistic) and without, and the number of pending workloads; `--speed-only`
   times them with the heap kept as the console keeps it (`console_heap`). Estimated runtimes
   are forecast as the console forecasts them, with finishes on the grid (`finish_grid`).
   `consoleWorker`: the console's own forecast worker (`tui/forecaster.py`) on a store holding
   the cluster, in a process of its own that holds what a console holds and not this one's
   simulator (`_console_worker.py`), its history only from the finished Workloads still there: seconds until the
   soonest starts are shown (`soonestShownWallSeconds`, null when the expected run ended first;
   `soonestShownAnswered`, how many starts that partial forecast held: 0 when the run had not
   reached the first admission by then),
   until all expected starts are, and until their ranges are; in a child process as the console
   runs it, and on the worker's thread (`inProcess`); CPU seconds include the children's.
   `--speed-only` measures only this, with
   the grid's effect (`withoutGrid`), at `--at` instants (900 s by default): no run to idle.

Prints one JSON document (or writes it to --out). Times of the cluster are virtual seconds of the
simulator; wall/CPU seconds are this process's (for `consoleWorker`, the worker's process's and
its forecast children's CPU), with no API server and no console.

Usage (repository root, project virtualenv):

    python benchmarks/forecast.py                                  # refarch, skypilot, kueue-perf-baseline
    python benchmarks/forecast.py --scenarios large --instants 2   # 20,000 workloads (opt-in)
    python benchmarks/forecast.py --scenarios large --instants 2 --known-distributions 9 --long-lived-history
    python benchmarks/forecast.py --scenarios large,xl --speed-only --at 900   # speed alone
    python benchmarks/forecast.py --scenarios refarch --at 600,1200 --out /tmp/forecast.json
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import dataclasses
import json
import math
import pickle
import random
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _console_worker import KINDS as CONSOLE_KINDS
from _console_worker import SAMPLES as CONSOLE_SAMPLES
from _console_worker import console_heap, store_of

from kueuetop.admission.eta_baselines import ema_throughput_eta, mean_interval_eta
from kueuetop.admission.finish_grid import RESOLUTION
from kueuetop.admission.forecast import forecast
from kueuetop.admission.forecast_result import Forecast, RuntimeEstimate
from kueuetop.admission.runtime_estimate import estimate_runtimes
from kueuetop.kueue.autoscaler_status import STATUS_KEY, STATUS_NAME, STATUS_NAMESPACE
from kueuetop.kueue.core import Node
from kueuetop.kueue.errors import KueueParseError
from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.pool_growth import AutoscalerRead
from kueuetop.kueue.run_times import admitted_at
from kueuetop.kueue.snapshot import ClusterSnapshot, WorkloadKey
from kueuetop.sim.clock import SimClock
from kueuetop.sim.kueue.queue_view import queued_workloads
from kueuetop.sim.observed import (
    admissions,
    admissions_by_cluster_queue,
    exact_runtimes,
    node_checks_of,
    node_pools_of,
    observed_runtimes,
    snapshot_of,
)
from kueuetop.sim.recorder import ADMITTED, CREATED, EVICTED, SimEvent
from kueuetop.sim.runner import VIRTUAL_EPOCH
from kueuetop.sim.scenarios.generators import CLASS_LABEL, class_runtime_range
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.storage.objectstore import ObjectStore, WatchEvent
from kueuetop.sim.wiring import SimParts, build_cluster
from kueuetop.sources.autoscaler_status import parse_autoscaler_status
from kueuetop.store import Store
from kueuetop.store.known_pools import KnownPools
from kueuetop.store.run_history import RunHistory, RunRecord
from kueuetop.views.forecast_report import checks_from_store, pools_from_store, store_pool_growth

DEFAULT_SCENARIOS = ("refarch", "skypilot", "kueue-perf-baseline")
ON_POOLS = "forecastOnPools"  # the forecast with pods placed on the pools (the autoscaler's limits, or fixed)
LONG_LIVED = "longLivedHistory"  # the forecast with a long-lived cluster's history (`long_lived_history`)
FORECASTS = ("forecast", ON_POOLS, LONG_LIVED)
BASELINES = ("meanInterval", "emaThroughput")
IDLE = 30 * 24 * 3600.0  # a bound on simulated time only: runs end when the cluster is idle
LABELS = {
    "times": "virtual seconds of the simulator's clock (errors, instants, T+…); never wall time",
    "wallSeconds/cpuSeconds": "real seconds of this process (consoleWorker's CPU: its forecast children's too; "
                              "paused cluster, no API server)",
    "error": "forecast (or baseline) admission time − the simulator's first Admitted transition after T",
    "exact": "the same whole second (floor of both equal)",
    "withinOneInstant": "at most one admission instant of the simulator's run away from the actual one",
}


# ----------------------------------------------------------------------------------- helpers
def build(name: str) -> SimParts:
    return build_cluster(load_scenario(name), SimClock(VIRTUAL_EPOCH), record_events=False)


def pending_keys(snap: ClusterSnapshot) -> list[WorkloadKey]:
    """Unfinished workloads holding no quota: what every forecast answers for."""
    return sorted(k for k, w in snap.workloads.items() if not w.is_finished and not w.has_quota_reservation)


def waiting_keys(snap: ClusterSnapshot) -> list[WorkloadKey]:
    """Unfinished workloads not admitted: holding no quota, or holding it while admission checks
    wait (the forecast on node pools answers those whose checks are ProvisioningRequests')."""
    return sorted(k for k, w in snap.workloads.items()
                  if not w.is_finished and (not w.has_quota_reservation or not w.is_admitted))


def _starts(fc: Forecast, keys: Iterable[WorkloadKey]) -> dict[WorkloadKey, float | None]:
    """Each workload's forecast start; None where it has none or is not answered (a workload
    awaiting admission checks, for a forecast that does not time them)."""
    return {k: (w.start if (w := fc.workloads.get(k)) is not None else None) for k in keys}


def timed(fn: Callable[[], Forecast]) -> tuple[Forecast, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def quantile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    pos = (len(s) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def error_stats(errors: Sequence[float]) -> dict[str, Any]:
    """Median, p90 and max of |error| (seconds)."""
    if not errors:
        return {"n": 0, "medianAbs": None, "p90Abs": None, "maxAbs": None, "medianSigned": None}
    a = [abs(e) for e in errors]
    return {"n": len(a), "medianAbs": round(statistics.median(a), 1), "p90Abs": round(quantile(a, 0.9), 1),
            "maxAbs": round(max(a), 1), "medianSigned": round(statistics.median(errors), 1)}


def busy_instants(events: Iterable[SimEvent], n: int) -> list[float]:
    """`n` instants (whole seconds since start) splitting the run's pending-workload·seconds
    evenly: a workload is pending from its creation (or eviction) until it is admitted (quota
    reserved and admission checks passed)."""
    deltas = {CREATED: 1, EVICTED: 1, ADMITTED: -1}  # what is scored: until admitted (checks passed)
    steps = sorted(((e.time, deltas[e.type]) for e in events if e.type in deltas), key=lambda s: s[0])
    segments: list[tuple[float, float, int, float]] = []  # (from, to, pending, area before)
    area, pending, last = 0.0, 0, 0.0
    for t, d in steps:
        if pending and t > last:
            segments.append((last, t, pending, area))
            area += pending * (t - last)
        pending, last = max(0, pending + d), t
    out: list[float] = []
    for i in range(1, n + 1):
        target = area * i / (n + 1)
        for start, end, p, before in segments:
            if before + p * (end - start) >= target:
                # inside the segment, where the queue is as it was at its start
                t = float(math.floor(start + (target - before) / p))
                if t not in out:
                    out.append(t)
                break
    return out


def follow_finishes(parts: SimParts, history: RunHistory) -> None:
    """Feed `history` with every Workload the simulator's store sees finish, as the console's
    store feeds its own (store/run_history.follow_store): parsed once, at the Finished write,
    before a pod group's Workload may be deleted."""

    def on_event(ev: WatchEvent) -> None:
        if ev.kind.kind != "Workload" or ev.type != "MODIFIED" or not _finished(ev.obj) or _finished(ev.old):
            return
        with contextlib.suppress(KueueParseError):  # the console skips what it cannot parse too
            history.record(parse_object(ev.obj))

    parts.cluster.store.subscribe(on_event)


def follow_nodes(parts: SimParts) -> dict[str, Node]:
    """Every Node the simulator's store has shown so far, as last seen (deleted ones kept): what
    a console watching the cluster since its start has learnt of its pools (store/known_pools.py),
    pools scaled to zero included."""
    seen: dict[str, Node] = {}

    def on_event(ev: WatchEvent) -> None:
        if ev.kind.kind != "Node" or ev.type == "DELETED":
            return
        with contextlib.suppress(KueueParseError):
            node = parse_object(ev.obj)
            if isinstance(node, Node):
                seen[node.name] = node

    parts.cluster.store.subscribe(on_event)
    return seen


def _finished(obj: Mapping[str, Any] | None) -> bool:
    conds = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Finished" and c.get("status") == "True" for c in conds if isinstance(c, dict))


def queue_positions(parts: SimParts, now: float) -> dict[WorkloadKey, tuple[str, int]]:
    """Each pending workload's 0-based position in its ClusterQueue, in the visibility API's order."""
    kueue = parts.kueue
    snap = kueue.snapshot()
    out: dict[WorkloadKey, tuple[str, int]] = {}
    counts: dict[str, int] = {}
    for key, q in queued_workloads(snap, kueue.state, now, kueue.cache.workload_index(snap)).items():
        pos = counts.get(q.cluster_queue, 0)
        counts[q.cluster_queue] = pos + 1
        out[key] = (q.cluster_queue, pos)
    return out


# ----------------------------------------------------------------------------------- exact mode
@dataclass
class Comparison:
    """Forecast vs the simulator's admissions for one instant."""

    now: float
    actual_instants: list[float]
    rows: list[dict[str, Any]] = field(default_factory=list)


def compare(result: Forecast, pending: Sequence[WorkloadKey], actual: Mapping[WorkloadKey, float],
            now: float) -> dict[str, Any]:
    instants = sorted(set(actual.values()))
    errors, differ = [], []
    exact = one_instant = both_never = mismatched_never = 0
    for key in pending:
        got, want = result.workloads[key].start, actual.get(key)
        if got is None or want is None:
            if got is None and want is None:
                both_never += 1
            else:
                mismatched_never += 1
                differ.append(_row(key, got, want, now))
            continue
        err = got - want
        errors.append(err)
        exact += math.floor(got) == math.floor(want)
        i = bisect.bisect_left(instants, want)
        lo = instants[i - 1] if i > 0 else want
        hi = instants[i + 1] if i + 1 < len(instants) else want
        one_instant += lo - 1 < got < hi + 1
        if abs(err) >= 1:
            differ.append(_row(key, got, want, now))
    differ.sort(key=lambda r: -abs(r["error"]) if r["error"] is not None else -math.inf)
    return {"pending": len(pending), "compared": len(errors), "exact": exact, "withinOneSecond":
            sum(abs(e) < 1 for e in errors), "withinOneInstant": one_instant, "neverOnBothSides": both_never,
            "neverOnOneSide": mismatched_never, "maxAbsError": round(max(map(abs, errors), default=0.0), 1),
            "errors": error_stats(errors), "differing": len(differ), "firstDiffering": differ[:10]}


def _row(key: WorkloadKey, got: float | None, want: float | None, now: float) -> dict[str, Any]:
    return {"workload": f"{key[0]}/{key[1]}",
            "forecast": None if got is None else round(got - now, 1),
            "actual": None if want is None else round(want - now, 1),
            "error": None if got is None or want is None else round(got - want, 1)}


def exact_mode(name: str, at: float) -> dict[str, Any]:
    parts = build(name)
    cluster = parts.cluster
    cluster.run_for(at)
    dropped = cluster.drop_later_steps()
    now = cluster.clock.now()
    snap = snapshot_of(cluster.store, parts.kueue.config)
    spec = exact_runtimes(cluster.store)
    pending = pending_keys(snap)
    pools, placements = node_pools_of(cluster.store, parts.extra.get("node-pools"))
    mark = len(parts.recorder.events)
    result, wall, cpu = timed(lambda: forecast(snap, spec, now, ranges=False))
    # The same with pods placed on the node pools (scale-up delays, full pools): the part of the
    # error above that is pods waiting for nodes should go.
    checks = node_checks_of(cluster.store, snap)
    placed, _wall_p, cpu_p = timed(lambda: forecast(snap, spec, now, ranges=False, pools=pools, placements=placements,
                                                    checks=checks))
    cluster.run_for(IDLE, until_idle=True)
    actual = admissions(parts.recorder.events, cluster.clock.start, mark)
    # The runtimes the simulator ran (pods waiting for nodes included); the spec's where a
    # workload never finished.
    seen = observed_runtimes(parts.recorder.events)
    observed = {k: RuntimeEstimate(seen[k], seen[k], seen[k], "observed") if k in seen else r
                for k, r in spec.items()}
    waited = {k: seen[k] - r.expected for k, r in spec.items() if k in seen and seen[k] - r.expected >= 1}
    # Nothing waited (no nodes to wait for, as in the perf harness): the same forecast.
    with_observed = forecast(snap, observed, now, ranges=False) if waited else result
    in_checked = sum(1 for k in pending if _has_checks(snap, k))
    # Quota reserved, admission checks not yet passed: the forecast on the pools answers those
    # waiting only for ProvisioningRequests (when their pods find nodes), compared apart.
    awaiting = [k for k, w in snap.workloads.items()
                if w.has_quota_reservation and not w.is_admitted and not w.is_finished]
    answered_holding = sorted(k for k in awaiting if k in placed.workloads)
    return {
        "at": at, "stepsDropped": dropped, "pending": len(pending), "complete": result.complete,
        "pendingInQueuesWithAdmissionChecks": in_checked, "awaitingAdmissionChecks": len(awaiting),
        "forecastWallSeconds": round(wall, 2), "forecastCpuSeconds": round(cpu, 2),
        "specRuntimes": compare(result, pending, actual, now),
        "specRuntimesWithPools": compare(placed, pending, actual, now),
        "awaitingProvisioningWithPools": compare(placed, answered_holding, actual, now),
        "forecastWithPoolsCpuSeconds": round(cpu_p, 2),
        "observedRuntimes": compare(with_observed, pending, actual, now),
        "workloadsWhosePodsWaited": {"count": len(waited), "maxWaitSeconds": round(max(waited.values(), default=0), 1)},
        "simulatorErrors": list(cluster.errors)[:5],
    }


def _has_checks(snap: ClusterSnapshot, key: WorkloadKey) -> bool:
    cq = snap.cluster_queues.get(snap.cluster_queue_of(snap.workloads[key]) or "")
    return bool(cq is not None and cq.admission_checks)


def pod_start_error(exact: list[dict[str, Any]]) -> dict[str, Any]:
    """How much of the exact-mode error is pods waiting for nodes: spec vs observed runtimes."""
    spec = [r["specRuntimes"] for r in exact]
    seen = [r["observedRuntimes"] for r in exact]
    return {
        "differingWithSpecRuntimes": sum(s["differing"] for s in spec),
        "differingWithObservedRuntimes": sum(s["differing"] for s in seen),
        "maxAbsErrorSpec": max((s["maxAbsError"] for s in spec), default=0),
        "maxAbsErrorObserved": max((s["maxAbsError"] for s in seen), default=0),
        "differingWithPools": sum(r["specRuntimesWithPools"]["differing"] for r in exact),
        "maxAbsErrorWithPools": max((r["specRuntimesWithPools"]["maxAbsError"] for r in exact), default=0),
    }


# ----------------------------------------------------------------------------------- estimated mode
@dataclass
class Instant:
    at: float
    now: float
    mark: int
    pending: list[WorkloadKey]
    predictions: dict[str, Mapping[WorkloadKey, float | None]]
    ranges: Mapping[WorkloadKey, tuple[float | None, float | None]]
    speed: dict[str, Any]
    snap: ClusterSnapshot | None = None  # kept for `longLivedHistory`, forecast after the run


def known_distributions(snap: ClusterSnapshot, now: float, draws: int, seed: int = 7,
                        ) -> dict[str, dict[WorkloadKey, float | None]] | None:
    """What a forecast would give knowing each workload's true runtime distribution (a scale
    scenario draws a class's runtimes log-uniform between its min and max): `knownMedians`,
    every runtime at its median given how long it has run; `knownSpread`, the runs of a class
    spread over its distribution as the forward run spreads estimated ones (each at the quantile
    of its place among its peers); `knownDraws`, the median start over
    `draws` forward runs with runtimes drawn from those distributions. None when some workload
    has no known class. An upper bound on what runtime estimates alone can reach."""
    bounds: dict[WorkloadKey, tuple[float, float]] = {}
    for key, wl in snap.workloads.items():
        if wl.is_finished:
            continue
        span = class_runtime_range(wl.meta.labels)
        if span is None:
            return None
        since = admitted_at(wl) if wl.has_quota_reservation else None
        ran = max(0.0, now - since) if since is not None else 0.0
        lo, hi = max(span[0], ran), max(span[1], ran)  # given it has run `ran` (log-uniform on the rest)
        bounds[key] = (lo, hi)
    pending = pending_keys(snap)

    def starts(runtime: Callable[[WorkloadKey, float, float], float]) -> list[float | None]:
        rts = {k: RuntimeEstimate(v, v, v, "known") for k, (lo, hi) in bounds.items() for v in (runtime(k, lo, hi),)}
        fc = forecast(snap, rts, now, ranges=False, resolution=RESOLUTION)
        return [fc.workloads[k].start for k in pending]

    medians = starts(lambda k, lo, hi: math.sqrt(lo * hi))
    # The spread the forward run gives peers (runtime_estimate._spread_over_peers), with the true
    # distributions: per class, running and pending apart, each at the quantile of its rank.
    place: dict[WorkloadKey, float] = {}
    groups: dict[tuple[str, bool], list[WorkloadKey]] = {}
    for key in bounds:
        wl = snap.workloads[key]
        groups.setdefault((wl.meta.labels.get(CLASS_LABEL, ""), wl.has_quota_reservation), []).append(key)
    for keys in groups.values():
        keys.sort(key=lambda k: (zlib.crc32(f"{k[0]}/{k[1]}".encode()), k))
        place.update((k, (i + 0.5) / len(keys)) for i, k in enumerate(keys))
    spread = starts(lambda k, lo, hi: lo * (hi / lo) ** place[k])
    rng = random.Random(seed)
    runs = [starts(lambda k, lo, hi: lo * (hi / lo) ** rng.random()) for _ in range(draws)]
    drawn: dict[WorkloadKey, float | None] = {}
    for i, k in enumerate(pending):
        got = [r[i] for r in runs]
        placed = sorted(x for x in got if x is not None)
        drawn[k] = placed[len(got) // 2] if len(placed) > len(got) // 2 else None  # the median draw
    return {"knownMedians": dict(zip(pending, medians, strict=True)),
            "knownSpread": dict(zip(pending, spread, strict=True)), "knownDraws": drawn}


def long_lived_history(runs: Iterable[RunRecord], snap: ClusterSnapshot, seed: int = 3) -> RunHistory:
    """A long-lived cluster's history for a snapshot of a scenario: every run of the whole
    scenario but those of the workloads unfinished in the snapshot (their own runs are what is
    forecast), each moved to a random finish time keeping its length, then kept as the console
    keeps runs (the latest per key). Moved, as in a scenario the runs that end late are the
    long ones: a long-lived cluster's latest runs are no longer than the others."""
    unfinished = {w.uid for w in snap.workloads.values() if not w.is_finished}
    rng = random.Random(seed)
    out = RunHistory("sim:long-lived")
    for r in runs:
        if r.uid in unfinished:
            continue
        shift = rng.uniform(0.0, 1e6) - r.admitted_at
        out.add(dataclasses.replace(r, admitted_at=r.admitted_at + shift, finished_at=r.finished_at + shift,
                                    started_at=r.started_at + shift if r.started_at is not None else None))
    return out


def estimated_mode(name: str, instants: Sequence[float], ranges_everywhere: bool = False,
                   known_draws: int = 0, long_lived: bool = False) -> dict[str, Any]:
    parts = build(name)
    cluster = parts.cluster
    history = RunHistory(f"sim:{name}")
    follow_finishes(parts, history)
    every_run = RunHistory(f"sim:{name}", per_key=10**9, max_runs=10**9)  # for `longLivedHistory`, all kept
    if long_lived:
        follow_finishes(parts, every_run)  # else it stays empty and unread
    nodes_seen = follow_nodes(parts)
    taken: list[Instant] = []
    for at in sorted(instants):
        cluster.run_for(at - cluster.sim_time)
        now = cluster.clock.now()
        snap = snapshot_of(cluster.store, parts.kueue.config)
        pending = waiting_keys(snap)
        runtimes = estimate_runtimes(snap, history, now)
        # The expected run alone gives every start; the three-run call (earliest/latest too)
        # costs about three times as much, so it is timed and scored at one instant (the last,
        # the longest queue) unless asked for at each.
        fc, wall, cpu = timed(lambda: forecast(snap, runtimes, now, ranges=False, resolution=RESOLUTION))  # noqa: B023 (called at once)
        speed: dict[str, Any] = {"at": at, "pending": len(pending), "runsInHistory": len(history),
                                 "complete": fc.complete,
                                 "withoutRanges": {"wallSeconds": round(wall, 2), "cpuSeconds": round(cpu, 2)}}
        bands: dict[WorkloadKey, tuple[float | None, float | None]] = {}
        if ranges_everywhere or at == max(instants):
            fr, wall3, cpu3 = timed(lambda: forecast(snap, runtimes, now, ranges=True, resolution=RESOLUTION))  # noqa: B023
            speed["withRanges"] = {"wallSeconds": round(wall3, 2), "cpuSeconds": round(cpu3, 2)}
            bands = {k: (fr.workloads[k].earliest, fr.workloads[k].latest) for k in pending if k in fr.workloads}
            speed["consoleWorker"] = console_worker(cluster.store, now)
        seen = admissions_by_cluster_queue(parts.recorder.events, cluster.clock.start, now)
        positions = queue_positions(parts, now)
        predictions = {"forecast": _starts(fc, pending),
                       "meanInterval": mean_interval_eta(seen, positions, now),
                       "emaThroughput": ema_throughput_eta(seen, positions, now)}
        store = console_store(cluster.store)
        growth = store_pool_growth(store, autoscaler_read(cluster.store))
        if growth.placed:
            # What the console and `kueuetop forecast` do where the pools' growth is known (the
            # autoscaler's status; or none and no Karpenter node: fixed pools): pods placed on
            # the pools, runs measured from their pods' start.
            remembered = KnownPools("sim")  # the pools seen so far, those at zero now included
            remembered.learn_nodes(nodes_seen.values(), now)
            pools, placements = pools_from_store(store, growth.groups, now, known=remembered)
            on_pools = forecast(snap, estimate_runtimes(snap, history.from_pods(), now), now, ranges=False,
                                resolution=RESOLUTION, pools=pools, placements=placements,
                                checks=checks_from_store(store, snap))
            predictions[ON_POOLS] = _starts(on_pools, pending)
        known = known_distributions(snap, now, known_draws) if known_draws else None
        if known is not None:
            predictions.update(known)
        taken.append(Instant(at, now, len(parts.recorder.events), pending, predictions, bands, speed,
                             snap if long_lived else None))
    cluster.run_for(IDLE, until_idle=True)
    for it in taken:
        if it.snap is not None:
            # What a long-lived cluster's history would give at the same instant (after the run:
            # it holds every run of the scenario).
            mature = long_lived_history(every_run.records(), it.snap)
            fc = forecast(it.snap, estimate_runtimes(it.snap, mature, it.now), it.now, ranges=False,
                          resolution=RESOLUTION)
            it.predictions[LONG_LIVED] = _starts(fc, it.pending)
            it.snap = None
    pooled: dict[str, list[float]] = {}
    common: dict[str, list[float]] = {}
    per_instant = []
    for it in taken:
        actual = admissions(parts.recorder.events, cluster.clock.start, it.mark)
        admitted = [k for k in it.pending if k in actual]
        row: dict[str, Any] = {"at": it.at, "pending": len(it.pending), "admittedWithinRun": len(admitted)}
        for method, pred in it.predictions.items():
            errs = [pred[k] - actual[k] for k in admitted if pred.get(k) is not None]
            pooled.setdefault(method, []).extend(errs)
            row[method] = {"coverage": len(errs), **error_stats(errs)}
        # The workloads the forecast and both baselines answer (the forecast on pools, where the
        # cluster has an autoscaler's status, is scored on those it answers among them).
        both = [k for k in admitted if all(it.predictions[m].get(k) is not None for m in ("forecast", *BASELINES))]
        for method, pred in it.predictions.items():
            common.setdefault(method, []).extend(
                pred[k] - actual[k] for k in both if pred.get(k) is not None)  # type: ignore[operator]
        if it.ranges:
            inside = [k for k in admitted if k in it.ranges and it.ranges[k][0] is not None
                      and it.ranges[k][0] - 1 < actual[k] < it.ranges[k][1] + 1]  # type: ignore[operator]
            row["actualWithinEarliestLatest"] = len(inside)
        per_instant.append(row)
    summary = {m: {"coverage": len(e), **error_stats(e)} for m, e in pooled.items()}
    on_common = {m: error_stats(e) for m, e in common.items()}
    goal = {m: _goal(on_common, m) for m in FORECASTS if m in on_common}
    return {"instants": per_instant, "pooled": summary, "onCommonWorkloads": on_common,
            "goal": goal, "speed": [it.speed for it in taken],
            "simulatorErrors": list(cluster.errors)[:5]}


def console_store(objects: ObjectStore) -> Store:
    """A console's store holding what its informers would list from the simulated cluster."""
    return store_of(_console_raws(objects))


def _console_raws(objects: ObjectStore) -> dict[str, list[dict]]:
    """The raw objects a console's informers would list, per store kind."""
    return {kind: objects.list(group, plural, copy=False)[0] for group, plural, kind in CONSOLE_KINDS}


def autoscaler_read(objects: ObjectStore) -> AutoscalerRead:
    """cluster-autoscaler's status as the console reads it (its ConfigMap), absent when the
    cluster has none (no autoscaled pool)."""
    cm = objects.try_get("", "configmaps", STATUS_NAMESPACE, STATUS_NAME, copy=False)
    if cm is None:
        return AutoscalerRead(None, f"no configmap {STATUS_NAMESPACE}/{STATUS_NAME}", absent=True)
    return AutoscalerRead(parse_autoscaler_status((cm.get("data") or {}).get(STATUS_KEY, "")))


def console_worker(objects: ObjectStore, now: float, samples: int = CONSOLE_SAMPLES) -> dict[str, Any]:
    """The console's forecast worker timed in a process of its own that holds only what a console
    holds: the objects its informers would list, parsed into its store (`_console_worker.py`).
    This process holds the whole simulator; a forecast child forked from it would be timed
    copying that."""
    with tempfile.NamedTemporaryFile(suffix=".pickle") as f:
        pickle.dump((_console_raws(objects), autoscaler_read(objects), now, samples), f, protocol=pickle.HIGHEST_PROTOCOL)
        f.flush()
        done = subprocess.run([sys.executable, str(Path(__file__).with_name("_console_worker.py")), f.name],
                              capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the console worker's process failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)


def _goal(stats: Mapping[str, Mapping[str, Any]], method: str = "forecast") -> dict[str, Any]:
    """The forecast's median error at most half of the better baseline's (on the workloads every
    method answered for)."""
    fc = stats.get(method, {}).get("medianAbs")
    base = [s.get("medianAbs") for m, s in stats.items() if m in BASELINES and s.get("medianAbs") is not None]
    if fc is None or not base:
        return {"holds": None, "why": "no workload answered by every method"}
    best = min(base)
    return {"holds": fc <= 0.5 * best, "forecastMedianAbs": fc, "betterBaselineMedianAbs": best}


# ----------------------------------------------------------------------------------- speed only
def speed_mode(name: str, instants: Sequence[float]) -> dict[str, Any]:
    """Speed alone, for scenarios whose run to idle is too long to score (`xl`): at each instant,
    the forecast from history estimates in-process (expected starts; with ranges) and on the
    console's worker. No reference run, no accuracy."""
    parts = build(name)
    cluster = parts.cluster
    history = RunHistory(f"sim:{name}")
    follow_finishes(parts, history)
    out = []
    for at in sorted(instants):
        wall = time.perf_counter()
        cluster.run_for(at - cluster.sim_time)
        ran = time.perf_counter() - wall
        now = cluster.clock.now()
        snap = snapshot_of(cluster.store, parts.kueue.config)
        runtimes = estimate_runtimes(snap, history, now)
        with console_heap(lambda: len(snap.workloads)):  # noqa: B023
            fc, wall1, cpu1 = timed(lambda: forecast(snap, runtimes, now, ranges=False, resolution=RESOLUTION))  # noqa: B023
            _, wall3, cpu3 = timed(lambda: forecast(snap, runtimes, now, ranges=True, resolution=RESOLUTION))  # noqa: B023
            ungridded, wall0, cpu0 = timed(lambda: forecast(snap, runtimes, now, ranges=False))  # noqa: B023
        moved = [abs(fc.workloads[k].start - w.start) for k, w in ungridded.workloads.items()  # type: ignore[operator]
                 if w.start is not None and fc.workloads[k].start is not None]
        out.append({"at": at, "simulatedWallSeconds": round(ran, 1), "workloads": len(snap.workloads),
                    "pending": len(pending_keys(snap)), "runsInHistory": len(history), "complete": fc.complete,
                    "withoutRanges": {"wallSeconds": round(wall1, 2), "cpuSeconds": round(cpu1, 2)},
                    "withRanges": {"wallSeconds": round(wall3, 2), "cpuSeconds": round(cpu3, 2)},
                    "withoutGrid": {"wallSeconds": round(wall0, 2), "cpuSeconds": round(cpu0, 2),
                                    "complete": ungridded.complete,
                                    "startMovedByGrid": error_stats(moved) if moved else None},
                    "consoleWorker": console_worker(cluster.store, now)})
    return {"scenario": name, "speed": out}


# ----------------------------------------------------------------------------------- driver
def reference(name: str) -> tuple[list[SimEvent], float, float]:
    """A run with the scenario's arrivals, to idle: its events and how long it took (s)."""
    parts = build(name)
    wall = time.perf_counter()
    parts.cluster.run_for(IDLE, until_idle=True)
    return list(parts.recorder.events), parts.cluster.sim_time, time.perf_counter() - wall


def run(name: str, n_instants: int, at: Sequence[float] | None, ranges_everywhere: bool = False,
        known_draws: int = 0, long_lived: bool = False) -> dict[str, Any]:
    wall0, cpu0 = time.perf_counter(), time.process_time()
    events, sim_end, ref_wall = reference(name)
    instants = list(at) if at else busy_instants(events, n_instants)
    exact = [exact_mode(name, t) for t in instants]
    estimated = estimated_mode(name, instants, ranges_everywhere, known_draws, long_lived)
    return {
        "scenario": name,
        "instants": instants,
        "referenceRun": {"simulatedSeconds": round(sim_end, 1), "wallSeconds": round(ref_wall, 1),
                         "workloads": sum(1 for e in events if e.type == CREATED)},
        "exact": {"perInstant": exact, "podStartError": pod_start_error(exact),
                  "allWithinOneSecond": all(r["specRuntimes"]["differing"] == 0 for r in exact)},
        "estimated": estimated,
        "wallSeconds": round(time.perf_counter() - wall0, 1),
        "cpuSeconds": round(time.process_time() - cpu0, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", default=",".join(DEFAULT_SCENARIOS),
                    help="comma-separated built-in names or files (default: %(default)s; `large` is opt-in)")
    ap.add_argument("--instants", type=int, default=3, help="snapshot instants per scenario (default: 3)")
    ap.add_argument("--at", default="", help="comma-separated instants in seconds since the start, for every scenario")
    ap.add_argument("--ranges-everywhere", action="store_true",
                    help="also run the three-run forecast (earliest/latest) at every instant, not only the last")
    ap.add_argument("--speed-only", action="store_true",
                    help="only the forecast's speed at --at instants (no run to idle, no accuracy): for xl")
    ap.add_argument("--known-distributions", type=int, default=0, metavar="DRAWS",
                    help="scale scenarios: also forecast knowing each class's true runtime distribution "
                         "(medians, and the median of DRAWS drawn runs)")
    ap.add_argument("--long-lived-history", action="store_true",
                    help="also forecast with a long-lived cluster's history: every run of the scenario "
                         "but those being forecast, at random times")
    ap.add_argument("--out", default="", help="write the JSON document here instead of stdout")
    args = ap.parse_args(argv)
    at = [float(x) for x in args.at.split(",") if x.strip()] or None
    results = []
    for name in (s.strip() for s in args.scenarios.split(",") if s.strip()):
        print(f"forecast benchmark: {name} …", file=sys.stderr, flush=True)
        if args.speed_only:
            results.append(speed_mode(name, at or [900.0]))
        else:
            results.append(run(name, args.instants, at, args.ranges_everywhere, args.known_distributions,
                               args.long_lived_history))
    doc = {"labels": LABELS, "scenarios": results}
    text = json.dumps(doc, indent=2) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
