"""Generated built-in scenarios (Kueue's scheduler-performance baseline, and `large`) run to completion.

Kueue's baseline config is 15,000 workloads: the quota invariants are checked on a sample of the
simulation's steps (every step would cost more than the run) and once at the end. Kueue's
large-scale config (50,000 workloads, about 1.5 CPU-minutes) and `xl` run to their end under the
same checks as benchmarks (`python benchmarks/scale_completion.py kueue-perf-large --check`).
Every run is watched for instants that never end (a preemption loop spins at one simulated
instant, as evictions complete at once in the simulator).
"""

import pytest

from kueuetop.sim.clock import SimClock
from kueuetop.sim.runner import VIRTUAL_EPOCH
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.wiring import build_cluster
from tests.sim.test_sim_scenarios import check_invariants

KUEUE = "kueue.x-k8s.io"
SAMPLE_EVERY = 50  # simulated instants between invariant checks (rounds within one instant vary)
# Each check on `large` walks 20,000 workloads and their pods: checked every 50 instants the
# checks cost about twice the run itself, so `large` is sampled more sparsely.
LARGE_SAMPLE_EVERY = 250


MAX_CYCLES_PER_INSTANT = 1_000  # far above what one instant of a healthy run needs


class InstantWatch:
    """Fails the run when the simulated clock stays at one instant for more than `limit`
    scheduling cycles: controllers that keep undoing each other (a preemption loop) instead of
    letting time pass."""

    def __init__(self, parts, limit: int = MAX_CYCLES_PER_INSTANT) -> None:
        self.parts, self.limit = parts, limit
        self.instant: float | None = None
        self.cycles_at_start = 0
        self.most = 0  # the most cycles seen at one instant

    def __call__(self, cluster) -> None:
        now, cycles = cluster.clock.now(), self.parts.kueue.cycles
        if now != self.instant:
            self.instant, self.cycles_at_start = now, cycles
            return
        spent = cycles - self.cycles_at_start
        self.most = max(self.most, spent)
        assert spent <= self.limit, (
            f"simulated clock stuck at t={now - cluster.clock.start:.3f}s for {spent} cycles")


def run_to_completion(name: str, duration: float = 24 * 3600.0, sample_every: int = SAMPLE_EVERY,
                      stats: dict | None = None):
    """Run `name` until idle, checking the quota invariants every `sample_every` instants and at
    the end, that no instant spins, and that simulated time never runs backwards. `stats`, when
    given, receives the steps, checks and the most cycles spent at one instant."""
    scenario = load_scenario(name)
    clock = SimClock(VIRTUAL_EPOCH)
    parts = build_cluster(scenario, clock, record_events=False)
    steps = [0, 0, 0]  # steps, invariant checks, instants
    last = [clock.now()]
    watch = InstantWatch(parts)

    def on_step(cluster) -> None:
        steps[0] += 1
        now = cluster.clock.now()
        assert now >= last[0], f"simulated time ran backwards: {now} after {last[0]}"
        moved = now > last[0]
        last[0] = now
        watch(cluster)
        steps[2] += moved
        # By instants, not steps: the Kueue controller takes as many rounds at one instant as its
        # queues have heads to park, and a check per 50 of those would cost more than the run.
        if moved and steps[2] % sample_every == 0:
            steps[1] += 1
            check_invariants(parts)

    parts.cluster.run_for(duration, until_idle=True, on_step=on_step)
    check_invariants(parts)
    if stats is not None:
        stats.update(steps=steps[0], invariantChecks=steps[1] + 1, mostCyclesAtOneInstant=watch.most)
    return scenario, parts


@pytest.mark.parametrize(("name", "workloads"), [("kueue-perf-baseline", 15_000)])
def test_kueue_perf_scenarios_run_to_completion(name: str, workloads: int):
    scenario, parts = run_to_completion(name)
    assert parts.cluster.idle()
    assert parts.cluster.errors == [] and parts.kueue.broken == {}
    wls, _ = parts.cluster.store.list(KUEUE, "workloads", copy=False)
    assert len(wls) == scenario.meta["expected"]["workloads"] == workloads
    # Kueue's harness finishes them (sim/jobs/perf_runner.py): no pods ever ran.
    assert parts.cluster.store.list("", "pods", copy=False)[0] == []
    assert {c["reason"] for w in wls for c in w["status"]["conditions"] if c["type"] == "Finished"} == {"ByTest"}
    snap = parts.kueue.snapshot()
    unfinished = [w.key for w in snap.workloads.values() if not w.is_finished]
    assert unfinished == []
    # Every workload was admitted once it finished: none holds quota any more.
    cqs, _ = parts.cluster.store.list(KUEUE, "clusterqueues", copy=False)
    assert all((cq.get("status") or {}).get("reservingWorkloads") == 0 for cq in cqs)
    assert all((cq.get("status") or {}).get("pendingWorkloads") == 0 for cq in cqs)


def test_large_runs_to_completion():
    """ARCHITECTURE §5 `large` (1,000 nodes, 500 ClusterQueues, 20,000 Jobs' Workloads with pods
    on nodes) to its end: every active workload finishes; the 1 % created inactive stay so."""
    _, parts = run_to_completion("large", duration=7 * 24 * 3600.0, sample_every=LARGE_SAMPLE_EVERY)
    assert parts.cluster.idle()
    assert parts.cluster.errors == [] and parts.kueue.broken == {}
    snap = parts.kueue.snapshot()
    assert len(snap.workloads) == 20_000
    inactive = [w for w in snap.workloads.values() if not w.active]
    unfinished = [w.key for w in snap.workloads.values() if w.active and not w.is_finished]
    assert unfinished == []
    assert 0 < len(inactive) <= 20_000 // 100 and not any(w.has_quota_reservation for w in inactive)
    # No quota held and no job's pod left running at the end (the DCGM exporters run on).
    cqs, _ = parts.cluster.store.list(KUEUE, "clusterqueues", copy=False)
    assert all((cq.get("status") or {}).get("reservingWorkloads") == 0 for cq in cqs)
    pods, _ = parts.cluster.store.list("", "pods", copy=False)
    # Its Workloads have no Job: their pods are owned by the Workload itself.
    wl_pods = [p for p in pods if any(r.get("kind") in ("Job", "Workload")
                                      for r in p["metadata"].get("ownerReferences") or [])]
    assert any((p.get("status") or {}).get("phase") == "Succeeded" for p in wl_pods)
    assert not [p for p in wl_pods if (p.get("status") or {}).get("phase") in ("Pending", "Running")]


def test_each_class_of_large_runs_within_its_stated_range():
    """`class_runtime_range` (what a benchmark may know of the true distributions) matches what
    the generator draws: every `large` workload's runtime lies in its class's range."""
    from kueuetop.kueue.durations import parse_duration
    from kueuetop.sim.scenarios.generators import class_runtime_range

    scenario = load_scenario("large")
    seen = 0
    for step in scenario.steps:
        obj = step.obj
        if obj is None or obj.get("kind") != "Workload":
            continue
        span = class_runtime_range(obj["metadata"]["labels"])
        assert span is not None
        runtime = parse_duration(obj["metadata"]["annotations"]["kueuetop.io/runtime"])
        assert span[0] - 1 <= runtime <= span[1] + 1
        seen += 1
        if seen >= 2_000:
            break
    assert seen >= 2_000
    assert class_runtime_range({"kueuetop.io/class": "notebook"}) == (7200, 28800)
    assert class_runtime_range({}) is None and class_runtime_range({"kueuetop.io/class": "large"}) is None
