"""GPU telemetry without Prometheus: scrape the dcgm-exporter pods through the API server's pod
proxy (`/api/v1/namespaces/{ns}/pods/{pod}:{port}/proxy/metrics`) with the kubernetes client.

Only the API server has to be reachable — the same path `kubectl get --raw` uses — so this works
from a bastion host that cannot reach pod IPs. The source lists the exporter pods (labels of the
GPU Operator / Helm chart `app=nvidia-dcgm-exporter`, upstream `app.kubernetes.io/name=dcgm-exporter`
and GKE's managed `app.kubernetes.io/name=gke-managed-dcgm-exporter`, reference §2.1, in any
namespace), then fetches them with bounded concurrency (`concurrency` requests in flight at most)
and a per-pod timeout.

Every byte goes through the control plane, so the scrape is budgeted (`sources/scrape_budget.py`,
`--scrape-budget`, by default `auto`: 2 % of what the seeds' loop reading every exporter every 30 s
costs, at least 2 MB a minute): each poll reads the exporters the budget allows —
first the nodes the console shows (`set_priority_nodes`), then the rest in turn, oldest first,
never starved by the first — and the pod list is refreshed only as often
as a tenth of the budget allows. Samples keep their own time, so a node read minutes ago shows
that age; when the budget cannot read the whole fleet within two minutes the status message says
so, and suggests Prometheus. With budget 0 (unlimited) every exporter is read on every poll.

Failures stay local: a pod that times out, answers 5xx or serves garbage gets an error in its
`ExporterScrape` and its GPUs keep their last sample, marked stale; the other pods are unaffected.
A malformed exposition never breaks the source: unparsable lines are skipped and counted
(`sources/exposition.py`). Nothing raises into the caller's loop.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from kueuetop.kueue.gpu import GpuSample
from kueuetop.sources.dcgm import GpuReading, PodRef, SourceStatus, read_exposition
from kueuetop.sources.kube_http import ApiError, request_bytes
from kueuetop.sources.scrape_budget import (
    AUTO,
    AUTO_FLOOR,
    DEFAULT_BUDGET,
    FIRST_GUESS,
    HTTP_OVERHEAD,
    ByteBudget,
    auto_budget,
    plan_round,
    refresh_note,
    relist_interval,
    sweep_seconds,
)

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
    last_try: float | None = None  # when it was last read (or tried): the rotation's order
    size: int | None = None  # bytes its last answer cost (body + HTTP_OVERHEAD)
    report: ExporterScrape | None = None


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


def _exporter_down(error: str) -> bool:
    """The API server answered for the pod (its proxy could not reach the exporter, say), so the
    server is up and the pod exists; a 404 means the pod is gone, and the list is out of date."""
    return error.startswith("HTTP ") and not error.startswith("HTTP 404")


class ScrapeSource:
    """Budgeted direct scrape of the dcgm-exporter pods; `gpus()` never raises."""

    def __init__(self, api: client.ApiClient, *, selectors: Iterable[str] = EXPORTER_SELECTORS,
                 namespace: str | None = None, concurrency: int = 8, timeout: float = 5.0,
                 stale_after: float = 90.0, budget: int = DEFAULT_BUDGET, burst_seconds: float = 5.0,
                 clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        # Raw requests through the client's pool and credentials (sources/kube_http.py): the
        # generated CoreV1Api would cost a second of imports for two GETs.
        self._api = api
        self.selectors = tuple(selectors)
        self.namespace = namespace
        self.concurrency = max(1, concurrency)
        self.timeout = timeout
        self.stale_after = stale_after
        self._clock = clock
        self._mono = monotonic
        # `AUTO`: the limit follows the fleet (`auto_budget`), from the floor until the exporters are known.
        self.budget_is_auto = budget == AUTO
        self.budget = ByteBudget(AUTO_FLOOR if self.budget_is_auto else budget, burst_seconds=burst_seconds,
                                 clock=monotonic)
        self._lock = threading.Lock()  # one round at a time
        self._pods: dict[tuple[str, str], _PodState] = {}
        self._listed: list[dict[str, Any]] | None = None  # the exporter pods of the last list
        self._listed_at = 0.0
        self._list_bytes = 0
        self._relist_now = False
        self._cold_starved = False  # the last poll read no exporter off screen
        self._last_round: float | None = None
        self._last: GpuReading | None = None
        self._last_success: float | None = None
        self._priority: frozenset[str] = frozenset()
        self._priority_lock = threading.Lock()
        self._flight_lock = threading.Lock()
        self.in_flight = 0  # exporter requests running now …
        self.max_in_flight = 0  # … and the most ever at once (never above `concurrency`)
        self.scraped: dict[str, int] = {}  # node → exporter reads (tests, benchmarks)
        self.exporters: list[ExporterScrape] = []
        self.status = SourceStatus(False, "not read yet")

    # -------------------------------------------------------------------- focus

    def set_priority_nodes(self, names: Iterable[str]) -> None:
        """Nodes the console shows (GPUs on screen, the selected workload's): read first, every
        poll the budget allows. Thread-safe; replaces the previous set."""
        nodes = frozenset(str(n) for n in names if n)
        with self._priority_lock:
            self._priority = nodes

    @property
    def priority_nodes(self) -> frozenset[str]:
        with self._priority_lock:
            return self._priority

    @property
    def bytes_fetched(self) -> int:
        """Bytes read through the API server since the start (bodies + `HTTP_OVERHEAD` each)."""
        return self.budget.total

    # -------------------------------------------------------------------- listing

    def list_exporters(self) -> list[dict[str, Any]]:
        """Running exporter pods (raises on API errors; `gpus()` catches). The bytes the lists
        cost are in `self._list_bytes` afterwards."""
        seen: dict[tuple[str, str], dict[str, Any]] = {}
        spent = 0
        try:
            for sel in self.selectors:
                path = f"/api/v1/namespaces/{self.namespace}/pods" if self.namespace else "/api/v1/pods"
                raw = request_bytes(self._api, path, {"labelSelector": sel},
                                    timeout=(min(5.0, self.timeout), max(self.timeout, 10.0)))
                spent += len(raw) + HTTP_OVERHEAD
                body = json.loads(raw)
                items = body.get("items") if isinstance(body, dict) else None
                for pod in items if isinstance(items, list) else ():
                    if not isinstance(pod, dict):
                        continue
                    m = _meta(pod)
                    phase = (pod.get("status") or {}).get("phase")
                    if m.get("deletionTimestamp") or phase not in ("Running", None):
                        continue  # the proxy cannot reach a pod that is not running
                    seen[(str(m.get("namespace", "")), str(m.get("name", "")))] = pod
        finally:
            self._list_bytes = spent
        return [seen[k] for k in sorted(seen)]

    def _relist(self, mono: float) -> None:
        """List the exporter pods when due (raises on API errors). Unlimited: every poll."""
        # No exporter found yet (the cluster is starting, the operator is installing): an empty
        # list costs next to nothing, so look again on every poll.
        due = (not self._listed or self.budget.unlimited or self._relist_now
               or mono - self._listed_at >= relist_interval(self._list_bytes, self.budget.per_minute))
        if not due:
            return
        first = self._listed is None
        estimate = self._list_bytes or FIRST_GUESS
        if not first and not self.budget.try_reserve(estimate):
            return  # the budget is spent for now: the pods listed last time will do
        self._list_bytes = 0
        try:
            pods = self.list_exporters()
        finally:
            # The first list is counted in the window but not in the pace, so the first poll
            # still has its few seconds' worth for reads (a fleet's list is ~2 KB per node).
            self.budget.settle(0 if first else estimate, self._list_bytes, paced=not first)
        self._listed, self._listed_at, self._relist_now = pods, mono, False

    # -------------------------------------------------------------------- one pod

    def fetch_text(self, namespace: str, pod: str, port: int) -> str:
        raw = request_bytes(self._api, f"/api/v1/namespaces/{namespace}/pods/{pod}:{port}/proxy/metrics",
                            timeout=(min(5.0, self.timeout), self.timeout), limit=MAX_BODY)
        if len(raw) > MAX_BODY:
            raise ValueError(f"response larger than {MAX_BODY // 2**20} MiB")
        return raw.decode("utf-8", errors="replace")

    def _estimates(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """Bytes each exporter's next read should cost: its last answer and a little room (pods
        placed on it add labels), or for one never read the mean of those read, or a first guess."""
        known = [st.size for st in self._pods.values() if st.size is not None]
        guess = int(sum(known) / len(known) * 1.05) if known else FIRST_GUESS + HTTP_OVERHEAD
        out = {}
        for k in keys:
            state = self._pods.get(k)
            out[k] = int(state.size * 1.05) if state is not None and state.size is not None else guess
        return out

    def _scrape_one(self, pod: Mapping[str, Any], estimate: int = 0
                    ) -> tuple[tuple[str, str], ExporterScrape, GpuReading | None, int]:
        m = _meta(pod)
        ns, name = str(m.get("namespace", "")), str(m.get("name", ""))
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        with self._flight_lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.scraped[node] = self.scraped.get(node, 0) + 1
        t0 = time.monotonic()
        size = HTTP_OVERHEAD  # a failed request still costs its headers
        try:
            text = self.fetch_text(ns, name, _port(pod))
            size += len(text)  # the exposition is ASCII: characters are bytes
            now = self._clock()
            # No hostname label (--no-hostname): the exporter pod's node names the GPUs (§3).
            reading, stats = read_exposition(text, now=now, stale_after=self.stale_after, default_node=node)
        except Exception as exc:  # one exporter never breaks the round
            return (ns, name), ExporterScrape(ns, name, node, False, _api_error(exc),
                                              seconds=time.monotonic() - t0), None, size
        finally:
            self.budget.settle(estimate, size)
            with self._flight_lock:
                self.in_flight -= 1
        return (ns, name), ExporterScrape(ns, name, node, True, "", len(reading.samples), stats.skipped,
                                          time.monotonic() - t0, now), reading, size

    # -------------------------------------------------------------------- round

    def gpus(self) -> GpuReading:
        """One poll: the exporters the budget allows are read; fresh samples where that worked,
        the last samples (marked stale) where it did not, the others as they were last read."""
        with self._lock:
            now, mono = self._clock(), self._mono()
            interval = None if self._last_round is None else mono - self._last_round
            self._last_round = mono
            try:
                self._relist(mono)
            except Exception as exc:
                return self._failed(now, f"listing exporter pods: {_api_error(exc)}")
            pods = self._listed or []
            if not pods:
                self.exporters = []
                self.status = SourceStatus(False, "no dcgm-exporter pods found", self._last_success, now)
                self._pods.clear()
                reading = GpuReading(at=now, status=self.status)
                self._last = reading
                return reading
            results = self._read(pods)
            if results and all(r[2] is None and not _exporter_down(r[1].error) for r in results) \
                    and not self._relist_now:
                # Not one exporter answered and the API server did not answer either (or said the
                # pods are gone): relist now to tell which, as the unbudgeted scrape did every
                # poll. A list the server cannot answer costs nothing; exporters that are down
                # behind a working server (HTTP 5xx) wait for the next scheduled list.
                self._relist_now = True
                try:
                    self._relist(mono)
                except Exception as exc:
                    return self._failed(now, f"listing exporter pods: {_api_error(exc)}")
                pods = self._listed or []
            return self._merge(pods, results, now, interval)

    def _read(self, pods: list[dict[str, Any]]) -> list[tuple[tuple[str, str], ExporterScrape, GpuReading | None, int]]:
        by_key = {(str(_meta(p).get("namespace", "")), str(_meta(p).get("name", ""))): p for p in pods}
        estimates = self._estimates(by_key)
        if self.budget_is_auto:
            # Estimates carry 5 % of room over the last answers; the budget follows the answers.
            self.budget.set_per_minute(auto_budget(sum(estimates.values()) / 1.05))
        if self.budget.unlimited:
            chosen = list(by_key)
            for k in chosen:
                self.budget.try_reserve(estimates[k])
        else:
            node_of = {k: str((p.get("spec") or {}).get("nodeName") or "") for k, p in by_key.items()}
            priority = self.priority_nodes
            chosen = plan_round(list(by_key), node_of=node_of,
                                last_scraped={k: st.last_try for k, st in self._pods.items()
                                              if st.last_try is not None},
                                estimate=estimates.__getitem__, priority=priority, budget=self.budget,
                                cold_first=self._cold_starved)
            self._cold_starved = any(n not in priority for n in node_of.values()) and all(
                node_of[k] in priority for k in chosen)
        if not chosen:
            return []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(chosen)),
                                thread_name_prefix="kueuetop-scrape") as pool:
            return list(pool.map(lambda k: self._scrape_one(by_key[k], estimates[k]), chosen))

    def _merge(self, pods: list[dict[str, Any]],
               results: list[tuple[tuple[str, str], ExporterScrape, GpuReading | None, int]],
               now: float, interval: float | None) -> GpuReading:
        alive = [(str(_meta(p).get("namespace", "")), str(_meta(p).get("name", ""))) for p in pods]
        alive_set = set(alive)
        for key in list(self._pods):
            if key not in alive_set:
                del self._pods[key]  # exporter pod gone (node removed): its GPUs go with it
        for key, report, reading, size in results:
            if key not in alive_set:
                continue
            state = self._pods.setdefault(key, _PodState())
            state.last_try = now
            if reading is not None:
                state.samples, state.sharers, state.last_success = reading.samples, reading.sharers, now
                state.size = size
            else:
                state.samples = [s if s.stale else dataclasses.replace(s, stale=True) for s in state.samples]
                report = dataclasses.replace(report, last_success=state.last_success)
            state.report = report
        sizes = {k: v / 1.05 for k, v in self._estimates(alive).items()}
        sweep_bytes = sum(sizes.values())
        priority = self.priority_nodes
        hot_bytes = sum(v for k, v in sizes.items() if (st := self._pods.get(k)) is not None and st.report is not None
                        and st.report.node in priority)
        sweep = sweep_seconds(self.budget.per_minute, sweep_bytes, interval, hot_bytes, len(alive))
        # A node not read this poll keeps its sample and its sample's time; it turns stale only
        # when it is overdue for its turn in the rotation (or older than the exporter's window).
        overdue = max(self.stale_after, 2 * sweep)
        merged: dict[tuple[str, str], GpuSample] = {}
        sharers: dict[tuple[str, str], tuple[PodRef, ...]] = {}
        for state in self._pods.values():
            if state.samples and any(not s.stale and now - s.at > overdue for s in state.samples):
                state.samples = [s if s.stale or now - s.at <= overdue else dataclasses.replace(s, stale=True)
                                 for s in state.samples]
            for s in state.samples:
                old = merged.get(s.key)
                if old is None or (old.stale, -old.at) > (s.stale, -s.at):
                    merged[s.key] = s
            sharers.update(state.sharers)
        exporters = [st.report for k in alive if (st := self._pods.get(k)) is not None and st.report is not None]
        round_ok = any(r[2] is not None for r in results)
        failed = [e for e in exporters if not e.ok]
        ok_count = len(exporters) - len(failed)
        if round_ok:
            self._last_success = now
        # Nothing read this poll (the budget is spent until the next): nothing is wrong unless
        # the last reads failed.
        ok = round_ok or (not results and ok_count == len(exporters))
        skipped = sum(e.skipped_lines for e in exporters)
        msg = f"{ok_count}/{len(exporters)} exporters ok"
        if len(exporters) < len(alive):
            msg += f", {len(alive) - len(exporters)} not read yet"
        if failed:
            first = failed[0]
            msg += f"; {first.namespace}/{first.pod}: {first.error}"
            if len(failed) > 1:
                msg += f" (+{len(failed) - 1} more)"
        if skipped:
            msg += f"; {skipped} malformed lines skipped"
        if self.budget_is_auto:
            self.budget.set_per_minute(auto_budget(sweep_bytes))
        note = refresh_note(self.budget.per_minute, len(alive), sweep_bytes, interval, hot_bytes,
                            auto=self.budget_is_auto)
        if note:
            msg = f"{note}; {msg}"
        self.exporters = exporters
        self.status = SourceStatus(ok, msg, self._last_success, now)
        reading = GpuReading([merged[k] for k in sorted(merged)], sharers, now, not ok, self.status)
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
