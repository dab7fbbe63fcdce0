"""The two naive ETAs the forecast is measured against (benchmarks/forecast.py), on the same data.

Both read only what a user can see at time T: when each ClusterQueue admitted workloads before T,
and each pending workload's position in its ClusterQueue at T (0-based, as Kueue's visibility API
`positionInClusterQueue`). A workload at position p waits for the p ahead of it and then its own
turn: p + 1 admissions. Both answer, per pending workload, a predicted admission time (epoch
seconds), or None when the queue's past says nothing (too few admissions observed).

(a) `mean_interval_eta`: position × the mean interval between admissions observed, the way users
    estimate today ("the ClusterQueue admits 10 jobs an hour and I am 5th: about 30 minutes",
    kubernetes-sigs/kueue#1300, KEP-168-2 pending workloads visibility, story 1 and its review).
(b) `ema_throughput_eta`: position ÷ an exponential moving average of the ClusterQueue's admission
    throughput, as proposed upstream for a wait-time estimate (kubernetes-sigs/kueue#13159,
    "Workload wait time estimation": an in-memory EMA following the half-life decay of Admission
    Fair Sharing). Throughput is sampled per `sampling_interval` (admissions in the interval ÷
    its length) and folded with Kueue's AFS decay rate α = 1 − 0.5^(interval / half-life)
    (pkg/util/admissionfairsharing calculateAlphaRate): ema ← α·rate + (1 − α)·ema, starting at
    the first interval's rate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from kueuetop.admission.forecast_result import WorkloadKey
from kueuetop.kueue.workload import Workload

Positions = Mapping[WorkloadKey, tuple[str, int]]  # workload → (ClusterQueue, 0-based position)


def _before(times: Sequence[float], at: float, window: float | None) -> list[float]:
    since = -math.inf if window is None else at - window
    return sorted(t for t in times if since <= t < at)


def mean_interval(times: Sequence[float], at: float, window: float | None = None) -> float | None:
    """Mean seconds between the admissions observed before `at` (within `window` seconds of it);
    None with fewer than two."""
    ts = _before(times, at, window)
    if len(ts) < 2 or ts[-1] <= ts[0]:
        return None
    return (ts[-1] - ts[0]) / (len(ts) - 1)


def mean_interval_eta(admissions: Mapping[str, Sequence[float]], positions: Positions, at: float, *,
                      window: float | None = None) -> dict[WorkloadKey, float | None]:
    """Baseline (a): T + (position + 1) × mean admission interval of the workload's ClusterQueue."""
    per_cq = {cq: mean_interval(ts, at, window) for cq, ts in admissions.items()}
    out: dict[WorkloadKey, float | None] = {}
    for key, (cq, pos) in positions.items():
        gap = per_cq.get(cq)
        out[key] = None if gap is None else at + (max(0, pos) + 1) * gap
    return out


def afs_alpha(sampling_interval: float, half_life: float) -> float:
    """Kueue's calculateAlphaRate: the weight of the newest sample (0 when the half-life is 0)."""
    if half_life <= 0:
        return 0.0
    return 1.0 - 0.5 ** (sampling_interval / half_life)


def ema_throughput(times: Sequence[float], at: float, *, sampling_interval: float = 60.0,
                   half_life: float = 600.0, window: float | None = None) -> float | None:
    """Admissions per second, as an EMA over intervals of `sampling_interval` seconds ending at
    `at` (the first one holding the first admission observed); None when none was observed."""
    ts = _before(times, at, window)
    if not ts or sampling_interval <= 0:
        return None
    n_bins = max(1, math.ceil((at - ts[0]) / sampling_interval))
    first = at - n_bins * sampling_interval
    counts = [0] * n_bins
    for t in ts:
        counts[min(n_bins - 1, int((t - first) // sampling_interval))] += 1
    alpha = afs_alpha(sampling_interval, half_life)
    ema = counts[0] / sampling_interval
    for c in counts[1:]:
        ema = alpha * (c / sampling_interval) + (1 - alpha) * ema
    return ema


def ema_throughput_eta(admissions: Mapping[str, Sequence[float]], positions: Positions, at: float, *,
                       sampling_interval: float = 60.0, half_life: float = 600.0,
                       window: float | None = None) -> dict[WorkloadKey, float | None]:
    """Baseline (b): T + (position + 1) ÷ EMA of the ClusterQueue's admission throughput."""
    per_cq = {cq: ema_throughput(ts, at, sampling_interval=sampling_interval, half_life=half_life,
                                 window=window) for cq, ts in admissions.items()}
    out: dict[WorkloadKey, float | None] = {}
    for key, (cq, pos) in positions.items():
        rate = per_cq.get(cq)
        out[key] = at + (max(0, pos) + 1) / rate if rate else None
    return out


def observed_admissions(workloads: Iterable[Workload]) -> dict[str, list[float]]:
    """Admission times per ClusterQueue as the Workloads show them: the QuotaReserved transition
    (the scheduler's decision; Admitted when it has none) of each workload holding or having held
    an admission. Only a workload's latest admission is visible on the object."""
    out: dict[str, list[float]] = {}
    for wl in workloads:
        if wl.admission is None:
            continue
        for type_ in ("QuotaReserved", "Admitted"):
            c = wl.condition(type_)
            if c is not None and c.is_true and c.last_transition is not None:
                out.setdefault(wl.admission.cluster_queue, []).append(c.last_transition)
                break
    for ts in out.values():
        ts.sort()
    return out
