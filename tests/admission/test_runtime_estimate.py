"""Runtime estimates: basis text, fallback order, bounds, bad input, conditioning on elapsed time."""

from __future__ import annotations

from typing import Any

import pytest

from kueuetop.admission.forecast_result import RuntimeEstimate
from kueuetop.admission.runtime_estimate import (
    EstimateRules,
    JobLimits,
    _history_tier,
    estimate_runtime,
    estimate_runtimes,
    km_quantiles,
    owner_job,
    spread,
)
from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.workload import Workload
from kueuetop.store.run_history import RunHistory, RunRecord, shape_key
from tests.builders import T0, admit, cluster_queue, condition, fq, group, local_queue, snapshot, workload

NOW = T0 + 10_000


def wl_dict(name: str = "w", *, gpus: int = 8, lq: str = "lq-a", max_exec: int | None = None,
            accumulated: int = 0, job: str | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    d = workload("team-a", name, lq, requests={"nvidia.com/gpu": gpus})
    if max_exec is not None:
        d["spec"]["maximumExecutionTimeSeconds"] = max_exec
    if accumulated:
        d["status"]["accumulatedPastExecutionTimeSeconds"] = accumulated
    if job is not None:
        d["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": job,
                                             "uid": f"uid-job-{job}", "controller": True}]
    if labels:
        d["metadata"]["labels"] = labels
    return d


def parsed(d: dict[str, Any]) -> Workload:
    wl = parse_object(d)
    assert isinstance(wl, Workload)
    return wl


def history_with(runtimes: list[float], *, gpus: int = 8, lq: str = "lq-a", cq: str = "cq-a",
                 history: RunHistory | None = None, tag: str = "") -> RunHistory:
    h = history or RunHistory("test")
    shape = shape_key(parsed(wl_dict(gpus=gpus)).pod_sets)
    for i, rt in enumerate(runtimes):
        h.add(RunRecord(f"u{tag}{lq}{gpus}-{i}", "team-a", lq, cq, shape, T0 + i, T0 + i + rt))
    return h


def est(d: dict[str, Any], history: RunHistory | None = None, **kw: Any) -> RuntimeEstimate:
    return estimate_runtime(parsed(d), cluster_queue="cq-a", history=history, **kw)


# ---------------------------------------------------------------------------------------- fallback order
def test_nothing_known_gives_the_stated_default() -> None:
    e = est(wl_dict())
    assert (e.optimistic, e.expected, e.pessimistic) == (900, 3600, 14400)
    assert e.basis == "default 1h: nothing known"
    assert e.upper_bound is None and e.note == ""


def test_the_default_is_configurable() -> None:
    e = est(wl_dict(), rules=EstimateRules(default_runtime=600))
    assert e.expected == 600 and e.basis == "default 10m: nothing known"


def test_same_shape_in_the_local_queue_comes_first() -> None:
    h = history_with([float(600 + 60 * i) for i in range(12)])  # 600..1260
    history_with([99_999.0] * 20, gpus=1, history=h)  # other shape, same queue: not counted
    e = est(wl_dict(), h)
    assert e.basis == "12 finished runs of this shape in team-a/lq-a"
    assert e.expected == pytest.approx(930)
    assert e.optimistic < 930 < e.pessimistic


def test_too_few_runs_of_the_shape_fall_back_to_the_cluster_queue() -> None:
    h = history_with([100.0, 110.0])  # 2 < min_samples
    history_with([2000.0] * 8, gpus=1, lq="lq-b", history=h)
    e = est(wl_dict(), h)
    assert e.basis == "10 finished runs in ClusterQueue cq-a (any shape)"
    assert e.expected == 2000


def test_few_runs_of_the_shape_are_still_better_than_nothing() -> None:
    h = history_with([100.0, 120.0])  # the ClusterQueue knows no more than these two
    e = est(wl_dict(), h)
    assert e.basis == "2 finished runs of this shape in team-a/lq-a"
    assert e.expected == 110


def test_runs_of_another_cluster_queue_count_only_when_this_queue_has_none() -> None:
    # A queue whose first jobs still run: the cluster's recent runs say what jobs here take,
    # rather than the default, which knows nothing of this cluster.
    h = history_with([100.0, 200.0, 300.0, 400.0, 500.0], cq="cq-other", lq="lq-other", gpus=1)  # another shape
    e = est(wl_dict(), h)
    assert e.basis == "5 finished runs in this cluster (any queue; none in this one yet)"
    assert e.expected == 300
    # One run of its own (too few for the rule of three) still beats the rest of the cluster.
    history_with([1000.0], history=h)
    e = est(wl_dict(), h)
    assert e.basis == "1 finished run of this shape in team-a/lq-a" and e.expected == 1000
    # And estimate_runtimes (one read per snapshot) says the same.
    snap = snapshot(cluster_queue("cq-a", group(["nvidia.com/gpu"], fq("a100", **{"nvidia.com/gpu": 8}))),
                    local_queue("team-a", "lq-a", "cq-a"), wl_dict("p"))
    assert estimate_runtimes(snap, history_with([100.0, 200.0, 300.0], cq="cq-other", lq="lq-other", gpus=1), NOW)[
        ("team-a", "p")].basis == "3 finished runs in this cluster (any queue; none in this one yet)"


def test_runs_of_this_shape_in_other_queues_come_before_other_shapes_in_its_own() -> None:
    # Its ClusterQueue runs short data preparation; 8-GPU runs elsewhere take hours: what a job
    # of these pods takes elsewhere is the better guess.
    h = history_with([60.0, 90.0, 120.0, 150.0], gpus=1)  # its own queue, another shape
    history_with([7000.0, 8000.0, 9000.0], cq="cq-other", lq="lq-other", history=h)
    e = est(wl_dict(), h)
    assert e.basis == "3 finished runs of this shape in the cluster (any queue)" and e.expected == 8000
    # Three of its own shape in its own LocalQueue still come first.
    history_with([100.0, 200.0, 300.0], history=h, tag="own")
    assert est(wl_dict(), h).basis == "3 finished runs of this shape in team-a/lq-a"


def test_a_shape_none_of_whose_runs_has_finished_takes_twice_the_longest_so_far() -> None:
    # Early in a cluster's life: three 8-GPU runs going for 40-50 minutes, none finished; the
    # queue's finished runs are 2-minute jobs of another shape. The runs still going say more.
    snap = snapshot(*_queue(3000, 2800, 2400))
    h = history_with([100.0, 120.0, 140.0], gpus=1)
    est_p = estimate_runtimes(snap, h, NOW)[("team-a", "pend")]
    assert (est_p.optimistic, est_p.expected, est_p.pessimistic) == (3000, 6000, 30000)
    assert est_p.basis == "none of 3 runs of this shape in team-a/lq-a has finished yet; the longest has run 50m: " \
                          "twice that expected"
    # The longest running one itself is past what is known: twice its own time so far.
    r0 = estimate_runtimes(snap, h, NOW)[("team-a", "run-0")]
    assert (r0.optimistic, r0.expected, r0.pessimistic) == (3000, 6000, 30000)
    assert r0.basis == "already ran 50m, the longest of runs of this shape in team-a/lq-a, none finished: twice that expected"
    # One that has run less is taken to be halfway when the longest is.
    r2 = estimate_runtimes(snap, h, NOW)[("team-a", "run-2")]
    assert r2.expected == 6000


def test_spread_widens_when_runs_are_few() -> None:
    assert spread([1000.0]) == (500.0, 1000.0, 1500.0)  # one run: ±50 %
    low, mid, high = spread([float(x) for x in range(1, 101)])  # p10 10.9, p90 90.1, k = 1.1
    assert mid == pytest.approx(50.5)
    assert low == pytest.approx(50.5 - 39.6 * 1.1) and high == pytest.approx(50.5 + 39.6 * 1.1)


# ---------------------------------------------------------------------------------------- bounds
def test_maximum_execution_time_caps_the_history() -> None:
    h = history_with([5000.0] * 10)
    e = est(wl_dict(max_exec=3600), h)
    assert e.upper_bound == 3600
    assert e.expected == 3600 and e.pessimistic == 3600 and e.optimistic <= 3600
    assert e.basis == "10 finished runs of this shape in team-a/lq-a; capped at maximumExecutionTimeSeconds 3600"


def test_a_bound_alone_is_the_estimate() -> None:
    e = est(wl_dict(max_exec=1200))
    assert (e.optimistic, e.expected, e.pessimistic) == (300, 1200, 1200)
    assert e.basis == "maximumExecutionTimeSeconds 1200 (upper bound; no finished runs known)"


def test_time_already_run_counts_against_the_maximum() -> None:
    # Kueue deactivates at admittedAt + max − accumulatedPastExecutionTimeSeconds
    e = est(wl_dict(max_exec=3600, accumulated=1000))
    assert e.upper_bound == 2600
    assert e.basis.startswith("maximumExecutionTimeSeconds 3600 less 16m40s already run")


def test_job_deadline_and_label_come_from_the_owner_job() -> None:
    d = wl_dict(job="train-1")
    assert owner_job(parsed(d)) == ("team-a", "train-1")
    e = est(d, job=JobLimits(active_deadline_seconds=900))
    assert e.upper_bound == 900 and e.basis.startswith("Job activeDeadlineSeconds 900 ")
    e = est(d, job=JobLimits(max_exec_label="1800"))  # Kueue copies it into the spec; it is not there yet
    assert e.upper_bound == 1800 and e.basis.startswith("label kueue.x-k8s.io/max-exec-time-seconds 1800 ")


def test_the_tightest_bound_wins() -> None:
    e = est(wl_dict(max_exec=3600, job="j"), job=JobLimits(active_deadline_seconds=600))
    assert e.upper_bound == 600
    e = est(wl_dict(max_exec=300, job="j"), job=JobLimits(active_deadline_seconds=600))
    assert e.upper_bound == 300


def test_estimate_runtimes_reads_job_limits_by_owner() -> None:
    snap = snapshot(cluster_queue("cq-a", group(["nvidia.com/gpu"], fq("a100", **{"nvidia.com/gpu": 8}))),
                    local_queue("team-a", "lq-a", "cq-a"), wl_dict("w1", job="j1"), wl_dict("w2", job="j2"))
    out = estimate_runtimes(snap, None, NOW, jobs={("team-a", "j1"): JobLimits(active_deadline_seconds=120)})
    assert out[("team-a", "w1")].upper_bound == 120
    assert out[("team-a", "w2")].upper_bound is None


# ---------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("label", ["1h", "", " 60", "0", "-5", "1_000", "99999999999", "6e2"])
def test_an_unparsable_label_is_ignored_with_a_note(label: str) -> None:
    h = history_with([400.0] * 5)
    e = est(wl_dict(job="j"), h, job=JobLimits(max_exec_label=label))
    assert e.upper_bound is None
    assert e.basis == "5 finished runs of this shape in team-a/lq-a"
    assert "max-exec-time-seconds" in e.note and "ignored" in e.note


def test_a_bad_label_on_the_workload_itself_is_noted() -> None:
    e = est(wl_dict(labels={"kueue.x-k8s.io/max-exec-time-seconds": "soon"}))
    assert e.basis == "default 1h: nothing known" and "'soon'" in e.note


@pytest.mark.parametrize("deadline", [-5, 0, float("nan"), float("inf")])
def test_a_deadline_that_is_not_positive_is_ignored_with_a_note(deadline: float) -> None:
    h = history_with([400.0] * 5)
    e = est(wl_dict(job="j"), h, job=JobLimits(active_deadline_seconds=deadline))
    assert e.upper_bound is None and e.expected == 400
    assert "activeDeadlineSeconds" in e.note and "ignored" in e.note


def test_a_bad_deadline_does_not_hide_a_good_bound() -> None:
    e = est(wl_dict(max_exec=700, job="j"), job=JobLimits(active_deadline_seconds=-1))
    assert e.upper_bound == 700 and "activeDeadlineSeconds -1" in e.note


# ---------------------------------------------------------------------------------------- running workloads
def running(elapsed: float, **kw: Any) -> dict[str, Any]:
    return admit(wl_dict(**kw), "cq-a", {"nvidia.com/gpu": "a100"}, at=NOW - elapsed)


def _one(d: dict[str, Any], history: RunHistory | None, **kw: Any) -> RuntimeEstimate:
    snap = snapshot(cluster_queue("cq-a", group(["nvidia.com/gpu"], fq("a100", **{"nvidia.com/gpu": 8}))),
                    local_queue("team-a", "lq-a", "cq-a"), d)
    return estimate_runtimes(snap, history, NOW, **kw)[("team-a", d["metadata"]["name"])]


def test_a_running_workload_keeps_only_the_runs_longer_than_its_elapsed_time() -> None:
    h = history_with([1000.0, 1200.0, 1400.0, 3000.0, 3200.0, 3400.0])
    e = _one(running(2500), h)
    assert e.expected == 3200  # median of the three longer runs, not 2200 of all six
    assert e.optimistic >= 2500  # the remaining time is never negative
    assert e.basis == "3 of 6 finished runs of this shape in team-a/lq-a that ran longer than its 41m40s so far"


def test_a_workload_running_longer_than_every_run_is_taken_to_end_soon() -> None:
    h = history_with([100.0, 200.0, 300.0])
    e = _one(running(1000), h)
    assert e.optimistic == 1000 and e.expected == 1100 and e.pessimistic == 1500
    assert e.basis.startswith("already ran 16m40s, longer than all 3 finished runs")


def test_ending_soon_is_measured_against_the_runs_it_outlived_not_a_fixed_minute() -> None:
    # Second-long jobs (the perf harness's): one that outlived every run ends within a fraction
    # of a second or of what it ran, not 60 s later.
    e = _one(running(3), history_with([1.0, 1.0, 2.0]))
    assert (e.optimistic, e.expected, e.pessimistic) == (3, 3.3, 4.5)


def test_a_running_workload_past_the_default_is_not_given_a_negative_remainder() -> None:
    e = _one(running(5000), None)
    assert e.expected > 5000 and e.optimistic >= 5000
    assert "already ran 1h23m20s" in e.basis


def test_a_running_workload_past_its_bound_ends_now() -> None:
    e = _one(running(4000, max_exec=3600), None)
    assert e.expected == 4000 and e.pessimistic == 4000


def test_a_running_workload_early_in_its_run_keeps_the_full_estimate() -> None:
    h = history_with([1000.0, 1200.0, 1400.0])
    e = _one(running(10), h)
    assert e.expected == 1200 and e.basis == "3 finished runs of this shape in team-a/lq-a"


def test_estimate_runtimes_covers_running_and_pending_not_finished() -> None:
    done = running(100, name="done")
    done["status"]["conditions"].append(condition("Finished", True, "Succeeded", at=NOW))
    snap = snapshot(cluster_queue("cq-a", group(["nvidia.com/gpu"], fq("a100", **{"nvidia.com/gpu": 8}))),
                    local_queue("team-a", "lq-a", "cq-a"), running(10, name="run"), wl_dict("pend"), done)
    out = estimate_runtimes(snap, history_with([500.0] * 4), NOW)
    assert set(out) == {("team-a", "run"), ("team-a", "pend")}
    assert out[("team-a", "pend")].basis == "4 finished runs of this shape in team-a/lq-a"


# ---------------------------------------------------------------------------------------- runs from pods' start
def test_runs_measured_from_their_pods_start_measure_a_running_workload_so_too() -> None:
    """Runs of 1,000 s, each after 200 s waiting for a node: 1,200 s from admission, 1,000 s from
    the pods' start. A forecast that places pods reads the 1,000 s and counts the running ones
    from their pods' start; one still waiting for its node is estimated as a pending one."""
    h = RunHistory("test")
    shape = shape_key(parsed(wl_dict()).pod_sets)
    for i in range(5):
        h.add(RunRecord(f"u{i}", "team-a", "lq-a", "cq-a", shape, T0 + i, T0 + i + 1200, T0 + i + 200))
    started = admit(wl_dict("started"), "cq-a", {"nvidia.com/gpu": "a100"}, at=NOW - 900)
    started["status"]["conditions"].append(condition("PodsReady", True, "Started", at=NOW - 700))
    waiting = admit(wl_dict("waiting"), "cq-a", {"nvidia.com/gpu": "a100"}, at=NOW - 100)
    snap = snapshot(cluster_queue("cq-a", group(["nvidia.com/gpu"], fq("a100", **{"nvidia.com/gpu": 16}))),
                    local_queue("team-a", "lq-a", "cq-a"), started, waiting, wl_dict("pending"))
    plain = estimate_runtimes(snap, h, NOW)
    pods = estimate_runtimes(snap, h.from_pods(), NOW)
    assert plain[("team-a", "pending")].expected == 1200 and pods[("team-a", "pending")].expected == 1000
    # 700 s since its pods started (900 s since its admission): both under a typical run.
    assert pods[("team-a", "started")].expected == 1000 and plain[("team-a", "started")].expected == 1200
    assert pods[("team-a", "waiting")] == pods[("team-a", "pending")]  # its pods have not started: all of it is ahead


# ---------------------------------------------------------------------------------------- runs still going
def test_kaplan_meier_counts_a_run_still_going_as_longer_than_it_has_run() -> None:
    assert km_quantiles([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [], (0.1, 0.5, 0.9)) == [1, 5, 9]
    # 300-600 s finished; three still going, at 700, 800 and 5,000 s: the median is the 600 s run
    # (finished runs alone say 450 s).
    assert km_quantiles([300, 400, 500, 600], [700, 800, 5000], (0.5,)) == [600]
    # More than half still going past the last finish: the median is not reached.
    assert km_quantiles([100, 200], [150, 1000, 1000], (0.5,)) == [None]


def _queue(*running_for: float) -> list[dict[str, Any]]:
    return [cluster_queue("cq-a", group(["nvidia.com/gpu"], fq("a100", **{"nvidia.com/gpu": 64}))),
            local_queue("team-a", "lq-a", "cq-a"), wl_dict("pend"),
            *(running(e, name=f"run-{i}") for i, e in enumerate(running_for))]


def test_runs_still_going_lengthen_the_estimate_of_a_pending_workload() -> None:
    """Early on only the short runs have finished: the long ones still going say the runtime is longer."""
    history = history_with([300.0, 400.0, 500.0, 600.0])
    alone = estimate_runtimes(snapshot(*_queue()), history, NOW)[("team-a", "pend")]
    assert alone.expected == 450 and alone.basis == "4 finished runs of this shape in team-a/lq-a"
    out = estimate_runtimes(snapshot(*_queue(700, 800, 5000)), history, NOW)
    est = out[("team-a", "pend")]
    assert est.expected == 600 and est.basis == "4 finished runs of this shape in team-a/lq-a and 3 still running"
    assert est.optimistic < est.expected < est.pessimistic
    # Runs still going that have not outlasted any finished one change nothing.
    assert estimate_runtimes(snapshot(*_queue(10, 20)), history, NOW)[("team-a", "pend")] == alone


def test_when_most_runs_are_still_going_the_longest_so_far_is_taken_as_halfway() -> None:
    # Past the data, a run is as likely in its first half as in its second (Gott): 2× the
    # longest so far expected, 10× at the pessimistic end; the optimistic p10 is in the data.
    history = history_with([300.0, 400.0])
    est = estimate_runtimes(snapshot(*_queue(2000, 2400, 3000)), history, NOW)[("team-a", "pend")]
    assert est.expected == 6000 and est.pessimistic == 30000 and est.optimistic == 300
    assert est.basis == ("2 finished runs of this shape in team-a/lq-a and 3 still running: most still run, the "
                         "longest 50m so far, twice that expected")
    # A running one is conditioned on its own time so far, the others still counting.
    run = estimate_runtimes(snapshot(*_queue(2000, 2400, 3000)), history, NOW)[("team-a", "run-0")]
    assert run.expected >= 2000


def test_a_run_past_every_finished_one_is_not_ending_soon_while_others_ran_longer() -> None:
    # Most runs have finished (Kaplan–Meier reaches the median, 400 s): one past them all is an
    # outlier, but one that others have outlasted is not about to end.
    history = history_with([300.0, 400.0, 500.0])
    out = estimate_runtimes(snapshot(*_queue(2000, 2400)), history, NOW)
    first, last = out[("team-a", "run-0")], out[("team-a", "run-1")]
    assert (first.optimistic, first.expected, first.pessimistic) == (2000, 2400, 4800)
    assert first.basis == ("already ran 33m20s, longer than all 3 finished runs of this shape in team-a/lq-a, and 1 "
                           "still running ran longer: at least 40m")
    # The longest running one is past everything known: it is taken to end soon.
    assert last.expected == 2640 and "expected to end soon" in last.basis
    # Runs started together are seconds apart: one a second behind the longest is not about to end.
    tied = estimate_runtimes(snapshot(*_queue(2000, 2001)), history_with([300.0, 400.0]), NOW)[("team-a", "run-0")]
    assert (tied.expected, tied.pessimistic) == (2200, 4002)


def test_a_run_past_every_finished_one_while_most_still_go_on_is_past_the_data() -> None:
    # 2 finished runs, 3 still going past them: Kaplan–Meier stops at 40 % over. The finished
    # ones are the short ones (on a young cluster, only they have had time to end): nothing is
    # known of the rest, and a running one is taken as a pending one is, at twice the longest
    # run so far — not as about to end, which made every long job of a young cluster end now.
    history = history_with([300.0, 400.0])
    out = estimate_runtimes(snapshot(*_queue(2000, 2400, 3000)), history, NOW)
    pending = out[("team-a", "pend")]
    for name in ("run-0", "run-1", "run-2"):
        est = out[("team-a", name)]
        assert (est.optimistic, est.expected, est.pessimistic) == (3000, 6000, 30000) == (
            pending.optimistic * 10, pending.expected, pending.pessimistic)
    assert out[("team-a", "run-0")].basis == (
        "already ran 33m20s, longer than all 2 finished runs of this shape in team-a/lq-a, but most runs still go "
        "on (3): twice 50m expected")


def test_runs_still_going_are_thinned_as_the_finished_ones_are() -> None:
    # The cluster tier keeps the 4 most recent of 8 finished runs: of the 40 runs still going,
    # half count, evenly spread and the longest kept, so that Kaplan–Meier weighs them as it
    # weighs the finished ones.
    h = history_with([100.0 + i for i in range(8)], cq="cq-other", lq="lq-other", gpus=1)
    rules = EstimateRules(cluster_runs=4)
    tiers: dict = {}
    going = sorted(200.0 + 10 * i for i in range(40))
    tier = _history_tier(parsed(wl_dict("pend", lq="lq-new")), "cq-new", h, rules, None, tiers,
                         lambda scope: going if scope == "cluster" else ())
    assert tier is not None and tier.samples == (104.0, 105.0, 106.0, 107.0)
    assert len(tier.censored) == 20 and tier.censored[-1] == 590.0 and tier.censored[:2] == (210.0, 230.0)


def test_durations_in_a_basis_read_as_format_duration_writes_them() -> None:
    from kueuetop.admission.runtime_estimate import _dur
    from kueuetop.kueue.durations import format_duration
    for x in [*range(0, 4000), 3599.5, 86399.4, 86400 * 3 + 61, 123456.7, -5.0, 0.4]:
        assert _dur(x) == format_duration(max(0, round(x))), x
