"""§6.1 queue order, queueable workloads, heads, positions and requeue triggers."""

from kueuetop.admission.queue_order import (
    heads,
    pending_workloads,
    position_in_cluster_queue,
    position_in_local_queue,
)
from kueuetop.admission.queue_state import QueueState, changed_cluster_queues
from tests.builders import (
    T0,
    admit,
    cluster_queue,
    condition,
    flavor,
    fq,
    group,
    local_queue,
    namespace,
    snapshot,
    ts,
    workload,
)

BASE = [namespace("ns"), flavor("f"), cluster_queue("a", group("cpu", fq("f", cpu="4")), cohort="co"),
        cluster_queue("b", group("cpu", fq("f", cpu="4")), cohort="co"),
        local_queue("ns", "lq1", "a"), local_queue("ns", "lq2", "a"), local_queue("ns", "lqb", "b")]
NOW = T0 + 100


def names(wls):
    return [w.name for w in wls]


def test_order_priority_then_timestamp_then_uid():
    """§6.1 baseCompareFunc: effective priority desc, queue-order timestamp asc, UID."""
    s = snapshot(*BASE, workload("ns", "c", "lq1", created=T0 + 2), workload("ns", "b", "lq1", created=T0 + 1, uid="2"),
                 workload("ns", "a", "lq2", created=T0 + 1, uid="1"), workload("ns", "p", "lq2", priority=3, created=T0 + 9))
    assert names(pending_workloads(s, QueueState(), "a")) == ["p", "a", "b", "c"]


def test_pods_ready_timeout_eviction_time_orders():
    """§6.1 GetQueueOrderTimestamp: evicted by PodsReadyTimeout → Evicted lastTransitionTime."""
    ev = workload("ns", "ev", "lq1", created=T0)
    ev["status"]["conditions"] = [condition("Evicted", True, "PodsReadyTimeout", "", T0 + 50)]
    s = snapshot(*BASE, ev, workload("ns", "new", "lq1", created=T0 + 10))
    assert names(pending_workloads(s, QueueState(), "a")) == ["new", "ev"]


def test_not_queueable_workloads_are_left_out():
    """§6.1 inactive, gated, OnHold, finished and reserving workloads are not in the queue."""
    gated = workload("ns", "gated", "lq1")
    gated["metadata"]["annotations"] = {"kueue.x-k8s.io/admission-gated-by": "x"}
    hold = workload("ns", "hold", "lq1")
    hold["status"]["conditions"] = [condition("QuotaReserved", False, "OnHold")]
    done = workload("ns", "done", "lq1")
    done["status"]["conditions"] = [condition("Finished", True, "Succeeded")]
    s = snapshot(*BASE, gated, hold, done, workload("ns", "off", "lq1", active=False),
                 admit(workload("ns", "run", "lq1"), "a", {"cpu": "f"}), workload("ns", "ok", "lq1"))
    assert names(pending_workloads(s, QueueState(), "a")) == ["ok"]


def test_backoff_and_requeued_false_are_listed_but_not_heads():
    """§6.1 requeueAt in the future or Requeued=False: parked, not poppable until it's over."""
    back = workload("ns", "back", "lq1", priority=5)
    back["status"]["requeueState"] = {"count": 1, "requeueAt": ts(T0 + 1780)}
    blocked = workload("ns", "blocked", "lqb", priority=5)
    blocked["status"]["conditions"] = [condition("Requeued", False, "ClusterQueueStopped")]
    s = snapshot(*BASE, back, blocked, workload("ns", "next", "lq1"))
    assert names(pending_workloads(s, QueueState(), "a")) == ["back", "next"]
    assert names(heads(s, QueueState(), NOW)) == ["next"]
    assert names(heads(s, QueueState(), T0 + 2000)) == ["back"]


def test_one_head_per_active_cq_and_stopped_cq_skipped():
    """§6.2 Heads(): one per active CQ, inactive CQs skipped."""
    objs = [*BASE, workload("ns", "a1", "lq1"), workload("ns", "a2", "lq1", created=T0 + 1), workload("ns", "b1", "lqb")]
    assert names(heads(snapshot(*objs), QueueState(), NOW)) == ["a1", "b1"]
    objs[3] = cluster_queue("b", group("cpu", fq("f", cpu="4")), cohort="co", stop_policy="Hold")
    assert names(heads(snapshot(*objs), QueueState(), NOW)) == ["a1"]


def test_best_effort_skips_inadmissible_set():
    """§6.1 BestEffortFIFO: the inadmissible set is skipped when picking the head."""
    s = snapshot(*BASE, workload("ns", "a1", "lq1"), workload("ns", "a2", "lq1", created=T0 + 1))
    st = QueueState(inadmissible={"a": {("ns", "a1"): 1}})
    assert names(heads(s, st, NOW)) == ["a2"]
    assert names(heads(s, st.requeue_inadmissible(["a"]), NOW)) == ["a1"]


def test_positions_in_cluster_queue_and_local_queue():
    """Visibility API positions: across the CQ, and among the LocalQueue's own workloads."""
    s = snapshot(*BASE, workload("ns", "x", "lq1"), workload("ns", "y", "lq2", created=T0 + 1),
                 workload("ns", "z", "lq1", created=T0 + 2))
    st = QueueState()
    assert position_in_cluster_queue(s, st, ("ns", "z")) == 2
    assert position_in_local_queue(s, st, ("ns", "z")) == 1
    assert position_in_local_queue(s, st, ("ns", "y")) == 0


def test_changed_cluster_queues_covers_cohort_tree():
    """§6.1 requeue triggers: a finished workload in CQ a requeues every CQ of a's cohort tree."""
    run = admit(workload("ns", "r", "lq1"), "a", {"cpu": "f"})
    prev = snapshot(*BASE, run)
    done = {**run, "status": {**run["status"], "conditions": [*run["status"]["conditions"],
                                                               condition("Finished", True, "Succeeded")]}}
    assert changed_cluster_queues(prev, snapshot(*BASE, done)) == {"a", "b"}
    assert changed_cluster_queues(prev, snapshot(*BASE, run)) == set()


def test_equivalent_workloads_go_inadmissible_with_the_head():
    """§6.1 SchedulingEquivalenceHashing: a BestEffortFIFO head that does not fit parks every
    queued workload of its scheduling shape (priority, pod sets) with it; others stay queued."""
    from kueuetop.admission.cycle import schedule
    from kueuetop.kueue.config import KueueConfig

    objs = [namespace("ns"), flavor("f"), cluster_queue("a", group("cpu", fq("f", cpu="4"))),
            local_queue("ns", "lq1", "a"),
            workload("ns", "big1", "lq1", {"cpu": "8"}, created=T0),
            workload("ns", "big2", "lq1", {"cpu": "8"}, created=T0 + 1),
            workload("ns", "other-prio", "lq1", {"cpu": "8"}, created=T0 + 2, priority=-1),
            workload("ns", "big3", "lq1", {"cpu": "8"}, created=T0 + 3)]
    r = schedule(snapshot(*objs), NOW, QueueState())
    assert [x.workload[1] for x in r.decisions] == ["big1"]  # only the head is written
    assert set(r.state.inadmissible["a"]) == {("ns", "big1"), ("ns", "big2"), ("ns", "big3")}
    assert names(heads(snapshot(*objs), r.state, NOW)) == ["other-prio"]
    off = KueueConfig(feature_gates={"SchedulingEquivalenceHashing": False})
    r = schedule(snapshot(*objs, config=off), NOW, QueueState())
    assert set(r.state.inadmissible["a"]) == {("ns", "big1")}
