"""Run the `xl` scale scenario to its end and write what the completion test checks as JSON.

Started by tests/conftest.py in a subprocess when the session begins, so that on a 2-core
machine it runs beside the rest of the suite; `test_sim_xl.py` reads its output at the end.

    python -m tests.xl_completion_run OUT.json [SCENARIO]    # SCENARIO: xl unless given
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from collections import Counter

from tests.test_sim_scale_scenarios import KUEUE, run_to_completion

XL_WORKLOADS = 100_000
SAMPLE_EVERY = 2_000  # steps between quota-invariant checks (each walks 100,000 workloads)


def summary(name: str = "xl") -> dict:
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


def main(out: str, name: str = "xl") -> int:
    try:
        result = summary(name)
        code = 0
    except BaseException:  # an invariant broken mid-run is the finding: report it, don't lose it
        result = {"error": traceback.format_exc()}
        code = 1
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    return code


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
