"""A kubeconfig pointing kubectl and the kubernetes client at the simulated cluster."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml


def kubeconfig_dict(url: str, token: str | None = None, context: str = "kueuetop-sim",
                    namespace: str | None = None) -> dict[str, Any]:
    user: dict[str, Any] = {"token": token} if token else {}
    ctx: dict[str, Any] = {"cluster": context, "user": context}
    if namespace:
        ctx["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": {"server": url}}],
        "users": [{"name": context, "user": user}],
        "contexts": [{"name": context, "context": ctx}],
        "current-context": context,
        "preferences": {},
    }


def write_kubeconfig(path: str | os.PathLike[str], url: str, token: str | None = None,
                     context: str = "kueuetop-sim", namespace: str | None = None) -> Path:
    """Write a kubeconfig (mode 0600, it may hold a token) and return its path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(kubeconfig_dict(url, token, context, namespace), sort_keys=False)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return p
