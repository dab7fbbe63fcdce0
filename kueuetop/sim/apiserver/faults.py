"""Injected faults: dropped watch streams, forced 410s, error answers, latency."""

from __future__ import annotations

import math
import random
import threading
import time
from typing import Any

from kueuetop.sim.apiserver.status import ApiError


class Faults:
    """Fault settings, safe to change while the server runs.

    drop_watches_every: every N seconds (on a clock shared by all streams) every open watch
        stream ends, as when an API server restarts or a load balancer cuts idle streams.
    error_rate / error_code: answer this share of requests with 429 (with Retry-After) or 5xx.
    latency_ms: delay every request.
    """

    def __init__(self, drop_watches_every: float = 0.0, error_rate: float = 0.0, error_code: int = 429,
                 latency_ms: float = 0.0, seed: int = 0, retry_after_seconds: int = 1) -> None:
        self._lock = threading.Lock()
        self.drop_watches_every = float(drop_watches_every)
        self.error_rate = float(error_rate)
        self.error_code = int(error_code)
        self.latency_ms = float(latency_ms)
        self.retry_after_seconds = int(retry_after_seconds)
        self.seed = seed
        self._rng = random.Random(seed)
        self._epoch = time.monotonic()
        self.delayed = 0  # requests that waited for latency_ms: tests check the delay was applied

    def update(self, body: dict[str, Any]) -> None:
        """Apply settings from the JSON of POST /kueuetop/v1/faults (camelCase keys)."""
        with self._lock:
            if "dropWatchesEverySeconds" in body:
                self.drop_watches_every = max(0.0, float(body["dropWatchesEverySeconds"] or 0))
                self._epoch = time.monotonic()
            if "errorRate" in body:
                rate = float(body["errorRate"] or 0)
                if not 0 <= rate <= 1:
                    raise ApiError(400, "errorRate must be between 0 and 1")
                self.error_rate = rate
            if "errorCode" in body:
                code = int(body["errorCode"])
                if code != 429 and not 500 <= code <= 599:
                    raise ApiError(400, "errorCode must be 429 or 5xx")
                self.error_code = code
            if "latencyMs" in body:
                self.latency_ms = max(0.0, float(body["latencyMs"] or 0))
            if "retryAfterSeconds" in body:
                self.retry_after_seconds = max(0, int(body["retryAfterSeconds"]))
            if "seed" in body:
                self.seed = int(body["seed"])
                self._rng = random.Random(self.seed)

    def to_json(self) -> dict[str, Any]:
        return {"dropWatchesEverySeconds": self.drop_watches_every, "errorRate": self.error_rate,
                "errorCode": self.error_code, "latencyMs": self.latency_ms,
                "retryAfterSeconds": self.retry_after_seconds, "seed": self.seed}

    def delay(self) -> None:
        if self.latency_ms > 0:
            with self._lock:
                self.delayed += 1
            time.sleep(self.latency_ms / 1000.0)

    def injected_error(self) -> ApiError | None:
        with self._lock:
            if self.error_rate <= 0 or self._rng.random() >= self.error_rate:
                return None
            code = self.error_code
        if code == 429:
            return ApiError(429, "Too many requests, please try again later.", "TooManyRequests",
                            {"retryAfterSeconds": self.retry_after_seconds},
                            headers={"Retry-After": str(self.retry_after_seconds)})
        if code == 503:
            return ApiError(503, "the server is currently unable to handle the request", "ServiceUnavailable")
        return ApiError(code, "Internal error occurred: injected fault", "InternalError")

    def watch_deadline(self, started: float) -> float | None:
        """Monotonic time at which a stream started at `started` must be dropped, or None."""
        every = self.drop_watches_every
        if every <= 0:
            return None
        n = math.floor((started - self._epoch) / every) + 1
        return self._epoch + n * every
