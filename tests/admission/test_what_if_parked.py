"""what-if after a workload was parked as inadmissible (BestEffortFIFO).

Kueue's queue manager moves inadmissible workloads back to the queue when quota in their cohort
tree is released (QueueInadmissibleWorkloads); a preview that forgot this would promise the
eviction but not the admission it makes room for.
"""

from kueuetop.admission.simulate import simulate
from kueuetop.admission.what_if import what_if
from kueuetop.kueue.actions import WORKLOAD, Target
from tests.builders import T0, admit, cluster_queue, flavor, fq, group, local_queue, namespace, workload


def test_preempt_preview_admits_the_parked_workload():
    objs = [namespace("ns"), flavor("f"),
            cluster_queue("cq", group("cpu", fq("f", cpu="4")), strategy="BestEffortFIFO"),
            local_queue("ns", "lq", "cq"),
            admit(workload("ns", "low", "lq", {"cpu": "3"}, priority=1), "cq", {"cpu": "f"}),
            workload("ns", "high", "lq", {"cpu": "3"}, priority=100, created=T0 + 1)]
    parked = simulate(objs, T0 + 10)
    assert any(("ns", "high") in m for m in parked.state.inadmissible.values())
    result = what_if(list(parked.objects), "preempt", Target(WORKLOAD, "low", "ns"), T0 + 20, state=parked.state)
    assert [c.workload for c in result.admitted] == [("ns", "high")]
    assert [(c.workload, c.reason) for c in result.evicted] == [(("ns", "low"), "Deactivated")]
