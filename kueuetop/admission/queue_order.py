"""Order inside a ClusterQueue, heads, and queue positions (reference/kueue.md §6.1).

Order (Kueue's baseCompareFunc): the sticky preemptor first (BestEffortFIFO), then higher
effective priority, earlier queue-order timestamp, UID. Heads: at most one per active CQ; a
StrictFIFO head blocks the queue even when inadmissible (only namespace mismatches are parked),
a BestEffortFIFO queue skips its inadmissible set.
"""

from __future__ import annotations

import bisect
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
    pending = index.pending_keys(cq)

    def skipped(key: WorkloadKey) -> bool:
        e = entries[key]
        if e.parked_until > now:
            return True
        gen = inadmissible.get(key) if inadmissible is not None else None
        return gen is not None and gen == e.wl.meta.generation

    # BestEffortFIFO queues can hold thousands of parked/inadmissible workloads ahead of the
    # head. A scan resumes where the last one stopped when what it skipped is still skipped:
    # the inadmissible set only grew (the state shares unchanged per-CQ sets), no skipped
    # backoff ended, and the queue is the same or changed by one index update, whose additions
    # ahead of the last head are checked one by one.
    version, serial = index.pending_version.get(cq, 0), index.serial
    start, until = 0, math.inf  # until: the first skipped backoff to end
    memo = index.head_memo.get(cq)
    if memo is not None and memo[2] <= now < memo[3] and (
            memo[1] is inadmissible or memo[1] is None
            or (inadmissible is not None and memo[1].items() <= inadmissible.items())):
        # The version moves with every change to the CQ's pending list (an entry changes only
        # by being dropped and added again), so an equal version means the same list.
        if memo[0] == version:
            if memo[1] is inadmissible:
                return entries[memo[6][1]].wl if memo[6] is not None else None
            start, until = memo[4], memo[3]
        elif memo[5] == serial - 1 and not index.rebuilt:
            last = memo[6]
            start = bisect.bisect_left(pending, last) if last is not None else len(pending)
            until = memo[3]
            ahead = sorted((entries[k].key, k) for k in index.added_pending.get(cq, ())
                           if entries.get(k) is not None and entries[k].key is not None
                           and (last is None or (entries[k].key, k) < last))
            for sk, k in ahead:
                if not skipped(k):
                    i = bisect.bisect_left(pending, (sk, k))
                    index.head_memo[cq] = (version, inadmissible, now, until, i, serial, (sk, k))
                    return entries[k].wl
                until = min(until, entries[k].parked_until) if entries[k].parked_until > now else until
    found = None
    i = start
    for i in range(start, len(pending)):
        k = pending[i][1]
        e = entries[k]
        if e.parked_until > now:
            until = min(until, e.parked_until)
            continue
        if inadmissible is not None:
            gen = inadmissible.get(k)
            if gen is not None and gen == e.wl.meta.generation:
                continue
        found = pending[i]
        break
    else:
        i = len(pending)
    index.head_memo[cq] = (version, inadmissible, now, until, i, serial, found)
    return entries[found[1]].wl if found is not None else None


def heads(snapshot: ClusterSnapshot, state: QueueState, now: float,
          index: WorkloadIndex | None = None, active: Mapping[str, bool] | None = None) -> list[Workload]:
    """One head per active ClusterQueue, in CQ name order."""
    index = index or state.workload_index(snapshot)
    out = []
    cqs = snapshot.cluster_queues
    versions, memos, entries = index.pending_version, index.head_memo, index.entries
    inadmissible, sticky = state.inadmissible, state.sticky
    # Only queues with something queued have a head (a sticky preemptor is queued too).
    for name in index.queued_in_order():
        if name not in cqs:
            continue
        is_active = active[name] if active is not None else cluster_queue_active(snapshot, name).active
        if not is_active:
            continue
        # head_of's own memo, checked here first: most queues' heads are the same as last
        # cycle, and a thousand calls per cycle add up.
        memo = memos.get(name)
        if (memo is not None and memo[0] == versions.get(name, 0) and memo[1] is inadmissible.get(name)
                and memo[2] <= now < memo[3] and name not in sticky):
            if memo[6] is not None:
                out.append(entries[memo[6][1]].wl)
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
