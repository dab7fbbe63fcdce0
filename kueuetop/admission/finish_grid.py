"""The grid estimated finishes are rounded to, so that finishes close in time are one instant.

A forecast from estimated runtimes cannot tell a finish at 14:03:07 from one at 14:03:21: the
estimate's own spread is minutes to hours. Yet each distinct finish costs the forward run an
instant, and at each one Kueue requeues the cohort's inadmissible heads and retries them
(pkg/cache/queue manager.go QueueAssociatedInadmissibleWorkloadsAfter). Rounding every estimated
finish to the nearest point of a grid makes finishes a few seconds apart one instant, which on
`large` cuts the forward run's cycles about sixteen-fold; Slurm's backfill does the same with its
`bf_resolution`. The grid's step is `base` seconds near `start` and doubles as the distance
grows, staying under `share` of it: a finish estimated hours away is rounded to minutes.

Exact runtimes (the simulator's own, the forecast's exactness test) are never rounded.
"""

from __future__ import annotations

import math
from collections.abc import Callable

RESOLUTION = 30.0  # seconds: the step near the forecast's start, for estimated runtimes
SHARE = 0.02  # the step stays within this share of the distance from the start…
RUNTIME_SHARE = 0.1  # …and of the runtime, so a short job's run keeps 95 % of its length at least
MIN_STEP = 1.0  # finer than this and nothing is worth merging: the finish is kept as it is


def step_for(distance: float, runtime: float, base: float = RESOLUTION, share: float = SHARE) -> float:
    """The grid's step for a finish `distance` seconds after the start, of a run of `runtime`
    seconds: `base` halved or doubled (powers of two, so a coarser step's points are also the
    finer ones') to the largest within both shares, up from `base` only as the distance grows.
    0.0 when that is under MIN_STEP: the finish is not rounded."""
    limit = min(max(base, distance * share), runtime * RUNTIME_SHARE)
    if limit < MIN_STEP:
        return 0.0
    step = base
    while step > limit:
        step /= 2
    while step * 2 <= limit:
        step *= 2
    return step


def finish_grid(start: float, base: float = RESOLUTION, share: float = SHARE) -> Callable[[float, float], float]:
    """A function of (run start, runtime) giving the finish rounded to the nearest grid point
    (ties up). A finish at or before `start`, or of a run too short for a step, is kept."""
    if base <= 0:
        raise ValueError(f"grid step must be positive, got {base}")

    def finish(since: float, runtime: float) -> float:
        t = since + runtime
        d = t - start
        step = step_for(d, runtime, base, share) if d > 0 else 0.0
        if not step:
            return t
        return start + math.floor(d / step + 0.5) * step

    return finish
