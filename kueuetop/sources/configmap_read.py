"""One key of one ConfigMap, read once: what the console learns from its cluster's controllers'
configuration and status (Kueue's configuration, cluster-autoscaler's status).

Reading needs `get configmaps` in that namespace, which many users lack: a 403, a 404, an
unreachable server or a missing key all give no text and a one-line reason, never an exception.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import urllib3

from kueuetop.sources.kube_http import ApiError, request


class ConfigMapText(NamedTuple):
    text: str | None  # the text under the key; None: see `why`
    why: str  # "<what>: why not", "" when read
    absent: bool = False  # the server said the ConfigMap does not exist (a 404, not a 403 or a failure)


def read_configmap_key(api: Any, namespace: str, name: str, key: str, what: str,
                       timeout: float = 5.0, absent: str = "") -> ConfigMapText:
    """The text under `key`, or None and "<what>: why not". `absent`: said after a 404."""
    where = f"{namespace}/{name}"
    try:
        cm = request(api, f"/api/v1/namespaces/{namespace}/configmaps/{name}", timeout=(timeout, timeout))
    except ApiError as e:
        if e.status == 403:
            return ConfigMapText(None, f"{what}: forbidden to get configmap {where}")
        if e.status == 404:
            return ConfigMapText(None, f"{what}: no configmap {where}{absent}", absent=True)
        return ConfigMapText(None, f"{what}: {e}")
    except (urllib3.exceptions.HTTPError, OSError, ValueError) as e:
        return ConfigMapText(None, f"{what}: {type(e).__name__}: {e}")
    data = cm.get("data") if isinstance(cm, dict) else None
    text = data.get(key) if isinstance(data, dict) else None
    if not isinstance(text, str):
        return ConfigMapText(None, f"{what}: {where} has no {key}")
    return ConfigMapText(text, "")
