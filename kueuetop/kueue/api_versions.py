"""Conversion of kueue.x-k8s.io objects between v1beta1 and v1beta2 wire shapes.

v1beta2 is the hub (Kueue's storage version since 0.16). Everything inside kueuetop works
on v1beta2 dicts; v1beta1 objects are converted on the way in (parsing, scenario files, API
writes) and, by the simulated API server, on the way out. Renames follow Kueue's
conversion webhook (apis/kueue/v1beta1/*_conversion.go); see reference/kueue.md §2.5.

Functions take and return plain dicts and never mutate their argument.
"""

from __future__ import annotations

import copy
from types import MappingProxyType
from typing import Any

GROUP = "kueue.x-k8s.io"
V1BETA1 = f"{GROUP}/v1beta1"
V1BETA2 = f"{GROUP}/v1beta2"

WPC_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"
PC_SOURCE = "scheduling.k8s.io/priorityclass"

# v1beta1 fungibility aliases: both collapse to MayStopSearch in v1beta2.
_FUNGIBILITY_ALIASES = MappingProxyType({"Borrow": "MayStopSearch", "Preempt": "MayStopSearch"})


def is_kueue_api_version(api_version: str | None) -> bool:
    return isinstance(api_version, str) and api_version.startswith(GROUP + "/")


def to_v1beta2(obj: dict[str, Any]) -> dict[str, Any]:
    """Return the v1beta2 form of a kueue.x-k8s.io object (v1beta1 or v1alpha1 in)."""
    if not isinstance(obj, dict):
        return obj
    api_version = obj.get("apiVersion")
    if not is_kueue_api_version(api_version) or api_version == V1BETA2:
        return obj
    out = copy.deepcopy(obj)
    out["apiVersion"] = V1BETA2
    kind = out.get("kind")
    spec = out.get("spec") if isinstance(out.get("spec"), dict) else None
    status = out.get("status") if isinstance(out.get("status"), dict) else None
    if kind == "ClusterQueue" and spec is not None:
        if "cohort" in spec:
            cohort = spec.pop("cohort")
            spec.setdefault("cohortName", cohort)
        checks = spec.pop("admissionChecks", None)
        # Malformed fields are carried over as they are, for the parser to name (never a
        # TypeError here: a list where a name belongs is unhashable).
        if isinstance(checks, list) and checks:
            strategy = spec.setdefault("admissionChecksStrategy", {})
            existing = strategy.setdefault("admissionChecks", []) if isinstance(strategy, dict) else None
            if isinstance(existing, list):
                names = {c.get("name") for c in existing if isinstance(c, dict) and isinstance(c.get("name"), str)}
                for name in checks:
                    if not isinstance(name, str) or name not in names:
                        existing.append({"name": name})
        fung = spec.get("flavorFungibility")
        if isinstance(fung, dict):
            for key in ("whenCanBorrow", "whenCanPreempt"):
                if isinstance(fung.get(key), str) and fung[key] in _FUNGIBILITY_ALIASES:
                    fung[key] = _FUNGIBILITY_ALIASES[fung[key]]
        if status is not None:
            status.pop("pendingWorkloadsStatus", None)
            fs = status.get("fairSharing")
            if isinstance(fs, dict):
                fs.pop("admissionFairSharingStatus", None)
    elif kind == "LocalQueue" and status is not None:
        if "flavorUsage" in status:
            status.setdefault("flavorsUsage", status.pop("flavorUsage"))
        status.pop("flavors", None)
    elif kind == "Workload":
        if spec is not None and ("priorityClassName" in spec or "priorityClassSource" in spec):
            name = spec.pop("priorityClassName", None)
            source = spec.pop("priorityClassSource", None) or ""
            if name:
                if source == PC_SOURCE:
                    spec["priorityClassRef"] = {
                        "group": "scheduling.k8s.io", "kind": "PriorityClass", "name": name}
                else:
                    spec["priorityClassRef"] = {
                        "group": GROUP, "kind": "WorkloadPriorityClass", "name": name}
        if status is not None and "accumulatedPastExexcutionTimeSeconds" in status:
            status.setdefault("accumulatedPastExecutionTimeSeconds",
                              status.pop("accumulatedPastExexcutionTimeSeconds"))
    elif kind == "Cohort" and spec is not None and "parent" in spec:
        # v1alpha1 Cohort used spec.parent; renamed to parentName.
        spec.setdefault("parentName", spec.pop("parent"))
    elif kind == "AdmissionCheck" and spec is not None:
        spec.pop("retryDelayMinutes", None)
    elif kind == "MultiKueueCluster" and spec is not None:
        # v1beta2 moved kubeConfig / clusterProfileRef under spec.clusterSource.
        moved = {k: spec.pop(k) for k in ("kubeConfig", "clusterProfileRef") if k in spec}
        if moved:
            source = spec.setdefault("clusterSource", {})
            if isinstance(source, dict):
                for k, v in moved.items():
                    source.setdefault(k, v)
    return out


def to_v1beta1(obj: dict[str, Any]) -> dict[str, Any]:
    """Return the v1beta1 form of a v1beta2 kueue.x-k8s.io object (served to old clients)."""
    if not isinstance(obj, dict) or obj.get("apiVersion") != V1BETA2:
        return obj
    out = copy.deepcopy(obj)
    out["apiVersion"] = V1BETA1
    kind = out.get("kind")
    spec = out.get("spec") if isinstance(out.get("spec"), dict) else None
    status = out.get("status") if isinstance(out.get("status"), dict) else None
    if kind == "ClusterQueue" and spec is not None:
        if "cohortName" in spec:
            spec["cohort"] = spec.pop("cohortName")
        # v1beta1 keeps admissionChecksStrategy too; plain names only when no onFlavors are used.
        strategy = spec.get("admissionChecksStrategy")
        if isinstance(strategy, dict):
            checks = strategy.get("admissionChecks") or []
            if checks and all(isinstance(c, dict) and not c.get("onFlavors") for c in checks):
                spec["admissionChecks"] = [c.get("name") for c in checks]
                spec.pop("admissionChecksStrategy")
    elif kind == "LocalQueue" and status is not None and "flavorsUsage" in status:
        status["flavorUsage"] = status.pop("flavorsUsage")
    elif kind == "Workload":
        if spec is not None and isinstance(spec.get("priorityClassRef"), dict):
            ref = spec.pop("priorityClassRef")
            spec["priorityClassName"] = ref.get("name", "")
            spec["priorityClassSource"] = (
                PC_SOURCE if ref.get("group") == "scheduling.k8s.io" else WPC_SOURCE)
        if status is not None and "accumulatedPastExecutionTimeSeconds" in status:
            status["accumulatedPastExexcutionTimeSeconds"] = status.pop(
                "accumulatedPastExecutionTimeSeconds")
    elif kind == "MultiKueueCluster" and spec is not None and isinstance(spec.get("clusterSource"), dict):
        spec.update(spec.pop("clusterSource"))
    return out
