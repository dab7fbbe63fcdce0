"""One object, fetched from the API server when a person asks to see it whole (the YAML view).

The store keeps parsed objects only (store/events.py `Entry`): the wire dicts of 20,000
Workloads and their pods would be most of the console's memory, for a view opened now and then.
A GET of one object is what `kubectl get -o yaml` costs, and shows the server's current copy.
"""

from __future__ import annotations

from typing import Any

from kueuetop.sources.connection import AUTOSCALING_GROUP, KUEUE_GROUP
from kueuetop.sources.kube_http import request
from kueuetop.store import events as K

# kind (store plural) → (API group, version or None for Kueue's served version, namespaced)
_KINDS: dict[str, tuple[str, str | None, bool]] = {
    K.CLUSTER_QUEUES: (KUEUE_GROUP, None, False), K.LOCAL_QUEUES: (KUEUE_GROUP, None, True),
    K.WORKLOADS: (KUEUE_GROUP, None, True), K.RESOURCE_FLAVORS: (KUEUE_GROUP, None, False),
    K.COHORTS: (KUEUE_GROUP, None, False), K.ADMISSION_CHECKS: (KUEUE_GROUP, None, False),
    K.PROVISIONING_CONFIGS: (KUEUE_GROUP, None, False),
    K.PROVISIONING_REQUESTS: (AUTOSCALING_GROUP, "v1", True),
    K.PRIORITY_CLASSES: ("scheduling.k8s.io", "v1", False),
    K.NODES: ("", "v1", False), K.NAMESPACES: ("", "v1", False), K.PODS: ("", "v1", True),
}


class UnknownKind(ValueError):
    """The kind has no API path here (not one the console watches)."""


def object_path(kind: str, key: tuple[str, str], kueue_version: str = "v1beta2") -> str:
    """The GET path of one object of a store kind; `key` is (namespace or "", name)."""
    try:
        group, version, namespaced = _KINDS[kind]
    except KeyError:
        raise UnknownKind(f"no API path for kind {kind!r}") from None
    ns, name = key
    if not name or (namespaced and not ns):
        raise ValueError(f"{kind} needs a {'namespace and ' if namespaced else ''}name, got {key!r}")
    base = f"/apis/{group}/{version or kueue_version}" if group else f"/api/{version}"
    scope = f"/namespaces/{ns}" if namespaced else ""
    return f"{base}{scope}/{kind}/{name}"


def fetch_object(api: Any, kind: str, key: tuple[str, str], *, kueue_version: str = "v1beta2",
                 timeout: float = 10.0) -> dict[str, Any]:
    """GET one object as the server has it now; raises ApiError (404: gone), transport errors,
    UnknownKind, or ValueError for an answer that is not an object."""
    body = request(api, object_path(kind, key, kueue_version), timeout=timeout)
    if not isinstance(body, dict):
        raise ValueError("the answer is not a JSON object")
    return body
