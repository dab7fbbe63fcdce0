"""Workloads holding quota while an admission check has not passed: no ETA (when a check passes
is not forecast), but `kueuetop forecast` and the detail screen say which check and what it
reported, as Kueue wrote it (control characters cleaned)."""

from __future__ import annotations

from kueuetop.kueue.workload import parse_workload
from kueuetop.views.forecast_report import awaiting_rows, awaits_checks, checks_text
from tests.builders import T0, admit, snapshot, ts, workload

GPU = {"nvidia.com/gpu": "8"}


def _waiting(name: str, checks: list[tuple[str, str, str]], admitted: bool = False) -> dict:
    wl = admit(workload("team-a", name, "lq", GPU), "dws-cq", {"nvidia.com/gpu": "dws"}, at=T0, admitted=admitted)
    wl["status"]["admissionChecks"] = [{"name": n, "state": s, "message": m, "lastTransitionTime": ts(T0)}
                                       for n, s, m in checks]
    return wl


def test_a_reserved_workload_with_a_pending_check_awaits_it() -> None:
    wl = parse_workload(_waiting("w", [("dws-prov", "Pending", "Waiting for resources.\x1b[31m"),
                                       ("budget", "Ready", "")]))
    assert awaits_checks(wl)
    assert checks_text(wl) == "dws-prov Pending: Waiting for resources."  # the escape sequence is dropped
    assert not awaits_checks(parse_workload(_waiting("ready", [("dws-prov", "Ready", "")])))
    assert not awaits_checks(parse_workload(_waiting("admitted", [("dws-prov", "Ready", "")], admitted=True)))
    assert not awaits_checks(parse_workload(workload("team-a", "pending", "lq", GPU)))


def test_rows_name_each_check_not_passed_longest_waiting_first() -> None:
    early = _waiting("early", [("dws-prov", "Retry", "Capacity is not found")])
    late = _waiting("late", [("dws-prov", "Pending", "")])
    for cond in late["status"]["conditions"]:
        cond["lastTransitionTime"] = ts(T0 + 60)
    snap = snapshot(early, late, workload("team-a", "pending", "lq", GPU))
    rows = awaiting_rows(snap, sorted(snap.workloads), T0 + 300)
    assert [(r["name"], r["reservedForSeconds"], r["checks"]) for r in rows] == [
        ("early", 300.0, [{"name": "dws-prov", "state": "Retry", "message": "Capacity is not found"}]),
        ("late", 240.0, [{"name": "dws-prov", "state": "Pending", "message": None}]),
    ]
    assert rows[0]["clusterQueue"] == "dws-cq"
