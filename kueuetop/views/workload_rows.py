"""One workload's row, unstyled: the values `kueuetop snapshot` prints and the Workloads view shows.

Both build their rows here and differ only in how they present the values (JSON fields and text
tables; styled cells). Every value is read from the store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kueuetop.kueue.local_queue import LocalQueue
from kueuetop.kueue.workload import Workload
from kueuetop.kueue.workload_state import Phase, WorkloadState, derive_state
from kueuetop.store import Store
from kueuetop.store import events as K

Key = tuple[str, str]
# (position in its ClusterQueue, position in its LocalQueue), 0-based; None: not known. The
# store's positions (Kueue's visibility API) unless a caller has another reading.
PositionOf = Callable[[Key], "tuple[int, int] | None"]

# Phases in which a workload waits in its queue, and so has a position there.
QUEUED = frozenset({Phase.PENDING, Phase.BACKOFF, Phase.BLOCKED})


@dataclass(frozen=True, slots=True)
class WorkloadRow:
    key: Key
    wl: Workload
    state: WorkloadState
    cluster_queue: str  # "" when its LocalQueue is unknown
    position: int | None  # 1-based in its ClusterQueue; None when not queued or not known
    local_position: int | None  # 1-based in its LocalQueue
    flavors: tuple[str, ...]  # flavors assigned, each once, in assignment order
    wait: float | None  # seconds (see `wait_seconds`)
    gpu_util: float | None  # mean % over its fresh GPUs; None without telemetry
    evictions: int

    @property
    def flavors_by_resource(self) -> dict[str, str]:
        """resource → flavor (the first pod set's choice), sorted by resource."""
        out: dict[str, str] = {}
        if self.wl.admission is not None:
            for psa in self.wl.admission.pod_set_assignments:
                for res, flavor in psa.flavors.items():
                    out.setdefault(res, flavor)
        return dict(sorted(out.items()))


def cluster_queue_of(store: Store, wl: Workload) -> str:
    if wl.admission is not None:
        return wl.admission.cluster_queue
    lq = store.get(K.LOCAL_QUEUES, (wl.namespace, wl.queue_name))
    return lq.cluster_queue if isinstance(lq, LocalQueue) else ""


def flavors_of(wl: Workload) -> tuple[str, ...]:
    if wl.admission is None:
        return ()
    return tuple(dict.fromkeys(f for psa in wl.admission.pod_set_assignments for f in psa.flavors.values()))


def wait_seconds(wl: Workload, now: float) -> float | None:
    """Time spent waiting in the queue: from creation to quota reservation, or to now while it
    waits; None for a finished workload that never had quota.

    Kueue's `kueue_quota_reserved_wait_time_seconds` (created → quota reserved) is the same
    span. A workload keeps its QuotaReserved=True condition when it finishes (Kueue:
    pkg/workload/finish `SetFinishedCondition` adds Finished and leaves the others), so a
    finished workload still shows how long it waited; a workload waiting for admission checks
    (QuotaReserved, not yet Admitted) has stopped waiting in the queue. Before Kueue had
    QuotaReserved, Admitted marked the same moment."""
    created = wl.meta.creation
    if created is None:
        return None
    got = wl.condition("QuotaReserved") or wl.condition("Admitted")
    if got is not None and got.is_true:
        return max(0.0, got.last_transition - created) if got.last_transition is not None else None
    if wl.is_finished:
        return None
    return max(0.0, now - created)


def gpu_util(store: Store, key: Key) -> float | None:
    utils = [s.util for s in store.gpus_of_workload(key) if s.util is not None and not s.stale]
    return sum(utils) / len(utils) if utils else None


def store_position(store: Store) -> PositionOf:
    def position(key: Key) -> tuple[int, int] | None:
        pos = store.position(key)
        return (pos.in_cluster_queue, pos.in_local_queue) if pos is not None and pos.in_cluster_queue >= 0 else None
    return position


def workload_row(store: Store, key: Key, wl: Workload, now: float, position_of: PositionOf | None = None) -> WorkloadRow:
    st = derive_state(wl, now)
    pos = lpos = None
    if st.phase in QUEUED:
        got = (position_of or store_position(store))(key)
        if got is not None:
            pos = got[0] + 1
            lpos = got[1] + 1 if got[1] >= 0 else None
    return WorkloadRow(key, wl, st, cluster_queue_of(store, wl), pos, lpos, flavors_of(wl), wait_seconds(wl, now),
                       gpu_util(store, key), sum(e.count for e in wl.evictions))
