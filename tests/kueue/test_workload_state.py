"""Workload display state, in the order of reference/kueue.md §4.5."""

import pytest

from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.workload_state import Phase, derive_state
from tests.builders import T0, admit, condition, workload


def wl_with(*conds, active=True, status_extra=None, annotations=None, admitted=None):
    wl = workload("ns", "w", "lq", active=active)
    if admitted is not None:
        wl = admit(wl, "cq", {"cpu": "f"}, admitted=admitted)
    wl["status"]["conditions"] = list(wl["status"].get("conditions", [])) + list(conds)
    wl["status"].update(status_extra or {})
    if annotations:
        wl["metadata"]["annotations"] = annotations
    return parse_object(wl)


CASES = [
    ("Finished=True wins over everything",
     wl_with(condition("Finished", True, "Succeeded", "done"), admitted=True),
     Phase.FINISHED, "finished", "Succeeded"),
    ("Admitted and Evicted → evicting",
     wl_with(condition("Evicted", True, "Preempted", "to make room"), admitted=True),
     Phase.EVICTING, "admitted", "Preempted"),
    ("Admitted → admitted, PodsReady reason shown",
     wl_with(condition("PodsReady", False, "WaitForStart", "not all pods ready"), admitted=True),
     Phase.ADMITTED, "admitted", "WaitForStart"),
    ("QuotaReserved with checks pending → reserved",
     wl_with(admitted=False, status_extra={"admissionChecks": [
         {"name": "dws", "state": "Pending", "message": "ResourcePoolExhausted"}]}),
     Phase.RESERVED, "quotaReserved", "WaitingForAdmissionChecks"),
    ("spec.active=false → inactive with the Evicted reason",
     wl_with(condition("Evicted", True, "Deactivated", "The workload is deactivated"), active=False),
     Phase.INACTIVE, "pending", "Deactivated"),
    ("admission-gated-by annotation → gated",
     wl_with(annotations={"kueue.x-k8s.io/admission-gated-by": "example.com/gate"}),
     Phase.GATED, "pending", "AdmissionGated"),
    ("QuotaReserved=False OnHold → on hold",
     wl_with(condition("QuotaReserved", False, "OnHold", "released by the integration")),
     Phase.ON_HOLD, "pending", "OnHold"),
    ("Requeued=False → blocked with its reason",
     wl_with(condition("Requeued", False, "ClusterQueueStopped", "The ClusterQueue is stopped")),
     Phase.BLOCKED, "pending", "ClusterQueueStopped"),
    ("requeueAt in the future → backoff",
     wl_with(status_extra={"requeueState": {"count": 2, "requeueAt": "2099-01-01T00:00:00Z"}}),
     Phase.BACKOFF, "pending", "Backoff"),
    ("preempted and requeued → pending with the scheduler's reason",
     wl_with(condition("Evicted", True, "Preempted", "x"), condition("Requeued", True, "Preempted", "x"),
             condition("QuotaReserved", False, "Pending", "couldn't assign flavors")),
     Phase.PENDING, "pending", "Pending"),
    ("nothing yet → pending", wl_with(), Phase.PENDING, "pending", ""),
]


@pytest.mark.parametrize(("wl", "phase", "status", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_state_derivation(wl, phase, status, reason):
    st = derive_state(wl, now=T0)
    assert (st.phase, st.kueue_status, st.reason) == (phase, status, reason)


def test_report_state_names():
    assert derive_state(wl_with(active=False)).report_state == "inactive"
    assert derive_state(wl_with(admitted=False)).report_state == "quotaReserved"
    assert derive_state(wl_with(admitted=True)).report_state == "admitted"


def test_backoff_until_is_reported():
    wl = wl_with(status_extra={"requeueState": {"count": 1, "requeueAt": "2099-01-01T00:00:00Z"}})
    assert derive_state(wl, now=T0).until == 4070908800.0
