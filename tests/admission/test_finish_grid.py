"""Estimated finishes rounded to a grid: the step near the start and further out, short runs kept
long enough, and what it buys a forward run (fewer instants) and costs it (starts a step away)."""

from __future__ import annotations

import math

import pytest

from kueuetop.admission.finish_grid import MIN_STEP, RESOLUTION, finish_grid, step_for
from kueuetop.admission.forecast import forecast
from kueuetop.admission.forecast_result import RuntimeEstimate
from tests.builders import (
    T0,
    admit,
    cluster_queue,
    flavor,
    fq,
    group,
    local_queue,
    namespace,
    snapshot,
    workload,
)

NS = "team-a"
GPU = "nvidia.com/gpu"


def test_the_step_is_the_base_near_the_start_and_doubles_further_out() -> None:
    assert step_for(60, 3600) == RESOLUTION
    assert step_for(1_500, 3600) == RESOLUTION  # 2 % of 1,500 s is 30 s
    assert step_for(3_000, 7200) == 2 * RESOLUTION
    assert step_for(20 * 3600, 86_400) == 960  # 2 % of 20 h is 1,440 s: 30 s doubled while under it
    # A coarser step's points are the finer one's: each step is the base times a power of two.
    for d in (10, 900, 5_000, 50_000, 500_000):
        ratio = step_for(d, 10 ** 6) / RESOLUTION
        assert ratio == 2 ** round(math.log2(ratio))


def test_a_short_run_gets_a_finer_step_and_a_very_short_one_none() -> None:
    assert step_for(3_000, 120) == 7.5  # 10 % of 120 s is 12 s: 30 halved twice
    assert step_for(3_000, 5) == 0.0  # 0.5 s: under MIN_STEP, the finish is kept as it is
    assert step_for(3_000, 10 * MIN_STEP) == MIN_STEP * RESOLUTION / 32  # 30 s halved down to within 1 s


def test_finishes_round_to_the_nearest_point_and_never_shorten_a_run_much() -> None:
    grid = finish_grid(T0)
    assert grid(T0, 3600) == T0 + 3600  # on the grid already
    assert grid(T0 + 7, 3600) == T0 + 3600  # 3,607 s on, 60-s step: down to 3,600
    assert grid(T0 + 31, 3600) == T0 + 3660  # 3,631: up to 3,660
    assert grid(T0 - 100, 50) == T0 - 50  # a finish before the start is left alone
    for since in (T0 - 50, T0, T0 + 13, T0 + 999):
        for runtime in (2.0, 30.0, 95.0, 600.0, 7_321.0, 40_000.0):
            end = grid(since, runtime)
            assert end - since >= 0.95 * runtime  # a run keeps 95 % of its length at least
            assert abs(end - (since + runtime)) <= step_for(since + runtime - T0, runtime) / 2 + 1e-6
    # Finishes a few seconds apart become one.
    assert len({grid(T0 + s, 3600) for s in (-9, -3, 0, 4, 11)}) == 1


def test_a_base_step_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        finish_grid(T0, 0)


def _queue_of_short_runs() -> tuple:
    """8 GPUs: eight 1-GPU workloads run, each finishing 2 s after the one before; twelve
    1-GPU workloads queue behind them, each with a slightly different runtime."""
    objs: list[dict] = [flavor("l4"), namespace(NS), cluster_queue("cq", group(GPU, fq("l4", **{GPU: 8}))),
                        local_queue(NS, "lq", "cq")]
    runtimes = {}
    for i in range(8):
        objs.append(admit(workload(NS, f"r{i}", "lq", {GPU: "1"}, created=T0 - 60), "cq", {GPU: "l4"}, at=T0))
        runtimes[(NS, f"r{i}")] = 1_800.0 + 2 * i
    for i in range(12):
        objs.append(workload(NS, f"w{i:02d}", "lq", {GPU: "1"}, created=T0 + i))
        runtimes[(NS, f"w{i:02d}")] = 1_200.0 + 7 * i
    return snapshot(*objs), {k: RuntimeEstimate(v, v, v, "test") for k, v in runtimes.items()}


def test_a_grid_makes_close_finishes_one_instant_and_moves_starts_by_a_step_at_most() -> None:
    snap, runtimes = _queue_of_short_runs()
    now = T0 + 60
    rounds = {"exact": 0, "grid": 0}

    def counter(name: str):
        def pause() -> None:
            rounds[name] += 1
        return pause

    exact = forecast(snap, runtimes, now, ranges=False, pause=counter("exact"))
    gridded = forecast(snap, runtimes, now, ranges=False, pause=counter("grid"), resolution=RESOLUTION)
    assert rounds["grid"] <= rounds["exact"] // 2  # the eight finishes 2 s apart are one instant, and so on
    starts = {k: w.start for k, w in exact.workloads.items()}
    assert all(s is not None for s in starts.values()) and len(starts) == 12
    for key, wf in gridded.workloads.items():
        # Each start follows one or two finishes, each moved by half a step (30-60 s here) at most.
        assert wf.start is not None and abs(wf.start - starts[key]) <= 60
    # Exactly: the first eight start at the eight finishes, 2 s apart; on the grid, at one instant.
    first = sorted(starts.values())[:8]
    assert len(set(first)) == 8
    assert len({gridded.workloads[k].start for k, s in starts.items() if s in first}) == 1
