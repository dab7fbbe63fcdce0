"""What Kueue writes into Workload / ClusterQueue / LocalQueue status for each decision (kueue.md §4.3, §5.2)."""

from __future__ import annotations

from kueuetop.admission.decisions import (
    Admit,
    Deactivate,
    Evict,
    MarkAdmitted,
    Pending,
    Preempt,
    ReleaseReservation,
    Requeue,
    ResetRequeueState,
)
from kueuetop.admission.status_updates import (
    apply_decision,
    cluster_queue_status,
    decision_events,
    local_queue_status,
    release_quota,
)
from kueuetop.kueue.workload import PodSetAssignment
from tests.admission.helpers import (
    NS,
    T0,
    admitted,
    check,
    condition,
    cq,
    pending,
    ts,
    with_conditions,
    with_status,
    world,
)

K = (NS, "a")
NOW = T0 + 100


def cond(wl: dict, type_: str) -> dict:
    return next(c for c in wl["status"]["conditions"] if c["type"] == type_)


def brief(wl: dict, type_: str) -> tuple:
    c = cond(wl, type_)
    return c["status"], c["reason"], c["message"]


def test_deactivated_eviction_resets_checks_and_counts() -> None:
    wl = with_status(admitted(), admissionChecks=[check("prov", "Ready")], requeueState={"count": 1},
                     clusterName="worker-1")
    out = apply_decision(wl, Evict(K, "Deactivated", "The workload is deactivated"), NOW)
    assert cond(out, "Evicted") == {"type": "Evicted", "status": "True", "observedGeneration": 1,
                                    "lastTransitionTime": ts(NOW), "reason": "Deactivated",
                                    "message": "The workload is deactivated"}
    assert out["status"]["admissionChecks"] == [{
        "name": "prov", "state": "Pending", "lastTransitionTime": ts(NOW),
        "message": "Reset to Pending after eviction. Previously: Ready"}]
    assert out["status"]["schedulingStats"] == {"evictions": [
        {"reason": "Deactivated", "underlyingCause": "", "count": 1}]}
    assert "requeueState" not in out["status"]
    assert "clusterName" not in out["status"]
    assert out["status"]["admission"] == wl["status"]["admission"]  # quota held until the job stops
    assert wl["status"]["admissionChecks"][0]["state"] == "Ready"  # input untouched


def test_deactivation_cause_reason_and_counter() -> None:
    wl = with_conditions(admitted(), condition("DeactivationTarget", True, "RequeuingLimitExceeded", "x"))
    out = apply_decision(wl, Evict(K, "Deactivated", "The workload is deactivated due to x",
                                   underlying_cause="RequeuingLimitExceeded"), NOW)
    assert brief(out, "Evicted") == ("True", "DeactivatedDueToRequeuingLimitExceeded",
                                     "The workload is deactivated due to x")
    assert out["status"]["schedulingStats"]["evictions"] == [
        {"reason": "Deactivated", "underlyingCause": "RequeuingLimitExceeded", "count": 1}]
    assert all(c["type"] != "DeactivationTarget" for c in out["status"].get("conditions", []))
    events = decision_events(wl, out, Evict(K, "Deactivated", "m", underlying_cause="RequeuingLimitExceeded"), NOW)
    assert [(e["type"], e["reason"]) for e in events] == [("Normal", "EvictedDueToDeactivatedDueToRequeuingLimitExceeded")]


def test_pods_ready_timeout_backoff_state_and_counter_increment() -> None:
    wl = with_status(admitted(), requeueState={"count": 1},
                     schedulingStats={"evictions": [{"reason": "PodsReadyTimeout", "underlyingCause": "WaitForStart",
                                                     "count": 1}]})
    d = Evict(K, "PodsReadyTimeout", "Exceeded the PodsReady timeout team-a/a", underlying_cause="WaitForStart",
              requeue_at=NOW + 120.5, requeue_count=2)
    out = apply_decision(wl, d, NOW)
    assert out["status"]["requeueState"] == {"count": 2, "requeueAt": ts(NOW + 120)}
    assert out["status"]["schedulingStats"]["evictions"] == [
        {"reason": "PodsReadyTimeout", "underlyingCause": "WaitForStart", "count": 2}]
    rel = release_quota(out, NOW + 5)
    assert brief(rel, "Requeued") == ("False", "PodsReadyTimeout", "Exceeded the PodsReady timeout team-a/a")


def test_retry_check_reset_increments_retry_count() -> None:
    wl = with_status(admitted(), admissionChecks=[check("a", "Pending"), check("prov", "Retry", "later",
                                                                               requeue_after=60, retry_count=1)])
    out = apply_decision(wl, Evict(K, "AdmissionCheck", "Evicted due to …"), NOW)
    assert out["status"]["admissionChecks"][0] == wl["status"]["admissionChecks"][0]  # Pending untouched
    assert out["status"]["admissionChecks"][1] == {
        "name": "prov", "state": "Pending", "lastTransitionTime": ts(NOW),
        "message": "Reset to Pending after eviction. Previously: Retry", "requeueAfterSeconds": 60, "retryCount": 2}


def test_preemption_then_release_requeues() -> None:
    wl = admitted(at=T0)
    d = Preempt(K, (NS, "hi"), "InClusterQueue", "Preempted to accommodate a workload (UID: u) due to x")
    out = apply_decision(wl, d, NOW)
    assert cond(out, "Preempted") == {"type": "Preempted", "status": "True", "lastTransitionTime": ts(NOW),
                                      "reason": "InClusterQueue", "message": d.message}
    assert brief(out, "Evicted") == ("True", "Preempted", d.message)
    assert apply_decision(out, d, NOW + 1) == out  # already evicted: preemption under way
    rel = release_quota(out, NOW + 10)
    assert brief(rel, "Requeued") == ("True", "Preempted", d.message)
    assert brief(rel, "QuotaReserved") == ("False", "Pending", d.message)
    assert brief(rel, "Admitted") == ("False", "NoReservation", "The workload has no reservation")
    assert "admission" not in rel["status"]
    assert rel["status"]["accumulatedPastExecutionTimeSeconds"] == 110
    assert release_quota(rel, NOW + 20) == rel  # nothing left to release
    events = decision_events(wl, out, d, NOW, preemptor=pending("hi", priority=10))
    assert [e["reason"] for e in events] == ["EvictedDueToPreempted", "Preempted", "PreemptedWorkload"]
    assert events[1]["message"].endswith("preemptor effective priority: 10 (base: 10, boost: 0); "
                                         "preemptee effective priority: 0 (base: 0, boost: 0)")
    assert events[2]["involvedObject"]["name"] == "hi"


def test_release_after_stop_policy_eviction_is_not_requeued() -> None:
    out = apply_decision(admitted(), Evict(K, "ClusterQueueStopped", "The ClusterQueue is stopped"), NOW)
    rel = release_quota(out, NOW)
    assert brief(rel, "Requeued") == ("False", "ClusterQueueStopped", "The ClusterQueue is stopped")


def test_admit_resets_evicted_and_preempted_and_clears_requests() -> None:
    wl = with_status(with_conditions(pending(), condition("Evicted", True, "Preempted", "old", at=T0),
                                     condition("Preempted", True, "InClusterQueue", "old", at=T0)),
                     resourceRequests=[{"name": "main", "resources": {"cpu": "1"}}])
    d = Admit(K, "cq", (PodSetAssignment("main", {"cpu": "default"}, {"cpu": 1000}, 1),))
    out = apply_decision(wl, d, NOW)
    assert out["status"]["admission"] == {"clusterQueue": "cq", "podSetAssignments": [
        {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}, "count": 1}]}
    assert brief(out, "QuotaReserved") == ("True", "QuotaReserved", "Quota reserved in ClusterQueue cq")
    assert brief(out, "Admitted") == ("True", "Admitted", "The workload is admitted")
    assert brief(out, "Evicted") == ("False", "QuotaReserved", "Previously: old")
    assert cond(out, "Evicted")["lastTransitionTime"] == ts(NOW)
    assert brief(out, "Preempted") == ("False", "QuotaReserved", "Previously: old")
    assert "resourceRequests" not in out["status"]
    events = decision_events(wl, out, d, NOW)
    assert [(e["reason"], e["message"]) for e in events] == [
        ("QuotaReserved", "Quota reserved in ClusterQueue cq, wait time since queued was 100s"),
        ("Admitted", "Admitted by ClusterQueue cq, wait time since reservation was 0s")]


def test_admit_with_checks_syncs_pending_checks_and_waits() -> None:
    d = Admit(K, "cq", (PodSetAssignment("main", {"cpu": "default"}, {"cpu": 1000}, 1),), checks=("z", "prov"))
    out = apply_decision(pending(), d, NOW)
    assert out["status"]["admissionChecks"] == [
        {"name": "prov", "state": "Pending", "lastTransitionTime": ts(NOW), "message": ""},
        {"name": "z", "state": "Pending", "lastTransitionTime": ts(NOW), "message": ""}]
    assert all(c["type"] != "Admitted" for c in out["status"]["conditions"])  # legacy: not written yet
    ready = with_status(out, admissionChecks=[check("prov", "Ready"), check("z", "Ready")])
    done = apply_decision(ready, MarkAdmitted(K), NOW + 30)
    assert brief(done, "Admitted") == ("True", "Admitted", "The workload is admitted")
    events = decision_events(ready, done, MarkAdmitted(K), NOW + 30)
    assert events[0]["message"] == "Admitted by ClusterQueue cq, wait time since reservation was 30s"


def test_condition_time_moves_only_when_status_flips() -> None:
    wl = apply_decision(admitted(), Evict(K, "ClusterQueueStopped", "a"), NOW)
    again = apply_decision(wl, Evict(K, "Deactivated", "b"), NOW + 50)
    assert cond(again, "Evicted")["lastTransitionTime"] == ts(NOW)
    assert brief(again, "Evicted") == ("True", "Deactivated", "b")


def test_deactivate_sets_target_and_spec_active() -> None:
    wl = with_status(admitted(), accumulatedPastExecutionTimeSeconds=30)
    out = apply_decision(wl, Deactivate(K, "MaximumExecutionTimeExceeded", "exceeding the maximum execution time"), NOW)
    assert out["spec"]["active"] is False
    assert brief(out, "DeactivationTarget") == ("True", "MaximumExecutionTimeExceeded",
                                                "exceeding the maximum execution time")
    assert "accumulatedPastExecutionTimeSeconds" not in out["status"]
    wl2 = {**wl, "spec": {**wl["spec"], "maximumExecutionTimeSeconds": 60}}
    events = decision_events(wl2, out, Deactivate(K, "MaximumExecutionTimeExceeded", "x"), NOW)
    assert [(e["type"], e["reason"], e["message"]) for e in events] == [
        ("Warning", "MaximumExecutionTimeExceeded", "The maximum execution time (60s) exceeded")]


def test_backoff_finished_clears_requeue_at_keeps_count() -> None:
    wl = with_status(with_conditions(pending(), condition("Requeued", False, "PodsReadyTimeout", "x")),
                     requeueState={"count": 3, "requeueAt": ts(NOW)})
    out = apply_decision(wl, Requeue(K, "BackoffFinished", "The workload backoff was finished"), NOW)
    assert out["status"]["requeueState"] == {"count": 3}
    assert brief(out, "Requeued") == ("True", "BackoffFinished", "The workload backoff was finished")
    stopped = with_status(with_conditions(pending(), condition("Requeued", False, "ClusterQueueStopped", "x")),
                          requeueState={"requeueAt": ts(NOW)})
    out2 = apply_decision(stopped, Requeue(K, "BackoffFinished", "The workload backoff was finished"), NOW)
    assert "requeueState" not in out2["status"]
    assert brief(out2, "Requeued") == ("False", "ClusterQueueStopped", "x")


def test_reset_requeue_state_and_reactivation() -> None:
    wl = with_status(with_conditions(pending(), condition("DeactivationTarget", True, "X", "y")),
                     requeueState={"count": 3, "requeueAt": ts(NOW + 99)})
    out = apply_decision(wl, ResetRequeueState(K), NOW)
    assert "requeueState" not in out["status"]
    assert all(c["type"] != "DeactivationTarget" for c in out["status"].get("conditions", []))
    re = apply_decision(out, Requeue(K, "Reactivated", "The workload was reactivated"), NOW)
    assert brief(re, "Requeued") == ("True", "Reactivated", "The workload was reactivated")


def test_pending_and_release_reservation() -> None:
    out = apply_decision(pending(), Pending(K, "Pending", "couldn't assign flavors to pod set main"), NOW)
    assert brief(out, "QuotaReserved") == ("False", "Pending", "couldn't assign flavors to pod set main")
    assert out["status"]["resourceRequests"] == [{"name": "main", "resources": {"cpu": "1"}}]
    held = apply_decision(with_status(admitted(admitted_=False), admissionChecks=[check("prov", "Pending")]),
                          ReleaseReservation(K, "Inadmissible", "ClusterQueue cq is stopped"), NOW)
    assert "admission" not in held["status"]
    assert brief(held, "QuotaReserved") == ("False", "Inadmissible", "ClusterQueue cq is stopped")
    assert all(c["type"] != "Requeued" for c in held["status"]["conditions"])


def test_cluster_queue_and_local_queue_status() -> None:
    snap = world(admitted("a"), admitted("b", admitted_=False), pending("c"), pending("d", active=False),
                 cq_obj=cq(cpu="1"))
    st = cluster_queue_status(snap, "cq", NOW)
    assert st["conditions"] == [{"type": "Active", "status": "True", "lastTransitionTime": ts(NOW),
                                 "reason": "Ready", "message": "Can admit new workloads"}]
    assert st["flavorsReservation"] == [{"name": "default", "resources": [
        {"name": "cpu", "total": "2", "borrowed": "1"}]}]
    assert st["flavorsUsage"] == [{"name": "default", "resources": [{"name": "cpu", "total": "1", "borrowed": "0"}]}]
    assert (st["pendingWorkloads"], st["reservingWorkloads"], st["admittedWorkloads"]) == (1, 2, 1)
    lst = local_queue_status(snap, (NS, "lq"), NOW)
    assert lst["flavorsUsage"] == [{"name": "default", "resources": [{"name": "cpu", "total": "1"}]}]
    assert brief({"status": lst}, "Active") == ("True", "Ready", "Can submit new workloads to localQueue")
    stopped = world(admitted("a"), cq_obj=cq(stop="Hold"))
    st2 = cluster_queue_status(stopped, "cq", NOW + 5, previous=st)
    assert st2["conditions"][0]["status"] == "False" and st2["conditions"][0]["reason"] == "Stopped"
    assert st2["conditions"][0]["lastTransitionTime"] == ts(NOW + 5)
