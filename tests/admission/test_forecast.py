"""The forecast on small clusters whose future can be worked out by hand: who starts when, after
whom, on which flavor, by preempting whom; "never" with the reason; ranges from the runtime
spread; the horizon; inputs untouched; a reused EngineCache answers as a fresh one does."""

from __future__ import annotations

import dataclasses

import pytest

from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.forecast import forecast
from kueuetop.admission.forecast_result import RuntimeEstimate
from kueuetop.kueue.workload import Workload
from kueuetop.kueue.workload_api import status_from_api, workload_to_api
from tests.builders import (
    T0,
    admit,
    cluster_queue,
    cohort,
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


def exact(seconds: float) -> RuntimeEstimate:
    return RuntimeEstimate(seconds, seconds, seconds, "exact")


def spread(lo: float, mid: float, hi: float) -> RuntimeEstimate:
    return RuntimeEstimate(mid, lo, hi, "test")


def gpus(n: int) -> dict:
    return {GPU: str(n)}


def base(quota: int = 4, within: str | None = None, **cq_kw: object) -> list[dict]:
    return [flavor("l4"), namespace(NS),
            cluster_queue("cq", group(GPU, fq("l4", **{GPU: quota})), within=within, **cq_kw),  # type: ignore[arg-type]
            local_queue(NS, "lq", "cq")]


def running(name: str, n: int, since: float, priority: int = 0) -> dict:
    return admit(workload(NS, name, "lq", gpus(n), priority=priority, created=since - 60), "cq", {GPU: "l4"}, at=since)


def test_a_queue_of_three_starts_one_after_the_other_as_each_run_ends() -> None:
    # 4 GPUs: r (4 GPUs) runs since T0 for 10 min; a, b (4 GPUs each) wait in FIFO order.
    snap = snapshot(*base(), running("r", 4, T0),
                    workload(NS, "a", "lq", gpus(4), created=T0 + 1), workload(NS, "b", "lq", gpus(4), created=T0 + 2))
    now = T0 + 120
    f = forecast(snap, {(NS, "r"): exact(600), (NS, "a"): exact(300), (NS, "b"): exact(300)}, now)
    a, b = f.workloads[(NS, "a")], f.workloads[(NS, "b")]
    assert (a.start, b.start) == (T0 + 600, T0 + 900)
    assert a.after == ((NS, "r"),) and b.after == ((NS, "a"),)
    assert [p.flavors for p in a.flavors] == [{GPU: "l4"}]
    assert f.complete and set(f.workloads) == {(NS, "a"), (NS, "b")}  # the running one is not forecast


def test_a_workload_that_fits_now_starts_now_and_waits_for_nobody() -> None:
    snap = snapshot(*base(), workload(NS, "a", "lq", gpus(2), created=T0))
    f = forecast(snap, {(NS, "a"): exact(60)}, T0 + 5)
    assert f.workloads[(NS, "a")].start == T0 + 5
    assert f.workloads[(NS, "a")].after == ()


def test_ranges_come_from_the_optimistic_and_pessimistic_runtimes() -> None:
    snap = snapshot(*base(), running("r", 4, T0), workload(NS, "a", "lq", gpus(4), created=T0 + 1))
    f = forecast(snap, {(NS, "r"): spread(300, 600, 1200), (NS, "a"): exact(60)}, T0 + 100)
    a = f.workloads[(NS, "a")]
    assert (a.earliest, a.start, a.latest) == (T0 + 300, T0 + 600, T0 + 1200)
    assert f.runtimes[(NS, "r")].expected == 600


def test_an_overdue_run_ends_now_not_in_the_past() -> None:
    snap = snapshot(*base(), running("r", 4, T0), workload(NS, "a", "lq", gpus(4), created=T0 + 1))
    f = forecast(snap, {(NS, "r"): exact(60)}, T0 + 500)
    assert f.workloads[(NS, "a")].start == T0 + 500


def test_a_higher_priority_workload_preempts_within_its_queue_and_the_victim_waits_for_it() -> None:
    snap = snapshot(*base(within="LowerPriority"), running("low", 4, T0, priority=0),
                    workload(NS, "high", "lq", gpus(4), priority=100, created=T0 + 10))
    now = T0 + 20
    f = forecast(snap, {(NS, "low"): exact(3600), (NS, "high"): exact(600)}, now)
    high = f.workloads[(NS, "high")]
    assert high.start == now and high.preempts == ((NS, "low"),)
    assert (NS, "low") not in f.workloads  # it was running at the snapshot: not a pending answer


def test_a_workload_larger_than_its_queue_never_starts_and_says_why() -> None:
    snap = snapshot(*base(quota=4), workload(NS, "huge", "lq", gpus(8), created=T0))
    f = forecast(snap, {(NS, "huge"): exact(60)}, T0)
    huge = f.workloads[(NS, "huge")]
    assert huge.start is None and f.complete
    assert "nvidia.com/gpu" in huge.never and "exceeds the maximum capacity" in huge.never, huge.never


def test_a_held_workload_never_starts_while_held() -> None:
    snap = snapshot(*base(), workload(NS, "held", "lq", gpus(1), created=T0, active=False))
    f = forecast(snap, {(NS, "held"): exact(60)}, T0)
    assert f.workloads[(NS, "held")].start is None
    assert "held" in f.workloads[(NS, "held")].never


def test_the_horizon_ends_the_run_without_calling_anything_never() -> None:
    snap = snapshot(*base(), running("r", 4, T0), workload(NS, "a", "lq", gpus(4), created=T0 + 1))
    f = forecast(snap, {(NS, "r"): exact(7200), (NS, "a"): exact(60)}, T0, horizon=3600)
    a = f.workloads[(NS, "a")]
    assert a.start is None and a.never == "" and not f.complete


def test_a_running_workload_without_an_estimate_holds_its_quota_to_the_horizon() -> None:
    snap = snapshot(*base(), running("r", 4, T0), workload(NS, "a", "lq", gpus(4), created=T0 + 1))
    f = forecast(snap, {(NS, "a"): exact(60)}, T0, horizon=3600)
    assert f.workloads[(NS, "a")].start is None and not f.complete


def test_borrowing_in_a_cohort_then_reclaim_by_the_lender() -> None:
    # cq-a lends 4 GPUs to cq-b's job; when cq-a's own job arrives it reclaims them.
    objs = [flavor("l4"), namespace(NS), namespace("team-b"),
            cluster_queue("cq-a", group(GPU, fq("l4", **{GPU: 4})), cohort="co", reclaim="Any"),
            cluster_queue("cq-b", group(GPU, fq("l4", **{GPU: 0})), cohort="co"),
            local_queue(NS, "lq-a", "cq-a"), local_queue("team-b", "lq-b", "cq-b"),
            admit(workload("team-b", "borrower", "lq-b", gpus(4), created=T0), "cq-b", {GPU: "l4"}, at=T0),
            workload(NS, "owner", "lq-a", gpus(4), created=T0 + 30)]
    f = forecast(snapshot(*objs), {("team-b", "borrower"): exact(3600), (NS, "owner"): exact(60)}, T0 + 40)
    owner = f.workloads[(NS, "owner")]
    assert owner.start == T0 + 40 and owner.preempts == (("team-b", "borrower"),)


def test_a_forward_run_leaves_no_reference_cycle_holding_its_workloads_or_quota_trees() -> None:
    """The console's forecast child collects no garbage (tui/forecast_process.py): whatever a run
    leaves in a reference cycle stays until the child exits. Only the quota structure's own
    parent/child links may be left; no workload of the run's instants, no quota tree, no closure."""
    import gc

    teams = ("team-b", "team-c")
    objs = [flavor("l4"), namespace(NS), *(namespace(t) for t in teams), cohort("org"), cohort("research", parent="org"),
            cluster_queue("cq-a", group(GPU, fq("l4", **{GPU: 8})), cohort="org", reclaim="Any"),
            cluster_queue("cq-b", group(GPU, fq("l4", **{GPU: 0})), cohort="research"),
            cluster_queue("cq-c", group(GPU, fq("l4", **{GPU: 0})), cohort="research"),
            local_queue(NS, "lq-a", "cq-a"), local_queue("team-b", "lq-b", "cq-b"), local_queue("team-c", "lq-c", "cq-c"),
            *(admit(workload(t, f"borrower-{t}", f"lq-{t[-1]}", gpus(4), created=T0), f"cq-{t[-1]}", {GPU: "l4"}, at=T0)
              for t in teams),
            *(workload(NS, f"owner-{i}", "lq-a", gpus(4), created=T0 + 30 + i) for i in range(3))]
    snap = snapshot(*objs)
    runtimes = {k: exact(600 + 60 * i) for i, k in enumerate(sorted(snap.workloads))}
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        f = forecast(snap, runtimes, T0 + 40)
        assert f.workloads[(NS, "owner-0")].preempts  # the lender reclaimed through the nested cohort
        del f
        gc.collect()
        left = {type(o).__name__ for o in gc.garbage}
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert not left & {"Workload", "SharedMap", "QuotaTree", "function", "cell"}, left


def test_the_snapshot_is_not_changed_and_a_reused_cache_answers_as_a_fresh_one() -> None:
    snap = snapshot(*base(within="LowerPriority"), running("r", 2, T0), running("low", 2, T0),
                    *[workload(NS, f"w{i}", "lq", gpus(1 + i % 3), priority=(i % 2) * 10, created=T0 + i)
                      for i in range(12)])
    runtimes = {k: exact(100 + 37 * i) for i, k in enumerate(sorted(snap.workloads))}
    before = dict(snap.workloads)
    cache = EngineCache()
    first = forecast(snap, runtimes, T0 + 50, cache=cache)
    again = forecast(snap, runtimes, T0 + 50, cache=cache)
    fresh = forecast(snap, runtimes, T0 + 50, cache=EngineCache(fast_paths=False))
    assert dict(snap.workloads) == before and all(snap.workloads[k] is v for k, v in before.items())
    assert first.workloads == again.workloads == fresh.workloads
    assert all(w.start is not None for w in first.workloads.values())


@pytest.mark.parametrize("wl", [
    workload(NS, "p", "lq", gpus(2), created=T0),
    admit(workload(NS, "a", "lq", gpus(2), count=3, created=T0), "cq", {GPU: "l4"}, at=T0 + 5),
])
def test_a_workload_written_back_to_the_api_form_reads_back_the_same(wl: dict) -> None:
    from kueuetop.kueue.parse import parse_object

    parsed = parse_object(wl)
    assert isinstance(parsed, Workload)
    api = workload_to_api(parsed)
    assert status_from_api(parsed, api) == parsed
    # A write the status writers make is read back; the rest stays the parsed workload's own.
    api["status"].setdefault("conditions", []).append(
        {"type": "Evicted", "status": "True", "reason": "Preempted", "message": "m", "lastTransitionTime": "2023-11-14T22:13:20Z"})
    api["spec"]["active"] = False
    api["metadata"]["generation"] = 7
    back = status_from_api(parsed, api)
    assert back.is_evicted and not back.active and back.meta.generation == 7
    assert back.pod_sets is parsed.pod_sets and back.meta.labels == parsed.meta.labels
    assert dataclasses.replace(back, conditions=parsed.conditions, active=True, meta=parsed.meta) == parsed


def test_a_parked_workloads_status_written_back_holds_its_resource_requests_so_the_same_pending_writes_nothing() -> None:
    # Kueue writes status.resourceRequests with each Pending (and clears them on admission). A
    # parked workload read from the cluster, written back to its API form, must hold them: else
    # the forward run's first identical Pending is a change, re-read and re-indexed (1,078 of
    # them in the first instant of `large`).
    from kueuetop.admission import status_updates as su
    from kueuetop.admission.decisions import Pending
    from kueuetop.kueue.parse import parse_object

    pending = Pending((NS, "p"), "Pending", "couldn't assign flavors to pod set main: insufficient quota", True)
    written = su.apply_decision(workload(NS, "p", "lq", gpus(2), count=3, created=T0), pending, T0 + 5)
    assert written["status"]["resourceRequests"]
    parsed = parse_object(written)
    assert isinstance(parsed, Workload) and parsed.requests_in_status
    api = workload_to_api(parsed)
    assert api["status"]["resourceRequests"] == written["status"]["resourceRequests"]
    assert su.apply_decision(api, pending, T0 + 60)["status"] == api["status"]
    # Admitted, Kueue cleared them: the API form has none either.
    admitted = parse_object(admit(workload(NS, "a", "lq", gpus(2), created=T0), "cq", {GPU: "l4"}, at=T0 + 5))
    assert isinstance(admitted, Workload) and "resourceRequests" not in workload_to_api(admitted)["status"]


def test_a_conditions_only_write_reads_back_as_the_whole_status_does() -> None:
    # The forward run's PodsReady write re-reads the conditions alone (`with_conditions`).
    from kueuetop.admission import status_updates as su
    from kueuetop.kueue.parse import parse_object
    from kueuetop.kueue.workload import with_conditions

    parsed = parse_object(admit(workload(NS, "a", "lq", gpus(2), count=3, created=T0), "cq", {GPU: "l4"}, at=T0 + 5))
    assert isinstance(parsed, Workload)
    api = workload_to_api(parsed)
    su.set_condition(api["status"].setdefault("conditions", []), "PodsReady", True, "Started", "running", T0 + 9, None)
    quick, whole = with_conditions(parsed, api), status_from_api(parsed, api)
    assert quick == whole and quick.is_true("PodsReady") and not parsed.is_true("PodsReady")
    assert quick.admission is parsed.admission  # not read again


def test_runtimes_given_as_a_function_are_read_once_after_the_first_cycle_and_forecast_the_same() -> None:
    # The console's forecast child works the estimates out beside the run's first round.
    snap = snapshot(*base(), running("r", 4, T0), running("s", 2, T0 - 100),
                    *[workload(NS, f"w{i}", "lq", gpus(2 + i % 2), created=T0 + 1 + i) for i in range(6)])
    runtimes = {k: spread(300, 600, 900) for k in snap.workloads}
    plain = forecast(snap, runtimes, T0 + 10)
    cache = EngineCache()
    asked: list[int] = []

    def later() -> dict:
        asked.append(len(cache.index.entries))  # the first cycle has indexed the cluster by then
        return runtimes

    lazy = forecast(snap, later, T0 + 10, cache=cache)
    assert len(asked) == 1 and asked[0] == len(snap.workloads)
    assert lazy.workloads == plain.workloads and lazy.runtimes == plain.runtimes
    assert all(w.start is not None for w in lazy.workloads.values())


def test_a_round_budget_answers_the_first_workloads_and_says_how_far_it_got() -> None:
    from kueuetop.views.eta_text import eta_cell

    # Ten 4-GPU jobs one after the other, 10 minutes each: a budget of rounds places the first few.
    snap = snapshot(*base(), running("r", 4, T0),
                    *[workload(NS, f"w{i}", "lq", gpus(4), created=T0 + 1 + i) for i in range(10)])
    runtimes = {k: exact(600) for k in snap.workloads}
    full = forecast(snap, runtimes, T0)
    cut = forecast(snap, runtimes, T0, max_steps=12)
    assert full.complete and not cut.complete
    placed = {k: w.start for k, w in cut.workloads.items() if w.start is not None}
    assert 0 < len(placed) < 10
    assert all(full.workloads[k].start == t for k, t in placed.items())  # what it answers is right
    assert max(placed.values()) <= cut.horizon < T0 + 7 * 24 * 3600
    beyond = next(w for w in cut.workloads.values() if w.start is None)
    assert beyond.never == ""
    assert eta_cell(beyond, T0, complete=cut.complete, horizon=cut.horizon) == ">" + eta_cell(
        dataclasses.replace(beyond, start=cut.horizon), T0)[1:]
    # The caller's pause can end it too.
    rounds = []
    stopped = forecast(snap, runtimes, T0, pause=lambda: rounds.append(1) or len(rounds) > 12)
    assert not stopped.complete and {k: w.start for k, w in stopped.workloads.items() if w.start} == placed
