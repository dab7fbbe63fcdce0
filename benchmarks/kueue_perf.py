"""Kueue's scheduler-performance configs in kueuetop's simulator, in virtual time.

Runs the `kueue-perf-baseline` (or, with --large, `kueue-perf-large`) built-in scenario through
`kueuetop.sim.runner.run_scenario(..., until_idle=True, record_events=False)` and prints one
JSON document: wall and CPU seconds, scheduling cycles, and the figures Kueue's perf runner
reports (test/performance/scheduler), each beside Kueue's published value for the same config
and the bounds of its rangespec.yaml. As in Kueue's harness, no nodes or pods exist: the
harness's controller (`kueuetop/sim/jobs/perf_runner.py`) finishes each Workload once it has been
admitted for its running time.

- makespan: first Workload created → last Workload finished, in *simulated* milliseconds (virtual
  time: it is reported beside Kueue's published wall-clock figure for reference, labelled as
  such, never as a like-for-like comparison);
- cq usage: per ClusterQueue class, the average over the makespan of admitted cpu ÷ nominal
  quota, in percent;
- average time to admission per workload class (small / medium / large): admission time −
  creation time, in milliseconds;
- the physical lower bound on the makespan: total requested cpu·seconds ÷ total nominal cpu.

Figures that need finished workloads are null when none finished within the simulated window.

Usage (from the repository root, in the project's virtualenv):

    python benchmarks/kueue_perf.py                  # baseline, until the cluster is idle
    python benchmarks/kueue_perf.py --large          # the large-scale config
    python benchmarks/kueue_perf.py --for 120s       # stop after 120 simulated seconds
    python benchmarks/kueue_perf.py --profile out.pstats   # also write cProfile stats
"""

from __future__ import annotations

import argparse
import cProfile
import json
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kueuetop.kueue.quantity import parse_resource_value
from kueuetop.sim.recorder import ADMITTED, CREATED, EVICTED, FINISHED
from kueuetop.sim.runner import run_scenario
from kueuetop.sim.scenarios.generators import PERF_CLASS_LABEL
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.scenarios.scenario import Scenario

# Kueue's published results for the baseline config (the perf runner's summary on main).
PUBLISHED = {
    "kueue-perf-baseline": {
        "makespanMs": 351_116,
        "cqUsagePercent": {"cq": 55.9},
        "avgTimeToAdmissionMs": {"large": 16_501, "medium": 76_768, "small": 215_468},
    },
}
DEFAULT_WINDOW = 24 * 3600.0  # until_idle ends the run long before this

Key = tuple[str, str]


@dataclass(frozen=True)
class WorkloadInfo:
    wl_class: str
    cluster_queue: str  # the perf generator names LocalQueue, namespace and CQ alike
    cpu_milli: int


@dataclass(frozen=True)
class QueueInfo:
    cq_class: str
    nominal_milli: int


def parse_duration(text: str) -> float:
    """Seconds from "3600", "3600s", "90m" or "2h"."""
    units = {"s": 1.0, "m": 60.0, "h": 3600.0}
    text = text.strip()
    if text and text[-1] in units:
        return float(text[:-1]) * units[text[-1]]
    return float(text)


def _cpu_request(obj: Mapping[str, Any]) -> int:
    """Total cpu (millicores) of a Workload's pod sets."""
    total = 0
    for ps in (obj.get("spec") or {}).get("podSets") or []:
        for c in ((ps.get("template") or {}).get("spec") or {}).get("containers") or []:
            cpu = ((c.get("resources") or {}).get("requests") or {}).get("cpu")
            if cpu is not None:
                total += parse_resource_value("cpu", cpu) * int(ps.get("count", 1))
    return total


def _nominal_cpu(obj: Mapping[str, Any]) -> int:
    total = 0
    for g in (obj.get("spec") or {}).get("resourceGroups") or []:
        for fq in g.get("flavors") or []:
            for r in fq.get("resources") or []:
                if r.get("name") == "cpu":
                    total += parse_resource_value("cpu", r.get("nominalQuota", 0))
    return total


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _key(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return meta.get("namespace", ""), meta.get("name", "")


def scenario_inventory(scenario: Scenario) -> tuple[dict[Key, WorkloadInfo], dict[str, QueueInfo]]:
    """Workload classes, requests and ClusterQueue quotas, as the generator wrote them."""
    lq_to_cq = {_key(o): (o.get("spec") or {}).get("clusterQueue", "") for o in scenario.objects("LocalQueue")}
    queues = {(o.get("metadata") or {}).get("name", ""): QueueInfo(_labels(o).get(PERF_CLASS_LABEL, ""), _nominal_cpu(o))
              for o in scenario.objects("ClusterQueue")}
    workloads = {}
    for o in scenario.objects("Workload"):
        key = _key(o)
        cq = lq_to_cq.get((key[0], (o.get("spec") or {}).get("queueName", "")), "")
        workloads[key] = WorkloadInfo(_labels(o).get(PERF_CLASS_LABEL, ""), cq, _cpu_request(o))
    return workloads, queues


def physical_lower_bound_s(scenario: Scenario, workloads: Mapping[Key, WorkloadInfo],
                           queues: Mapping[str, QueueInfo]) -> float | None:
    """Σ requested cpu·s ÷ Σ nominal cpu: no schedule can finish sooner (runtimes from the
    generator's running-ms label)."""
    from kueuetop.sim.scenarios.generators import PERF_RUNTIME_LABEL

    nominal = sum(q.nominal_milli for q in queues.values())
    if not nominal:
        return None
    work = 0.0
    for o in scenario.objects("Workload"):
        ms = _labels(o).get(PERF_RUNTIME_LABEL)
        if ms is not None:
            work += workloads[_key(o)].cpu_milli * int(ms) / 1000.0
    return work / nominal


def _first_times(events: Iterable[Mapping[str, Any]], kind: str) -> dict[Key, float]:
    out: dict[Key, float] = {}
    for e in events:
        if e["type"] == kind:
            out.setdefault((e["namespace"], e["name"]), e["time"])
    return out


def makespan(events: list[Mapping[str, Any]], n_workloads: int) -> tuple[float | None, float | None]:
    """(first creation, last finish) in simulated seconds; the end is None until every
    workload has finished (Kueue's runner waits for all of them)."""
    created = [e["time"] for e in events if e["type"] == CREATED]
    finished = _first_times(events, FINISHED)
    start = min(created) if created else None
    end = max(finished.values()) if finished and len(finished) >= n_workloads else None
    return start, end


def admitted_intervals(events: list[Mapping[str, Any]]) -> dict[Key, list[tuple[float, float | None]]]:
    """Per workload, the spans during which it held admitted quota (admitted → finished/evicted)."""
    spans: dict[Key, list[tuple[float, float | None]]] = defaultdict(list)
    for e in sorted(events, key=lambda e: e["time"]):
        key = (e["namespace"], e["name"])
        if e["type"] == ADMITTED:
            spans[key].append((e["time"], None))
        elif e["type"] in (FINISHED, EVICTED) and spans[key] and spans[key][-1][1] is None:
            spans[key][-1] = (spans[key][-1][0], e["time"])
    return spans


def cq_usage_percent(events: list[Mapping[str, Any]], workloads: Mapping[Key, WorkloadInfo],
                     queues: Mapping[str, QueueInfo], start: float, end: float) -> dict[str, float]:
    """Per CQ class: ∫ admitted cpu dt ÷ (nominal cpu × makespan), as Kueue's "cq usage"."""
    used: dict[str, float] = defaultdict(float)
    for key, spans in admitted_intervals(events).items():
        info = workloads.get(key)
        if info is None:
            continue
        for a, b in spans:
            b = end if b is None else min(b, end)
            used[queues[info.cluster_queue].cq_class] += info.cpu_milli * max(0.0, b - max(a, start))
    nominal: dict[str, int] = defaultdict(int)
    for q in queues.values():
        nominal[q.cq_class] += q.nominal_milli
    span = end - start
    return {c: round(100.0 * used[c] / (nominal[c] * span), 1) for c in sorted(nominal) if nominal[c] and span > 0}


def avg_time_to_admission_ms(events: list[Mapping[str, Any]], workloads: Mapping[Key, WorkloadInfo]
                             ) -> dict[str, dict[str, float | int | None]]:
    """Per workload class: mean of (first admission − creation) over admitted workloads."""
    created, admitted = _first_times(events, CREATED), _first_times(events, ADMITTED)
    waits: dict[str, list[float]] = defaultdict(list)
    totals: dict[str, int] = defaultdict(int)
    for key, info in workloads.items():
        totals[info.wl_class] += 1
        if key in created and key in admitted:
            waits[info.wl_class].append(admitted[key] - created[key])
    return {c: {"avgMs": round(1000.0 * sum(waits[c]) / len(waits[c])) if waits[c] else None,
                "admitted": len(waits[c]), "workloads": totals[c]} for c in sorted(totals)}


def _beside(ours: Mapping[str, Any], published: Mapping[str, Any], bound_key: str,
            bounds: Mapping[str, Any], value_key: str | None = None) -> dict[str, Any]:
    out = {}
    for cls in sorted(set(ours) | set(published) | set(bounds)):
        v = ours.get(cls)
        out[cls] = {"kueuetop": v.get(value_key) if (value_key and isinstance(v, Mapping)) else v,
                    "kueue": published.get(cls), bound_key: bounds.get(cls)}
        if value_key and isinstance(v, Mapping):
            out[cls].update({k: x for k, x in v.items() if k != value_key})
    return out


def summarize(scenario: Scenario, report: Mapping[str, Any], stats: Mapping[str, Any]) -> dict[str, Any]:
    workloads, queues = scenario_inventory(scenario)
    events = report["events"]
    published = PUBLISHED.get(scenario.name, {})
    rangespec = scenario.meta.get("kueueRangespec") or {}
    start, end = makespan(events, len(workloads))
    span_ms = round(1000.0 * (end - start)) if start is not None and end is not None else None
    usage = cq_usage_percent(events, workloads, queues, start, end) if span_ms else {}
    bound = physical_lower_bound_s(scenario, workloads, queues)
    return {
        "scenario": scenario.name,
        "kueueSource": scenario.meta.get("kueueSource"),
        "workloads": len(workloads),
        "clusterQueues": len(queues),
        "wallSeconds": stats.get("wallSeconds"),
        "cpuSeconds": stats.get("cpuSeconds"),
        "cycles": stats.get("cycles"),
        "simulatedSeconds": stats.get("simulatedSeconds"),
        "summary": report.get("summary"),
        "finished": len(_first_times(events, FINISHED)),
        # Two different clocks, not a comparison: the simulation's makespan is virtual time (its
        # pods run for exactly their scripted runtime, the engine's cycles take no simulated time);
        # Kueue's harness reports wall-clock milliseconds on a real control plane.
        "makespanMs": {"kueuetopSimulatedMs": span_ms, "kueueWallClockMs": published.get("makespanMs"),
                       "kueueMaxWallClockMs": rangespec.get("maxWallMs"),
                       "physicalLowerBoundSimulatedMs": round(1000.0 * bound) if bound is not None else None,
                       "clocks": "kueuetop: simulated (virtual) time; kueue: wall clock — not comparable"},
        "cqUsagePercent": _beside(usage, published.get("cqUsagePercent", {}), "kueueMin",
                                  rangespec.get("clusterQueueClassesMinUsage", {})),
        "avgTimeToAdmissionMs": _beside(avg_time_to_admission_ms(events, workloads),
                                        published.get("avgTimeToAdmissionMs", {}), "kueueMax",
                                        rangespec.get("wlClassesMaxAvgTimeToAdmissionMs", {}), "avgMs"),
        "errors": report.get("errors", [])[:20],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--large", action="store_true", help="run kueue-perf-large instead of the baseline")
    ap.add_argument("--for", dest="window", default=None, help="simulated window, e.g. 3600s (default: until idle)")
    ap.add_argument("--profile", metavar="FILE", help="write cProfile stats (pstats) to FILE")
    args = ap.parse_args(argv)
    scenario = load_scenario("kueue-perf-large" if args.large else "kueue-perf-baseline")
    window = parse_duration(args.window) if args.window else DEFAULT_WINDOW
    prof = cProfile.Profile() if args.profile else None
    if prof is not None:
        prof.enable()
    report, stats = run_scenario(scenario, window, until_idle=True, record_events=False)
    if prof is not None:
        prof.disable()
        prof.dump_stats(args.profile)
    json.dump(summarize(scenario, report, stats), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
