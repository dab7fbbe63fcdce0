"""Is the API server still answering? One small probe for all of a connection's watches.

A watch stream that a stalled network or a dead peer holds open delivers nothing and raises
nothing: without a probe it is noticed only when its read times out, minutes later, and until then
the console would show stale data as live. Every `interval` seconds the probe asks for `/version`
(a few hundred bytes) with a short timeout:

- answered: every informer with an open, answered stream is confirmed fresh as of now, so the
  status bar's data age means "known to be current this long ago", even on a quiet cluster;
- not answered (timeout, refused, reset, 5xx): every informer whose stream has delivered nothing
  since the probe was sent is told its data may be behind (state STALE, with how long the server
  has been silent) and drops its stream; each resumes from its resourceVersion once the server
  answers, or relists if the server says its version is gone (410) or not reached (504, a
  restarted server). A stream that delivers meanwhile is alive and kept: a busy API server
  answers a probe late while it streams, and dropping its watches would add to its load.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import urllib3

from kueuetop.sources.kube_http import ApiError, request

_log = logging.getLogger(__name__)


class Probed(Protocol):
    def confirm(self) -> None: ...
    def suspect(self, message: str, since: float | None = None) -> None: ...


class LivenessProbe:
    def __init__(self, api: Any, targets: Sequence[Probed], *, interval: float, timeout: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.api = api
        self.targets = list(targets)
        self.interval = interval
        self.timeout = timeout
        self.clock = clock
        self.failures = 0  # probes in a row that got no answer
        self.probes = 0
        self._last_answer: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> LivenessProbe:
        if self.interval > 0:
            self._thread = threading.Thread(target=self._run, name="kueuetop-liveness", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def probe_once(self) -> bool:
        """Ask once; tell the informers what was learned. True when the server answered."""
        self.probes += 1
        asked = time.monotonic()
        try:
            request(self.api, "/version", timeout=(self.timeout, self.timeout))
        except ApiError as e:
            if e.status < 500:  # 401/403/404 on /version: it answered, which is all we ask
                return self._answered()
            return self._silent(f"{e.status} {e.reason or 'error'}", asked)
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as e:
            return self._silent(type(e).__name__, asked)
        return self._answered()

    def _answered(self) -> bool:
        self.failures = 0
        self._last_answer = self.clock()
        for t in self.targets:
            t.confirm()
        return True

    def _silent(self, why: str, asked: float | None = None) -> bool:
        """`asked`: time.monotonic() when the probe was sent (streams that delivered since are kept)."""
        self.failures += 1
        since = "" if self._last_answer is None else f" for {self.clock() - self._last_answer:.0f}s"
        message = f"no answer from the API server{since} ({why}): data may be behind"
        _log.debug("liveness probe: %s", message)
        for t in self.targets:
            t.suspect(message, asked)
        return False

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.probe_once()
