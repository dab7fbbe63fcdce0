"""A built-in scenario run to completion in virtual time, headless: does it finish, and at what cost.

Builds the scenario's simulated cluster (`kueuetop.sim.wiring.build_cluster`, no event
recording) and runs it until nothing is scheduled any more (`run_for(..., until_idle=True)`),
watching for instants the clock never leaves. Prints one JSON document:

- wallSeconds / cpuSeconds for the run (the scenario's generation and loading excluded);
- simulatedSeconds: when the cluster went idle;
- workloads: total, finished, inactive (created with spec.active=false: `large` and `xl` hold
  1 % that way, and they never run), and any other unfinished ones with their states, which a
  completed run must not have;
- cycles, admissions, evictions, the most evictions of one workload, the most scheduling
  cycles spent at one simulated instant;
- errors the cluster reported (a stuck instant, a malformed object).

Exit status 0 when the run completed: idle, no errors, every active workload finished.

Usage (repository root, project virtualenv):

    python benchmarks/scale_completion.py large        # 20,000 workloads; ~3 CPU-minutes
    python benchmarks/scale_completion.py kueue-perf-baseline
    python benchmarks/scale_completion.py xl --progress 60    # 100,000 workloads, 5,000 nodes; ~22 CPU-minutes
    python benchmarks/scale_completion.py xl --check          # the same run under the completion tests'
                                                              # checks (benchmarks/completion_checks.py)

`--check` is how `xl` runs to completion outside the test suite (it takes longer than the suite's
15-minute budget): quota invariants every 2,000 steps, simulated time never backwards, no spinning
instant, and the end state (every active workload finished, the inactive ones holding nothing, no
ClusterQueue reserving, every pod ended). Exit status 1 and the failed checks listed when one fails.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kueuetop.sim.clock import SimClock
from kueuetop.sim.runner import VIRTUAL_EPOCH
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.wiring import build_cluster

KUEUE = "kueue.x-k8s.io"
HORIZON = 30 * 24 * 3600.0  # a bound on simulated time only; runs end when the cluster is idle


def _true(obj: dict, type_: str) -> bool:
    conds = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == type_ and c.get("status") == "True" for c in conds if isinstance(c, dict))


def _state(obj: dict) -> str:
    for t in ("Finished", "Admitted", "QuotaReserved", "Evicted"):
        if _true(obj, t):
            return t
    return "Pending"


def run(name: str, progress: float = 0.0) -> dict[str, Any]:
    scenario = load_scenario(name)
    clock = SimClock(VIRTUAL_EPOCH)
    parts = build_cluster(scenario, clock, record_events=False)
    cluster = parts.cluster
    instant = [None, 0, 0]  # instant, cycles when it began, most cycles at one instant
    reported = [time.process_time()]

    def on_step(c: Any) -> None:
        now, cycles = c.clock.now(), parts.kueue.cycles
        if now != instant[0]:
            instant[0], instant[1] = now, cycles
        instant[2] = max(instant[2], cycles - instant[1])
        if progress and time.process_time() - reported[0] >= progress:
            reported[0] = time.process_time()
            print(json.dumps({"cpuSeconds": round(reported[0] - cpu0, 1), "simulatedSeconds":
                              round(now - c.clock.start, 1), "cycles": cycles}), file=sys.stderr, flush=True)

    wall0, cpu0 = time.perf_counter(), time.process_time()
    cluster.run_for(HORIZON, until_idle=True, on_step=on_step)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    wls, _ = cluster.store.list(KUEUE, "workloads", copy=False)
    inactive = [w for w in wls if (w.get("spec") or {}).get("active") is False and not _true(w, "Finished")]
    finished = sum(1 for w in wls if _true(w, "Finished"))
    others = Counter(_state(w) for w in wls
                     if not _true(w, "Finished") and (w.get("spec") or {}).get("active") is not False)
    evictions = [sum(int(e.get("count", 0)) for e in ((w.get("status") or {}).get("schedulingStats") or {})
                     .get("evictions") or []) for w in wls]
    idle = cluster.idle()
    errors = list(cluster.errors) + [f"malformed {k}: {v}" for k, v in parts.kueue.broken.items()]
    return {
        "scenario": name,
        "completed": idle and not errors and not others,
        "wallSeconds": round(wall, 1),
        "cpuSeconds": round(cpu, 1),
        "simulatedSeconds": round(clock.now() - clock.start, 1),
        "idle": idle,
        "workloads": {"total": len(wls), "finished": finished, "inactive": len(inactive),
                      "unfinishedActive": dict(others)},
        "cycles": parts.kueue.cycles,
        "evictions": sum(evictions),
        "mostEvictionsOfOneWorkload": max(evictions, default=0),
        "mostCyclesAtOneInstant": instant[2],
        "errors": errors,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario", help="a built-in scenario name or a scenario file")
    ap.add_argument("--progress", type=float, default=0.0, metavar="CPU_SECONDS",
                    help="print how far the run got to stderr every this many CPU seconds")
    ap.add_argument("--check", action="store_true",
                    help="run under the completion tests' invariant and end-state checks")
    args = ap.parse_args(argv)
    if args.check:
        return _checked(args.scenario)
    result = run(args.scenario, args.progress)
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0 if result["completed"] else 1


def _checked(name: str) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' invariant checker
    from benchmarks.completion_checks import failures, profile_of, summary

    try:
        result = summary(name)
    except AssertionError as exc:  # an invariant broken mid-run is the finding: report it
        json.dump({"scenario": name, "completed": False, "failures": [f"invariant: {exc}"]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 1
    failed = failures(result, profile_of(name))
    json.dump({"scenario": name, "completed": not failed, "failures": failed, **result}, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
