"""explain(): verdicts and evidence for the ways a workload can wait."""

from __future__ import annotations

from kueuetop.admission.explain import explain
from tests.admission.helpers import check, condition, with_conditions, with_status
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
    ts,
    workload,
)

NS = "team-a"


def base(*wls: dict, cq: dict | None = None, lq_stop: str | None = None, extra: tuple = ()):
    cq = cq or cluster_queue("cq", group("cpu", fq("reserved", cpu="2"), fq("spot", cpu="3")))
    return snapshot(flavor("reserved"), flavor("spot"), cq, local_queue(NS, "lq", "cq", stop_policy=lq_stop),
                    *extra, *wls)


def wl(name: str, cpu: str, **kw) -> dict:
    return workload(NS, name, "lq", {"cpu": cpu}, **kw)


def test_first_flavor_short_second_fits() -> None:
    snap = base(admit(wl("x", "1"), "cq", {"cpu": "reserved"}), wl("w", "3"))
    e = explain(snap, (NS, "w"), T0)
    assert e.blocker == ""
    assert e.verdict == "fits now; next in line at position 1 in cq"
    assert e.assignment is not None and e.assignment.flavor_set() == {"spot"}
    # The evidence still shows why the preferred flavor was passed over.
    assert [(s.flavor, s.more_needed, s.reason) for s in e.shortfalls] == [("reserved", 2000, "ExceedsMaxQuota")]


def test_quota_short_everywhere_names_each_flavor() -> None:
    snap = base(admit(wl("x", "2"), "cq", {"cpu": "reserved"}), admit(wl("y", "2"), "cq", {"cpu": "spot"}),
                wl("w", "2"))
    e = explain(snap, (NS, "w"), T0)
    assert e.verdict == "waiting for quota: cpu in reserved short by 2; cpu in spot short by 1"
    assert [(s.flavor, s.more_needed) for s in e.shortfalls] == [("reserved", 2000), ("spot", 1000)]


def test_more_than_the_maximum_capacity_is_short_of_that_not_of_what_is_free_now() -> None:
    """Asking 6 of a flavor of 3, 2 in use: short by 3 of the maximum, whatever finishes (and
    `kueuetop forecast`, which answers once everything has finished, says the same)."""
    cq = cluster_queue("cq", group("cpu", fq("spot", cpu="3")))
    snap = base(admit(wl("x", "2"), "cq", {"cpu": "spot"}), wl("w", "6"), cq=cq)
    e = explain(snap, (NS, "w"), T0)
    assert e.verdict == "waiting for quota: cpu in spot short by 3 (asks 6, exceeds the maximum capacity 3)"
    assert [(s.more_needed, s.potential) for s in e.shortfalls] == [(5000, 3000)]  # the details: 5 short now


def test_borrowing_limit_in_the_way() -> None:
    cq_a = cluster_queue("cq", group("cpu", fq("reserved", cpu=("1", "1"))), cohort="co")
    cq_b = cluster_queue("other", group("cpu", fq("reserved", cpu="10")), cohort="co")
    snap = base(wl("w", "3"), cq=cq_a, extra=(cq_b,))
    e = explain(snap, (NS, "w"), T0)
    assert e.shortfalls[0].limited_by == "borrowingLimit"
    assert e.verdict == ("waiting for quota: cpu in reserved short by 1 (asks 3, exceeds the maximum capacity 2, "
                         "borrowingLimit 1)")


def test_namespace_selector_mismatch() -> None:
    cq = cluster_queue("cq", group("cpu", fq("reserved", cpu="2")),
                       namespace_selector={"matchLabels": {"team": "b"}})
    snap = base(wl("w", "1"), cq=cq, extra=(namespace(NS, {"team": "a"}),))
    e = explain(snap, (NS, "w"), T0)
    assert e.blocker == "namespace"
    assert e.verdict == "namespace team-a doesn't match ClusterQueue cq's namespaceSelector"


def test_stopped_queues() -> None:
    e = explain(base(wl("w", "1"), lq_stop="Hold"), (NS, "w"), T0)
    assert (e.blocker, e.verdict) == ("local-queue", "LocalQueue team-a/lq is stopped (Hold)")
    cq = cluster_queue("cq", group("cpu", fq("reserved", cpu="2")), stop_policy="HoldAndDrain")
    e2 = explain(base(wl("w", "1"), cq=cq), (NS, "w"), T0)
    assert e2.blocker == "cluster-queue"
    assert e2.verdict.startswith("ClusterQueue cq is inactive (HoldAndDrain): Stopped:")


def test_inactive_workload() -> None:
    e = explain(base(wl("w", "1", active=False)), (NS, "w"), T0)
    assert e.blocker == "inactive"
    assert e.verdict.startswith("held: the workload is deactivated")


def test_backoff_until() -> None:
    w = with_status(wl("w", "1"), requeueState={"count": 2, "requeueAt": ts(T0 + 90)})
    e = explain(base(w), (NS, "w"), T0)
    assert (e.blocker, e.backoff_until, e.verdict) == ("backoff", T0 + 90, "backing off for 1m30s more")
    blocked = with_conditions(w, condition("Requeued", False, "PodsReadyTimeout", "x"))
    e2 = explain(base(blocked), (NS, "w"), T0)
    assert (e2.blocker, e2.verdict) == ("blocked", "blocked: Requeued=False (PodsReadyTimeout) until 1m30s from now")


def test_pending_admission_checks_with_provisioning_message() -> None:
    w = with_status(admit(wl("w", "1"), "cq", {"cpu": "reserved"}, admitted=False),
                    admissionChecks=[check("dws", "Pending", "Waiting for resources. Currently there are not "
                                                             "enough resources available to fulfill the request."),
                                     check("other", "Ready")])
    e = explain(base(w), (NS, "w"), T0)
    assert e.blocker == "checks"
    assert e.verdict == ("quota reserved in cq; waiting for admission checks: dws: Pending (Waiting for resources. "
                         "Currently there are not enough resources available to fulfill the request.)")
    assert [c.state for c in e.checks] == ["Pending", "Ready"]


def test_position_and_workloads_ahead() -> None:
    snap = base(admit(wl("x", "2"), "cq", {"cpu": "reserved"}), admit(wl("y", "3"), "cq", {"cpu": "spot"}),
                wl("hi", "1", priority=10), wl("old", "2", created=T0 - 50), wl("w", "1", created=T0))
    e = explain(snap, (NS, "w"), T0)
    assert (e.position_in_cluster_queue, e.position_in_local_queue) == (2, 2)
    assert [(a.workload[1], a.priority, a.requests) for a in e.ahead] == [("hi", 10, {"cpu": 1000}),
                                                                        ("old", 0, {"cpu": 2000})]


def test_admitted_and_missing() -> None:
    e = explain(base(admit(wl("w", "1"), "cq", {"cpu": "reserved"})), (NS, "w"), T0)
    assert e.verdict == "admitted in ClusterQueue cq"
    assert explain(base(), (NS, "nope"), T0).verdict == "workload not found"


def test_explains_of_one_snapshot_share_one_quota_structure(monkeypatch) -> None:
    """The console explains several workloads of one snapshot in a row with one EngineCache: the
    cohort tree is built once for them (each build is a tree of parent links the collector must
    find), and again only for other ClusterQueue or Cohort mappings."""
    import dataclasses

    from kueuetop.admission.engine_cache import EngineCache
    from kueuetop.admission.quota_tree import QuotaStructure

    builds: list[int] = []
    build = QuotaStructure.build

    def counted(cqs, cohorts):
        builds.append(len(cqs))
        return build(cqs, cohorts)

    monkeypatch.setattr(QuotaStructure, "build", staticmethod(counted))
    snap = base(admit(wl("x", "2"), "cq", {"cpu": "reserved"}), wl("w", "2"), wl("v", "4"))
    cache = EngineCache()
    got = [explain(snap, (NS, name), T0, cache=cache).verdict for name in ("w", "v", "w")]
    assert len(builds) == 1
    # A later snapshot handing the same ClusterQueues and Cohorts (only workloads changed) keeps it.
    later = dataclasses.replace(snap, workloads={k: v for k, v in snap.workloads.items() if k != (NS, "v")})
    explain(later, (NS, "w"), T0, cache=cache)
    assert len(builds) == 1
    moved = dataclasses.replace(snap, cluster_queues=dict(snap.cluster_queues))
    explain(moved, (NS, "w"), T0, cache=cache)
    assert len(builds) == 2
    # Same answers as explain without a cache (which builds its own each time).
    assert got == [explain(snap, (NS, name), T0).verdict for name in ("w", "v", "w")]
    assert len(builds) == 5
