"""External binaries the live-path tests run: skip outside CI when missing, fail under CI=true."""

from __future__ import annotations

import os
import shutil

import pytest


def require_binary(name: str) -> str:
    """Path of `name`; in CI a missing binary fails the test rather than hiding it behind a skip."""
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{name} is required in CI (.ci/run installs it)")
        pytest.skip(f"{name} not installed")
    return path
