"""The expected forward run spreads peers over their runtime distribution
(runtime_estimate._spread_over_peers): workloads of one history tier that in truth finish one
after the other do not all finish at once, at their median."""

from __future__ import annotations

import statistics

from kueuetop.admission.forecast import forecast
from kueuetop.admission.runtime_estimate import PAST_DATA_PLACES, _quantile, estimate_runtimes, km_quantiles
from tests.admission.test_runtime_estimate import NOW, history_with, running, wl_dict
from tests.builders import cluster_queue, flavor, fq, group, local_queue, namespace, snapshot

RUNS = [100.0 * (i + 1) for i in range(10)]  # finished runs of the shape: 100 s … 1,000 s


def _snap(*workloads: dict, gpus: int = 64):
    return snapshot(namespace("team-a"), flavor("a100"), cluster_queue("cq-a", group(["nvidia.com/gpu"], fq("a100", **{"nvidia.com/gpu": gpus}))),
                    local_queue("team-a", "lq-a", "cq-a"), *workloads)


def test_pending_peers_take_evenly_spaced_quantiles_and_keep_their_expected_value() -> None:
    snap = _snap(*(wl_dict(f"p{i}") for i in range(10)))
    out = estimate_runtimes(snap, history_with(RUNS), NOW)
    assert {e.expected for e in out.values()} == {550.0}  # what the user is told is unchanged
    forward = sorted(e.forward for e in out.values())
    assert forward == [_quantile(RUNS, (k + 0.5) / 10) for k in range(10)]
    assert statistics.median(forward) == 550.0
    # Deterministic: the same places in a second call (and in another process: no hash seed).
    again = estimate_runtimes(snap, history_with(RUNS), NOW)
    assert {k: e.forward for k, e in again.items()} == {k: e.forward for k, e in out.items()}
    # The places are not the queue's order: the first five by name are not the five shortest.
    by_name = [out[("team-a", f"p{i}")].forward for i in range(10)]
    assert by_name != sorted(by_name)


def test_a_workload_without_peers_runs_its_median() -> None:
    out = estimate_runtimes(_snap(wl_dict("alone")), history_with(RUNS), NOW)[("team-a", "alone")]
    assert out.in_run is None and out.forward == out.expected == 550.0


def test_running_peers_are_spread_over_what_is_left_of_their_runs() -> None:
    snap = _snap(*(running(250.0, name=f"r{i}") for i in range(8)))
    out = estimate_runtimes(snap, history_with(RUNS), NOW)
    left = [r for r in RUNS if r > 250.0]  # the runs longer than the 250 s they have run
    forward = sorted(e.forward for e in out.values())
    assert forward == [_quantile(left, (k + 0.5) / 8) for k in range(8)]
    assert min(forward) > 250.0


def test_a_bound_caps_the_spread_runtime() -> None:
    snap = _snap(*(wl_dict(f"p{i}", max_exec=300) for i in range(6)))
    out = estimate_runtimes(snap, history_with(RUNS), NOW)
    assert max(e.forward for e in out.values()) == 300.0
    assert all(e.forward <= e.pessimistic for e in out.values())


def test_the_first_of_several_runs_to_finish_lets_a_waiting_workload_in_before_their_median() -> None:
    # Four 8-GPU runs just admitted fill the 32 GPUs; one more waits. With every runtime at the
    # median (550 s) all four would end together and it would start 550 s from now; spread over
    # the distribution, the first ends at its 1/8 quantile.
    snap = _snap(*(running(0.0, name=f"r{i}") for i in range(4)), wl_dict("waits"), gpus=32)
    runtimes = estimate_runtimes(snap, history_with(RUNS), NOW)
    first_end = min(runtimes[("team-a", f"r{i}")].forward for i in range(4))
    assert first_end == _quantile(RUNS, 0.125) < 550.0
    fc = forecast(snap, runtimes, NOW, ranges=False)
    assert fc.workloads[("team-a", "waits")].start == NOW + first_end


def test_with_runs_still_going_the_places_follow_kaplan_meier_and_past_the_data_the_far_end() -> None:
    # Three runs still going after 5,000 s, longer than every finished one: Kaplan–Meier reaches
    # 10/13 of the distribution at 1,000 s and no further; the places past that take the
    # estimate's pessimistic end.
    snap = _snap(*(wl_dict(f"p{i}") for i in range(10)), *(running(5000.0, name=f"r{i}") for i in range(3)))
    out = estimate_runtimes(snap, history_with(RUNS), NOW)
    pending = [out[("team-a", f"p{i}")] for i in range(10)]
    going = [5000.0] * 3
    wanted = sorted(km_quantiles(RUNS, going, [(k + 0.5) / 10])[0] or pending[0].pessimistic for k in range(10))
    assert sorted(e.forward for e in pending) == wanted
    assert wanted[-1] == pending[0].pessimistic > 1000.0 and wanted[0] == 100.0


def _gott(longest: float, rank: int, n: int) -> float:
    """Gott's total L/(1−q) at the middle of the place (of PAST_DATA_PLACES) where the peer of
    this rank among n falls."""
    place = int((rank + 0.5) / n * PAST_DATA_PLACES)
    return longest / (1 - (place + 0.5) / PAST_DATA_PLACES)


def test_running_peers_past_the_data_are_spread_over_gotts_distribution_in_places() -> None:
    # 2 finished runs, 20 still going past them (1,000 s to 2,900 s): Kaplan–Meier stops short
    # of the median. Each running one is placed on Gott's distribution past the longest run so
    # far (L = 2,900 s), L/(1−q), `past_the_data`'s (2·L at the median), q at the middle of
    # its place — not all twenty at twice the longest, nor about to end.
    snap = _snap(*(running(1000.0 + 100 * i, name=f"r{i}") for i in range(20)))
    out = estimate_runtimes(snap, history_with([300.0, 400.0]), NOW)
    forward = sorted(e.forward for e in out.values())
    assert forward == sorted(_gott(2900.0, k, 20) for k in range(20))
    assert len(set(forward)) == PAST_DATA_PLACES  # a few instants, not one per peer
    assert forward[0] < 5800.0 < forward[-1]
    assert {e.expected for e in out.values()} == {5800.0}  # what the user is told: twice the longest


def test_pending_peers_none_of_whose_runs_has_finished_are_spread_past_the_longest() -> None:
    # Ten runs of the shape still going (500 s to 590 s), none finished: ten pending ones of it
    # are spread over Gott's distribution past the longest, 590 s.
    snap = _snap(*(wl_dict(f"p{i}") for i in range(10)), *(running(500.0 + 10 * i, name=f"r{i}") for i in range(10)))
    out = estimate_runtimes(snap, history_with([100.0], gpus=1), NOW)
    pending = [out[("team-a", f"p{i}")] for i in range(10)]
    assert "none of 10 runs" in pending[0].basis
    assert sorted(e.forward for e in pending) == sorted(_gott(590.0, k, 10) for k in range(10))
    assert {e.expected for e in pending} == {1180.0}
