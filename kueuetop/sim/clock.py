"""Simulated time: virtual (jump to the next event), or real time scaled by a speed factor.

Simulated time never runs backwards: `advance_to` ignores earlier times, and the real-time
clock derives from a monotonic source.
"""

from __future__ import annotations

import threading
import time


class SimClock:
    """`speed=None` → virtual time; otherwise simulated seconds per wall second."""

    def __init__(self, start: float, speed: float | None = None) -> None:
        if speed is not None and speed <= 0:
            raise ValueError("speed must be > 0")
        self.start = start
        self.speed = speed
        self._virtual_now = start
        self._mono0 = time.monotonic()
        self._lock = threading.Lock()
        self._paused_at: float | None = None  # simulated time held by pause()

    @property
    def virtual(self) -> bool:
        return self.speed is None

    def now(self) -> float:
        if self.speed is None:
            return self._virtual_now
        paused = self._paused_at
        if paused is not None:
            return paused
        return self.start + (time.monotonic() - self._mono0) * self.speed

    def pause(self) -> None:
        """Real time: hold simulated time still (nothing falls due, telemetry stands) until resume()."""
        with self._lock:
            if self.speed is not None and self._paused_at is None:
                self._paused_at = self.now()

    def resume(self) -> None:
        """Real time: let simulated time run on from where pause() held it (no jump)."""
        with self._lock:
            paused = self._paused_at
            if paused is None or self.speed is None:
                return
            # Move the origin so now() continues from `paused`.
            self._mono0 = time.monotonic() - (paused - self.start) / self.speed
            self._paused_at = None

    def elapsed(self) -> float:
        return self.now() - self.start

    def advance_to(self, t: float) -> None:
        """Virtual time: jump forward to `t` (never back). Real time: no-op."""
        if self.speed is None:
            with self._lock:
                if t > self._virtual_now:
                    self._virtual_now = t

    def wait_until(self, t: float | None, wake: threading.Event, max_wall: float = 1.0) -> None:
        """Real time: sleep until simulated time `t` (or `max_wall` seconds, or `wake` is set).

        Virtual time: jump to `t` at once.
        """
        if self.speed is None:
            if t is not None:
                self.advance_to(t)
            return
        wall = max_wall if t is None else min(max_wall, max(0.0, (t - self.now()) / self.speed))
        if wall > 0:
            wake.wait(wall)
        wake.clear()
