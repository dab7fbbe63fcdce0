"""The preempt / re-admit thrash of Kueue#13662 and the PrioritizePreemptorWorkloads gate.

preemptor_thrash.yaml: cq-a (8 GPUs) and cq-b (4 GPUs) share a cohort, reclaimWithinCohort Any,
withinClusterQueue LowerPriority. At 0s g (cq-a, 2 GPUs, priority 100) runs and v (cq-b, 10 GPUs,
priority 100) borrows 6 of cq-a's. At 1s f (cq-a, 6, priority 0) fits cq-a's nominal quota and
reclaims from v. At 2s t (cq-a, 7, priority 100) asks at most its nominal quota, so it may preempt
f while borrowing; once f is gone, v (same priority, older) is ordered before t and takes the
capacity back; t has nothing to preempt, f reclaims from v again — and around it goes. Kueue
behaves so by default; with the (alpha) gate a head waiting for its preemptions goes first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kueuetop.sim.clock import SimClock
from kueuetop.sim.cluster import MAX_SAME_INSTANT
from kueuetop.sim.runner import run_scenario
from kueuetop.sim.scenarios.loader import load_scenario

SCENARIO = Path(__file__).with_name("preemptor_thrash.yaml")
GATE = ("\n---\napiVersion: kueuetop.io/v1\nkind: SimConfig\nmetadata: {name: cfg}\n"
        "spec:\n  featureGates: {PrioritizePreemptorWorkloads: true}\n")


def _run(tmp_path: Path, gate: bool) -> dict[str, Any]:
    f = tmp_path / "thrash.yaml"
    f.write_text(SCENARIO.read_text() + (GATE if gate else ""))
    report, _ = run_scenario(load_scenario(str(f)), 30.0)
    return {w["name"]: w for w in report["workloads"]} | {"_errors": report["errors"]}


def test_without_the_gate_the_reclaimer_and_the_borrower_evict_each_other(tmp_path: Path) -> None:
    wls = _run(tmp_path, gate=False)
    assert wls["t"]["state"] == "pending"  # the preemptor never gets in
    assert len(wls["v"]["evictions"]) > 10 and len(wls["f"]["evictions"]) > 10
    assert {e["reason"] for e in wls["v"]["evictions"]} == {"Preempted"}


def test_with_prioritize_preemptor_workloads_the_preemptor_is_admitted(tmp_path: Path) -> None:
    wls = _run(tmp_path, gate=True)
    assert not wls["_errors"]
    assert [wls[n]["state"] for n in ("g", "t", "f", "v")] == ["admitted", "admitted", "pending", "pending"]
    # One eviction each, at the moment the story says: v reclaimed by f at 1s, f preempted by t at 2s.
    assert [e["time"] for e in wls["v"]["evictions"]] == [1.0]
    assert [e["time"] for e in wls["f"]["evictions"]] == [2.0]
    assert wls["t"]["admittedAt"] == 2.0


class _Spinner:
    """A controller that always wants to run again at the same instant."""

    name = "spinner"

    def reconcile(self, now: float) -> bool:
        return False

    def next_wakeup(self, now: float) -> float:
        return now


def test_a_run_stuck_at_one_instant_stops_with_an_error_instead_of_hanging() -> None:
    from kueuetop.sim.cluster import SimCluster

    clock = SimClock(1_767_225_600.0, speed=None)
    cluster = SimCluster(load_scenario(str(SCENARIO)), clock)
    cluster.controllers.append(_Spinner())
    cluster.run_for(60.0)
    assert clock.now() == clock.start  # time never moved
    assert len(cluster.errors) == 1 and "simulated time stopped at t=0.000s" in cluster.errors[0]
    assert str(MAX_SAME_INSTANT) in cluster.errors[0]
