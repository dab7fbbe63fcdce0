"""Order inside a ClusterQueue, heads, and queue positions (reference/kueue.md §6.1).

Order (Kueue's baseCompareFunc): the sticky preemptor first (BestEffortFIFO), then higher
effective priority, earlier queue-order timestamp, UID. Heads: at most one per active CQ; a
StrictFIFO head blocks the queue even when inadmissible (only namespace mismatches are parked),
a BestEffortFIFO queue skips its inadmissible set.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from kueuetop.admission.cq_status import cluster_queue_active
from kueuetop.admission.queue_state import ParkedSets, QueueState
from kueuetop.admission.workload_index import (
    WorkloadIndex,
    parked,
    queue_order_timestamp,
    queued_in,
    sort_key,
)
from kueuetop.kueue.cluster_queue import BEST_EFFORT_FIFO
from kueuetop.kueue.snapshot import ClusterSnapshot, WorkloadKey
from kueuetop.kueue.workload import Workload

if TYPE_CHECKING:
    from kueuetop.admission.engine_cache import EngineCache

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


class HeadScan(NamedTuple):
    """What one head_of scan of a ClusterQueue found, and what its answer depends on."""

    version: int  # the index's pending_version of the queue
    inadmissible: Mapping | None  # the queue's inadmissible set the scan skipped
    since: float  # the scan's `now`
    until: float  # when the first skipped backoff ends
    stop: int  # where the scan stopped in the pending list
    serial: int  # the index's serial
    found: tuple | None  # (sort key, workload key) of the head, None when there is none


class HeadsMemo:
    """queue_order's part of an EngineCache: the last head scan per ClusterQueue, the last
    `heads` answers, and the queues whose pending list changed since."""

    __slots__ = ("answers", "dirty", "scans")

    def __init__(self) -> None:
        self.scans: dict[str, HeadScan] = {}
        self.answers: _HeadsCache | None = None
        self.dirty: set[str] = set()


def head_of(snapshot: ClusterSnapshot, state: QueueState, index: WorkloadIndex, cq: str,
            now: float, cache: EngineCache | None = None) -> Workload | None:
    """The workload Heads() would pop from this CQ, ignoring whether the CQ is active.

    Kueue: pkg/cache/queue/cluster_queue.go Pop (the heap's head, skipping what is parked)."""
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
    scans = cache.heads.scans if cache is not None and cache.fast_paths else {}
    memo = scans.get(cq)
    if memo is not None and memo.since <= now < memo.until and (
            memo.inadmissible is inadmissible or memo.inadmissible is None
            or (inadmissible is not None and memo.inadmissible.items() <= inadmissible.items())):
        # The version moves with every change to the CQ's pending list (an entry changes only
        # by being dropped and added again), so an equal version means the same list.
        if memo.version == version:
            if memo.inadmissible is inadmissible:
                return entries[memo.found[1]].wl if memo.found is not None else None
            start, until = memo.stop, memo.until
        elif memo.serial == serial - 1 and not index.rebuilt:
            last = memo.found
            start = bisect.bisect_left(pending, last) if last is not None else len(pending)
            until = memo.until
            ahead = sorted((entries[k].key, k) for k in index.added_pending.get(cq, ())
                           if entries.get(k) is not None and entries[k].key is not None
                           and (last is None or (entries[k].key, k) < last))
            for sk, k in ahead:
                if not skipped(k):
                    i = bisect.bisect_left(pending, (sk, k))
                    scans[cq] = HeadScan(version, inadmissible, now, until, i, serial, (sk, k))
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
    scans[cq] = HeadScan(version, inadmissible, now, until, i, serial, found)
    return entries[found[1]].wl if found is not None else None


class _HeadsCache:
    """What the last `heads` call found per queued ClusterQueue, and what those answers read:
    a cycle recomputes only the queues whose pending list, parked set or sticky head changed,
    or whose earliest backoff ended (on `xl`, most of 1,000 queues have the same answer as last
    cycle, and checking each one's memo was a tenth of a cycle)."""

    __slots__ = ("active", "cqs", "inadmissible", "now", "queued", "result", "sticky", "timers")

    def __init__(self, cqs: Mapping, active: Mapping[str, bool], queued: list[str], now: float) -> None:
        self.cqs, self.active, self.queued, self.now = cqs, active, queued, now
        self.inadmissible: Mapping = {}
        self.sticky: Mapping = {}
        self.result: dict[str, Workload | None] = {}
        self.timers: list[tuple[float, str]] = []  # heap: (a skipped backoff ends, queue)


def _head_now(snapshot: ClusterSnapshot, state: QueueState, index: WorkloadIndex, name: str, now: float,
              active: Mapping[str, bool] | None, cache: EngineCache | None) -> Workload | None:
    if name not in snapshot.cluster_queues:
        return None
    is_active = active[name] if active is not None else cluster_queue_active(snapshot, name, cache).active
    if not is_active:
        return None
    # head_of's own memo, checked here first: most queues' heads are the same as last cycle.
    memo = cache.heads.scans.get(name) if cache is not None and cache.fast_paths else None
    if (memo is not None and memo.version == index.pending_version.get(name, 0)
            and memo.inadmissible is state.inadmissible.get(name) and memo.since <= now < memo.until
            and name not in state.sticky):
        return index.entries[memo.found[1]].wl if memo.found is not None else None
    return head_of(snapshot, state, index, name, now, cache)


def _changed_queues(old: Mapping, new: Mapping) -> set[str]:
    """Keys whose values are other objects in `new` than in `old` (or only in one of them)."""
    if old is new:
        return set()
    if isinstance(new, ParkedSets):
        found = new.changed_since(old)
        if found is not None:
            return found
    out = {k for k, v in new.items() if old.get(k, _ABSENT) is not v}
    out.update(k for k in old if k not in new)
    return out


_ABSENT = object()


def heads(snapshot: ClusterSnapshot, state: QueueState, now: float, index: WorkloadIndex | None = None,
          active: Mapping[str, bool] | None = None, engine: EngineCache | None = None) -> list[Workload]:
    """One head per active ClusterQueue, in CQ name order (Kueue: pkg/cache/queue/manager.go Heads)."""
    index = index or (engine.workload_index(snapshot) if engine is not None else WorkloadIndex().update(snapshot))
    queued = index.queued_in_order()  # only queues with something queued have a head
    if active is None or engine is None or not engine.fast_paths:
        return [h for name in queued if (h := _head_now(snapshot, state, index, name, now, active, engine)) is not None]
    memo = engine.heads
    cache = memo.answers
    dirty = memo.dirty
    memo.dirty = set()
    if cache is None or cache.cqs is not snapshot.cluster_queues or cache.active is not active or now < cache.now:
        cache = memo.answers = _HeadsCache(snapshot.cluster_queues, active, queued, now)
        stale: Iterable[str] = queued
    else:
        dirty |= _changed_queues(cache.inadmissible, state.inadmissible)
        dirty.update(cache.sticky)
        dirty.update(state.sticky)
        timers = cache.timers
        while timers and timers[0][0] <= now:
            dirty.add(heapq.heappop(timers)[1])
        if cache.queued is not queued:  # a queue emptied or filled: same order, other members
            old = cache.result
            cache.result = {n: old.get(n) for n in queued}
            dirty.update(n for n in queued if n not in old)
            cache.queued = queued
        stale = [n for n in dirty if n in cache.result]
    result = cache.result
    for name in stale:
        result[name] = _head_now(snapshot, state, index, name, now, active, engine)
        scan = memo.scans.get(name)
        if scan is not None and scan.until < math.inf:
            heapq.heappush(cache.timers, (scan.until, name))
    cache.inadmissible, cache.sticky, cache.now = state.inadmissible, state.sticky, now
    return [h for h in result.values() if h is not None]


def pending_workloads(snapshot: ClusterSnapshot, state: QueueState, cq: str,
                      index: WorkloadIndex | None = None) -> list[Workload]:
    """What the visibility API lists for a CQ: queued and inadmissible workloads, in queue order."""
    index = index or WorkloadIndex().update(snapshot)
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
