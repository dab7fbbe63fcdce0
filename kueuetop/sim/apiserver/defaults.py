"""Defaulting applied on write, as CRD structural defaults and core defaulters do."""

from __future__ import annotations

import base64
from typing import Any

from kueuetop.sim.scenarios.nodes import node_info
from kueuetop.sim.storage.kinds import KUEUE_GROUP, Kind

Obj = dict[str, Any]


def _sub(parent: dict[str, Any], key: str) -> dict[str, Any] | None:
    v = parent.get(key)
    return v if isinstance(v, dict) else None


def apply_defaults(kind: Kind, obj: Obj) -> None:
    """Fill defaults in place (v1beta2 shape for Kueue kinds)."""
    spec = _sub(obj, "spec")
    if kind.group == KUEUE_GROUP and spec is not None:
        if kind.plural == "clusterqueues":
            spec.setdefault("queueingStrategy", "BestEffortFIFO")
            spec.setdefault("stopPolicy", "None")
            ff = spec.setdefault("flavorFungibility", {})
            if isinstance(ff, dict):
                ff.setdefault("whenCanBorrow", "MayStopSearch")
                ff.setdefault("whenCanPreempt", "TryNextFlavor")
            pre = spec.setdefault("preemption", {})
            if isinstance(pre, dict):
                pre.setdefault("withinClusterQueue", "Never")
                pre.setdefault("reclaimWithinCohort", "Never")
                bwc = pre.setdefault("borrowWithinCohort", {})
                if isinstance(bwc, dict):
                    bwc.setdefault("policy", "Never")
        elif kind.plural == "localqueues":
            spec.setdefault("stopPolicy", "None")
        elif kind.plural == "multikueueclusters":
            kc = _sub(_sub(spec, "clusterSource") or {}, "kubeConfig")
            if kc is not None:
                kc.setdefault("locationType", "Secret")
        elif kind.plural == "workloads":
            spec.setdefault("active", True)
            for ps in spec.get("podSets") or []:
                if isinstance(ps, dict):
                    ps.setdefault("name", "main")
                    ps.setdefault("count", 1)
    elif kind.key == ("", "pods") and spec is not None:
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("dnsPolicy", "ClusterFirst")
    elif kind.key == ("batch", "jobs") and spec is not None:
        spec.setdefault("parallelism", 1)
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        if spec.get("completions") is None and spec.get("parallelism") == 1:
            spec["completions"] = 1
    elif kind.key == ("scheduling.k8s.io", "priorityclasses"):
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
    elif kind.key == ("", "secrets"):
        obj.setdefault("type", "Opaque")
        # stringData is write-only: kube-apiserver folds it into data (base64) and drops it.
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict):
            data = obj.setdefault("data", {})
            if isinstance(data, dict):
                for k, v in string_data.items():
                    data[str(k)] = base64.b64encode(str(v).encode()).decode()


def prepare_for_create(kind: Kind, obj: Obj) -> None:
    """What the API server does to .status on create (status belongs to controllers)."""
    if kind.key == ("", "pods"):
        obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    elif kind.key == ("", "namespaces"):
        obj["status"] = {"phase": "Active"}
        obj.setdefault("spec", {"finalizers": ["kubernetes"]})
    elif kind.key == ("batch", "jobs"):
        obj["status"] = {}
    elif kind.key == ("", "nodes"):
        _register_node(obj)
    elif kind.crd and kind.status_subresource:
        obj.pop("status", None)


def _register_node(node: Obj) -> None:
    """Every simulated node has a simulated kubelet, and a kubelet's first status sync reports the
    whole NodeSystemInfo (kubelet nodestatus.MachineInfo/VersionInfo: machineID, systemUUID,
    bootID, kernelVersion, osImage, containerRuntimeVersion, kubeletVersion, kubeProxyVersion,
    operatingSystem, architecture), all of which the API's v1.NodeSystemInfo marks required.
    A node written with part of it (a scenario's bare Node) gets the rest; given values stay."""
    status = node.get("status")
    if not isinstance(status, dict):
        status = node["status"] = {}
    given = status.get("nodeInfo")
    given = given if isinstance(given, dict) else {}
    meta = _sub(node, "metadata") or {}
    info = node_info(str(meta.get("name") or meta.get("generateName") or ""))
    labels = _sub(meta, "labels") or {}
    if isinstance(labels.get("kubernetes.io/arch"), str) and labels["kubernetes.io/arch"]:
        info["architecture"] = labels["kubernetes.io/arch"]
    info.update({k: v for k, v in given.items() if v not in (None, "")})
    status["nodeInfo"] = info
