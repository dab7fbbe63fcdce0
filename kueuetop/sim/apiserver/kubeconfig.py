"""A kubeconfig pointing kubectl and the kubernetes client at the simulated cluster.

It holds a bearer token, so it is written only into a private place: created exclusively
(O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600) so a file or symlink planted beforehand by someone else
is refused rather than followed or reused with its own mode.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import yaml

from kueuetop.xdg import UnsafePath


def kubeconfig_dict(url: str, token: str | None = None, context: str = "kueuetop-sim",
                    namespace: str | None = None, ca_pem: bytes | None = None) -> dict[str, Any]:
    user: dict[str, Any] = {"token": token} if token else {}
    ctx: dict[str, Any] = {"cluster": context, "user": context}
    if namespace:
        ctx["namespace"] = namespace
    cluster: dict[str, Any] = {"server": url}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": cluster}],
        "users": [{"name": context, "user": user}],
        "contexts": [{"name": context, "context": ctx}],
        "current-context": context,
        "preferences": {},
    }


def write_kubeconfig(path: str | os.PathLike[str], url: str, token: str | None = None,
                     context: str = "kueuetop-sim", namespace: str | None = None,
                     ca_pem: bytes | None = None) -> Path:
    """Write a kubeconfig (mode 0600, created exclusively, never through a symlink) and return
    its path. An existing file or symlink at `path` is refused with UnsafePath."""
    p = Path(path)
    p.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    text = yaml.safe_dump(kubeconfig_dict(url, token, context, namespace, ca_pem), sort_keys=False)
    write_secret_file(p, text.encode())
    return p


def write_secret_file(path: Path, data: bytes) -> None:
    """Create `path` exclusively with mode 0600 and write `data`; never follows a symlink."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        kind = "a symlink" if path.is_symlink() else "a file"
        raise UnsafePath(f"refusing to write {path}: {kind} is already there (remove it or pick another path)") \
            from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
