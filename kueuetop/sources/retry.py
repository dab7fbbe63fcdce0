"""Retry of one-shot requests (discovery, the headless commands' reads) on the answers an API
server gives when it is busy: 429 and 5xx, as client-go's rest client and the informers do.

Exponential backoff with full jitter, `Retry-After` honoured, never past the caller's deadline:
the last error is raised when the time is up, so a command still ends with its one-line error.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from kueuetop.sources.kube_http import ApiError

T = TypeVar("T")


def retryable(e: ApiError) -> bool:
    return e.status == 429 or e.status >= 500


def call_with_retry(fn: Callable[[], T], *, deadline: float, initial: float = 0.1, maximum: float = 2.0,
                    clock: Callable[[], float] = time.monotonic,
                    sleep: Callable[[float], None] = time.sleep) -> T:
    """`fn()`, again after a busy answer until `deadline` (a `clock()` time) would be passed."""
    delay = initial
    while True:
        try:
            return fn()
        except ApiError as e:
            if not retryable(e):
                raise
            wait = delay / 2 + random.random() * delay / 2
            if e.retry_after is not None:
                wait = max(wait, e.retry_after)
            if clock() + wait >= deadline:
                raise
            sleep(wait)
            delay = min(maximum, delay * 2)
