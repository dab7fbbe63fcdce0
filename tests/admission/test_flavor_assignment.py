"""§6.3 flavor assignment: order, resume, eligibility, fitsResourceQuota modes, fungibility."""

import pytest

from kueuetop.admission.queue_state import QueueState
from tests.admission.common import admitted, pending, run
from tests.builders import cluster_queue, flavor, fq, group, local_queue, namespace, pod_set, workload

BASE = [namespace("ns"), local_queue("ns", "lq", "a"), flavor("f1", {"pool": "one"}), flavor("f2", {"pool": "two"})]


def two_flavor_cq(f1="4", f2="4", **kw):
    return cluster_queue("a", group("cpu", fq("f1", cpu=f1), fq("f2", cpu=f2)), **kw)


def test_first_flavor_that_fits_wins():
    """§6.3 flavors are tried in spec order; a flavor that fits without borrowing stops the search."""
    r = run(*BASE, two_flavor_cq(), workload("ns", "w", "lq", {"cpu": "3"}))
    assert admitted(r) == {"w": {"cpu": "f1"}}


def test_second_flavor_when_first_too_small():
    """§6.3 NoFit (ExceedsMaxQuota) in f1 → keep scanning; f2 fits."""
    r = run(*BASE, two_flavor_cq(f1="2", f2="8"), workload("ns", "w", "lq", {"cpu": "5"}))
    assert admitted(r) == {"w": {"cpu": "f2"}}


def test_messages_exceeds_max_quota_and_waiting_for_quota():
    """§6.2 step 6 messages: ExceedsMaxQuota text and "insufficient unused quota …, N more needed"."""
    cq = cluster_queue("a", group("cpu", fq("f1", cpu="4")))
    r = run(*BASE, cq, workload("ns", "w", "lq", {"cpu": "6"}))
    assert pending(r)["w"].message == (
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor f1, previously "
        "considered podsets requests (0) + current podset request (6) > maximum capacity (4)")
    from tests.builders import admit
    r = run(*BASE, cq, admit(workload("ns", "old", "lq", {"cpu": "2"}), "a", {"cpu": "f1"}),
            workload("ns", "w", "lq", {"cpu": "4"}))
    assert pending(r)["w"].message == ("couldn't assign flavors to pod set main: insufficient unused quota "
                                       "for cpu in flavor f1, 2 more needed")


def test_attempts_are_data_for_explain():
    """§6.3 every tried flavor is recorded with requested/available/more-needed."""
    r = run(*BASE, two_flavor_cq(f1="2", f2="3"), workload("ns", "w", "lq", {"cpu": "5"}))
    ps = r.nominations[0].assignment.pod_sets[0]
    by_flavor = {a.flavor: a for a in ps.attempts}
    assert set(by_flavor) == {"f1", "f2"}
    rf = by_flavor["f1"].resources[0]
    assert (rf.requested, rf.available, rf.potential, rf.reason, rf.limited_by) == (
        5000, 2000, 2000, "ExceedsMaxQuota", "nominalQuota")
    assert pending(r)["w"].message.count("insufficient quota") == 2


def test_resource_not_covered():
    """§6.3 a requested resource no group covers: "resource X unavailable in ClusterQueue"."""
    r = run(*BASE, two_flavor_cq(), workload("ns", "w", "lq", {"cpu": "1", "nvidia.com/gpu": "1"}))
    assert pending(r)["w"].message == ("couldn't assign flavors to pod set main: resource nvidia.com/gpu "
                                       "unavailable in ClusterQueue")


def test_resource_group_assigns_one_flavor_to_all_covered_resources():
    """§6.3 one flavor per resource group for every covered resource (cpu+memory together)."""
    cq = cluster_queue("a", group(["cpu", "memory"], fq("f1", cpu="4", memory="1Gi"),
                                  fq("f2", cpu="4", memory="8Gi")))
    r = run(*BASE, cq, workload("ns", "w", "lq", {"cpu": "1", "memory": "2Gi"}))
    assert admitted(r) == {"w": {"cpu": "f2", "memory": "f2"}}


def test_multiple_pod_sets_accumulate_usage():
    """§6.3 val = request + usage of earlier pod sets: the second pod set spills to f2."""
    wl = workload("ns", "w", "lq", pod_sets=[pod_set("driver", 1, {"cpu": "3"}),
                                             pod_set("workers", 1, {"cpu": "3"})])
    r = run(*BASE, two_flavor_cq(), wl)
    (adm,) = [x for x in r.decisions if type(x).__name__ == "Admit"]
    assert {p.name: dict(p.flavors) for p in adm.assignments} == {"driver": {"cpu": "f1"},
                                                                   "workers": {"cpu": "f2"}}


TAINTED = flavor("spot", {"pool": "spot"}, taints=[{"key": "spot", "value": "true", "effect": "NoSchedule"}])


def test_untolerated_taint_skips_flavor():
    """§6.3 eligibility: an untolerated NoSchedule taint makes the flavor ineligible."""
    cq = cluster_queue("a", group("cpu", fq("spot", cpu="4")))
    r = run(*BASE, TAINTED, cq, workload("ns", "w", "lq", {"cpu": "1"}))
    assert pending(r)["w"].message == ("couldn't assign flavors to pod set main: untolerated taint "
                                       "{spot true NoSchedule <nil>} in flavor spot")
    tol = [{"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    r = run(*BASE, TAINTED, cq, workload("ns", "w", "lq", {"cpu": "1"}, tolerations=tol))
    assert admitted(r) == {"w": {"cpu": "spot"}}


@pytest.mark.parametrize(("kw", "want"), [
    ({"node_selector": {"pool": "two"}}, "f2"),
    ({"affinity_terms": [[{"key": "pool", "operator": "NotIn", "values": ["one"]}]]}, "f2"),
    ({"node_selector": {"zone": "z1"}}, "f1"),  # key not defined by the group's flavors: ignored
])
def test_node_selector_and_affinity_eligibility(kw, want):
    """§6.3 eligibility: nodeSelector / required affinity restricted to the group's label keys."""
    r = run(*BASE, two_flavor_cq(), workload("ns", "w", "lq", {"cpu": "1"}, **kw))
    assert admitted(r) == {"w": {"cpu": want}}


def cohort_setup(**cq_kw):
    """a: f1 nominal 2, f2 nominal 4; b lends 4 of f1 to the cohort."""
    return [*BASE,
            cluster_queue("a", group("cpu", fq("f1", cpu="2"), fq("f2", cpu="4")), cohort="co", **cq_kw),
            cluster_queue("b", group("cpu", fq("f1", cpu="4"), fq("f2", cpu="0")), cohort="co")]


def test_when_can_borrow_may_stop_search_borrows_in_first_flavor():
    """§6.3 whenCanBorrow=MayStopSearch: a flavor that fits by borrowing stops the search."""
    r = run(*cohort_setup(), workload("ns", "w", "lq", {"cpu": "3"}))
    assert admitted(r) == {"w": {"cpu": "f1"}}
    assert r.decisions[0].borrowing is True


def test_when_can_borrow_try_next_flavor_skips_a_flavor_that_needs_borrowing():
    """§6.3 whenCanBorrow=TryNextFlavor skips a flavor that needs borrowing when a later one fits."""
    r = run(*cohort_setup(when_can_borrow="TryNextFlavor"), workload("ns", "w", "lq", {"cpu": "3"}))
    assert admitted(r) == {"w": {"cpu": "f2"}}


def preempt_setup(**cq_kw):
    from tests.builders import admit
    return [*BASE, cluster_queue("a", group("cpu", fq("f1", cpu="4"), fq("f2", cpu="4")), cohort="co",
                                 within="LowerPriority", **cq_kw),
            cluster_queue("b", group("cpu", fq("f1", cpu="0"), fq("f2", cpu="4")), cohort="co"),
            local_queue("ns", "lqb", "b"),
            admit(workload("ns", "low", "lq", {"cpu": "4"}, priority=0), "a", {"cpu": "f1"})]


def test_when_can_preempt_try_next_flavor_prefers_borrowing_in_next_flavor():
    """§6.3 whenCanPreempt=TryNextFlavor (default): f1 needs preemption, f2 fits → f2
    (BorrowingOverPreemption: Fit beats Preempt)."""
    r = run(*preempt_setup(), workload("ns", "w", "lq", {"cpu": "4"}, priority=10))
    assert admitted(r) == {"w": {"cpu": "f2"}}


def test_when_can_preempt_may_stop_search_preempts_in_first_flavor():
    """§6.3 whenCanPreempt=MayStopSearch stops at the first flavor where preemption works."""
    r = run(*preempt_setup(when_can_preempt="MayStopSearch"), workload("ns", "w", "lq", {"cpu": "4"}, priority=10))
    assert admitted(r) == {}
    assert pending(r)["w"].preempting == 1


def test_preference_preemption_over_borrowing():
    """§6.3 PreemptionOverBorrowing: Preempt without borrowing beats Fit with borrowing."""
    from tests.builders import admit
    objs = [*BASE,
            cluster_queue("a", group("cpu", fq("f1", cpu="4"), fq("f2", cpu="0")), cohort="co",
                          within="LowerPriority", when_can_borrow="TryNextFlavor",
                          when_can_preempt="TryNextFlavor", preference="PreemptionOverBorrowing"),
            cluster_queue("b", group("cpu", fq("f1", cpu="0"), fq("f2", cpu="8")), cohort="co"),
            admit(workload("ns", "low", "lq", {"cpu": "4"}), "a", {"cpu": "f1"}),
            workload("ns", "w", "lq", {"cpu": "4"}, priority=10)]
    r = run(*objs)
    assert admitted(r) == {} and pending(r)["w"].preempting == 1
    objs[len(BASE)]["spec"]["flavorFungibility"]["preference"] = "BorrowingOverPreemption"
    r = run(*objs)
    assert admitted(r) == {"w": {"cpu": "f2"}}


def test_resume_after_last_tried_flavor():
    """§6.3 LastAssignment: the next attempt starts after the flavor tried last time."""
    from kueuetop.admission.queue_state import LastAssignment, cq_fingerprint, workload_shape
    from tests.builders import snapshot
    objs = [*BASE, two_flavor_cq(), workload("ns", "w", "lq", {"cpu": "1"})]
    s = snapshot(*objs)
    la = LastAssignment(({"cpu": 0},), cq_fingerprint(s.cluster_queues["a"]), workload_shape(s.workloads[("ns", "w")]))
    r = run(*objs, state=QueueState(last_assignments={("ns", "w"): la}))
    assert admitted(r) == {"w": {"cpu": "f2"}}
    stale = LastAssignment(({"cpu": 0},), 123, la.shape)  # CQ changed since: memory dropped
    r = run(*objs, state=QueueState(last_assignments={("ns", "w"): stale}))
    assert admitted(r) == {"w": {"cpu": "f1"}}
