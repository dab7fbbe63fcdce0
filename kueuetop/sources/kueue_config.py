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

import yaml

from kueuetop.kueue.config import (
    MANAGER_CONFIG_KEY,
    MANAGER_CONFIG_NAME,
    MANAGER_CONFIG_NAMESPACE,
    KueueConfig,
    parse_kueue_config,
)
from kueuetop.kueue.errors import KueueParseError
from kueuetop.sources.configmap_read import read_configmap_key

__all__ = ["read_kueue_config"]


def read_kueue_config(api: Any, timeout: float = 5.0) -> tuple[KueueConfig | None, str]:
    """(the configuration, "") or (None, why not)."""
    what = "Kueue's configuration"
    text, why, _ = read_configmap_key(api, MANAGER_CONFIG_NAMESPACE, MANAGER_CONFIG_NAME, MANAGER_CONFIG_KEY, what, timeout)
    if text is None:
        return None, why
    try:
        return parse_kueue_config(yaml.safe_load(text)), ""
    except (yaml.YAMLError, KueueParseError, ValueError, TypeError) as e:
        where = f"{MANAGER_CONFIG_NAMESPACE}/{MANAGER_CONFIG_NAME}"
        return None, f"{what} in {where} does not parse: {str(e).splitlines()[0] if str(e) else e}"
