"""Past states of one kind's objects, kept for paginated lists (continue tokens).

A paginated list on kube-apiserver reads every page from etcd at the first page's revision, so
the pages form one consistent snapshot for as long as etcd keeps that revision: until the next
compaction, which kube-apiserver runs every 5 minutes (--etcd-compaction-interval). The store
copies nothing to give the same answer. When a list hands out a continue token, a `Snapshot`
is taken at that resourceVersion; from then on every write to the kind records the state the
written key had before (the old object, shared: stored objects are never mutated, or ABSENT
when it was created) in the newest snapshot only, once per key. An older snapshot keeps the
keys written between it and the next one and defers the rest to that newer snapshot, so each
write costs one dict lookup, the memory is one reference per key and interval, and nothing is
kept while no token is live.
"""

from __future__ import annotations

import bisect
import heapq
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

Obj = dict[str, Any]
ObjKey = tuple[str, str]

# etcd compaction interval kube-apiserver uses by default.
DEFAULT_TTL = 300.0
# At most this many saved states per kind (a reference each): past it the oldest snapshots go
# early, as after a compaction. One list's snapshot needs at most one per object of the kind;
# the bound only bites when lists start every second while the simulation rewrites thousands
# of objects a second, which would otherwise keep five minutes of old versions alive.
DEFAULT_MAX_SAVED = 100_000


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()  # the key did not exist at the snapshot


class Snapshot:
    __slots__ = ("newer", "rv", "saved")

    def __init__(self, rv: int) -> None:
        self.rv = rv
        self.saved: dict[ObjKey, Any] = {}   # key → object at rv (or ABSENT), for keys written since
        self.newer: Snapshot | None = None    # keys not in `saved` are as in the newer snapshot

    def changes(self) -> dict[ObjKey, Any]:
        """Every key written since this snapshot → its state at the snapshot."""
        out: dict[ObjKey, Any] = {}
        s: Snapshot | None = self
        while s is not None:
            for k, v in s.saved.items():
                out.setdefault(k, v)
            s = s.newer
        return out


class SnapshotChain:
    """The live snapshots of one kind, oldest first; each expires `ttl` seconds after it was taken
    (by `clock`, a wall clock: tokens expire in real time, whatever the simulation's speed)."""

    def __init__(self, ttl: float = DEFAULT_TTL, clock: Callable[[], float] = time.monotonic,
                 max_saved: int = DEFAULT_MAX_SAVED) -> None:
        self.ttl = ttl
        self.clock = clock
        self.max_saved = max_saved
        self._by_rv: OrderedDict[int, tuple[Snapshot, float]] = OrderedDict()
        self._newest: Snapshot | None = None
        self._first_expiry = float("inf")
        self._saved = 0  # entries held by all live snapshots

    def __len__(self) -> int:
        return len(self._by_rv)

    @property
    def saved(self) -> int:
        return self._saved

    def record(self, key: ObjKey, old: Obj | None) -> None:
        """A write to `key` whose previous state was `old` (None: the key did not exist)."""
        s = self._newest
        if s is None or key in s.saved:
            return
        if self.clock() >= self._first_expiry:  # nobody may list again: expire on writes too
            self.expire()
            s = self._newest
            if s is None:
                return
        s.saved[key] = ABSENT if old is None else old
        self._saved += 1
        if self._saved > self.max_saved:
            while self._saved > self.max_saved and self._by_rv:
                self._drop_oldest()

    def take(self, rv: int) -> None:
        """Keep the state at `rv` (the current one) for `ttl` seconds."""
        self.expire()
        expires = self.clock() + self.ttl
        s = self._newest
        if s is None or s.saved:
            fresh = Snapshot(rv)
            if s is not None:
                s.newer = fresh
            self._newest = s = fresh
        # else: nothing was written since the newest snapshot, so its state is the state at rv.
        self._by_rv.pop(rv, None)
        self._by_rv[rv] = (s, expires)
        self._first_expiry = next(iter(self._by_rv.values()))[1]

    def get(self, rv: int) -> Snapshot | None:
        self.expire()
        entry = self._by_rv.get(rv)
        return entry[0] if entry is not None else None

    def expire(self) -> None:
        now = self.clock()
        while self._by_rv and self._first_expiry <= now:
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        _, (s, _) = self._by_rv.popitem(last=False)
        nxt = next(iter(self._by_rv.values()), None)
        if nxt is None or nxt[0] is not s:  # no other token shares this snapshot
            self._saved -= len(s.saved)
        if nxt is None:
            self._newest = None
            self._saved = 0
            self._first_expiry = float("inf")
        else:
            self._first_expiry = nxt[1]

    def clear(self) -> None:
        """Drop every snapshot (an etcd compaction to the current revision)."""
        self._by_rv.clear()
        self._newest = None
        self._saved = 0
        self._first_expiry = float("inf")


def page_at(snapshot: Snapshot, objects: dict[ObjKey, Obj], keys_now: list[ObjKey],
            after: ObjKey | None, limit: int, predicate: Callable[[Obj], bool] | None,
            in_scope: Callable[[ObjKey], bool], candidates: Iterable[ObjKey] | None = None,
            ) -> tuple[list[Obj], ObjKey | None, int]:
    """One page of the state at `snapshot`: the objects after key `after` (sorted keys), the key
    to continue after (None when done) and how many objects of the snapshot follow the page.

    keys_now: the current sorted keys in scope; objects: the current objects by key."""
    changes = snapshot.changes()
    gone = sorted(k for k, v in changes.items() if v is not ABSENT and k not in objects and in_scope(k))
    if candidates is not None:
        # The index answers for the current objects; keys changed since may have matched then.
        base = sorted({k for k in candidates if in_scope(k)} | {k for k in changes if k in objects and in_scope(k)})
    else:
        base = keys_now
    start_base = bisect.bisect_right(base, after) if after else 0
    start_gone = bisect.bisect_right(gone, after) if after else 0
    merged: Iterator[ObjKey] = heapq.merge(base[start_base:], gone[start_gone:])
    out: list[Obj] = []
    next_key: ObjKey | None = None
    last: ObjKey | None = None
    for key in merged:
        v = changes.get(key, None)
        obj = objects.get(key) if key not in changes else (None if v is ABSENT else v)
        if obj is None or (predicate is not None and not predicate(obj)):
            continue
        if limit and len(out) >= limit:
            next_key = last
            break
        out.append(obj)
        last = key
    remaining = 0
    if next_key is not None:
        remaining = _count_after(changes, objects, keys_now, gone, next_key)
    return out, next_key, remaining


def _count_after(changes: dict[ObjKey, Any], objects: dict[ObjKey, Obj], keys_now: list[ObjKey],
                 gone: list[ObjKey], after: ObjKey) -> int:
    """Objects of the snapshot after `after` (keys_now and gone are in scope already)."""
    count = len(keys_now) - bisect.bisect_right(keys_now, after)
    count += len(gone) - bisect.bisect_right(gone, after)
    for k, v in changes.items():
        if v is ABSENT and k > after and k in objects:
            # Created since: counted among the current keys, but not part of the snapshot.
            i = bisect.bisect_left(keys_now, k)
            if i < len(keys_now) and keys_now[i] == k:
                count -= 1
    return count
