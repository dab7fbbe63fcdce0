"""Invariants of every runtime estimate, whatever the history, bounds, labels and elapsed time:
a range in order, never a negative remaining time, a bound never exceeded, never an exception."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kueuetop.admission.runtime_estimate import EstimateRules, JobLimits, estimate_runtime
from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.workload import Workload
from kueuetop.store.run_history import RunHistory, RunRecord, shape_key
from tests.builders import T0, workload

runtimes = st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), max_size=30)
labels = st.one_of(st.none(), st.text(max_size=12), st.integers(-10, 10**11).map(str))
deadlines = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**6))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape_runs=runtimes, cq_runs=runtimes, max_exec=st.one_of(st.none(), st.integers(1, 10**6)),
       accumulated=st.integers(0, 10**6), label=labels, deadline=deadlines,
       elapsed=st.one_of(st.none(), st.floats(min_value=0, max_value=2e6, allow_nan=False)),
       min_samples=st.integers(1, 5))
def test_every_estimate_is_an_ordered_range_within_its_bound(shape_runs, cq_runs, max_exec, accumulated, label,
                                                             deadline, elapsed, min_samples) -> None:
    d = workload("team-a", "w", "lq-a", requests={"nvidia.com/gpu": 8})
    if max_exec is not None:
        d["spec"]["maximumExecutionTimeSeconds"] = max_exec
    d["status"]["accumulatedPastExecutionTimeSeconds"] = accumulated
    wl = parse_object(d)
    assert isinstance(wl, Workload)
    h = RunHistory("p")
    shape = shape_key(wl.pod_sets)
    for i, rt in enumerate(shape_runs):
        h.add(RunRecord(f"s{i}", "team-a", "lq-a", "cq-a", shape, T0, T0 + rt))
    for i, rt in enumerate(cq_runs):
        h.add(RunRecord(f"c{i}", "team-b", "lq-b", "cq-a", "other", T0, T0 + rt))
    e = estimate_runtime(wl, cluster_queue="cq-a", history=h, job=JobLimits(deadline, label), elapsed=elapsed,
                         rules=EstimateRules(min_samples=min_samples))
    ran = elapsed or 0.0
    assert all(math.isfinite(x) for x in (e.optimistic, e.expected, e.pessimistic))
    assert ran <= e.optimistic <= e.expected <= e.pessimistic
    if e.upper_bound is not None:
        assert e.pessimistic <= max(e.upper_bound, ran)
    assert e.basis and "\n" not in e.basis and "\n" not in e.note
