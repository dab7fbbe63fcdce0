"""Bounded waiting and fast informer settings shared by the live-path test packages."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kueuetop.sources.informer import InformerConfig

# Short timeouts and backoffs so fault-injection tests converge in seconds.
FAST = InformerConfig(watch_timeout=5, request_timeout=5, connect_timeout=2, backoff_initial=0.05,
                      backoff_max=0.5, forbidden_retry=0.5, silence_bound=15, probe_interval=0.5,
                      probe_timeout=2.0)


def wait_until(pred: Callable[[], Any], timeout: float = 10.0, step: float = 0.05) -> Any:
    """Poll `pred` until it returns something truthy or `timeout` passes; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step)
