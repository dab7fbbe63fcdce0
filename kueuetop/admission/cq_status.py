"""ClusterQueue and LocalQueue `Active` conditions (reference/kueue.md §2.2, §3).

Mirrors Kueue's clusterQueue.inactiveReason: every applicable problem is collected, the first
reason wins and the message joins all details ("Can't admit new workloads: is stopped, …").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kueuetop.kueue.cluster_queue import STOP_NONE
from kueuetop.kueue.snapshot import ClusterSnapshot

if TYPE_CHECKING:
    from kueuetop.admission.engine_cache import EngineCache

READY = "Ready"
STOPPED = "Stopped"
FLAVOR_NOT_FOUND = "FlavorNotFound"
ADMISSION_CHECK_NOT_FOUND = "AdmissionCheckNotFound"
ADMISSION_CHECK_INACTIVE = "AdmissionCheckInactive"
COHORT_CYCLE = "CohortCycleDetected"
CQ_DOES_NOT_EXIST = "ClusterQueueDoesNotExist"
CQ_IS_INACTIVE = "ClusterQueueIsInactive"


@dataclass(frozen=True, slots=True)
class ActiveStatus:
    active: bool
    reason: str
    message: str


def _go_list(items: list[str]) -> str:
    return "[" + " ".join(items) + "]"  # Go's %v of a []string


def _cohort_has_cycle(snapshot: ClusterSnapshot, cohort: str) -> bool:
    seen: set[str] = set()
    cur = cohort
    while cur and cur not in seen:
        seen.add(cur)
        obj = snapshot.cohorts.get(cur)
        cur = obj.parent if obj else ""
    return bool(cur)


def cluster_queue_active(snapshot: ClusterSnapshot, name: str, cache: EngineCache | None = None) -> ActiveStatus:
    """Kueue: pkg/cache/scheduler/clusterqueue.go updateQueueStatus, inactiveReason."""
    if cache is None or not cache.fast_paths:
        return _cluster_queue_active(snapshot, name)
    # Activity depends only on queues, flavors, checks and cohorts, which a simulator or store
    # keeps as the same mapping objects across many snapshots.
    memo: dict[str, ActiveStatus] = cache.active_status.get(_activity_parts(snapshot), dict)
    st = memo.get(name)
    if st is None:
        st = memo[name] = _cluster_queue_active(snapshot, name)
    return st


def _activity_parts(snapshot: ClusterSnapshot) -> tuple:
    return (snapshot.cluster_queues, snapshot.flavors, snapshot.admission_checks, snapshot.cohorts)


def active_map(snapshot: ClusterSnapshot, cache: EngineCache | None = None) -> Mapping[str, bool]:
    """Which ClusterQueues are active (a cycle asks for every one of them)."""
    def compute() -> dict[str, bool]:
        return {n: cluster_queue_active(snapshot, n, cache).active for n in snapshot.cluster_queues}
    if cache is None or not cache.fast_paths:
        return compute()
    return cache.active_map.get(_activity_parts(snapshot), compute)


def _cluster_queue_active(snapshot: ClusterSnapshot, name: str) -> ActiveStatus:
    cq = snapshot.cluster_queues.get(name)
    if cq is None:
        return ActiveStatus(False, CQ_DOES_NOT_EXIST, f"ClusterQueue {name} doesn't exist")
    if cq.meta.deletion is not None:
        return ActiveStatus(False, "Terminating", "Can't admit new workloads; clusterQueue is terminating")
    reasons: list[str] = []
    messages: list[str] = []
    if cq.stop_policy != STOP_NONE:
        reasons.append(STOPPED)
        messages.append("is stopped")
    missing = sorted({f for f in cq.flavor_names() if f not in snapshot.flavors})
    if missing:
        reasons.append(FLAVOR_NOT_FOUND)
        messages.append(f"references missing ResourceFlavor(s): {_go_list(missing)}")
    checks = [c.name for c in cq.admission_checks]
    missing_checks = sorted({c for c in checks if c not in snapshot.admission_checks})
    if missing_checks:
        reasons.append(ADMISSION_CHECK_NOT_FOUND)
        messages.append(f"references missing AdmissionCheck(s): {_go_list(missing_checks)}")
    inactive_checks = sorted({c for c in checks if c in snapshot.admission_checks
                              and not snapshot.admission_checks[c].active})
    if inactive_checks:
        reasons.append(ADMISSION_CHECK_INACTIVE)
        messages.append(f"references inactive AdmissionCheck(s): {_go_list(inactive_checks)}")
    if cq.cohort and _cohort_has_cycle(snapshot, cq.cohort):
        reasons.append(COHORT_CYCLE)
        messages.append(f'Cohort "{cq.cohort}" has a cycle in hierarchy.')
    if not reasons:
        return ActiveStatus(True, READY, "Can admit new workloads")
    return ActiveStatus(False, reasons[0], "Can't admit new workloads: " + ", ".join(messages))


def local_queue_active(snapshot: ClusterSnapshot, key: tuple[str, str],
                       cache: EngineCache | None = None) -> ActiveStatus:
    lq = snapshot.local_queues.get(key)
    if lq is None:
        return ActiveStatus(False, "NotFound", f"LocalQueue {key[0]}/{key[1]} doesn't exist")
    if lq.stop_policy != STOP_NONE:
        return ActiveStatus(False, STOPPED, "LocalQueue is stopped")
    if lq.cluster_queue not in snapshot.cluster_queues:
        return ActiveStatus(False, CQ_DOES_NOT_EXIST, "Can't submit new workloads to clusterQueue")
    if not cluster_queue_active(snapshot, lq.cluster_queue, cache).active:
        return ActiveStatus(False, CQ_IS_INACTIVE, "Can't submit new workloads to clusterQueue")
    return ActiveStatus(True, READY, "Can submit new workloads to localQueue")


