"""simulate() and what_if() scenarios.

The loop mechanics run against a minimal stand-in scheduler (admit every queued workload that
fits its ClusterQueue's nominal quota, FIFO); the preemption scenario needs the real
`cycle.schedule` and is skipped until it exists.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kueuetop.admission.decisions import Admit
from kueuetop.admission.simulate import simulate
from kueuetop.admission.status_updates import is_queued
from kueuetop.admission.what_if import what_if
from kueuetop.kueue.actions import CLUSTER_QUEUE, WORKLOAD, Target
from kueuetop.kueue.config import KueueConfig, WaitForPodsReady
from kueuetop.kueue.workload import PodSetAssignment
from tests.admission.helpers import (
    NS,
    T0,
    admitted,
    condition,
    cq,
    lq,
    pending,
    ts,
    with_conditions,
    with_status,
)
from tests.builders import flavor


@dataclass
class _Result:
    decisions: tuple
    state: object = None


def fifo(snapshot, now, state):
    """Admit queued, un-parked workloads in creation order while the CQ's nominal cpu allows."""
    used: dict[str, int] = {}
    for w in snapshot.workloads.values():
        if w.has_quota_reservation and not w.is_finished and w.admission:
            used[w.admission.cluster_queue] = used.get(w.admission.cluster_queue, 0) + sum(w.usage().values())
    out = []
    for w in sorted(snapshot.workloads.values(), key=lambda w: (w.meta.creation or 0, w.name)):
        rq = w.condition("Requeued")
        backoff = w.requeue_state and w.requeue_state.requeue_at and w.requeue_state.requeue_at > now
        if not is_queued(snapshot, w) or (rq and rq.status == "False") or backoff:
            continue
        cq_name = snapshot.local_queues[(w.namespace, w.queue_name)].cluster_queue
        spec = snapshot.cluster_queues[cq_name]
        if spec.stop_policy != "None":
            continue
        need = w.pod_sets[0].total()["cpu"]
        if used.get(cq_name, 0) + need <= spec.resource_groups[0].flavors[0].resources["cpu"].nominal:
            used[cq_name] = used.get(cq_name, 0) + need
            out.append(Admit(w.key, cq_name, (PodSetAssignment("main", {"cpu": "default"}, {"cpu": need}, 1),)))
    return _Result(tuple(out), state)


def base(*wls, cq_obj=None) -> list[dict]:
    return [flavor("default"), cq_obj or cq(cpu="2"), lq(), *wls]


def conds(wl: dict) -> dict:
    return {c["type"]: (c["status"], c["reason"]) for c in wl["status"].get("conditions", [])}


def test_simulate_admits_until_full_and_is_stable() -> None:
    r = simulate(base(pending("a", created=T0), pending("b", created=T0 + 1), pending("c", created=T0 + 2)),
                 T0 + 10, schedule=fifo)
    assert r.stable
    assert [(e.kind, e.workload[1]) for e in r.events] == [("admitted", "a"), ("admitted", "b")]
    wls = r.workloads()
    assert conds(wls[(NS, "a")])["Admitted"] == ("True", "Admitted")
    assert "status" not in wls[(NS, "c")] or "admission" not in wls[(NS, "c")]["status"]
    assert [e["reason"] for e in r.kueue_events] == ["QuotaReserved", "Admitted", "QuotaReserved", "Admitted"]


def test_drain_then_resume_readmits() -> None:
    objs = base(admitted("a"), admitted("b", at=T0 + 1))
    drained = what_if(objs, "drain", Target(CLUSTER_QUEUE, "cq"), T0 + 10, schedule=fifo)
    assert [(c.workload[1], c.reason) for c in drained.evicted] == [("a", "ClusterQueueStopped"),
                                                                    ("b", "ClusterQueueStopped")]
    assert drained.admitted == () and drained.preempted == ()
    after = drained.outcome.workloads()[(NS, "a")]
    assert conds(after)["Requeued"] == ("False", "ClusterQueueStopped")
    assert conds(after)["QuotaReserved"] == ("False", "Inadmissible")  # CQ stopped (legacy reason)
    assert after["status"]["schedulingStats"]["evictions"] == [
        {"reason": "ClusterQueueStopped", "underlyingCause": "", "count": 1}]
    resumed = what_if(list(drained.outcome.objects), "resume-queue", Target(CLUSTER_QUEUE, "cq"), T0 + 20, schedule=fifo)
    assert [c.workload[1] for c in resumed.admitted] == ["a", "b"]
    wl = resumed.outcome.workloads()[(NS, "a")]
    assert conds(wl)["Requeued"] == ("True", "ClusterQueueRestarted")
    assert conds(wl)["Evicted"] == ("False", "QuotaReserved")
    assert conds(wl)["Admitted"] == ("True", "Admitted")


def test_requeue_resets_backoff() -> None:
    backing_off = with_status(
        with_conditions(pending("a"), condition("Evicted", True, "PodsReadyTimeout", "x"),
                        condition("Requeued", False, "PodsReadyTimeout", "x")),
        requeueState={"count": 3, "requeueAt": ts(T0 + 3600)})
    objs = base(backing_off)
    idle = simulate(objs, T0 + 10, schedule=fifo)
    assert idle.events == ()  # still backing off
    r = what_if(objs, "requeue", Target(WORKLOAD, "a", NS), T0 + 10, schedule=fifo)
    assert [c.workload[1] for c in r.admitted] == ["a"]
    wl = r.outcome.workloads()[(NS, "a")]
    assert "requeueState" not in wl["status"]
    assert wl["spec"]["active"] is True
    assert conds(wl)["Requeued"] == ("True", "BackoffFinished")
    assert r.target_state == "Admitted"


def test_preempt_action_deactivates_releases_and_requeues() -> None:
    r = what_if(base(admitted("a"), admitted("b"), pending("c", created=T0 + 5)), "preempt", Target(WORKLOAD, "a", NS),
                T0 + 10, schedule=fifo)
    assert [(c.workload[1], c.reason) for c in r.evicted] == [("a", "Deactivated")]
    assert [c.workload[1] for c in r.admitted] == ["c"]  # c takes a's place; a waits behind it
    wl = r.outcome.workloads()[(NS, "a")]
    assert conds(wl)["Requeued"] == ("True", "Reactivated")
    assert wl["metadata"]["generation"] == 3  # two spec.active patches


def test_virtual_clock_runs_pods_ready_timeouts() -> None:
    cfg = KueueConfig(wait_for_pods_ready=WaitForPodsReady(timeout_seconds=60, backoff_base_seconds=30))
    r = simulate(base(pending("a")), T0, config=cfg, schedule=fifo, advance_clock=True, until=T0 + 1000,
                 pods_run=False)
    kinds = [(e.kind, e.reason, round(e.time - T0)) for e in r.events if e.workload == (NS, "a")]
    assert kinds[:6] == [("admitted", "", 0), ("evicted", "PodsReadyTimeout", 60), ("released", "", 60),
                         ("requeued", "BackoffFinished", 90), ("admitted", "", 90), ("evicted", "PodsReadyTimeout", 150)]


def test_runtime_annotation_finishes() -> None:
    w = pending("a")
    w["metadata"]["annotations"] = {"kueuetop.io/runtime": "2m"}
    r = simulate(base(w, pending("b", created=T0 + 1), pending("c", created=T0 + 2)), T0, schedule=fifo,
                 advance_clock=True, until=T0 + 600)
    assert [(e.kind, e.workload[1], e.time - T0) for e in r.events] == [
        ("admitted", "a", 0), ("admitted", "b", 0), ("finished", "a", 120), ("admitted", "c", 120)]


def test_preempt_low_priority_admits_high_priority_with_real_scheduler() -> None:
    pytest.importorskip("kueuetop.admission.cycle")
    low = admitted("low", priority=0)
    objs = [flavor("default"), _preempting_cq(), lq(), low, pending("high", priority=100, created=T0 + 5)]
    r = simulate(objs, T0 + 10)
    kinds = [(e.kind, e.workload[1], e.reason) for e in r.events]
    assert ("preempted", "low", "InClusterQueue") in kinds
    assert ("admitted", "high", "") in kinds
    wls = r.workloads()
    assert conds(wls[(NS, "low")])["Requeued"] == ("True", "Preempted")
    assert conds(wls[(NS, "high")])["Admitted"] == ("True", "Admitted")


def _preempting_cq() -> dict:
    c = cq(cpu="1")
    c["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    return c
