"""§6.5/§6.6 fair sharing: DRS values, the admission tournament, preemption strategies."""

from kueuetop.admission.fair_sharing import MAX_INT64, dominant_resource_share
from kueuetop.admission.quota_tree import QuotaStructure, QuotaTree
from kueuetop.kueue.config import FairSharing, KueueConfig
from tests.admission.common import admitted, preempted, run
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
    workload,
)

FS = KueueConfig(fair_sharing=FairSharing())
BASE = [namespace("ns"), flavor("f"), local_queue("ns", "lqa", "a"), local_queue("ns", "lqb", "b")]


def cq(name, cpu, **kw):
    return cluster_queue(name, group("cpu", fq("f", cpu=cpu)), cohort="co", **kw)


def drs_of(weight, used):
    s = snapshot(*BASE, cq("a", "10", weight=weight), cq("b", "10"))
    t = QuotaTree.build(QuotaStructure.build(s.cluster_queues, s.cohorts), {"a": {("f", "cpu"): used}})
    return dominant_resource_share(t, t.cq("a"))


def test_drs_share_values():
    """§6.6 ratio = borrowed*1000/lendable (per-mille); / weight; weight 0 while borrowing = +inf."""
    assert drs_of("1", 15_000).weighted_share == 250  # borrows 5 of 20 lendable
    assert drs_of("2", 15_000).weighted_share == 125
    assert drs_of("0", 15_000).weighted_share == MAX_INT64
    assert drs_of("1", 10_000).weighted_share == 0  # within nominal


def test_tournament_admits_lower_share_first():
    """§6.6 tournament: the CQ with the lower share after admission wins the contested capacity."""
    objs = [*BASE, cq("a", "2"), cq("b", "2"), cq("c", "2"), local_queue("ns", "lqc", "c"),
            admit(workload("ns", "a0", "lqa", {"cpu": "3"}), "a", {"cpu": "f"}),
            workload("ns", "wa", "lqa", {"cpu": "2"}, priority=9),
            workload("ns", "wb", "lqb", {"cpu": "3"}, created=T0 + 9)]
    assert admitted(run(*objs, config=FS)) == {"wb": {"cpu": "f"}}
    assert admitted(run(*objs)) == {"wa": {"cpu": "f"}}  # classical: priority


def fs_preempt(strategies, b_used):
    cfg = KueueConfig(fair_sharing=FairSharing(tuple(strategies)))
    running = [admit(workload("ns", f"b{i}", "lqb", {"cpu": "1"}, created=T0 + i), "b", {"cpu": "f"}, at=T0 + i)
               for i in range(b_used)]
    objs = [*BASE, cq("a", "3", reclaim="Any"), cq("b", "3"),
            admit(workload("ns", "a0", "lqa", {"cpu": "2"}), "a", {"cpu": "f"}), *running,
            workload("ns", "w", "lqa", {"cpu": "1"})]
    return run(*objs, config=cfg)


def test_preempt_within_nominal_reclaims():
    """§6.5 FairSharingPreemptWithinNominal: a preemptor within nominal reclaims → InCohortReclamation."""
    r = fs_preempt(["LessThanOrEqualToFinalShare"], 4)
    assert preempted(r) == {"b3": "InCohortReclamation"}


def test_less_than_or_equal_to_final_share():
    """§6.5 S2-a: preemptor share with the workload ≤ target share after removal."""
    cfg = KueueConfig(fair_sharing=FairSharing(("LessThanOrEqualToFinalShare",)),
                      feature_gates={"FairSharingPreemptWithinNominal": False})
    running = [admit(workload("ns", f"b{i}", "lqb", {"cpu": "2"}, created=T0 + i), "b", {"cpu": "f"}, at=T0 + i)
               for i in range(3)]
    objs = [*BASE, cq("a", "3", reclaim="Any"), cq("b", "3"), cq("c", "3"),
            admit(workload("ns", "a0", "lqa", {"cpu": "3"}), "a", {"cpu": "f"}), *running,
            workload("ns", "w", "lqa", {"cpu": "1"})]
    # a: 3+1 borrows 1 of 9 (111‰); b borrows 3 (333‰), 1 after one removal (111‰): 111 ≤ 111
    assert preempted(run(*objs, config=cfg)) == {"b2": "InCohortFairSharing"}
    objs[-1] = workload("ns", "w", "lqa", {"cpu": "3"})  # a would borrow 3 (333‰) > b's final share
    assert preempted(run(*objs, config=cfg)) == {}


def test_less_than_initial_share_only_and_refusal():
    """§6.5 S2-b: preemptor share with the workload < target share before removal; equal shares
    are refused by S2-a as well."""
    cfg_b = KueueConfig(fair_sharing=FairSharing(("LessThanInitialShare",)),
                        feature_gates={"FairSharingPreemptWithinNominal": False})
    running = [admit(workload("ns", f"b{i}", "lqb", {"cpu": "1"}, created=T0 + i), "b", {"cpu": "f"}, at=T0 + i)
               for i in range(3)]
    objs = [*BASE, cq("a", "2", reclaim="Any"), cq("b", "2"),
            admit(workload("ns", "a0", "lqa", {"cpu": "1"}), "a", {"cpu": "f"}), *running,
            workload("ns", "w", "lqa", {"cpu": "1"})]
    # a: 1+1 = 2 → share 0 < b's 250 → S2-b passes
    assert preempted(run(*objs, config=cfg_b)) == {"b2": "InCohortFairSharing"}
    objs[-1] = workload("ns", "w", "lqa", {"cpu": "2"})
    # a: 1+2 → borrows 1 = 250, b borrows 1 = 250: 250 < 250 fails; S2-a: 250 ≤ 0 fails
    cfg_both = KueueConfig(fair_sharing=FairSharing(), feature_gates={"FairSharingPreemptWithinNominal": False})
    assert preempted(run(*objs, config=cfg_b)) == {}
    assert preempted(run(*objs, config=cfg_both)) == {}
