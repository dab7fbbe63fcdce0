"""The cluster state the engine decides on: typed objects, indexed, immutable by convention."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kueuetop.kueue.admission_check import AdmissionCheck
from kueuetop.kueue.cluster_queue import ClusterQueue
from kueuetop.kueue.cohort import Cohort
from kueuetop.kueue.config import KueueConfig
from kueuetop.kueue.core import Namespace
from kueuetop.kueue.flavor import ResourceFlavor
from kueuetop.kueue.local_queue import LocalQueue
from kueuetop.kueue.workload import Workload

WorkloadKey = tuple[str, str]  # (namespace, name)


@dataclass(frozen=True, slots=True)
class WorkloadDelta:
    """Which workload keys may differ between two `workloads` mappings (compared by identity):
    `since` (an earlier snapshot's) and `target` (this snapshot's). A producer that knows what
    changed (the simulator's Kueue controller) attaches one so per-cycle bookkeeping can skip
    the unchanged workloads; consumers fall back to a full scan when it doesn't apply."""

    since: Mapping[WorkloadKey, Workload]
    target: Mapping[WorkloadKey, Workload]
    keys: frozenset[WorkloadKey]


@dataclass(frozen=True)
class ClusterSnapshot:
    cluster_queues: Mapping[str, ClusterQueue] = field(default_factory=dict)
    cohorts: Mapping[str, Cohort] = field(default_factory=dict)
    flavors: Mapping[str, ResourceFlavor] = field(default_factory=dict)
    admission_checks: Mapping[str, AdmissionCheck] = field(default_factory=dict)
    local_queues: Mapping[tuple[str, str], LocalQueue] = field(default_factory=dict)
    workloads: Mapping[WorkloadKey, Workload] = field(default_factory=dict)
    namespaces: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # name → labels
    config: KueueConfig = field(default_factory=KueueConfig)
    workload_delta: WorkloadDelta | None = field(default=None, compare=False, repr=False)

    @staticmethod
    def from_objects(objects: Iterable[Any], config: KueueConfig | None = None) -> ClusterSnapshot:
        """Index parsed objects (any order; unknown types are ignored)."""
        cqs: dict[str, ClusterQueue] = {}
        cohorts: dict[str, Cohort] = {}
        flavors: dict[str, ResourceFlavor] = {}
        checks: dict[str, AdmissionCheck] = {}
        lqs: dict[tuple[str, str], LocalQueue] = {}
        wls: dict[WorkloadKey, Workload] = {}
        nss: dict[str, Mapping[str, str]] = {}
        for o in objects:
            if isinstance(o, Workload):
                wls[o.key] = o
            elif isinstance(o, ClusterQueue):
                cqs[o.name] = o
            elif isinstance(o, LocalQueue):
                lqs[o.key] = o
            elif isinstance(o, ResourceFlavor):
                flavors[o.name] = o
            elif isinstance(o, Cohort):
                cohorts[o.name] = o
            elif isinstance(o, AdmissionCheck):
                checks[o.name] = o
            elif isinstance(o, Namespace):
                nss[o.name] = o.labels
        return ClusterSnapshot(cqs, cohorts, flavors, checks, lqs, wls, nss, config or KueueConfig())

    def workloads_changed_since(self, since: Mapping[WorkloadKey, Workload] | None) -> frozenset[WorkloadKey] | None:
        """Keys whose workload may differ from `since[key]`, or None when unknown (scan all)."""
        d = self.workload_delta
        if d is None or since is None or d.since is not since or d.target is not self.workloads:
            return None
        return d.keys

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        # A namespace we have not seen still carries its automatic name label.
        return self.namespaces.get(namespace) or {"kubernetes.io/metadata.name": namespace}

    def cluster_queue_of(self, wl: Workload) -> str | None:
        """The CQ a workload belongs to: its admission's, else its LocalQueue's."""
        if wl.admission is not None:
            return wl.admission.cluster_queue
        lq = self.local_queues.get((wl.namespace, wl.queue_name))
        return lq.cluster_queue if lq else None
