"""Kueue's control loop over one followed cluster, without the object writes.

Kueue runs its workload controller on every change and its scheduler when the cache has settled
(reference/kueue.md §6): a `KueueLoop` holds what that loop keeps between rounds — the queue
manager's state (`QueueState`), the snapshot of the last cycle (to find the ClusterQueues whose
parked workloads go back to their queues) and the engine's `EngineCache` — and offers its two
steps. The caller reads the cluster into a snapshot and writes the decisions back:

- `admission.simulate` over API dicts (what-if previews, tests, a forecast from a worker);
- the simulator's Kueue controller (`sim/kueue_controller.py`) over its object store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kueuetop.admission.cycle import schedule
from kueuetop.admission.decisions import Decision
from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.queue_state import QueueState, changed_cluster_queues
from kueuetop.admission.workload_controller import reconcile, reconcile_keys
from kueuetop.kueue.snapshot import ClusterSnapshot, WorkloadKey

Scheduler = Callable[[ClusterSnapshot, float, Any], Any]  # (snapshot, now, state) -> CycleResult


class KueueLoop:
    """The queue state, the last cycle's snapshot and the EngineCache of one followed cluster."""

    def __init__(self, state: QueueState | None = None, cache: EngineCache | None = None,
                 scheduler: Scheduler | None = None) -> None:
        self.cache = cache if cache is not None else EngineCache()
        self.state: Any = state  # None until the first cycle (a custom scheduler may keep none)
        self.prev: ClusterSnapshot | None = None  # the snapshot the last cycle scheduled
        self._scheduler = scheduler

    def reconcile(self, snapshot: ClusterSnapshot, now: float, keys: Iterable[WorkloadKey] | None = None,
                  ) -> tuple[tuple[Decision, ...], dict[WorkloadKey, float | None]]:
        """The workload controller's decisions for every workload (`keys` None: the wakes are
        then not computed, {}) or for `keys` with each one's next timer (Kueue:
        pkg/controller/core/workload_controller.go Reconcile)."""
        if keys is None:
            return reconcile(snapshot, now, self.cache), {}
        return reconcile_keys(snapshot, keys, now, self.cache)

    def reconcile_due(self, snapshot: ClusterSnapshot, now: float, changed: set[WorkloadKey],
                      wake: dict[WorkloadKey, float]) -> tuple[Decision, ...]:
        """The workload controller for the workloads that changed and those whose timer is due in
        `wake` (key → next timer), which is kept up to date: Kueue requeues a key on a change or
        after the RequeueAfter its last Reconcile returned."""
        keys = changed.union(k for k, t in wake.items() if t <= now)
        if not keys:
            return ()
        decisions, wakes = self.reconcile(snapshot, now, keys)
        for k in keys:
            t = wakes.get(k)
            if t is None:
                wake.pop(k, None)
            else:
                wake[k] = t
        return decisions

    def cycle(self, snapshot: ClusterSnapshot, now: float) -> Any:
        """The queue manager's requeues since the last cycle, then one scheduling cycle."""
        self.requeue_inadmissible(snapshot)
        return self.schedule(snapshot, now)

    def requeue_inadmissible(self, snapshot: ClusterSnapshot) -> None:
        """Parked workloads of the ClusterQueues whose cohort tree changed since the last cycle
        go back to their queues (Kueue: pkg/cache/queue/inadmissible_workloads.go
        requeueWorkloadsCQ / requeueWorkloadsCohort, called by the controllers on those changes)."""
        if self.prev is not None and self.state is not None:
            changed = changed_cluster_queues(self.prev, snapshot, self.cache)
            if changed:
                self.state = self.state.requeue_inadmissible(changed)

    def schedule(self, snapshot: ClusterSnapshot, now: float) -> Any:
        """One scheduling cycle (Kueue: pkg/scheduler/scheduler.go schedule); the queue state
        moves on and `snapshot` becomes the last cycle's."""
        if self._scheduler is not None:
            result = self._scheduler(snapshot, now, self.state)
        else:
            result = schedule(snapshot, now, self.state, self.cache)
        self.state = getattr(result, "state", self.state)
        self.prev = snapshot
        return result
