"""What Kueue's queue manager remembers between scheduling cycles, as an immutable value.

- the inadmissible set per ClusterQueue (BestEffortFIFO parks failed heads there; StrictFIFO only
  for namespace mismatches) — workloads leave it when something changes in their CQ or anywhere
  in its cohort tree (`requeue_inadmissible`), or when their own spec changes;
- the last flavor assignment per workload (`LastAssignment`), so the next attempt resumes after
  the flavor tried last; dropped when the CQ's quotas/flavors or the workload's shape change,
  after preemptions were issued, and after a "skipped" attempt;
- the sticky preemptor head per BestEffortFIFO ClusterQueue;
- the preemptor per ClusterQueue (any strategy) with the generation it preempted at, for the
  PrioritizePreemptorWorkloads gate (Kueue's `preemptorWorkload`, matched strictly).

The engine's incremental structures (the workload index among them) live in an EngineCache.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from kueuetop.kueue.cluster_queue import ClusterQueue
from kueuetop.kueue.snapshot import ClusterSnapshot, WorkloadKey
from kueuetop.kueue.workload import Workload

if TYPE_CHECKING:
    from kueuetop.admission.engine_cache import EngineCache

_EMPTY: Mapping = MappingProxyType({})


class ParkedSets(dict):
    """The inadmissible sets per ClusterQueue, made from an earlier mapping by changing the
    sets of `changed` queues (the others are the very same objects). The heads of a cycle are
    recomputed for the queues whose sets changed: this answers which without comparing every
    queue's set (1,000 on `xl`) each cycle. Only the last few links are kept (a new mapping
    cuts the chain behind them), so the mappings of past cycles are freed."""

    __slots__ = ("_base", "changed")
    KEEP = 4  # links kept behind the newest mapping

    def __init__(self, items: Mapping, base: Mapping, changed: Iterable[str]) -> None:
        super().__init__(items)
        self._base: Mapping | None = base
        self.changed = frozenset(changed)
        anc: Mapping | None = base
        for _ in range(self.KEEP - 1):
            anc = anc._base if isinstance(anc, ParkedSets) else None
        if isinstance(anc, ParkedSets):
            anc._base = None

    def changed_since(self, old: Mapping) -> set[str] | None:
        """Every queue whose set may be another object here than in `old` (None: `old` is not
        among the links kept)."""
        out: set[str] = set()
        cur: Mapping | None = self
        while cur is not old:
            if not isinstance(cur, ParkedSets):
                return None
            out |= cur.changed
            cur = cur._base
        return out


def cq_fingerprint(cq: ClusterQueue | None, cache: EngineCache | None = None) -> int:
    """Changes when the CQ's allocatable resources change (Kueue's AllocatableResourceGeneration).

    Kept per parsed object in the cache: every nomination asks, and the repr of the resource
    groups was a twentieth of a busy scheduler's time."""
    if cq is None:
        return 0
    if cache is None or not cache.fast_paths:
        return _fingerprint_of(cq)
    return cache.cq_fingerprints.get(cq, _fingerprint_of)


def _fingerprint_of(cq: ClusterQueue) -> int:
    return hash(repr((cq.resource_groups, cq.cohort)))


def workload_shape(wl: Workload, cache: EngineCache | None = None) -> int:
    """Changes when the workload's scheduling shape changes. Kept per pod-set tuple in the
    cache: parsing hands workloads of one spec the same tuple."""
    if cache is None or not cache.fast_paths:
        return _shape_of(wl.pod_sets)
    return cache.workload_shapes.get(wl.pod_sets, _shape_of)


def _shape_of(pod_sets: tuple) -> int:
    return hash(tuple((ps.name, ps.count, tuple(sorted(ps.requests.items()))) for ps in pod_sets))


@dataclass(frozen=True, slots=True)
class LastAssignment:
    """Last tried flavor index per pod set and resource (-1 = the last flavor was tried: wrap)."""

    tried: tuple[Mapping[str, int], ...]
    cq_fingerprint: int
    shape: int

    def next_flavor(self, pod_set: int, resource: str) -> int:
        if pod_set >= len(self.tried):
            return 0
        return self.tried[pod_set].get(resource, -1) + 1

    def valid_for(self, cq: ClusterQueue, wl: Workload, cache: EngineCache | None = None) -> bool:
        return self.cq_fingerprint == cq_fingerprint(cq, cache) and self.shape == workload_shape(wl, cache)


@dataclass(frozen=True)
class QueueState:
    # cq → workload → generation when it was parked (a spec change moves it back)
    inadmissible: Mapping[str, Mapping[WorkloadKey, int]] = field(default_factory=dict)
    last_assignments: Mapping[WorkloadKey, LastAssignment] = field(default_factory=dict)
    sticky: Mapping[str, WorkloadKey] = field(default_factory=dict)
    preemptors: Mapping[str, tuple[WorkloadKey, int]] = field(default_factory=dict)

    def is_inadmissible(self, cq: str, wl: Workload) -> bool:
        """Parked in the ClusterQueue's inadmissible set at the workload's current generation."""
        gen = self.inadmissible.get(cq, {}).get(wl.key)
        return gen is not None and gen == wl.meta.generation

    def is_preemptor(self, cq: str, wl: Workload) -> bool:
        """ClusterQueue.IsPreemptor: this workload, at this generation, issued the CQ's last
        preemptions and waits for them."""
        return self.preemptors.get(cq) == (wl.key, wl.meta.generation)

    def requeue_inadmissible(self, cq_names: Iterable[str]) -> QueueState:
        """Move every parked workload of these ClusterQueues back to their queues."""
        names = set(cq_names)
        if not names & self.inadmissible.keys():
            return self
        return replace(self, inadmissible=ParkedSets({k: v for k, v in self.inadmissible.items() if k not in names},
                                                     self.inadmissible, names & self.inadmissible.keys()))

    def requeue_all(self) -> QueueState:
        return replace(self, inadmissible={})

    def last_assignment(self, cq: ClusterQueue, wl: Workload, cache: EngineCache | None = None,
                        ) -> LastAssignment | None:
        la = self.last_assignments.get(wl.key)
        return la if la is not None and la.valid_for(cq, wl, cache) else None


def same_queue_state(a: QueueState, b: QueueState) -> bool:
    """True when `b` holds the very mappings `a` does. A cycle that changes nothing hands
    them back untouched, so this is how the simulator tells a fixpoint without comparing
    100,000 entries; equal contents in other objects count as a change (one extra cycle)."""
    return (a.inadmissible is b.inadmissible and a.last_assignments is b.last_assignments
            and a.sticky is b.sticky and a.preemptors is b.preemptors)


def _tree_of(snapshot: ClusterSnapshot, cache: EngineCache | None) -> dict[str, frozenset[str]]:
    """Per cohorted ClusterQueue, every CQ under the same cohort tree root. Kept in the cache
    while the snapshot's ClusterQueues and Cohorts are the same mappings (a busy cluster
    requeues after every finish, and walking a thousand queues for it was a fortieth of the run)."""
    if cache is None or not cache.fast_paths:
        return _cohort_trees(snapshot)
    return cache.cohort_trees.get((snapshot.cluster_queues, snapshot.cohorts), lambda: _cohort_trees(snapshot))


def _cohort_trees(snapshot: ClusterSnapshot) -> dict[str, frozenset[str]]:
    def root(cohort: str) -> str:
        seen: set[str] = set()
        while cohort and cohort not in seen:
            seen.add(cohort)
            obj = snapshot.cohorts.get(cohort)
            if obj is None or not obj.parent:
                return cohort
            cohort = obj.parent
        return cohort

    by_root: dict[str, set[str]] = {}
    for name, cq in snapshot.cluster_queues.items():
        if cq.cohort:
            by_root.setdefault(root(cq.cohort), set()).add(name)
    return {name: frozenset(members) for members in by_root.values() for name in members}


def _cohort_tree_members(snapshot: ClusterSnapshot, names: set[str], cache: EngineCache | None) -> set[str]:
    """Expand CQ names to every CQ sharing a cohort tree root with one of them."""
    trees = _tree_of(snapshot, cache)
    out = set(names)
    for n in names:
        members = trees.get(n)
        if members is not None:
            out |= members
    return out


def changed_cluster_queues(prev: ClusterSnapshot, cur: ClusterSnapshot, cache: EngineCache | None = None) -> set[str]:
    """ClusterQueues whose inadmissible workloads Kueue would requeue after prev → cur (Kueue:
    pkg/cache/queue/inadmissible_workloads.go requeueWorkloadsCQ / requeueWorkloadsCohort).

    Triggers (Kueue's queue manager QueueInadmissibleWorkloads): a workload holding quota
    finished, was deleted, evicted or released its reservation; a CQ, Cohort or ResourceFlavor
    was created, updated or deleted. The result covers the whole cohort tree of each trigger.
    """
    direct: set[str] = set()
    # Snapshots share the mappings of kinds that did not change: nothing to compare then.
    if prev.cluster_queues is not cur.cluster_queues:
        for name in prev.cluster_queues.keys() | cur.cluster_queues.keys():
            a, b = prev.cluster_queues.get(name), cur.cluster_queues.get(name)
            if a is not b and (a is None or b is None or a.meta.generation != b.meta.generation
                               or a.stop_policy != b.stop_policy or a.resource_groups != b.resource_groups
                               or a.cohort != b.cohort):
                direct.add(name)
    changed_cohorts = set() if prev.cohorts is cur.cohorts else {
        n for n in prev.cohorts.keys() | cur.cohorts.keys() if prev.cohorts.get(n) != cur.cohorts.get(n)}
    changed_flavors = set() if prev.flavors is cur.flavors else {
        n for n in prev.flavors.keys() | cur.flavors.keys()
        if prev.flavors.get(n) is not cur.flavors.get(n) and prev.flavors.get(n) != cur.flavors.get(n)}
    if changed_cohorts or changed_flavors:
        for name, cq in cur.cluster_queues.items():
            if cq.cohort in changed_cohorts or changed_flavors.intersection(cq.flavor_names()):
                direct.add(name)
    cur_wls, prev_wls = cur.workloads, prev.workloads
    keys = cur.workloads_changed_since(prev_wls)
    for key in prev_wls if keys is None else keys:
        old, new = prev_wls.get(key), cur_wls.get(key)
        if new is old or old is None:  # unchanged objects keep their identity: the cheap test first
            continue
        if not old.has_quota_reservation or old.admission is None:
            continue
        if (new is None or new.is_finished or not new.has_quota_reservation
                or (new.is_evicted and not old.is_evicted) or new.reclaimable_pods != old.reclaimable_pods):
            direct.add(old.admission.cluster_queue)
    if not direct:
        return set()
    expanded = _cohort_tree_members(cur, direct, cache) | _cohort_tree_members(prev, direct, cache)
    return expanded
