"""The triage board's model: what is wrong right now, ranked, one line per problem.

Classes of problems (issue "Triage first"), most severe first:

* broken: stale or failing data sources, NotReady or cordoned GPU nodes, GPUs with XID or
  double-bit ECC errors, failed or stuck ProvisioningRequests, AdmissionChecks not Active,
  stopped or inactive queues;
* admitted but not running: admitted workloads whose pods are not all Running, split by the
  cause `pod_evidence` reads (image pull / crash loop, fragmentation, unschedulable, waiting for
  a ProvisioningRequest or a scale-up), and the PodsReady timeout coming (Kueue's
  `waitForPodsReady`, when its configuration is known);
* waiting too long: pending workloads per ClusterQueue older than a threshold, with the
  explain verdict of the oldest;
* churn: evictions and preemptions in the last ten minutes by reason and ClusterQueue, and
  workloads evicted more than twice (thrashing);
* waste: admitted workloads whose GPUs sit idle, nodes with GPUs no ResourceFlavor can use.

The model is incremental: `update(changes)` refiles only the objects a store change set names
(kind → keys) into per-kind aggregates; `problems(now)` reads the aggregates, so its cost follows
the number of problems, not of workloads. A full rebuild happens on the first update only.
"""

from __future__ import annotations

import bisect
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.explain import explain
from kueuetop.admission.queue_state import QueueState
from kueuetop.kueue.admission_check import AdmissionCheck
from kueuetop.kueue.cluster_queue import ClusterQueue
from kueuetop.kueue.config import KueueConfig
from kueuetop.kueue.core import GPU_RESOURCE, Node, Pod
from kueuetop.kueue.event import safe_event
from kueuetop.kueue.flavor import ResourceFlavor
from kueuetop.kueue.local_queue import LocalQueue
from kueuetop.kueue.meta import find_condition
from kueuetop.kueue.provisioning import ProvisioningRequest
from kueuetop.kueue.scheduling_terms import tolerated
from kueuetop.kueue.workload import Workload
from kueuetop.kueue.workload_state import Phase, derive_state
from kueuetop.store import Store
from kueuetop.store import events as K
from kueuetop.views import pod_evidence as PE
from kueuetop.views.ages import age_text
from kueuetop.views.safe_text import clean

Key = tuple[str, str]

# Severity classes (higher first); within one, more workloads and older first.
BROKEN, NOT_RUNNING, WAITING, CHURN, WASTE = 50, 40, 30, 20, 10
WAITING_PHASES = frozenset({Phase.PENDING, Phase.BACKOFF, Phase.BLOCKED, Phase.GATED, Phase.RESERVED})
_NAME_CHARS = "-.a-z0-9"  # what DNS-1123 names are made of: a name ends where these do


@dataclass(frozen=True, slots=True)
class Target:
    """Where `enter` on a problem leads: a workload's detail, a view filtered, or an object's YAML."""

    view: str = ""
    filter: str = ""
    workload: Key | None = None
    kind: str = ""  # with `key`: the object's YAML
    key: Key | None = None


@dataclass(frozen=True, slots=True)
class Problem:
    severity: int
    category: str  # broken | not running | waiting | churn | waste
    kind: str  # a stable name of the problem (tests and styles key on it)
    text: str  # one line, cluster strings cleaned
    count: int  # workloads, nodes, GPUs or objects concerned
    oldest: float | None  # age in seconds of the oldest instance
    target: Target = field(default_factory=Target)
    cluster_queue: str = ""


@dataclass(frozen=True, slots=True)
class QueueLine:
    name: str
    pending: int
    admitted: int
    oldest_wait: float | None
    trouble: float  # higher: more trouble (ordering of the queue list)
    status: str  # Active | Stopped(…) | Inactive(…) | ?


def name_filter(keys: Iterable[Key], most: int = 40) -> str:
    """A Workloads/Nodes `/` filter that keeps exactly these rows (the row text starts with the
    namespace cell then the name cell); no backslash or space, which the filter's word splitting
    would eat."""
    by_ns: dict[str, list[str]] = {}
    for ns, name in sorted(keys)[:most]:
        by_ns.setdefault(ns, []).append(_lit(name))
    alts = []
    for ns, names in by_ns.items():
        body = names[0] if len(names) == 1 else "(?:" + "|".join(names) + ")"
        alts.append(f"{_lit(ns)}[^{_NAME_CHARS}]{body}" if ns else body)
    rx = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
    return f"^{rx}(?![{_NAME_CHARS}])"


def word_filter(word: str) -> str:
    """A filter term matching `word` as a whole name anywhere in a row."""
    return f"(?:^|[^{_NAME_CHARS}]){_lit(word)}(?![{_NAME_CHARS}])"


def _lit(name: str) -> str:
    return re.sub(r"[^-a-zA-Z0-9_]", lambda m: f"[{m.group(0)}]" if m.group(0) not in "\\^]" else ".", name)


def _plural(n: int, word: str, words: str | None = None) -> str:
    return f"{n} {word if n == 1 else (words or word + 's')}"


@dataclass(slots=True)
class _Admitted:
    cq: str
    since: float | None  # Admitted condition's time
    pods: tuple[Pod, ...]  # its pods that are not Running (nor done)
    total_pods: int
    requeues: int
    pods_ready: bool


@dataclass(slots=True)
class _Eviction:
    cq: str
    reason: str  # Preempted, PodsReadyTimeout, …; preemption's own reason after a slash
    times: list[float]
    total: int  # evictions Kueue counted (schedulingStats / requeueState)


@dataclass(frozen=True, slots=True)
class _ChurnDigest:
    """TriageModel's evictions in the window, summed up at `at`; valid until `until` (the oldest
    eviction leaves the window) while the evictions stay at `version`."""

    version: int
    at: float
    until: float
    lines: tuple[tuple[int, str, str, int, float, Target, str], ...]  # severity, verb, text, count, first, target, cq
    thrashing: Problem | None
    by_cq: Mapping[str, int]  # ClusterQueue → evictions in the window


POD_EVENTS_KEPT = 3  # per pod: the newest say what the scheduler and the autoscaler think now


class TriageModel:
    """Aggregates of the store kept from change sets; problems read from them."""

    def __init__(self, store: Store, *, config: KueueConfig | None = None, wait_after: float = 300.0,
                 churn_window: float = 600.0, idle_below: float = 5.0, stuck_after: float = 600.0,
                 explain_budget: int = 3, max_lines: int = 10) -> None:
        self.store = store
        self.config = config
        self.wait_after = wait_after
        self.churn_window = churn_window
        self.idle_below = idle_below
        self.stuck_after = stuck_after
        self.explain_budget = explain_budget  # explain runs per `problems` call at most
        self.max_lines = max_lines  # per-queue lines of one kind shown, the rest summed up in one
        self.rebuilds = 0  # full rebuilds done (tests check that updates stay incremental)
        self._built = False
        # workloads
        self._wl_filed: dict[Key, tuple[str, str]] = {}  # key → (what it is filed as, its ClusterQueue)
        self._pending: dict[str, list[tuple[float, Key]]] = {}  # CQ → sorted (created, key)
        self._pending_at: dict[Key, tuple[str, float]] = {}
        self._admitted: dict[Key, _Admitted] = {}
        self._admitted_by_cq: dict[str, int] = {}
        self._not_running: set[Key] = set()  # admitted with some pod not running
        self._evictions: dict[Key, _Eviction] = {}
        self._evictions_version = 0  # bumped when an eviction is filed or unfiled
        self._churn: _ChurnDigest | None = None  # the evictions in the window, summed up
        self._util: dict[Key, tuple[float, int]] = {}  # admitted workload → (mean util, GPUs)
        self._idle: dict[Key, tuple[float, int]] = {}  # the same, those under `idle_below`
        self._explained: dict[Key, tuple[str, str]] = {}  # key → (resourceVersion, headline)
        self._queue_state = QueueState()
        self._engine = EngineCache()  # explain() keeps its workload index here between calls
        self._want: list[Key] = []
        # pods, nodes, GPUs
        self._pod_wl: dict[Key, Key] = {}
        self._pod_used: dict[Key, tuple[str, int]] = {}  # pod → (node, GPUs held)
        self._used: dict[str, int] = {}  # node → GPUs held by pods
        self._nodes: dict[str, Node] = {}
        # Flavor name → its nodes (nodeLabels match): kept until a node or a flavor changes, so a
        # refresh does not match every node's labels against every flavor again.
        self._flavor_nodes: dict[str, list[Node]] = {}
        # (flavor, GPUs a pod needs) → how the flavor's nodes fit it, and free GPUs per node: kept
        # until a pod's placement, a node or a flavor changes (most refreshes change none of them).
        self._fits: dict[tuple[str, int], PE.PoolFit] = {}
        self._free: dict[str, int] | None = None
        self._node_bad: dict[str, tuple[str, float | None]] = {}  # GPU node → (NotReady/cordoned, since)
        self._unusable: dict[str, str] = {}  # GPU node → why no flavor can use it
        self._gpu_flavors: tuple[ResourceFlavor, ...] | None = None  # flavors some CQ offers GPUs in
        self._faulty: dict[tuple[str, str], str] = {}
        self._gpu_wl: dict[tuple[str, str], Key] = {}
        self._gpu_totals: tuple[int, int] | None = None  # (requested, allocatable) GPUs, kept until a change
        # other kinds
        self._prs: dict[Key, tuple[str, str, float | None, str]] = {}  # PR → (failed|waiting, msg, since, workload)
        self._queues: dict[tuple[str, Key], tuple[str, float | None]] = {}  # (kind, key) → (status, since)
        self._checks: dict[str, str] = {}  # AdmissionCheck → reason it is not Active
        # pod → its newest scheduling Events (time, reason, message), oldest first: the
        # autoscaler's TriggeredScaleUp / NotTriggerScaleUp say more than the pool's node count
        self._pod_events: dict[Key, list[tuple[float, str, str, Key]]] = {}
        self._event_pod: dict[Key, Key] = {}  # Event → the pod it is about

    # ================================================================= updating
    def update(self, changes: Mapping[str, Iterable[Any]] | None = None, now: float | None = None) -> None:
        """Refile what `changes` (kind → keys) names; None, or the first call: everything."""
        if changes is None or not self._built:
            self._rebuild(now)
            return
        wls: set[Key] = set(changes.get(K.WORKLOADS, ()))
        for pkey in changes.get(K.PODS, ()):
            wls |= self._file_pod(pkey)
        flavors_changed = bool(changes.get(K.RESOURCE_FLAVORS))
        if flavors_changed or changes.get(K.NODES):
            self._flavor_nodes.clear()
            self._fits.clear()
        if changes.get(K.CLUSTER_QUEUES) or flavors_changed:
            for name in changes.get(K.CLUSTER_QUEUES, ()):
                self._file_queue(K.CLUSTER_QUEUES, name if isinstance(name, tuple) else ("", name))
            old = self._gpu_flavors
            self._gpu_flavors = None
            if flavors_changed or self._flavors() != old:
                for n in list(self._nodes):
                    self._file_node(("", n))
        for key in changes.get(K.LOCAL_QUEUES, ()):
            self._file_queue(K.LOCAL_QUEUES, key)
        for key in changes.get(K.NODES, ()):
            self._file_node(key)
        gpus = changes.get(K.GPUS, ())
        util_only = self._file_gpus(gpus) - wls if gpus else set()
        for key in changes.get(K.PROVISIONING_REQUESTS, ()):
            self._file_pr(key)
        for key in changes.get(K.ADMISSION_CHECKS, ()):
            self._file_check(key)
        for key in changes.get(K.EVENTS, ()):
            self._file_event(key)
        now = now if now is not None else time.time()
        for key in wls:
            self._file_workload(key, now)
        for key in util_only:  # a GPU reading moved: only the workload's idleness follows
            if key in self._admitted:
                self._file_util(key)

    def _rebuild(self, now: float | None) -> None:
        rebuilds = self.rebuilds
        self.__init__(self.store, config=self.config, wait_after=self.wait_after,  # type: ignore[misc]
                      churn_window=self.churn_window, idle_below=self.idle_below, stuck_after=self.stuck_after,
                      explain_budget=self.explain_budget, max_lines=self.max_lines)
        self.rebuilds = rebuilds + 1
        self._built = True
        store = self.store
        now = now if now is not None else time.time()
        for key in store.keys(K.NODES):
            self._file_node(key)
        for key in store.keys(K.PODS):
            self._file_pod(key)
        self._file_gpus(store.gpus().keys())
        for key in store.keys(K.CLUSTER_QUEUES):
            self._file_queue(K.CLUSTER_QUEUES, key)
        for key in store.keys(K.LOCAL_QUEUES):
            self._file_queue(K.LOCAL_QUEUES, key)
        for key in store.keys(K.PROVISIONING_REQUESTS):
            self._file_pr(key)
        for key in store.keys(K.ADMISSION_CHECKS):
            self._file_check(key)
        for key in store.keys(K.EVENTS):
            self._file_event(key)
        for key in store.keys(K.WORKLOADS):
            self._file_workload(key, now)

    # ----------------------------------------------------------------- pod Events
    def _file_event(self, key: Key) -> None:
        """Keep a pod's scheduling Events (the store holds Events as wire dicts, either shape)."""
        raw = self.store.wire(K.EVENTS, key)
        old_pod = self._event_pod.pop(key, None)
        if old_pod is not None:  # an Event updated in place (its count, its last time): refiled below
            kept = [e for e in self._pod_events.get(old_pod, []) if e[3] != key]
            if kept:
                self._pod_events[old_pod] = kept
            else:
                self._pod_events.pop(old_pod, None)
        if not isinstance(raw, dict):
            return
        obj = raw.get("involvedObject") or raw.get("regarding")
        if not isinstance(obj, dict) or obj.get("kind") != "Pod":
            return
        ev = safe_event(raw)
        if ev.reason not in PE.SCHEDULING_EVENT_REASONS:
            return
        pod = (str(obj.get("namespace") or key[0]), str(obj.get("name") or ""))
        self._event_pod[key] = pod
        lst = self._pod_events.setdefault(pod, [])
        lst.append((ev.time or 0.0, ev.reason, ev.message, key))
        lst.sort(key=lambda e: e[0])
        del lst[:-POD_EVENTS_KEPT]

    def _events_of(self, pod: Pod) -> list[tuple[str, str]]:
        return [(reason, message) for _, reason, message, _ in self._pod_events.get((pod.namespace, pod.name), ())]

    # ----------------------------------------------------------------- workloads
    def _unfile_workload(self, key: Key) -> None:
        filed = self._wl_filed.pop(key, None)
        if filed is None:
            return
        what, cq = filed
        if what == "pending":
            at = self._pending_at.pop(key, None)
            lst = self._pending.get(cq)
            if at is not None and lst is not None:
                i = bisect.bisect_left(lst, (at[1], key))
                if i < len(lst) and lst[i] == (at[1], key):
                    del lst[i]
                if not lst:
                    del self._pending[cq]
        elif what == "admitted":
            self._admitted.pop(key, None)
            self._not_running.discard(key)
            self._util.pop(key, None)
            self._idle.pop(key, None)
            self._admitted_by_cq[cq] -= 1
            if not self._admitted_by_cq[cq]:
                del self._admitted_by_cq[cq]

    def _file_workload(self, key: Key, now: float) -> None:
        self._unfile_workload(key)
        store = self.store
        wl = store.get(K.WORKLOADS, key)
        if not isinstance(wl, Workload):
            if self._evictions.pop(key, None) is not None:
                self._evictions_version += 1
            self._explained.pop(key, None)
            return
        st = derive_state(wl, now)
        cq = wl.admission.cluster_queue if wl.admission is not None else ""
        if not cq:
            lq = store.get(K.LOCAL_QUEUES, (wl.namespace, wl.queue_name))
            cq = lq.cluster_queue if isinstance(lq, LocalQueue) else ""
        self._file_eviction(key, wl, cq)
        if st.phase in WAITING_PHASES:
            created = wl.meta.creation or now
            self._wl_filed[key] = ("pending", cq)
            self._pending_at[key] = (cq, created)
            bisect.insort(self._pending.setdefault(cq, []), (created, key))
        elif st.phase is Phase.ADMITTED:
            self._wl_filed[key] = ("admitted", cq)
            self._admitted_by_cq[cq] = self._admitted_by_cq.get(cq, 0) + 1
            pods = [store.get(K.PODS, p) for p in store.pods_of_workload(key)]
            pods = [p for p in pods if isinstance(p, Pod)]
            for p in pods:
                self._pod_wl[(p.namespace, p.name)] = key
            waiting = tuple(p for p in pods if PE.pod_cause(p).cause in PE.NOT_RUNNING)
            adm = wl.condition("Admitted")
            pr = wl.condition("PodsReady")
            self._admitted[key] = _Admitted(cq, adm.last_transition if adm else None, waiting, len(pods),
                                            wl.requeue_state.count if wl.requeue_state else 0,
                                            pr is None or pr.is_true)
            if waiting:
                self._not_running.add(key)
            self._file_util(key)
        else:
            self._explained.pop(key, None)

    def _file_util(self, key: Key) -> None:
        """Mean utilisation of an admitted workload's GPUs with a current sample."""
        self._util.pop(key, None)
        self._idle.pop(key, None)
        gpus = self.store.gpus_of_workload(key)
        for g in gpus:
            self._gpu_wl[g.key] = key
        utils = [g.util for g in gpus if g.util is not None and not g.stale]
        if utils:
            u = self._util[key] = (sum(utils) / len(utils), len(gpus))
            if u[0] < self.idle_below:
                self._idle[key] = u

    def _file_eviction(self, key: Key, wl: Workload, cq: str) -> None:
        # Evicted=True carries the eviction's time; once the workload is back (Evicted=False) its
        # time is when the eviction ended, so only evictions seen while True are counted.
        ev = wl.condition("Evicted")
        if ev is None or ev.last_transition is None or not ev.is_true:
            return
        pre = wl.condition("Preempted")
        reason = ev.reason or "Evicted"
        if pre is not None and pre.is_true and pre.reason and reason == "Preempted":
            reason = f"Preempted/{pre.reason}"
        total = max(sum(e.count for e in wl.evictions), wl.requeue_state.count if wl.requeue_state else 0)
        old = self._evictions.get(key)
        times = old.times if old is not None else []
        if ev.last_transition not in times:
            times.append(ev.last_transition)
            old = None
        new = _Eviction(cq, reason, times, max(total, len(times)))
        if new != old:
            self._evictions[key] = new
            self._evictions_version += 1

    # ----------------------------------------------------------------- pods, nodes, GPUs
    def _file_pod(self, pkey: Key) -> set[Key]:
        """Refile a pod's GPUs on its node; the workload(s) whose causes it changes."""
        store = self.store
        self._gpu_totals = None
        self._fits.clear()
        self._free = None
        old = self._pod_used.pop(pkey, None)
        if old is not None:
            self._used[old[0]] -= old[1]
        pod = store.get(K.PODS, pkey)
        out = set()
        if (w := self._pod_wl.pop(pkey, None)) is not None:
            out.add(w)
        if isinstance(pod, Pod):
            if pod.node_name and pod.phase not in ("Succeeded", "Failed") and pod.gpus:
                self._pod_used[pkey] = (pod.node_name, pod.gpus)
                self._used[pod.node_name] = self._used.get(pod.node_name, 0) + pod.gpus
            if (w := store.workload_of_pod(pkey)) is not None:
                self._pod_wl[pkey] = w
                out.add(w)
        return out

    def _flavors(self) -> tuple[ResourceFlavor, ...]:
        """Flavors some ClusterQueue offers GPUs in (all flavors when no queue names GPUs)."""
        if self._gpu_flavors is None:
            names = set()
            for cq in self.store.objects(K.CLUSTER_QUEUES).values():
                if isinstance(cq, ClusterQueue):
                    for g in cq.resource_groups:
                        if GPU_RESOURCE in g.covered:
                            names.update(f.name for f in g.flavors)
            flavors = [f for f in self.store.objects(K.RESOURCE_FLAVORS).values() if isinstance(f, ResourceFlavor)]
            self._gpu_flavors = tuple(f for f in flavors if f.name in names) if names else tuple(flavors)
        return self._gpu_flavors

    def _file_node(self, key: Key) -> None:
        name = key[1]
        self._gpu_totals = None
        self._fits.clear()
        self._free = None
        node = self.store.get(K.NODES, key)
        self._node_bad.pop(name, None)
        self._unusable.pop(name, None)
        if not isinstance(node, Node):
            self._nodes.pop(name, None)
            return
        self._nodes[name] = node
        if not node.gpus:
            return
        ready = find_condition(node.conditions, "Ready")
        if not node.ready:
            self._node_bad[name] = ("NotReady", ready.last_transition if ready else None)
        elif node.unschedulable:
            self._node_bad[name] = ("cordoned", None)
        why = _unusable(node, self._flavors())
        if why:
            self._unusable[name] = why

    def _file_gpus(self, gkeys: Iterable[tuple[str, str]]) -> set[Key]:
        store = self.store
        out: set[Key] = set()
        by_node: dict[str, set[tuple[str, str]]] = {}
        for g in gkeys:
            by_node.setdefault(g[0], set()).add(g)
            if (w := self._gpu_wl.pop(g, None)) is not None:
                out.add(w)
        for node, keys in by_node.items():
            samples = {s.key: s for s in store.gpus_on_node(node)}
            for g in keys:
                self._faulty.pop(g, None)
                s = samples.get(g)
                if s is None:
                    continue
                if s.faulty:
                    parts = ([f"XID {s.xid}"] if s.xid else []) + ([f"{s.ecc_dbe:.0f} ECC DBE"] if s.ecc_dbe else [])
                    self._faulty[g] = ", ".join(parts)
                if s.pod and (w := store.workload_of_pod((s.namespace, s.pod))) is not None:
                    self._gpu_wl[g] = w
                    out.add(w)
        return out

    # ----------------------------------------------------------------- other kinds
    def _file_pr(self, key: Key) -> None:
        self._prs.pop(key, None)
        pr = self.store.get(K.PROVISIONING_REQUESTS, key)
        if not isinstance(pr, ProvisioningRequest):
            return
        wl = next((o.name for o in pr.meta.owners if o.kind == "Workload"), "")
        for bad in ("Failed", "CapacityRevoked"):
            c = find_condition(pr.conditions, bad)
            if c is not None and c.is_true:
                self._prs[key] = (bad, c.message or c.reason, c.last_transition, wl)
                return
        prov = find_condition(pr.conditions, "Provisioned")
        if prov is None or not prov.is_true:
            msg = (prov.message or prov.reason) if prov is not None else "no Provisioned condition yet"
            self._prs[key] = ("waiting", msg, pr.meta.creation, wl)

    def _file_queue(self, kind: str, key: Key) -> None:
        self._queues.pop((kind, key), None)
        q = self.store.get(kind, key)
        if not isinstance(q, (ClusterQueue, LocalQueue)):
            return
        if q.stop_policy and q.stop_policy != "None":
            self._queues[(kind, key)] = (f"Stopped({q.stop_policy})", None)
            return
        c = find_condition(q.conditions, "Active")
        if c is not None and not c.is_true:
            self._queues[(kind, key)] = (f"Inactive({c.reason or '?'})", c.last_transition)

    def _file_check(self, key: Key) -> None:
        self._checks.pop(key[1], None)
        ac = self.store.get(K.ADMISSION_CHECKS, key)
        if isinstance(ac, AdmissionCheck) and not ac.active:
            c = find_condition(ac.conditions, "Active")
            self._checks[key[1]] = (c.reason or c.message) if c is not None else "?"

    # ================================================================= reading
    def oldest_pending(self, cq: str) -> tuple[float, Key] | None:
        lst = self._pending.get(cq)
        return lst[0] if lst else None

    def pending_count(self, cq: str) -> int:
        return len(self._pending.get(cq, ()))

    def summary(self) -> tuple[int, int, int, int]:
        """(workloads waiting, admitted, GPUs requested by placed pods, GPUs allocatable on nodes)."""
        if self._gpu_totals is None:  # again only after nodes or pods changed
            total = sum(n.gpus for n in self._nodes.values())
            used = sum(min(n.gpus, self._used.get(name, 0)) for name, n in self._nodes.items())
            self._gpu_totals = (used, total)
        return len(self._pending_at), len(self._admitted), *self._gpu_totals

    def free_gpus(self) -> dict[str, int]:
        """Free GPUs per GPU node (read-only: kept until a pod or a node changes)."""
        if self._free is None:
            self._free = {n: node.gpus - self._used.get(n, 0) for n, node in self._nodes.items() if node.gpus}
        return self._free

    def queue_lines(self, now: float) -> list[QueueLine]:
        """Every ClusterQueue, most trouble first: stopped or inactive, then workloads waiting too
        long, admitted workloads not running, recent evictions, pending, the oldest wait."""
        stuck: dict[str, int] = {}
        for key in self._not_running:
            a = self._admitted.get(key)
            if a is not None:
                stuck[a.cq] = stuck.get(a.cq, 0) + 1
        for cq, n in self._churn_digest(now).by_cq.items():
            stuck[cq] = stuck.get(cq, 0) + n
        out = []
        for key, cq in self.store.objects(K.CLUSTER_QUEUES).items():
            if not isinstance(cq, ClusterQueue):
                continue
            name = key[1]
            status = self._queues.get((K.CLUSTER_QUEUES, key), ("Active", None))[0]
            if status == "Active" and find_condition(cq.conditions, "Active") is None:
                status = "?"
            pending = self.pending_count(name)
            oldest = self.oldest_pending(name)
            wait = now - oldest[0] if oldest else None
            lst = self._pending.get(name, [])
            late = bisect.bisect_right(lst, (now - self.wait_after, ("\uffff", ""))) if lst else 0
            trouble = ((1e9 if status not in ("Active", "?") else 0) + late * 1e5 + stuck.get(name, 0) * 1e3
                       + pending * 10 + (wait or 0) / 3600)
            out.append(QueueLine(name, pending, self._admitted_by_cq.get(name, 0), wait, trouble, status))
        out.sort(key=lambda q: (-q.trouble, q.name))
        return out

    def problems(self, now: float) -> list[Problem]:
        out: list[Problem] = []
        out += self._broken(now)
        out += self._not_running_problems(now)
        out += self._waiting(now)
        out += self._churn_problems(now)
        out += self._waste(now)
        out.sort(key=lambda p: (-p.severity, -p.count, -(p.oldest or 0.0), p.text))
        return self._fold(out)

    def _fold(self, problems: list[Problem]) -> list[Problem]:
        """At most `max_lines` lines of one kind (per-queue lines on a big cluster): the rest
        as one line after them."""
        seen: dict[str, list[Problem]] = {}
        out: list[Problem] = []
        for p in problems:
            same = seen.setdefault(p.kind, [])
            same.append(p)
            if len(same) <= self.max_lines:
                out.append(p)
        for kind, same in seen.items():
            if len(same) > self.max_lines:
                rest = same[self.max_lines:]
                ages = [p.oldest for p in rest if p.oldest is not None]
                at = out.index(same[self.max_lines - 1]) + 1
                out.insert(at, Problem(rest[0].severity, rest[0].category, f"{kind}-more",
                                       f"... and {len(rest)} more lines like these", sum(p.count for p in rest),
                                       max(ages) if ages else None))
        return out

    # ----------------------------------------------------------------- broken
    def _broken(self, now: float) -> list[Problem]:
        out = []
        for name, st in sorted(self.store.sources().items()):
            if st.stale(now):
                msg = f": {clean(st.message)}" if st.message else ""
                out.append(Problem(BROKEN + 5, "broken", "source", f"data source {clean(name)} is {st.state.value}"
                                   f" (data {age_text(st.age(now))} old){msg}", 1, st.age(now)))
        if self._node_bad:
            names = sorted(self._node_bad)
            gpus = sum(self._nodes[n].gpus for n in names if n in self._nodes)
            since = [now - s for _, s in self._node_bad.values() if s is not None]
            kinds = sorted({k for k, _ in self._node_bad.values()})
            out.append(Problem(BROKEN + 3, "broken", "nodes", f"{_plural(len(names), 'GPU node')} {' or '.join(kinds)}"
                               f" ({_plural(gpus, 'GPU')} out): " + ", ".join(clean(n) for n in names[:3])
                               + (" ..." if len(names) > 3 else ""), len(names), max(since) if since else None,
                               Target("nodes", name_filter(("", n) for n in names))))
        if self._faulty:
            keys = sorted(self._faulty)
            nodes = sorted({k[0] for k in keys})
            first = f"{clean(keys[0][0])} GPU {clean(keys[0][1])}: {self._faulty[keys[0]]}"
            out.append(Problem(BROKEN + 3, "broken", "gpu-errors", f"{_plural(len(keys), 'GPU')} with XID/ECC errors on "
                               f"{_plural(len(nodes), 'node')}: {first}" + (" ..." if len(keys) > 1 else ""),
                               len(keys), None, Target("gpus", word_filter(nodes[0]) if len(nodes) == 1 else "")))
        failed = {k: v for k, v in self._prs.items() if v[0] != "waiting"}
        stuck = {k: v for k, v in self._prs.items() if v[0] == "waiting" and v[2] is not None
                 and now - v[2] > self.stuck_after}
        for label, prs, kind in (("failed", failed, "provreq-failed"), ("stuck", stuck, "provreq-stuck")):
            if not prs:
                continue
            keys = sorted(prs)
            k0 = keys[0]
            state, msg, since, wl = prs[k0]
            ages = [now - v[2] for v in prs.values() if v[2] is not None]
            what = state if label == "failed" else f"not provisioned after {age_text(now - since if since else None)}"
            target = Target(workload=(k0[0], wl)) if len(keys) == 1 and wl else \
                Target("workloads", name_filter((k[0], v[3]) for k, v in prs.items() if v[3]))
            out.append(Problem(BROKEN + 1, "broken", kind, f"{_plural(len(keys), 'ProvisioningRequest')} {label}: "
                               f"{clean(k0[1])} {what}" + (f": {clean(msg)}" if msg else ""), len(keys),
                               max(ages) if ages else None, target))
        for name, why in sorted(self._checks.items()):
            out.append(Problem(BROKEN, "broken", "check", f"AdmissionCheck {clean(name)} is not Active ({clean(why)}): "
                               "its queues admit nothing", 1, None, Target(kind=K.ADMISSION_CHECKS, key=("", name))))
        for (kind, key), (status, since) in sorted(self._queues.items()):
            label = "ClusterQueue" if kind == K.CLUSTER_QUEUES else "LocalQueue"
            name = key[1] if kind == K.CLUSTER_QUEUES else f"{key[0]}/{key[1]}"
            waiting = self.pending_count(key[1]) if kind == K.CLUSTER_QUEUES else 0
            view = "clusterqueues" if kind == K.CLUSTER_QUEUES else "localqueues"
            out.append(Problem(BROKEN - 2, "broken", "queue", f"{label} {clean(name)} {clean(status)}"
                               + (f", {_plural(waiting, 'workload')} waiting" if waiting else ""), max(1, waiting),
                               now - since if since else None, Target(view, word_filter(key[1])),
                               key[1] if kind == K.CLUSTER_QUEUES else ""))
        return out

    # ----------------------------------------------------------------- admitted but not running
    def _not_running_problems(self, now: float) -> list[Problem]:
        if not self._not_running and not (self.config and self.config.wait_for_pods_ready):
            return []
        free = self.free_gpus()
        flavors = {f.name: f for f in self.store.objects(K.RESOURCE_FLAVORS).values() if isinstance(f, ResourceFlavor)}
        fits = self._fits
        # cause → {workload: (pods, message, since)}
        by_cause: dict[str, dict[Key, tuple[int, str, float | None]]] = {}
        frag: dict[tuple[str, int], dict[Key, float | None]] = {}
        for key in self._not_running:
            a = self._admitted.get(key)
            wl = self.store.get(K.WORKLOADS, key)
            if a is None or not isinstance(wl, Workload):
                continue
            worst: PE.PodCause | None = None
            n = 0
            for pod in a.pods:
                fl_name = PE.pod_flavor(wl, pod)
                fl = flavors.get(fl_name)
                fit = None
                if fl is not None and pod.gpus:
                    fk = (fl_name, pod.gpus)
                    fit = fits.get(fk)
                    if fit is None:
                        fit = fits[fk] = PE.pool_fit(fl, pod.gpus, self._nodes_of(fl), free)
                c = PE.pod_cause(pod, fit, self._events_of(pod))
                if c.cause not in PE.NOT_RUNNING:
                    continue
                n += 1
                if worst is None or PE.CAUSE_RANK[c.cause] > PE.CAUSE_RANK[worst.cause]:
                    worst = c
                if c.cause == PE.FRAGMENTED and fit is not None:
                    frag.setdefault((fit.flavor, fit.need), {})[key] = a.since
            if worst is not None and worst.cause != PE.FRAGMENTED:
                by_cause.setdefault(worst.cause, {})[key] = (n, worst.message, a.since)
        out = []
        for (flavor, need), wls in sorted(frag.items()):
            fit = fits[(flavor, need)]
            ages = [now - s for s in wls.values() if s is not None]
            out.append(Problem(NOT_RUNNING + 6, "not running", "fragmentation",
                               f"{_plural(len(wls), 'admitted workload')} not running: "
                               f"{clean(PE.fragmentation_text(fit))}", len(wls), max(ages) if ages else None,
                               _target(wls)))
        labels = {PE.IMAGE_PULL: (5, "image pull failing"), PE.CRASH_LOOP: (5, "crash looping"),
                  PE.FAILED: (5, "pods failed"), PE.UNSCHEDULABLE: (4, "unschedulable"),
                  PE.PROVISIONING: (2, "waiting for ProvisioningRequest nodes"),
                  PE.SCALE_UP: (1, "waiting for scale-up"), PE.GATED: (0, "pods gated"),
                  PE.STARTING: (0, "pods starting")}
        for cause, wls in by_cause.items():
            bump, label = labels.get(cause, (0, cause))
            pods = sum(v[0] for v in wls.values())
            ages = [now - v[2] for v in wls.values() if v[2] is not None]
            oldest_key = max(wls, key=lambda k: (now - (wls[k][2] or now), k))
            msg = wls[oldest_key][1]
            out.append(Problem(NOT_RUNNING + bump, "not running", cause,
                               f"{_plural(len(wls), 'admitted workload')} not running, {label} "
                               f"({_plural(pods, 'pod')})" + (f": {clean(msg)}" if msg else ""), len(wls),
                               max(ages) if ages else None, _target(wls)))
        out += self._pods_ready(now)
        return out

    def _nodes_of(self, flavor: ResourceFlavor) -> list[Node]:
        nodes = self._flavor_nodes.get(flavor.name)
        if nodes is None:
            nodes = self._flavor_nodes[flavor.name] = [n for n in self._nodes.values()
                                                       if PE.flavor_matches_node(flavor, n)]
        return nodes

    def _pods_ready(self, now: float) -> list[Problem]:
        """Kueue's waitForPodsReady: an admitted workload whose pods are not ready `timeout` after
        admission is evicted (PodsReadyTimeout) and requeued after base·2^(n−1) s, n its
        requeue count (reference/kueue.md §6.8)."""
        w = self.config.wait_for_pods_ready if self.config else None
        if w is None or not w.timeout_seconds:
            return []
        late = {k: a for k, a in self._admitted.items() if not a.pods_ready and a.since is not None}
        if not late:
            return []
        left = {k: a.since + w.timeout_seconds - now for k, a in late.items()}  # type: ignore[operator]
        first = min(left, key=lambda k: (left[k], k))
        n = late[first].requeues + 1  # the eviction to come is the workload's n-th
        backoff = min(w.backoff_max_seconds, w.backoff_base_seconds * 2 ** (n - 1))
        limit = (f", limit {w.backoff_limit_count}" if w.backoff_limit_count is not None else "")
        ages = [now - a.since for a in late.values() if a.since is not None]
        return [Problem(NOT_RUNNING + 3, "not running", "pods-ready",
                        f"{_plural(len(late), 'workload')} without ready pods: PodsReady timeout in "
                        f"{age_text(max(0.0, left[first]))} for {clean(first[0])}/{clean(first[1])} "
                        f"(requeued {late[first].requeues} times{limit}, then backoff {age_text(backoff)})",
                        len(late), max(ages) if ages else None, _target(late))]

    # ----------------------------------------------------------------- waiting too long
    def _waiting(self, now: float) -> list[Problem]:
        out = []
        budget = [self.explain_budget]
        cut = (now - self.wait_after, ("\uffff", ""))
        lines = []
        for cq, lst in self._pending.items():
            late = bisect.bisect_right(lst, cut)
            if late:
                lines.append((late, now - lst[0][0], cq, lst[0][1]))
        lines.sort(key=lambda x: (-x[0], -x[1], x[2]))
        if len(lines) > self.max_lines:
            rest = lines[self.max_lines:]
            lines = lines[:self.max_lines]
            out.append(Problem(WAITING, "waiting", "waiting-more",
                               f"... and {_plural(len(rest), 'more ClusterQueue')} with "
                               f"{_plural(sum(x[0] for x in rest), 'workload')} pending over {age_text(self.wait_after)}",
                               sum(x[0] for x in rest), max(x[1] for x in rest), Target("workloads", "state:pending")))
        for late, wait, cq, oldest in lines:
            keys = [k for _, k in self._pending[cq][:late]] if late <= 40 else None
            headline = self._headline(oldest, now, budget)
            where = f"ClusterQueue {clean(cq)}" if cq else "no ClusterQueue"
            out.append(Problem(WAITING + min(5, late // 10), "waiting", "waiting",
                               f"{where}: {_plural(late, 'workload')} pending over {age_text(self.wait_after)},"
                               f" oldest {age_text(wait)}" + (f": {headline}" if headline else ""),
                               late, wait, _target(keys) if keys else
                               Target("workloads", f"state:pending {word_filter(cq)}" if cq else "state:pending"), cq))
        return out

    def _headline(self, key: Key, now: float, budget: list[int]) -> str:
        """The explain verdict of `key`, computed once per resourceVersion: here while the budget
        lasts, else left in `wanted_explains` for the caller to compute off its UI thread."""
        wl = self.store.get(K.WORKLOADS, key)
        if not isinstance(wl, Workload):
            return ""
        cached = self._explained.get(key)
        if cached is not None and cached[0] == wl.meta.resource_version:
            return cached[1]
        if budget[0] <= 0:
            if key not in self._want:
                self._want.append(key)
            return cached[1] if cached else ""
        budget[0] -= 1
        return self.explain_now(key, now)

    def wanted_explains(self) -> list[Key]:
        """Workloads whose headline the last `problems` wanted but did not compute (and forgets them)."""
        out, self._want = self._want, []
        return out

    def explain_now(self, key: Key, now: float) -> str:
        """Explain `key` and keep its headline (one caller at a time: the queue state is reused)."""
        wl = self.store.get(K.WORKLOADS, key)
        if not isinstance(wl, Workload):
            return ""
        try:
            # One queue state kept across calls: its workload index is patched, not rebuilt.
            verdict = explain(self.store.snapshot(), key, now, self._queue_state, self._engine).verdict
        except Exception as e:  # the engine must never take the board down
            verdict = f"explain unavailable: {type(e).__name__}"
        headline = clean(verdict.split("; ")[0])
        self._explained[key] = (wl.meta.resource_version, headline)
        return headline

    # ----------------------------------------------------------------- churn
    def _churn_digest(self, now: float) -> _ChurnDigest:
        """The evictions in the window, summed up once: the sums hold until an eviction is filed
        or unfiled, or the oldest one leaves the window (a big cluster has thousands in it, and
        the board asks on every refresh)."""
        d = self._churn
        if d is not None and d.version == self._evictions_version and d.at <= now < d.until:
            return d
        since = now - self.churn_window
        groups: dict[tuple[str, str], list[tuple[Key, float]]] = {}
        thrash: dict[Key, int] = {}
        by_cq: dict[str, int] = {}
        first = float("inf")
        for key, ev in list(self._evictions.items()):
            ev.times[:] = [t for t in ev.times if t >= since]
            if not ev.times:  # nothing in the window (Kueue's totals come back with the next eviction)
                del self._evictions[key]
                continue
            for t in ev.times:
                groups.setdefault((ev.reason, ev.cq), []).append((key, t))
            first = min(first, *ev.times)
            by_cq[ev.cq] = by_cq.get(ev.cq, 0) + len(ev.times)
            if ev.total > 2:
                thrash[key] = ev.total
        lines = []
        minutes = self.churn_window / 60
        for (reason, cq), items in groups.items():
            keys = {k for k, _ in items}
            verb = "preempted" if reason.startswith("Preempted") else "evicted"
            why = reason.split("/", 1)[1] if "/" in reason else reason
            lines.append((CHURN + (2 if verb == "preempted" else 1), verb,
                          f"{len(items)} {verb} in {age_text(self.churn_window)} from ClusterQueue "
                          f"{clean(cq) or '?'} ({clean(why)}), {len(items) / minutes:.1f}/min",
                          len(items), min(t for _, t in items), _target(keys), cq))
        worst = None
        if thrash:
            k = max(thrash, key=lambda k: (thrash[k], k))
            worst = Problem(CHURN + 4, "churn", "thrashing",
                            f"{_plural(len(thrash), 'workload')} thrashing (evicted more than twice): "
                            f"{clean(k[0])}/{clean(k[1])} evicted {thrash[k]} times", len(thrash), None,
                            _target(thrash))
        self._churn = _ChurnDigest(self._evictions_version, now, first + self.churn_window, tuple(lines), worst,
                                   by_cq)
        return self._churn

    def _churn_problems(self, now: float) -> list[Problem]:
        d = self._churn_digest(now)
        out = [Problem(severity, "churn", verb, text, n, now - first, target, cq)
               for severity, verb, text, n, first, target, cq in d.lines]
        if d.thrashing is not None:
            out.append(d.thrashing)
        return out

    # ----------------------------------------------------------------- waste
    def _waste(self, now: float) -> list[Problem]:
        out = []
        idle = self._idle
        if idle:
            gpus = sum(v[1] for v in idle.values())
            ages = [now - self._admitted[k].since for k in idle  # type: ignore[operator]
                    if k in self._admitted and self._admitted[k].since is not None]
            out.append(Problem(WASTE + 2, "waste", "idle", f"{_plural(len(idle), 'admitted workload')} leave "
                               f"{_plural(gpus, 'GPU')} idle (under {self.idle_below:.0f} %)", len(idle),
                               max(ages) if ages else None, _target(idle)))
        if self._unusable:
            names = sorted(self._unusable)
            gpus = sum(self._nodes[n].gpus for n in names if n in self._nodes)
            out.append(Problem(WASTE, "waste", "unusable-nodes",
                               f"{_plural(len(names), 'node')} with {_plural(gpus, 'GPU')} no flavor can use: "
                               f"{clean(names[0])} ({clean(self._unusable[names[0]])})" + (" ..." if len(names) > 1 else ""),
                               len(names), None, Target("nodes", name_filter(("", n) for n in names))))
        return out


def _target(keys: Iterable[Key]) -> Target:
    keys = sorted(keys)
    if len(keys) == 1:
        return Target(workload=keys[0])
    return Target("workloads", name_filter(keys))


def _unusable(node: Node, flavors: Iterable[ResourceFlavor]) -> str:
    """Why no flavor can place pods on this node ('' when one can): a flavor's pods carry its
    nodeLabels as nodeSelector and its tolerations (Kueue injects both at admission), so the node
    must have the labels, and each NoSchedule/NoExecute taint must be tolerated or declared."""
    flavors = list(flavors)
    if not flavors:
        return "no ResourceFlavor"
    labels = node.meta.labels
    hard = [t for t in node.taints if t.effect in ("NoSchedule", "NoExecute")]
    why = ""
    for f in flavors:
        if any(labels.get(k) != v for k, v in f.node_labels.items()):
            why = why or "labels match no flavor"
            continue
        untolerated = [t for t in hard if not tolerated(t, f.tolerations)
                       and not any(d.key == t.key and d.effect == t.effect for d in f.node_taints)]
        if untolerated:
            why = f"taint {untolerated[0].key}={untolerated[0].value}:{untolerated[0].effect} tolerated by no flavor"
            continue
        return ""
    return why
