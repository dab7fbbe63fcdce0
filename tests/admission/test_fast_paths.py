"""The engine's shortcuts decide exactly what the plain algorithms decide.

- §6.2 fits(): the cycle keeps earlier preemptions removed on a copy of the tree instead of
  removing every preempted workload again for each preempting head;
- §6.5 a preemption search is skipped when the candidates' total usage can't cover the shortfall,
  and before gathering them when not even every workload the policies allow by priority could
  (in the own queue and the other queues above nominal);
- §6.3/§6.5 the flavor assigner's preemption oracle and the nomination share one target search;
- §6.5 candidate lists are kept per ClusterQueue and preemptor class while the queue's
  quota-holding workloads are the same (across cycles), and the ClusterQueues above nominal
  per cohort while the tree's usage is unchanged;
- the cycle's quota tree is kept between cycles and follows the ClusterQueues whose usage
  changed instead of being built from every ClusterQueue's totals;
- §6.5 one sorted candidate pool per cohort level, preemptor class and the candidate lists
  of the queues above nominal serves every head of the cohort, across cycles (each skips its own subtree) instead of a list gathered and sorted
  per head.

Random clusters are compared both ways in tests/admission/test_fast_paths_differential.py
(EngineCache(fast_paths=False) runs the plain algorithms); these are the cases found by hand.
"""

from unittest import mock

from kueuetop.admission import decisions as d
from kueuetop.admission import preemption_classical
from kueuetop.admission.cycle import schedule
from kueuetop.admission.engine_cache import EngineCache
from tests.builders import T0, admit, snapshot, workload

PLAIN = EngineCache(fast_paths=False)  # holds nothing: every call builds afresh


def test_fits_check_sees_usage_admitted_after_a_preemption():
    """§6.2 after one head preempted, a later head's fits() must still count what heads admitted
    in between: b's head (targets found against the cycle's start) no longer fits once c's
    head took the cohort's spare quota."""
    from tests.builders import cluster_queue, flavor, fq, group, local_queue, namespace
    objs = [namespace("ns"), flavor("f"),
            cluster_queue("a", group("cpu", fq("f", cpu=("2", "0"))), cohort="co", within="LowerPriority"),
            cluster_queue("b", group("cpu", fq("f", cpu="2")), cohort="co", within="LowerPriority",
                          reclaim="LowerPriority", borrow_within="LowerPriority"),
            cluster_queue("c", group("cpu", fq("f", cpu="2")), cohort="co"),
            *(local_queue("ns", q, q) for q in "abc"),
            admit(workload("ns", "a-low", "a", {"cpu": "2"}), "a", {"cpu": "f"}),
            admit(workload("ns", "b-low", "b", {"cpu": "2"}), "b", {"cpu": "f"}),
            workload("ns", "ha", "a", {"cpu": "2"}, priority=9),
            workload("ns", "hb", "b", {"cpu": "4"}, priority=9),
            workload("ns", "hc", "c", {"cpu": "2"})]
    r = schedule(snapshot(*objs), T0 + 100)
    assert [x.workload[1] for x in r.decisions if isinstance(x, d.Admit)] == ["hc"]
    assert [x.victim[1] for x in r.decisions if isinstance(x, d.Preempt)] == ["a-low"]
    hb = next(x for x in r.decisions if isinstance(x, d.Pending) and x.workload[1] == "hb")
    assert hb.message == "Workload no longer fits after processing another workload"
    assert schedule(snapshot(*objs), T0 + 100, None, PLAIN).decisions == r.decisions


def test_quick_bound_follows_the_cohorts_workloads_between_cycles():
    """§6.5 the quick "nothing could free enough" answer is kept per index update only: once a
    lower-priority borrower holds the cohort's quota, the head that could not preempt before
    reclaims it."""
    from dataclasses import replace

    from tests.builders import cluster_queue, flavor, fq, group, local_queue, namespace

    base = snapshot(namespace("ns"), flavor("f"),
                    *(cluster_queue(f"cq{i}", group("cpu", fq("f", cpu="2")), cohort="co" if i < 2 else "other",
                                    within="LowerPriority", reclaim="LowerPriority") for i in range(3)),
                    *(local_queue("ns", f"lq{i}", f"cq{i}") for i in range(3)))

    def parsed(obj):
        return snapshot(obj).workloads[("ns", obj["metadata"]["name"])]

    head = parsed(workload("ns", "head", "lq0", {"cpu": "2"}, priority=5))
    high = parsed(admit(workload("ns", "high", "lq1", {"cpu": "4"}, priority=10), "cq1", {"cpu": "f"}))
    low = parsed(admit(workload("ns", "low", "lq1", {"cpu": "4"}, priority=0), "cq1", {"cpu": "f"}))
    # Low priority usage elsewhere: the cluster-wide sum alone can't rule the head out.
    away = parsed(admit(workload("ns", "away", "lq2", {"cpu": "2"}, priority=0), "cq2", {"cpu": "f"}))
    cache = EngineCache()  # kept across both cycles, as a scheduler keeps it
    first = schedule(replace(base, workloads={head.key: head, high.key: high, away.key: away}), T0 + 100, None,
                     cache)
    assert not any(isinstance(x, (d.Preempt, d.Admit)) for x in first.decisions)
    state = first.state.requeue_inadmissible(["cq0", "cq1"])
    second = schedule(replace(base, workloads={head.key: head, low.key: low, away.key: away}), T0 + 101, state,
                      cache)
    assert [x.victim for x in second.decisions if isinstance(x, d.Preempt)] == [low.key]


def test_quick_bound_skips_queues_within_nominal_and_only_them():
    """§6.5 collectCandidatesForHierarchicalReclaim takes other queues' workloads only from
    queues above nominal: a lower-priority workload of a queue within its nominal quota can't
    free anything for a borrowing head, so the bound answers before any candidate is
    gathered; once that queue borrows, its workload is found and reclaimed."""
    from tests.builders import cluster_queue, flavor, fq, group, local_queue, namespace

    def objs(low_cpu: str, head_cpu: str):
        return [namespace("ns"), flavor("f"),
                *(cluster_queue(f"cq{i}", group("cpu", fq("f", cpu="2")), cohort="co", within="LowerPriority",
                                reclaim="LowerPriority", borrow_within="LowerPriority") for i in range(2)),
                *(local_queue("ns", f"lq{i}", f"cq{i}") for i in range(2)),
                admit(workload("ns", "low", "lq1", {"cpu": low_cpu}, priority=0), "cq1", {"cpu": "f"}),
                workload("ns", "head", "lq0", {"cpu": head_cpu}, priority=5)]

    def gathered(ctx):
        raise AssertionError("candidates gathered although none could cover the shortfall")

    # low holds cq1's own 2: the head (4, borrowing) is short by 2 and low is no candidate.
    with mock.patch.object(preemption_classical, "new_candidate_iterator", gathered):
        within = schedule(snapshot(*objs("2", "4")), T0 + 100)
    assert not any(isinstance(x, (d.Preempt, d.Admit)) for x in within.decisions)
    assert schedule(snapshot(*objs("2", "4")), T0 + 100, None, PLAIN).decisions == within.decisions
    # low borrows 1 of cq0's quota: the head (2, within cq0's nominal) reclaims it.
    above = schedule(snapshot(*objs("3", "2")), T0 + 100)
    assert [x.victim[1] for x in above.decisions if isinstance(x, d.Preempt)] == ["low"]
