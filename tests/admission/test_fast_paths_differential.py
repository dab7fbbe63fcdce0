"""The EngineCache's fast paths decide exactly what the plain algorithms decide.

Random small clusters (fair sharing or classical, cohorted or not) run for several cycles twice:
with one EngineCache kept across the cycles (index patched, quota tree followed, head scans,
candidate pools and bounds kept, fits() on a tree with earlier preemptions removed once) and
with EngineCache(fast_paths=False) (everything built afresh each cycle, Kueue's fits() as
written). Every cycle's decisions — admitted workloads with their flavors, preemption targets,
pending reasons — and the queue state must be identical.
"""

from hypothesis import HealthCheck, given, settings

from kueuetop.admission import decisions as d
from kueuetop.admission.engine_cache import EngineCache
from tests.admission.engine_runs import ClusterRun, cluster_spec

CYCLES = 5


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=cluster_spec)
def test_fast_paths_decide_like_the_plain_algorithms(spec):
    fast, plain = ClusterRun(spec, EngineCache()), ClusterRun(spec, EngineCache(fast_paths=False))
    for cycle in range(CYCLES):
        a, b = fast.step(), plain.step()
        assert a.decisions == b.decisions, cycle
        assert a.state == b.state, cycle


def test_the_differential_run_reaches_preemption_and_admission():
    """The generated clusters are not idle: a known one admits and preempts, so the comparison
    above covers both."""
    spec = {"cqs": [{"nominal": [2, 0], "borrowing": None, "lending": None, "within": "LowerPriority",
                     "reclaim": "Any", "borrow_within": False, "threshold": None}] * 3,
            "cohorted": False, "fair": False,
            "wls": [{"cq": 0, "cpu": 2, "priority": 0, "tolerates": False, "admitted": True, "spot": False},
                    {"cq": 0, "cpu": 2, "priority": 4, "tolerates": False, "admitted": False, "spot": False},
                    {"cq": 1, "cpu": 1, "priority": 0, "tolerates": False, "admitted": False, "spot": False}]}
    fast = ClusterRun(spec, EngineCache())
    seen = [x for _ in range(3) for x in fast.step().decisions]
    assert any(isinstance(x, d.Preempt) for x in seen) and any(isinstance(x, d.Admit) for x in seen)
