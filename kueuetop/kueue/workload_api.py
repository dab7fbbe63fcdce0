"""A parsed Workload written back as the API dict Kueue's status writers read and write.

The console's store keeps parsed objects only (the raw JSON is not kept beside them), but the
engine's decisions are written the way Kueue writes them, into the Workload's API form
(`admission/status_updates.py`). A forecast run from the store therefore turns each workload's
status back into API form, lets the same writers change it, and reads the new status back with
the same parser (`status_from_api`). The pod templates are not rebuilt: the parsed pod sets
(shapes with their selectors and tolerations) are kept as they are, and the dict carries only
each pod set's name, count and requests, which is all the writers read of the spec.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kueuetop.kueue.api_versions import V1BETA2
from kueuetop.kueue.quantity import format_quantity_for_api
from kueuetop.kueue.workload import PodSet, Workload, with_status

if TYPE_CHECKING:
    from kueuetop.kueue.meta import Condition
    from kueuetop.kueue.parse_cache import ParseCache


def _time(t: float) -> str:
    # metav1.Time: RFC 3339 at second precision, as the API server stores it.
    return datetime.fromtimestamp(math.floor(t), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition(c: Condition) -> dict[str, Any]:
    out: dict[str, Any] = {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}
    if c.last_transition is not None:
        out["lastTransitionTime"] = _time(c.last_transition)
    if c.observed_generation is not None:
        out["observedGeneration"] = c.observed_generation
    return out


def status_to_api(wl: Workload) -> dict[str, Any]:
    """`.status` of the Workload as the API holds it (every field the parser reads)."""
    status: dict[str, Any] = {}
    if wl.conditions:
        status["conditions"] = [_condition(c) for c in wl.conditions]
    if wl.admission is not None:
        psas = []
        for a in wl.admission.pod_set_assignments:
            psa: dict[str, Any] = {"name": a.name, "flavors": dict(a.flavors),
                                   "resourceUsage": {r: format_quantity_for_api(r, v) for r, v in a.resource_usage.items()}}
            if a.count is not None:
                psa["count"] = a.count
            psas.append(psa)
        status["admission"] = {"clusterQueue": wl.admission.cluster_queue, "podSetAssignments": psas}
    if wl.requeue_state is not None:
        rs: dict[str, Any] = {"count": wl.requeue_state.count}
        if wl.requeue_state.requeue_at is not None:
            rs["requeueAt"] = _time(wl.requeue_state.requeue_at)
        status["requeueState"] = rs
    if wl.admission_checks:
        checks = []
        for c in wl.admission_checks:
            check: dict[str, Any] = {"name": c.name, "state": c.state, "message": c.message}
            if c.last_transition is not None:
                check["lastTransitionTime"] = _time(c.last_transition)
            if c.requeue_after_seconds is not None:
                check["requeueAfterSeconds"] = c.requeue_after_seconds
            if c.retry_count:
                check["retryCount"] = c.retry_count
            checks.append(check)
        status["admissionChecks"] = checks
    if wl.reclaimable_pods:
        status["reclaimablePods"] = [{"name": n, "count": c} for n, c in wl.reclaimable_pods.items()]
    if wl.accumulated_execution_seconds:
        status["accumulatedPastExecutionTimeSeconds"] = wl.accumulated_execution_seconds
    if wl.evictions:
        status["schedulingStats"] = {"evictions": [
            {"reason": e.reason, "underlyingCause": e.underlying_cause, "count": e.count} for e in wl.evictions]}
    if wl.requests_in_status:
        status["resourceRequests"] = resource_requests_to_api(wl.pod_sets)
    return status


def resource_requests_to_api(pod_sets: Iterable[PodSet]) -> list[dict[str, Any]]:
    """status.resourceRequests as Kueue writes it: per pod set, the total requests of all its pods."""
    return [{"name": ps.name, "resources": {r: format_quantity_for_api(r, v) for r, v in ps.total().items()}}
            for ps in pod_sets]


def workload_to_api(wl: Workload) -> dict[str, Any]:
    """The Workload as a v1beta2 dict: metadata's identity and generation, the spec fields the
    status writers read (active, queue, pod set names, counts and requests) and the whole status."""
    pod_sets = []
    for ps in wl.pod_sets:
        requests = {r: format_quantity_for_api(r, v) for r, v in ps.requests.items()}
        p: dict[str, Any] = {"name": ps.name, "count": ps.count,
                             "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]}}}
        if ps.min_count is not None:
            p["minCount"] = ps.min_count
        pod_sets.append(p)
    meta: dict[str, Any] = {"name": wl.name, "namespace": wl.namespace}
    if wl.meta.generation:
        meta["generation"] = wl.meta.generation
    spec: dict[str, Any] = {"queueName": wl.queue_name, "podSets": pod_sets, "active": wl.active,
                            "priority": wl.priority}
    return {"apiVersion": V1BETA2, "kind": "Workload", "metadata": meta, "spec": spec, "status": status_to_api(wl)}


def status_from_api(wl: Workload, data: dict[str, Any], cache: ParseCache | None = None) -> Workload:
    """`wl` with the status, `spec.active` and generation that `data` (a written version of
    `workload_to_api(wl)`) holds; everything else (metadata, pod sets, priority) is `wl`'s own."""
    return with_status(wl, data, cache)
