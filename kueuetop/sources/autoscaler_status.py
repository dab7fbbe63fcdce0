"""cluster-autoscaler's status, read once from the cluster: how far each node pool may grow.

The ConfigMap `kube-system/cluster-autoscaler-status` (kueue/autoscaler_status.py reads its
text). Reading it needs `get configmaps` in kube-system, which many users lack: a 403, a 404 (no
cluster-autoscaler, or one that does not write it), an unreachable server or a text that does not
parse all give no status and a one-line reason, never an exception (`kueue/pool_growth.py` says
what a forecast then assumes of the pools).
"""

from __future__ import annotations

from typing import Any

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
from kueuetop.kueue.pool_growth import AutoscalerRead
from kueuetop.sources.configmap_read import read_configmap_key

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


def read_autoscaler_status(api: Any, timeout: float = 5.0) -> AutoscalerRead:
    """The node groups, or None and why not (and whether the ConfigMap is absent: a 404)."""
    text, why, absent = read_configmap_key(api, STATUS_NAMESPACE, STATUS_NAME, STATUS_KEY, "autoscaler limits",
                                           timeout, absent=" (no cluster-autoscaler writes one)")
    if text is None:
        return AutoscalerRead(None, why, absent)
    try:
        return AutoscalerRead(parse_autoscaler_status(text))
    except KueueParseError as e:
        return AutoscalerRead(None, f"autoscaler limits: {e}")
