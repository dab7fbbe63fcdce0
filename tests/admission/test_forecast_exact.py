"""The forecast is the simulator's future when runtimes are exact and nothing arrives after now.

ARCHITECTURE §8: "Exact against the simulator when runtimes are known: any difference is a bug."
A scenario runs in the simulator to an instant T; the scenario's later arrivals are dropped
(`SimCluster.drop_later_steps`); the forecast starts from the typed snapshot of the store at T with
every workload's true runtime; the simulator then runs on until idle. Every workload pending at T
must be admitted (its first Admitted transition after T, from the event recorder) within a second
of the forecast's time, or be "never" on both sides.

The scenario: three ClusterQueues of 8 GPUs in one cohort (borrowing allowed), preemption of lower
priorities within a ClusterQueue and reclaim of lent quota within the cohort; 40 Jobs of five
shapes and two WorkloadPriorityClasses arriving over 800 s with runtimes of 3 to 13 minutes; a
fixed node pool with room for every admitted pod, so pods start the instant they are admitted.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueuetop.admission.forecast import forecast
from kueuetop.sim.clock import SimClock
from kueuetop.sim.observed import admissions, exact_runtimes, snapshot_of
from kueuetop.sim.recorder import PREEMPTED
from kueuetop.sim.runner import VIRTUAL_EPOCH
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.wiring import build_cluster

KUEUE = "kueue.x-k8s.io/v1beta2"
TEAMS = ("team-a", "team-b", "team-c")
SHAPES = ((1, 1), (2, 1), (4, 1), (2, 2), (8, 1))  # (GPUs per pod, pods)
RUNTIMES = ("3m", "5m", "7m", "11m", "13m")
IDLE = 30 * 24 * 3600.0


def scenario_docs(reclaim: str, n_jobs: int = 40, seed: int = 7) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [
        # 32 nodes × 8 GPUs against 24 GPUs of quota: no admitted pod ever waits for a node.
        {"apiVersion": "kueuetop.io/v1", "kind": "NodePool", "metadata": {"name": "h100"},
         "spec": {"machineType": "a3-highgpu-8g", "gpu": {"model": "NVIDIA H100 80GB HBM3", "count": 8},
                  "zones": ["us-central1-c"], "size": 32, "autoscaling": False}},
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "h100"}},
        {"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": "low"}, "value": 100},
        {"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": "high"}, "value": 1000},
    ]
    for team in TEAMS:
        docs += [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": team}},
            {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": team},
             "spec": {"cohortName": "research", "namespaceSelector": {},
                      "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": reclaim},
                      "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                                          "flavors": [{"name": "h100", "resources": [
                                              {"name": "cpu", "nominalQuota": 1000},
                                              {"name": "memory", "nominalQuota": "10000Gi"},
                                              {"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]}},
            {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": team},
             "spec": {"clusterQueue": team}},
        ]
    rnd = random.Random(seed)  # fixed: the same Jobs every run
    for i in range(n_jobs):
        team = TEAMS[rnd.randrange(len(TEAMS))]
        gpus, pods = rnd.choice(SHAPES)
        priority = "high" if rnd.random() < 0.3 else "low"
        docs.append({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"job-{i:02d}", "namespace": team,
                         "labels": {"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/priority-class": priority},
                         "annotations": {"kueuetop.io/runtime": rnd.choice(RUNTIMES),
                                         "kueuetop.io/at": f"{i * 20 + rnd.randrange(20)}s"}},
            "spec": {"parallelism": pods, "completions": pods, "suspend": True, "template": {"spec": {
                "restartPolicy": "Never",
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "containers": [{"name": "main", "image": "trainer", "resources": {"requests": {
                    "cpu": "1", "memory": "1Gi", "nvidia.com/gpu": gpus}}}]}}}})
    return docs


def forecast_vs_actual(scenario: str, at: float) -> tuple[list[str], int, int]:
    """(the workloads whose forecast differs from the simulator by 1 s or more, described;
    how many were pending at `at`; how many preemptions happened after it)."""
    parts = build_cluster(load_scenario(scenario), SimClock(VIRTUAL_EPOCH), record_events=False)
    cluster = parts.cluster
    cluster.run_for(at)
    cluster.drop_later_steps()
    now = cluster.clock.now()
    snap = snapshot_of(cluster.store, parts.kueue.config)
    runtimes = exact_runtimes(cluster.store)
    mark = len(parts.recorder.events)
    result = forecast(snap, runtimes, now, ranges=False)
    cluster.run_for(IDLE, until_idle=True)
    assert cluster.idle() and not cluster.errors, cluster.errors
    actual = admissions(parts.recorder.events, cluster.clock.start, mark)
    pending = sorted(k for k, w in snap.workloads.items() if not w.is_finished and not w.has_quota_reservation)
    differ = []
    for key in pending:
        wf = result.workloads[key]
        got, want = wf.start, actual.get(key)
        if (got is None) != (want is None) or (got is not None and want is not None and abs(got - want) >= 1):
            def rel(t: float | None) -> str:
                return "never" if t is None else f"T+{t - now:g}s"
            differ.append(f"{key[0]}/{key[1]}: forecast {rel(got)}, simulator {rel(want)}"
                          + (f" ({wf.never})" if wf.never else ""))
    preemptions = sum(1 for e in parts.recorder.events[mark:] if e.type == PREEMPTED)
    assert result.complete
    return differ, len(pending), preemptions


@pytest.mark.parametrize(("reclaim", "at"), [
    ("LowerPriority", 600.0), ("LowerPriority", 800.0), ("LowerPriority", 1000.0),
    # Any: the reclaimed workload is often one admitted at that very instant (admitted and
    # preempted at once), and heads are parked and retried several cycles per instant.
    ("Any", 400.0), ("Any", 800.0), ("Any", 1000.0),
])
def test_forecast_matches_the_simulator_for_every_pending_workload(tmp_path: Path, reclaim: str, at: float) -> None:
    path = tmp_path / "cohort.yaml"
    path.write_text(yaml.safe_dump_all(scenario_docs(reclaim)))
    differ, pending, preemptions = forecast_vs_actual(str(path), at)
    assert pending >= 8, "the instant should have a queue to forecast"
    assert preemptions >= 1, "the future should hold preemptions"
    assert not differ, f"{len(differ)} of {pending} pending workloads differ:\n" + "\n".join(differ)

