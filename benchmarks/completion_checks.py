"""A scale scenario run to its end under the checks of the completion tests, for scenarios too big
for the test suite (`xl`: about 20 CPU-minutes; Kueue's `kueue-perf-large`: about 1.5).

The run is the test suite's own `run_to_completion` (quota invariants every `Profile.sample_every`
simulated instants and at the end, simulated time never backwards, no instant spinning); `summary`
reads the end state and `failures` lists every end-state check of the scenario's `Profile` that
does not hold (empty: the run completed as it must). `benchmarks/scale_completion.py SCENARIO
--check` prints both as JSON.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

from tests.sim.test_sim_scale_scenarios import KUEUE, run_to_completion


@dataclass(frozen=True)
class Profile:
    """What a completed run of a scenario looks like."""

    workloads: int | None  # None: whatever the scenario created
    cluster_queues: int | None
    inactive: bool  # created with 1 % spec.active=false, which never run (ARCHITECTURE §5)
    pods: bool  # Jobs' pods run on nodes; False: Kueue's perf harness finishes them without pods
    sample_every: int  # simulated instants between quota-invariant checks


PROFILES = {
    # Each check walks every workload (100,000 on xl); large has over 20,000 instants, Kueue's configs ~70.
    "xl": Profile(100_000, 1_000, inactive=True, pods=True, sample_every=2_000),
    "large": Profile(20_000, 500, inactive=True, pods=True, sample_every=250),
    "kueue-perf-large": Profile(50_000, None, inactive=False, pods=False, sample_every=5),
    "kueue-perf-baseline": Profile(15_000, None, inactive=False, pods=False, sample_every=5),
}
OTHER = Profile(None, None, inactive=False, pods=True, sample_every=50)


def profile_of(name: str) -> Profile:
    return PROFILES.get(name, OTHER)


def summary(name: str) -> dict:
    stats: dict = {}
    cpu0, wall0 = time.process_time(), time.perf_counter()
    _, parts = run_to_completion(name, duration=30 * 24 * 3600.0, sample_every=profile_of(name).sample_every,
                                 stats=stats)
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


def failures(result: dict, profile: Profile) -> list[str]:
    """The end-state checks that do not hold (ARCHITECTURE §5: every active workload finishes, the
    1 % created inactive stay so and hold nothing, no ClusterQueue reserves, every pod ended)."""
    pods = result["workloadPodsByPhase"]
    workloads = profile.workloads if profile.workloads is not None else result["workloads"]
    cqs = profile.cluster_queues if profile.cluster_queues is not None else result["clusterQueues"]
    inactive_ok = (0 < result["inactive"] <= workloads // 100) if profile.inactive else result["inactive"] == 0
    if profile.pods:
        pods_ok = pods.get("Succeeded", 0) > 0 and not {"Pending", "Running"} & pods.keys()
    else:
        pods_ok = not pods
    checks = {
        "idle, no errors, no malformed objects": result["idle"] and not result["errors"] and not result["broken"],
        f"{workloads} workloads": result["workloads"] == workloads,
        "every active workload finished": not result["unfinishedActive"],
        "0 < inactive <= 1 %" if profile.inactive else "none inactive": inactive_ok,
        "inactive workloads hold no quota": result["inactiveHoldingQuota"] == 0,
        "finished + inactive = all": result["finished"] + result["inactive"] == workloads,
        f"{cqs} ClusterQueues, none reserving": result["clusterQueues"] == cqs
        and not result["reservingClusterQueues"],
        "pods ran and ended (some Succeeded, none Pending or Running)" if profile.pods
        else "no pods (Kueue's perf harness finishes workloads itself)": pods_ok,
        "invariants checked along the run": result["invariantChecks"] > 10 and result["steps"] > 0,
    }
    return [name for name, ok in checks.items() if not ok]
