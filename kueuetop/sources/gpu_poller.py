"""Feeds GPU telemetry into the store from one source (Prometheus or the direct exporter scrape).

`GpuPoller(store, source, interval)` runs `source.gpus()` on its own thread and writes what it
gets with `store.put_gpu_samples`, plus the source's state and data age (`set_source_state`):

* the next poll is scheduled `interval` seconds after the previous one *finished* (as Dolphie
  schedules its refresh worker), so a slow Prometheus or a large scrape never piles polls up;
* when the source fails, its samples stay in the store and the source turns `error` with the
  source's one-line reason: every view then draws the GPUs as stale, with their age, never as
  0 % (ARCHITECTURE §4, §6). Polls back off (doubling, capped at `max_backoff`) while failing
  and return to `interval` on the first success, which marks the data fresh again;
* the sources never raise; the poller also catches anything unexpected so its thread lives on.

Only nodes whose samples changed are written (a DCGM sample changes every 15–30 s, polls may be
faster), which keeps the GPU history free of repeated points and the console's redraws cheap.

`gpu_source_for(conn, prometheus_url, token, headers)` picks the source: Prometheus when a URL
is given, else the direct scrape of the dcgm-exporter pods through the API server's pod proxy,
within `scrape_budget` bytes a minute (`sources/scrape_budget.py`). `set_priority_nodes` tells
the scrape which nodes the console shows; Prometheus answers for the whole fleet and ignores it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from kueuetop.kueue.gpu import GpuSample
from kueuetop.sources.connection import Connection
from kueuetop.sources.dcgm import GpuReading
from kueuetop.sources.prom import PromConfig, PrometheusSource
from kueuetop.sources.scrape import ScrapeSource
from kueuetop.sources.scrape_budget import DEFAULT_BUDGET
from kueuetop.store import SourceState, Store

__all__ = ["PROMETHEUS_SOURCE", "SCRAPE_SOURCE", "GpuPoller", "GpuSource", "gpu_source_for", "source_name"]

_log = logging.getLogger(__name__)

PROMETHEUS_SOURCE = "gpu/prometheus"  # store source names, shown in the status bar
SCRAPE_SOURCE = "gpu/scrape"


class GpuSource(Protocol):
    def gpus(self) -> GpuReading: ...


def source_name(source: object) -> str:
    return PROMETHEUS_SOURCE if isinstance(source, PrometheusSource) else SCRAPE_SOURCE


def gpu_source_for(conn: Connection, prometheus_url: str | None = None, token: str | None = None,
                   headers: Mapping[str, str] | None = None, *, timeout: float = 10.0,
                   selector: str = "", scrape_budget: int = DEFAULT_BUDGET,
                   burst_seconds: float = 5.0) -> PrometheusSource | ScrapeSource:
    """Prometheus when a URL is given, else the exporters scraped through the API server.

    The bearer token may come from KUEUETOP_PROMETHEUS_TOKEN, so it never appears in a process
    list (e.g. `gcloud auth print-access-token` for Google Managed Prometheus). `scrape_budget`:
    bytes a minute the scrape may pull through the API server (0: unlimited, `AUTO`: derived
    from the fleet); `burst_seconds`:
    how many seconds of it one poll may spend at once (a one-shot command takes a minute's).
    """
    if prometheus_url:
        token = token or os.environ.get("KUEUETOP_PROMETHEUS_TOKEN") or None
        return PrometheusSource(PromConfig(url=prometheus_url, token=token, headers=dict(headers or {}),
                                           timeout=timeout, selector=selector))
    # Through the pod proxy only the API server must be reachable (bastion hosts, §4).
    return ScrapeSource(conn.api, timeout=min(timeout, 5.0), budget=scrape_budget, burst_seconds=burst_seconds)


class GpuPoller:
    """Polls `source` every `interval` seconds (after each poll ends) into `store`."""

    def __init__(self, store: Store, source: GpuSource, interval: float = 5.0, *, name: str | None = None,
                 max_backoff: float = 60.0, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.source = source
        self.interval = max(0.05, interval)
        self.max_backoff = max(self.interval, max_backoff)
        self.name = name or source_name(source)
        self._clock = clock
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._lock = threading.Lock()  # one poll at a time (poll_once may be called from outside)
        self._failures = 0
        self._thread: threading.Thread | None = None
        self.polls = 0
        self.last: GpuReading | None = None
        # A poll that never comes back (hung thread) must still read as stale: a few intervals.
        timeout = getattr(getattr(source, "config", None), "timeout", None) or getattr(source, "timeout", 10.0)
        self.stale_after = 3 * self.interval + float(timeout)
        store.set_source_state(self.name, SourceState.CONNECTING, stale_after=self.stale_after)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> GpuPoller:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"kueuetop-{self.name}", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 3.0) -> None:
        """Ask the thread to end and wait up to `timeout` (a poll in flight ends by its own timeout)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._thread is None or not self._thread.is_alive():
            self.store.set_source_state(self.name, SourceState.STOPPED, "stopped")
        close = getattr(self.source, "close", None)
        if callable(close):
            try:
                close()
            except Exception:  # closing a session is best effort
                _log.debug("closing %s failed", self.name, exc_info=True)

    def set_priority_nodes(self, names: Iterable[str]) -> None:
        """Nodes the console shows, read first by a budgeted scrape (thread-safe; no-op otherwise)."""
        setter = getattr(self.source, "set_priority_nodes", None)
        if callable(setter):
            setter(names)

    def refresh(self) -> None:
        """Poll now instead of at the next scheduled time (a refresh key)."""
        self._wake.set()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        while not self._stop.is_set():
            ok = self.poll_once()
            if self._stop.is_set():
                break
            delay = self.interval if ok else self._backoff()
            self._wake.wait(delay)
            self._wake.clear()

    def _backoff(self) -> float:
        return min(self.max_backoff, self.interval * 2 ** min(self._failures - 1, 16))

    # ------------------------------------------------------------------ one poll
    def poll_once(self) -> bool:
        """Read the source once and write the result to the store; True when the data is fresh."""
        with self._lock:
            try:
                reading = self.source.gpus()
            except Exception as exc:  # the sources never raise; a bug must not kill the thread
                _log.exception("gpu source %s failed", self.name)
                self._failed(f"internal error: {type(exc).__name__}", stale=True)
                return False
            self.polls += 1
            self.last = reading
            status = reading.status
            if not status.ok:
                # stale=False: the source answered but has nothing (no exporter pods, say).
                self._failed(status.message or "no data", stale=reading.stale)
                return False
            self._failures = 0
            self._write(reading)
            # ok: data fresh now; a partial scrape (some exporters failed) stays live, with why.
            message = "" if status.message == "ok" else status.message
            self.store.set_source_state(self.name, SourceState.LIVE, message, ok=True,
                                        stale_after=self.stale_after)
            return True

    def _failed(self, message: str, *, stale: bool) -> None:
        self._failures += 1
        # Keep the last samples in the store: the state makes every view draw them as stale.
        state = SourceState.ERROR if stale else SourceState.UNAVAILABLE
        self.store.set_source_state(self.name, state, message, stale_after=self.stale_after)

    def _write(self, reading: GpuReading) -> None:
        have = self.store.gpus()
        per_node: dict[str, int] = {}
        for node, _gpu in have:
            per_node[node] = per_node.get(node, 0) + 1
        by_node: dict[str, list[GpuSample]] = {}
        for s in reading.samples:
            by_node.setdefault(s.node, []).append(s)
        # put_gpu_samples replaces whole nodes, so a node is written whole or not at all.
        changed = [s for node, samples in by_node.items()
                   if len(samples) != per_node.get(node, 0) or any(have.get(s.key) != s for s in samples)
                   for s in samples]
        if changed:
            self.store.put_gpu_samples(changed, reading.at or self._clock(), self.name)
