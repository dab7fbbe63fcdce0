"""Hooks through which the simulator feeds the server: metrics, GPU telemetry, queue order
and write admission. Every hook has a default computed from the store."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kueuetop.sim.storage.kinds import KUEUE_GROUP, Kind
from kueuetop.sim.storage.objectstore import ObjectStore

Obj = dict[str, Any]
QueueRef = str | tuple[str, str]  # ClusterQueue name, or (namespace, LocalQueue name)


@dataclass
class WriteRequest:
    """A write about to be stored. A hook may change `obj` (v1beta2 shape) or raise
    `ApiError` to refuse it, like an admission webhook."""

    verb: str                 # create | update | patch | delete
    kind: Kind
    subresource: str          # "" or "status"
    namespace: str
    name: str
    obj: Obj | None           # new state (None for delete)
    old: Obj | None           # current state (None for create)
    user: str
    dry_run: bool


@dataclass
class ServerHooks:
    metrics_text: Callable[[], str] | None = None
    dcgm_text: Callable[[str | None], str] | None = None
    pending_workloads: Callable[[QueueRef, int, int], list[Obj]] | None = None
    on_write: Callable[[WriteRequest], None] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _cond_true(obj: Obj, ctype: str) -> bool:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == ctype and c.get("status") == "True":
            return True
    return False


def is_pending(wl: Obj) -> bool:
    """In Kueue's queue: no quota reserved, active, not finished."""
    spec = wl.get("spec") or {}
    return (spec.get("active", True) is not False and not _cond_true(wl, "QuotaReserved")
            and not _cond_true(wl, "Finished"))


def _order_key(wl: Obj) -> tuple[int, str, str]:
    meta = wl.get("metadata") or {}
    prio = (wl.get("spec") or {}).get("priority")
    return (-(prio if isinstance(prio, int) else 0), str(meta.get("creationTimestamp") or ""),
            str(meta.get("uid") or ""))


def default_pending_workloads(store: ObjectStore, target: QueueRef, limit: int, offset: int) -> list[Obj]:
    """PendingWorkload items for a ClusterQueue or LocalQueue, in queue order (priority desc,
    creation time, uid), with 0-based positions."""
    if isinstance(target, tuple):
        lq = store.try_get(KUEUE_GROUP, "localqueues", target[0], target[1], copy=False)
        if lq is None:
            return []
        cq_name = (lq.get("spec") or {}).get("clusterQueue", "")
    else:
        cq_name = target
    lqs = store.by_index(KUEUE_GROUP, "localqueues", "spec.clusterQueue", cq_name, copy=False)
    lq_keys = {((q.get("metadata") or {}).get("namespace", ""), (q.get("metadata") or {}).get("name", ""))
               for q in lqs}
    pending: list[Obj] = [wl for lq_key in lq_keys
                          for wl in store.by_index(KUEUE_GROUP, "workloads", "metadata.namespace,spec.queueName",
                                                   lq_key, copy=False)
                          if is_pending(wl)]
    pending.sort(key=_order_key)
    per_lq: dict[tuple[str, str], int] = {}
    items: list[Obj] = []
    for pos, wl in enumerate(pending):
        meta = wl.get("metadata") or {}
        lq_key = (meta.get("namespace", ""), (wl.get("spec") or {}).get("queueName", ""))
        lq_pos = per_lq.get(lq_key, 0)
        per_lq[lq_key] = lq_pos + 1
        if isinstance(target, tuple) and lq_key != target:
            continue
        item_meta: Obj = {"name": meta.get("name"), "namespace": meta.get("namespace"),
                          "creationTimestamp": meta.get("creationTimestamp")}
        if meta.get("ownerReferences"):
            item_meta["ownerReferences"] = meta["ownerReferences"]
        prio = (wl.get("spec") or {}).get("priority")
        items.append({"metadata": item_meta, "priority": prio if isinstance(prio, int) else 0,
                      "localQueueName": lq_key[1], "positionInClusterQueue": pos,
                      "positionInLocalQueue": lq_pos})
    return items[offset: offset + limit] if limit else items[offset:]


def _esc(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def default_metrics_text(store: ObjectStore) -> str:
    """Kueue-style gauges derived from ClusterQueue and LocalQueue status."""
    lines = [
        "# HELP kueue_pending_workloads The number of pending workloads, per 'cluster_queue' and 'status'.",
        "# TYPE kueue_pending_workloads gauge",
    ]
    cqs, _ = store.list(KUEUE_GROUP, "clusterqueues", copy=False)
    for cq in cqs:
        name = _esc(cq["metadata"]["name"])
        pending = (cq.get("status") or {}).get("pendingWorkloads") or 0
        lines.append(f'kueue_pending_workloads{{cluster_queue="{name}",status="active"}} {pending}')
    lines += ["# HELP kueue_admitted_active_workloads The number of admitted Workloads that are active "
              "(unsuspended and not finished), per 'cluster_queue'.",
              "# TYPE kueue_admitted_active_workloads gauge"]
    for cq in cqs:
        name = _esc(cq["metadata"]["name"])
        admitted = (cq.get("status") or {}).get("admittedWorkloads") or 0
        lines.append(f'kueue_admitted_active_workloads{{cluster_queue="{name}"}} {admitted}')
    lines += ["# HELP kueue_cluster_queue_status Reports 'cluster_queue' with its 'status' "
              "(with possible values 'pending', 'active' or 'terminating').",
              "# TYPE kueue_cluster_queue_status gauge"]
    for cq in cqs:
        name = _esc(cq["metadata"]["name"])
        active = _cond_true(cq, "Active")
        for st in ("pending", "active", "terminating"):
            v = 1 if (st == "active") == active and st != "terminating" else 0
            lines.append(f'kueue_cluster_queue_status{{cluster_queue="{name}",status="{st}"}} {v}')
    return "\n".join(lines) + "\n"
