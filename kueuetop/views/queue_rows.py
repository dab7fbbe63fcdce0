"""What a queue's row says, for `kueuetop snapshot` and the console's queue views alike.

The counts and the status are Kueue's own, from the queue's status as `kubectl get
clusterqueues` shows them: `pendingWorkloads`, `reservingWorkloads` (every workload holding quota,
admitted ones included, as Kueue counts them) and `admittedWorkloads`; the status is the queue's
stop policy, else its `Active` condition (Kueue: pkg/controller/core/clusterqueue_controller.go
updateCqStatusIfChanged). The console only styles these values; the CLI prints them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kueuetop.kueue.cluster_queue import STOP_NONE, ClusterQueue
from kueuetop.kueue.local_queue import LocalQueue
from kueuetop.kueue.meta import Condition, find_condition

__all__ = ["QueueRow", "cluster_queue_row", "local_queue_row", "queue_status"]


def queue_status(stop_policy: str, conditions: Iterable[Condition]) -> tuple[str, str]:
    """(word, state colour name): Stopped(Hold…) beats an Active=False condition; "?" when
    Kueue has not written the condition (yet)."""
    if stop_policy and stop_policy != STOP_NONE:
        return f"Stopped({stop_policy})", "evicted"
    active = next((c for c in conditions if c.type == "Active"), None)
    if active is not None and not active.is_true:
        return f"Inactive({active.reason or '?'})", "inactive"
    return ("Active", "admitted") if active is not None else ("?", "stale")


@dataclass(frozen=True, slots=True)
class QueueRow:
    name: str  # a ClusterQueue's name, or a LocalQueue's
    namespace: str  # "" for a ClusterQueue
    pending: int
    reserving: int
    admitted: int
    status: str  # Active, Inactive(reason), Stopped(policy), ?
    colour: str  # the state colour the console paints `status` with
    active: bool | None  # the Active condition; None while Kueue has not written it
    inactive_reason: str | None  # "reason: message" of an Active=False condition
    stop_policy: str


def _row(name: str, namespace: str, stop_policy: str, conditions: tuple[Condition, ...],
         pending: int, reserving: int, admitted: int) -> QueueRow:
    status, colour = queue_status(stop_policy, conditions)
    active = find_condition(conditions, "Active")
    reason = None
    if active is not None and not active.is_true:
        reason = f"{active.reason}: {active.message}".strip(": ") or None
    return QueueRow(name, namespace, pending, reserving, admitted, status, colour,
                    None if active is None else active.is_true, reason, stop_policy)


def cluster_queue_row(cq: ClusterQueue) -> QueueRow:
    return _row(cq.name, "", cq.stop_policy, cq.conditions, cq.pending_workloads, cq.reserving_workloads,
                cq.admitted_workloads)


def local_queue_row(lq: LocalQueue) -> QueueRow:
    return _row(lq.name, lq.meta.namespace, lq.stop_policy, lq.conditions, lq.pending_workloads,
                lq.reserving_workloads, lq.admitted_workloads)
