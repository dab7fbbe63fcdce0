"""Where kueuetop keeps its files, per the XDG Base Directory specification.

config  $KUEUETOP_CONFIG_DIR, else $XDG_CONFIG_HOME/kueuetop, else ~/.config/kueuetop   (themes, settings)
state   $KUEUETOP_STATE_DIR,  else $XDG_STATE_HOME/kueuetop,  else ~/.local/state/kueuetop (audit log)
cache   $KUEUETOP_CACHE_DIR,  else $XDG_CACHE_HOME/kueuetop,  else ~/.cache/kueuetop
private $XDG_RUNTIME_DIR/kueuetop when usable, else kueuetop-UID in the temporary directory
        (secrets: the simulator's and the demo's kubeconfigs)

The spec says a relative XDG_* value is invalid and must be ignored, so only absolute paths count.
Nothing here creates directories but the private one (0700, checked before any secret goes in):
callers create what they write, with their own modes.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

APP = "kueuetop"


def _dir(override: str, xdg: str, default: tuple[str, ...], env: Mapping[str, str] | None) -> Path:
    env = os.environ if env is None else env
    if env.get(override):
        return Path(env[override]).expanduser()
    base = env.get(xdg, "")
    if base and os.path.isabs(base):
        return Path(base) / APP
    home = env.get("HOME") or str(Path.home())
    return Path(home, *default, APP)


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    return _dir("KUEUETOP_CONFIG_DIR", "XDG_CONFIG_HOME", (".config",), env)


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    return _dir("KUEUETOP_STATE_DIR", "XDG_STATE_HOME", (".local", "state"), env)


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    return _dir("KUEUETOP_CACHE_DIR", "XDG_CACHE_HOME", (".cache",), env)


class UnsafePath(OSError):
    """A place kueuetop refuses to write a secret to; str() is one line saying why."""


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
