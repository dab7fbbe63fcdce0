"""The simulated kube-scheduler: place pods on nodes.

Scheduling follows kube-scheduler's filters that matter for batch GPU pods: NodeName already set,
scheduling gates (the pod waits, `SchedulingGated`), node Ready and not cordoned, nodeSelector
and required node affinity (NodeAffinity), NoSchedule/NoExecute taints tolerated
(TaintToleration) and free allocatable for every requested resource plus the pod count
(NodeResourcesFit). Among feasible nodes the one with the fewest free GPUs that still fit is
taken (bin packing, the scoring GPU clusters configure so whole 8-GPU nodes stay free).
A pod that fits nowhere gets `PodScheduled=False reason Unschedulable` with kube-scheduler's
message and is retried whenever capacity changes; waiting pods are kept by shape, so that retry
tries one pod of a shape that still fits nowhere, not every pod.

Per-node allocation is kept incrementally from pod events (a pod holds its requests from binding
until it terminates or is deleted), and nodes with identical labels and taints are grouped so a
pod's node-affinity and taint checks run once per group, not once per node: the scale scenarios
have 5,000 nodes.

The scheduler keeps the node ledger (which pod holds what on which node) the kubelets and the
cluster autoscaler read, and deletes the pods of a deleted node (PodGC). Running the pods is the
kubelets' (`sim.kube.kubelet`).
"""

from __future__ import annotations

import bisect
import contextlib
import heapq
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kueuetop.kueue.core import GPU_RESOURCE, parse_node, parse_pod
from kueuetop.kueue.errors import KueueParseError
from kueuetop.kueue.parse_cache import ParseCache
from kueuetop.kueue.pod_requests import PodShape
from kueuetop.kueue.scheduling_terms import Taint, Toleration, tolerated
from kueuetop.kueue.workload import QUEUE_NAME_LABEL as QUEUE_LABEL
from kueuetop.sim.kube.events import SCHEDULER, EventWriter, NullEvents, find_condition
from kueuetop.sim.storage.objectstore import NotFound, ObjectStore, StoreError, WatchEvent, rfc3339

_log = logging.getLogger(__name__)

Obj = dict[str, Any]
PodKey = tuple[str, str]

HOSTNAME_LABEL = "kubernetes.io/hostname"
MANAGED_LABEL = "kueue.x-k8s.io/managed"
# GKE lets pods that consume a ProvisioningRequest onto the queued-provisioning nodes made for it.
CONSUME_PROVREQ_ANNOTATION = "autoscaling.x-k8s.io/consume-provisioning-request"
QUEUED_TAINT = "cloud.google.com/gke-queued"
MESSAGE_TTL = 30.0  # simulated seconds a shape's FitError message is reused while no node changes
PODS = "pods"
TERMINAL = ("Succeeded", "Failed")
_NOTHING_FREE: Mapping[str, int] = {}


def awaiting_admission_webhook(pod: Mapping[str, Any]) -> bool:
    """A queue-labelled standalone pod that Kueue's pod webhook has not gated yet.

    On a real cluster the webhook gates it in the create request; in the simulation the pod
    integration does it right after, and until then the scheduler must not take the pod.
    """
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    if QUEUE_LABEL not in labels or labels.get(MANAGED_LABEL) == "true":
        return False
    return not any(r.get("controller") for r in meta.get("ownerReferences") or [] if isinstance(r, dict))


@dataclass(frozen=True)
class Placement:
    """What a pod asks of a node: constraints and per-pod requests."""

    requests: Mapping[str, int]
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity: tuple = ()  # NodeSelectorTerms (ORed)
    tolerations: tuple[Toleration, ...] = ()

    @classmethod
    def from_shape(cls, shape: PodShape, extra_tolerations: Iterable[Toleration] = ()) -> Placement:
        return cls(dict(shape.requests), dict(shape.node_selector), tuple(shape.required_affinity),
                   tuple(shape.tolerations) + tuple(extra_tolerations))

    def constraint_key(self) -> tuple:
        return (tuple(sorted(self.node_selector.items())), self.affinity, self.tolerations)

    def mentions_hostname(self) -> bool:
        if HOSTNAME_LABEL in self.node_selector:
            return True
        return any(r.key == HOSTNAME_LABEL for term in self.affinity for r in term.expressions)

    def labels_match(self, labels: Mapping[str, str]) -> bool:
        for k, v in self.node_selector.items():
            if labels.get(k) != v:
                return False
        return not self.affinity or any(term.matches(labels) for term in self.affinity)

    def untolerated(self, taints: Iterable[Taint]) -> Taint | None:
        for t in taints:
            if t.effect in ("NoSchedule", "NoExecute") and not tolerated(t, self.tolerations):
                return t
        return None


def _fit_key(placement: Placement) -> tuple:
    """What decides where a pod can go: its constraints and its requests."""
    return (placement.constraint_key(), tuple(sorted(placement.requests.items())))


class _Group:
    """Nodes with the same labels (hostname aside), taints and readiness."""

    def __init__(self, gid: int, labels: Mapping[str, str], taints: tuple[Taint, ...], ready: bool,
                 cordoned: bool) -> None:
        self.gid = gid
        self.labels = labels
        self.taints = taints
        self.ready = ready
        self.cordoned = cordoned
        self.buckets: dict[int, dict[str, None]] = {}  # free GPUs → node names (insertion order)
        # Per bucket, at least the most any of its nodes has free of each resource (absent: 0):
        # a CPU pod skips the thousands of nodes whose GPUs, and so CPUs, are all taken.
        self.most_free: dict[int, dict[str, int]] = {}
        self.size = 0


@dataclass
class _Node:
    name: str
    labels: Mapping[str, str]
    alloc: dict[str, int]
    group: _Group
    used: dict[str, int] = field(default_factory=dict)
    pods: set[PodKey] = field(default_factory=set)

    def free(self, resource: str) -> int:
        return self.alloc.get(resource, 0) - self.used.get(resource, 0)

    def free_gpus(self) -> int:
        return max(0, self.free(GPU_RESOURCE))

    def fits(self, requests: Mapping[str, int], free: Mapping[str, int] | None = None) -> str | None:
        """The first resource that does not fit (None if all do)."""
        for r, v in requests.items():
            have = free[r] if free is not None and r in free else self.free(r)
            if v > have:
                return r
        return None


class _Waiting:
    """Unschedulable pods of one fit key in scheduling order, and the message all of them
    carry (None when they differ): once the first fits nowhere, the others do not either and,
    while that message stands, a pass has nothing to write for them."""

    __slots__ = ("fit_key", "members", "message")

    def __init__(self, fit_key: tuple) -> None:
        self.fit_key = fit_key
        self.members: list[tuple[tuple, PodKey]] = []  # (rank, pod), sorted
        self.message: str | None = None

    def settle(self, messages: Mapping[PodKey, str]) -> None:
        """Recheck the common message after a pass wrote some of them."""
        first = messages.get(self.members[0][1]) if self.members else None
        self.message = first if all(messages.get(k) == first for _, k in self.members) else None


class _Candidate(NamedTuple):
    """A pod waiting for a node, as a scheduling pass sees it (ordered by priority, then age)."""

    neg_priority: int
    created: str
    key: PodKey
    pod: Obj
    shape: PodShape
    placement: Placement
    fit_key: tuple


class _WaitingPod(NamedTuple):
    """An unschedulable pod: its group, its rank there, and what it was judged on."""

    group: _Waiting
    rank: tuple
    spec: object
    consumed: object  # its consume-provisioning-request annotation


def _consumed_request(pod: Obj) -> object:
    return ((pod.get("metadata") or {}).get("annotations") or {}).get(CONSUME_PROVREQ_ANNOTATION)



@dataclass
class BoundPod:
    """A pod in the node ledger: its node and requests; `running` and `ends_at` are the
    kubelet's."""

    node: str = ""
    requests: dict[str, int] = field(default_factory=dict)
    counted: bool = False  # holds its requests on `node`
    ends_at: float | None = None
    running: bool = False


def patch_pod_status(store: ObjectStore, key: PodKey, fn: Any) -> None:
    """Write a pod's status through the status subresource (gone or refused: nothing)."""
    try:
        store.patch("", "pods", key[0], key[1], fn, status=True, copy=False)
    except NotFound:
        pass
    except StoreError as exc:
        _log.info("kubelet: status of %s/%s not written: %s", key[0], key[1], exc.message)


class Scheduler:
    """kube-scheduler for every node, and the node ledger. `on_bind(key, now)` tells the
    kubelets a pod was bound; it answers True when the pod does not start at once (the
    scheduler then records PodScheduled=True itself)."""

    name = "kube-scheduler"

    def __init__(self, store: ObjectStore, *, events: EventWriter | None = None,
                 on_bind: Callable[[PodKey, float], bool] | None = None) -> None:
        self._parse_cache = ParseCache()  # quantities and conditions of the pods and nodes it reads
        self.store = store
        self.events = events or NullEvents()
        self.on_bind = on_bind or (lambda key, now: False)
        self._nodes: dict[str, _Node] = {}
        self._groups: dict[tuple, _Group] = {}
        self._gid = 0
        self.pods: dict[PodKey, BoundPod] = {}
        self._to_schedule: dict[PodKey, None] = {}
        self._unschedulable: dict[PodKey, str] = {}  # → last message written
        # The same pods by fit key, in scheduling order, so a capacity change tries one pod of
        # a key that fits nowhere instead of sorting and walking every waiting pod again.
        self._waiting: dict[tuple, _Waiting] = {}
        self._waiting_of: dict[PodKey, _WaitingPod] = {}
        self._waiting_seq = 0  # order of entry into _unschedulable (the old queue's tie-break)
        self._retry_waiting = False
        self._node_gone: list[str] = []
        self._capacity_changed = False
        # Bumped whenever capacity may have grown (a pod released, a node added or changed).
        # A shape that fit nowhere keeps fitting nowhere until then: binds only take capacity.
        self._capacity_epoch = 0
        self._no_fit: dict[tuple, int] = {}  # shape → the epoch it was found to fit nowhere in
        self._match_cache: dict[tuple, bool] = {}
        self._messages: dict[tuple, tuple[int, float, str]] = {}
        self._node_version = 0
        self._shapes: dict[str, PodShape] = {}  # spec content → parsed shape
        self._shape_by_spec: dict[int, tuple[object, PodShape]] = {}  # id(spec) → (spec, shape)
        self._examined: dict[PodKey, tuple[Obj, _Candidate | None]] = {}  # pod → (object, _examine's answer)

    # ------------------------------------------------------------------ events
    def on_event(self, event: WatchEvent) -> None:
        key = event.kind.key
        try:
            if key == ("", "pods"):
                self._on_pod(event)
            elif key == ("", "nodes"):
                self._on_node(event)
        except Exception:  # a malformed object must not break the writer's thread
            _log.exception("kubelet: cannot handle %s %s", event.type, event.kind.kind)

    def _on_node(self, event: WatchEvent) -> None:
        name = (event.obj.get("metadata") or {}).get("name", "")
        self._node_version += 1
        if event.type == "DELETED":
            node = self._nodes.pop(name, None)
            if node is not None:
                self._drop_from_group(node)
                self._node_gone.append(name)
            return
        try:
            parsed = parse_node(event.obj, self._parse_cache)
        except KueueParseError as exc:
            _log.warning("kubelet: skipping node %s: %s", name, exc)
            return
        labels = dict(parsed.meta.labels)
        sig_labels = tuple(sorted((k, v) for k, v in labels.items() if k != HOSTNAME_LABEL))
        sig = (sig_labels, parsed.taints, parsed.ready, parsed.unschedulable)
        group = self._groups.get(sig)
        if group is None:
            self._gid += 1
            group = _Group(self._gid, dict(sig_labels), parsed.taints, parsed.ready and not parsed.unschedulable,
                           parsed.unschedulable)
            self._groups[sig] = group
        alloc = dict(parsed.allocatable or parsed.capacity)
        old = self._nodes.get(name)
        if old is not None:
            self._drop_from_group(old)
            old.labels, old.alloc, old.group = labels, alloc, group
            node = old
        else:
            node = _Node(name, labels, alloc, group)
            self._nodes[name] = node
        self._add_to_group(node)
        self._capacity_changed = True
        self._capacity_epoch += 1

    def _add_to_group(self, node: _Node) -> None:
        level = node.free_gpus()
        node.group.buckets.setdefault(level, {})[node.name] = None
        bound = node.group.most_free.setdefault(level, {})
        used = node.used
        for r, a in node.alloc.items():
            f = a - used.get(r, 0)
            if f > bound.get(r, 0):
                bound[r] = f
        node.group.size += 1

    def _drop_from_group(self, node: _Node) -> None:
        level = node.free_gpus()
        bucket = node.group.buckets.get(level)
        if bucket is not None:
            bucket.pop(node.name, None)  # the bucket's bound stays an upper bound
            if not bucket:
                del node.group.buckets[level]
                node.group.most_free.pop(level, None)
        node.group.size -= 1

    def _on_pod(self, event: WatchEvent) -> None:
        meta = event.obj.get("metadata") or {}
        key = (meta.get("namespace", ""), meta.get("name", ""))
        if event.type == "DELETED":
            self._forget_pod(key)
            return
        pod = event.obj
        spec = pod.get("spec") or {}
        phase = (pod.get("status") or {}).get("phase", "Pending")
        node_name = spec.get("nodeName") or ""
        state = self.pods.get(key)
        if phase in TERMINAL:
            if state is not None and state.counted:
                self.release(key, state)
            self._to_schedule.pop(key, None)
            self._unwait(key)
            self._examined.pop(key, None)
            return
        if not node_name:
            if meta.get("deletionTimestamp") or spec.get("schedulingGates") or awaiting_admission_webhook(pod):
                self._to_schedule.pop(key, None)
                self._unwait(key)
                return
            waiting = self._waiting_of.get(key)
            if waiting is None:
                self._to_schedule[key] = None
            elif waiting.spec is not pod.get("spec") or waiting.consumed != _consumed_request(pod):
                if self._fit_key_of(pod) != waiting.group.fit_key:
                    # What decides where it fits changed: it queues again like a new pod.
                    self._unwait(key)
                    self._to_schedule[key] = None
                else:
                    self._waiting_of[key] = waiting._replace(spec=pod.get("spec"), consumed=_consumed_request(pod))
            return
        # Bound (by us or by a client that set nodeName): account for it on its node.
        self._examined.pop(key, None)
        if state is None or not state.counted:
            self._account(key, pod, node_name)
    def _account(self, key: PodKey, pod: Obj, node_name: str, shape: PodShape | None = None) -> None:
        """Hold the pod's requests on its node (once: the bind's own event may come first).
        `shape` is the pod's parsed shape when the caller has it (the scheduler does)."""
        state = self.pods.get(key)
        if state is not None and state.counted:
            return
        try:
            requests = dict((shape or self._shape_of(pod)).requests)
        except KueueParseError as exc:
            _log.warning("kubelet: pod %s/%s has bad requests: %s", key[0], key[1], exc)
            requests = {}
        requests[PODS] = 1
        state = self.pods.setdefault(key, BoundPod())
        state.node, state.requests = node_name, requests
        node = self._nodes.get(node_name)
        if node is not None:
            self._drop_from_group(node)
            for r, v in requests.items():
                node.used[r] = node.used.get(r, 0) + v
            node.pods.add(key)
            self._add_to_group(node)
            state.counted = True
        self._to_schedule.pop(key, None)
        self._unwait(key)

    def release(self, key: PodKey, state: BoundPod) -> None:
        """The pod no longer holds its requests (it ended or went away)."""
        node = self._nodes.get(state.node)
        if node is not None and state.counted:
            self._drop_from_group(node)
            for r, v in state.requests.items():
                node.used[r] = node.used.get(r, 0) - v
            node.pods.discard(key)
            self._add_to_group(node)
        state.counted = False
        state.ends_at = None
        self._capacity_changed = True
        self._capacity_epoch += 1


    def _forget_pod(self, key: PodKey) -> None:
        self._examined.pop(key, None)
        state = self.pods.pop(key, None)
        if state is not None and state.counted:
            self.release(key, state)
        self._to_schedule.pop(key, None)
        self._unwait(key)

    # ------------------------------------------------------------------ queries
    def nodes(self) -> list[str]:
        return list(self._nodes)

    def pods_on(self, node: str) -> set[PodKey]:
        n = self._nodes.get(node)
        return set(n.pods) if n is not None else set()

    def free(self, node: str) -> dict[str, int]:
        n = self._nodes.get(node)
        if n is None:
            return {}
        return {r: n.alloc.get(r, 0) - n.used.get(r, 0) for r in n.alloc}

    def unschedulable(self) -> list[PodKey]:
        return list(self._unschedulable)

    def _group_matches(self, group: _Group, placement: Placement, ckey: tuple) -> bool:
        cache_key = (group.gid, ckey)
        hit = self._match_cache.get(cache_key)
        if hit is None:
            hit = group.ready and placement.labels_match(group.labels) and placement.untolerated(group.taints) is None
            if len(self._match_cache) > 50_000:
                self._match_cache.clear()
            self._match_cache[cache_key] = hit
        return hit

    def _candidates(self, placement: Placement) -> list[_Group]:
        if placement.mentions_hostname():
            return [g for g in self._groups.values() if g.size and g.ready
                    and placement.untolerated(g.taints) is None]
        ckey = placement.constraint_key()
        return [g for g in self._groups.values() if g.size and self._group_matches(g, placement, ckey)]

    def find_node(self, placement: Placement, free: dict[str, dict[str, int]] | None = None) -> str | None:
        """The node a pod would be bound to now (None: it fits nowhere).

        `free` optionally overrides the free resources per node (a what-if copy the caller
        deducts from, see `simulate`)."""
        requests = {**placement.requests, PODS: 1}
        need_gpu = requests.get(GPU_RESOURCE, 0)
        groups = self._candidates(placement)
        if not groups:
            return None
        hostname = placement.mentions_hostname()
        levels = sorted({lvl for g in groups for lvl in g.buckets if lvl >= need_gpu or free is not None})
        for lvl in levels:
            for g in groups:
                bucket = g.buckets.get(lvl)
                if not bucket:
                    continue
                if free is None:
                    bound = g.most_free.get(lvl, _NOTHING_FREE)
                    if any(v > bound.get(r, 0) for r, v in requests.items()):
                        continue  # no node of the bucket has that much free
                for name in bucket:
                    node = self._nodes[name]
                    if hostname and not placement.labels_match(node.labels):
                        continue
                    if node.fits(requests, free.get(name) if free is not None else None) is None:
                        return name
                if free is None and not hostname:
                    # Every node was looked at: what they really have free bounds the next look.
                    bound = g.most_free.setdefault(lvl, {})
                    for r in requests:
                        bound[r] = max(self._nodes[n].free(r) for n in bucket)
        return None

    def free_now(self) -> dict[str, dict[str, int]]:
        """Free resources per node, a copy to deduct what-if placements from (`simulate`)."""
        return {n: {r: node.free(r) for r in set(node.alloc) | set(node.used)} for n, node in self._nodes.items()}

    def simulate(self, placements: Iterable[Placement], free: dict[str, dict[str, int]] | None = None) -> int:
        """How many of these pods would fit on the current free capacity (or on `free`, which
        the placements are deducted from), placed in order."""
        free = free if free is not None else {}
        placed = 0
        for p in placements:
            # Materialize free amounts for all nodes lazily, then deduct placements.
            if not free:
                free.update(self.free_now())
            name = self.find_node(p, free)
            if name is None:
                continue
            for r, v in {**p.requests, PODS: 1}.items():
                free[name][r] = free[name].get(r, 0) - v
            placed += 1
        return placed

    # ------------------------------------------------------------------ reconcile
    # ------------------------------------------------------------------ reconcile
    def collect_garbage(self) -> bool:
        """PodGC: delete the pods of nodes that were deleted."""
        worked = False
        for name in self._node_gone:
            worked = self._gc_pods_of_node(name) or worked
        self._node_gone.clear()
        return worked

    def schedule(self, now: float) -> bool:
        """A pass over the new pods and, after a capacity change, the waiting ones."""
        if self._capacity_changed:
            self._capacity_changed = False
            self._retry_waiting = bool(self._waiting)
        if self._to_schedule or self._retry_waiting:
            return self._schedule(now)
        return False

    def _gc_pods_of_node(self, node_name: str) -> bool:
        keys = [k for k, st in self.pods.items() if st.node == node_name]
        for ns, name in keys:
            with contextlib.suppress(StoreError):
                self.store.delete("", "pods", ns, name)
        return bool(keys)

    def _schedule(self, now: float) -> bool:
        """One pass of kube-scheduler's queue: the pods new since the last pass and, after a
        capacity change, the waiting (unschedulable) ones, by priority, then age; ties by
        arrival, new pods before waiting ones (the order one stable sort of both gave)."""
        new = []
        for key in self._to_schedule:
            entry = self._entry(key)
            if entry is not None:
                new.append(entry)
        self._to_schedule.clear()
        new.sort(key=lambda p: (p.neg_priority, p.created))
        n_new = len(new)
        # One heap of the new pods and each waiting group's next pod (order keys are unique).
        heap: list[tuple[tuple, int]] = [((e.neg_priority, e.created, 0, i), i) for i, e in enumerate(new)]
        groups: list[tuple[_Waiting, list[tuple[tuple, PodKey]]]] = []
        if self._retry_waiting:
            self._retry_waiting = False
            for w in self._waiting.values():
                heap.append((w.members[0][0], n_new + len(groups)))
                groups.append((w, list(w.members)))  # pods that start waiting in this pass wait for the next
        heapq.heapify(heap)
        at = [0] * len(groups)  # each group's position in its member list
        walked: list[_Waiting] = []
        worked = False
        epoch = self._capacity_epoch
        while heap:
            _, src = heapq.heappop(heap)
            w = None
            if src < n_new:
                entry = new[src]
            else:
                g = src - n_new
                w, members = groups[g]
                pos = at[g]
                at[g] = pos + 1
                key = members[pos][1]
                entry = self._entry(key) if key in self._waiting_of else None  # not bound or gone meanwhile
                if entry is None:
                    if pos + 1 < len(members):
                        heapq.heappush(heap, (members[pos + 1][0], src))
                    continue
            _, _, key, pod, shape, placement, fit_key = entry
            # kube-scheduler parks an unschedulable pod until a cluster event could make it fit;
            # here pods of one shape share that verdict, so a backlog of a thousand pending pods
            # on 5,000 nodes costs one scan per shape, not one per pod.
            node = None if self._no_fit.get(fit_key) == epoch else self.find_node(placement)
            if node is None:
                if len(self._no_fit) > 10_000:
                    self._no_fit.clear()
                self._no_fit[fit_key] = epoch
                if w is not None and w.message is not None and w.message == self._message(placement, fit_key, now):
                    continue  # every pod of the group already says so: the rest would write nothing
                worked = self._mark_unschedulable(key, pod, placement, now, fit_key, (entry.neg_priority, entry.created)) or worked
                if w is not None and (not walked or walked[-1] is not w):
                    walked.append(w)
            else:
                worked = self._bind(key, pod, node, now, shape) or worked
            if w is not None and pos + 1 < len(members):
                heapq.heappush(heap, (members[pos + 1][0], src))
        for w in walked:
            w.settle(self._unschedulable)
        return worked

    def _entry(self, key: PodKey) -> _Candidate | None:
        pod = self.store.try_get("", "pods", key[0], key[1], copy=False)
        if pod is None:
            return None
        # Every capacity change looks at waiting pods again: what a pod object says about
        # scheduling is worked out once (stored objects never change in place).
        seen = self._examined.get(key)
        if seen is not None and seen[0] is pod:
            return seen[1]
        entry = self._examine(key, pod)
        self._examined[key] = (pod, entry)
        return entry

    def _unwait(self, key: PodKey) -> None:
        """The pod no longer waits for capacity (bound, gone, gated, finished)."""
        self._unschedulable.pop(key, None)
        waiting = self._waiting_of.pop(key, None)
        if waiting is None:
            return
        w, rank = waiting.group, waiting.rank
        i = bisect.bisect_left(w.members, (rank,))
        if i < len(w.members) and w.members[i][1] == key:
            del w.members[i]
        if not w.members:
            del self._waiting[w.fit_key]

    def _fit_key_of(self, pod: Obj) -> tuple | None:
        try:
            return _fit_key(Placement.from_shape(self._shape_of(pod), self._implicit_tolerations(pod)))
        except KueueParseError:
            return None

    def _examine(self, key: PodKey, pod: Obj) -> _Candidate | None:
        """The `_Candidate` of a pod waiting for a
        node, or None when it is not the scheduler's to place (bound, gated, not Pending)."""
        spec = pod.get("spec") or {}
        if spec.get("nodeName") or spec.get("schedulingGates") or awaiting_admission_webhook(pod):
            return None
        if (pod.get("status") or {}).get("phase", "Pending") != "Pending":
            return None
        try:
            shape = self._shape_of(pod)
        except KueueParseError as exc:
            _log.warning("kubelet: cannot schedule pod %s/%s: %s", key[0], key[1], exc)
            return None
        prio = spec.get("priority") if isinstance(spec.get("priority"), int) else 0
        created = (pod.get("metadata") or {}).get("creationTimestamp", "")
        placement = Placement.from_shape(shape, self._implicit_tolerations(pod))
        return _Candidate(-prio, created, key, pod, shape, placement, _fit_key(placement))

    def _shape_of(self, pod: Obj) -> PodShape:
        """The pod's requests and placement constraints. Pods of one template have equal specs:
        the parsed shape is kept by spec content (a shape depends on the spec alone)."""
        spec = pod.get("spec")
        # Stored objects are never changed in place: a pod looked at again (every capacity
        # change re-examines the pending ones) has the very same spec object.
        seen = self._shape_by_spec.get(id(spec))
        if seen is not None and seen[0] is spec:
            return seen[1]
        key = repr(spec) if isinstance(spec, dict) and not spec.get("nodeName") else None
        shape = self._shapes.get(key) if key is not None else None
        if shape is None:
            shape = parse_pod(pod, self._parse_cache).shape
            if key is not None:
                if len(self._shapes) >= 4096:
                    self._shapes.clear()
                self._shapes[key] = shape
        if len(self._shape_by_spec) >= 50_000:
            self._shape_by_spec.clear()
        self._shape_by_spec[id(spec)] = (spec, shape)
        return shape

    @staticmethod
    def _implicit_tolerations(pod: Obj) -> tuple[Toleration, ...]:
        if _consumed_request(pod):
            return (Toleration(QUEUED_TAINT, "Exists", "", "NoSchedule"),)
        return ()

    def _bind(self, key: PodKey, pod: Obj, node: str, now: float, shape: PodShape | None = None) -> bool:
        def bind(cur: Obj) -> Obj:
            spec = cur.get("spec")
            return {**cur, "spec": {**(spec if isinstance(spec, dict) else {}), "nodeName": node}}

        try:
            bound = self.store.rewrite("", "pods", key[0], key[1], bind)
        except StoreError as exc:
            _log.info("kubelet: binding %s/%s failed: %s", key[0], key[1], exc.message)
            return False
        self._account(key, bound, node, shape)
        starts_later = self.on_bind(key, now)
        self.events.emit(bound, "Scheduled", f"Successfully assigned {key[0]}/{key[1]} to {node}",
                         component=SCHEDULER)

        def scheduled(cur: Obj) -> Obj:
            status = cur.setdefault("status", {})
            status.setdefault("phase", "Pending")
            conds = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
            conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                          "lastTransitionTime": rfc3339(now)})
            status["conditions"] = conds
            return cur

        if starts_later:
            self._patch_status(key, scheduled)
        return True

    def _message(self, placement: Placement, fit_key: tuple, now: float) -> str:
        # The FitError text walks every node: pods of one shape share it for a while, so a
        # thousand pending pods on 5,000 nodes don't cost a full scan each time capacity moves.
        cached = self._messages.get(fit_key)
        if cached is not None and cached[0] == self._node_version and now - cached[1] < MESSAGE_TTL:
            return cached[2]
        message = self.unschedulable_message(placement)
        if len(self._messages) > 10_000:
            self._messages.clear()
        self._messages[fit_key] = (self._node_version, now, message)
        return message

    def _mark_unschedulable(self, key: PodKey, pod: Obj, placement: Placement, now: float,
                            fit_key: tuple, order: tuple) -> bool:
        message = self._message(placement, fit_key, now)
        if self._unschedulable.get(key) == message:
            return False
        self._unschedulable[key] = message
        waiting = self._waiting_of.get(key)
        if waiting is None:
            w = self._waiting.get(fit_key)
            if w is None:
                w = self._waiting[fit_key] = _Waiting(fit_key)
            self._waiting_seq += 1
            rank = (*order, 1, self._waiting_seq)
            bisect.insort(w.members, (rank, key))
            w.message = message if len(w.members) == 1 or w.message == message else None
            self._waiting_of[key] = _WaitingPod(w, rank, pod.get("spec"), _consumed_request(pod))
        elif waiting.group.message != message:
            waiting.group.message = None
        cond = find_condition(pod, "PodScheduled")
        if cond is not None and cond.get("status") == "False" and cond.get("message") == message:
            return False

        def write(cur: Obj) -> Obj:
            status = cur.setdefault("status", {})
            status["phase"] = "Pending"
            conds = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
            conds.append({"type": "PodScheduled", "status": "False", "lastProbeTime": None,
                          "lastTransitionTime": rfc3339(now), "reason": "Unschedulable",
                          "message": message})
            status["conditions"] = conds
            return cur

        self._patch_status(key, write)
        self.events.emit(pod, "FailedScheduling", message, type_="Warning", component=SCHEDULER)
        return True

    def unschedulable_message(self, placement: Placement) -> str:
        """kube-scheduler's FitError text: `0/N nodes are available: …`."""
        total = len(self._nodes)
        reasons: dict[str, int] = {}
        no_victims = 0
        requests = {**placement.requests, PODS: 1}
        for group in self._groups.values():
            if not group.size:
                continue
            members = [self._nodes[n] for b in group.buckets.values() for n in b]
            for node in members:
                reason = self._node_reason(node, group, placement, requests)
                if reason is None:
                    continue  # fits now (capacity changed meanwhile)
                reasons[reason] = reasons.get(reason, 0) + 1
                if reason.startswith("Insufficient") or reason.startswith("Too many"):
                    no_victims += 1
        # framework.FitError.Error(): "<count> <reason>" strings, sorted as strings (so
        # "12 node(s)…" comes before "3 Insufficient…"), as the PostFilter's preemption part.
        parts = ", ".join(sorted(f"{n} {r}" for r, n in reasons.items()))
        msg = f"0/{total} nodes are available" + (f": {parts}." if parts else ".")
        preempt = []
        if no_victims:
            preempt.append(f"{no_victims} No preemption victims found for incoming pod")
        if total - no_victims:
            preempt.append(f"{total - no_victims} Preemption is not helpful for scheduling")
        return msg + f" preemption: 0/{total} nodes are available: {', '.join(sorted(preempt))}."

    @staticmethod
    def _node_reason(node: _Node, group: _Group, placement: Placement, requests: Mapping[str, int]) -> str | None:
        if group.cordoned:
            return "node(s) were unschedulable"
        if not group.ready:
            return "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
        if not placement.labels_match(node.labels):
            return "node(s) didn't match Pod's node affinity/selector"
        taint = placement.untolerated(group.taints)
        if taint is not None:
            return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
        missing = node.fits(requests)
        if missing == PODS:
            return "Too many pods"
        if missing is not None:
            return f"Insufficient {missing}"
        return None


    def _patch_status(self, key: PodKey, fn: Any) -> None:
        patch_pod_status(self.store, key, fn)
