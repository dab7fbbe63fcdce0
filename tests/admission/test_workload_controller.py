"""Decision table for Kueue's workload controller rules (workload_controller.reconcile).

Each case names the Kueue rule (pkg/controller/core/workload_controller.go) and lists the exact
decisions expected; timer cases also pin `next_event_at`.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from kueuetop.admission.decisions import (
    Deactivate,
    Evict,
    MarkAdmitted,
    Pending,
    ReleaseReservation,
    Requeue,
    ResetRequeueState,
)
from kueuetop.admission.workload_controller import next_event_at, reconcile, reconcile_keys, requeue_backoff
from kueuetop.kueue.config import KueueConfig, WaitForPodsReady
from tests.admission.helpers import (
    NS,
    T0,
    admitted,
    check,
    condition,
    cq,
    inactive,
    lq,
    pending,
    ts,
    with_conditions,
    with_status,
    world,
)

K = (NS, "a")
NOW = T0 + 1000
WFPR = KueueConfig(wait_for_pods_ready=WaitForPodsReady(timeout_seconds=300, backoff_base_seconds=60,
                                                         backoff_max_seconds=3600))
WFPR_LIMIT = KueueConfig(wait_for_pods_ready=WaitForPodsReady(timeout_seconds=300, backoff_limit_count=2))
WFPR_CAP = KueueConfig(wait_for_pods_ready=WaitForPodsReady(timeout_seconds=300, backoff_base_seconds=60,
                                                             backoff_max_seconds=200))
DT_MAX = condition("DeactivationTarget", True, "MaximumExecutionTimeExceeded", "exceeding the maximum execution time")
EVICTED_PRT = condition("Evicted", True, "PodsReadyTimeout", "Exceeded the PodsReady timeout team-a/a")

CASES = [
    # --- spec.active (§5.1 deactivate / reactivate) -------------------------------------------
    ("deactivated admitted workload is evicted with reason Deactivated",
     dict(wls=[inactive(admitted())]),
     (Evict(K, "Deactivated", "The workload is deactivated"),)),
    ("DeactivationTarget cause is carried into the eviction (DeactivatedDueTo<cause>)",
     dict(wls=[inactive(with_conditions(admitted(), DT_MAX))]),
     (Evict(K, "Deactivated", "The workload is deactivated due to exceeding the maximum execution time",
            underlying_cause="MaximumExecutionTimeExceeded"),)),
    ("deactivating a pending workload still sets Evicted=True Deactivated",
     dict(wls=[inactive(pending())]),
     (Evict(K, "Deactivated", "The workload is deactivated"),)),
    ("inactive and already evicted: the backoff state is dropped",
     dict(wls=[inactive(with_status(with_conditions(pending(), EVICTED_PRT),
                                    requeueState={"count": 2, "requeueAt": ts(NOW + 50)}))]),
     (ResetRequeueState(K),)),
    ("inactive, evicted, no backoff state: nothing to write",
     dict(wls=[inactive(with_conditions(pending(), EVICTED_PRT))]),
     ()),
    ("active workload with DeactivationTarget=True gets spec.active=false",
     dict(wls=[with_conditions(admitted(), condition("DeactivationTarget", True, "RequeuingLimitExceeded",
                                                      "exceeding the maximum number of re-queuing retries"))]),
     (Deactivate(K, "RequeuingLimitExceeded", "exceeding the maximum number of re-queuing retries"),)),
    ("reactivation: Requeued=False Deactivated becomes Requeued=True Reactivated",
     dict(wls=[with_conditions(pending(), condition("Requeued", False, "Deactivated", "The workload is deactivated"))]),
     (Requeue(K, "Reactivated", "The workload was reactivated"),)),
    # --- backoff (§5.2, requeueState) ---------------------------------------------------------
    ("backoff not over: nothing, wake at requeueAt",
     dict(wls=[with_status(with_conditions(pending(), condition("Requeued", False, "PodsReadyTimeout", "x")),
                           requeueState={"count": 1, "requeueAt": ts(NOW + 30)})], wake=NOW + 30),
     ()),
    ("backoff over (requeueAt <= now) on a pending workload: BackoffFinished",
     dict(wls=[with_status(with_conditions(pending(), condition("Requeued", False, "PodsReadyTimeout", "x")),
                           requeueState={"count": 1, "requeueAt": ts(NOW)})]),
     (Requeue(K, "BackoffFinished", "The workload backoff was finished"),)),
    ("Requeued=False AdmissionCheck without requeueAt: BackoffFinished at once",
     dict(wls=[with_conditions(pending(), condition("Requeued", False, "AdmissionCheck", "x"))]),
     (Requeue(K, "BackoffFinished", "The workload backoff was finished"),)),
    # --- stopPolicy (§5.1 hold / drain / resume) ----------------------------------------------
    ("CQ Hold releases a reservation that is not Admitted",
     dict(wls=[with_status(admitted(admitted_=False), admissionChecks=[check("prov", "Pending")])],
          cq=cq(stop="Hold")),
     (ReleaseReservation(K, "Inadmissible", "ClusterQueue cq is stopped"),)),
    ("CQ Hold keeps admitted workloads running",
     dict(wls=[admitted()], cq=cq(stop="Hold")),
     ()),
    ("CQ HoldAndDrain evicts admitted workloads (ClusterQueueStopped)",
     dict(wls=[admitted()], cq=cq(stop="HoldAndDrain")),
     (Evict(K, "ClusterQueueStopped", "The ClusterQueue is stopped"),)),
    ("LQ HoldAndDrain evicts admitted workloads (LocalQueueStopped)",
     dict(wls=[admitted()], lq=lq(stop="HoldAndDrain")),
     (Evict(K, "LocalQueueStopped", "The LocalQueue is stopped"),)),
    ("LQ Hold releases a reservation that is not Admitted",
     dict(wls=[with_status(admitted(admitted_=False), admissionChecks=[check("prov", "Pending")])],
          lq=lq(stop="Hold")),
     (ReleaseReservation(K, "Inadmissible", "LocalQueue lq is stopped"),)),
    ("CQ resumed: Requeued=False ClusterQueueStopped becomes ClusterQueueRestarted",
     dict(wls=[with_conditions(pending(), condition("Requeued", False, "ClusterQueueStopped", "x"))]),
     (Requeue(K, "ClusterQueueRestarted", "The ClusterQueue was restarted after being stopped"),)),
    ("LQ resumed: Requeued=False LocalQueueStopped becomes LocalQueueRestarted",
     dict(wls=[with_conditions(pending(), condition("Requeued", False, "LocalQueueStopped", "x"))]),
     (Requeue(K, "LocalQueueRestarted", "The LocalQueue was restarted after being stopped"),)),
    ("CQ still stopped: a pending workload is marked Inadmissible (legacy reason)",
     dict(wls=[with_conditions(pending(), condition("Requeued", False, "ClusterQueueStopped", "x"))],
          cq=cq(stop="HoldAndDrain")),
     (Pending(K, "Inadmissible", "ClusterQueue cq is inactive", inadmissible=True),)),
    ("missing LocalQueue: Inadmissible with Kueue's message",
     dict(wls=[{**pending(), "spec": {**pending()["spec"], "queueName": "nope"}}]),
     (Pending(K, "Inadmissible", "LocalQueue nope doesn't exist", inadmissible=True),)),
    ("granular reasons (UnadmittedWorkloadsObservability): inactive pending shows Deactivated",
     dict(wls=[inactive(with_conditions(pending(), EVICTED_PRT))],
          config=KueueConfig(feature_gates={"UnadmittedWorkloadsObservability": True})),
     (Pending(K, "Deactivated", "The workload is deactivated", inadmissible=True),)),
    # --- admission checks (§6.7) --------------------------------------------------------------
    ("QuotaReserved and every check Ready: MarkAdmitted",
     dict(wls=[with_status(admitted(admitted_=False), admissionChecks=[check("prov", "Ready")])]),
     (MarkAdmitted(K),)),
    ("a check still Pending: nothing",
     dict(wls=[with_status(admitted(admitted_=False), admissionChecks=[check("prov", "Pending")])]),
     ()),
    ("check in Retry: evicted with reason AdmissionCheck",
     dict(wls=[with_status(admitted(), admissionChecks=[check("prov", "Retry", "capacity")])]),
     (Evict(K, "AdmissionCheck", 'Evicted due to AdmissionCheck in Retry state: "prov" (capacity)'),)),
    ("check in Retry with requeueAfterSeconds: held until the retry time",
     dict(wls=[with_status(admitted(), admissionChecks=[check("prov", "Retry", at=NOW - 10, requeue_after=60)])],
          wake=NOW + 50),
     ()),
    ("check in Retry whose retry time passed: evicted, requeueAt at the retry time",
     dict(wls=[with_status(admitted(), admissionChecks=[check("prov", "Retry", at=NOW - 100, requeue_after=60),
                                                        check("b", "Retry")])]),
     (Evict(K, "AdmissionCheck", 'Evicted due to AdmissionChecks in Retry state: "b"; "prov"',
            requeue_at=NOW - 40),)),
    ("check Rejected: DeactivationTarget AdmissionCheck",
     dict(wls=[with_status(admitted(), admissionChecks=[check("prov", "Rejected", "no capacity")])]),
     (Deactivate(K, "AdmissionCheck", 'AdmissionCheck in Rejected state: "prov" (no capacity)'),)),
    # --- WaitForPodsReady (§6.8) --------------------------------------------------------------
    ("PodsReady timeout not reached: wake at admitted + timeout",
     dict(wls=[admitted(at=NOW - 100)], config=WFPR, wake=NOW + 200),
     ()),
    ("PodsReady timeout exceeded: evict, count 1, requeueAt now+60",
     dict(wls=[admitted(at=NOW - 300)], config=WFPR),
     (Evict(K, "PodsReadyTimeout", "Exceeded the PodsReady timeout team-a/a", underlying_cause="WaitForStart",
            requeue_at=NOW + 60, requeue_count=1),)),
    ("third timeout: backoff base·2^(n−1) = 240s",
     dict(wls=[with_status(admitted(at=NOW - 300), requeueState={"count": 2})], config=WFPR),
     (Evict(K, "PodsReadyTimeout", "Exceeded the PodsReady timeout team-a/a", underlying_cause="WaitForStart",
            requeue_at=NOW + 240, requeue_count=3),)),
    ("backoff capped at backoffMaxSeconds",
     dict(wls=[with_status(admitted(at=NOW - 300), requeueState={"count": 2})], config=WFPR_CAP),
     (Evict(K, "PodsReadyTimeout", "Exceeded the PodsReady timeout team-a/a", underlying_cause="WaitForStart",
            requeue_at=NOW + 200, requeue_count=3),)),
    ("count+1 > backoffLimitCount: deactivate (RequeuingLimitExceeded)",
     dict(wls=[with_status(admitted(at=NOW - 300), requeueState={"count": 2})], config=WFPR_LIMIT),
     (Deactivate(K, "RequeuingLimitExceeded", "exceeding the maximum number of re-queuing retries"),)),
    ("WaitForRecovery past the recovery timeout: cause WaitForRecovery",
     dict(wls=[with_conditions(admitted(at=NOW - 5000),
                               condition("PodsReady", False, "WaitForRecovery", "x", at=NOW - 300))], config=WFPR),
     (Evict(K, "PodsReadyTimeout", "Exceeded the PodsReady timeout team-a/a", underlying_cause="WaitForRecovery",
            requeue_at=NOW + 60, requeue_count=1),)),
    ("PodsReady=True: no timeout",
     dict(wls=[with_conditions(admitted(at=NOW - 5000), condition("PodsReady", True, "Started", "x"))],
          config=WFPR),
     ()),
    ("WaitForPodsReady off: no timeout at all",
     dict(wls=[admitted(at=NOW - 5000)]),
     ()),
    # --- maximumExecutionTimeSeconds (§4.1) ---------------------------------------------------
    ("maximum execution time exceeded: deactivate",
     dict(wls=[{**admitted(at=NOW - 600), "spec": {**admitted()["spec"], "maximumExecutionTimeSeconds": 600}}]),
     (Deactivate(K, "MaximumExecutionTimeExceeded", "exceeding the maximum execution time"),)),
    ("accumulated time counts: wake at admitted + max − accumulated",
     dict(wls=[with_status({**admitted(at=NOW - 100), "spec": {**admitted()["spec"],
                                                               "maximumExecutionTimeSeconds": 600}},
                           accumulatedPastExecutionTimeSeconds=200)], wake=NOW + 300),
     ()),
    ("finished workloads are left alone",
     dict(wls=[inactive(with_conditions(admitted(), condition("Finished", True, "Succeeded", "done")))]),
     ()),
]


@pytest.mark.parametrize(("rule", "case", "expected"), CASES, ids=[c[0] for c in CASES])
def test_reconcile(rule: str, case: dict, expected: tuple) -> None:
    snap = world(*case["wls"], cq_obj=case.get("cq"), lq_obj=case.get("lq"), config=case.get("config"))
    assert reconcile(snap, NOW) == expected
    if "wake" in case:
        assert next_event_at(snap, NOW) == case["wake"]


@pytest.mark.parametrize(("rule", "case", "expected"), CASES, ids=[c[0] for c in CASES])
def test_reconcile_keys_is_reconcile_and_next_event_per_workload(rule: str, case: dict, expected: tuple) -> None:
    snap = world(*case["wls"], cq_obj=case.get("cq"), lq_obj=case.get("lq"), config=case.get("config"))
    keys = [*snap.workloads, ("elsewhere", "gone")]
    decisions, wakes = reconcile_keys(snap, keys, NOW)
    assert decisions == expected == reconcile(snap, NOW)
    assert wakes == {k: next_event_at(replace(snap, workloads={k: wl}), NOW) for k, wl in snap.workloads.items()}


def test_backoff_formula() -> None:
    assert [requeue_backoff(n, 60, 3600) for n in range(1, 8)] == [60, 120, 240, 480, 960, 1920, 3600]
    assert requeue_backoff(0, 60, 3600) == 0


def test_next_event_is_the_earliest_timer() -> None:
    snap = world(admitted("a", at=NOW - 100),
                 with_status(pending("b"), requeueState={"count": 1, "requeueAt": ts(NOW + 20)}),
                 config=WFPR)
    assert next_event_at(snap, NOW) == NOW + 20
    assert next_event_at(world(admitted("a")), NOW) is None
