"""§6.5 classical preemption: policies, candidate ordering, fill-back minimality, reasons, messages."""

from kueuetop.admission import decisions as d
from tests.admission.common import admitted, pending, preempted, run
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
    workload,
)

BASE = [namespace("ns"), flavor("f"), local_queue("ns", "lqa", "a"), local_queue("ns", "lqb", "b")]


def running(name, cq, cpu, priority=0, at=T0, lq=None):
    return admit(workload("ns", name, lq or ("lqa" if cq == "a" else "lqb"), {"cpu": cpu}, priority=priority,
                          created=at), cq, {"cpu": "f"}, at=at)


def solo(**kw):
    return cluster_queue("a", group("cpu", fq("f", cpu="4")), **kw)


def test_within_cq_lower_priority_preempts_with_kueue_message():
    """§6.5 withinClusterQueue=LowerPriority: evict a lower-priority workload, reason InClusterQueue,
    message "Preempted to accommodate a workload (UID: …, JobUID: …) due to …"."""
    r = run(*BASE, solo(within="LowerPriority"), running("low", "a", "4", 1),
            workload("ns", "hi", "lqa", {"cpu": "4"}, priority=5))
    (p,) = [x for x in r.decisions if isinstance(x, d.Preempt)]
    assert (p.victim, p.preemptor, p.reason) == (("ns", "low"), ("ns", "hi"), "InClusterQueue")
    assert p.message == ("Preempted to accommodate a workload (UID: uid-ns-hi, JobUID: UNKNOWN) due to "
                         "prioritization in the ClusterQueue")
    pe = pending(r)["hi"]
    assert pe.preempting == 1 and pe.message.endswith(". Pending the preemption of 1 workload(s)")


def test_within_cq_lower_priority_spares_equal_priority():
    """§6.5 LowerPriority = strictly lower: an equal-priority workload is not a candidate."""
    r = run(*BASE, solo(within="LowerPriority"), running("same", "a", "4", 5),
            workload("ns", "w", "lqa", {"cpu": "4"}, priority=5, created=T0 + 5))
    assert preempted(r) == {} and pending(r)["w"].preempting == 0


def test_lower_or_newer_equal_priority_evicts_newer_equal():
    """§6.5 LowerOrNewerEqualPriority: an equal-priority candidate with a later timestamp."""
    r = run(*BASE, solo(within="LowerOrNewerEqualPriority"), running("newer", "a", "4", 5, at=T0 + 50),
            workload("ns", "older", "lqa", {"cpu": "4"}, priority=5, created=T0))
    assert preempted(r) == {"newer": "InClusterQueue"}
    r = run(*BASE, solo(within="LowerOrNewerEqualPriority"), running("older", "a", "4", 5, at=T0),
            workload("ns", "w", "lqa", {"cpu": "4"}, priority=5, created=T0 + 50))
    assert preempted(r) == {}


def cohort(a_kw=None, b_kw=None):
    return [cluster_queue("a", group("cpu", fq("f", cpu="4")), cohort="co", **(a_kw or {})),
            cluster_queue("b", group("cpu", fq("f", cpu="4")), cohort="co", **(b_kw or {}))]


def test_reclaim_within_cohort_lower_priority():
    """§6.5 reclaimWithinCohort=LowerPriority: reclaim nominal quota from a borrowing CQ."""
    r = run(*BASE, *cohort({"reclaim": "LowerPriority"}), running("b1", "b", "4"), running("b2", "b", "4"),
            workload("ns", "w", "lqa", {"cpu": "4"}, priority=1))
    assert preempted(r) == {"b2": "InCohortReclamation"} or preempted(r) == {"b1": "InCohortReclamation"}


def test_reclaim_lower_priority_spares_higher_priority_borrower():
    """§6.5 LowerPriority reclaim never evicts a higher-priority borrower; Any does."""
    objs = [*BASE, running("b1", "b", "4", 9), running("b2", "b", "4", 9, at=T0 + 1),
            workload("ns", "w", "lqa", {"cpu": "4"}, priority=1)]
    assert preempted(run(*cohort({"reclaim": "LowerPriority"}), *objs)) == {}
    # most recently quota-reserved first
    assert preempted(run(*cohort({"reclaim": "Any"}), *objs)) == {"b2": "InCohortReclamation"}


def test_no_reclaim_from_cq_within_nominal():
    """§6.5 cross-CQ candidates only from CQs above nominal on the contested resources."""
    r = run(*BASE, *cohort({"reclaim": "Any"}), running("b1", "b", "4"), running("a1", "a", "4"),
            workload("ns", "w", "lqa", {"cpu": "4"}, priority=1))
    assert preempted(r) == {}


def borrow_setup(threshold, victim_prio):
    a = {"reclaim": "LowerPriority", "borrow_within": "LowerPriority", "max_priority_threshold": threshold}
    return [*BASE, *cohort(a), running("a1", "a", "2", 0),
            running("b1", "b", "2", victim_prio), running("b2", "b", "4", victim_prio, at=T0 + 1),
            workload("ns", "w", "lqa", {"cpu": "4"}, priority=10)]


def test_borrow_within_cohort_under_threshold():
    """§6.5 borrowWithinCohort=LowerPriority: evict a borrower with priority ≤ maxPriorityThreshold
    even though the preemptor will borrow → InCohortReclaimWhileBorrowing."""
    r = run(*borrow_setup(threshold=3, victim_prio=3))
    assert preempted(r) == {"b2": "InCohortReclaimWhileBorrowing"}


def test_borrow_within_cohort_above_threshold():
    """§6.5 maxPriorityThreshold: a candidate above it can't be preempted while borrowing."""
    r = run(*borrow_setup(threshold=3, victim_prio=4))
    assert preempted(r) == {}


def test_fill_back_keeps_target_set_minimal():
    """§6.5 candidates are removed lowest priority first until it fits, then filled back in reverse:
    the 1-cpu lowest-priority workload is not needed once the 3-cpu one is gone."""
    r = run(*BASE, solo(within="LowerPriority"), running("tiny", "a", "1", 0), running("big", "a", "3", 1),
            workload("ns", "w", "lqa", {"cpu": "3"}, priority=5))
    assert preempted(r) == {"big": "InClusterQueue"}


def test_candidates_from_other_cqs_before_own():
    """§6.5 CandidatesOrdering: workloads of other CQs first, then own CQ; without
    borrowWithinCohort the preemptor must end within nominal, so its own workload goes too."""
    r = run(*BASE, *cohort({"reclaim": "Any", "within": "LowerPriority"}), running("own", "a", "2", 0),
            running("b1", "b", "4", 5), running("b2", "b", "2", 5, at=T0 + 1),
            workload("ns", "w", "lqa", {"cpu": "4"}, priority=9))
    assert preempted(r) == {"b2": "InCohortReclamation", "own": "InClusterQueue"}
    assert [x.victim[1] for x in r.decisions if isinstance(x, d.Preempt)] == ["b2", "own"]


def test_already_evicted_victim_is_counted_not_resent():
    """§6.2 an already-evicted target counts as pending preemption without a new Preempt."""
    victim = running("low", "a", "4", 0)
    victim["status"]["conditions"].append(condition("Evicted", True, "Preempted", "x", T0 + 50))
    r = run(*BASE, solo(within="LowerPriority"), victim, workload("ns", "hi", "lqa", {"cpu": "4"}, priority=5))
    assert preempted(r) == {}
    assert pending(r)["hi"].preempting == 1


def test_hierarchical_advantage_reclaims_regardless_of_borrow_policy():
    """§6.5 hierarchical advantage: a CQ reclaiming quota of its own subtree uses InCohortReclamation
    even with borrowWithinCohort=Never and the candidate elsewhere in the tree."""
    from tests.builders import cohort as cohort_obj
    objs = [*BASE, cohort_obj("root"), cohort_obj("left", group("cpu", fq("f", cpu="4")), parent="root"),
            cohort_obj("right", parent="root"),
            cluster_queue("a", group("cpu", fq("f", cpu="0")), cohort="left", reclaim="Any"),
            cluster_queue("b", group("cpu", fq("f", cpu="0")), cohort="right"),
            running("b1", "b", "4", 50), workload("ns", "w", "lqa", {"cpu": "4"}, priority=0)]
    r = run(*objs)
    assert preempted(r) == {"b1": "InCohortReclamation"}
    assert admitted(r) == {}


def _cycle_context(*objs):
    from kueuetop.admission.cycle import CycleContext
    from kueuetop.admission.queue_state import QueueState
    from tests.builders import snapshot

    return CycleContext.build(snapshot(*objs), QueueState(), T0 + 100)


def test_above_nominal_walk_follows_usage_changes_and_trial_searches_restore_the_version():
    """The ClusterQueues above nominal are memoized per tree state: a usage change must be seen,
    and a target search, which removes and restores candidates, leaves the tree's state (and so
    its version) as it found it."""
    from kueuetop.admission import preemption as p
    from kueuetop.admission import preemption_classical as classical
    from kueuetop.admission.preemption_common import PreemptionContext

    cc = _cycle_context(*BASE, *cohort({"reclaim": "Any"}), running("b1", "b", "4"), running("b2", "b", "4"),
                        workload("ns", "wa", "lqa", {"cpu": "4"}, priority=1))
    tree, frs = cc.tree, frozenset({("f", "cpu")})
    root = tree.cq("a").parent
    assert [n.name for n, _ in classical._above_nominal_cqs(tree, root, frs)] == ["b"]
    b = tree.cq("b")
    tree.remove_usage(b, {("f", "cpu"): 8000})  # b back within nominal
    assert classical._above_nominal_cqs(tree, root, frs) == []
    tree.add_usage(b, {("f", "cpu"): 8000})
    assert [n.name for n, _ in classical._above_nominal_cqs(tree, root, frs)] == ["b"]

    wl = cc.snapshot.workloads[("ns", "wa")]
    ctx = PreemptionContext(tree, cc.index, cc.snapshot.cluster_queues, wl, cc.snapshot.cluster_queues["a"],
                              tree.cq("a"), set(frs), {("f", "cpu"): 4000}, cc.snapshot.config, cc.now,
                              cc.cache)
    before_version, before_usage = tree.version, {k: dict(v) for k, v in tree.usage.items()}
    targets = p.get_targets(ctx)
    assert len(targets) == 1 and targets[0].workload.name in ("b1", "b2")  # same reservation time
    assert tree.version == before_version
    assert {k: {fr: v for fr, v in u.items() if v} for k, u in tree.usage.items()} == \
        {k: {fr: v for fr, v in u.items() if v} for k, u in before_usage.items()}
    # A state left by a trial never comes back as a version: memos from it can't be reused.
    tree.remove_usage(b, {("f", "cpu"): 4000})
    assert tree.version != before_version
    assert classical._above_nominal_cqs(tree, root, frs) == []  # b uses 4 of its nominal 4
