"""Thread-safe in-memory store of API objects for the simulated cluster.

Objects are plain dicts (kueue.x-k8s.io objects in v1beta2), keyed by
(group, plural, namespace, name); cluster-scoped objects use namespace "". The store
keeps one global, monotonic resourceVersion like etcd's revision, a bounded history of
changes per kind for watches, the past states paginated lists still read (list_snapshots),
owner references for garbage collection and a few field
indexes so single-object operations and indexed lookups stay O(1) at 100k objects.

Stored dicts are never mutated after they are stored: every write stores a new dict, which
shares the parts it did not change with the previous version (a status write shares spec and
labels). `get`/`list` and the writes return deep copies unless `copy=False` is passed; objects
handed out uncopied, and to watchers and subscribers, are shared and must be treated as read-only.
"""

from __future__ import annotations

import bisect
import logging
import queue
import random
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kueuetop.kueue.api_versions import to_v1beta2
from kueuetop.kueue.json_copy import clone, clone_except
from kueuetop.sim.storage.kinds import KINDS, Kind, get_kind, kind_for_object
from kueuetop.sim.storage.list_snapshots import DEFAULT_TTL, SnapshotChain, page_at

_log = logging.getLogger(__name__)

Obj = dict[str, Any]
ObjKey = tuple[str, str]  # (namespace, name)

# Kinds whose objects carry metadata.generation (CRDs and workload controllers' kinds).
_NO_GENERATION = {("", "namespaces"), ("", "nodes"), ("", "events"), ("", "pods")}

# Top-level keys that do not count as "spec" for generation bumps.
_NON_SPEC_KEYS = ("metadata", "status", "apiVersion", "kind")


class StoreError(Exception):
    """Base class; `code` and `reason` mirror the Kubernetes Status the server will answer."""

    code = 500
    reason = "InternalError"

    def __init__(self, message: str, kind: Kind | None = None, name: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.name = name


class NotFound(StoreError):
    code = 404
    reason = "NotFound"


class AlreadyExists(StoreError):
    code = 409
    reason = "AlreadyExists"


class Conflict(StoreError):
    code = 409
    reason = "Conflict"


class Expired(StoreError):
    code = 410
    reason = "Expired"


class Invalid(StoreError):
    code = 422
    reason = "Invalid"


@dataclass(frozen=True)
class WatchEvent:
    """One change. `obj` is the new state (the last state for DELETED); `old` the previous."""

    type: str
    kind: Kind
    obj: Obj
    old: Obj | None
    rv: int


def rfc3339(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _spec_part(obj: Obj) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in _NON_SPEC_KEYS}


def _meta(obj: Obj) -> dict[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def _dig(obj: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(p)
    return obj


# Field indexes kept per kind: field path → function returning the indexed value.
DEFAULT_INDEXES: dict[tuple[str, str], dict[str, Callable[[Obj], Any]]] = {
    ("", "pods"): {"spec.nodeName": lambda o: _dig(o, "spec", "nodeName") or ""},
    ("kueue.x-k8s.io", "workloads"): {
        "status.admission.clusterQueue": lambda o: _dig(o, "status", "admission", "clusterQueue") or "",
        "spec.queueName": lambda o: _dig(o, "spec", "queueName") or "",
        # A LocalQueue's workloads: its name alone is shared by every namespace's "default" queue.
        "metadata.namespace,spec.queueName": lambda o: (_dig(o, "metadata", "namespace") or "",
                                                        _dig(o, "spec", "queueName") or ""),
    },
    ("kueue.x-k8s.io", "localqueues"): {"spec.clusterQueue": lambda o: _dig(o, "spec", "clusterQueue") or ""},
    ("", "events"): {"involvedObject.name": lambda o: _dig(o, "involvedObject", "name") or ""},
}


class Watcher:
    """A subscription to one kind (optionally one namespace). Events arrive on `queue`;
    a None item means the store closed the watch."""

    def __init__(self, store: ObjectStore, kind: Kind, namespace: str | None) -> None:
        self.store = store
        self.kind = kind
        self.namespace = namespace
        self.queue: queue.SimpleQueue[WatchEvent | None] = queue.SimpleQueue()
        self.closed = False

    def get(self, timeout: float | None = None) -> WatchEvent | None:
        """Next event; raises queue.Empty on timeout; None when the watch was closed."""
        return self.queue.get(timeout=timeout)

    def stop(self) -> None:
        self.store._remove_watcher(self)

    def _close(self) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put(None)


class _Bucket:
    """All objects of one kind, with their namespace index, history and watchers."""

    def __init__(self, kind: Kind, history_size: int, snapshots: SnapshotChain) -> None:
        self.kind = kind
        self.snapshots = snapshots  # past states for continue tokens
        self.objects: dict[ObjKey, Obj] = {}
        self.by_ns: dict[str, dict[str, Obj]] = {}
        self.sorted_keys: list[ObjKey] | None = None
        self.history: deque[WatchEvent] = deque()
        self.history_size = history_size
        self.floor = 0  # watches from a version older than this get 410
        self.watchers: list[Watcher] = []
        self.indexes: dict[str, tuple[Callable[[Obj], Any], dict[Any, set[ObjKey]]]] = {}

    def keys_sorted(self) -> list[ObjKey]:
        if self.sorted_keys is None:
            self.sorted_keys = sorted(self.objects)
        return self.sorted_keys

    def put(self, key: ObjKey, obj: Obj, old: Obj | None) -> None:
        self.snapshots.record(key, old)
        if old is None:
            self.sorted_keys = None
        self.objects[key] = obj
        self.by_ns.setdefault(key[0], {})[key[1]] = obj
        for fn, idx in self.indexes.values():
            if old is not None:
                ov = fn(old)
                nv = fn(obj)
                if ov == nv:
                    continue
                s = idx.get(ov)
                if s is not None:
                    s.discard(key)
                    if not s:
                        del idx[ov]
            idx.setdefault(fn(obj), set()).add(key)

    def remove(self, key: ObjKey) -> Obj:
        obj = self.objects.pop(key)
        self.snapshots.record(key, obj)
        self.sorted_keys = None
        ns = self.by_ns.get(key[0])
        if ns is not None:
            ns.pop(key[1], None)
            if not ns:
                del self.by_ns[key[0]]
        for fn, idx in self.indexes.values():
            v = fn(obj)
            s = idx.get(v)
            if s is not None:
                s.discard(key)
                if not s:
                    del idx[v]
        return obj

    def record(self, ev: WatchEvent) -> None:
        self.history.append(ev)
        while len(self.history) > self.history_size:
            self.floor = self.history.popleft().rv
        for w in self.watchers:
            if w.namespace is None or w.namespace == _meta(ev.obj).get("namespace", ""):
                w.queue.put(ev)


class ObjectStore:
    """In-memory API object store. See the module docstring for the sharing rules."""

    def __init__(self, now: Callable[[], float] = time.time, history_size: int = 10000,
                 kinds: Iterable[Kind] = KINDS, seed: int | None = None,
                 snapshot_ttl: float = DEFAULT_TTL, wall: Callable[[], float] = time.monotonic) -> None:
        """snapshot_ttl: how long (seconds of `wall`, a real clock whatever `now` is) a paginated
        list's continue token stays valid, as etcd keeps a revision until kube-apiserver's
        compaction, every 5 minutes."""
        self.now = now
        self._lock = threading.RLock()
        self._rv = 0
        self._buckets: dict[tuple[str, str], _Bucket] = {}
        for k in kinds:
            b = _Bucket(k, history_size, SnapshotChain(snapshot_ttl, wall))
            for field_path, fn in DEFAULT_INDEXES.get(k.key, {}).items():
                b.indexes[field_path] = (fn, {})
            self._buckets[k.key] = b
        self._uids: dict[str, tuple[str, str, str, str]] = {}
        self._dependents: dict[str, set[tuple[str, str, str, str]]] = {}
        self._subscribers: list[Callable[[WatchEvent], None]] = []
        self._pending: deque[WatchEvent] = deque()
        self._dispatch_lock = threading.Lock()
        self._rand = random.Random(seed)

    # ----------------------------------------------------------------- helpers
    @property
    def resource_version(self) -> int:
        return self._rv

    def _bucket(self, group: str, plural: str) -> _Bucket:
        b = self._buckets.get((group, plural))
        if b is None:
            raise NotFound(f'the server could not find the requested resource ({plural}.{group})')
        return b

    def kind(self, group: str, plural: str) -> Kind:
        return self._bucket(group, plural).kind

    def serves(self, group: str, plural: str) -> bool:
        """Whether this resource is stored (served), e.g. PodTemplates may be switched off."""
        return (group, plural) in self._buckets

    @staticmethod
    def _key(kind: Kind, namespace: str | None, name: str) -> ObjKey:
        return ((namespace or "") if kind.namespaced else "", name)

    @staticmethod
    def _not_found(kind: Kind, name: str) -> NotFound:
        return NotFound(f'{kind.qualified} "{name}" not found', kind, name)

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _emit(self, b: _Bucket, etype: str, obj: Obj, old: Obj | None, rv: int) -> None:
        ev = WatchEvent(etype, b.kind, obj, old, rv)
        b.record(ev)
        if self._subscribers:
            self._pending.append(ev)

    def _dispatch(self) -> None:
        # Called after the store lock is released. Events are delivered in order, by whichever
        # writer thread holds the dispatch lock; a subscriber may write to the store (its
        # events are queued and delivered by the same loop).
        while self._pending:
            if not self._dispatch_lock.acquire(blocking=False):
                return
            try:
                while True:
                    try:
                        ev = self._pending.popleft()
                    except IndexError:
                        break
                    for cb in list(self._subscribers):
                        try:
                            cb(ev)
                        except Exception:  # a faulty subscriber must not break writers
                            _log.exception("store subscriber failed")
            finally:
                self._dispatch_lock.release()

    def _generate_name(self, prefix: str) -> str:
        alphabet = "bcdfghjklmnpqrstvwxz2456789"
        return prefix + "".join(self._rand.choice(alphabet) for _ in range(5))

    # ----------------------------------------------------------------- reads
    def get(self, group: str, plural: str, namespace: str | None, name: str, *, copy: bool = True) -> Obj:
        with self._lock:
            b = self._bucket(group, plural)
            obj = b.objects.get(self._key(b.kind, namespace, name))
            if obj is None:
                raise self._not_found(b.kind, name)
        return clone(obj) if copy else obj

    def try_get(self, group: str, plural: str, namespace: str | None, name: str, *,
                copy: bool = True) -> Obj | None:
        try:
            return self.get(group, plural, namespace, name, copy=copy)
        except NotFound:
            return None

    def list(self, group: str, plural: str, namespace: str | None = None, *, copy: bool = True,
             predicate: Callable[[Obj], bool] | None = None) -> tuple[list[Obj], int]:
        """All objects of a kind (in one namespace, or all when None), sorted by (ns, name),
        and the resourceVersion they are consistent with."""
        items, _, rv = self.list_page(group, plural, namespace, predicate=predicate)
        return ([clone(o) for o in items] if copy else items), rv

    def list_page(self, group: str, plural: str, namespace: str | None = None, *,
                  limit: int = 0, after: ObjKey | None = None,
                  predicate: Callable[[Obj], bool] | None = None,
                  candidates: Iterable[ObjKey] | None = None) -> tuple[list[Obj], ObjKey | None, int]:
        """One page of shared (uncopied) objects after key `after`; returns the items, the key
        to continue after (None when done) and the current resourceVersion."""
        with self._lock:
            b = self._bucket(group, plural)
            rv = self._rv
            ns = (namespace or None) if b.kind.namespaced else None
            if candidates is not None:
                keys: list[ObjKey] = sorted(k for k in candidates if ns is None or k[0] == ns)
            elif ns is not None and not after and not limit:
                names = b.by_ns.get(ns, {})
                keys = [(ns, n) for n in sorted(names)]
            else:
                keys = b.keys_sorted()
                if ns is not None:
                    lo = bisect.bisect_left(keys, (ns, ""))
                    hi = bisect.bisect_left(keys, (ns + "\x00", ""))
                    keys = keys[lo:hi]
            start = bisect.bisect_right(keys, after) if after else 0
            out: list[Obj] = []
            next_key: ObjKey | None = None
            for i in range(start, len(keys)):
                obj = b.objects.get(keys[i])
                if obj is None or (predicate is not None and not predicate(obj)):
                    continue
                out.append(obj)
                if limit and len(out) >= limit:
                    # Only hand out a continue key if something could follow.
                    if i + 1 < len(keys):
                        next_key = keys[i]
                    break
            return out, next_key, rv

    def list_chunk(self, group: str, plural: str, namespace: str | None = None, *, limit: int = 0,
                   at: int | None = None, after: ObjKey | None = None,
                   predicate: Callable[[Obj], bool] | None = None,
                   candidates: Iterable[ObjKey] | None = None) -> tuple[list[Obj], ObjKey | None, int, int]:
        """One chunk of a paginated list: (shared objects, key to continue after or None, the
        resourceVersion the chunk is consistent with, how many objects follow it).

        Without `at` the chunk is read from the current state; if more follows, the state at
        this resourceVersion is kept (list_snapshots) so later chunks, read `at` it, come from
        the same snapshot however the objects change meanwhile. Raises Expired when the
        snapshot at `at` is no longer kept."""
        with self._lock:
            b = self._bucket(group, plural)
            if at is None:
                items, next_key, rv = self.list_page(group, plural, namespace, limit=limit, after=after,
                                                     predicate=predicate, candidates=candidates)
                remaining = 0
                if next_key is not None:
                    b.snapshots.take(rv)
                    remaining = self.count_after(group, plural, namespace, next_key)
                return items, next_key, rv, remaining
            snapshot = b.snapshots.get(at)
            if snapshot is None:
                raise Expired(f"the state at resourceVersion {at} is no longer kept", b.kind)
            ns = (namespace or None) if b.kind.namespaced else None
            keys = b.keys_sorted()
            if ns is not None:
                keys = keys[bisect.bisect_left(keys, (ns, "")):bisect.bisect_left(keys, (ns + "\x00", ""))]

            def in_scope(key: ObjKey) -> bool:
                return ns is None or key[0] == ns

            items, next_key, remaining = page_at(snapshot, b.objects, keys, after, limit, predicate, in_scope,
                                                 candidates)
            return items, next_key, at, remaining

    def count_after(self, group: str, plural: str, namespace: str | None, after: ObjKey) -> int:
        """How many objects (of a namespace, or all) sort after key `after`."""
        with self._lock:
            b = self._bucket(group, plural)
            keys = b.keys_sorted()
            ns = (namespace or None) if b.kind.namespaced else None
            hi = bisect.bisect_left(keys, (ns + "\x00", "")) if ns is not None else len(keys)
            return max(0, hi - bisect.bisect_right(keys, after))

    def index_keys(self, group: str, plural: str, field_path: str, value: Any) -> set[ObjKey] | None:
        """Keys whose indexed field equals value, or None when the field is not indexed."""
        with self._lock:
            b = self._bucket(group, plural)
            entry = b.indexes.get(field_path)
            if entry is None:
                return None
            return set(entry[1].get(value, ()))

    def by_index(self, group: str, plural: str, field_path: str, value: Any, *,
                 copy: bool = True) -> list[Obj]:
        keys = self.index_keys(group, plural, field_path, value)
        if keys is None:
            raise KeyError(field_path)
        items, _, _ = self.list_page(group, plural, None, candidates=keys)
        return [clone(o) for o in items] if copy else items

    def count(self, group: str, plural: str, namespace: str | None = None) -> int:
        with self._lock:
            b = self._bucket(group, plural)
            if namespace is None or not b.kind.namespaced:
                return len(b.objects)
            return len(b.by_ns.get(namespace, {}))

    # ----------------------------------------------------------------- writes
    def create_object(self, obj: Obj, *, dry_run: bool = False) -> Obj:
        """Create an object whose kind is taken from its apiVersion/kind (v1beta1 Kueue
        objects are converted to v1beta2 first)."""
        obj = to_v1beta2(obj)
        k = kind_for_object(obj)
        if k is None:
            raise NotFound(f'no kind "{obj.get("kind")}" is registered for version "{obj.get("apiVersion")}"')
        return self.create(k.group, k.plural, obj, dry_run=dry_run)

    def create(self, group: str, plural: str, obj: Obj, *, dry_run: bool = False, uid: str | None = None,
               copy: bool = True) -> Obj:
        """Create an object. `uid` (controllers only) skips the seeded uid draw, so objects a
        controller adds on the side (exporter pods) leave every other generated uid and name as is.
        With copy=False the stored object itself is returned (read-only, as from get)."""
        with self._lock:
            new = self._create_owned_locked(group, plural, clone(obj), uid=uid, dry_run=dry_run)
            if dry_run:
                return new
        self._dispatch()
        return clone(new) if copy else new

    def create_many(self, items: Iterable[tuple[str, str, Obj]]) -> list[StoreError | None]:
        """Bulk create for loading a scenario: each (group, plural, obj) is created as by
        `create` (same checks, metadata, events, in order), under one lock and with one
        dispatch at the end. The store takes ownership of each obj: it must be a fresh dict
        that nothing else holds (nothing is copied on the way in or out). Returns, per item,
        None or the StoreError that refused it; a refused item does not stop the others."""
        results: list[StoreError | None] = []
        with self._lock:
            for group, plural, new in items:
                try:
                    self._create_owned_locked(group, plural, new)
                except StoreError as exc:
                    results.append(exc)
                else:
                    results.append(None)
        self._dispatch()
        return results

    def _create_owned_locked(self, group: str, plural: str, new: Obj, *, uid: str | None = None,
                             dry_run: bool = False) -> Obj:
        """Create `new` itself (the caller hands it over): checks, metadata, store, event."""
        b = self._bucket(group, plural)
        k = b.kind
        new["apiVersion"] = k.api_version()
        new["kind"] = k.kind
        meta = new.get("metadata")
        if not isinstance(meta, dict):
            meta = new["metadata"] = {}
        if not meta.get("name") and meta.get("generateName"):
            for _ in range(20):
                candidate = self._generate_name(str(meta["generateName"]))
                if self._key(k, meta.get("namespace"), candidate) not in b.objects:
                    meta["name"] = candidate
                    break
        name = str(meta.get("name") or "")
        if not name:
            raise Invalid("name or generateName is required", k)
        if k.namespaced:
            meta["namespace"] = meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        key = self._key(k, meta.get("namespace"), name)
        if key in b.objects:
            raise AlreadyExists(f'{k.qualified} "{name}" already exists', k, name)
        meta["uid"] = uid or str(uuid.UUID(int=self._rand.getrandbits(128), version=4))
        meta["creationTimestamp"] = rfc3339(self.now())
        meta.pop("deletionTimestamp", None)
        meta.pop("deletionGracePeriodSeconds", None)
        meta.pop("selfLink", None)
        if k.key not in _NO_GENERATION:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        if dry_run:
            meta.pop("resourceVersion", None)
            return new
        rv = self._next_rv()
        meta["resourceVersion"] = str(rv)
        b.put(key, new, None)
        self._track_owners(k, key, new, None)
        self._emit(b, "ADDED", new, None, rv)
        return new

    def update(self, group: str, plural: str, obj: Obj, *, dry_run: bool = False, copy: bool = True) -> Obj:
        """Replace an object (PUT). For kinds with a status subresource, .status is kept."""
        return self._update(group, plural, obj, status=False, dry_run=dry_run, copy=copy)

    def update_status(self, group: str, plural: str, obj: Obj, *, dry_run: bool = False,
                      copy: bool = True) -> Obj:
        """Replace only .status (PUT .../status); everything else is kept."""
        return self._update(group, plural, obj, status=True, dry_run=dry_run, copy=copy)

    def patch(self, group: str, plural: str, namespace: str | None, name: str,
              fn: Callable[[Obj], Obj], *, status: bool = False, dry_run: bool = False,
              copy: bool = True) -> Obj:
        """Atomically apply fn to a copy of the current object and store the result. fn runs
        under the store lock and must not block; a resourceVersion it sets is honoured. What fn
        returns is stored as is, so it must not share mutable parts with anything the caller keeps.
        With status=True only the copy's .status (and metadata, shallowly) is private: fn may
        change .status alone, the rest is shared with the stored object and is read-only.
        With copy=False the stored object itself is returned (read-only, as from get)."""
        with self._lock:
            b = self._bucket(group, plural)
            cur = b.objects.get(self._key(b.kind, namespace, name))
            if cur is None:
                raise self._not_found(b.kind, name)
            # A status write keeps everything but .status: copying the rest (most of a Pod or
            # Workload) for fn to ignore would only cost time.
            candidate = fn(clone_except(cur, "status") if status else clone(cur))
            meta = candidate.setdefault("metadata", {})
            meta.setdefault("resourceVersion", cur["metadata"]["resourceVersion"])
            result = self._update_locked(b, candidate, status=status, dry_run=dry_run)
        self._dispatch()
        return clone(result) if copy else result

    def rewrite(self, group: str, plural: str, namespace: str | None, name: str,
                fn: Callable[[Obj], Obj], *, copy: bool = False) -> Obj:
        """Atomically store fn(current object) (an update, PUT).

        fn gets the stored object (read-only) and returns a new one that may share the parts it
        keeps (copy-on-write: `{**cur, "spec": {**cur["spec"], "nodeName": n}}`), cheaper than
        `patch`'s deep copy when a writer changes one field of a large object. The top level and
        metadata of the result are copied here, as the update fills them in."""
        with self._lock:
            b = self._bucket(group, plural)
            cur = b.objects.get(self._key(b.kind, namespace, name))
            if cur is None:
                raise self._not_found(b.kind, name)
            candidate = dict(fn(cur))
            meta = dict(candidate.get("metadata") or {})
            meta.setdefault("resourceVersion", cur["metadata"]["resourceVersion"])
            candidate["metadata"] = meta
            result = self._update_locked(b, candidate, status=False, dry_run=False)
        self._dispatch()
        return clone(result) if copy else result

    def replace_status(self, group: str, plural: str, namespace: str | None, name: str, status: Obj,
                       *, copy: bool = False) -> Obj:
        """Store `status` as the object's .status (PUT .../status on the current version).

        `status` is stored as given, not copied: the caller hands it over and must not change
        it afterwards (it may share parts with the stored object, which are read-only anyway).
        That is what a controller writing a freshly computed status wants, without the copy of
        the old status that `patch` would make for a function to edit."""
        return self.rewrite_status(group, plural, namespace, name, lambda _cur: status, copy=copy)

    def rewrite_status(self, group: str, plural: str, namespace: str | None, name: str,
                       fn: Callable[[Any], Obj], *, copy: bool = False) -> Obj:
        """Atomically store fn(current .status) as the object's .status.

        fn gets the stored status (read-only, possibly None) and returns a new one, which is
        stored as given and may share unchanged parts with the old one: a copy-on-write edit,
        cheaper than `patch`'s deep copy when a writer changes one condition of a large status.
        An equal result is a no-op write (no new resourceVersion)."""
        with self._lock:
            b = self._bucket(group, plural)
            cur = b.objects.get(self._key(b.kind, namespace, name))
            if cur is None:
                raise self._not_found(b.kind, name)
            cmeta = cur["metadata"]
            candidate = {"metadata": {"name": cmeta.get("name"), "namespace": cmeta.get("namespace"),
                                      "resourceVersion": cmeta["resourceVersion"]},
                         "status": fn(cur.get("status"))}
            result = self._update_locked(b, candidate, status=True, dry_run=False)
        self._dispatch()
        return clone(result) if copy else result

    def _update(self, group: str, plural: str, obj: Obj, *, status: bool, dry_run: bool, copy: bool) -> Obj:
        with self._lock:
            b = self._bucket(group, plural)
            result = self._update_locked(b, clone(obj), status=status, dry_run=dry_run)
        self._dispatch()
        return clone(result) if copy else result

    def _update_locked(self, b: _Bucket, new: Obj, *, status: bool, dry_run: bool) -> Obj:
        # `new` is private to the store (callers pass a copy). Parts taken over from `cur` are
        # shared, not copied: stored objects are never mutated, so versions may share subtrees.
        k = b.kind
        meta = new.setdefault("metadata", {})
        name = str(meta.get("name") or "")
        key = self._key(k, meta.get("namespace"), name)
        cur = b.objects.get(key)
        if cur is None:
            raise self._not_found(k, name)
        cmeta = cur["metadata"]
        want_rv = meta.get("resourceVersion")
        if want_rv not in (None, "") and str(want_rv) != cmeta["resourceVersion"]:
            raise Conflict(
                f'Operation cannot be fulfilled on {k.qualified} "{name}": the object has been '
                "modified; please apply your changes to the latest version and try again", k, name)
        if meta.get("uid") and meta["uid"] != cmeta["uid"]:
            raise Conflict(
                f'Operation cannot be fulfilled on {k.qualified} "{name}": Precondition failed: '
                f'UID in precondition: {meta["uid"]}, UID in object meta: {cmeta["uid"]}', k, name)
        if status:
            # Status subresource writes change .status only.
            merged = {kk: v for kk, v in cur.items() if kk != "status"}
            if "status" in new:
                merged["status"] = new["status"]
            merged["metadata"] = dict(cmeta)  # gets its own resourceVersion below
            new = merged
            meta = new["metadata"]
        else:
            new["apiVersion"] = k.api_version()
            new["kind"] = k.kind
            if k.status_subresource:
                new.pop("status", None)
                if "status" in cur:
                    new["status"] = cur["status"]
            # System-owned metadata cannot be changed by an update.
            for f in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                      "generation"):
                if f in cmeta:
                    meta[f] = cmeta[f]
                else:
                    meta.pop(f, None)
            if k.namespaced:
                meta["namespace"] = cmeta.get("namespace", "")
            if "generation" in cmeta and _spec_part(new) != _spec_part(cur):
                meta["generation"] = int(cmeta["generation"]) + 1
        meta["resourceVersion"] = cmeta["resourceVersion"]
        if new == cur:
            return cur  # no-op writes do not bump the resourceVersion (as etcd)
        if dry_run:
            return new
        rv = self._next_rv()
        meta["resourceVersion"] = str(rv)
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._remove_locked(b, key, new, rv)
            return new
        b.put(key, new, cur)
        self._track_owners(k, key, new, cur)
        self._emit(b, "MODIFIED", new, cur, rv)
        return new

    def delete(self, group: str, plural: str, namespace: str | None, name: str, *,
               propagation: str = "Background", uid: str | None = None,
               resource_version: str | None = None, dry_run: bool = False, copy: bool = True) -> Obj:
        """Delete an object. With finalizers it only gets a deletionTimestamp; once gone, its
        dependents are deleted (Background/Foreground) or released (Orphan). With copy=False
        the last state is returned uncopied (read-only)."""
        with self._lock:
            b = self._bucket(group, plural)
            k = b.kind
            key = self._key(k, namespace, name)
            cur = b.objects.get(key)
            if cur is None:
                raise self._not_found(k, name)
            cmeta = cur["metadata"]
            if uid and uid != cmeta.get("uid"):
                raise Conflict(
                    f'Operation cannot be fulfilled on {k.qualified} "{name}": Precondition failed: '
                    f'UID in precondition: {uid}, UID in object meta: {cmeta.get("uid")}', k, name)
            if resource_version and resource_version != cmeta.get("resourceVersion"):
                raise Conflict(
                    f'Operation cannot be fulfilled on {k.qualified} "{name}": Precondition failed: '
                    f'ResourceVersion in precondition: {resource_version}, ResourceVersion in object '
                    f'meta: {cmeta.get("resourceVersion")}', k, name)
            if dry_run:
                return clone(cur)
            if propagation == "Orphan":
                self._orphan_dependents_locked(cmeta.get("uid", ""))
            if cmeta.get("finalizers"):
                if cmeta.get("deletionTimestamp"):
                    return clone(cur)
                new = _with_own_meta(cur)
                new["metadata"]["deletionTimestamp"] = rfc3339(self.now())
                new["metadata"]["deletionGracePeriodSeconds"] = 0
                rv = self._next_rv()
                new["metadata"]["resourceVersion"] = str(rv)
                b.put(key, new, cur)
                self._emit(b, "MODIFIED", new, cur, rv)
                result = new
            else:
                new = _with_own_meta(cur)
                rv = self._next_rv()
                new["metadata"]["resourceVersion"] = str(rv)
                self._remove_locked(b, key, new, rv)
                result = new
        self._dispatch()
        return clone(result) if copy else result

    def _remove_locked(self, b: _Bucket, key: ObjKey, last: Obj, rv: int) -> None:
        b.remove(key)
        uid = _meta(last).get("uid", "")
        self._uids.pop(uid, None)
        for ref in _meta(last).get("ownerReferences") or []:
            deps = self._dependents.get(ref.get("uid", ""))
            if deps is not None:
                deps.discard((b.kind.group, b.kind.plural, key[0], key[1]))
                if not deps:
                    del self._dependents[ref.get("uid", "")]
        self._emit(b, "DELETED", last, None, rv)
        if b.kind.key == ("", "namespaces"):
            self._delete_namespace_contents(key[1])
        self._collect_dependents(uid)

    def _delete_namespace_contents(self, ns: str) -> None:
        for b in self._buckets.values():
            if not b.kind.namespaced:
                continue
            for name in list(b.by_ns.get(ns, {})):
                self._delete_locked_quiet(b, (ns, name))

    def _delete_locked_quiet(self, b: _Bucket, key: ObjKey) -> None:
        cur = b.objects.get(key)
        if cur is None:
            return
        if cur["metadata"].get("finalizers"):
            if cur["metadata"].get("deletionTimestamp"):
                return
            new = _with_own_meta(cur)
            new["metadata"]["deletionTimestamp"] = rfc3339(self.now())
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            rv = self._next_rv()
            new["metadata"]["resourceVersion"] = str(rv)
            b.put(key, new, cur)
            self._emit(b, "MODIFIED", new, cur, rv)
            return
        new = _with_own_meta(cur)
        rv = self._next_rv()
        new["metadata"]["resourceVersion"] = str(rv)
        self._remove_locked(b, key, new, rv)

    def _collect_dependents(self, owner_uid: str) -> None:
        # Background garbage collection, run synchronously: a dependent whose owners are all
        # gone is deleted; one that still has a live owner only loses the dangling reference.
        for g, p, ns, name in sorted(self._dependents.pop(owner_uid, set())):
            b = self._buckets.get((g, p))
            if b is None or (ns, name) not in b.objects:
                continue
            dep = b.objects[(ns, name)]
            refs = _meta(dep).get("ownerReferences") or []
            live = [r for r in refs if r.get("uid") != owner_uid and r.get("uid") in self._uids]
            if live:
                self._drop_owner_ref(b, (ns, name), owner_uid)
            else:
                self._delete_locked_quiet(b, (ns, name))

    def _orphan_dependents_locked(self, owner_uid: str) -> None:
        for g, p, ns, name in sorted(self._dependents.pop(owner_uid, set())):
            b = self._buckets.get((g, p))
            if b is not None and (ns, name) in b.objects:
                self._drop_owner_ref(b, (ns, name), owner_uid)

    def _drop_owner_ref(self, b: _Bucket, key: ObjKey, owner_uid: str) -> None:
        cur = b.objects[key]
        new = _with_own_meta(cur)
        refs = [r for r in new["metadata"].get("ownerReferences") or [] if r.get("uid") != owner_uid]
        if refs:
            new["metadata"]["ownerReferences"] = refs
        else:
            new["metadata"].pop("ownerReferences", None)
        rv = self._next_rv()
        new["metadata"]["resourceVersion"] = str(rv)
        b.put(key, new, cur)
        self._emit(b, "MODIFIED", new, cur, rv)

    def _track_owners(self, k: Kind, key: ObjKey, new: Obj, old: Obj | None) -> None:
        self._uids[new["metadata"]["uid"]] = (k.group, k.plural, key[0], key[1])
        full = (k.group, k.plural, key[0], key[1])
        old_refs = {r.get("uid") for r in (_meta(old).get("ownerReferences") or [])} if old else set()
        new_refs = {r.get("uid") for r in (new["metadata"].get("ownerReferences") or [])}
        for u in old_refs - new_refs:
            s = self._dependents.get(u)
            if s is not None:
                s.discard(full)
        for u in new_refs - old_refs:
            if u:
                self._dependents.setdefault(u, set()).add(full)

    # ----------------------------------------------------------------- watch
    def watch(self, group: str, plural: str, namespace: str | None = None,
              resource_version: int | None = None) -> tuple[Watcher, list[WatchEvent]]:
        """Register a watcher. With resource_version None the current objects come back as
        synthetic ADDED events ("get state and start at most recent"); otherwise the retained
        events after that version are returned. Raises Expired when it is too old."""
        with self._lock:
            b = self._bucket(group, plural)
            ns = namespace if b.kind.namespaced else None
            initial: list[WatchEvent] = []
            if resource_version is None:
                items = (b.by_ns.get(ns or "", {}).values() if ns is not None else b.objects.values())
                for obj in sorted(items, key=lambda o: (_meta(o).get("namespace", ""), _meta(o)["name"])):
                    initial.append(WatchEvent("ADDED", b.kind, obj, None,
                                              int(obj["metadata"]["resourceVersion"])))
            else:
                if resource_version < b.floor:
                    raise Expired(f"too old resource version: {resource_version} ({b.floor})", b.kind)
                for ev in reversed(b.history):
                    if ev.rv <= resource_version:
                        break
                    if ns is None or _meta(ev.obj).get("namespace", "") == ns:
                        initial.append(ev)
                initial.reverse()
            w = Watcher(self, b.kind, ns)
            b.watchers.append(w)
            return w, initial

    def _remove_watcher(self, w: Watcher) -> None:
        with self._lock:
            b = self._buckets.get(w.kind.key)
            if b is not None and w in b.watchers:
                b.watchers.remove(w)
        w._close()

    def quiescent_version(self, watcher: Watcher) -> int | None:
        """The current resourceVersion if `watcher` has nothing queued (so a bookmark at this
        version cannot overtake an undelivered event), else None."""
        with self._lock:
            return self._rv if watcher.queue.empty() else None

    def forget_history(self, group: str, plural: str) -> int:
        """The watch window of one kind moves past every event it kept, as kube-apiserver's watch
        cache does on a busy cluster (it keeps about 75 s): a watch from an older version gets
        410, while paginated lists, served from etcd's revisions, go on. Returns the floor."""
        with self._lock:
            b = self._bucket(group, plural)
            b.history.clear()
            b.floor = self._rv
            return self._rv

    def compact(self) -> int:
        """Drop all retained history, as an etcd compaction would: watches and continue
        tokens from older versions get 410 Gone. Returns the compaction version."""
        with self._lock:
            for b in self._buckets.values():
                b.history.clear()
                b.floor = self._rv
                b.snapshots.clear()
            return self._rv

    def subscribe(self, callback: Callable[[WatchEvent], None]) -> Callable[[], None]:
        """Call callback(event) for every change of every kind, in resourceVersion order,
        after the write that caused it has been committed. Returns an unsubscribe function."""
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe


def _with_own_meta(obj: Obj) -> Obj:
    """A new version of a stored object that differs only in top-level metadata fields."""
    return clone_except(obj, "")


def object_key(obj: Obj) -> tuple[str, str]:
    m = _meta(obj)
    return (m.get("namespace", "") or "", m.get("name", ""))


__all__ = [
    "AlreadyExists", "Conflict", "Expired", "Invalid", "NotFound", "ObjectStore", "StoreError",
    "WatchEvent", "Watcher", "get_kind", "object_key", "rfc3339",
]
