"""Order inside a ClusterQueue, heads, and queue positions (reference/kueue.md §6.1).

Order (Kueue's baseCompareFunc): the sticky preemptor first (BestEffortFIFO), then higher
effective priority, earlier queue-order timestamp, UID. Heads: at most one per active CQ; a
StrictFIFO head blocks the queue even when inadmissible (only namespace mismatches are parked),
a BestEffortFIFO queue skips its inadmissible set.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from kueuetop.admission.cq_status import cluster_queue_active
from kueuetop.admission.queue_state import QueueState
from kueuetop.admission.snapshot import ClusterSnapshot, WorkloadKey
from kueuetop.admission.workload_index import (
    WorkloadIndex,
    parked,
    queue_order_timestamp,
    queued_in,
    sort_key,
)
from kueuetop.kueue.cluster_queue import BEST_EFFORT_FIFO
from kueuetop.kueue.workload import Workload

__all__ = [
    "head_of",
    "heads",
    "parked",
    "pending_workloads",
    "position_in_cluster_queue",
    "position_in_local_queue",
    "queue_order_timestamp",
    "queued_in",
    "sort_key",
]


def _sticky(state: QueueState, index: WorkloadIndex, cq: str, now: float) -> Workload | None:
    key = state.sticky.get(cq)
    if key is None:
        return None
    e = index.entries.get(key)
    if e is None or e.reserving or e.key is None or e.cq != cq or parked(e.wl, now):
        return None
    return e.wl


def head_of(snapshot: ClusterSnapshot, state: QueueState, index: WorkloadIndex, cq: str,
            now: float) -> Workload | None:
    """The workload Heads() would pop from this CQ, ignoring whether the CQ is active."""
    spec = snapshot.cluster_queues.get(cq)
    if spec is None:
        return None
    if spec.queueing_strategy == BEST_EFFORT_FIFO:
        sticky = _sticky(state, index, cq, now)
        if sticky is not None:
            return sticky
    entries = index.entries
    inadmissible = state.inadmissible.get(cq)
    # BestEffortFIFO queues can hold thousands of parked/inadmissible workloads ahead of the
    # head. The last scan's result stands while the CQ's pending list and inadmissible set are
    # unchanged (the state shares unchanged per-CQ sets) and no skipped backoff has ended.
    version = index.pending_version.get(cq, 0)
    pending = index.pending_keys(cq)
    start, until = 0, math.inf  # until: the first skipped backoff to end
    memo = index.head_memo.get(cq)
    if memo is not None and memo[0] == version and memo[2] <= now < memo[3]:
        if memo[1] is inadmissible:
            return entries[pending[memo[4]][1]].wl if memo[4] < len(pending) else None
        if memo[1] is None or (inadmissible is not None and memo[1].items() <= inadmissible.items()):
            # Only parked more (the usual step: the head and its equivalents went
            # inadmissible): everything the last scan skipped is still skipped.
            start, until = memo[4], memo[3]
    i = start
    # Inline parked() (cached per entry) and is_inadmissible(): this loop is hot.
    for i in range(start, len(pending)):
        e = entries[pending[i][1]]
        if e.parked_until > now:
            until = min(until, e.parked_until)
            continue
        if inadmissible is not None:
            gen = inadmissible.get(pending[i][1])
            if gen is not None and gen == e.wl.meta.generation:
                continue
        break
    else:
        i = len(pending)
    index.head_memo[cq] = (version, inadmissible, now, until, i)
    return entries[pending[i][1]].wl if i < len(pending) else None


def heads(snapshot: ClusterSnapshot, state: QueueState, now: float,
          index: WorkloadIndex | None = None, active: Mapping[str, bool] | None = None) -> list[Workload]:
    """One head per active ClusterQueue, in CQ name order."""
    index = index or state.workload_index(snapshot)
    out = []
    for name in sorted(snapshot.cluster_queues):
        is_active = active[name] if active is not None else cluster_queue_active(snapshot, name).active
        if not is_active:
            continue
        h = head_of(snapshot, state, index, name, now)
        if h is not None:
            out.append(h)
    return out


def pending_workloads(snapshot: ClusterSnapshot, state: QueueState, cq: str,
                      index: WorkloadIndex | None = None) -> list[Workload]:
    """What the visibility API lists for a CQ: queued and inadmissible workloads, in queue order."""
    index = index or state.workload_index(snapshot)
    wls = [index.entries[k].wl for _, k in index.pending_keys(cq)]
    spec = snapshot.cluster_queues.get(cq)
    sticky = state.sticky.get(cq)
    if sticky is not None and spec is not None and spec.queueing_strategy == BEST_EFFORT_FIFO:
        wls.sort(key=lambda w: w.key != sticky)  # stable: keeps the rest in order
    return wls


def position_in_cluster_queue(snapshot: ClusterSnapshot, state: QueueState, key: WorkloadKey,
                              index: WorkloadIndex | None = None) -> int | None:
    """0-based position among the CQ's pending workloads, or None when not queued."""
    wl = snapshot.workloads.get(key)
    if wl is None:
        return None
    cq = queued_in(wl, snapshot)
    if cq is None:
        return None
    for i, w in enumerate(pending_workloads(snapshot, state, cq, index)):
        if w.key == key:
            return i
    return None


def position_in_local_queue(snapshot: ClusterSnapshot, state: QueueState, key: WorkloadKey,
                            index: WorkloadIndex | None = None) -> int | None:
    wl = snapshot.workloads.get(key)
    if wl is None:
        return None
    cq = queued_in(wl, snapshot)
    if cq is None:
        return None
    pos = 0
    for w in pending_workloads(snapshot, state, cq, index):
        if w.key == key:
            return pos
        if w.namespace == wl.namespace and w.queue_name == wl.queue_name:
            pos += 1
    return None
