"""A small cluster built from API objects into a Store, for the triage model and the Overview.

Every object goes through the real parser (`parse_object`) into the store, as the informers
would put it; GPU readings go in through `put_gpu_samples`, as the GPU poller does.
"""

from __future__ import annotations

from typing import Any

from kueuetop.kueue.gpu import GpuSample
from kueuetop.kueue.parse import parse_object
from kueuetop.store import Entry, Store, StoreEvent
from kueuetop.store import events as K
from tests.builders import (
    KUEUE,
    T0,
    admit,
    cluster_queue,
    condition,
    flavor,
    fq,
    group,
    local_queue,
    ts,
    workload,
)

NOW = T0 + 3600.0
GPU = "nvidia.com/gpu"
KINDS = {"Node": K.NODES, "Pod": K.PODS, "Workload": K.WORKLOADS, "ClusterQueue": K.CLUSTER_QUEUES,
         "LocalQueue": K.LOCAL_QUEUES, "ResourceFlavor": K.RESOURCE_FLAVORS, "AdmissionCheck": K.ADMISSION_CHECKS,
         "ProvisioningRequest": K.PROVISIONING_REQUESTS}
_rv = [0]


def put(store: Store, *objs: dict) -> None:
    """Upsert API objects (each a new resourceVersion), one batch."""
    events = []
    for raw in objs:
        _rv[0] += 1
        meta = raw.setdefault("metadata", {})
        meta["resourceVersion"] = str(_rv[0])
        meta.setdefault("uid", f"uid-{meta.get('namespace', '')}-{meta['name']}")
        key = (meta.get("namespace", ""), meta["name"])
        events.append(StoreEvent.upsert(KINDS[raw["kind"]], "test", Entry(
            key=key, raw=raw, obj=parse_object(raw), uid=meta["uid"], resource_version=meta["resourceVersion"])))
    store.apply_batch(events)


def delete(store: Store, kind: str, key: tuple[str, str]) -> None:
    store.apply(StoreEvent.delete(kind, "test", key))


def node(name: str, gpus: int, labels: dict | None = None, ready: bool = True, cordoned: bool = False,
         taints: list | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": dict(labels or {}), "creationTimestamp": ts(T0)},
            "spec": {"unschedulable": cordoned, "taints": taints or []},
            "status": {"allocatable": {GPU: str(gpus), "cpu": "32"}, "capacity": {GPU: str(gpus), "cpu": "32"},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                       "reason": "KubeletReady" if ready else "NodeStatusUnknown",
                                       "lastTransitionTime": ts(NOW - 120)}]}}


def pod(ns: str, name: str, wl: str, gpus: int, *, node_name: str = "", phase: str = "Pending",
        scheduled: tuple[bool, str, str] | None = None, waiting: str = "", restarts: int = 0,
        annotations: dict | None = None) -> dict:
    status: dict[str, Any] = {"phase": phase}
    if scheduled is not None:
        status["conditions"] = [condition("PodScheduled", scheduled[0], scheduled[1], scheduled[2], NOW - 300)]
    if waiting:
        status["containerStatuses"] = [{"name": "c", "ready": False, "restartCount": restarts,
                                        "state": {"waiting": {"reason": waiting, "message": f"{waiting} for c"}},
                                        "lastState": {"terminated": {"reason": "Error", "exitCode": 1}}
                                        if restarts else {}}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": ts(NOW - 300),
                         "labels": {"kueue.x-k8s.io/podset": "main"}, "annotations": dict(annotations or {}),
                         "ownerReferences": [{"apiVersion": KUEUE, "kind": "Workload", "name": wl,
                                              "uid": f"uid-{ns}-{wl}", "controller": True}]},
            "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "trainer",
                                                             "resources": {"requests": {GPU: str(gpus)}}}]},
            "status": status}


def admitted(ns: str, name: str, cq: str, fl: str, gpus: int, count: int = 1, at: float = NOW - 600,
             extra: list | None = None) -> dict:
    wl = admit(workload(ns, name, "lq", {GPU: str(gpus)}, count=count, created=at - 60), cq, {GPU: fl}, at=at)
    wl["status"]["conditions"] += extra or []
    return wl


def gpu(node_name: str, idx: int, *, util: float = 50.0, pod: tuple[str, str] = ("", ""), xid: int | None = None,
        ecc: float | None = None) -> GpuSample:
    return GpuSample(node_name, str(idx), model="NVIDIA-L4", util=util, namespace=pod[0], pod=pod[1],
                     xid=xid, ecc_dbe=ecc, at=NOW)


def base_objects() -> list[dict]:
    """Two GPU flavors (spot L4 by label pool=spot, A100 with no node yet) in one queue."""
    return [
        flavor("gpu-l4-spot", {"pool": "spot"}), flavor("gpu-a100", {"pool": "a100"}),
        cluster_queue("cq-spot", group([GPU], fq("gpu-l4-spot", **{GPU: 16}), fq("gpu-a100", **{GPU: 16}))),
        local_queue("team-a", "lq", "cq-spot"),
    ]
