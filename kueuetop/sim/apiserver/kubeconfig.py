"""A kubeconfig pointing kubectl and the kubernetes client at the simulated cluster.

It holds a bearer token, so it is written only into a private place: created exclusively
(O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600) so a file or symlink planted beforehand by someone else
is refused rather than followed or reused with its own mode.
"""

from __future__ import annotations

import base64
import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import yaml


class UnsafePath(OSError):
    """A place kueuetop refuses to write a secret to; str() is one line saying why."""


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


def private_dir(env: dict[str, str] | None = None) -> Path:
    """kueuetop's per-user private directory for secrets: $XDG_RUNTIME_DIR/kueuetop when that is
    set and usable, else kueuetop-UID in the system temporary directory. Created 0700 if missing;
    refused (UnsafePath) unless it is a real directory owned by us with mode 0700."""
    env = dict(os.environ) if env is None else env
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime) and _usable_runtime_dir(Path(runtime)):
        return _checked_dir(Path(runtime) / "kueuetop")
    return _checked_dir(Path(tempfile.gettempdir()) / f"kueuetop-{os.getuid()}")


def _usable_runtime_dir(p: Path) -> bool:
    # The spec: owned by the user, mode 0700. Anything else (a stale value inherited through
    # sudo, another user's directory) is not ours to write secrets into.
    try:
        st = os.stat(p)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and os.access(p, os.W_OK | os.X_OK)


def _checked_dir(p: Path) -> Path:
    with contextlib.suppress(FileExistsError):
        os.mkdir(p, 0o700)
    try:
        st = os.lstat(p)
    except OSError as exc:
        raise UnsafePath(f"cannot use {p}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePath(f"refusing to use {p}: it is a symlink")
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(f"refusing to use {p}: it is not a directory")
    if st.st_uid != os.getuid():
        raise UnsafePath(f"refusing to use {p}: it belongs to another user (uid {st.st_uid})")
    if stat.S_IMODE(st.st_mode) != 0o700:
        raise UnsafePath(f"refusing to use {p}: its mode is {stat.S_IMODE(st.st_mode):04o}, not 0700 "
                         "(others could read or replace its files)")
    return p
