"""Node pools and the cluster autoscaler.

Each scenario `NodePool` (kueuetop.io/v1) becomes Ready Node objects (`expand_node_pool`) when
its step comes: `size` nodes (else `minSize`, else none), never more than the pool's
`capacityLimit` allows at that moment. A later document for the same pool is merged over it
(as `kubectl apply` would) and may grow it.

Autoscaling pools (`autoscaling: true`, or a `maxSize` above `size` when `autoscaling` is not
given) behave like cluster-autoscaler node groups:

* scale-up: pods the scheduler marked Unschedulable that a fresh node of the pool would fit
  (labels, taints, allocatable) ask for just enough nodes (first-fit packing), bounded by
  `maxSize` and `capacity_limit_at(pool, t)`; the nodes appear `provisioningDelay` later
  (default 60 s). Pools with `queuedProvisioning` are left to ProvisioningRequests, as GKE does.
  A pod the limits keep out is retried when the capacity limit next changes.
* scale-down: a node without running pods for `scale_down_delay` (10 simulated minutes, the
  autoscaler's scale-down-unneeded-time) is removed, down to `minSize`. DaemonSet pods (the
  dcgm-exporter) don't count, as in cluster-autoscaler.

Every GPU node, whoever created it, gets a Running dcgm-exporter pod in `gpu-operator`
(`gpu_exporters.ExporterPods`), removed with the node, so the direct-scrape GPU source works.

`ProvisioningAutoscaler` (sim.cloud.provisioning) uses `pools_for`, `nodes_needed`, `room` and `request_nodes` to
serve ProvisioningRequests from the same pools.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kueuetop.kueue.core import parse_node, parse_pod
from kueuetop.kueue.durations import DurationError, parse_duration
from kueuetop.kueue.errors import KueueParseError
from kueuetop.kueue.parse_cache import ParseCache
from kueuetop.sim.apiserver.patch import merge_patch
from kueuetop.sim.cloud.autoscaler_status import AutoscalerStatus
from kueuetop.sim.cloud.gpu_exporters import ExporterPods
from kueuetop.sim.kube.events import CLUSTER_AUTOSCALER, EventWriter, NullEvents, find_condition
from kueuetop.sim.kube.scheduler import PODS, Placement, Scheduler
from kueuetop.sim.scenarios.nodes import expand_node_pool
from kueuetop.sim.scenarios.scenario import KUEUETOP_API_VERSION, ScenarioStep, capacity_limit_at
from kueuetop.sim.storage.objectstore import ObjectStore, StoreError, WatchEvent, rfc3339

_log = logging.getLogger(__name__)

Obj = dict[str, Any]
PodKey = tuple[str, str]

POOL_ANNOTATION = "kueuetop.io/node-pool"
DEFAULT_PROVISIONING_DELAY = 60.0
SCALE_DOWN_DELAY = 600.0


@dataclass
class ScaleUp:
    """Nodes asked of a pool; `nodes` is filled when they exist (`done`)."""

    pool: str
    count: int
    ready_at: float
    owner: str = ""
    done: bool = False
    nodes: list[str] = field(default_factory=list)


@dataclass
class Pool:
    name: str
    doc: Obj
    nodes: dict[str, None] = field(default_factory=dict)
    next_index: int = 0
    upcoming: list[ScaleUp] = field(default_factory=list)
    template: tuple[dict[str, str], tuple, dict[str, int]] | None = None  # labels, taints, allocatable

    @property
    def spec(self) -> Obj:
        s = self.doc.get("spec")
        return s if isinstance(s, dict) else {}

    @property
    def queued(self) -> bool:
        return self.spec.get("queuedProvisioning") is True

    @property
    def autoscaling(self) -> bool:
        if "autoscaling" in self.spec:
            return self.spec.get("autoscaling") is True
        size = _nonneg(self.spec.get("size")) or 0
        hi = _nonneg(self.spec.get("maxSize"))
        return self.queued or (hi is not None and hi > size)

    @property
    def min_size(self) -> int:
        return _nonneg(self.spec.get("minSize")) or 0

    @property
    def max_size(self) -> int | None:
        hi = _nonneg(self.spec.get("maxSize"))
        if hi is None and not self.autoscaling:
            return _nonneg(self.spec.get("size")) or 0
        return hi

    @property
    def delay(self) -> float:
        try:
            return parse_duration(self.spec.get("provisioningDelay", DEFAULT_PROVISIONING_DELAY))
        except DurationError:
            return DEFAULT_PROVISIONING_DELAY

    def pending_count(self) -> int:
        return sum(s.count for s in self.upcoming if not s.done)


def _nonneg(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


class NodePoolController:
    """Pools and autoscaler. Wire with `pools = NodePoolController(store, scheduler)`,
    `pools.install(cluster)` (routes NodePool steps here) and `cluster.add_controller(pools)`."""

    name = "node-pools"

    def __init__(self, store: ObjectStore, scheduler: Scheduler, *, events: EventWriter | None = None,
                 scale_down_delay: float = SCALE_DOWN_DELAY, start: float | None = None,
                 exporters: bool = True) -> None:
        self._parse_cache = ParseCache()  # quantities and conditions of the pods and nodes it reads
        self.store = store
        self.exporters = ExporterPods(store) if exporters else None
        self.status = AutoscalerStatus(store)
        self.scheduler = scheduler
        self.events = events or NullEvents()
        self.scale_down_delay = scale_down_delay
        self.start = start if start is not None else 0.0
        self.pools: dict[str, Pool] = {}
        self._pool_of_node: dict[str, str] = {}
        self._pending_docs: list[tuple[Obj, bool]] = []
        self._check_scale_up = False
        self._covered: dict[PodKey, ScaleUp] = {}
        self._empty_since: dict[str, float] = {}
        self._retry_at: float | None = None
        self._sd_dirty = True
        self._not_triggered: dict[PodKey, str] = {}  # pod → last NotTriggerScaleUp message

    # ------------------------------------------------------------------ wiring
    def install(self, cluster: Any) -> None:
        """Route NodePool scenario steps here (keeping any step handler already installed)."""
        self.start = cluster.clock.start
        previous = getattr(cluster, "step_handler", None)

        def handler(step: ScenarioStep, now: float) -> bool:
            if self.handle_step(step, now):
                return True
            return bool(previous(step, now)) if previous is not None else False

        cluster.step_handler = handler

    def handle_step(self, step: ScenarioStep, now: float) -> bool:
        """Take a NodePool apply step (True) or leave the step to others (False)."""
        obj = step.obj
        if step.kind != "apply" or not isinstance(obj, dict):
            return False
        if obj.get("apiVersion") != KUEUETOP_API_VERSION or obj.get("kind") != "NodePool":
            return False
        self._pending_docs.append((obj, step.update))
        return True

    # ------------------------------------------------------------------ events
    def on_event(self, event: WatchEvent) -> None:
        try:
            if event.kind.key == ("", "pods"):
                self._sd_dirty = True
                c = find_condition(event.obj, "PodScheduled")
                if c is not None and c.get("reason") == "Unschedulable":
                    self._check_scale_up = True
            elif event.kind.key == ("", "nodes"):
                self._sd_dirty = True
                if self.exporters is not None:
                    self.exporters.on_node(event)
                name = (event.obj.get("metadata") or {}).get("name", "")
                pool = ((event.obj.get("metadata") or {}).get("annotations") or {}).get(POOL_ANNOTATION)
                if event.type == "DELETED":
                    owner = self._pool_of_node.pop(name, None)
                    if owner in self.pools:
                        self.pools[owner].nodes.pop(name, None)
                    self._empty_since.pop(name, None)
                elif pool in self.pools and name not in self._pool_of_node:
                    self._pool_of_node[name] = pool
                    self.pools[pool].nodes[name] = None
        except Exception:
            _log.exception("node pools: cannot handle %s %s", event.type, event.kind.kind)

    # ------------------------------------------------------------------ reconcile
    def reconcile(self, now: float) -> bool:
        worked = False
        docs, self._pending_docs = self._pending_docs, []
        for doc, update in docs:
            worked = self._apply_doc(doc, update, now) or worked
        for pool in self.pools.values():
            for s in pool.upcoming:
                if not s.done and s.ready_at <= now:
                    worked = self._create_nodes(pool, s, now) or worked
            pool.upcoming = [s for s in pool.upcoming if not s.done]
        if self._retry_at is not None and self._retry_at <= now:
            self._retry_at = None
            self._check_scale_up = True
        if self._check_scale_up:
            self._check_scale_up = False
            worked = self._scale_up(now) or worked
        worked = self._scale_down(now) or worked
        if self.exporters is not None:
            worked = self.exporters.reconcile(now) or worked
        # What the autoscaler tells of its groups (sizes, limits, scale-ups in flight); a console
        # reads its pools' limits there. Not counted as work: nothing else reacts to it.
        self.status.sync(self.pools.values(), rfc3339(now))
        return worked

    def next_wakeup(self, now: float) -> float | None:
        times = [s.ready_at for p in self.pools.values() for s in p.upcoming if not s.done]
        for name, since in self._empty_since.items():
            pool = self.pools.get(self._pool_of_node.get(name, ""))
            if pool is not None and len(pool.nodes) > pool.min_size:
                times.append(since + self.scale_down_delay)
        if self._retry_at is not None:
            times.append(self._retry_at)
        times = [t for t in times if t > now]  # anything due was handled by this instant's reconcile
        return min(times) if times else None

    # ------------------------------------------------------------------ pools
    def _apply_doc(self, doc: Obj, update: bool, now: float) -> bool:
        name = str((doc.get("metadata") or {}).get("name", ""))
        if not name:
            return False
        pool = self.pools.get(name)
        if pool is None or not update:
            if pool is not None:
                return False  # created twice: the first document wins
            pool = Pool(name, dict(doc))
            self.pools[name] = pool
            try:
                pool.template = _template(doc)
            except (KueueParseError, KeyError, ValueError) as exc:
                _log.warning("node pool %s: bad node template: %s", name, exc)
        else:
            patch = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind", "metadata")}
            pool.doc = merge_patch(pool.doc, patch)
            try:
                pool.template = _template(pool.doc)
            except (KueueParseError, KeyError, ValueError) as exc:
                _log.warning("node pool %s: bad node template: %s", name, exc)
        want = _nonneg(pool.spec.get("size"))
        if want is None:
            want = pool.min_size
        want = max(want, pool.min_size)
        have = len(pool.nodes) + pool.pending_count()
        count = min(max(0, want - have), self.room(name, now))
        if count <= 0:
            self._check_scale_up = True  # the pool's limits may have changed
            return False
        return self._create_nodes(pool, ScaleUp(name, count, now), now)

    def _create_nodes(self, pool: Pool, scale: ScaleUp, now: float) -> bool:
        scale.done = True
        created = False
        nodes = expand_node_pool(pool.doc, scale.count, start=pool.next_index)
        pool.next_index += len(nodes)
        names = [node["metadata"]["name"] for node in nodes]
        # One bulk insert: a 5,000-node pool is created before `sim serve` listens. The dicts
        # are fresh, so the store may keep them as they are.
        results = self.store.create_many(("", "nodes", node) for node in nodes)
        for name, exc in zip(names, results, strict=True):
            if exc is not None:
                _log.warning("node pool %s: node %s not created: %s", pool.name, name, exc.message)
                continue
            pool.nodes[name] = None
            self._pool_of_node[name] = pool.name
            scale.nodes.append(name)
            if pool.autoscaling:
                self._empty_since[name] = now
            created = True
        for key, s in list(self._covered.items()):
            if s is scale:
                del self._covered[key]
        return created

    # ------------------------------------------------------------------ capacity queries
    def limit(self, pool_name: str, now: float) -> int | None:
        """Most nodes the pool may have now (maxSize and the cloud's capacity limit)."""
        pool = self.pools.get(pool_name)
        if pool is None:
            return 0
        bounds = [b for b in (pool.max_size, capacity_limit_at(pool.doc, now - self.start)) if b is not None]
        return min(bounds) if bounds else None

    def room(self, pool_name: str, now: float) -> int:
        """How many more nodes the pool can get now."""
        pool = self.pools.get(pool_name)
        if pool is None:
            return 0
        lim = self.limit(pool_name, now)
        if lim is None:
            return 1 << 30
        return max(0, lim - len(pool.nodes) - pool.pending_count())

    def next_limit_change(self, pool_name: str, now: float) -> float | None:
        """When the pool's capacity limit next changes (window edges), or None."""
        pool = self.pools.get(pool_name)
        windows = (pool.spec.get("capacityLimit") if pool is not None else None)
        if not isinstance(windows, list):
            return None
        t = now - self.start
        edges = []
        for w in windows:
            if not isinstance(w, dict):
                continue
            for k in ("from", "until"):
                if w.get(k) is None:
                    continue
                try:
                    edge = parse_duration(w[k])
                except DurationError:
                    continue
                if edge > t + 1e-9:
                    edges.append(edge)
        return self.start + min(edges) if edges else None

    def pools_for(self, placement: Placement, *, queued: bool | None = None) -> list[str]:
        """Pools whose fresh node would accept this pod (optionally only queued ones)."""
        out = []
        for name in sorted(self.pools):
            pool = self.pools[name]
            if queued is not None and pool.queued != queued:
                continue
            if pool.template is not None and _fits_template(pool.template, placement):
                out.append(name)
        return out

    def nodes_needed(self, pool_name: str, placements: Iterable[Placement]) -> int | None:
        """Fresh nodes of the pool that hold all these pods (first-fit), None if one never fits."""
        pool = self.pools.get(pool_name)
        if pool is None or pool.template is None:
            return None
        alloc = pool.template[2]
        bins: list[dict[str, int]] = []
        for p in placements:
            req = {**p.requests, PODS: 1}
            if any(v > alloc.get(r, 0) for r, v in req.items()):
                return None
            for b in bins:
                if all(v <= b.get(r, 0) for r, v in req.items()):
                    break
            else:
                b = dict(alloc)
                bins.append(b)
            for r, v in req.items():
                b[r] = b.get(r, 0) - v
        return len(bins)

    def request_nodes(self, pool_name: str, count: int, now: float, owner: str = "") -> ScaleUp:
        """Ask the cloud for `count` nodes; they exist `provisioningDelay` later."""
        pool = self.pools[pool_name]
        s = ScaleUp(pool_name, count, now + pool.delay, owner)
        pool.upcoming.append(s)
        return s

    # ------------------------------------------------------------------ autoscaling
    def _scale_up(self, now: float) -> bool:
        candidates = [n for n, p in self.pools.items() if p.autoscaling and not p.queued]
        if not candidates:
            return False
        wants: dict[str, list[tuple[PodKey, Obj, Placement]]] = {}
        blocked: set[str] = set()
        for key in self.scheduler.unschedulable():
            if key in self._covered:
                continue
            pod = self.store.try_get("", "pods", key[0], key[1], copy=False)
            if pod is None or (pod.get("spec") or {}).get("nodeName"):
                continue
            try:
                placement = Placement.from_shape(parse_pod(pod, self._parse_cache).shape)
            except KueueParseError:
                continue
            fits = [n for n in self.pools_for(placement, queued=False) if n in candidates]
            choice = next((n for n in fits if self.room(n, now) > 0), None)
            if choice is None:
                blocked.update(fits)
                self._not_triggered_event(key, pod, placement, candidates, now)
                continue
            self._not_triggered.pop(key, None)
            wants.setdefault(choice, []).append((key, pod, placement))
        worked = False
        for name, pods in wants.items():
            pool = self.pools[name]
            needed = self.nodes_needed(name, [p for _, _, p in pods]) or 0
            count = min(needed, self.room(name, now))
            if count <= 0:
                blocked.add(name)
                continue
            before = len(pool.nodes) + pool.pending_count()
            scale = self.request_nodes(name, count, now, owner="unschedulable pods")
            for key, _pod, _ in pods:
                self._covered[key] = scale
            for _, pod, _ in pods[:10]:
                self.events.emit(pod, "TriggeredScaleUp",
                                 f"pod triggered scale-up: [{{{name} {before}->{before + count} "
                                 f"(max: {pool.max_size if pool.max_size is not None else '-'})}}]",
                                 component=CLUSTER_AUTOSCALER)
            worked = True
        retry = [t for t in (self.next_limit_change(n, now) for n in blocked) if t is not None]
        if retry:
            self._retry_at = min(retry) if self._retry_at is None else min(self._retry_at, *retry)
        return worked

    def _not_triggered_event(self, key: PodKey, pod: Obj, placement: Placement, candidates: list[str],
                             now: float) -> None:
        """cluster-autoscaler's NotTriggerScaleUp Event for a pod no node group can help.

        EventingScaleUpStatusProcessor: "pod didn't trigger scale-up: " + ReasonsMessage, the
        reasons of every node group rejected (the scheduler's filter reasons against the group's
        template node) or skipped ("max node group size reached", "not ready for scale-up" while
        the cloud has no capacity), each as "<groups> <reason>", sorted. Recorded when the message
        changes, not every loop (the API server would fold the repeats into one Event anyway)."""
        agg: dict[str, int] = {}
        for name in candidates:
            pool = self.pools[name]
            if pool.template is None:
                continue
            reason = _template_rejection(pool.template, placement)
            if reason is None:
                have = len(pool.nodes) + pool.pending_count()
                reason = ("max node group size reached" if pool.max_size is not None and have >= pool.max_size
                          else "not ready for scale-up")
            agg[reason] = agg.get(reason, 0) + 1
        message = "pod didn't trigger scale-up: " + ", ".join(sorted(f"{n} {r}" for r, n in agg.items()))
        if self._not_triggered.get(key) == message:
            return
        if len(self._not_triggered) >= 50_000:
            self._not_triggered.clear()
        self._not_triggered[key] = message
        self.events.emit(pod, "NotTriggerScaleUp", message, component=CLUSTER_AUTOSCALER)

    def _scale_down(self, now: float) -> bool:
        # Only look when pods or nodes moved, or an idle node's delay is over.
        due = any(since + self.scale_down_delay <= now for since in self._empty_since.values())
        if not (self._sd_dirty or due):
            return False
        self._sd_dirty = False
        worked = False
        for pool in self.pools.values():
            if not pool.autoscaling:
                continue
            for name in list(pool.nodes):
                if self._workload_pods_on(name):
                    self._empty_since.pop(name, None)
                    continue
                since = self._empty_since.setdefault(name, now)
                if now - since < self.scale_down_delay or len(pool.nodes) <= pool.min_size:
                    continue
                try:
                    self.store.delete("", "nodes", None, name)
                except StoreError:
                    continue
                pool.nodes.pop(name, None)
                self._pool_of_node.pop(name, None)
                self._empty_since.pop(name, None)
                worked = True
        return worked

    def _workload_pods_on(self, node: str) -> bool:
        pods = self.scheduler.pods_on(node)
        if self.exporters is not None:
            pods = {k for k in pods if not self.exporters.is_exporter(k)}
        return bool(pods)


def _template(doc: Mapping[str, Any]) -> tuple[dict[str, str], tuple, dict[str, int]]:
    node = expand_node_pool(doc, 1)[0]
    parsed = parse_node(node)
    labels = {k: v for k, v in parsed.meta.labels.items() if k != "kubernetes.io/hostname"}
    return labels, parsed.taints, dict(parsed.allocatable)


def _template_rejection(template: tuple[dict[str, str], tuple, dict[str, int]], placement: Placement) -> str | None:
    """The scheduler's filter reason against a group's template node, None when the pod fits."""
    labels, taints, alloc = template
    if not placement.labels_match(labels):
        return "node(s) didn't match Pod's node affinity/selector"
    taint = placement.untolerated(taints)
    if taint is not None:
        return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
    for r, v in sorted({**placement.requests, PODS: 1}.items()):
        if v > alloc.get(r, 0):
            return "Too many pods" if r == PODS else f"Insufficient {r}"
    return None


def _fits_template(template: tuple[dict[str, str], tuple, dict[str, int]], placement: Placement) -> bool:
    labels, taints, alloc = template
    if not placement.labels_match(labels) or placement.untolerated(taints) is not None:
        return False
    return all(v <= alloc.get(r, 0) for r, v in {**placement.requests, PODS: 1}.items())
