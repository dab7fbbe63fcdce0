"""Parse any API object kueuetop understands, by apiVersion group and kind."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from kueuetop.kueue.admission_check import (
    parse_admission_check,
    parse_priority_class,
    parse_workload_priority_class,
)
from kueuetop.kueue.cluster_queue import parse_cluster_queue
from kueuetop.kueue.cohort import parse_cohort
from kueuetop.kueue.core import parse_job, parse_namespace, parse_node, parse_pod
from kueuetop.kueue.errors import KueueParseError
from kueuetop.kueue.flavor import parse_resource_flavor
from kueuetop.kueue.local_queue import parse_local_queue
from kueuetop.kueue.parse_cache import ParseCache
from kueuetop.kueue.provisioning import parse_provisioning_request, parse_provisioning_request_config
from kueuetop.kueue.workload import parse_workload

# Each parser takes (data, cache): the caller's ParseCache or None.
PARSERS: Mapping[tuple[str, str], Callable[[Mapping, ParseCache | None], Any]] = MappingProxyType({
    ("kueue.x-k8s.io", "ClusterQueue"): parse_cluster_queue,
    ("kueue.x-k8s.io", "LocalQueue"): parse_local_queue,
    ("kueue.x-k8s.io", "Workload"): parse_workload,
    ("kueue.x-k8s.io", "ResourceFlavor"): parse_resource_flavor,
    ("kueue.x-k8s.io", "Cohort"): parse_cohort,
    ("kueue.x-k8s.io", "AdmissionCheck"): parse_admission_check,
    ("kueue.x-k8s.io", "WorkloadPriorityClass"): parse_workload_priority_class,
    ("kueue.x-k8s.io", "ProvisioningRequestConfig"): parse_provisioning_request_config,
    ("autoscaling.x-k8s.io", "ProvisioningRequest"): parse_provisioning_request,
    ("scheduling.k8s.io", "PriorityClass"): parse_priority_class,
    ("", "Node"): parse_node,
    ("", "Pod"): parse_pod,
    ("", "Namespace"): parse_namespace,
    ("batch", "Job"): parse_job,
})


def group_of(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def parse_object(data: Any, cache: ParseCache | None = None) -> Any:
    """Parse an API object of a known kind; KueueParseError for unknown kinds or bad fields.
    `cache`: the caller's ParseCache, when it parses many objects (kueue/parse_cache.py)."""
    if not isinstance(data, Mapping):
        raise KueueParseError("object", "", f"expected a JSON object, got {type(data).__name__}")
    api_version = data.get("apiVersion")
    kind = data.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        raise KueueParseError(str(kind or "object"), "apiVersion" if not isinstance(api_version, str) else "kind",
                              "required field is missing")
    parser = PARSERS.get((group_of(api_version), kind))
    if parser is None:
        raise KueueParseError(kind or "object", "kind", f"unsupported kind {kind!r} in {api_version}")
    return parser(data, cache)
