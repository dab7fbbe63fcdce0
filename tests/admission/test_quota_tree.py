"""§6.4 quota model: SubtreeQuota, localQuota from lendingLimit, available, potentialAvailable,
borrowing levels, usage bubbling (Kueue resource_node.go)."""

from kueuetop.admission.cq_status import cluster_queue_active
from kueuetop.admission.quota_tree import QuotaStructure, QuotaTree
from tests.builders import cluster_queue, cohort, flavor, fq, group, snapshot

F = "default"
FR = (F, "cpu")


def tree_of(*objs, usage=None):
    s = snapshot(flavor(F), *objs)
    return QuotaTree.build(QuotaStructure.build(s.cluster_queues, s.cohorts), usage or {})


def cq(name, nominal, cohort_name="co", borrowing=None, lending=None):
    return cluster_queue(name, group("cpu", fq(F, cpu=(nominal, borrowing, lending))), cohort=cohort_name)


def test_flat_cohort_lending_limit_caps_what_others_can_use():
    """§6.4 flat example: A nominal 9, B nominal 12 lendingLimit 1 → A can use up to 10."""
    t = tree_of(cq("a", 9), cq("b", 12, lending=1))
    assert t.potential_available(t.cq("a"), FR) == 10_000
    assert t.available(t.cq("a"), FR) == 10_000
    t2 = tree_of(cq("a", 9), cq("b", 12))
    assert t2.potential_available(t2.cq("a"), FR) == 21_000


def test_usage_within_local_quota_does_not_bubble():
    """§6.4 localQuota: B's usage up to nominal−lendingLimit stays local; above it counts in the cohort."""
    t = tree_of(cq("a", 9), cq("b", 12, lending=1), usage={"b": {FR: 11_000}})
    assert t.usage["cohort/co"].get(FR, 0) == 0
    assert t.available(t.cq("a"), FR) == 10_000
    t = tree_of(cq("a", 9), cq("b", 12, lending=1), usage={"b": {FR: 12_000}})
    assert t.usage["cohort/co"][FR] == 1_000
    assert t.available(t.cq("a"), FR) == 9_000


def test_borrowing_limit_caps_potential_and_available():
    """§6.4 borrowingLimit: A nominal 9 borrowingLimit 2 can reach 11 though the cohort has 21."""
    t = tree_of(cq("a", 9, borrowing=2), cq("b", 12))
    assert t.potential_available(t.cq("a"), FR) == 11_000
    assert t.available(t.cq("a"), FR) == 11_000


def test_hierarchical_cohort_pool_and_borrowing_levels():
    """§6.4 hierarchy: a Cohort's own nominalQuota is an extra pool; the borrowing level is the
    height of the lowest subtree where the request fits."""
    t = tree_of(cohort("root", group("cpu", fq(F, cpu="4"))),
                cohort("team", group("cpu", fq(F, cpu="2")), parent="root"),
                cq("a", 1, "team"), cq("b", 1, "team"))
    a = t.cq("a")
    assert t.potential_available(a, FR) == 8_000
    assert t.lowest_fitting_subtree(a, FR, 1_000) == (0, True)
    assert t.lowest_fitting_subtree(a, FR, 3_000)[0] == 1  # fits in "team"
    assert t.lowest_fitting_subtree(a, FR, 6_000)[0] == 2  # needs "root"


def test_add_and_remove_usage_round_trip():
    """addUsage bubbles usage above localQuota to the parent; removeUsage takes it back."""
    t = tree_of(cq("a", 9, lending=4), cq("b", 12))
    a = t.cq("a")
    t.add(a, FR, 7_000)  # localQuota 5: 2 bubble up
    assert t.usage["cohort/co"][FR] == 2_000
    assert t.borrowing(a, FR) is False
    t.remove(a, FR, 7_000)
    assert t.usage["cohort/co"][FR] == 0 and t.usage["cq/a"][FR] == 0


def test_clone_is_independent():
    """A cycle works on a copy: usage added to the clone leaves the original untouched."""
    t = tree_of(cq("a", 9), cq("b", 12))
    c = t.clone()
    c.add(c.cq("a"), FR, 12_000)
    assert t.used(t.cq("a"), FR) == 0 and c.borrowing(c.cq("a"), FR)
    # Both ways, and for nodes neither had touched yet (the copies share usage until written).
    t.add(t.cq("b"), FR, 13_000)
    assert c.used(c.cq("b"), FR) == 0 and c.usage["cohort/co"][FR] == 12_000
    assert t.usage["cohort/co"][FR] == 13_000
    d = c.clone()
    d.remove(d.cq("a"), FR, 12_000)
    assert c.used(c.cq("a"), FR) == 12_000 and d.used(d.cq("a"), FR) == 0 and t.used(t.cq("a"), FR) == 0


def test_cohort_cycle_disables_member_cqs():
    """§2.3 a cycle in parent links makes every member CQ inactive (CohortCycleDetected)."""
    s = snapshot(flavor(F), cohort("x", parent="y"), cohort("y", parent="x"), cq("a", 1, "x"))
    st = cluster_queue_active(s, "a")
    assert (st.active, st.reason) == (False, "CohortCycleDetected")
    assert st.message == 'Can\'t admit new workloads: Cohort "x" has a cycle in hierarchy.'
    assert QuotaStructure.build(s.cluster_queues, s.cohorts).cq_has_cycle("a")


def test_no_cohort_means_no_borrowing():
    """§6.4 a CQ without a cohort can use exactly its nominal quota."""
    t = tree_of(cq("solo", 3, ""))
    assert t.potential_available(t.cq("solo"), FR) == 3_000
    assert t.lowest_fitting_subtree(t.cq("solo"), FR, 5_000) == (0, False)


def test_the_tree_kept_between_cycles_follows_usage_like_a_fresh_build():
    """quota_tree.KeptQuotaTree (EngineCache.quota_tree): usage changes of a few ClusterQueues applied as add/remove give the tree
    QuotaTree.build gives for the new totals, in a hierarchy with lending limits and a
    Cohort's own quota; each cycle gets a copy it may change freely."""
    import random

    from kueuetop.admission.quota_tree import KeptQuotaTree

    s = snapshot(flavor(F), cohort("root", group("cpu", fq(F, cpu="4"))),
                 cohort("team", group("cpu", fq(F, cpu="2")), parent="root"),
                 cq("a", 3, "team", lending=1), cq("b", 2, "team"), cq("c", 5, "root", lending=2), cq("d", 4, ""))
    structure = QuotaStructure.build(s.cluster_queues, s.cohorts)
    base, rng = KeptQuotaTree(), random.Random(7)
    usage: dict[str, dict] = {}
    for step in range(300):
        name = rng.choice("abcd")
        usage[name] = {FR: rng.randrange(0, 14) * 1_000} if rng.random() < 0.9 else {}
        got = base.tree_for(structure, usage)
        want = QuotaTree.build(structure, usage)
        for key in {**structure.cqs, **structure.cohorts}:
            node = structure.cqs.get(key) or structure.cohorts[key]
            assert got.used(node, FR) == want.used(node, FR), (step, key)
        got.add(structure.cqs["a"], FR, 50_000)  # the cycle's own trials never reach the kept tree
    assert base.tree_for(structure, usage).used(structure.cqs["a"], FR) == usage.get("a", {}).get(FR, 0)
