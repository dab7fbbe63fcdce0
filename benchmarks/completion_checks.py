"""A scale scenario run to its end under the checks of the completion tests, for scenarios too big
for the test suite (`xl`: about 20 CPU-minutes).

The run is the test suite's own `run_to_completion` (quota invariants every SAMPLE_EVERY steps and
at the end, simulated time never backwards, no instant spinning); `summary` reads the end state and
`failures` lists every end-state check that does not hold (empty: the run completed as it must).
`benchmarks/scale_completion.py SCENARIO --check` prints both as JSON.
"""

from __future__ import annotations

import time
from collections import Counter

from tests.sim.test_sim_scale_scenarios import KUEUE, run_to_completion

SAMPLE_EVERY = 2_000  # steps between quota-invariant checks (each walks 100,000 workloads on xl)


def summary(name: str) -> dict:
    stats: dict = {}
    cpu0, wall0 = time.process_time(), time.perf_counter()
    _, parts = run_to_completion(name, duration=30 * 24 * 3600.0, sample_every=SAMPLE_EVERY, stats=stats)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    snap = parts.kueue.snapshot()
    store = parts.cluster.store
    cqs, _ = store.list(KUEUE, "clusterqueues", copy=False)
    pods, _ = store.list("", "pods", copy=False)
    # The scale scenarios' Workloads have no Job: their pods are owned by the Workload itself.
    job_pods = Counter((p.get("status") or {}).get("phase", "Pending") for p in pods
                       if any(r.get("kind") in ("Job", "Workload") for r in p["metadata"].get("ownerReferences") or []))
    inactive = [w for w in snap.workloads.values() if not w.active]
    return {
        "cpuSeconds": round(cpu, 1), "wallSeconds": round(wall, 1),
        "simulatedSeconds": round(parts.cluster.clock.elapsed(), 1),
        "idle": parts.cluster.idle(), "errors": parts.cluster.errors, "broken": parts.kueue.broken,
        "workloads": len(snap.workloads),
        "finished": sum(1 for w in snap.workloads.values() if w.is_finished),
        "inactive": len(inactive),
        "inactiveHoldingQuota": sum(1 for w in inactive if w.has_quota_reservation),
        "unfinishedActive": sorted("/".join(w.key) for w in snap.workloads.values()
                                   if w.active and not w.is_finished)[:20],
        "reservingClusterQueues": sorted(cq["metadata"]["name"] for cq in cqs
                                         if (cq.get("status") or {}).get("reservingWorkloads")),
        "clusterQueues": len(cqs),
        "workloadPodsByPhase": dict(job_pods),
        "cycles": parts.kueue.cycles,
        **stats,
    }


def failures(result: dict, workloads: int, cluster_queues: int) -> list[str]:
    """The end-state checks that do not hold (ARCHITECTURE §5: every active workload finishes, the
    1 % created inactive stay so and hold nothing, no ClusterQueue reserves, every pod ended)."""
    pods = result["workloadPodsByPhase"]
    checks = {
        "idle, no errors, no malformed objects": result["idle"] and not result["errors"] and not result["broken"],
        f"{workloads} workloads": result["workloads"] == workloads,
        "every active workload finished": not result["unfinishedActive"],
        "0 < inactive <= 1 %": 0 < result["inactive"] <= workloads // 100,
        "inactive workloads hold no quota": result["inactiveHoldingQuota"] == 0,
        "finished + inactive = all": result["finished"] + result["inactive"] == workloads,
        f"{cluster_queues} ClusterQueues, none reserving": result["clusterQueues"] == cluster_queues
        and not result["reservingClusterQueues"],
        "pods ran and ended (some Succeeded, none Pending or Running)": pods.get("Succeeded", 0) > 0
        and not {"Pending", "Running"} & pods.keys(),
        "invariants checked along the run": result["invariantChecks"] > 10 and result["steps"] > 0,
    }
    return [name for name, ok in checks.items() if not ok]
