"""§6.2 one scheduling cycle: heads, nomination, entry order, in-cycle usage, reservations."""

from kueuetop.admission.cq_status import cluster_queue_active, local_queue_active
from kueuetop.admission.cycle import schedule
from kueuetop.kueue.config import KueueConfig, WaitForPodsReady
from tests.admission.common import admits, admitted, pending, run
from tests.builders import (
    T0,
    admission_check,
    admit,
    cluster_queue,
    cohort,
    flavor,
    fq,
    group,
    local_queue,
    namespace,
    snapshot,
    workload,
)

BASE = [namespace("ns"), flavor("f"), local_queue("ns", "lqa", "a"), local_queue("ns", "lqb", "b")]


def cq(name="a", cpu="4", **kw):
    return cluster_queue(name, group("cpu", fq("f", cpu=cpu)), **kw)


def test_one_head_per_cluster_queue_per_cycle():
    """§6.2 Heads(): at most one workload per ClusterQueue per cycle."""
    r = run(*BASE, cq(), workload("ns", "w1", "lqa", {"cpu": "1"}), workload("ns", "w2", "lqa", {"cpu": "1"}, created=T0 + 1))
    assert admitted(r) == {"w1": {"cpu": "f"}} and "w2" not in pending(r)


def test_priority_then_fifo():
    """§6.1 higher priority first, then earlier creation."""
    r = run(*BASE, cq(), workload("ns", "old", "lqa", {"cpu": "1"}),
            workload("ns", "urgent", "lqa", {"cpu": "1"}, priority=5, created=T0 + 9))
    assert list(admitted(r)) == ["urgent"]


def test_strict_fifo_head_blocks_best_effort_does_not():
    """§6.1 StrictFIFO keeps an inadmissible head in front; BestEffortFIFO parks it."""
    wls = [workload("ns", "big", "lqa", {"cpu": "8"}), workload("ns", "small", "lqa", {"cpu": "1"}, created=T0 + 1)]
    for strategy, second in (("StrictFIFO", {}), ("BestEffortFIFO", {"small": {"cpu": "f"}})):
        s = snapshot(*BASE, cq(strategy=strategy), *wls)
        r1 = schedule(s, T0 + 100)
        assert pending(r1)["big"].inadmissible is (strategy == "BestEffortFIFO")
        assert admitted(schedule(s, T0 + 101, r1.state)) == second


def test_requeue_inadmissible_brings_parked_head_back():
    """§6.1 inadmissible workloads return when something changes in the CQ / cohort."""
    s = snapshot(*BASE, cq(), workload("ns", "big", "lqa", {"cpu": "8"}))
    r1 = schedule(s, T0 + 100)
    assert schedule(s, T0 + 101, r1.state).decisions == ()
    r3 = schedule(s, T0 + 102, r1.state.requeue_inadmissible(["a"]))
    assert list(pending(r3)) == ["big"]


def test_entries_ordered_by_borrowing_level():
    """§6.2 step 4 smaller borrowing level first: b's non-borrowing head wins the last capacity
    although a's head is older and higher priority."""
    objs = [*BASE, cq("a", "2", cohort="co"), cq("b", "2", cohort="co"),
            admit(workload("ns", "b0", "lqb", {"cpu": "1"}), "b", {"cpu": "f"}),
            workload("ns", "wa", "lqa", {"cpu": "3"}, priority=9),
            workload("ns", "wb", "lqb", {"cpu": "1"}, created=T0 + 5)]
    r = run(*objs)
    assert admitted(r) == {"wb": {"cpu": "f"}}
    assert pending(r)["wa"].message == "Workload no longer fits after processing another workload"
    assert pending(r)["wa"].inadmissible is False  # failed after nomination: straight back


def test_in_cycle_usage_accumulates():
    """§6.2 step 5 usage accumulates within a cycle: two borrowers, room for one."""
    objs = [*BASE, cq("a", "1", cohort="co"), cq("b", "1", cohort="co"), cq("c", "1", cohort="co"),
            workload("ns", "wa", "lqa", {"cpu": "2"}), workload("ns", "wb", "lqb", {"cpu": "2"}, created=T0 + 1)]
    r = run(*objs)
    assert list(admitted(r)) == ["wa"]
    assert pending(r)["wb"].message == "Workload no longer fits after processing another workload"


def test_preempting_head_without_targets_reserves_capacity():
    """§6.2 a Preempt-mode head with no targets reserves its nominal so a lower-priority head of a
    sibling CQ can't borrow it this cycle (reclaimWithinCohort≠Any)."""
    objs = [*BASE, cq("a", "4", cohort="co", reclaim="LowerPriority", within="LowerPriority"),
            cq("b", "0", cohort="co"),
            admit(workload("ns", "a1", "lqa", {"cpu": "2"}, priority=9), "a", {"cpu": "f"}),
            workload("ns", "wa", "lqa", {"cpu": "4"}, priority=5),
            workload("ns", "wb", "lqb", {"cpu": "2"}, priority=0, created=T0 - 50)]
    r = run(*objs)
    assert admitted(r) == {}
    assert pending(r)["wb"].message == "Workload no longer fits after processing another workload"
    objs[4]["spec"]["preemption"]["reclaimWithinCohort"] = "Any"  # can always reclaim: no hold
    assert admitted(run(*objs)) == {"wb": {"cpu": "f"}}


def test_preemptor_becomes_sticky_head():
    """§6.1 BestEffortFIFO: a head that issued preemptions stays head next cycle."""
    objs = [*BASE, cq(within="LowerPriority"),
            admit(workload("ns", "low", "lqa", {"cpu": "4"}), "a", {"cpu": "f"}),
            workload("ns", "hi", "lqa", {"cpu": "4"}, priority=5),
            workload("ns", "hi2", "lqa", {"cpu": "4"}, priority=7, created=T0 + 90)]
    s = snapshot(*objs[:-1])
    r = schedule(s, T0 + 100)
    assert r.state.sticky == {"a": ("ns", "hi")}
    r2 = schedule(snapshot(*objs), T0 + 101, r.state)
    assert [p.workload[1] for p in r2.decisions if type(p).__name__ == "Pending"] == ["hi"]


def test_inactive_cluster_queues_get_no_heads():
    """§2.2 missing flavor / missing check / stopped CQ → Active=False and nothing admitted."""
    cases = [
        (cluster_queue("a", group("cpu", fq("nope", cpu="4"))), "FlavorNotFound",
         "Can't admit new workloads: references missing ResourceFlavor(s): [nope]"),
        (cq(checks=["prov"]), "AdmissionCheckNotFound",
         "Can't admit new workloads: references missing AdmissionCheck(s): [prov]"),
        (cq(stop_policy="Hold"), "Stopped", "Can't admit new workloads: is stopped"),
    ]
    for spec, reason, message in cases:
        s = snapshot(*BASE, spec, workload("ns", "w", "lqa", {"cpu": "1"}))
        st = cluster_queue_active(s, "a")
        assert (st.active, st.reason, st.message) == (False, reason, message)
        assert schedule(s, T0 + 100).decisions == ()
        assert local_queue_active(s, ("ns", "lqa")).reason == "ClusterQueueIsInactive"


def test_inactive_admission_check():
    """§2.2 AdmissionCheckInactive when a referenced check is not Active."""
    s = snapshot(*BASE, cq(checks=["prov"]), admission_check("prov", active=False))
    assert cluster_queue_active(s, "a").reason == "AdmissionCheckInactive"


def test_namespace_selector_mismatch():
    """§6.2 nominate: namespace not matched → Pending, parked even for StrictFIFO."""
    r = run(*BASE, cq(strategy="StrictFIFO", namespace_selector={"matchLabels": {"team": "x"}}),
            workload("ns", "w", "lqa", {"cpu": "1"}))
    p = pending(r)["w"]
    assert (p.reason, p.message, p.inadmissible) == (
        "Pending", "Workload namespace doesn't match ClusterQueue selector", True)


def test_admission_checks_on_flavors():
    """§6.7 Admit carries the CQ's checks that apply to the assigned flavors (onFlavors)."""
    objs = [*BASE, flavor("g"), admission_check("prov"), admission_check("other"),
            cluster_queue("a", group("cpu", fq("f", cpu="1"), fq("g", cpu="4")),
                          checks=[{"name": "prov", "onFlavors": ["g"]}, {"name": "other", "onFlavors": ["f"]}])]
    a = admits(run(*objs, workload("ns", "w", "lqa", {"cpu": "2"})))["w"]
    assert a.checks == ("prov",) and not a.admitted
    a = admits(run(*objs[:-1], cq(), workload("ns", "w", "lqa", {"cpu": "2"})))["w"]
    assert a.checks == () and a.admitted


def test_partial_admission_binary_search():
    """§6.2 partial admission: the largest count between minCount and count that fits."""
    r = run(*BASE, cq("a", "6"), workload("ns", "w", "lqa", {"cpu": "1"}, count=10, min_count=2))
    (psa,) = admits(r)["w"].assignments
    assert psa.count == 6 and psa.resource_usage == {"cpu": 6000}
    off = KueueConfig(partial_admission=False)
    assert admitted(run(*BASE, cq("a", "6"), workload("ns", "w", "lqa", {"cpu": "1"}, count=10, min_count=2),
                        config=off)) == {}


def test_wait_for_pods_ready_blocks_admission():
    """§6.8 blockAdmission: a fitting head waits while an admitted workload is not PodsReady."""
    cfg = KueueConfig(wait_for_pods_ready=WaitForPodsReady(block_admission=True))
    objs = [*BASE, cq(), admit(workload("ns", "run", "lqa", {"cpu": "1"}), "a", {"cpu": "f"}),
            workload("ns", "w", "lqa", {"cpu": "1"})]
    p = pending(run(*objs, config=cfg))["w"]
    assert (p.reason, p.message) == ("Waiting", "waiting for all admitted workloads to be in PodsReady condition")
    assert admitted(run(*objs)) == {"w": {"cpu": "f"}}


def test_hierarchical_cohort_quota_pool():
    """§2.3 a Cohort's nominalQuota is a shared pool: a CQ with 0 nominal borrows from it."""
    objs = [*BASE, cohort("pool", group("cpu", fq("f", cpu="3"))), cq("a", "0", cohort="pool")]
    assert admitted(run(*objs, workload("ns", "w", "lqa", {"cpu": "3"}))) == {"w": {"cpu": "f"}}
    assert admitted(run(*objs, workload("ns", "w", "lqa", {"cpu": "4"}))) == {}


def test_borrowing_limit_respected():
    """§2.1 borrowingLimit: max borrow above nominal."""
    objs = [*BASE, cluster_queue("a", group("cpu", fq("f", cpu=("2", "1"))), cohort="co"), cq("b", "8", cohort="co")]
    assert admitted(run(*objs, workload("ns", "w", "lqa", {"cpu": "3"}))) == {"w": {"cpu": "f"}}
    p = pending(run(*objs, workload("ns", "w", "lqa", {"cpu": "4"})))["w"]
    assert "maximum capacity (3)" in p.message


def test_granular_reasons_gate():
    """§4.3 UnadmittedWorkloadsObservability: granular QuotaReserved reasons instead of Pending."""
    cfg = KueueConfig(feature_gates={"UnadmittedWorkloadsObservability": True})
    p = pending(run(*BASE, cq(), workload("ns", "w", "lqa", {"cpu": "8"}), config=cfg))["w"]
    assert p.reason == "ExceedsMaxQuota"
    p = pending(run(*BASE, cq(), workload("ns", "w", "lqa", {"cpu": "1"}, node_selector={}),
                    workload("ns", "x", "lqa", {"gpu": "1"}, created=T0 - 1), config=cfg))["x"]
    assert p.reason == "NoMatchingFlavor"
