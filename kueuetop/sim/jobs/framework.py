"""Kueue's job framework (pkg/controller/jobframework, pkg/podset): what every integration shares.

The integrations (`batch_job`, `pods`) and Kueue's provisioning check use these and nothing
else of each other: workload names for an owner (GetWorkloadNameForOwnerWithGVK), the Workload
built for a job (ConstructWorkload), its priority (ExtractPriority), the pod set infos admission
adds to pod templates (getPodSetsInfoFromStatus, podset.Merge / RestorePodSpec), and the
Workload writes an integration makes: PodsReady, Finished, and its half of an eviction.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kueuetop.admission import status_updates
from kueuetop.kueue.json_copy import clone
from kueuetop.kueue.workload import JOB_UID_LABEL, PODSET_LABEL
from kueuetop.kueue.workload import QUEUE_NAME_LABEL as QUEUE_LABEL
from kueuetop.sim.kube.events import (
    condition_is,
    find_condition,
    write_condition,
)
from kueuetop.sim.kube.pod_faults import ANN_FAULT
from kueuetop.sim.scenarios.scenario import ANN_GPU_UTIL, ANN_RUNTIME
from kueuetop.sim.storage.objectstore import NotFound, ObjectStore, StoreError

_log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]

KUEUE_GROUP = "kueue.x-k8s.io"
WL_API = "kueue.x-k8s.io/v1beta2"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
MAX_EXEC_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"
LOCAL_QUEUE_LABEL = "kueue.x-k8s.io/local-queue-name"
CLUSTER_QUEUE_LABEL = "kueue.x-k8s.io/cluster-queue-name"
PROVREQ_ANNOTATION_PREFIX = "provreq.kueue.x-k8s.io/"
DEFAULT_PODSET = "main"
SIM_ANNOTATIONS = (ANN_RUNTIME, ANN_GPU_UTIL, ANN_FAULT)
PODS_NOT_READY = "Not all pods are ready or succeeded"
PODS_READY = "All pods reached readiness and the workload is running"

# Kueue's workload names: constants from pkg/controller/jobframework/workload_names.go.
_HASH_LENGTH = 5
_MAX_NAME_LENGTH = 253


def workload_name_for_owner(owner_name: str, owner_uid: str, kind: str, group: str) -> str:
    """GetWorkloadNameForOwnerWithGVK: `<kind>-<owner>` (trimmed) + `-` + 5 hex of
    sha1("<Kind>\\n<group>\\n<name>\\n<uid>")."""
    h = hashlib.sha1(f"{kind}\n{group}\n{owner_name}\n{owner_uid}".encode()).hexdigest()
    prefix = f"{kind.lower()}-{owner_name}"[: _MAX_NAME_LENGTH - 1 - _HASH_LENGTH]
    return f"{prefix}-{h[:_HASH_LENGTH]}"


# ---------------------------------------------------------------------------------------------
# Pod set info: what admission adds to a pod template (pkg/podset)


class MissingFlavor(ValueError):
    """An admitted flavor is not in the cluster (Kueue retries; not a permanent error)."""


@dataclass
class PodSetInfo:
    name: str
    count: int
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[Obj] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)

    def merge(self, other: PodSetInfo) -> None:
        """PodSetInfo.Merge: maps must not conflict; tolerations are appended once."""
        for mine, theirs, what in ((self.annotations, other.annotations, "annotations"),
                                   (self.labels, other.labels, "labels"),
                                   (self.node_selector, other.node_selector, "nodeSelector")):
            for k, v in theirs.items():
                if k in mine and mine[k] != v:
                    raise ValueError(f"invalid admission check PodSetUpdate: conflict for {what}: "
                                     f"conflict for key={k}, value1={mine[k]}, value2={v}")
            mine.update(theirs)
        for t in other.tolerations:
            if t not in self.tolerations:
                self.tolerations.append(t)


def _str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def podset_infos(store: ObjectStore, wl: Obj) -> list[PodSetInfo]:
    """getPodSetsInfoFromStatus: per admitted pod set, the flavors' nodeLabels and tolerations,
    the podset and queue labels and the admission checks' podSetUpdates. ValueError when a
    flavor is missing or updates conflict."""
    status = wl.get("status") or {}
    admission = status.get("admission") or {}
    spec_sets = {ps.get("name", DEFAULT_PODSET): ps for ps in (wl.get("spec") or {}).get("podSets") or []
                 if isinstance(ps, dict)}
    out = []
    for psa in admission.get("podSetAssignments") or []:
        if not isinstance(psa, dict):
            continue
        name = str(psa.get("name", DEFAULT_PODSET))
        spec_count = int((spec_sets.get(name) or {}).get("count", 1) or 0)
        info = PodSetInfo(name, int(psa["count"]) if isinstance(psa.get("count"), int) else spec_count)
        for flavor in dict.fromkeys((psa.get("flavors") or {}).values()):
            rf = store.try_get(KUEUE_GROUP, "resourceflavors", None, str(flavor), copy=False)
            if rf is None:
                raise MissingFlavor(f'resourceflavors.kueue.x-k8s.io "{flavor}" not found')
            rf_spec = rf.get("spec") or {}
            info.node_selector.update(_str_map(rf_spec.get("nodeLabels")))
            info.tolerations.extend(clone(t) for t in rf_spec.get("tolerations") or [])
        info.labels[PODSET_LABEL] = name
        # AssignQueueLabelsForPods (beta, on since 0.17).
        info.labels[LOCAL_QUEUE_LABEL] = str((wl.get("spec") or {}).get("queueName", ""))
        if admission.get("clusterQueue"):
            info.labels[CLUSTER_QUEUE_LABEL] = str(admission["clusterQueue"])
        for check in status.get("admissionChecks") or []:
            for update in check.get("podSetUpdates") or [] if isinstance(check, dict) else []:
                if isinstance(update, dict) and update.get("name") == name:
                    info.merge(PodSetInfo(name, info.count, _str_map(update.get("nodeSelector")),
                                          clone(list(update.get("tolerations") or [])),
                                          _str_map(update.get("labels")), _str_map(update.get("annotations"))))
                    break
        out.append(info)
    return out


def merge_into_template(template: Obj, info: PodSetInfo) -> None:
    """podset.Merge: add info to a pod template in place (ValueError on conflicts)."""
    meta = template.setdefault("metadata", {})
    spec = template.setdefault("spec", {})
    current = PodSetInfo(info.name, info.count, _str_map(spec.get("nodeSelector")),
                         list(spec.get("tolerations") or []), _str_map(meta.get("labels")),
                         _str_map(meta.get("annotations")))
    current.merge(info)
    for key, value in (("labels", current.labels), ("annotations", current.annotations)):
        if value:
            meta[key] = value
    if current.node_selector:
        spec["nodeSelector"] = current.node_selector
    if current.tolerations:
        spec["tolerations"] = current.tolerations


def restore_template(template: Obj, original: Obj) -> bool:
    """podset.RestorePodSpec: put back the Workload's copy of the template's labels,
    annotations, nodeSelector, tolerations and scheduling gates. True if anything changed."""
    changed = False
    meta = template.setdefault("metadata", {})
    spec = template.setdefault("spec", {})
    o_meta = original.get("metadata") or {}
    o_spec = original.get("spec") or {}
    for holder, o_holder, key in ((meta, o_meta, "labels"), (meta, o_meta, "annotations"),
                                  (spec, o_spec, "nodeSelector"), (spec, o_spec, "tolerations"),
                                  (spec, o_spec, "schedulingGates")):
        want = clone(o_holder.get(key))
        if (holder.get(key) or None) != (want or None):
            if want:
                holder[key] = want
            else:
                holder.pop(key, None)
            changed = True
    return changed


# ---------------------------------------------------------------------------------------------
# Priority (jobframework.ExtractPriority)


class MissingPriorityClass(Exception):
    pass


def resolve_priority(store: ObjectStore, labels: Mapping[str, str], pod_spec: Mapping[str, Any]
                     ) -> tuple[Obj | None, int]:
    """(priorityClassRef, priority): the WorkloadPriorityClass label wins, then the pod's
    priorityClassName, then the global default PriorityClass, else 0. Raises
    MissingPriorityClass when a named class does not exist (Kueue retries later)."""
    wpc_name = labels.get(PRIORITY_CLASS_LABEL)
    if wpc_name:
        wpc = store.try_get(KUEUE_GROUP, "workloadpriorityclasses", None, wpc_name, copy=False)
        if wpc is None:
            raise MissingPriorityClass(f'WorkloadPriorityClass "{wpc_name}" not found')
        return ({"group": KUEUE_GROUP, "kind": "WorkloadPriorityClass", "name": wpc_name},
                int_or(wpc.get("value")))
    pc_name = pod_spec.get("priorityClassName")
    if pc_name:
        pc = store.try_get("scheduling.k8s.io", "priorityclasses", None, str(pc_name), copy=False)
        if pc is None:
            raise MissingPriorityClass(f'priorityclasses.scheduling.k8s.io "{pc_name}" not found')
        return {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": str(pc_name)}, int_or(pc.get("value"))
    pcs, _ = store.list("scheduling.k8s.io", "priorityclasses", copy=False,
                        predicate=lambda o: o.get("globalDefault") is True)
    if pcs:
        best = max(pcs, key=lambda o: int_or(o.get("value")))
        return ({"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": best["metadata"]["name"]},
                int_or(best.get("value")))
    return None, 0


def int_or(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


# ---------------------------------------------------------------------------------------------
# small object helpers


def meta_of(obj: Obj | None) -> Obj:
    m = (obj or {}).get("metadata")
    return m if isinstance(m, dict) else {}


def controller_ref(obj: Obj) -> Obj | None:
    for r in meta_of(obj).get("ownerReferences") or []:
        if isinstance(r, dict) and r.get("controller"):
            return r
    return None


def owner_ref(obj: Obj) -> Obj:
    m = meta_of(obj)
    return {"apiVersion": obj.get("apiVersion", ""), "kind": obj.get("kind", ""), "name": m.get("name", ""),
            "uid": m.get("uid", ""), "controller": True, "blockOwnerDeletion": True}


def sim_annotations(obj: Obj) -> dict[str, str]:
    ann = meta_of(obj).get("annotations") or {}
    return {k: str(ann[k]) for k in SIM_ANNOTATIONS if k in ann}


def is_active_pod(pod: Obj) -> bool:
    """Counted in Job status.active: not terminal and not being deleted."""
    return (pod.get("status") or {}).get("phase", "Pending") not in ("Succeeded", "Failed") \
        and not meta_of(pod).get("deletionTimestamp")


def pod_ready(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and condition_is(pod, "Ready")


def set_pods_ready(store: ObjectStore, wl: Obj, ready: bool, now: float) -> bool:
    """The PodsReady condition jobframework writes (generatePodsReadyCondition)."""
    cur = find_condition(wl, "PodsReady")
    if ready:
        reason = "Recovered" if cur is not None and cur.get("reason") in ("WaitForRecovery", "Recovered") \
            else "Started"
        want = ("True", reason, PODS_READY)
    elif cur is not None and cur.get("status") == "True" and condition_is(wl, "Admitted"):
        want = ("False", "WaitForRecovery", "At least one pod has failed, waiting for recovery")
    else:
        want = ("False", "WaitForStart", PODS_NOT_READY)
    if cur is not None and (cur.get("status"), cur.get("reason"), cur.get("message")) == want:
        return False
    m = meta_of(wl)
    gen = m.get("generation") if isinstance(m.get("generation"), int) else None
    return write_condition(store, KUEUE_GROUP, "workloads", m.get("namespace"), m.get("name", ""),
                           "PodsReady", *want, now, gen) is not None


def finish_workload(store: ObjectStore, wl: Obj, reason: str, message: str, now: float) -> bool:
    """workloadfinish.Finish: Finished=True (once)."""
    if condition_is(wl, "Finished"):
        return False
    m = meta_of(wl)
    gen = m.get("generation") if isinstance(m.get("generation"), int) else None
    return write_condition(store, KUEUE_GROUP, "workloads", m.get("namespace"), m.get("name", ""),
                           "Finished", "True", reason, message, now, gen) is not None


def release_quota(store: ObjectStore, wl: Obj, now: float) -> bool:
    """The job integration's half of an eviction, written through the status subresource."""
    m = meta_of(wl)
    try:
        cur = store.get(KUEUE_GROUP, "workloads", m.get("namespace"), m.get("name", ""), copy=False)
    except NotFound:
        return False
    if not status_updates.needs_quota_release(cur):
        return False
    new = status_updates.release_quota(cur, now)
    try:
        store.update_status(KUEUE_GROUP, "workloads", new, copy=False)
    except StoreError as exc:
        _log.info("releasing quota of %s/%s: %s", m.get("namespace"), m.get("name"), exc.message)
        return False
    return True


def new_workload(owner: Obj, kind: str, group: str, pod_sets: list[Obj], priority_ref: Obj | None,
                 priority: int) -> Obj:
    """jobframework.ConstructWorkload + prepareWorkload for an owner object."""
    m = meta_of(owner)
    labels = m.get("labels") or {}
    annotations = {k: v for k, v in (m.get("annotations") or {}).items()
                   if k.startswith(PROVREQ_ANNOTATION_PREFIX)}
    annotations.update(sim_annotations(owner))
    wl: Obj = {
        "apiVersion": WL_API, "kind": "Workload",
        "metadata": {
            "name": workload_name_for_owner(m.get("name", ""), m.get("uid", ""), kind, group),
            "namespace": m.get("namespace", ""),
            "labels": {JOB_UID_LABEL: m.get("uid", "")},
            "ownerReferences": [owner_ref(owner)],
        },
        "spec": {"active": True, "queueName": labels.get(QUEUE_LABEL, ""), "podSets": pod_sets,
                 "priority": priority},
    }
    if annotations:
        wl["metadata"]["annotations"] = annotations
    if priority_ref is not None:
        wl["spec"]["priorityClassRef"] = priority_ref
    max_exec = labels.get(MAX_EXEC_LABEL)
    if max_exec and max_exec.isdigit() and int(max_exec) > 0:
        wl["spec"]["maximumExecutionTimeSeconds"] = int(max_exec)
    return wl
