"""The EngineCache's fast paths decide exactly what the plain algorithms decide.

Random small clusters (fair sharing or classical, cohorted or not) run for several cycles twice:
with one EngineCache kept across the cycles (index patched, quota tree followed, head scans,
candidate pools and bounds kept, fits() on a tree with earlier preemptions removed once) and
with EngineCache(fast_paths=False) (everything built afresh each cycle, Kueue's fits() as
written). Every cycle's decisions — admitted workloads with their flavors, preemption targets,
pending reasons — and the queue state must be identical. The same clusters are also forecast
forward (admission/forecast.py `_run`, whose own shortcuts follow the cache's fast paths): the
admissions, preemptions and every workload's final status must be identical.
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kueuetop.admission import decisions as d
from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.forecast import _run
from kueuetop.kueue.workload_api import workload_to_api
from tests.admission.engine_runs import ClusterRun, cluster_spec
from tests.builders import T0

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


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=cluster_spec, runtimes=st.lists(st.integers(1, 40), min_size=12, max_size=12))
def test_forecast_runs_end_alike_with_and_without_fast_paths(spec, runtimes):
    """The forecast's forward run (its own shortcuts are fast paths too: a Pending decision
    already written is not written again) admits the same workloads at the same instants, with
    the same flavors and preemptions, and leaves every workload with the same status."""
    snap = ClusterRun(spec, EngineCache()).snapshot()
    now = T0 + 100
    rt = {key: float(runtimes[i]) for i, key in enumerate(sorted(snap.workloads))}
    pending = {k for k, w in snap.workloads.items() if not w.has_quota_reservation}
    fast = _run(snap, rt, now, pending, EngineCache(), now + 3600, 5_000, None)
    plain = _run(snap, rt, now, pending, EngineCache(fast_paths=False), now + 3600, 5_000, None)
    assert (fast.start, fast.flavors, fast.preempts, fast.stable, fast.end) == \
        (plain.start, plain.flavors, plain.preempts, plain.stable, plain.end)
    assert fast.final is not None and plain.final is not None
    assert {k: workload_to_api(w)["status"] for k, w in fast.final.workloads.items()} == \
        {k: workload_to_api(w)["status"] for k, w in plain.final.workloads.items()}
