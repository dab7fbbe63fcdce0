"""Compact builders for API objects (v1beta2 dicts) used by the engine's decision tables.

Every builder returns the JSON a real API server would hold, so tests exercise the same
parsing path as live data.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kueuetop.kueue.config import KueueConfig
from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.snapshot import ClusterSnapshot

KUEUE = "kueue.x-k8s.io/v1beta2"
T0 = 1_700_000_000.0


def ts(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def flavor(name: str, labels: dict | None = None, taints: list | None = None,
           tolerations: list | None = None) -> dict:
    spec: dict[str, Any] = {}
    if labels:
        spec["nodeLabels"] = labels
    if taints:
        spec["nodeTaints"] = taints
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def fq(name: str, **resources: Any) -> dict:
    """Flavor quotas: fq("on-demand", cpu="9", memory=("36Gi", borrowing, lending)).

    Resource names with dashes/dots: pass via `resources` dict, e.g. fq("a", **{"nvidia.com/gpu": 8}).
    """
    res = []
    for rname, q in resources.items():
        if isinstance(q, tuple):
            nominal, borrowing, lending = [*q, None, None][:3]
        else:
            nominal, borrowing, lending = q, None, None
        r: dict[str, Any] = {"name": rname, "nominalQuota": str(nominal)}
        if borrowing is not None:
            r["borrowingLimit"] = str(borrowing)
        if lending is not None:
            r["lendingLimit"] = str(lending)
        res.append(r)
    return {"name": name, "resources": res}


def group(covered: list[str] | str, *flavors: dict) -> dict:
    if isinstance(covered, str):
        covered = [covered]
    return {"coveredResources": list(covered), "flavors": list(flavors)}


def cluster_queue(name: str, *groups: dict, cohort: str = "", strategy: str | None = None,
                  within: str | None = None, reclaim: str | None = None,
                  borrow_within: str | None = None, max_priority_threshold: int | None = None,
                  when_can_borrow: str | None = None, when_can_preempt: str | None = None,
                  preference: str | None = None, namespace_selector: dict | None = None,
                  checks: list | None = None, stop_policy: str | None = None,
                  weight: str | None = None) -> dict:
    spec: dict[str, Any] = {"resourceGroups": list(groups),
                            "namespaceSelector": {} if namespace_selector is None else namespace_selector}
    if cohort:
        spec["cohortName"] = cohort
    if strategy:
        spec["queueingStrategy"] = strategy
    pre: dict[str, Any] = {}
    if within:
        pre["withinClusterQueue"] = within
    if reclaim:
        pre["reclaimWithinCohort"] = reclaim
    if borrow_within:
        pre["borrowWithinCohort"] = {"policy": borrow_within}
        if max_priority_threshold is not None:
            pre["borrowWithinCohort"]["maxPriorityThreshold"] = max_priority_threshold
    if pre:
        spec["preemption"] = pre
    fung: dict[str, Any] = {}
    if when_can_borrow:
        fung["whenCanBorrow"] = when_can_borrow
    if when_can_preempt:
        fung["whenCanPreempt"] = when_can_preempt
    if preference:
        fung["preference"] = preference
    if fung:
        spec["flavorFungibility"] = fung
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [
            c if isinstance(c, dict) else {"name": c} for c in checks]}
    if stop_policy:
        spec["stopPolicy"] = stop_policy
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def cohort(name: str, *groups: dict, parent: str = "", weight: str | None = None) -> dict:
    spec: dict[str, Any] = {}
    if parent:
        spec["parentName"] = parent
    if groups:
        spec["resourceGroups"] = list(groups)
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def local_queue(namespace: str, name: str, cq: str, stop_policy: str | None = None) -> dict:
    spec: dict[str, Any] = {"clusterQueue": cq}
    if stop_policy:
        spec["stopPolicy"] = stop_policy
    return {"apiVersion": KUEUE, "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def namespace(name: str, labels: dict | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name, **(labels or {})}}}


def admission_check(name: str, controller: str = "kueue.x-k8s.io/provisioning-request",
                    active: bool = True) -> dict:
    return {"apiVersion": KUEUE, "kind": "AdmissionCheck", "metadata": {"name": name},
            "spec": {"controllerName": controller},
            "status": {"conditions": [{"type": "Active", "status": "True" if active else "False",
                                       "reason": "Active", "message": "",
                                       "lastTransitionTime": ts(T0)}]}}


def pod_set(name: str = "main", count: int = 1, requests: dict | None = None, min_count: int | None = None,
            node_selector: dict | None = None, tolerations: list | None = None,
            affinity_terms: list | None = None) -> dict:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox",
                                            "resources": {"requests": dict(requests or {"cpu": "1"})}}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    if affinity_terms:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": t} for t in affinity_terms]}}}
    ps: dict[str, Any] = {"name": name, "count": count, "template": {"spec": spec}}
    if min_count is not None:
        ps["minCount"] = min_count
    return ps


def workload(namespace: str, name: str, queue: str, requests: dict | None = None, count: int = 1,
             priority: int = 0, created: float = T0, uid: str | None = None,
             pod_sets: list | None = None, active: bool = True, **pod_set_kw: Any) -> dict:
    return {
        "apiVersion": KUEUE, "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{namespace}-{name}",
                     "creationTimestamp": ts(created), "resourceVersion": "1", "generation": 1},
        "spec": {"queueName": queue, "priority": priority, "active": active,
                 "podSets": pod_sets or [pod_set("main", count, requests, **pod_set_kw)]},
        "status": {},
    }


def condition(type_: str, status: bool, reason: str, message: str = "", at: float = T0) -> dict:
    return {"type": type_, "status": "True" if status else "False", "reason": reason,
            "message": message, "lastTransitionTime": ts(at)}


def admit(wl: dict, cq: str, flavors: dict[str, str] | dict[str, dict[str, str]], at: float = T0,
          admitted: bool = True, counts: dict[str, int] | None = None) -> dict:
    """Return `wl` holding a reservation in `cq`.

    `flavors` maps resource → flavor for every pod set, or pod set name → {resource: flavor}.
    """
    from kueuetop.kueue.quantity import format_quantity_for_api, parse_resource_value

    out = {**wl, "status": dict(wl.get("status") or {})}
    psas = []
    for ps in wl["spec"]["podSets"]:
        fmap = flavors.get(ps["name"]) if isinstance(flavors.get(ps["name"]), dict) else flavors
        count = (counts or {}).get(ps["name"], ps.get("count", 1))
        reqs = ps["template"]["spec"]["containers"][0]["resources"]["requests"]
        usage = {r: format_quantity_for_api(r, parse_resource_value(r, q) * count) for r, q in reqs.items()}
        psas.append({"name": ps["name"], "flavors": dict(fmap), "resourceUsage": usage, "count": count})
    out["status"]["admission"] = {"clusterQueue": cq, "podSetAssignments": psas}
    conds = [condition("QuotaReserved", True, "QuotaReserved", f"Quota reserved in ClusterQueue {cq}", at)]
    if admitted:
        conds.append(condition("Admitted", True, "Admitted", "The workload is admitted", at))
    out["status"]["conditions"] = conds
    return out


def snapshot(*objs: dict, config: KueueConfig | None = None) -> ClusterSnapshot:
    return ClusterSnapshot.from_objects((parse_object(o) for o in objs), config)
