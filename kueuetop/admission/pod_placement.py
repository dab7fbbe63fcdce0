"""When the pods of an admitted workload can run: node pools in the forecast.

Kueue admits on quota alone; the pods then need nodes. `PodPlacer` is the forecast's node side:
GPU pods are placed on the Ready nodes of the pools their flavor's nodeLabels select; pods that
fit nowhere wait, in the order their workloads were admitted, for GPUs freed by a finish or an
eviction, or for nodes an autoscaled pool adds (Ready `provisioning_delay` after the scale-up).
A workload's pods start when the last of them is placed; the forecast starts its runtime clock
then. Only GPUs are counted: pods without GPUs, and pods of a flavor no pool matches, run at once.

The model follows kube-scheduler and cluster-autoscaler as the simulator does (sim/kube/scheduler.py,
sim/cloud/node_pools.py) and is an approximation of the real ones: no gang scheduling (pods are
placed one by one), the fullest node that fits is taken (bin packing, the MostAllocated scoring
GPU clusters configure), no taints, CPU or memory, no scale-down of idle nodes, no capacity limits
of the cloud beyond the pool's maximum size.

`pools_from_cluster` and `placements_from_cluster` build the inputs from typed Nodes and Pods.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kueuetop.admission.forecast_result import PoolCapacity
from kueuetop.kueue.core import GPU_RESOURCE, Node, Pod
from kueuetop.kueue.flavor import ResourceFlavor
from kueuetop.kueue.node_pool import node_pool, queued_pool
from kueuetop.kueue.workload import Workload

WorkloadKey = tuple[str, str]
# (pool, node index, GPUs, the pod's status.startTime or None): a running pod's GPUs, and when
# it started (its runtime counts from then, not from the workload's admission).
GpuPlacement = tuple[str, int, int, float | None]
GpuPod = tuple[tuple[str, ...], int]  # (the pools it may run on, GPUs it asks)
_TERMINATED = ("Succeeded", "Failed")


# -- the inputs ----------------------------------------------------------------------------------
def _pool_nodes(nodes: Iterable[Node]) -> dict[str, list[Node]]:
    """Ready, schedulable nodes with a pool label, by pool, in name order (a node's index)."""
    out: dict[str, list[Node]] = {}
    for n in sorted(nodes, key=lambda n: n.name):
        pool = node_pool(n)
        if pool and n.ready and not n.unschedulable:
            out.setdefault(pool, []).append(n)
    return out


def _gpus_used(pods: Iterable[Pod]) -> dict[str, int]:
    used: dict[str, int] = {}
    for p in pods:
        if p.node_name and p.phase not in _TERMINATED:
            used[p.node_name] = used.get(p.node_name, 0) + p.shape.requests.get(GPU_RESOURCE, 0)
    return used


def pools_from_cluster(nodes: Iterable[Node], pods: Iterable[Pod],
                       limits: Mapping[str, tuple[int, float]]) -> dict[str, PoolCapacity]:
    """The node pools of a cluster as the forecast sees them.

    Ready, schedulable nodes grouped by their pool label; free GPUs per node = allocatable
    `nvidia.com/gpu` minus the GPU requests of the non-terminated pods bound to it (what
    kube-scheduler's NodeResourcesFit counts). `limits`: per pool (max nodes, provisioning delay
    in seconds), the autoscaler's settings, which no Node carries; a pool without one cannot grow.
    Nodes a scale-up has asked for are not Nodes yet: `coming` is left for the caller to fill."""
    by_pool = _pool_nodes(nodes)
    used = _gpus_used(pods)
    out: dict[str, PoolCapacity] = {}
    for name, members in by_pool.items():
        shared = dict(members[0].meta.labels)
        for n in members[1:]:
            shared = {k: v for k, v in shared.items() if n.meta.labels.get(k) == v}
        free = tuple(max(0, n.gpus - used.get(n.name, 0)) for n in members)
        max_nodes, delay = limits.get(name, (len(members), 0.0))
        out[name] = PoolCapacity(name, shared, max((n.gpus for n in members), default=0), free,
                                 max(max_nodes, len(members)), delay, queued=queued_pool(shared))
    return out


def placements_from_cluster(nodes: Iterable[Node], pods: Iterable[Pod],
                            workload_of: Callable[[Pod], WorkloadKey | None]) -> dict[WorkloadKey, tuple[GpuPlacement, ...]]:
    """The GPUs each workload's running pods hold: (pool, node index, GPUs, start time), node
    indexes as in `pools_from_cluster`. `workload_of`: the store's pod → Workload join
    (`workload_of_pod`)."""
    index = {n.name: (pool, i) for pool, members in _pool_nodes(nodes).items() for i, n in enumerate(members)}
    out: dict[WorkloadKey, list[GpuPlacement]] = {}
    for p in pods:
        gpus = p.shape.requests.get(GPU_RESOURCE, 0)
        where = index.get(p.node_name)
        if gpus <= 0 or where is None or p.phase in _TERMINATED:
            continue
        key = workload_of(p)
        if key is not None:
            out.setdefault(key, []).append((where[0], where[1], gpus, p.start_time))
    return {k: tuple(v) for k, v in out.items()}


def gpu_pods(wl: Workload, flavors: Mapping[str, ResourceFlavor], pools: Mapping[str, PoolCapacity],
             memo: dict | None = None, keep_unplaced: bool = False) -> list[GpuPod]:
    """The GPU pods of an admitted workload: per pod set, the admitted count of pods, each on the
    pools whose node labels include every nodeLabels entry of its `nvidia.com/gpu` flavor (Kueue
    adds those to the pods' nodeSelector) and satisfy the pod template's own nodeSelector and
    required node affinity (kube-scheduler's NodeAffinity filter: a compact-placement Job selects
    its own placement group's pool). Pods no pool is known for are left out: they run at once;
    with `keep_unplaced` they are kept with no pool, so that they never fit (check-capacity finds
    no capacity for them, and never will: it does not scale).
    `memo`: the caller's, for these `flavors` and `pools`: the pools per pod shape and flavor
    (a forward run asks for every running and admitted workload, most sharing a few shapes)."""
    assigned = {a.name: a for a in wl.admission.pod_set_assignments} if wl.admission is not None else {}
    out: list[GpuPod] = []
    for ps in wl.pod_sets:
        gpus = ps.requests.get(GPU_RESOURCE, 0)
        a = assigned.get(ps.name)
        if gpus <= 0 or a is None:
            continue
        flavor_name = a.flavors.get(GPU_RESOURCE, "")
        selector, terms = ps.shape.node_selector, ps.shape.required_affinity
        # What the answer depends on, by value: each parsed workload has its own shape objects.
        mkey = (flavor_name, tuple(sorted(selector.items())) if selector else (), terms)
        names = memo.get(mkey) if memo is not None else None
        if names is None:
            flavor = flavors.get(flavor_name)
            want = {**selector, **(flavor.node_labels if flavor is not None else {})}
            names = tuple(n for n in sorted(pools)
                          if all(pools[n].node_labels.get(k) == v for k, v in want.items())
                          and (not terms or any(t.matches(pools[n].node_labels) for t in terms)))
            if memo is not None:
                memo[mkey] = names
        if names or keep_unplaced:
            out.extend([(names, gpus)] * (a.count if a.count is not None else ps.count))
    return out


# -- the forward run's node side ------------------------------------------------------------------
@dataclass
class _Node:
    free: int
    order: int  # when it last changed: among equally full nodes the simulator's scheduler takes the earliest


@dataclass
class _WaitingPod:
    pools: tuple[str, ...]
    gpus: int
    covered_until: float | None = None  # a scale-up asked for it, its nodes are Ready then


class PodPlacer:
    """The node pools through a forecast's run: free GPUs per node, nodes on their way, pods waiting."""

    def __init__(self, pools: Mapping[str, PoolCapacity], now: float) -> None:
        self.caps = pools
        self._order = 0
        self.nodes: dict[str, list[_Node]] = {name: [self._node(f) for f in p.free_gpus] for name, p in pools.items()}
        # Per pool and free GPU count, the nodes as (order, index), earliest changed first: a pod
        # looks at the few counts that fit it rather than at every node (thousands on `xl`).
        # Entries of nodes changed since are left in and dropped when they come up (`_earliest`).
        self._by_free: dict[str, dict[int, list[tuple[int, int]]]] = {name: {} for name in pools}
        for name, nodes in self.nodes.items():
            for i, node in enumerate(nodes):
                self._file(name, i, node)
        self.coming: list[tuple[float, str, int]] = [(t, name, 1) for name, p in pools.items() for t in p.coming]
        heapq.heapify(self.coming)  # (Ready at, pool, nodes)
        self.held: dict[WorkloadKey, list[tuple[str, int, int]]] = {}
        self.waiting: dict[WorkloadKey, list[_WaitingPod]] = {}  # in admission order
        self.runtime: dict[WorkloadKey, float | None] = {}
        self.ends: list[tuple[float, int, WorkloadKey, int, str, int, int]] = []  # pods' own ends
        self.gen: dict[WorkloadKey, int] = {}  # bumped on release: older pod ends are void
        self.dirty = False
        self.now = now
        # Workloads whose pods only take free capacity (a check-capacity ProvisioningRequest
        # waits for them: cluster-autoscaler looks, it does not grow a pool for it).
        self.no_scale: set[WorkloadKey] = set()
        # Workloads a scaling ProvisioningRequest waits for: only theirs grow queued pools.
        self.provisioned: set[WorkloadKey] = set()

    def await_request(self, key: WorkloadKey, scales: bool) -> None:
        """A ProvisioningRequest waits for the workload's pods: one that grows the pools
        (`provisioned`) or, check-capacity, one that only looks (`no_scale`)."""
        (self.provisioned if scales else self.no_scale).add(key)

    def _node(self, free: int) -> _Node:
        self._order += 1
        return _Node(free, self._order)

    def _change(self, pool: str, i: int, delta: int) -> None:
        node = self.nodes[pool][i]
        node.free += delta
        self._order += 1
        node.order = self._order
        self._file(pool, i, node)

    def _file(self, pool: str, i: int, node: _Node) -> None:
        heapq.heappush(self._by_free[pool].setdefault(node.free, []), (node.order, i))

    def _earliest(self, pool: str, free: int) -> tuple[int, int] | None:
        """(order, index) of the node of `pool` with `free` GPUs free that changed earliest."""
        heap = self._by_free[pool].get(free)
        nodes = self.nodes[pool]
        while heap:
            order, i = heap[0]
            node = nodes[i]
            if node.order == order and node.free == free:
                return order, i
            heapq.heappop(heap)  # that node changed since
        return None

    # -- workloads -------------------------------------------------------------------------------
    def holds(self, key: WorkloadKey) -> bool:
        return key in self.held or key in self.waiting

    def seed(self, key: WorkloadKey, pods: list[GpuPod], placed: Iterable[tuple], runtime: float | None) -> bool:
        """A workload holding quota at the snapshot: its GPUs where they are (already counted as
        used; they are held until the workload ends, which the caller counts from the pods'
        start, `started_at`); its pods not yet bound wait like a new admission's. Whether some
        wait. `placed`: GpuPlacements (a start time may be left out)."""
        held = [(pool, i, g) for pool, i, g, *_ in placed if pool in self.nodes and 0 <= i < len(self.nodes[pool])]
        self.held[key] = held
        left = list(pods)
        for _, _, g in held:
            for j, (_, want) in enumerate(left):
                if want == g:
                    del left[j]
                    break
        if not left:
            return False
        # cluster-autoscaler asked for the nodes in flight for pods like these: they wait for them
        # before asking again (which of them each was meant for is not in the snapshot).
        self.waiting[key] = [_WaitingPod(p, g, max((t for t, q, _ in self.coming if q in p), default=None))
                             for p, g in left]
        self.runtime[key] = runtime
        self.dirty = True
        return True

    @staticmethod
    def started_at(placed: Iterable[tuple]) -> float | None:
        """When the last of a workload's placed pods started (its run began then), or None when
        no start time is known."""
        return max((p[3] for p in placed if len(p) > 3 and p[3] is not None), default=None)

    def admit(self, key: WorkloadKey, pods: list[GpuPod], runtime: float | None) -> None:
        """An admission: the job's pods are created and queue for nodes (placed by `step`)."""
        self.held[key] = []
        self.waiting[key] = [_WaitingPod(p, g) for p, g in pods]
        self.runtime[key] = runtime
        self.dirty = True

    def release(self, key: WorkloadKey) -> None:
        """Finished or evicted: its pods are gone, their GPUs free at once, its waiting pods dropped."""
        for pool, i, g in self.held.pop(key, ()):
            self._change(pool, i, g)
            self.dirty = True
        self.waiting.pop(key, None)
        self.runtime.pop(key, None)
        self.no_scale.discard(key)
        self.provisioned.discard(key)
        self.gen[key] = self.gen.get(key, 0) + 1

    # -- time ------------------------------------------------------------------------------------
    def next_time(self) -> float | None:
        times = [t for t in (self.coming[0][0] if self.coming else None,
                             self.ends[0][0] if self.ends else None) if t is not None and t > self.now]
        return min(times) if times else None

    def step(self, now: float) -> list[WorkloadKey]:
        """Advance to `now`: pods that ran their runtime free their GPUs, nodes asked for become
        Ready, waiting pods are placed, the autoscaler asks for nodes for the rest. The workloads
        whose last pod was placed now (their pods start now)."""
        self.now = now
        started: list[WorkloadKey] = []
        while True:
            while self.ends and self.ends[0][0] <= now:
                _, _, key, gen, pool, i, g = heapq.heappop(self.ends)
                if self.gen.get(key, 0) == gen:
                    self.held[key].remove((pool, i, g))
                    self._change(pool, i, g)
                    self.dirty = True
            while self.coming and self.coming[0][0] <= now:
                _, pool, count = heapq.heappop(self.coming)
                nodes = self.nodes[pool]
                for _ in range(count):
                    nodes.append(self._node(self.caps[pool].gpus_per_node))
                    self._file(pool, len(nodes) - 1, nodes[-1])
                self.dirty = True
            if not self.dirty:
                return started
            self.dirty = False
            started += self._place(now)
            self._scale_up(now)  # with no provisioning delay its nodes are placed on in the next pass

    def _place(self, now: float) -> list[WorkloadKey]:
        """kube-scheduler's queue: waiting pods by admission, each on the fullest node that fits."""
        started: list[WorkloadKey] = []
        no_fit: set[tuple] = set()  # binds only take capacity: a shape that found nothing still finds nothing
        for key in list(self.waiting):
            pods = self.waiting[key]
            left = []
            # A queued pool's nodes are tainted for the pods of the ProvisioningRequests that
            # grew it (GKE: cloud.google.com/gke-queued): no other pod lands there.
            requested = key in self.provisioned
            for pod in pods:
                shape = (pod.pools, pod.gpus, requested)
                where = None if shape in no_fit else self._fit(pod, requested)
                if where is None:
                    no_fit.add(shape)
                    left.append(pod)
                    continue
                pool, i = where
                self._change(pool, i, -pod.gpus)
                self.held[key].append((pool, i, pod.gpus))
                runtime = self.runtime.get(key)
                if runtime is not None:
                    self._order += 1
                    heapq.heappush(self.ends, (now + runtime, self._order, key, self.gen.get(key, 0), pool, i, pod.gpus))
            if left:
                self.waiting[key] = left
            else:
                del self.waiting[key]
                started.append(key)
        return started

    def _fit(self, pod: _WaitingPod, requested: bool = False) -> tuple[str, int] | None:
        """The fullest node that fits the pod, over its pools (the first pool, then the earliest
        changed node among equals)."""
        best: tuple[int, int, int, str, int] | None = None
        for rank, pool in enumerate(pod.pools):
            if self.caps[pool].queued and not requested:
                continue
            for free in sorted(f for f in self._by_free[pool] if f >= pod.gpus):
                if best is not None and free > best[0]:
                    break
                found = self._earliest(pool, free)
                if found is not None:
                    if best is None or (free, rank, found[0]) < best[:3]:
                        best = (free, rank, found[0], pool, found[1])
                    break
        return (best[3], best[4]) if best is not None else None

    def _scale_up(self, now: float) -> None:
        """cluster-autoscaler: pods that fit nowhere and no scale-up covers ask the first pool that
        fits them and may grow for just enough fresh nodes (first-fit packing), up to its maximum."""
        wants: dict[str, list[_WaitingPod]] = {}
        for key, pods in self.waiting.items():
            if key in self.no_scale:
                continue
            requested = key in self.provisioned
            for pod in pods:
                if pod.covered_until is not None and pod.covered_until > now:
                    continue
                choice = next((p for p in pod.pools if self.caps[p].gpus_per_node >= pod.gpus
                               and (requested or not self.caps[p].queued) and self._room(p) > 0), None)
                if choice is not None:
                    wants.setdefault(choice, []).append(pod)
        for pool, pods in wants.items():
            cap = self.caps[pool]
            bins: list[int] = []
            for pod in pods:
                j = next((j for j, free in enumerate(bins) if free >= pod.gpus), None)
                if j is None:
                    bins.append(cap.gpus_per_node - pod.gpus)
                else:
                    bins[j] -= pod.gpus
            count = min(len(bins), self._room(pool))
            ready = now + cap.provisioning_delay
            heapq.heappush(self.coming, (ready, pool, count))
            for pod in pods:
                pod.covered_until = ready

    def _room(self, pool: str) -> int:
        coming = sum(n for _, p, n in self.coming if p == pool)
        return self.caps[pool].max_nodes - len(self.nodes[pool]) - coming
