"""The one in-memory cluster state: objects per kind, indexes, GPU samples, history.

Writers (informer and GPU source threads) call `apply_batch`, `put_gpu_samples` and
`set_source_state`; readers (the UI thread) call the query methods. One lock guards
everything; critical sections are short dictionary operations. Subscribers get one
callback per applied batch, outside the lock, with the changed keys per kind.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from kueuetop.kueue.core import Pod
from kueuetop.kueue.gpu import GpuSample
from kueuetop.kueue.snapshot import ClusterSnapshot
from kueuetop.kueue.workload import Workload
from kueuetop.kueue.workload_state import Phase, WorkloadState, derive_state
from kueuetop.store import events as K
from kueuetop.store.events import Changes, Entry, Key, Op, QueuePosition, StoreEvent
from kueuetop.store.history import CountsRing, FloatRing, QueueCounts, Ring, Series, UtilFrame, util_buckets
from kueuetop.store.indexes import Indexes, MultiIndex
from kueuetop.store.sources import SourceState, SourceStatus

_log = logging.getLogger(__name__)

Subscriber = Callable[[Changes], None]


class StoreTap(Protocol):
    """Sees every write, in the order applied, under the store's lock (the recorder,
    sources/recorder.py): it must only take note, never block or call back into the store's writers."""

    def batch(self, events: Sequence[StoreEvent], now: float) -> None: ...
    def gpus(self, samples: Sequence[GpuSample], at: float, source: str, now: float) -> None: ...
    def source(self, status: SourceStatus, now: float) -> None: ...
GpuKey = tuple[str, str]  # (node, gpu)
_GONE_NODES_KEPT = 10_000
# Per-GPU utilization points kept: 10 minutes at the 5 s poll, what the idle rule judges
# (sources/gpu_join.py, idle_for=600 s) and more than the detail's sparkline shows (32). At the
# store-wide 720 points (an hour) 8,000 GPUs' rings would grow for an hour to over 600 MB.
GPU_HISTORY_POINTS = 120

# Which snapshot field each kind fills; keys of cluster-scoped kinds are plain names.
_SNAPSHOT_FIELDS = {
    K.CLUSTER_QUEUES: "cluster_queues", K.COHORTS: "cohorts", K.RESOURCE_FLAVORS: "flavors",
    K.ADMISSION_CHECKS: "admission_checks", K.LOCAL_QUEUES: "local_queues", K.WORKLOADS: "workloads",
}
_NAMESPACED_SNAPSHOT = {K.LOCAL_QUEUES, K.WORKLOADS}
_SNAPSHOT_KINDS = frozenset({*_SNAPSHOT_FIELDS, K.NAMESPACES})


@dataclass(frozen=True, slots=True)
class StoreState:
    """A store's objects, indexes, queue positions, GPUs and sources at one moment, detached
    from it (`Store.freeze`): a replay keeps these as checkpoints and swaps one back in
    (`Store.thaw`) instead of applying its objects again. Histories are not part of it."""

    objects: dict[str, dict[Key, Entry]]
    owner: dict[str, dict[Key, str]]
    ix: Indexes
    positions: dict[Key, QueuePosition]
    positions_by_cq: MultiIndex
    gpus: dict[GpuKey, GpuSample]
    gpu_source: dict[GpuKey, str]
    gpus_by_node: MultiIndex
    gpus_by_pod: MultiIndex
    gone_nodes: dict[str, None]
    sources: dict[str, SourceStatus]
    synced: frozenset[str]

    def compacted(self) -> StoreState:
        """The same state in less memory, for keeping (a replay's checkpoints): the indexes' value
        → keys sides are dropped and filed again by `copy()` (what `Store.thaw` makes). Shares
        this state's mappings: call it on a fresh `Store.freeze()`."""
        return StoreState(self.objects, self.owner, self.ix.compacted(), self.positions,
                          self.positions_by_cq.compacted(), self.gpus, self.gpu_source, self.gpus_by_node.compacted(),
                          self.gpus_by_pod.compacted(), self.gone_nodes, self.sources, self.synced)

    def copy(self) -> StoreState:
        """Copies of the mappings (the entries, parsed objects and statuses are immutable: shared)."""
        return StoreState({k: dict(v) for k, v in self.objects.items()}, {k: dict(v) for k, v in self.owner.items()},
                          self.ix.copy(), dict(self.positions), self.positions_by_cq.copy(), dict(self.gpus),
                          dict(self.gpu_source), self.gpus_by_node.copy(), self.gpus_by_pod.copy(),
                          dict(self.gone_nodes), dict(self.sources), self.synced)


class Store:
    def __init__(self, *, history_size: int = 720, history_interval: float = 5.0,
                 gpu_history_size: int = GPU_HISTORY_POINTS, clock: Callable[[], float] = time.time) -> None:
        self._lock = threading.RLock()
        self._clock = clock
        self._objects: dict[str, dict[Key, Entry]] = {}
        self._owner: dict[str, dict[Key, str]] = {}  # which source delivered each key
        self._ix = Indexes()
        self._positions: dict[Key, QueuePosition] = {}
        self._positions_by_cq = MultiIndex()
        self._gpus: dict[GpuKey, GpuSample] = {}
        self._gpu_source: dict[GpuKey, str] = {}
        self._gpus_by_node = MultiIndex()  # node → {(node, gpu)} (MultiIndex keys are pairs)
        self._gpus_by_pod = MultiIndex()  # (ns, pod) → {(node, gpu)}
        # Nodes deleted from the cluster (insertion-ordered, bounded): Prometheus keeps answering
        # their last samples for its 5-minute lookback, which must not bring their GPUs back.
        self._gone_nodes: dict[str, None] = {}
        self._sources: dict[str, SourceStatus] = {}
        self._synced: set[str] = set()  # sources whose first full list has been applied
        self._subscribers: list[tuple[int, Subscriber]] = []  # (stage, callback) in call order
        # ClusterQueues whose queue positions someone is looking at (None: all of them). The
        # console sets it from the visible view, so the visibility API is asked only for those.
        self.position_focus: frozenset[str] | None = None
        self._version = 0
        self._snapshot_version = 0  # moves only when the engine's input (snapshot()) changes
        self._writing = 0  # batches being applied (readers may avoid pausing the process meanwhile)
        # Called (on the writer's thread) before a batch of at least `burst_size` events is
        # applied: the console uses it to keep garbage collections out of the burst.
        self.on_burst: Callable[[], None] | None = None
        self.burst_size = 100
        self._snapshot: tuple[int, ClusterSnapshot] | None = None
        # Per kind, a count of writes to its objects, and the snapshot's mapping of that kind with
        # the count it was built at: a snapshot hands over the very mapping of a kind that did not
        # change, as the simulator does, so the engine's memos of ClusterQueues, Cohorts, flavors
        # (the cohort tree, Active status) live across workload changes instead of being built
        # again — and left as garbage — at every snapshot.
        self._kind_writes: dict[str, int] = {}
        self._snapshot_parts: dict[str, tuple[int, dict[Any, Any]]] = {}
        self._forecast: Any = None  # the latest admission.forecast_result.Forecast (derived, set by its worker)
        self.queue_history: Series[str, QueueCounts] = Series(history_size, ring=CountsRing)
        self.gpu_history: Series[GpuKey, float | None] = Series(gpu_history_size, ring=FloatRing)
        # Fleet-wide, one point per GPU write: GPUs per model, and the utilization distribution
        # (the GPU dashboard's "number and type of GPUs" and "utilization distribution" panels).
        self.gpu_model_history: Series[str, int] = Series(history_size, max_keys=64)
        self.gpu_util_history: Ring[UtilFrame] = Ring(history_size)
        self._history_interval = history_interval
        self._history_at = 0.0
        self.tap: StoreTap | None = None  # a recorder, when one is attached

    # ================================================================= writing
    def apply(self, event: StoreEvent) -> Changes:
        return self.apply_batch((event,))

    def apply_batch(self, batch: Iterable[StoreEvent]) -> Changes:
        """Apply events in order; notify subscribers once with everything that changed."""
        changed: dict[str, set[Any]] = {}
        now = self._clock()
        hook = self.on_burst
        if hook is not None and isinstance(batch, (list, tuple)) and len(batch) >= self.burst_size:
            hook()
        with self._lock:
            tap = self.tap
            if tap is not None:
                batch = batch if isinstance(batch, (list, tuple)) else tuple(batch)
                tap.batch(batch, now)
            self._writing += 1
            try:
                self._apply_all(batch, now, changed)
            finally:
                self._writing -= 1
        return self._notify(changed)

    @property
    def writing(self) -> bool:
        """A batch is being applied right now (the console holds full garbage collections back)."""
        return self._writing > 0

    def _apply_all(self, batch: Iterable[StoreEvent], now: float, changed: dict[str, set[Any]]) -> None:
        for ev in batch:
            try:
                self._apply_one(ev, now, changed)
            except Exception:  # a bug in one event must not lose the rest of the batch
                _log.exception("store: could not apply %s %s from %s", ev.op, ev.kind, ev.source)
            st = self._sources.get(ev.source)
            at = ev.at if ev.at is not None else now
            if st is not None and (st.last_ok is None or at > st.last_ok):
                self._sources[ev.source] = replace(st, last_ok=at)
        if any(changed.values()):
            self._version += 1
            if any(changed.get(k) for k in _SNAPSHOT_KINDS):
                self._snapshot_version += 1
            self._record_history(now, changed)

    def _apply_one(self, ev: StoreEvent, now: float, changed: dict[str, set[Any]]) -> None:
        if ev.op is Op.POSITIONS:
            self._apply_positions(ev, changed)
            return
        objs = self._objects.setdefault(ev.kind, {})
        owner = self._owner.setdefault(ev.kind, {})
        out = changed.setdefault(ev.kind, set())
        if ev.op is Op.UPSERT and ev.entry is not None:
            e = ev.entry
            old = objs.get(e.key)
            if old is not None and old.resource_version == e.resource_version and old.uid == e.uid \
                    and e.resource_version:
                return  # the same version again (relist overlap): nothing changed
            objs[e.key] = e
            owner[e.key] = ev.source
            self._wrote(ev.kind)
            self._index(ev.kind, e.key, e.obj, now, out, changed)
            out.add(e.key)
        elif ev.op is Op.DELETE and ev.key is not None:
            if objs.pop(ev.key, None) is not None:
                self._wrote(ev.kind)
                owner.pop(ev.key, None)
                self._unindex(ev.kind, ev.key, changed)
                out.add(ev.key)
        elif ev.op is Op.REPLACE:
            self._synced.add(ev.source)
            fresh = {e.key: e for e in ev.entries}
            for key in [k for k, s in owner.items() if s == ev.source and k not in fresh]:
                objs.pop(key, None)
                self._wrote(ev.kind)
                owner.pop(key, None)
                self._unindex(ev.kind, key, changed)
                out.add(key)
            for e in ev.entries:
                old = objs.get(e.key)
                if old is not None and old.resource_version == e.resource_version and old.uid == e.uid \
                        and e.resource_version and owner.get(e.key) == ev.source:
                    continue
                objs[e.key] = e
                owner[e.key] = ev.source
                self._wrote(ev.kind)
                self._index(ev.kind, e.key, e.obj, now, out, changed)
                out.add(e.key)

    def _wrote(self, kind: str) -> None:
        self._kind_writes[kind] = self._kind_writes.get(kind, 0) + 1

    def _index(self, kind: str, key: Key, obj: Any, now: float, out: set[Any],
               changed: dict[str, set[Any]]) -> None:
        if kind == K.WORKLOADS:
            self._ix.put_workload(key, obj if isinstance(obj, Workload) else None, now)
        elif kind == K.LOCAL_QUEUES:
            moved = self._ix.put_local_queue(key, obj if obj is not None else None)
            if moved:
                changed.setdefault(K.WORKLOADS, set()).update(moved)
        elif kind == K.PODS:
            self._ix.put_pod(key, obj if isinstance(obj, Pod) else None)
        elif kind == K.NODES:
            self._gone_nodes.pop(key[1], None)

    def _unindex(self, kind: str, key: Key, changed: dict[str, set[Any]]) -> None:
        if kind == K.WORKLOADS:
            self._ix.remove_workload(key)
            for cq in self._positions_by_cq.values_of(key):
                changed.setdefault(K.POSITIONS, set()).add(cq)
            self._positions.pop(key, None)
            self._positions_by_cq.remove(key)
        elif kind == K.LOCAL_QUEUES:
            moved = self._ix.put_local_queue(key, None)
            if moved:
                changed.setdefault(K.WORKLOADS, set()).update(moved)
        elif kind == K.PODS:
            self._ix.remove_pod(key)
        elif kind == K.NODES:
            # A deleted node's GPUs go with it (spot reclaim, scale-down), not linger as stale.
            self._gone_nodes[key[1]] = None
            if len(self._gone_nodes) > _GONE_NODES_KEPT:
                del self._gone_nodes[next(iter(self._gone_nodes))]
            for gkey in list(self._gpus_by_node.get((key[1], ""))):
                self._drop_gpu(gkey)
                changed.setdefault(K.GPUS, set()).add(gkey)

    def _apply_positions(self, ev: StoreEvent, changed: dict[str, set[Any]]) -> None:
        cq = ev.key[1] if ev.key else ""
        for wkey in list(self._positions_by_cq.get(cq)):
            self._positions.pop(wkey, None)
            self._positions_by_cq.remove(wkey)
        for wkey, pos in ev.positions:
            self._positions[wkey] = pos
            self._positions_by_cq.set(wkey, (cq,))
        changed.setdefault(K.POSITIONS, set()).add(cq)

    def _record_history(self, now: float, changed: dict[str, set[Any]]) -> None:
        # Queue counts only move when workloads or queues change; sample at most every interval.
        if now - self._history_at < self._history_interval:
            return
        if not (changed.get(K.WORKLOADS) or changed.get(K.CLUSTER_QUEUES) or changed.get(K.LOCAL_QUEUES)):
            return
        self.record_queue_history(now)

    def record_queue_history(self, now: float | None = None) -> None:
        """Append the current pending/admitted counts of every ClusterQueue."""
        now = self._clock() if now is None else now
        with self._lock:
            self._history_at = now
            for cq_key in self._objects.get(K.CLUSTER_QUEUES, {}):
                pending, admitted, reserved = self._ix.queue_counts(cq_key[1])
                self.queue_history.append(cq_key[1], now, QueueCounts(pending, admitted, reserved))

    # ----------------------------------------------------------------- GPUs
    def put_gpu_samples(self, samples: list[GpuSample], at: float, source: str) -> Changes:
        """Replace what `source` knows about the nodes present in `samples`.

        A fleet-wide query (Prometheus) covers every node; a per-node scrape covers one. GPUs
        of those nodes missing from `samples` are dropped; other nodes are left alone and turn
        stale by age (`SourceStatus.stale_after`)."""
        changed: set[GpuKey] = set()
        with self._lock:
            samples = [s for s in samples if s.node not in self._gone_nodes]
            if self.tap is not None:
                self.tap.gpus(samples, at, source, self._clock())
            nodes = {s.node for s in samples}
            fresh = {s.key for s in samples}
            for node in nodes:
                for gkey in list(self._gpus_by_node.get((node, ""))):
                    if gkey not in fresh and self._gpu_source.get(gkey) == source:
                        self._drop_gpu(gkey)
                        changed.add(gkey)
            for s in samples:
                gkey = s.key
                self._gpus[gkey] = s
                self._gpu_source[gkey] = source
                self._gpus_by_node.set(gkey, ((s.node, ""),))
                self._gpus_by_pod.set(gkey, ((s.namespace, s.pod),) if s.pod else ())
                self.gpu_history.append(gkey, s.at or at, s.util)
                changed.add(gkey)
            st = self._sources.get(source) or SourceStatus(source, SourceState.LIVE, since=at)
            self._sources[source] = replace(st, state=SourceState.LIVE, message="",
                                            last_ok=max(at, st.last_ok or 0.0))
            if changed:
                self._version += 1
                self._record_gpu_fleet(at)
        return self._notify({K.GPUS: changed, K.SOURCES: {source}})

    def _record_gpu_fleet(self, at: float) -> None:
        models: dict[str, int] = {}
        for s in self._gpus.values():
            models[s.model or "?"] = models.get(s.model or "?", 0) + 1
        for model in set(models) | set(self.gpu_model_history.keys()):
            # A model that is gone (spot nodes reclaimed) drops to 0 rather than ending mid-air.
            self.gpu_model_history.append(model, at, models.get(model, 0))
        self.gpu_util_history.append(at, util_buckets(None if s.stale else s.util for s in self._gpus.values()))

    def _drop_gpu(self, gkey: GpuKey) -> None:
        self._gpus.pop(gkey, None)
        self._gpu_source.pop(gkey, None)
        self._gpus_by_node.remove(gkey)
        self._gpus_by_pod.remove(gkey)

    # ----------------------------------------------------------------- whole states
    def freeze(self) -> StoreState:
        """This store's state, copied: later writes here do not change it."""
        with self._lock:
            return StoreState(self._objects, self._owner, self._ix, self._positions, self._positions_by_cq,
                              self._gpus, self._gpu_source, self._gpus_by_node, self._gpus_by_pod,
                              self._gone_nodes, self._sources, frozenset(self._synced)).copy()

    def thaw(self, state: StoreState) -> None:
        """Make this store hold a copy of `state` (`state` stays as it was, to be thawed again).
        No subscriber is told: only for a store nobody watches yet (a replay's own store)."""
        st = state.copy()
        with self._lock:
            if self._subscribers:
                raise RuntimeError("thaw() replaces the state under subscribers' feet")
            self._objects, self._owner, self._ix = st.objects, st.owner, st.ix
            self._positions, self._positions_by_cq = st.positions, st.positions_by_cq
            self._gpus, self._gpu_source = st.gpus, st.gpu_source
            self._gpus_by_node, self._gpus_by_pod = st.gpus_by_node, st.gpus_by_pod
            self._gone_nodes, self._sources, self._synced = st.gone_nodes, st.sources, set(st.synced)
            for kind in st.objects:
                self._wrote(kind)
            self._version += 1
            self._snapshot_version += 1

    def adopt(self, state: StoreState) -> Changes:
        """Hold `state` from now on (taken as it is: the caller hands over a fresh `freeze()`),
        telling subscribers what differs from what this store held, as a batch would: entries,
        indexes, positions, GPUs and sources are swapped in, not applied one by one. For the
        replay console, whose store shows one replayed moment after another (sources/replay.py);
        its histories get a point at the new moment, as writes would add."""
        with self._lock:
            changed: dict[str, set[Any]] = {}
            for kind in set(self._objects) | set(state.objects):
                mine, theirs = self._objects.get(kind, {}), state.objects.get(kind, {})
                keys = {k for k, e in theirs.items() if mine.get(k) is not e}
                keys.update(k for k in mine if k not in theirs)
                if keys:
                    changed[kind] = keys
            # A LocalQueue pointed elsewhere moves its workloads to another ClusterQueue unchanged.
            old_cq, new_cq = self._ix.wl_by_cq, state.ix.wl_by_cq
            moved = {k for k in state.objects.get(K.WORKLOADS, {}) if old_cq.values_of(k) != new_cq.values_of(k)}
            if moved:
                changed.setdefault(K.WORKLOADS, set()).update(moved)
            cqs = {p.cluster_queue for p in self._positions.values()} | \
                  {p.cluster_queue for p in state.positions.values()}
            pos = {cq for cq in cqs if self._positions_by_cq.get(cq) != state.positions_by_cq.get(cq) or
                   any(self._positions.get(k) != state.positions.get(k) for k in state.positions_by_cq.get(cq))}
            if pos:
                changed[K.POSITIONS] = pos
            gpus = {k for k, g in state.gpus.items() if self._gpus.get(k) != g} | \
                   {k for k in self._gpus if k not in state.gpus}
            if gpus:
                changed[K.GPUS] = gpus
            srcs = {n for n, st in state.sources.items() if self._sources.get(n) != st} | \
                   {n for n in self._sources if n not in state.sources}
            if srcs:
                changed[K.SOURCES] = srcs
            self._objects, self._owner, self._ix = state.objects, state.owner, state.ix
            self._positions, self._positions_by_cq = state.positions, state.positions_by_cq
            self._gpus, self._gpu_source = state.gpus, state.gpu_source
            self._gpus_by_node, self._gpus_by_pod = state.gpus_by_node, state.gpus_by_pod
            self._gone_nodes, self._sources, self._synced = state.gone_nodes, state.sources, set(state.synced)
            now = self._clock()
            for kind in changed:
                self._wrote(kind)
            if changed:
                self._version += 1
                self._snapshot_version += 1
                self._record_history(now, changed)
            if gpus:
                for key in gpus:
                    g = state.gpus.get(key)
                    if g is not None:
                        self.gpu_history.append(key, g.at or now, g.util)
                self._record_gpu_fleet(now)
        return self._notify(changed)

    # ----------------------------------------------------------------- forecast
    def set_forecast(self, forecast: Any, moved: set[Key]) -> Changes:
        """Keep the latest forecast (computed off the store by the console's worker); `moved`:
        the workloads whose predicted start or reason differs from the previous one's."""
        with self._lock:
            self._forecast = forecast
        return self._notify({K.FORECAST: moved})

    def forecast(self) -> Any:
        """The latest forecast (`admission.forecast_result.Forecast`), or None before the first."""
        return self._forecast

    # ----------------------------------------------------------------- sources
    def set_source_state(self, source: str, state: SourceState, message: str = "", *,
                         ok: bool = False, stale_after: float | None = None, skipped: int | None = None) -> None:
        """Record a source's connection state; `ok` also stamps the data as fresh now."""
        now = self._clock()
        with self._lock:
            known = self._sources.get(source)
            st = known or SourceStatus(source, since=now)
            new = replace(st, state=state, message=message,
                          since=now if state is not st.state else st.since,
                          last_ok=now if ok else st.last_ok,
                          stale_after=stale_after if stale_after is not None else st.stale_after,
                          skipped=skipped if skipped is not None else st.skipped)
            # A new source is recorded even in the default state (connecting): else the status
            # bar, knowing only the sources already listed, reads "live" while it is still listing.
            if new == st and known is not None:
                return
            self._sources[source] = new
            if self.tap is not None:
                self.tap.source(new, now)
        self._notify({K.SOURCES: {source}})

    def put_source_status(self, status: SourceStatus) -> None:
        """Set a source's state exactly as given (a replayed recording's)."""
        with self._lock:
            if self._sources.get(status.name) == status:
                return
            self._sources[status.name] = status
        self._notify({K.SOURCES: {status.name}})

    def sources(self) -> dict[str, SourceStatus]:
        with self._lock:
            return dict(self._sources)

    def source(self, name: str) -> SourceStatus | None:
        with self._lock:
            return self._sources.get(name)

    def has_synced(self, source: str) -> bool:
        """The source's first full list is in the store (not merely received)."""
        with self._lock:
            return source in self._synced

    def stale(self, source: str, now: float | None = None) -> bool:
        st = self.source(source)
        return True if st is None else st.stale(self._clock() if now is None else now)

    # ----------------------------------------------------------------- notifications
    def set_position_focus(self, cluster_queues: set[str] | frozenset[str] | None) -> None:
        self.position_focus = None if cluster_queues is None else frozenset(cluster_queues)

    def subscribe(self, callback: Subscriber, *, stage: int = 0) -> Callable[[], None]:
        """Call `callback(changes)` after every batch that changed something; returns unsubscribe.

        Subscribers of a lower `stage` are called first (in subscription order within a stage):
        a view records which rows changed (stage -1) before the console is told to redraw (0),
        and bookkeeping nobody waits for comes after (1)."""
        entry = (stage, callback)
        with self._lock:
            at = len(self._subscribers)
            while at and self._subscribers[at - 1][0] > stage:
                at -= 1
            self._subscribers.insert(at, entry)

        def unsubscribe() -> None:
            with self._lock:
                for i, e in enumerate(self._subscribers):
                    if e is entry:
                        del self._subscribers[i]
                        break
        return unsubscribe

    def _notify(self, changed: Mapping[str, set[Any]]) -> Changes:
        changes = Changes({k: frozenset(v) for k, v in changed.items() if v})
        if not changes:
            return changes
        with self._lock:
            subs = [cb for _, cb in self._subscribers]
        for cb in subs:
            try:
                cb(changes)
            except Exception:  # a broken view must not stop the informers
                _log.exception("store subscriber failed")
        return changes

    # ================================================================= reading
    @property
    def version(self) -> int:
        """Increases with every change; cheap for a reader to see whether to redraw."""
        return self._version

    def get(self, kind: str, key: Key) -> Any:
        """The parsed object (None when absent or unparseable)."""
        with self._lock:
            e = self._objects.get(kind, {}).get(key)
            return e.obj if e is not None else None

    def entry(self, kind: str, key: Key) -> Entry | None:
        with self._lock:
            return self._objects.get(kind, {}).get(key)

    def raw(self, kind: str, key: Key) -> dict[str, Any] | None:
        """The wire dict of an object that could not be parsed (parsed objects keep none: the
        YAML view fetches those from the API server, `sources/object_get.py`)."""
        e = self.entry(kind, key)
        return e.raw if e is not None else None

    def wire(self, kind: str, key: Key) -> dict[str, Any] | None:
        """The wire dict the store has for an object: a kind kept unparsed (Events), or an object
        that could not be parsed; None for parsed objects."""
        e = self.entry(kind, key)
        return e.wire if e is not None else None

    def owners(self, kind: str) -> dict[Key, str]:
        """Which source delivered each object of a kind (a replay mirrors the store by source)."""
        with self._lock:
            return dict(self._owner.get(kind, {}))

    def keys(self, kind: str) -> list[Key]:
        with self._lock:
            return list(self._objects.get(kind, {}))

    def objects(self, kind: str) -> dict[Key, Any]:
        """Parsed objects of a kind (unparseable ones left out)."""
        with self._lock:
            return {k: e.obj for k, e in self._objects.get(kind, {}).items() if e.obj is not None}

    def entries(self, kind: str) -> dict[Key, Entry]:
        with self._lock:
            return dict(self._objects.get(kind, {}))

    def unparsed(self, kind: str) -> dict[Key, str]:
        """Objects kept only as wire dicts, with the reason they could not be parsed."""
        with self._lock:
            return {k: e.error for k, e in self._objects.get(kind, {}).items() if e.obj is None}

    def versions(self, kind: str) -> set[tuple[str, str]]:
        """{(uid, resourceVersion)} of a kind, to compare with the server."""
        with self._lock:
            return {(e.uid, e.resource_version) for e in self._objects.get(kind, {}).values()}

    def count(self, kind: str) -> int:
        with self._lock:
            return len(self._objects.get(kind, {}))

    # ----------------------------------------------------------------- workload queries
    def workloads_in_cluster_queue(self, cq: str) -> set[Key]:
        with self._lock:
            return set(self._ix.wl_by_cq.get(cq))

    def workloads_in_local_queue(self, namespace: str, lq: str) -> set[Key]:
        with self._lock:
            return set(self._ix.wl_by_lq.get((namespace, lq)))

    def workloads_in_phase(self, phase: Phase) -> set[Key]:
        with self._lock:
            return set(self._ix.wl_by_phase.get(phase))

    def workload_state(self, key: Key, now: float | None = None) -> WorkloadState | None:
        """Derived state; with `now`, re-derived so a finished backoff shows as pending."""
        with self._lock:
            if now is None:
                return self._ix.wl_state.get(key)
            e = self._objects.get(K.WORKLOADS, {}).get(key)
        return derive_state(e.obj, now) if e is not None and isinstance(e.obj, Workload) else None

    def queue_counts(self, cq: str) -> QueueCounts:
        with self._lock:
            return QueueCounts(*self._ix.queue_counts(cq))

    def position(self, key: Key) -> QueuePosition | None:
        with self._lock:
            return self._positions.get(key)

    def positions(self, cq: str) -> dict[Key, QueuePosition]:
        with self._lock:
            return {k: self._positions[k] for k in self._positions_by_cq.get(cq)}

    # ----------------------------------------------------------------- pods and GPUs
    def pods_of_workload(self, key: Key) -> set[Key]:
        with self._lock:
            return self._ix.pods_of_workload(key)

    def workload_of_pod(self, key: Key) -> Key | None:
        with self._lock:
            e = self._objects.get(K.PODS, {}).get(key)
            return self._ix.workload_of_pod(e.obj) if e is not None and isinstance(e.obj, Pod) else None

    def pods_on_node(self, node: str) -> set[Key]:
        with self._lock:
            return set(self._ix.pods_by_node.get(node))

    def gpus_on_node(self, node: str) -> list[GpuSample]:
        with self._lock:
            return sorted((self._gpus[g] for g in self._gpus_by_node.get((node, ""))),  # type: ignore[index]
                          key=lambda s: s.gpu)

    def gpus_of_pod(self, namespace: str, pod: str) -> list[GpuSample]:
        with self._lock:
            return sorted((self._gpus[g] for g in self._gpus_by_pod.get((namespace, pod))),  # type: ignore[index]
                          key=lambda s: s.key)

    def gpus_of_workload(self, key: Key) -> list[GpuSample]:
        with self._lock:
            out: list[GpuSample] = []
            for pkey in self._ix.pods_of_workload(key):
                out.extend(self._gpus[g] for g in self._gpus_by_pod.get(pkey))  # type: ignore[index]
            return sorted(out, key=lambda s: s.key)

    def gpus(self) -> dict[GpuKey, GpuSample]:
        with self._lock:
            return dict(self._gpus)

    # ----------------------------------------------------------------- engine snapshot
    @property
    def snapshot_version(self) -> int:
        """Increases when a kind the engine reads changes (not with GPU samples, pods or Events)."""
        return self._snapshot_version

    def _snapshot_part(self, kind: str) -> dict[Any, Any]:
        """The snapshot's mapping of one kind: the last one handed out while the kind is unchanged."""
        writes = self._kind_writes.get(kind, 0)
        kept = self._snapshot_parts.get(kind)
        if kept is not None and kept[0] == writes:
            return kept[1]
        objs = self._objects.get(kind, {})
        if kind == K.NAMESPACES:
            part = {k[1]: e.obj.labels for k, e in objs.items() if e.obj is not None}
        elif kind in _NAMESPACED_SNAPSHOT:
            part = {k: e.obj for k, e in objs.items() if e.obj is not None}
        else:
            part = {k[1]: e.obj for k, e in objs.items() if e.obj is not None}
        self._snapshot_parts[kind] = (writes, part)
        return part

    def snapshot(self) -> ClusterSnapshot:
        """The engine's input, built from the parsed objects (shared, not copied) and cached
        until one of its kinds changes; a kind that did not change keeps the mapping earlier
        snapshots hold (read-only for everyone)."""
        with self._lock:
            cached = self._snapshot
            if cached is not None and cached[0] == self._snapshot_version:
                return cached[1]
            fields: dict[str, Any] = {name: self._snapshot_part(kind) for kind, name in _SNAPSHOT_FIELDS.items()}
            fields["namespaces"] = self._snapshot_part(K.NAMESPACES)
            snap = ClusterSnapshot(**fields)
            self._snapshot = (self._snapshot_version, snap)
            return snap
