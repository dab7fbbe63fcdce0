"""Defaulting applied on write, as CRD structural defaults and core defaulters do."""

from __future__ import annotations

from typing import Any

from kueuetop.sim.kinds import KUEUE_GROUP, Kind

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


def prepare_for_create(kind: Kind, obj: Obj) -> None:
    """What the API server does to .status on create (status belongs to controllers)."""
    if kind.key == ("", "pods"):
        obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    elif kind.key == ("", "namespaces"):
        obj["status"] = {"phase": "Active"}
        obj.setdefault("spec", {"finalizers": ["kubernetes"]})
    elif kind.key == ("batch", "jobs"):
        obj["status"] = {}
    elif kind.crd and kind.status_subresource:
        obj.pop("status", None)
