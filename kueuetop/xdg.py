"""Where kueuetop keeps its files, per the XDG Base Directory specification.

config  $KUEUETOP_CONFIG_DIR, else $XDG_CONFIG_HOME/kueuetop, else ~/.config/kueuetop   (themes, settings)
state   $KUEUETOP_STATE_DIR,  else $XDG_STATE_HOME/kueuetop,  else ~/.local/state/kueuetop (audit log)
cache   $KUEUETOP_CACHE_DIR,  else $XDG_CACHE_HOME/kueuetop,  else ~/.cache/kueuetop

The spec says a relative XDG_* value is invalid and must be ignored, so only absolute paths count.
Nothing here creates directories: callers create what they write, with their own modes.
"""

from __future__ import annotations

import os
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
