"""GPU telemetry without Prometheus: scrape every dcgm-exporter pod through the API server's pod
proxy (`/api/v1/namespaces/{ns}/pods/{pod}:{port}/proxy/metrics`) with the kubernetes client.

Only the API server has to be reachable — the same path `kubectl get --raw` uses — so this works
from a bastion host that cannot reach pod IPs. Each round lists the exporter pods (labels of the
GPU Operator / Helm chart `app=nvidia-dcgm-exporter`, upstream `app.kubernetes.io/name=dcgm-exporter`
and GKE's managed `app.kubernetes.io/name=gke-managed-dcgm-exporter`, reference §2.1, in any
namespace), then fetches them with bounded concurrency and a per-pod timeout.

Failures stay local: a pod that times out, answers 5xx or serves garbage gets an error in its
`ExporterScrape` and its GPUs keep their last sample, marked stale; the other pods are unaffected.
A malformed exposition never breaks the source: unparsable lines are skipped and counted
(`sources/exposition.py`). Nothing raises into the caller's loop.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from kueuetop.kueue.gpu import GpuSample
from kueuetop.sources.dcgm import GpuReading, PodRef, SourceStatus, read_exposition
from kueuetop.sources.kube_http import ApiError, request, request_bytes

__all__ = ["EXPORTER_SELECTORS", "ExporterScrape", "ScrapeSource"]

EXPORTER_SELECTORS: tuple[str, ...] = (
    "app=nvidia-dcgm-exporter",  # GPU Operator, dcgm-exporter Helm chart
    "app.kubernetes.io/name=dcgm-exporter",
    "app.kubernetes.io/name=gke-managed-dcgm-exporter",  # GKE managed DCGM (§2.1)
)
DEFAULT_PORT = 9400  # dcgm-exporter listens on :9400 /metrics (§1.1)
MAX_BODY = 64 * 1024 * 1024  # an 8-GPU exporter serves ~100 KB; anything this big is not one


@dataclass(frozen=True, slots=True)
class ExporterScrape:
    """The outcome of one exporter pod in the last round."""

    namespace: str
    pod: str
    node: str
    ok: bool
    error: str = ""
    samples: int = 0  # GPU samples produced (devices)
    skipped_lines: int = 0  # exposition lines the parser could not read
    seconds: float = 0.0
    last_success: float | None = None


@dataclass(slots=True)
class _PodState:
    samples: list[GpuSample] = field(default_factory=list)
    sharers: dict[tuple[str, str], tuple[PodRef, ...]] = field(default_factory=dict)
    last_success: float | None = None


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}


def _port(pod: Mapping[str, Any]) -> int:
    """The metrics port: a container port named `metrics` (GKE, Helm), else 9400."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
    ports = [p for c in spec.get("containers") or () if isinstance(c, Mapping)
             for p in c.get("ports") or () if isinstance(p, Mapping)]
    for p in ports:
        if p.get("name") == "metrics" and isinstance(p.get("containerPort"), int):
            return p["containerPort"]
    return DEFAULT_PORT


def _api_error(exc: BaseException) -> str:
    if isinstance(exc, ApiError):
        reason = (exc.reason or "").strip()
        return f"HTTP {exc.status} {reason}".strip()[:200]
    name = type(exc).__name__
    text = str(exc)
    if "timed out" in text.lower() or "Timeout" in name:
        return "timed out"
    if "refused" in text.lower():
        return "connection refused"
    return f"error: {name}"


class ScrapeSource:
    """Direct scrape of all dcgm-exporter pods; `gpus()` never raises."""

    def __init__(self, api: client.ApiClient, *, selectors: Iterable[str] = EXPORTER_SELECTORS,
                 namespace: str | None = None, concurrency: int = 8, timeout: float = 5.0,
                 stale_after: float = 90.0, clock: Callable[[], float] = time.time) -> None:
        # Raw requests through the client's pool and credentials (sources/kube_http.py): the
        # generated CoreV1Api would cost a second of imports for two GETs.
        self._api = api
        self.selectors = tuple(selectors)
        self.namespace = namespace
        self.concurrency = max(1, concurrency)
        self.timeout = timeout
        self.stale_after = stale_after
        self._clock = clock
        self._lock = threading.Lock()
        self._pods: dict[tuple[str, str], _PodState] = {}
        self._last: GpuReading | None = None
        self._last_success: float | None = None
        self.exporters: list[ExporterScrape] = []
        self.status = SourceStatus(False, "not read yet")

    # -------------------------------------------------------------------- listing

    def list_exporters(self) -> list[dict[str, Any]]:
        """Running exporter pods (raises on API errors; `gpus()` catches)."""
        seen: dict[tuple[str, str], dict[str, Any]] = {}
        for sel in self.selectors:
            path = f"/api/v1/namespaces/{self.namespace}/pods" if self.namespace else "/api/v1/pods"
            body = request(self._api, path, {"labelSelector": sel},
                           timeout=(min(5.0, self.timeout), max(self.timeout, 10.0)))
            items = body.get("items") if isinstance(body, dict) else None
            for pod in items if isinstance(items, list) else ():
                if not isinstance(pod, dict):
                    continue
                m = _meta(pod)
                phase = (pod.get("status") or {}).get("phase")
                if m.get("deletionTimestamp") or phase not in ("Running", None):
                    continue  # the proxy cannot reach a pod that is not running
                seen[(str(m.get("namespace", "")), str(m.get("name", "")))] = pod
        return [seen[k] for k in sorted(seen)]

    # -------------------------------------------------------------------- one pod

    def fetch_text(self, namespace: str, pod: str, port: int) -> str:
        raw = request_bytes(self._api, f"/api/v1/namespaces/{namespace}/pods/{pod}:{port}/proxy/metrics",
                            timeout=(min(5.0, self.timeout), self.timeout), limit=MAX_BODY)
        if len(raw) > MAX_BODY:
            raise ValueError(f"response larger than {MAX_BODY // 2**20} MiB")
        return raw.decode("utf-8", errors="replace")

    def _scrape_one(self, pod: Mapping[str, Any]) -> tuple[tuple[str, str], ExporterScrape, GpuReading | None]:
        m = _meta(pod)
        ns, name = str(m.get("namespace", "")), str(m.get("name", ""))
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        t0 = time.monotonic()
        try:
            text = self.fetch_text(ns, name, _port(pod))
            now = self._clock()
            # No hostname label (--no-hostname): the exporter pod's node names the GPUs (§3).
            reading, stats = read_exposition(text, now=now, stale_after=self.stale_after, default_node=node)
        except Exception as exc:  # one exporter never breaks the round
            return (ns, name), ExporterScrape(ns, name, node, False, _api_error(exc),
                                              seconds=time.monotonic() - t0), None
        return (ns, name), ExporterScrape(ns, name, node, True, "", len(reading.samples), stats.skipped,
                                          time.monotonic() - t0, now), reading

    # -------------------------------------------------------------------- round

    def gpus(self) -> GpuReading:
        """One round over all exporters: fresh samples where the scrape worked, the last
        samples marked stale where it did not."""
        with self._lock:
            now = self._clock()
            try:
                pods = self.list_exporters()
            except Exception as exc:
                return self._failed(now, f"listing exporter pods: {_api_error(exc)}")
            if not pods:
                self.exporters = []
                self.status = SourceStatus(False, "no dcgm-exporter pods found", self._last_success, now)
                self._pods.clear()
                reading = GpuReading(at=now, status=self.status)
                self._last = reading
                return reading
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(pods)),
                                    thread_name_prefix="kueuetop-scrape") as pool:
                results = list(pool.map(self._scrape_one, pods))
            return self._merge(results, now)

    def _merge(self, results: list[tuple[tuple[str, str], ExporterScrape, GpuReading | None]],
               now: float) -> GpuReading:
        exporters: list[ExporterScrape] = []
        alive = {key for key, _, _ in results}
        for key in list(self._pods):
            if key not in alive:
                del self._pods[key]  # exporter pod gone (node removed): its GPUs go with it
        for key, report, reading in results:
            state = self._pods.setdefault(key, _PodState())
            if reading is not None:
                state.samples, state.sharers, state.last_success = reading.samples, reading.sharers, now
            else:
                state.samples = [s if s.stale else dataclasses.replace(s, stale=True) for s in state.samples]
                report = dataclasses.replace(report, last_success=state.last_success)
            exporters.append(report)
        merged: dict[tuple[str, str], GpuSample] = {}
        sharers: dict[tuple[str, str], tuple[PodRef, ...]] = {}
        for state in self._pods.values():
            for s in state.samples:
                old = merged.get(s.key)
                if old is None or (old.stale, -old.at) > (s.stale, -s.at):
                    merged[s.key] = s
            sharers.update(state.sharers)
        failed = [e for e in exporters if not e.ok]
        ok = len(exporters) - len(failed)
        if ok:
            self._last_success = now
        skipped = sum(e.skipped_lines for e in exporters)
        msg = f"{ok}/{len(exporters)} exporters ok"
        if failed:
            first = failed[0]
            msg += f"; {first.namespace}/{first.pod}: {first.error}"
            if len(failed) > 1:
                msg += f" (+{len(failed) - 1} more)"
        if skipped:
            msg += f"; {skipped} malformed lines skipped"
        self.exporters = exporters
        self.status = SourceStatus(ok > 0, msg, self._last_success, now)
        reading = GpuReading([merged[k] for k in sorted(merged)], sharers, now, ok == 0, self.status)
        self._last = reading
        return reading

    def _failed(self, now: float, reason: str) -> GpuReading:
        last = self._last
        age = f" — showing data from {int(now - self._last_success)}s ago" if self._last_success else ""
        self.status = SourceStatus(False, reason + age, self._last_success, now)
        if last is None:
            return GpuReading(at=now, stale=True, status=self.status)
        return GpuReading([dataclasses.replace(s, stale=True) for s in last.samples], dict(last.sharers),
                          last.at, True, self.status, last.skipped)
