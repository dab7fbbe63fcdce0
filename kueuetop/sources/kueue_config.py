"""Kueue's own configuration, read once from the cluster: what the triage board needs to say
when a PodsReady timeout will evict a workload and how long its requeue backoff will be.

Kueue keeps it in the ConfigMap `kueue-system/kueue-manager-config` (key
`controller_manager_config.yaml`). Reading it needs `get configmaps` in kueue-system, which many
users lack: a 403, a 404 (another install layout), an unreachable server or a document that does
not parse all give no configuration and a one-line reason, never an exception; the console then
shows everything that does not depend on it.
"""

from __future__ import annotations

from typing import Any

import urllib3
import yaml

from kueuetop.kueue.config import (
    MANAGER_CONFIG_KEY,
    MANAGER_CONFIG_NAME,
    MANAGER_CONFIG_NAMESPACE,
    KueueConfig,
    parse_kueue_config,
)
from kueuetop.kueue.errors import KueueParseError
from kueuetop.sources.kube_http import ApiError, request

__all__ = ["read_kueue_config"]


def read_kueue_config(api: Any, timeout: float = 5.0) -> tuple[KueueConfig | None, str]:
    """(the configuration, "") or (None, why not)."""
    path = f"/api/v1/namespaces/{MANAGER_CONFIG_NAMESPACE}/configmaps/{MANAGER_CONFIG_NAME}"
    where = f"{MANAGER_CONFIG_NAMESPACE}/{MANAGER_CONFIG_NAME}"
    try:
        cm = request(api, path, timeout=(timeout, timeout))
    except ApiError as e:
        if e.status == 403:
            return None, f"Kueue's configuration: forbidden to get configmap {where}"
        if e.status == 404:
            return None, f"Kueue's configuration: no configmap {where}"
        return None, f"Kueue's configuration: {e}"
    except (urllib3.exceptions.HTTPError, OSError, ValueError) as e:
        return None, f"Kueue's configuration: {type(e).__name__}: {e}"
    data = cm.get("data") if isinstance(cm, dict) else None
    text = data.get(MANAGER_CONFIG_KEY) if isinstance(data, dict) else None
    if not isinstance(text, str):
        return None, f"Kueue's configuration: {where} has no {MANAGER_CONFIG_KEY}"
    try:
        return parse_kueue_config(yaml.safe_load(text)), ""
    except (yaml.YAMLError, KueueParseError, ValueError, TypeError) as e:
        return None, f"Kueue's configuration in {where} does not parse: {str(e).splitlines()[0] if str(e) else e}"
