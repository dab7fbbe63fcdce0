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

Random cohorts and workloads (some admitted, so that heads preempt) are scheduled for several
cycles both ways; decisions and queue state must be identical.
"""

from contextlib import ExitStack
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kueuetop.admission import cycle, preemption
from kueuetop.admission import decisions as d
from kueuetop.admission.cycle import schedule
from kueuetop.admission.quota_tree import QuotaTree
from tests.admission.test_properties import TOL, build, cq_spec
from tests.builders import T0, admit, snapshot, workload

wl_spec = st.fixed_dictionaries({
    "cq": st.integers(0, 2), "cpu": st.integers(1, 4), "priority": st.integers(0, 4),
    "tolerates": st.booleans(), "admitted": st.booleans(), "spot": st.booleans(),
})


class _RemoveAllEachTime:
    """Kueue's fits() as written: remove every preempted workload and the new targets."""

    def __init__(self, tree):
        self.tree = tree
        self.preempted = []

    def add_usage(self, node, usage):
        pass  # the caller already added it to the cycle's tree

    def preempt(self, targets):
        self.preempted.extend(targets)

    def fits_after_removal(self, node, usage, targets):
        removed = [*self.preempted, *targets]
        for t in removed:
            self.tree.remove_usage(self.tree.cq(t.cluster_queue), t.usage)
        ok = self.tree.fits(node, usage)
        for t in removed:
            self.tree.add_usage(self.tree.cq(t.cluster_queue), t.usage)
        return ok


def _plain_ordered(ctx):
    """The candidates as collectCandidatesForHierarchicalReclaim gathers them for this one
    preemptor, each group sorted (no pools shared between heads)."""
    hierarchy, priority = [], []
    if ctx.node.parent is not None and ctx.cq.preemption.reclaim_within_cohort != "Never":
        advantage, remaining = ctx.tree.quantities_fit_in_quota(ctx.node, ctx.usage)
        previous = None
        for current in ctx.node.path_to_root():
            for cq_node, top in preemption._above_nominal_cqs(ctx.tree, current, frozenset(ctx.frs)):
                if top is previous or cq_node is ctx.node:
                    continue
                (hierarchy if advantage else priority).extend(preemption._from_cq(ctx, cq_node.name, current, advantage))
            fits, remaining = ctx.tree.quantities_fit_in_quota(current, remaining)
            advantage = advantage or fits
            previous = current
    same = (preemption._from_cq(ctx, ctx.cq.name, None, False)
            if ctx.cq.preemption.within_cluster_queue != "Never" else [])

    def pool(lst):
        return preemption._Pool([(c, None) for c in sorted(lst, key=lambda c: c.key)])

    return preemption._Ordered([(pool(hierarchy), preemption._NOTHING)] if hierarchy else [],
                               [(pool(priority), preemption._NOTHING)] if priority else [], pool(same))


def _plain():
    stack = ExitStack()
    stack.enter_context(mock.patch.object(cycle._BASE_TREE, "tree_for_index",
                                          lambda structure, index: QuotaTree.build(structure, index.cq_usage)))
    stack.enter_context(mock.patch.object(preemption, "_ordered_candidates", _plain_ordered))
    stack.enter_context(mock.patch.object(cycle, "_MinusPreempted", _RemoveAllEachTime))
    stack.enter_context(mock.patch.object(preemption, "_cannot_cover", lambda ctx, c: False))
    stack.enter_context(mock.patch.object(preemption, "_surely_uncoverable", lambda ctx: False))
    plain_memo = lambda ctx, memo: preemption.get_targets(ctx)  # noqa: E731
    stack.enter_context(mock.patch.object(preemption, "memo_targets", plain_memo))
    stack.enter_context(mock.patch.object(cycle, "memo_targets", plain_memo))
    stack.enter_context(mock.patch.object(preemption, "_cq_memo", lambda ctx: {}))
    walk = preemption._above_nominal_cqs

    def unmemoized_walk(tree, current, frs):
        tree.memo.clear()
        return walk(tree, current, frs)

    stack.enter_context(mock.patch.object(preemption, "_above_nominal_cqs", unmemoized_walk))
    return stack


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cqs=st.lists(cq_spec, min_size=3, max_size=3), cohorted=st.booleans(),
       wls=st.lists(wl_spec, min_size=2, max_size=12))
def test_shortcuts_decide_like_plain_algorithms(cqs, cohorted, wls):
    base = build(cqs, cohorted)
    model = {}
    for i, w in enumerate(wls):
        wl = workload("ns", f"w{i}", f"lq{w['cq']}", {"cpu": str(w["cpu"])}, priority=w["priority"],
                      created=T0 + i, tolerations=TOL if w["tolerates"] else None)
        if w["admitted"]:
            wl = admit(wl, f"cq{w['cq']}", {"cpu": "spot" if w["spot"] and w["tolerates"] else "on-demand"})
        model[f"w{i}"] = wl
    state = None
    for n in range(4):
        snap = snapshot(*base, *model.values())
        fast = schedule(snap, T0 + 100 + n, state)
        with _plain():
            plain = schedule(snapshot(*base, *model.values()), T0 + 100 + n, state)
        assert fast.decisions == plain.decisions
        assert fast.state == plain.state
        state = fast.state
        for x in fast.decisions:
            if isinstance(x, d.Preempt):
                victim = snap.workloads[x.victim]
                model[x.victim[1]] = workload("ns", x.victim[1], victim.queue_name,
                                              {"cpu": str(victim.pod_sets[0].requests["cpu"] // 1000)},
                                              priority=victim.priority, created=victim.meta.creation,
                                              tolerations=TOL if victim.pod_sets[0].shape.tolerations else None)
            elif isinstance(x, d.Admit):
                model[x.workload[1]] = admit(model[x.workload[1]], x.cluster_queue, dict(x.assignments[0].flavors),
                                             counts={"main": x.assignments[0].count})


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
    with _plain():
        assert schedule(snapshot(*objs), T0 + 100).decisions == r.decisions


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
    first = schedule(replace(base, workloads={head.key: head, high.key: high, away.key: away}), T0 + 100, None)
    assert not any(isinstance(x, (d.Preempt, d.Admit)) for x in first.decisions)
    state = first.state.requeue_inadmissible(["cq0", "cq1"])
    second = schedule(replace(base, workloads={head.key: head, low.key: low, away.key: away}), T0 + 101, state)
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
    with mock.patch.object(preemption, "_ordered_candidates", gathered):
        within = schedule(snapshot(*objs("2", "4")), T0 + 100)
    assert not any(isinstance(x, (d.Preempt, d.Admit)) for x in within.decisions)
    with _plain():
        assert schedule(snapshot(*objs("2", "4")), T0 + 100).decisions == within.decisions
    # low borrows 1 of cq0's quota: the head (2, within cq0's nominal) reclaims it.
    above = schedule(snapshot(*objs("3", "2")), T0 + 100)
    assert [x.victim[1] for x in above.decisions if isinstance(x, d.Preempt)] == ["low"]
