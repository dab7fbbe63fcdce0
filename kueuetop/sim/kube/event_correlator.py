"""client-go's EventCorrelator: what a process's event recorder does before an Event reaches the API.

Kueue's manager, the kube-scheduler, each kubelet, the job controller and the cluster autoscaler
all record Events through client-go's `record` package, whose correlator
(`k8s.io/client-go/tools/record/events_cache.go`, `EventCorrelator.EventCorrelate`) does three
things, in this order, for every occurrence:

1. aggregation (`EventAggregator.EventAggregate`): occurrences that differ only by message
   (same source, object, type and reason) are counted; once 10 distinct messages were seen
   with no gap over 10 minutes, the occurrence becomes one "(combined from similar events): …"
   Event whose count grows;
2. de-duplication (`eventLogger.eventObserve`): the same Event again is a count bump (a patch)
   on the one already written, keeping its first timestamp;
3. the spam filter (`EventSourceObjectSpamFilter.Filter`): a source may write 25 Events about
   one object, refilled at one every 5 minutes; past that the occurrence is not sent at all
   (its count was already taken, so the next write carries it).

Each cache is an LRU of 4,096 entries. Without the filter a workload that Kueue requeues every
cycle writes a `Pending` Event every cycle, which no real cluster's API server sees.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Generic, TypeVar

LRU_ENTRIES = 4096  # maxLruCacheEntries
AGGREGATE_MAX_EVENTS = 10  # defaultAggregateMaxEvents
AGGREGATE_INTERVAL = 600.0  # defaultAggregateIntervalInSeconds
SPAM_BURST = 25  # defaultSpamBurst
SPAM_QPS = 1.0 / 300.0  # defaultSpamQPS
COMBINED = "(combined from similar events): "  # EventAggregatorByReasonMessageFunc

# (kind, namespace, name, uid, apiVersion): the involved object as the spam key names it.
ObjectKey = tuple[str, str, str, str, str]

K = TypeVar("K")
V = TypeVar("V")


class _Lru(Generic[K, V]):
    """groupcache's lru.Cache: Get moves an entry to the front, Add evicts the oldest past size."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._d: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        v = self._d.get(key)
        if v is not None:
            self._d.move_to_end(key)
        return v

    def add(self, key: K, value: V) -> None:
        self._d[key] = value
        self._d.move_to_end(key)
        if len(self._d) > self.size:
            self._d.popitem(last=False)


class _TokenBucket:
    """flowcontrol.NewTokenBucketRateLimiterWithClock: starts full, refills at `qps`."""

    def __init__(self, qps: float, burst: int, now: float) -> None:
        self.qps, self.burst = qps, burst
        self.tokens, self.last = float(burst), now

    def try_accept(self, now: float) -> bool:
        self.tokens = min(float(self.burst), self.tokens + max(0.0, now - self.last) * self.qps)
        self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


@dataclass
class _Aggregate:
    messages: set[str]
    last: float


@dataclass(frozen=True)
class Correlation:
    """What to write for one occurrence: `key` names the Event it updates or creates."""

    key: tuple
    message: str
    count: int
    first: float  # the Event's firstTimestamp
    skip: bool  # the spam filter dropped it: write nothing


class EventCorrelator:
    """One event source's correlator (one per recording process, as in client-go)."""

    def __init__(self, lru_entries: int = LRU_ENTRIES) -> None:
        self._aggregates: _Lru[tuple, _Aggregate] = _Lru(lru_entries)
        self._log: _Lru[tuple, tuple[int, float]] = _Lru(lru_entries)  # key → (count, first)
        self._spam: _Lru[ObjectKey, _TokenBucket] = _Lru(lru_entries)

    def correlate(self, now: float, obj: ObjectKey, type_: str, reason: str, message: str) -> Correlation:
        # EventAggregate: the aggregate key is the event's identity without its message.
        agg_key = (obj, type_, reason)
        rec = self._aggregates.get(agg_key)
        if rec is None or now - rec.last > AGGREGATE_INTERVAL:
            rec = _Aggregate(set(), now)
        rec.messages.add(message)
        rec.last = now
        self._aggregates.add(agg_key, rec)
        if len(rec.messages) < AGGREGATE_MAX_EVENTS:
            key: tuple = (*agg_key, message)
        else:
            rec.messages.pop()  # PopAny: the set never grows past the threshold
            key, message = agg_key, COMBINED + message
        # eventObserve: a repeat bumps the count of the Event already written under this key.
        seen = self._log.get(key)
        count, first = (seen[0] + 1, seen[1]) if seen is not None else (1, now)
        self._log.add(key, (count, first))
        # Filter: one token bucket per source and object, whatever the reason.
        bucket = self._spam.get(obj)
        if bucket is None:
            bucket = _TokenBucket(SPAM_QPS, SPAM_BURST, now)
            self._spam.add(obj, bucket)
        skip = not bucket.try_accept(now)
        return Correlation(key, message, count, first, skip)
