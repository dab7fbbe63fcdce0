"""The controller of Kueue's scheduler performance harness (test/performance/scheduler/runner/
controller/controller.go), for the `kueue-perf-*` scenarios.

Kueue's harness runs its scheduler on envtest: no nodes, no pods, no job integration. Its own
controller plays the jobs: for a Workload labelled with its running time it

- finishes an eviction: UnsetQuotaReservationWithCondition(Pending, "Evicted by the test
  runner") — no Requeued condition, no pods to stop;
- finishes the Workload once it has been admitted for its running time: Finished=True,
  reason ByTest, "By test runner". The admission time is the moment it saw Admitted=True
  (kept in memory; the harness reads the condition's lastTransitionTime only after a restart,
  which a simulation does not have).

The simulator's job integration leaves these Workloads to this controller, so a perf scenario
measures what Kueue's harness measures.
"""

from __future__ import annotations

import heapq
import logging
from typing import Any

from kueuetop.admission import status_updates
from kueuetop.sim.kube.events import condition_is, write_condition
from kueuetop.sim.storage.objectstore import NotFound, ObjectStore, StoreError, WatchEvent
from kueuetop.sim.work_queue import drain

_log = logging.getLogger(__name__)

KUEUE_GROUP = "kueue.x-k8s.io"
# generator.go: RunningTimeLabel, ClassLabel, CleanupLabel.
PERF_RUNTIME_LABEL = "kueue.x-k8s.io/performance-scheduler-running-ms"
PERF_CLASS_LABEL = "kueue.x-k8s.io/performance-scheduler-class"
PERF_CLEANUP_LABEL = "kueue.x-k8s.io/performance-scheduler-cleanup"

EVICTED_REASON = "Pending"
EVICTED_MESSAGE = "Evicted by the test runner"
FINISHED_REASON = "ByTest"
FINISHED_MESSAGE = "By test runner"

Key = tuple[str, str]
Obj = dict[str, Any]


def runs_workload(wl: Any) -> bool:
    """Whether the perf runner plays this Workload's job: it carries the running-time label and
    no owner (the harness creates bare Workloads)."""
    if not isinstance(wl, dict):
        return False
    m = wl.get("metadata")
    if not isinstance(m, dict) or m.get("ownerReferences"):
        return False
    labels = m.get("labels")
    return isinstance(labels, dict) and PERF_RUNTIME_LABEL in labels


def running_seconds(wl: Obj) -> float:
    """The label's milliseconds; the runner logs a bad value and runs it for 0 ms."""
    raw = ((wl.get("metadata") or {}).get("labels") or {}).get(PERF_RUNTIME_LABEL)
    try:
        return max(0, int(str(raw))) / 1000.0
    except ValueError:
        _log.warning("workload %s/%s: cannot parse %s=%r, using 0", (wl.get("metadata") or {}).get("namespace"),
                     (wl.get("metadata") or {}).get("name"), PERF_RUNTIME_LABEL, raw)
        return 0.0


def _inputs(wl: Any) -> tuple:
    if not isinstance(wl, dict):
        return (None,)
    m = wl.get("metadata") or {}
    return (condition_is(wl, "Admitted"), condition_is(wl, "Evicted"), condition_is(wl, "Finished"), m.get("uid"), m.get("generation"),
            (m.get("labels") or {}).get(PERF_RUNTIME_LABEL))


class PerfRunner:
    """Wire with `cluster.add_controller(PerfRunner(store))`; acts only on `runs_workload`."""

    name = "perf-runner"

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self._dirty: dict[Key, None] = {}
        self._admitted_at: dict[str, float] = {}  # uid → when Admitted=True was first seen
        self._timers: list[tuple[float, Key]] = []
        self._due: dict[Key, float] = {}

    def on_event(self, event: WatchEvent) -> None:
        if event.kind.key != (KUEUE_GROUP, "workloads"):
            return
        obj = event.obj
        if not runs_workload(obj):
            return
        m = obj["metadata"]
        admitted = condition_is(obj, "Admitted")
        if event.type == "DELETED" or not admitted:
            self._admitted_at.pop(str(m.get("uid", "")), None)  # setAdmittedTime(false)
        # The harness's event filter: only admitted, unfinished Workloads are reconciled. A write
        # that changes none of what the reconcile reads (most of Kueue's) is skipped too.
        if event.type == "DELETED" or not admitted or condition_is(obj, "Finished"):
            return
        if event.type == "MODIFIED" and _inputs(event.old) == _inputs(obj):
            return
        self._dirty[(m.get("namespace", ""), m.get("name", ""))] = None

    def reconcile(self, now: float) -> bool:
        while self._timers and self._timers[0][0] <= now:
            self._dirty[heapq.heappop(self._timers)[1]] = None
        return drain(self._dirty, self._reconcile, now, "perf runner", "workload")

    def next_wakeup(self, now: float) -> float | None:
        return self._timers[0][0] if self._timers else None

    def _reconcile(self, key: Key, now: float) -> bool:
        wl = self.store.try_get(KUEUE_GROUP, "workloads", key[0], key[1], copy=False)
        if wl is None or not runs_workload(wl):
            return False
        uid = str(wl["metadata"].get("uid", ""))
        admitted = condition_is(wl, "Admitted")
        # setAdmittedTime: remembered when first seen admitted, forgotten when not admitted.
        if admitted:
            self._admitted_at.setdefault(uid, now)
        else:
            self._admitted_at.pop(uid, None)
        if condition_is(wl, "Finished"):
            return False
        if condition_is(wl, "Evicted"):
            new = status_updates.unset_quota_reservation(wl, now, EVICTED_REASON, EVICTED_MESSAGE)
            if new is None:
                return False
            try:
                self.store.update_status(KUEUE_GROUP, "workloads", new, copy=False)
            except (NotFound, StoreError) as exc:
                _log.info("perf runner: finishing the eviction of %s/%s: %s", *key, exc)
                return False
            return True
        if not admitted:
            return False
        due = self._admitted_at[uid] + running_seconds(wl)
        if due > now:
            if self._due.get(key) != due:  # one timer per admission, however often it is written
                self._due[key] = due
                heapq.heappush(self._timers, (due, key))
            return False
        self._due.pop(key, None)
        m = wl["metadata"]
        gen = m.get("generation") if isinstance(m.get("generation"), int) else None
        return write_condition(self.store, KUEUE_GROUP, "workloads", key[0] or None, key[1], "Finished", "True",
                               FINISHED_REASON, FINISHED_MESSAGE, now, gen) is not None
