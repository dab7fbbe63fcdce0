"""The preemption memo drops answers that can never be hit again, and decisions do not change.

A long-lived EngineCache (the forecast worker's, the simulator's Kueue) used to keep every
candidate list it ever built: a stale one is never returned, but it holds the workloads of an old
snapshot alive, so the console's memory grew with each forecast (issue: the console's real cost).
"""

from types import SimpleNamespace
from unittest import mock

from hypothesis import HealthCheck, given, settings

from kueuetop.admission import preemption_classical as pc
from kueuetop.admission.engine_cache import EngineCache
from tests.admission.engine_runs import ClusterRun, cluster_spec

# Preemption with a reclaim across the cohort, one cycle after another (the victims come back).
SPEC = {"cqs": [{"nominal": [2, 0], "borrowing": None, "lending": None, "within": "LowerPriority",
                 "reclaim": "Any", "borrow_within": False, "threshold": None}] * 3,
        "cohorted": True, "fair": False,
        "wls": [{"cq": i % 3, "cpu": 1 + i % 2, "priority": (i * 7) % 5, "tolerates": False,
                 "admitted": i % 2 == 0, "spot": False} for i in range(12)]}


def _stale(cache: EngineCache) -> list[tuple]:
    """Memo keys whose answer no lookup can return any more (the `using` lists, the roots)."""
    versions = cache.index.reserving_version
    return [k for k, v in cache.candidates.items() if k[0] == "using" and v.version != versions.get(k[1], 0)]


def test_stale_answers_are_swept_out():
    with mock.patch.object(pc, "SWEEP_FLOOR", 0):
        swept = ClusterRun(SPEC, EngineCache())  # sweeps each time its memo doubled
        kept = ClusterRun(SPEC, EngineCache(candidates_sweep_at=10**9))  # never sweeps
        for _ in range(12):
            assert swept.step().decisions == kept.step().decisions
    # The run reached preemption more than once, and the queues' versions moved under the memo.
    stale = _stale(kept.cache)
    assert kept.cache.candidates and stale, "the run never left a stale answer behind"
    assert len(swept.cache.candidates) <= len(kept.cache.candidates)
    live = {k for k in kept.cache.candidates if k[0] == "using"} - set(stale)
    pc._sweep(kept.cache.candidates, _ctx_like(kept.cache))
    # What a sweep leaves is what a lookup could still return, and all of that.
    assert not _stale(kept.cache)
    assert {k for k in kept.cache.candidates if k[0] == "using"} == live
    assert not any(k[0] == "cands" and id(v.source) not in {id(u.entries) for u in kept.cache.candidates.values()
                                                             if isinstance(u, pc.KeptEntries)}
                   for k, v in kept.cache.candidates.items())


def _ctx_like(cache: EngineCache) -> SimpleNamespace:
    """What _sweep reads of a preemption context: the cache's own index (and no instant)."""
    return SimpleNamespace(index=cache.index, now=None)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=cluster_spec)
def test_sweeping_at_every_lookup_decides_like_the_plain_algorithms(spec):
    with mock.patch.object(pc, "SWEEP_FLOOR", 0):
        fast = ClusterRun(spec, EngineCache(candidates_sweep_at=0))
        plain = ClusterRun(spec, EngineCache(fast_paths=False))
        for cycle in range(5):
            a, b = fast.step(), plain.step()
            assert a.decisions == b.decisions, cycle
            assert a.state == b.state, cycle
