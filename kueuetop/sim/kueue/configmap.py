"""Kueue's configuration as a cluster holds it: the ConfigMap `kueue-system/kueue-manager-config`,
key `controller_manager_config.yaml`, a `config.kueue.x-k8s.io` Configuration document.

Kueue's manifests generate that ConfigMap (config/components/manager: configMapGenerator
`manager-config` under the `kueue-` name prefix, mounted as the manager's `--config`). The
simulator writes the scenario's SimConfig there, so a console reads the waitForPodsReady timeout,
backoff and fair sharing the simulated Kueue runs with, the way it reads a real cluster's.
"""

from __future__ import annotations

from typing import Any

import yaml

from kueuetop.kueue.config import MANAGER_CONFIG_KEY as KEY
from kueuetop.kueue.config import MANAGER_CONFIG_NAME as NAME
from kueuetop.kueue.config import MANAGER_CONFIG_NAMESPACE as NAMESPACE

CONFIG_API = "config.kueue.x-k8s.io/v1beta1"


def configuration_document(config: dict[str, Any]) -> str:
    """The Configuration YAML for a scenario's Kueue settings (fairSharing, waitForPodsReady,
    featureGates, as SimConfig carries them in Kueue's own field names)."""
    doc: dict[str, Any] = {"apiVersion": CONFIG_API, "kind": "Configuration",
                           "namespace": NAMESPACE, "manageJobsWithoutQueueName": False}
    doc.update({k: v for k, v in config.items() if k not in ("apiVersion", "kind")})
    return yaml.safe_dump(doc, sort_keys=False)


def manager_configmap(config: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {"app.kubernetes.io/name": "kueue",
                                                                          "control-plane": "controller-manager"}},
            "data": {KEY: configuration_document(config)}}
