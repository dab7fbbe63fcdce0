"""Property tests: random cohorts and workloads, cycles applied to a simple model.

Invariants: no CQ uses more than nominal + borrowingLimit; no cohort hands out more than its
members lend (root usage ≤ root quota, respecting lendingLimits); admitted workloads sit on
eligible flavors; preemption only evicts what the policy allows.
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kueuetop.admission import decisions as d
from kueuetop.admission.cycle import schedule
from kueuetop.admission.quota_tree import QuotaStructure, QuotaTree
from kueuetop.kueue.flavor import flavor_mismatch
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

TAINT = [{"key": "spot", "value": "true", "effect": "NoSchedule"}]
TOL = [{"key": "spot", "operator": "Exists"}]

cq_spec = st.fixed_dictionaries({
    "nominal": st.lists(st.integers(0, 6), min_size=2, max_size=2),
    "borrowing": st.one_of(st.none(), st.integers(0, 4)),
    "lending": st.one_of(st.none(), st.integers(0, 4)),
    "within": st.sampled_from([None, "LowerPriority", "LowerOrNewerEqualPriority"]),
    "reclaim": st.sampled_from([None, "LowerPriority", "Any"]),
    "borrow_within": st.booleans(),
    "threshold": st.one_of(st.none(), st.integers(0, 3)),
})
wl_spec = st.fixed_dictionaries({
    "cq": st.integers(0, 2), "cpu": st.integers(1, 6), "priority": st.integers(0, 4),
    "tolerates": st.booleans(),
})


def build(cqs, cohorted):
    objs = [namespace("ns"), flavor("on-demand"), flavor("spot", {"pool": "spot"}, taints=TAINT)]
    for i, c in enumerate(cqs):
        lim = lambda v: None if v is None or not cohorted else str(v)  # noqa: E731
        quotas = [fq(f, cpu=(str(n), lim(c["borrowing"]), lim(c["lending"])))
                  for f, n in zip(("on-demand", "spot"), c["nominal"], strict=True)]
        reclaim = c["reclaim"] if cohorted else None
        objs.append(cluster_queue(
            f"cq{i}", group("cpu", *quotas), cohort="co" if cohorted else "", within=c["within"],
            reclaim=reclaim, borrow_within="LowerPriority" if reclaim and c["borrow_within"] else None,
            max_priority_threshold=c["threshold"] if reclaim and c["borrow_within"] else None))
        objs.append(local_queue("ns", f"lq{i}", f"cq{i}"))
    return objs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cqs=st.lists(cq_spec, min_size=3, max_size=3), cohorted=st.booleans(),
       wls=st.lists(wl_spec, min_size=1, max_size=10))
def test_cycles_respect_quota_eligibility_and_policy(cqs, cohorted, wls):
    base = build(cqs, cohorted)
    model: dict[str, dict] = {}
    for i, w in enumerate(wls):
        model[f"w{i}"] = workload("ns", f"w{i}", f"lq{w['cq']}", {"cpu": str(w["cpu"])}, priority=w["priority"],
                                  created=T0 + i, tolerations=TOL if w["tolerates"] else None)
    state = None
    for cycle in range(8):
        snap = snapshot(*base, *model.values())
        r = schedule(snap, T0 + 100 + cycle, state)
        state = r.state
        running_before = {k: wl for k, wl in snap.workloads.items() if wl.admission is not None}
        borrowing_before = _borrowing_cqs(snap)
        for x in r.decisions:
            if isinstance(x, d.Preempt):
                victim = running_before[x.victim]
                pre = snap.workloads[x.preemptor]
                pre_cq = snap.local_queues[("ns", pre.queue_name)].cluster_queue
                spec = snap.cluster_queues[pre_cq]
                same = victim.admission.cluster_queue == pre_cq
                if same:
                    assert victim.priority < pre.priority or (
                        spec.preemption.within_cluster_queue == "LowerOrNewerEqualPriority"
                        and victim.priority == pre.priority)
                else:
                    assert spec.preemption.reclaim_within_cohort != "Never"
                    if spec.preemption.reclaim_within_cohort == "LowerPriority":
                        assert victim.priority < pre.priority
                    assert victim.admission.cluster_queue in borrowing_before
                    if x.reason == d.IN_COHORT_RECLAIM_WHILE_BORROWING:
                        t = spec.preemption.max_priority_threshold
                        assert t is None or victim.priority <= t
                model[x.victim[1]] = workload("ns", x.victim[1], victim.queue_name,
                                              {"cpu": str(victim.pod_sets[0].requests["cpu"] // 1000)},
                                              priority=victim.priority, created=victim.meta.creation,
                                              tolerations=TOL if victim.pod_sets[0].shape.tolerations else None)
            elif isinstance(x, d.Admit):
                wl = model[x.workload[1]]
                model[x.workload[1]] = admit(wl, x.cluster_queue, dict(x.assignments[0].flavors),
                                             counts={"main": x.assignments[0].count})
        _check_invariants(snapshot(*base, *model.values()))


def _tree(snap):
    usage: dict[str, dict] = {}
    for wl in snap.workloads.values():
        if wl.admission is not None:
            u = usage.setdefault(wl.admission.cluster_queue, {})
            for fr, v in wl.usage().items():
                u[fr] = u.get(fr, 0) + v
    return QuotaTree.build(QuotaStructure.build(snap.cluster_queues, snap.cohorts), usage)


def _borrowing_cqs(snap):
    t = _tree(snap)
    return {n for n, node in t.structure.cqs.items() if any(t.borrowing(node, fr) for fr in node.quotas)}


def _check_invariants(snap):
    t = _tree(snap)
    for name, node in t.structure.cqs.items():
        for fr, q in node.quotas.items():
            used = t.used(node, fr)
            if node.parent is None:
                assert used <= q.nominal, (name, fr)
            elif q.borrowing_limit is not None:
                assert used <= q.nominal + q.borrowing_limit, (name, fr)
    for node in t.structure.cohorts.values():
        for fr, quota in node.subtree.items():
            assert t.used(node, fr) <= quota  # members never get more than is lent
    for wl in snap.workloads.values():
        if wl.admission is None:
            continue
        for psa in wl.admission.pod_set_assignments:
            for f in psa.flavors.values():
                assert flavor_mismatch(snap.flavors[f], wl.pod_sets[0].shape, frozenset({"pool"})) is None
