"""Kueue's plain Pod integration (pkg/controller/jobs/pod), single pods only.

A standalone Pod labelled `kueue.x-k8s.io/queue-name` is gated by Kueue's pod webhook
(scheduling gate `kueue.x-k8s.io/admission`, label `kueue.x-k8s.io/managed: "true"`); here that
happens right after creation, before the scheduler may take it (see
`scheduler.awaiting_admission_webhook`). Its Workload is `pod-<name>-<hash>`, owned by the Pod,
with one pod set `main` of one pod. On admission the gate is removed and the flavors'
nodeSelector, tolerations and labels are added (Pod.Run → prepare). On eviction the pod gets
the `TerminationTarget` condition and is deleted (Pod.Stop); a single pod never counts as
active, so the quota is released at once. A Succeeded or Failed pod finishes the Workload
with the pod's status message.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from kueuetop.kueue.workload import PODSET_LABEL
from kueuetop.kueue.workload import QUEUE_NAME_LABEL as QUEUE_LABEL
from kueuetop.sim.jobs.framework import (
    DEFAULT_PODSET,
    KUEUE_GROUP,
    MissingFlavor,
    MissingPriorityClass,
    controller_ref,
    finish_workload,
    merge_into_template,
    meta_of,
    new_workload,
    pod_ready,
    podset_infos,
    release_quota,
    resolve_priority,
    set_pods_ready,
    workload_name_for_owner,
)
from kueuetop.sim.kube.events import EventWriter, NullEvents, condition_is, find_condition
from kueuetop.sim.storage.objectstore import ObjectStore, StoreError, WatchEvent, rfc3339
from kueuetop.sim.work_queue import drain

_log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]

SCHEDULING_GATE = "kueue.x-k8s.io/admission"
MANAGED_LABEL = "kueue.x-k8s.io/managed"
TERMINATION_TARGET = "TerminationTarget"
STOP_REASON_EVICTED = "WorkloadEvicted"


def is_gated(pod: Obj) -> bool:
    return any(isinstance(g, dict) and g.get("name") == SCHEDULING_GATE
               for g in (pod.get("spec") or {}).get("schedulingGates") or [])


class PodIntegration:
    """Standalone queued pods. Wire with `cluster.add_controller(PodIntegration(store))`,
    before the Kubelet so new pods are gated in the same settle round."""

    name = "pod-integration"

    def __init__(self, store: ObjectStore, *, events: EventWriter | None = None) -> None:
        self.store = store
        self.events = events or NullEvents()
        self._dirty: dict[Key, None] = {}
        self._waiting: set[Key] = set()  # for a priority class or a flavor to appear

    def on_event(self, event: WatchEvent) -> None:
        try:
            key = event.kind.key
            if key == ("", "pods"):
                m = meta_of(event.obj)
                labels = m.get("labels") or {}
                if (QUEUE_LABEL in labels or labels.get(MANAGED_LABEL) == "true") and event.type != "DELETED":
                    self._dirty[(m.get("namespace", ""), m.get("name", ""))] = None
            elif key == (KUEUE_GROUP, "workloads"):
                ref = controller_ref(event.obj)
                if ref is not None and ref.get("kind") == "Pod" and ref.get("apiVersion") == "v1":
                    self._dirty[(meta_of(event.obj).get("namespace", ""), str(ref.get("name", "")))] = None
            elif key in ((KUEUE_GROUP, "workloadpriorityclasses"), ("scheduling.k8s.io", "priorityclasses"),
                         (KUEUE_GROUP, "resourceflavors")) and event.type != "DELETED":
                for k in self._waiting:
                    self._dirty[k] = None
                self._waiting.clear()
        except Exception:
            _log.exception("pod integration: cannot handle %s %s", event.type, event.kind.kind)

    def next_wakeup(self, now: float) -> float | None:
        return None

    def reconcile(self, now: float) -> bool:
        return drain(self._dirty, self._reconcile, now, "pod integration", "pod")

    def _reconcile(self, key: Key, now: float) -> bool:
        pod = self.store.try_get("", "pods", key[0], key[1], copy=False)
        if pod is None or controller_ref(pod) is not None:
            return False  # pods of Jobs (or other owners) are the owner's integration's business
        m = meta_of(pod)
        labels = m.get("labels") or {}
        phase = (pod.get("status") or {}).get("phase", "Pending")
        if labels.get(MANAGED_LABEL) != "true":
            if (pod.get("spec") or {}).get("nodeName") or phase != "Pending" or m.get("deletionTimestamp"):
                return False  # already running: created before Kueue could gate it
            return self._gate(key)
        wl_name = workload_name_for_owner(key[1], m.get("uid", ""), "Pod", "")
        wl = self.store.try_get(KUEUE_GROUP, "workloads", key[0], wl_name, copy=False)
        if wl is None:
            if phase in ("Succeeded", "Failed"):
                return False
            return self._create_workload(key, pod)
        if condition_is(wl, "Finished"):
            return False
        if phase in ("Succeeded", "Failed"):
            message = str((pod.get("status") or {}).get("message", ""))
            return finish_workload(self.store, wl, "Succeeded" if phase == "Succeeded" else "Failed", message, now)
        evicted = find_condition(wl, "Evicted")
        if evicted is not None and evicted.get("status") == "True":
            worked = release_quota(self.store, wl, now)  # a single pod is never "active" (Pod.IsActive)
            return self._stop(key, pod, str(evicted.get("message", "")), now) or worked
        admitted = condition_is(wl, "Admitted")
        if admitted and is_gated(pod):
            return self._ungate(key, pod, wl, now)
        if admitted or find_condition(wl, "PodsReady") is not None:
            return set_pods_ready(self.store, wl, admitted and pod_ready(pod), now)
        return False

    def _gate(self, key: Key) -> bool:
        def gate(cur: Obj) -> Obj:
            meta = cur.setdefault("metadata", {})
            meta.setdefault("labels", {})[MANAGED_LABEL] = "true"
            spec = cur.setdefault("spec", {})
            gates = [g for g in spec.get("schedulingGates") or [] if g.get("name") != SCHEDULING_GATE]
            spec["schedulingGates"] = [*gates, {"name": SCHEDULING_GATE}]
            return cur

        try:
            self.store.patch("", "pods", key[0], key[1], gate)
            return True
        except StoreError as exc:
            _log.info("gating pod %s/%s: %s", key[0], key[1], exc.message)
            return False

    def _create_workload(self, key: Key, pod: Obj) -> bool:
        spec = copy.deepcopy(pod.get("spec") or {})
        spec["schedulingGates"] = [g for g in spec.get("schedulingGates") or [] if g.get("name") != SCHEDULING_GATE]
        if not spec["schedulingGates"]:
            del spec["schedulingGates"]
        spec.pop("nodeName", None)
        m = meta_of(pod)
        labels = {k: v for k, v in (m.get("labels") or {}).items() if k not in (PODSET_LABEL, MANAGED_LABEL)}
        template: Obj = {"spec": spec}
        t_meta = {k: v for k, v in (("labels", labels), ("annotations", m.get("annotations"))) if v}
        if t_meta:
            template["metadata"] = t_meta
        try:
            ref, priority = resolve_priority(self.store, m.get("labels") or {}, spec)
        except MissingPriorityClass as exc:
            if key not in self._waiting:
                self._waiting.add(key)
                self.events.emit(pod, "ErrWorkloadCompose", str(exc), type_="Warning")
            return False
        wl = new_workload(pod, "Pod", "", [{"name": DEFAULT_PODSET, "count": 1, "template": template}], ref, priority)
        try:
            created = self.store.create(KUEUE_GROUP, "workloads", wl)
        except StoreError as exc:
            _log.info("creating workload for pod %s/%s: %s", key[0], key[1], exc.message)
            return False
        self.events.emit(pod, "CreatedWorkload", f"Created Workload: {key[0]}/{created['metadata']['name']}")
        return True

    def _ungate(self, key: Key, pod: Obj, wl: Obj, now: float) -> bool:
        try:
            infos = podset_infos(self.store, wl)
        except MissingFlavor:
            self._waiting.add(key)
            return False
        except ValueError as exc:
            return finish_workload(self.store, wl, "FailedToStart", str(exc), now)
        if len(infos) != 1:
            return finish_workload(self.store, wl, "FailedToStart",
                                   f"invalid podset infos: expecting 1 pod set got {len(infos)}", now)
        info = infos[0]

        def prepare(cur: Obj) -> Obj:
            template = {"metadata": cur.setdefault("metadata", {}), "spec": cur.setdefault("spec", {})}
            merge_into_template(template, info)
            gates = [g for g in cur["spec"].get("schedulingGates") or [] if g.get("name") != SCHEDULING_GATE]
            if gates:
                cur["spec"]["schedulingGates"] = gates
            else:
                cur["spec"].pop("schedulingGates", None)
            return cur

        try:
            self.store.patch("", "pods", key[0], key[1], prepare)
        except ValueError as exc:
            return finish_workload(self.store, wl, "FailedToStart", str(exc), now)
        except StoreError as exc:
            _log.info("ungating pod %s/%s: %s", key[0], key[1], exc.message)
            return False
        cq = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue", "")
        self.events.emit(pod, "Started", f"Admitted by clusterQueue {cq}")
        return True

    def _stop(self, key: Key, pod: Obj, message: str, now: float) -> bool:
        """Pod.Stop: TerminationTarget=True, then delete."""
        def mark(cur: Obj) -> Obj:
            status = cur.setdefault("status", {})
            conds = [c for c in status.get("conditions") or [] if c.get("type") != TERMINATION_TARGET]
            conds.append({"type": TERMINATION_TARGET, "status": "True", "lastTransitionTime": rfc3339(now),
                          "reason": STOP_REASON_EVICTED, "message": message})
            status["conditions"] = conds
            return cur

        try:
            self.store.patch("", "pods", key[0], key[1], mark, status=True)
            self.store.delete("", "pods", key[0], key[1])
        except StoreError as exc:
            _log.info("stopping pod %s/%s: %s", key[0], key[1], exc.message)
            return False
        self.events.emit(pod, "Stopped", message)
        return True
