"""Where kueuetop's user files live (XDG base directories).

A private stand-in: the project-wide `kueuetop/xdg.py` did not exist when the console parts were
written. Swap the body for it once it lands; callers only use `config_dir()`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or ""
    # The spec says a relative XDG path is invalid and must be ignored.
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".config"
    return root / "kueuetop"
