"""What the Kueue controller's queue manager holds, read from its own snapshot and queue state.

One source for the simulated Kueue's `/metrics` pending gauges and the visibility API: a
workload is pending when the engine keeps it in a ClusterQueue's queue
(`queue_order.pending_workloads`, in queue order), and inadmissible when Kueue's queue manager
would count it in `PendingInadmissible`: parked by a failed attempt (the engine's inadmissible
set, at the workload's generation), in backoff or `Requeued=False`
(Kueue: pkg/queue/cluster_queue.go PushOrUpdate, backoffWaitingTimeExpired), or in an inactive
ClusterQueue, which reports all its pending workloads as inadmissible
(Kueue: pkg/queue/manager.go reportPendingWorkloads).
"""

from __future__ import annotations

from dataclasses import dataclass

from kueuetop.admission import queue_order
from kueuetop.admission.cq_status import cluster_queue_active
from kueuetop.admission.queue_state import QueueState
from kueuetop.admission.workload_index import WorkloadIndex, parked
from kueuetop.kueue.snapshot import ClusterSnapshot, WorkloadKey
from kueuetop.kueue.workload import Workload


@dataclass(frozen=True, slots=True)
class Queued:
    """A pending workload as the queue manager holds it."""

    workload: Workload
    cluster_queue: str
    inadmissible: bool


def queued_in_cluster_queue(snapshot: ClusterSnapshot, state: QueueState, cq: str, now: float,
                            index: WorkloadIndex | None = None) -> list[Queued]:
    """The ClusterQueue's pending workloads in queue order (what the visibility API lists);
    `index`: the snapshot's WorkloadIndex when the caller keeps one (the controller's EngineCache)."""
    active = cluster_queue_active(snapshot, cq).active
    return [Queued(wl, cq, not active or parked(wl, now) or state.is_inadmissible(cq, wl))
            for wl in queue_order.pending_workloads(snapshot, state, cq, index)]


def queued_workloads(snapshot: ClusterSnapshot, state: QueueState, now: float,
                     index: WorkloadIndex | None = None) -> dict[WorkloadKey, Queued]:
    """Every pending workload of every ClusterQueue, by key."""
    index = index or WorkloadIndex().update(snapshot)  # once, for every ClusterQueue
    return {q.workload.key: q for cq in sorted(snapshot.cluster_queues)
            for q in queued_in_cluster_queue(snapshot, state, cq, now, index)}
