"""Every structure the engine keeps between calls, in one object the caller owns.

Kueue splits its scheduler this way: pkg/cache holds what outlives a cycle (the ClusterQueues'
usage, the cohort tree), pkg/scheduler runs the plain algorithm over a snapshot of it. Here the
algorithms (queue_order, flavor_assignment, preemption_classical, preemption_fair, cycle) are
functions of their inputs; what makes them fast on a busy cluster — an index patched from one
snapshot to the next, a quota tree followed instead of rebuilt, answers remembered while the
objects they came from are the same — lives in the named fields of an `EngineCache`.

Whoever runs the engine creates one cache per cluster it follows (the simulator's Kueue
controller, a preview, a forecast, a benchmark) and passes it to every call; a call without a
cache gets a fresh one (correct, without the between-call speed). Inputs are never changed:
what changes lives here. A cache is for one caller at a time: the engine holds `lock` while it
reads or changes the cache, so two threads sharing one wait for each other rather than mix
answers; threads that want to run at once use one cache each.

`EngineCache(fast_paths=False)` turns every shortcut off: each call builds what it needs from
the snapshot and the plain algorithms run (the differential tests compare both).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from kueuetop.admission.object_memo import ObjectMemo
from kueuetop.admission.queue_order import HeadsMemo
from kueuetop.admission.quota_tree import KeptQuotaTree
from kueuetop.admission.workload_index import WorkloadIndex
from kueuetop.kueue.parse_cache import ParseCache

if TYPE_CHECKING:
    from kueuetop.kueue.snapshot import ClusterSnapshot

V = TypeVar("V")
CANDIDATES_LIMIT = 100_000  # preemption answers kept (keys include the preemptor's class)


class PartsMemo(Generic[V]):
    """One value derived from a few mappings of a snapshot, kept while the snapshot hands the
    very same mapping objects (a simulator or store shares unchanged kinds between snapshots).
    The mappings are held, so an identity is never reused while the value is kept."""

    __slots__ = ("_parts", "_value")

    def __init__(self) -> None:
        self._parts: tuple | None = None
        self._value: Any = None

    def get(self, parts: tuple, compute: Callable[[], V]) -> V:
        kept = self._parts
        if kept is None or len(kept) != len(parts) or any(a is not b for a, b in zip(parts, kept, strict=True)):
            self._value, self._parts = compute(), parts
        return self._value  # type: ignore[no-any-return]


@dataclass(eq=False)
class EngineCache:
    """What the engine keeps for one followed cluster; see the module docstring."""

    fast_paths: bool = True  # False: every field below is left alone and the plain algorithms run
    # Held by schedule() and explain() while they read or change this cache.
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    # Parsed conditions, pod sets and quantities shared by the followed cluster's objects and
    # their versions (kueue/parse_cache.py): the caller parses with it; bounded, cleared when full.
    parse: ParseCache = field(default_factory=ParseCache, repr=False)
    # Per ClusterQueue, the quota-holding and the queued workloads of the last snapshot given;
    # patched from the workloads that changed, rebuilt when LocalQueues or the config change.
    index: WorkloadIndex = field(default_factory=WorkloadIndex, repr=False)
    # The ClusterQueues' usage as a quota tree, kept between cycles; follows `usage_changed`,
    # rebuilt when the quota structure is another object.
    quota_tree: KeptQuotaTree = field(default_factory=KeptQuotaTree, repr=False)
    # ClusterQueues whose usage moved in the index since `quota_tree` last followed it (None:
    # any, after the index was rebuilt); taken by the next cycle that needs a tree.
    usage_changed: set[str] | None = None
    # The cohort tree and quotas of (cluster_queues, cohorts); new when either mapping is.
    quota_structure: PartsMemo = field(default_factory=PartsMemo, repr=False)
    # Per ClusterQueue its Active status, filled as asked, for (cluster_queues, flavors,
    # admission_checks, cohorts); new when any of them is another mapping.
    active_status: PartsMemo = field(default_factory=PartsMemo, repr=False)
    # The same as name → bool for every ClusterQueue (a cycle asks for all); same lifetime.
    active_map: PartsMemo = field(default_factory=PartsMemo, repr=False)
    # Per cohorted ClusterQueue, every ClusterQueue of its cohort tree; for (cluster_queues, cohorts).
    cohort_trees: PartsMemo = field(default_factory=PartsMemo, repr=False)
    # Per parsed ClusterQueue object, its allocatable-resources fingerprint (LastAssignment).
    cq_fingerprints: ObjectMemo = field(default_factory=ObjectMemo, repr=False)
    # Per pod-set tuple (parsing shares equal ones), the workload shape hash (LastAssignment).
    workload_shapes: ObjectMemo = field(default_factory=ObjectMemo, repr=False)
    # Per (resource group, flavors mapping) pair, the node label keys of the group's flavors;
    # kept by identity of both (snapshots are never changed), cleared past 4,096 pairs.
    label_keys: dict = field(default_factory=dict, repr=False)
    # Per quota-tree ClusterQueue node, the other ClusterQueues of its cohort tree.
    cohort_others: ObjectMemo = field(default_factory=ObjectMemo, repr=False)
    # Preemption answers derived from one ClusterQueue's quota-holding workloads (candidate
    # lists, pools, priority bounds), each checked against the index's versions of that queue;
    # emptied when the index is rebuilt or past CANDIDATES_LIMIT entries.
    candidates: dict = field(default_factory=dict, repr=False)
    # Size of `candidates` at which its stale answers are next swept out (preemption_classical).
    candidates_sweep_at: int = 0
    # queue_order's head scans and the last heads() answers, with the queues changed since;
    # new when the index is rebuilt.
    heads: HeadsMemo = field(default_factory=HeadsMemo, repr=False)
    # (last_assignments mapping, index.serial) the cycle last pruned that mapping against.
    pruned: tuple[Mapping, int] | None = field(default=None, repr=False)
    # Per parked head, its last flavor assignment, reused while every answer it was made of is
    # the same (admission/parked_verdicts.py). None: off; a forecast's forward run sets it.
    parked_verdicts: dict | None = field(default=None, repr=False)

    def workload_index(self, snapshot: ClusterSnapshot) -> WorkloadIndex:
        """The index of `snapshot`: the kept one patched (fast paths), else one built afresh.
        Patching takes the lock (a caller outside schedule/explain may share the cache); the
        index is the cache's: read it while nothing else patches it."""
        if not self.fast_paths:
            return WorkloadIndex().update(snapshot)
        with self.lock:
            index = self.index.update(snapshot)
            if index.rebuilt:
                self.usage_changed = None
                self.heads = HeadsMemo()
                self.candidates.clear()
                self.candidates_sweep_at = 0  # the next lookup sets it (preemption_classical._cq_memo)
                self.pruned = None
            else:
                if self.usage_changed is not None:
                    self.usage_changed |= index.usage_changed
                self.heads.dirty |= index.pending_changed
            return index

    def candidate_memo(self) -> dict:
        """`candidates`, emptied first when it grew past its limit (a fresh dict without fast paths)."""
        if not self.fast_paths:
            return {}
        if len(self.candidates) > CANDIDATES_LIMIT:
            self.candidates.clear()
        return self.candidates
