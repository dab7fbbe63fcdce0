"""Hardware faults a scenario schedules on nodes (`kind: Action` with a `NODE_ACTIONS` action).

* `gpu-xid` / `gpu-ecc` (`value: "3=79"`): the node's annotation `kueuetop.io/gpu-xid` /
  `kueuetop.io/gpu-ecc-dbe`, which the simulated dcgm-exporter turns into
  `DCGM_FI_DEV_XID_ERRORS` / `DCGM_FI_DEV_ECC_DBE_VOL_TOTAL` for those GPUs.
* `node-not-ready`: what a node whose kubelet stops being healthy looks like: `Ready=False`
  (reason `KubeletNotReady`, the kubelet's PLEG message), the `node.kubernetes.io/not-ready`
  NoSchedule taint the node lifecycle controller adds (TaintNodesByCondition) and its
  `NodeNotReady` Event ("Node X status is now: NodeNotReady").
* `cordon`: `kubectl cordon`: `spec.unschedulable`, the `node.kubernetes.io/unschedulable`
  NoSchedule taint the lifecycle controller adds, and the kubelet's `NodeNotSchedulable` Event.

Pods already on the node stay (NoSchedule taints keep new pods off, they evict nothing).
"""

from __future__ import annotations

import logging
from typing import Any

from kueuetop.sim.cloud.gpu_telemetry import GPU_ECC_DBE_ANNOTATION, GPU_XID_ANNOTATION
from kueuetop.sim.kube.events import KUBELET, EventWriter, NullEvents, set_condition
from kueuetop.sim.scenarios.scenario import NODE_ACTIONS, ScenarioAction, ScenarioStep
from kueuetop.sim.storage.objectstore import ObjectStore, StoreError, WatchEvent, rfc3339

_log = logging.getLogger(__name__)

Obj = dict[str, Any]
POOL_ANNOTATION = "kueuetop.io/node-pool"
NODE_CONTROLLER = "node-controller"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
PLEG_MESSAGE = "PLEG is not healthy: pleg was last seen active 3m5.2s ago; threshold is 3m0s"


class NodeFaults:
    """Plays node fault Actions at their time. Also a (work-free) controller, for wiring."""

    name = "node-faults"

    def __init__(self, store: ObjectStore, events: EventWriter | None = None) -> None:
        self.store = store
        self.events = events or NullEvents()
        self.errors: list[str] = []
        self.done: list[tuple[float, str, str]] = []  # (time, action, node)

    def handle_step(self, step: ScenarioStep, now: float) -> bool:
        a = step.action
        if step.kind != "action" or a is None or a.action not in NODE_ACTIONS:
            return False
        node = self._resolve(a)
        if node is None:
            self.errors.append(f"{step.origin}: {a.action} {a.target}: no such node at that time")
            return True
        try:
            self._apply(a, node, now)
            self.done.append((now, a.action, node))
        except StoreError as exc:
            self.errors.append(f"{step.origin}: {a.action} {a.target}: {exc.message}")
        return True

    def _resolve(self, a: ScenarioAction) -> str | None:
        if a.target_kind == "node":
            return a.name if self.store.try_get("", "nodes", None, a.name, copy=False) is not None else None
        items, _ = self.store.list("", "nodes", copy=False)
        names = sorted(n["metadata"]["name"] for n in items
                       if ((n.get("metadata") or {}).get("annotations") or {}).get(POOL_ANNOTATION) == a.name)
        index = int(a.namespace or 0)
        return names[index] if index < len(names) else None

    def _apply(self, a: ScenarioAction, node: str, now: float) -> None:
        if a.action in ("gpu-xid", "gpu-ecc"):
            key = GPU_XID_ANNOTATION if a.action == "gpu-xid" else GPU_ECC_DBE_ANNOTATION

            def annotate(cur: Obj) -> Obj:
                meta = cur.setdefault("metadata", {})
                meta["annotations"] = {**(meta.get("annotations") or {}), key: a.value}
                return cur

            self.store.patch("", "nodes", None, node, annotate)
            return
        if a.action == "cordon":
            def cordon(cur: Obj) -> Obj:
                spec = cur.setdefault("spec", {})
                spec["unschedulable"] = True
                _add_taint(spec, UNSCHEDULABLE_TAINT, now)
                return cur

            obj = self.store.patch("", "nodes", None, node, cordon)
            self.events.emit(obj, "NodeNotSchedulable", f"Node {node} status is now: NodeNotSchedulable",
                             component=KUBELET, host=node)
            return

        def taint(cur: Obj) -> Obj:
            _add_taint(cur.setdefault("spec", {}), NOT_READY_TAINT, now)
            return cur

        def not_ready(cur: Obj) -> Obj:
            status = cur.setdefault("status", {})
            conds = status.get("conditions") if isinstance(status.get("conditions"), list) else []
            status["conditions"] = conds
            set_condition(conds, "Ready", "False", "KubeletNotReady", PLEG_MESSAGE, now)
            return cur

        # Two writes, as on a real cluster: the kubelet's status, the lifecycle controller's taint.
        self.store.patch("", "nodes", None, node, not_ready, status=True)
        obj = self.store.patch("", "nodes", None, node, taint)
        self.events.emit(obj, "NodeNotReady", f"Node {node} status is now: NodeNotReady", component=NODE_CONTROLLER)

    # Controller protocol: the faults happen at step time, nothing to reconcile.
    def on_event(self, event: WatchEvent) -> None:
        return None

    def reconcile(self, now: float) -> bool:
        return False

    def next_wakeup(self, now: float) -> float | None:
        return None


def _add_taint(spec: Obj, key: str, now: float) -> None:
    taints = [t for t in spec.get("taints") or [] if isinstance(t, dict) and t.get("key") != key]
    taints.append({"key": key, "effect": "NoSchedule", "timeAdded": rfc3339(now)})
    spec["taints"] = taints
