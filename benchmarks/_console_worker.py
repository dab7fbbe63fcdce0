"""The console's forecast worker, timed in a process that holds what a console holds.

`benchmarks/forecast.py` builds and runs the simulated cluster in its own process: hundreds of
megabytes of simulator that a console never has. A forecast child forked from that process
copies its page tables and touches its pages, so timing the worker there measured the
benchmark, not the console. So `forecast.py` hands the cluster's objects, as the console's
informers would list them (raw API dicts), to this file run as a fresh process: it parses them
into a store as the console does, keeps its heap as the console keeps it, and times fresh
forecast workers on it, printing one JSON document.

Run by `forecast.py` (`console_worker`), not by hand:

    python benchmarks/_console_worker.py OBJECTS.pickle
"""

from __future__ import annotations

import contextlib
import gc
import json
import pickle
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from kueuetop.kueue.errors import KueueParseError
from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.pool_growth import AutoscalerRead
from kueuetop.kueue.workload import Workload
from kueuetop.store import Entry, Store, StoreEvent
from kueuetop.store import events as K
from kueuetop.tui.forecaster import Forecaster
from kueuetop.tui.heap import HeapFreezer, IdleCollector

SAMPLES = 3  # fresh console workers timed per instant: one forecast's wall time varies by a fifth here

# What the console's informers list, as (API group, plural, store kind).
KINDS = (("kueue.x-k8s.io", "clusterqueues", K.CLUSTER_QUEUES), ("kueue.x-k8s.io", "localqueues", K.LOCAL_QUEUES),
         ("kueue.x-k8s.io", "resourceflavors", K.RESOURCE_FLAVORS), ("kueue.x-k8s.io", "cohorts", K.COHORTS),
         ("kueue.x-k8s.io", "admissionchecks", K.ADMISSION_CHECKS), ("", "namespaces", K.NAMESPACES),
         ("kueue.x-k8s.io", "provisioningrequestconfigs", K.PROVISIONING_CONFIGS),
         ("kueue.x-k8s.io", "workloads", K.WORKLOADS), ("", "nodes", K.NODES), ("", "pods", K.PODS))


def store_of(raws: Mapping[str, Iterable[dict]]) -> Store:
    """A console's store holding these raw objects (per store kind), parsed as its sources parse
    them; objects that do not parse are left out, as the console's sources leave them."""
    events = []
    for kind, items in raws.items():
        for raw in items:
            meta = raw["metadata"]
            with contextlib.suppress(KueueParseError):
                events.append(StoreEvent.upsert(kind, "sim", Entry(
                    key=(meta.get("namespace", ""), meta["name"]), raw=raw, obj=parse_object(raw),
                    uid=meta.get("uid", ""), resource_version=meta.get("resourceVersion", ""))))
    store = Store()
    store.apply_batch(events)
    return store


@contextlib.contextmanager
def console_heap(count: Callable[[], int]) -> Iterator[None]:
    """The heap as the console keeps it (tui/app.py) while forecasts are timed: what is loaded
    frozen (HeapFreezer), Python's own full collections off (IdleCollector, whose polls wait for
    quiet). Without it a full collection walks the whole heap inside the timing."""
    HeapFreezer(count).maybe_freeze()
    collector = IdleCollector()
    collector.start()
    try:
        yield
    finally:
        collector.stop()
        gc.unfreeze()


def _cpu() -> float:
    """CPU seconds of this process and of its children reaped so far (a forecast child and its
    range helper count once reaped)."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def console_worker(store: Store, read: AutoscalerRead, now: float, samples: int = SAMPLES) -> dict[str, Any]:
    """The console's forecast worker on `store`: its history from the finished Workloads still
    there, its own engine cache, one forecast, the heap kept as the console keeps it; as the
    console runs it (in a child process, where it can) and on the worker's thread (`inProcess`,
    `kueuetop --forecast-in-process`)."""
    out = _timed(store, read, now, samples, isolate=None)
    if out["childProcess"]:
        out["inProcess"] = _timed(store, read, now, samples, isolate=False)
    return out


def _timed(store: Store, read: AutoscalerRead, now: float, samples: int, isolate: bool | None) -> dict[str, Any]:
    """Wall seconds until the expected starts are shown and until their ranges are, and CPU
    seconds (the children's included): the median of `samples` fresh workers, each listed."""
    runs = []
    with console_heap(lambda: sum(store.count(k) for k in (K.WORKLOADS, K.PODS, K.NODES))):
        for _ in range(samples):
            worker = Forecaster(store, clock=lambda: now, pool_limits=lambda: read, isolate=isolate)
            worker.history.record_all(w for w in store.objects(K.WORKLOADS).values() if isinstance(w, Workload))
            store.set_forecast(None, set())  # nothing on screen: each worker shows its soonest starts early
            cpu = _cpu()
            result = worker.run_once()
            cpu = _cpu() - cpu
            assert result is not None
            runs.append((worker, result, cpu))
    worker, result, _ = runs[-1]
    early = [w.early_seconds for w, _, _ in runs if w.early_seconds is not None]
    first = [w.first_seconds for w, _, _ in runs]
    last = [w.last_seconds for w, _, _ in runs]
    return {"samples": samples, "childProcess": worker.isolate,
            "soonestShownWallSeconds": round(statistics.median(early), 2) if early else None,
            # Of `answered`, how many had their start on screen then.
            "soonestShownAnswered": statistics.median_low(w.early_answered for w, _, _ in runs
                                                           if w.early_seconds is not None) if early else None,
            "expectedShownWallSeconds": round(statistics.median(first), 2),
            "expectedShownWallSecondsEach": [round(x, 2) for x in first],
            "withRangesWallSeconds": round(statistics.median(last), 2),
            "withRangesWallSecondsEach": [round(x, 2) for x in last],
            "cpuSeconds": round(statistics.median(c for _, _, c in runs), 2),
            "complete": result.complete, "runsInHistory": len(worker.history), "podsPlaced": result.pods_placed,
            "answered": sum(1 for w in result.workloads.values() if w.start is not None)}


def main(argv: list[str]) -> int:
    with open(argv[0], "rb") as f:
        raws, read, now, samples = pickle.load(f)
    store = store_of(raws)
    del raws
    json.dump(console_worker(store, read, now, samples), sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
