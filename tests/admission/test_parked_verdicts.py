"""A forecast's forward run reuses a parked head's assignment only while assigning again would
give the same one (admission/parked_verdicts.py): with and without the reuse, the same
workloads are admitted at the same instants with the same flavors and preemptions."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kueuetop.admission import cycle
from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.forecast import _run
from kueuetop.admission.parked_verdicts import reuse
from kueuetop.kueue.workload_api import workload_to_api
from tests.admission.engine_runs import ClusterRun, cluster_spec
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


@contextmanager
def counted_reuse() -> Iterator[list[int]]:
    """The reuse as it is, counting the assignments it handed back."""
    hits = [0]

    def counting(*args, **kwargs):
        found = reuse(*args, **kwargs)
        hits[0] += found is not None
        return found

    with patch.object(cycle, "reuse", counting):
        yield hits


@contextmanager
def no_reuse() -> Iterator[None]:
    with patch.object(cycle, "reuse", lambda *args, **kwargs: None):
        yield


def _runs(snap, rt, now, pending):
    with counted_reuse() as hits:
        on = _run(snap, rt, now, pending, EngineCache(), now + 3600, 5_000, None)
    with no_reuse():
        off = _run(snap, rt, now, pending, EngineCache(), now + 3600, 5_000, None)
    return on, off, hits[0]


def _queue_full_of_equals(runtimes: list[float]):
    """ClusterQueue `a` (8 GPUs, preemption of lower priorities only) full of eight 1-GPU
    workloads of the head's own priority, which finish one by one at `runtimes`; the head asks
    for all 8. After each finish it is requeued and nominated again, and until the last the
    answer is the same: no fit, the oracle asked, no candidates (only the message's number of
    GPUs still needed changes)."""
    objs = [namespace(NS), flavor("h100"), cluster_queue("a", group(GPU, fq("h100", **{GPU: 8})), cohort="pool",
                                         within="LowerPriority"),
            cluster_queue("b", group(GPU, fq("h100", **{GPU: 0})), cohort="pool"),
            local_queue(NS, "lq", "a")]
    for i in range(len(runtimes)):
        objs.append(admit(workload(NS, f"run-{i}", "lq", {GPU: "1"}, created=T0 + i), "a", {GPU: "h100"}, at=T0))
    objs.append(workload(NS, "head", "lq", {GPU: "8"}, created=T0 + 20))
    rt = {(NS, f"run-{i}"): r for i, r in enumerate(runtimes)} | {(NS, "head"): 600.0}
    return snapshot(*objs), rt


def test_a_head_told_the_same_after_each_finish_is_reused_and_admitted_as_without():
    snap, rt = _queue_full_of_equals([100.0 * (i + 1) for i in range(8)])
    now = T0 + 50
    on, off, hits = _runs(snap, rt, now, {(NS, "head")})
    assert off.start[(NS, "head")] == T0 + 800  # when the last of the eight finishes
    assert on.start == off.start and on.flavors == off.flavors and on.preempts == off.preempts
    assert hits >= 6  # nominated after each of the first seven finishes, the same answer each time


def test_a_reused_head_is_told_the_shortfall_of_its_instant():
    # The run stops at +300, three of the eight finished: the head, told "no fit" again after each
    # finish (reused), must say what a fresh assignment says there: 8 asked, 3 free, 5 more needed.
    snap, rt = _queue_full_of_equals([100.0 * (i + 1) for i in range(8)])
    now = T0 + 50
    with counted_reuse() as hits:
        on = _run(snap, rt, now, {(NS, "head")}, EngineCache(), T0 + 350, 5_000, None)
    assert hits[0] >= 2 and on.final is not None
    conditions = workload_to_api(on.final.workloads[(NS, "head")])["status"]["conditions"]
    assert [c["message"] for c in conditions if c["type"] == "QuotaReserved"] == [
        f"couldn't assign flavors to pod set main: insufficient unused quota for {GPU} in flavor h100, "
        "5 more needed"]


def test_a_head_whose_answer_changes_is_assigned_again():
    # Two finish at +100, the other six at +300: at +100 the head still does not fit and is told
    # the same (reused); at +300 it fits, and the kept "no fit" must not be handed back.
    snap, rt = _queue_full_of_equals([100.0, 100.0, 300.0, 300.0, 300.0, 300.0, 300.0, 300.0])
    now = T0 + 50
    with counted_reuse() as hits:
        on = _run(snap, rt, now, {(NS, "head")}, EngineCache(), now + 3600, 5_000, None)
    assert on.start[(NS, "head")] == T0 + 300
    assert hits[0] == 1


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=cluster_spec, runtimes=st.lists(st.integers(1, 40), min_size=12, max_size=12))
def test_forward_runs_admit_alike_with_and_without_the_reuse(spec, runtimes):
    """Random small clusters (classical or fair sharing, cohorted or not): the admissions, their
    flavors and preemptions, where the run ends, and every workload's final status (the
    shortfalls its pending message names included) are the same."""
    snap = ClusterRun(spec, EngineCache()).snapshot()
    now = T0 + 100
    rt = {key: float(runtimes[i]) for i, key in enumerate(sorted(snap.workloads))}
    pending = {k for k, w in snap.workloads.items() if not w.has_quota_reservation}
    on, off, _ = _runs(snap, rt, now, pending)
    assert (on.start, on.flavors, on.preempts, on.after, on.stable, on.end) == \
        (off.start, off.flavors, off.preempts, off.after, off.stable, off.end)
    assert on.final is not None and off.final is not None
    assert {k: workload_to_api(w)["status"] for k, w in on.final.workloads.items()} == \
        {k: workload_to_api(w)["status"] for k, w in off.final.workloads.items()}
