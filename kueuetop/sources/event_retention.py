"""A bound on the Events kept from the cluster: the newest `max_events`, none older than `max_age`.

The API server keeps Events for an hour (`--event-ttl`), but a busy cluster records tens of
thousands in that time. The Events informer's output goes through `EventRetention` on its way to
the store: a full list keeps only the newest, each new Event may push the oldest out (sent on as
a DELETE), and Events past the age bound are dropped as time goes by. The store then holds at
most `max_events` Events whatever the cluster does. Ages are measured from the newest Event seen
(the API server's clock, not this machine's, which may be off).
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable

from kueuetop.kueue.event import safe_event
from kueuetop.store import Entry, StoreEvent
from kueuetop.store.events import Key, Op

MAX_EVENTS = 5_000
MAX_AGE = 3_600.0  # the API server's default event TTL
_PRUNE_EVERY = 10.0  # seconds between scans for Events past the age bound


def event_time(entry: Entry, default: float) -> float:
    """When the Event last happened (either Event shape), else `default`."""
    t = safe_event(entry.wire).time
    return t if t is not None else default


class EventRetention:
    """Wraps an informer sink (thread-safe): passes Events on, keeping the bound."""

    def __init__(self, sink: Callable[[StoreEvent], None], *, max_events: int = MAX_EVENTS,
                 max_age: float = MAX_AGE, clock: Callable[[], float] = time.monotonic) -> None:
        self.sink = sink
        self.max_events = max_events
        self.max_age = max_age
        self.clock = clock
        self._lock = threading.Lock()
        self._times: dict[Key, float] = {}  # kept Event → its time
        self._heap: list[tuple[float, Key]] = []  # (time, key), stale entries skipped lazily
        self._pruned_at = 0.0
        self._newest = 0.0  # the newest Event time seen: ages count back from it
        self.dropped = 0  # Events left out or pushed out (tests and the debug view read it)

    def trim(self, entries: list[Entry]) -> list[Entry]:
        """The newest `max_events` of a list being gathered, once it holds twice that: a cluster
        with 100,000 Events is listed without holding them all at once."""
        if len(entries) <= 2 * self.max_events:
            return entries
        newest = max(self._newest, 0.0)
        timed = sorted(((event_time(e, newest), i) for i, e in enumerate(entries)))
        keep = sorted(i for _, i in timed[-self.max_events:])
        with self._lock:
            self.dropped += len(entries) - len(keep)
        return [entries[i] for i in keep]

    def __len__(self) -> int:
        with self._lock:
            return len(self._times)

    def put(self, ev: StoreEvent) -> None:
        with self._lock:
            out = self._take(ev)
        for e in out:
            self.sink(e)

    def _take(self, ev: StoreEvent) -> list[StoreEvent]:
        now = self.clock()
        if ev.op is Op.REPLACE:
            timed = sorted(((event_time(e, self._newest), e) for e in ev.entries), key=lambda te: te[0])
            self._newest = max(self._newest, timed[-1][0] if timed else 0.0)
            cutoff = self._newest - self.max_age
            kept = [(t, e) for t, e in timed if t >= cutoff][-self.max_events:]
            self.dropped += len(timed) - len(kept)
            self._times = {e.key: t for t, e in kept}
            self._heap = [(t, e.key) for t, e in kept]
            heapq.heapify(self._heap)
            self._pruned_at = now
            return [StoreEvent(Op.REPLACE, ev.kind, ev.source, entries=tuple(e for _, e in kept), at=ev.at)]
        if ev.op is Op.DELETE:
            if ev.key is not None:
                self._times.pop(ev.key, None)
            return [ev]
        if ev.op is not Op.UPSERT or ev.entry is None:
            return [ev]
        t = event_time(ev.entry, self._newest)
        self._newest = max(self._newest, t)
        key = ev.entry.key
        self._times[key] = t
        heapq.heappush(self._heap, (t, key))
        out = [ev]
        while len(self._times) > self.max_events:
            out.extend(self._pop_oldest(ev))
        if now - self._pruned_at >= _PRUNE_EVERY:
            self._pruned_at = now
            cutoff = self._newest - self.max_age
            while self._heap and self._heap[0][0] < cutoff:
                out.extend(self._pop_oldest(ev))
        if len(self._heap) > 4 * self.max_events + 1024:  # repeats of kept Events: start over
            self._heap = [(t, k) for k, t in self._times.items()]
            heapq.heapify(self._heap)
        return out

    def _pop_oldest(self, ev: StoreEvent) -> list[StoreEvent]:
        while self._heap:
            t, key = heapq.heappop(self._heap)
            if self._times.get(key) == t:
                del self._times[key]
                self.dropped += 1
                return [StoreEvent(Op.DELETE, ev.kind, ev.source, key=key)]
        return []
