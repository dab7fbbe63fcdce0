"""The forecast's wording: a range rather than a false exact time, "never" with its reason, and the
detail line naming whom a workload waits for and what the runtimes rest on."""

from __future__ import annotations

from kueuetop.admission.forecast_result import Forecast, RuntimeEstimate, WorkloadForecast
from kueuetop.views.eta_text import eta_cell, eta_sentence, eta_sort

NOW = 1_000_000.0


def wf(start: float | None, lo: float | None = None, hi: float | None = None, **kw: object) -> WorkloadForecast:
    return WorkloadForecast(("team-a", "train-9"), "cq-a", start, lo, hi, **kw)  # type: ignore[arg-type]


def test_a_range_in_minutes_with_the_expected_time_first() -> None:
    assert eta_cell(wf(NOW + 14 * 60, NOW + 9 * 60, NOW + 22 * 60), NOW) == "~14m (9m–22m)"


def test_a_start_within_a_scheduling_instant_is_now_and_a_collapsed_range_has_no_brackets() -> None:
    assert eta_cell(wf(NOW + 2, NOW, NOW + 3), NOW) == "now"
    assert eta_cell(wf(NOW + 600, NOW + 610, NOW + 620), NOW) == "~10m"
    assert eta_cell(wf(NOW + 120, NOW + 1, NOW + 200), NOW) == "~2m (now–3m)"


def test_never_beyond_and_no_forecast() -> None:
    assert eta_cell(wf(None, never="no flavor fits: 16 GPUs > 8 nominal"), NOW) == "never"
    assert eta_cell(wf(None), NOW, complete=False) == "beyond"
    assert eta_cell(None, NOW) == "-"
    assert eta_sort(wf(None, never="x"), NOW) == float("inf")
    assert eta_sort(wf(NOW + 60), NOW) == 60.0
    assert eta_sort(None, NOW) is None


def test_the_detail_line_names_whom_it_waits_for_and_the_basis_of_their_runtimes() -> None:
    after = (("team-a", "train-3"), ("team-b", "eval-1"))
    f = Forecast(at=NOW - 8, horizon=NOW + 86400, workloads={},
                 runtimes={after[0]: RuntimeEstimate(1800, 1200, 2400, "12 finished runs of this shape in team-a/lq-a"),
                           after[1]: RuntimeEstimate(600, 300, 900, "default 1h: nothing known")})
    line = eta_sentence(wf(NOW + 14 * 60, NOW + 9 * 60, NOW + 22 * 60, after=after), f, NOW)
    assert line.startswith("expected to start in ~14m (9m–22m) when team-a/train-3 and team-b/eval-1 finish")
    assert "basis: 12 finished runs of this shape in team-a/lq-a; default 1h: nothing known" in line
    assert line.endswith("forecast 8s old")
    assert eta_sentence(wf(None, never="ClusterQueue cq-a is stopped"), f, NOW).startswith(
        "never starts as the cluster stands: ClusterQueue cq-a is stopped")
    assert eta_sentence(None, None, NOW) == "no forecast yet"


def test_the_detail_line_tells_a_wait_for_nodes_only_when_the_pools_were_modelled() -> None:
    placed = Forecast(at=NOW, horizon=NOW + 86400, workloads={}, pods_placed=True)
    waits = wf(NOW + 600, NOW + 600, NOW + 600, pods_start=NOW + 600 + 180)
    assert "; its pods wait 3m more for nodes" in eta_sentence(waits, placed, NOW)
    assert "wait" not in eta_sentence(wf(NOW + 600, pods_start=NOW + 610), placed, NOW)  # 10 s: not worth a word
    unplaced = Forecast(at=NOW, horizon=NOW + 86400, workloads={})
    assert "wait" not in eta_sentence(waits, unplaced, NOW)


def test_the_detail_line_ends_with_what_the_forecast_knew_of_the_pools() -> None:
    why = "pods run when admitted (node pools not modelled: autoscaler limits: forbidden to get configmap x/y)"
    fc = Forecast(at=NOW - 8, horizon=NOW + 86400, workloads={}, pods_note=why)
    line = eta_sentence(wf(NOW + 600, NOW + 300, NOW + 900), fc, NOW)
    assert line.endswith(f"; forecast 8s old; {why}")
    assert eta_sentence(wf(NOW + 600), Forecast(at=NOW, horizon=NOW + 86400, workloads={}), NOW).endswith("old")
