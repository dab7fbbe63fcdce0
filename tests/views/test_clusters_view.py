"""views.clusters: rows per cluster and MultiKueue placement from plain documents."""

from __future__ import annotations

from typing import Any

from kueuetop.views.clusters import ClusterRead, cluster_rows, explain_placement, placements, render_text


def _wl(name: str, conds: dict[str, str], status: dict[str, Any] | None = None, labels: dict | None = None) -> dict:
    st = dict(status or {})
    st["conditions"] = [{"type": t, "status": "True", "message": m} for t, m in conds.items()]
    return {"metadata": {"namespace": "team-a", "name": name, "labels": labels or {}}, "status": st}


def _mkc(name: str, active: bool, reason: str = "Active") -> dict:
    return {"metadata": {"name": name}, "status": {"conditions": [
        {"type": "Active", "status": "True" if active else "False", "reason": reason, "message": "m"}]}}


def _doc(gpus: int, used: int, states: list[str]) -> dict:
    return {"cluster": {"kueueApi": "v1beta2"}, "nodes": [{"gpus": gpus, "gpusAllocated": used}],
            "workloads": [{"state": s} for s in states]}


def _reads() -> list[ClusterRead]:
    check_ready = {"name": "multikueue", "state": "Ready", "message": 'The workload got reservation on "eu"'}
    check_pending = {"name": "multikueue", "state": "Pending", "message": ""}
    manager = ClusterRead("hub", doc=_doc(0, 0, ["Admitted", "QuotaReserved"]),
                          multikueue_clusters=[_mkc("eu", True), _mkc("us", True), _mkc("asia", False, "ClientConnectionFailed")],
                          workloads=[_wl("a", {"QuotaReserved": "", "Admitted": ""},
                                         {"clusterName": "eu", "admissionChecks": [check_ready]}),
                                     _wl("b", {"QuotaReserved": ""},
                                         {"nominatedClusterNames": ["eu", "us"], "admissionChecks": [check_pending]})],
                          age=1.5)
    eu = ClusterRead("eu", doc=_doc(8, 8, ["Admitted"]), workloads=[
        _wl("a", {"QuotaReserved": "", "Admitted": ""}),
        {"metadata": {"namespace": "team-a", "name": "b"}, "status": {"conditions": [
            {"type": "QuotaReserved", "status": "False", "message": "insufficient unused quota for nvidia.com/gpu\x1b[31m"}]}}])
    us = ClusterRead("us", doc=_doc(4, 0, []), workloads=[])
    asia = ClusterRead("asia", error="Get https://asia: connection refused")
    return [manager, eu, us, asia]


def test_rows_count_each_cluster_and_keep_errors_to_their_row() -> None:
    rows = {r["context"]: r for r in cluster_rows(_reads())}
    assert rows["hub"]["admitted"] == 1 and rows["hub"]["pending"] == 1
    assert rows["hub"]["multiKueueClusters"]["asia"] == {"active": False, "reason": "ClientConnectionFailed",
                                                         "message": "m"}
    assert (rows["eu"]["gpus"], rows["eu"]["gpusAllocated"]) == (8, 8)
    assert rows["asia"]["reachable"] is False and "connection refused" in rows["asia"]["error"]
    assert rows["us"]["reachable"] is True and rows["hub"]["dataAgeSeconds"] == 1.5


def test_placement_says_where_and_why() -> None:
    by_name = {p.name: p for p in placements(_reads())}
    a, b = by_name["a"], by_name["b"]
    assert (a.state, a.cluster) == ("dispatched", "eu")
    assert a.copies == {"eu": "admitted", "us": "no copy", "asia": "unreachable"}
    assert explain_placement(a).startswith('dispatched to eu (admitted there; check Ready: The workload got reservation on "eu")')
    assert b.state == "offered"
    text = explain_placement(b)
    assert text.startswith("offered to eu, us; no worker admitted it yet:")
    assert "eu: pending: insufficient unused quota for nvidia.com/gpu" in text
    assert "\x1b" not in text
    out = render_text(cluster_rows(_reads()), list(by_name.values()))
    assert "\x1b" not in out and "asia" in out and "connection refused" in out
