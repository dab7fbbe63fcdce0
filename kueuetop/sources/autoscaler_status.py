"""cluster-autoscaler's status, read once from the cluster: how far each node pool may grow.

The ConfigMap `kube-system/cluster-autoscaler-status` (kueue/autoscaler_status.py reads its
text). Reading it needs `get configmaps` in kube-system, which many users lack: a 403, a 404 (no
cluster-autoscaler, or one that does not write it), an unreachable server or a text that does not
parse all give no status and a one-line reason, never an exception; the forecast then takes the
pools at their current size, as it says.
"""

from __future__ import annotations

from typing import Any

import urllib3
import yaml

from kueuetop.kueue.autoscaler_status import (
    STATUS_KEY,
    STATUS_NAME,
    STATUS_NAMESPACE,
    NodeGroupStatus,
    legacy_node_groups,
    node_groups,
    status_format,
)
from kueuetop.kueue.errors import KueueParseError
from kueuetop.sources.kube_http import ApiError, request

__all__ = ["parse_autoscaler_status", "read_autoscaler_status"]
_OBJ = f"ConfigMap {STATUS_NAMESPACE}/{STATUS_NAME}"


def parse_autoscaler_status(text: str) -> list[NodeGroupStatus]:
    """The node groups of a `cluster-autoscaler-status` ConfigMap's `status` text, either format
    cluster-autoscaler writes. Raises KueueParseError (one line) when it is neither."""
    if not isinstance(text, str) or not text.strip():
        raise KueueParseError(_OBJ, "data.status", "empty")
    fmt = status_format(text)
    if fmt == "yaml":
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise KueueParseError(_OBJ, "data.status", f"not YAML: {str(e).splitlines()[0]}") from None
        return node_groups(doc)
    if fmt == "legacy":
        return legacy_node_groups(text)
    raise KueueParseError(_OBJ, "data.status", "in no format cluster-autoscaler writes")


def read_autoscaler_status(api: Any, timeout: float = 5.0) -> tuple[list[NodeGroupStatus] | None, str]:
    """(the node groups, "") or (None, why not)."""
    where = f"{STATUS_NAMESPACE}/{STATUS_NAME}"
    try:
        cm = request(api, f"/api/v1/namespaces/{STATUS_NAMESPACE}/configmaps/{STATUS_NAME}", timeout=(timeout, timeout))
    except ApiError as e:
        if e.status == 403:
            return None, f"autoscaler limits: forbidden to get configmap {where}"
        if e.status == 404:
            return None, f"autoscaler limits: no configmap {where} (no cluster-autoscaler writes one)"
        return None, f"autoscaler limits: {e}"
    except (urllib3.exceptions.HTTPError, OSError, ValueError) as e:
        return None, f"autoscaler limits: {type(e).__name__}: {e}"
    data = cm.get("data") if isinstance(cm, dict) else None
    text = data.get(STATUS_KEY) if isinstance(data, dict) else None
    if not isinstance(text, str):
        return None, f"autoscaler limits: {where} has no {STATUS_KEY}"
    try:
        return parse_autoscaler_status(text), ""
    except KueueParseError as e:
        return None, f"autoscaler limits: {e}"
