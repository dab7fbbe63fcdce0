"""All Kubernetes sources of one cluster: informers, the batching applier, queue positions.

Pods: kueuetop never mirrors every pod (a 100k-pod cluster would cost memory and traffic).
It watches, with server-side label selectors,
  * `pods/kueue`:   `kueue.x-k8s.io/podset` (set by Kueue on every pod it starts for a job),
  * `pods/managed`: `kueue.x-k8s.io/managed=true,!kueue.x-k8s.io/podset` (plain-pod integration),
and, only when asked (`unmanaged_gpu_pods=True`), every other pod filtered client-side to
those requesting `nvidia.com/gpu` (`pods/gpu`), to show GPUs held outside Kueue. The
selectors are disjoint so each pod has exactly one source.

Events (for the console's Events view, `include_events`): every Event but Kueue's per-workload
"Pending" ones (`events_selector`), through `EventRetention`, which keeps the store's copy to the
newest `max_events` within an hour.

Writes are serialised through one applier thread: informers put events on a queue; the
applier drains it in batches (a short window coalesces bursts), so the store notifies its
subscribers once per batch, never once per object.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import queue
import threading
import time
from collections.abc import Iterable
from typing import Any

import urllib3

from kueuetop.kueue.core import GPU_RESOURCE
from kueuetop.kueue.event import WITHOUT_KUEUE_PENDING
from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.parse_cache import ParseCache
from kueuetop.kueue.workload import PODSET_LABEL
from kueuetop.sources.aio_http import Endpoint
from kueuetop.sources.connection import AUTOSCALING_GROUP, KUEUE_GROUP, VISIBILITY_GROUP, Connection
from kueuetop.sources.event_retention import MAX_EVENTS, EventRetention
from kueuetop.sources.informer import Backoff, Informer, InformerConfig, ResourceSpec
from kueuetop.sources.kube_http import ApiError, request
from kueuetop.sources.liveness import LivenessProbe
from kueuetop.sources.loop_informer import LoopInformer, LoopLivenessProbe
from kueuetop.sources.recorder import WireKeeper
from kueuetop.sources.watch_loop import WatchLoop
from kueuetop.store import QueuePosition, SourceState, Store, StoreEvent
from kueuetop.store import events as K
from kueuetop.store.events import Op

_log = logging.getLogger(__name__)

MANAGED_LABEL = "kueue.x-k8s.io/managed"
VISIBILITY_SOURCE = "visibility"


def requests_gpu(pod: dict[str, Any]) -> bool:
    """True when any container asks for nvidia.com/gpu (requests or limits)."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return False
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or ():
            res = c.get("resources") if isinstance(c, dict) else None
            if not isinstance(res, dict):
                continue
            for part in ("requests", "limits"):
                amounts = res.get(part)
                if isinstance(amounts, dict) and str(amounts.get(GPU_RESOURCE, "0")).strip() not in ("0", ""):
                    return True
    return False




def resource_specs(conn: Connection, *, include_events: bool = False,
                   unmanaged_gpu_pods: bool = False, events_selector: str = WITHOUT_KUEUE_PENDING,
                   ) -> list[ResourceSpec]:
    """What to watch on this cluster, given the versions discovery found."""
    v = conn.kueue.version
    specs: list[ResourceSpec] = []
    kueue_kinds = [(K.CLUSTER_QUEUES, "ClusterQueue", False), (K.LOCAL_QUEUES, "LocalQueue", True),
                   (K.WORKLOADS, "Workload", True), (K.RESOURCE_FLAVORS, "ResourceFlavor", False),
                   (K.COHORTS, "Cohort", False), (K.ADMISSION_CHECKS, "AdmissionCheck", False),
                   (K.PROVISIONING_CONFIGS, "ProvisioningRequestConfig", False)]
    for plural, kind, namespaced in kueue_kinds:
        # Old Kueue releases lack some kinds (Cohort before 0.11): skip what is not served.
        if not conn.kueue.resources or conn.kueue.serves(plural):
            specs.append(ResourceSpec(plural, plural, KUEUE_GROUP, v, plural, kind, namespaced))
    if conn.kueue.provisioning_version:
        specs.append(ResourceSpec(K.PROVISIONING_REQUESTS, K.PROVISIONING_REQUESTS, AUTOSCALING_GROUP,
                                  conn.kueue.provisioning_version, "provisioningrequests",
                                  "ProvisioningRequest"))
    specs += [
        ResourceSpec(K.NODES, K.NODES, "", "v1", "nodes", "Node", False),
        ResourceSpec(K.NAMESPACES, K.NAMESPACES, "", "v1", "namespaces", "Namespace", False),
        ResourceSpec(K.PRIORITY_CLASSES, K.PRIORITY_CLASSES, "scheduling.k8s.io", "v1", "priorityclasses",
                     "PriorityClass", False),
        ResourceSpec("pods/kueue", K.PODS, "", "v1", "pods", "Pod", label_selector=PODSET_LABEL),
        ResourceSpec("pods/managed", K.PODS, "", "v1", "pods", "Pod",
                     label_selector=f"{MANAGED_LABEL}=true,!{PODSET_LABEL}"),
    ]
    if unmanaged_gpu_pods:
        specs.append(ResourceSpec("pods/gpu", K.PODS, "", "v1", "pods", "Pod",
                                  label_selector=f"!{PODSET_LABEL},{MANAGED_LABEL}!=true", keep=requests_gpu))
    if include_events:
        # Every Event (Kueue's about Workloads and queues, the Job controller's, the scheduler's,
        # the autoscaler's and the kubelet's about Pods, Nodes') but those `events_selector`
        # leaves out (default: Kueue's Pending), kept bounded (EventRetention).
        specs.append(ResourceSpec(K.EVENTS, K.EVENTS, "", "v1", "events", "Event", parse=None,
                                  field_selector=events_selector or None))
    return specs


class Applier:
    """Drains informer events into `store.apply_batch`, one batch per burst."""

    def __init__(self, store: Store, window: float = 0.02, max_batch: int = 10_000) -> None:
        self.store = store
        self.window = window
        self.max_batch = max_batch
        self._q: queue.SimpleQueue[StoreEvent | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="kueuetop-store-applier", daemon=True)
        self._stopped = False

    def start(self) -> Applier:
        self._thread.start()
        return self

    def put(self, event: StoreEvent) -> None:
        self._q.put(event)

    def stop(self, timeout: float = 2.0) -> None:
        self._stopped = True
        self._q.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            first = self._q.get()
            if first is None:
                return
            batch = [first]
            deadline = time.monotonic() + self.window
            while len(batch) < self.max_batch:
                left = deadline - time.monotonic()
                try:
                    ev = self._q.get(timeout=left) if left > 0 else self._q.get_nowait()
                except queue.Empty:
                    break
                if ev is None:
                    self._flush(batch)
                    return
                batch.append(ev)
            self._flush(batch)

    def _flush(self, batch: list[StoreEvent]) -> None:
        try:
            self.store.apply_batch(batch)
        except Exception:  # never lose the applier thread
            _log.exception("applying %d events failed", len(batch))


class VisibilityPoller:
    """Queue positions from Kueue's visibility API (`clusterqueues/{cq}/pendingworkloads`).

    Polls ClusterQueues that have pending workloads, at most `max_per_cycle` per cycle, the
    least recently polled first, so a cluster with 500 queues costs a bounded request rate.
    A queue's order only changes when one of its workloads or queues changes, and the watches
    already tell us when that happens: a ClusterQueue is polled again only after such a change
    (or after `refresh_every` seconds, as a safety net), which keeps steady-state traffic low.
    """

    def __init__(self, api: Any, version: str, store: Store, sink: Any, interval: float = 3.0,
                 max_per_cycle: int = 25, limit: int = 1000, refresh_every: float = 120.0) -> None:
        self.api = api
        self.version = version
        self.store = store
        self.sink = sink
        self.interval = interval
        self.max_per_cycle = max_per_cycle
        self.limit = limit
        self._stop = threading.Event()
        self._polled: dict[str, float] = {}
        self.refresh_every = refresh_every
        self._dirty: set[str] = set()
        self._order_sig: dict[tuple[str, str], tuple[str | None, bool, int]] = {}
        self._dirty_lock = threading.Lock()
        # After the console is told of a change: this only marks queues to poll next cycle.
        self._unsubscribe = store.subscribe(self._on_changes, stage=1)
        self._thread = threading.Thread(target=self._run, name="kueuetop-visibility", daemon=True)

    def start(self) -> VisibilityPoller:
        self.store.set_source_state(VISIBILITY_SOURCE, SourceState.CONNECTING, stale_after=self.interval * 4)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._unsubscribe()

    def _on_changes(self, changes: Any) -> None:
        # Kueue orders a queue by priority, queue-order timestamp and UID: the order changes only
        # when a workload enters or leaves the pending set, or its priority or queue changes —
        # not on every status write. Track exactly that per workload.
        cqs: set[str] = set()
        if K.CLUSTER_QUEUES in changes:
            cqs.update(k[1] for k in changes.get(K.CLUSTER_QUEUES))
        for key in changes.get(K.LOCAL_QUEUES):
            lq = self.store.get(K.LOCAL_QUEUES, key)
            if lq is not None:
                cqs.add(lq.cluster_queue)
        for key in changes.get(K.WORKLOADS):
            wl = self.store.get(K.WORKLOADS, key)
            sig = None
            if wl is not None:
                lq = self.store.get(K.LOCAL_QUEUES, (key[0], getattr(wl, "queue_name", "")))
                pending = not (wl.has_quota_reservation or wl.is_finished or not wl.active)
                sig = (lq.cluster_queue if lq is not None else None, pending, wl.effective_priority)
            old = self._order_sig.pop(key, None) if sig is None else self._order_sig.get(key)
            if sig is not None:
                self._order_sig[key] = sig
            if old != sig:
                for s_ in (old, sig):
                    if s_ is not None and s_[0] is not None and (s_[1] or (old and old[1])):
                        cqs.add(s_[0])
        if cqs:
            with self._dirty_lock:
                self._dirty |= cqs

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _candidates(self) -> list[str]:
        focus = self.store.position_focus
        cqs = [k[1] for k in self.store.keys(K.CLUSTER_QUEUES) if focus is None or k[1] in focus]
        return [cq for cq in cqs if self.store.queue_counts(cq).pending > 0 or self.store.positions(cq)]

    def swept(self) -> bool:
        """Every ClusterQueue with pending workloads (in focus) has been polled at least once."""
        return all(cq in self._polled for cq in self._candidates())

    def _due(self) -> list[str]:
        now = time.monotonic()
        with self._dirty_lock:
            dirty = set(self._dirty)
        due = [cq for cq in self._candidates()
               if cq in dirty or cq not in self._polled or now - self._polled[cq] >= self.refresh_every]
        due.sort(key=lambda cq: self._polled.get(cq, 0.0))
        chosen = due[: self.max_per_cycle]
        with self._dirty_lock:
            self._dirty -= set(chosen)
        return chosen

    def _run(self) -> None:
        backoff = Backoff(self.interval, 60.0)
        wait = 0.0
        while not self._stop.wait(wait):
            wait = self.interval
            try:
                events = [self._poll(cq) for cq in self._due()]
                for ev in events:
                    if ev is not None:
                        self.sink(ev)
                backoff.reset()
                self.store.set_source_state(VISIBILITY_SOURCE, SourceState.LIVE, ok=True)
            except ApiError as e:
                if e.status in (401, 403):
                    self.store.set_source_state(VISIBILITY_SOURCE, SourceState.FORBIDDEN,
                                                "not allowed to read clusterqueues/pendingworkloads")
                    wait = 60.0
                elif e.status == 404:
                    self.store.set_source_state(VISIBILITY_SOURCE, SourceState.UNAVAILABLE,
                                                "the visibility API is not served")
                    wait = 60.0
                else:
                    wait = max(backoff.next(), e.retry_after or 0.0)
                    self.store.set_source_state(VISIBILITY_SOURCE, SourceState.ERROR,
                                                f"{e.status} {e.reason or 'error'}, retrying in {wait:.0f}s")
            except (urllib3.exceptions.HTTPError, OSError, ValueError) as e:
                wait = backoff.next()
                self.store.set_source_state(VISIBILITY_SOURCE, SourceState.ERROR,
                                            f"connection problem ({type(e).__name__}), retrying in {wait:.0f}s")
            except Exception:
                _log.exception("visibility poller failed")
                wait = backoff.next()

    def fetch(self, cq: str) -> StoreEvent | None:
        """One ClusterQueue's positions now, as a store event (raises ApiError and I/O errors);
        for callers that need current positions at once (headless commands)."""
        return self._poll(cq)

    def _poll(self, cq: str) -> StoreEvent | None:
        path = f"/apis/{VISIBILITY_GROUP}/{self.version}/clusterqueues/{cq}/pendingworkloads"
        try:
            summary = request(self.api, path, {"limit": self.limit}, timeout=(10.0, 30.0))
        except ApiError as e:
            if e.status == 404 and e.reason == "NotFound" and "clusterqueue" in e.message.lower():
                summary = {"items": []}  # the queue was just deleted
            else:
                raise
        self._polled[cq] = time.monotonic()
        out: list[tuple[tuple[str, str], QueuePosition]] = []
        for item in (summary or {}).get("items") or ():
            meta = item.get("metadata") if isinstance(item, dict) else None
            if not isinstance(meta, dict) or not meta.get("name"):
                continue
            try:
                pos = QueuePosition(cq, int(item.get("positionInClusterQueue", -1)),
                                    int(item.get("positionInLocalQueue", -1)), str(item.get("localQueueName", "")),
                                    int(item.get("priority") or 0))
            except (TypeError, ValueError):
                continue
            out.append(((str(meta.get("namespace") or ""), str(meta["name"])), pos))
        return StoreEvent(Op.POSITIONS, K.POSITIONS, VISIBILITY_SOURCE, key=("", cq), positions=tuple(out))


class KubeSources:
    """Start/stop everything that feeds `store` from one cluster connection."""

    def __init__(self, conn: Connection, store: Store, *, config: InformerConfig | None = None,
                 include_events: bool = False, unmanaged_gpu_pods: bool = False,
                 events_selector: str = WITHOUT_KUEUE_PENDING, visibility_interval: float = 3.0,
                 coalesce_window: float = 0.02, max_events: int = MAX_EVENTS,
                 specs: Iterable[ResourceSpec] | None = None, wire_keeper: WireKeeper | None = None,
                 watch_loop: WatchLoop | None = None) -> None:
        """`wire_keeper`: keep each parsed object's wire dict for a recorder (sources/recorder.py).
        `watch_loop`: list and watch on that shared loop (several clusters, one thread) rather
        than on a thread per resource; a cluster reached through a proxy keeps its threads."""
        self.conn = conn
        self.store = store
        self.applier = Applier(store, window=coalesce_window)
        specs = list(specs) if specs is not None else resource_specs(
            conn, include_events=include_events, unmanaged_gpu_pods=unmanaged_gpu_pods,
            events_selector=events_selector)
        self.events_selector = events_selector if include_events else ""
        self.event_retention = EventRetention(self.applier.put, max_events=max_events)
        specs = [dataclasses.replace(s, trim=self.event_retention.trim) if s.kind == K.EVENTS else s for s in specs]
        # One ParseCache for this connection's informers: a Workload's new version reuses the
        # conditions and pod sets its last one parsed into (and the Workloads of one job template
        # share theirs).
        self.parse_cache = ParseCache()
        parse: Any = functools.partial(parse_object, cache=self.parse_cache)
        if wire_keeper is not None:
            parse = wire_keeper.wrap(parse)
        specs = [dataclasses.replace(s, parse=parse) if s.parse is parse_object else s for s in specs]
        endpoint = Endpoint.for_client(conn.api) if watch_loop is not None else None
        self.on_loop = endpoint is not None
        self.informers: list[Informer] = []
        for s in specs:
            sink = self.event_retention.put if s.kind == K.EVENTS else self.applier.put
            if watch_loop is not None and endpoint is not None:
                self.informers.append(LoopInformer(conn.api, s, store, sink, config, loop=watch_loop,
                                                   endpoint=endpoint))
            else:
                self.informers.append(Informer(conn.api, s, store, sink, config))
        cfg = config or InformerConfig()
        if watch_loop is not None and endpoint is not None:
            self.liveness: LivenessProbe = LoopLivenessProbe(
                conn.api, list(self.informers), interval=cfg.probe_interval, timeout=cfg.probe_timeout,
                loop=watch_loop, endpoint=endpoint)
        else:
            self.liveness = LivenessProbe(conn.api, self.informers, interval=cfg.probe_interval,
                                          timeout=cfg.probe_timeout)
        self.visibility: VisibilityPoller | None = None
        if conn.kueue.visibility_version and visibility_interval > 0:
            self.visibility = VisibilityPoller(conn.api, conn.kueue.visibility_version, store,
                                               self.applier.put, interval=visibility_interval)
        else:
            store.set_source_state(VISIBILITY_SOURCE, SourceState.UNAVAILABLE,
                                   "the cluster does not serve Kueue's visibility API")

    def start(self) -> KubeSources:
        self.applier.start()
        for inf in self.informers:
            inf.start()
        if self.visibility is not None:
            self.visibility.start()
        self.liveness.start()
        return self

    def stop(self, timeout: float = 3.0) -> None:
        self.liveness.stop()
        for inf in self.informers:
            inf.stop()
        if self.visibility is not None:
            self.visibility.stop()
        deadline = time.monotonic() + timeout
        self.liveness.join(max(0.0, deadline - time.monotonic()))
        for inf in self.informers:
            inf.join(max(0.0, deadline - time.monotonic()))
        if self.visibility is not None:
            self.visibility.join(max(0.0, deadline - time.monotonic()))
        self.applier.stop(max(0.1, deadline - time.monotonic()))

    def informer(self, source: str) -> Informer:
        return next(i for i in self.informers if i.spec.source == source)

    def synced(self) -> bool:
        """Every informer's first list is applied to the store (or its resource is forbidden/unserved)."""
        gave_up = (SourceState.FORBIDDEN, SourceState.UNAVAILABLE)
        states = self.store.sources()
        return all(self.store.has_synced(i.spec.source)
                   or (states.get(i.spec.source) is not None and states[i.spec.source].state in gave_up)
                   for i in self.informers)
