"""dcgm-exporter pods of the simulated GPU Operator: one Running pod per GPU node.

A real GPU cluster runs the exporter as a DaemonSet (`gpu-operator/nvidia-dcgm-exporter-xxxxx`,
label `app=nvidia-dcgm-exporter`, container port `metrics` 9400). kueuetop's direct-scrape source
finds those pods by label and reads them through the API server's pod proxy, which the simulated
API server answers with `gpu_telemetry.render_dcgm` for the pod's node. Without these pods the
scrape path would have nothing to find in the demo.

The pods are created already Running and bound (a DaemonSet pod never waits for the scheduler),
request no GPU (so Kueue's quota and the kubelet's GPU accounting are untouched) and carry no
runtime, so the simulated kubelet never finishes them. They go when their node goes.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
import zlib
from typing import Any

from kueuetop.kueue.core import GPU_RESOURCE
from kueuetop.sim.kube.kubelet import _running_status  # the kubelet's own "Running" status shape
from kueuetop.sim.storage.objectstore import ObjectStore, StoreError, WatchEvent

_log = logging.getLogger(__name__)

Obj = dict[str, Any]

EXPORTER_NAMESPACE = "gpu-operator"
EXPORTER_APP = "nvidia-dcgm-exporter"
EXPORTER_PORT = 9400
EXPORTER_IMAGE = "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2"
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
# DaemonSet pods point at their DaemonSet; the simulator serves no DaemonSets, so the uid is
# a fixed made-up one (the object store only cascades deletes *from* an owner, never to it).
_DAEMONSET_UID = str(uuid.UUID(int=zlib.crc32(b"gpu-operator/nvidia-dcgm-exporter"), version=4))


def _suffix(node: str, length: int) -> str:
    h = int.from_bytes(zlib.crc32(node.encode()).to_bytes(4, "big") + zlib.adler32(node.encode()).to_bytes(4, "big"),
                       "big")
    return "".join(_BASE36[(h // 36**k) % 36] for k in range(length))


def gpu_count(node: Obj) -> int:
    status = node.get("status") if isinstance(node.get("status"), dict) else {}
    for part in ("allocatable", "capacity"):
        amounts = status.get(part)
        if isinstance(amounts, dict) and GPU_RESOURCE in amounts:
            try:
                return int(str(amounts[GPU_RESOURCE]))
            except ValueError:
                return 0
    return 0


def exporter_pod(name: str, node: str, now: float) -> Obj:
    """The pod object the GPU Operator's DaemonSet would run on `node`."""
    pod: Obj = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": EXPORTER_NAMESPACE,
            "labels": {"app": EXPORTER_APP, "app.kubernetes.io/managed-by": "gpu-operator",
                       "controller-revision-hash": "7d9f8c6b5"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": EXPORTER_APP,
                                 "uid": _DAEMONSET_UID, "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {
            "nodeName": node,
            "serviceAccountName": EXPORTER_APP,
            "priorityClassName": "system-node-critical",
            "tolerations": [{"operator": "Exists"}],  # DaemonSets tolerate the GPU taints
            "containers": [{
                "name": EXPORTER_APP, "image": EXPORTER_IMAGE,
                "ports": [{"name": "metrics", "containerPort": EXPORTER_PORT, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "10m", "memory": "128Mi"}},
            }],
        },
    }
    return _running_status(pod, node, now)


class ExporterPods:
    """Keeps one exporter pod per GPU node. Feed node events to `on_node`, call `reconcile`."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self._want: dict[str, bool] = {}  # node → should have an exporter (pending changes)
        self._pods: dict[str, str] = {}  # node → exporter pod name
        self._names: set[str] = set()
        self._namespace_ready = False

    def on_node(self, event: WatchEvent) -> None:
        name = str((event.obj.get("metadata") or {}).get("name", ""))
        if not name:
            return
        want = event.type != "DELETED" and gpu_count(event.obj) > 0
        if want != (name in self._pods) or name in self._want:
            self._want[name] = want

    def is_exporter(self, key: tuple[str, str]) -> bool:
        return key[0] == EXPORTER_NAMESPACE and key[1] in self._names

    def reconcile(self, now: float) -> bool:
        if not self._want:
            return False
        want, self._want = self._want, {}
        worked = False
        for node, present in want.items():
            if present and node not in self._pods:
                worked = self._create(node, now) or worked
            elif not present and node in self._pods:
                worked = self._delete(node) or worked
        return worked

    def _ensure_namespace(self) -> None:
        if self._namespace_ready:
            return
        if self.store.try_get("", "namespaces", None, EXPORTER_NAMESPACE, copy=False) is None:
            with contextlib.suppress(StoreError):  # created meanwhile by someone else: fine
                self.store.create("", "namespaces", {"metadata": {"name": EXPORTER_NAMESPACE,
                                                                  "labels": {"kubernetes.io/metadata.name":
                                                                             EXPORTER_NAMESPACE}}},
                                  uid=str(uuid.uuid5(uuid.NAMESPACE_URL, "kueuetop-sim/namespaces/gpu-operator")))
        self._namespace_ready = True

    def _create(self, node: str, now: float) -> bool:
        self._ensure_namespace()
        name = ""
        for length in (5, 8, 12):  # DaemonSet-style 5-char suffix; longer only on a clash
            name = f"{EXPORTER_APP}-{_suffix(node, length)}"
            if name not in self._names:
                break
        try:
            # A name-derived uid: drawing from the store's seeded generator would shift the uid
            # (and the generated names) of every later object in the scenario.
            self.store.create("", "pods", exporter_pod(name, node, now),
                              uid=str(uuid.uuid5(uuid.NAMESPACE_URL, f"kueuetop-sim/pods/{EXPORTER_NAMESPACE}/{name}/{now}")))
        except StoreError as exc:
            _log.warning("gpu exporters: pod for node %s not created: %s", node, exc.message)
            return False
        self._pods[node] = name
        self._names.add(name)
        return True

    def _delete(self, node: str) -> bool:
        name = self._pods.pop(node)
        self._names.discard(name)
        try:
            self.store.delete("", "pods", EXPORTER_NAMESPACE, name)
        except StoreError:
            return False  # already gone (the kubelet's pod GC got there first)
        return True
