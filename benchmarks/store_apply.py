"""Micro-benchmark: applying a batch of 1,000 changed workloads to a store of 20,000.

Prints JSON: parse (informer thread, outside the store lock) and apply (store lock held) times.
Budget (ARCHITECTURE §5): 1,000 changed workloads to store and screen in < 100 ms.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

from kueuetop.kueue.parse import parse_object
from kueuetop.store import Entry, Store, StoreEvent


def workload(i: int, rv: int, admitted: bool) -> dict[str, Any]:
    ns, cq = f"team-{i % 200}", f"cq-{i % 500}"
    status: dict[str, Any] = {}
    if admitted:
        status = {"admission": {"clusterQueue": cq, "podSetAssignments": [
                      {"name": "main", "flavors": {"nvidia.com/gpu": "a100"}, "count": 1,
                       "resourceUsage": {"nvidia.com/gpu": "8"}}]},
                  "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                                  "lastTransitionTime": "2026-01-01T00:00:00Z"},
                                 {"type": "Admitted", "status": "True", "reason": "Admitted",
                                  "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": f"job-{i}", "namespace": ns, "uid": f"uid-{i}", "resourceVersion": str(rv),
                         "labels": {"kueue.x-k8s.io/job-uid": f"job-uid-{i}"},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": f"j{i}",
                                              "uid": f"job-uid-{i}", "controller": True}]},
            "spec": {"queueName": f"lq-{i % 2000}", "priority": i % 3, "podSets": [{"name": "main", "count": 1,
                     "template": {"spec": {"containers": [{"name": "c", "resources": {
                         "requests": {"nvidia.com/gpu": "8", "cpu": "32"}}}]}}}]},
            "status": status}


def entry(raw: dict[str, Any]) -> Entry:
    m = raw["metadata"]
    return Entry((m["namespace"], m["name"]), raw, parse_object(raw), m["uid"], m["resourceVersion"])


def main() -> None:
    store = Store()
    calls = []
    store.subscribe(lambda ch: calls.append(len(ch.get("workloads"))))
    t0 = time.perf_counter()
    store.apply(StoreEvent.replace("workloads", "workloads", [entry(workload(i, 1, False)) for i in range(20_000)]))
    initial = time.perf_counter() - t0
    parse_ms, apply_ms = [], []
    for round_ in range(10):
        t0 = time.perf_counter()
        events = [StoreEvent.upsert("workloads", "workloads", entry(workload(i, round_ + 2, round_ % 2 == 0)))
                  for i in range(round_ * 1000, round_ * 1000 + 1000)]
        t1 = time.perf_counter()
        store.apply_batch(events)
        t2 = time.perf_counter()
        parse_ms.append((t1 - t0) * 1000)
        apply_ms.append((t2 - t1) * 1000)
    t0 = time.perf_counter()
    store.snapshot()
    snapshot_ms = (time.perf_counter() - t0) * 1000
    print(json.dumps({
        "store_workloads": store.count("workloads"),
        "initial_replace_20k_s": round(initial, 3),
        "batch": 1000,
        "apply_ms_median": round(statistics.median(apply_ms), 2), "apply_ms_max": round(max(apply_ms), 2),
        "parse_ms_median": round(statistics.median(parse_ms), 2),
        "notifications_per_batch": calls[-1] == 1000 and len(calls) == 11,
        "snapshot_ms": round(snapshot_ms, 2),
    }, indent=1))


if __name__ == "__main__":
    main()
