"""GPU telemetry from Prometheus (or Google Managed Prometheus) through `prometheus-api-client`.

One HTTP request per view for the whole fleet (reference/gpu-telemetry.md §4.4):

* `gpus()` — every GPU: utilization, memory, temperature, power and the real sample time, as one
  instant query. Each family is tagged with `label_replace(…, "kueuetop_field", …)` and the parts
  are joined with `or`; the tag keeps `or` from dropping series whose labels (minus the metric
  name) collide. Only exact metric names are used, because GMP rejects `{__name__=~…}` (§2.1), so
  the same query runs on both backends.
* `nodes()` — the same figures aggregated per node on the server, for fleets above
  `aggregate_above` GPUs where a raw per-GPU vector costs tens of MB (§4.4 "cost guardrails").
  `fleet()` picks between the two from the last known GPU count.
* `util_history()` — range query of utilization per GPU or per node, averaged over each step
  (`avg_over_time` avoids aliasing, §4.4 #3).
* `util_distribution()` — GPUs per utilization bucket per step, computed by Prometheus with
  `count_values` (§4.4 #4): at most 100/bucket series whatever the fleet size, so a heatmap of a
  65k-node fleet costs the same transfer as one of 4 nodes. Buckets with no GPU are 0.

Utilization is the DCP ratio `DCGM_FI_PROF_GR_ENGINE_ACTIVE` × 100 where exported (the only one
valid for MIG), else `DCGM_FI_DEV_GPU_UTIL` on whole GPUs — the same rule as `dcgm.py`.

Staleness (§4.3): each device carries `timestamp(FB_USED)`, so a GPU whose exporter stopped is
marked stale after `stale_after` even on GMP, which has no staleness markers. On real Prometheus
such series vanish instead; the source then re-emits the GPU's last sample, marked stale, for
`forget_after` seconds, so a dead node reads "stale", not "gone" or 0 %.

Errors (connection refused, timeouts, 4xx/5xx, bad JSON) never raise: every call returns the last
good data of that view with `stale=True` and a `SourceStatus` saying what failed and since when.
The client is built with `Retry(total=0)`: the caller's refresh loop owns retries (§5: the default
retry turns one Prometheus 503 into ~6 s of backoff and a `RetryError`).

Google Managed Prometheus (§2.1): use `gmp_url(project)` (the Prometheus API lives under
`…/projects/<P>/location/global/prometheus/api/v1`), a bearer OAuth token (refresh it with
`set_token`, tokens expire after ~1 h), and `selector='cluster="name"'` because one project holds
the series of every cluster. GMP keeps the exporter's `pod`/`namespace` as the workload's; older
GMP setups produce `exported_pod` — `dcgm.workload_of` handles both.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

import requests
from prometheus_api_client import PrometheusApiClientException, PrometheusConnect
from urllib3.util.retry import Retry

from kueuetop.kueue.gpu import GpuSample
from kueuetop.sources.dcgm import (
    ECC_DBE,
    FB_FREE,
    FB_RESERVED,
    FB_TOTAL,
    FB_USED,
    GPU_TEMP,
    GPU_UTIL,
    GR_ENGINE_ACTIVE,
    POWER_USAGE,
    SAMPLE_TIME,
    XID_ERRORS,
    GpuReading,
    Point,
    SourceStatus,
    build_samples,
    clean_value,
    device_id,
    node_of,
)

__all__ = [
    "DEVICE_KEY",
    "DistributionReading",
    "FleetReading",
    "HistoryReading",
    "NodeReading",
    "NodeSummary",
    "PromConfig",
    "PrometheusSource",
    "gmp_url",
]

FIELD_LABEL = "kueuetop_field"
NODE_KEY = "Hostname, hostname"  # both spellings: `by` tolerates the absent one (§1.0)
# Device key of §4.4: deduplicates shared-GPU series (one per pod) by taking max over it.
DEVICE_KEY = "Hostname, hostname, UUID, gpu, GPU_I_ID, GPU_I_PROFILE, modelName"
# Per-GPU instant query: attribution labels kept so the source can name the pod (§4.4 #1).
_GPU_FIELDS: tuple[tuple[str, str], ...] = (
    ("util", GPU_UTIL), ("gr", GR_ENGINE_ACTIVE), ("fb_used", FB_USED), ("fb_free", FB_FREE),
    ("fb_reserved", FB_RESERVED), ("fb_total", FB_TOTAL), ("temp", GPU_TEMP),
    ("temp", "DCGM_FI_DEV_GPU_TEMP_CELSIUS"),  # 4.9.0 name of field 150 (§1.0)
    ("power", POWER_USAGE), ("xid", XID_ERRORS), ("ecc_dbe", ECC_DBE),
)
_TAG_TO_METRIC = {"util": GPU_UTIL, "gr": GR_ENGINE_ACTIVE, "fb_used": FB_USED, "fb_free": FB_FREE,
                  "fb_reserved": FB_RESERVED, "fb_total": FB_TOTAL, "temp": GPU_TEMP, "power": POWER_USAGE,
                  "xid": XID_ERRORS, "ecc_dbe": ECC_DBE}
# Whole GPUs only: some exporters emit GPU_UTIL=0 for MIG instances (issue #216, §4.4 #1).
_WHOLE_GPU = 'GPU_I_ID=""'
_MAX_POINTS = 11_000  # Prometheus rejects range queries with more points per series (§4.2)

T = TypeVar("T")


def gmp_url(project: str, location: str = "global") -> str:
    """Base URL of Google Managed Prometheus' query API for a project (§2.1)."""
    return f"https://monitoring.googleapis.com/v1/projects/{project}/location/{location}/prometheus"


@dataclass(frozen=True, slots=True)
class PromConfig:
    url: str
    token: str | None = None  # sent as "Authorization: Bearer …"
    headers: Mapping[str, str] = field(default_factory=dict)  # custom auth header, tenant id, …
    verify: bool = True  # TLS certificate verification
    ca_file: str | None = None  # CA bundle for a private CA
    client_cert: tuple[str, str] | None = None  # (cert file, key file) for mTLS
    timeout: float = 10.0  # per request, seconds
    selector: str = ""  # extra matchers for every series, e.g. 'cluster="prod-1"'
    aggregate_above: int = 4096  # fleet() switches to per-node aggregation above this many GPUs
    scrape_interval: float = 15.0  # of the DCGM job (Helm 15 s, GKE 30 s): averaging windows span ≥ 2
    stale_after: float = 90.0  # sample age that marks a GPU stale: ~3 scrape intervals (§4.3)
    forget_after: float = 300.0  # how long a vanished GPU is still shown (stale)
    method: Literal["GET", "POST"] = "GET"


@dataclass(frozen=True, slots=True)
class NodeSummary:
    """One node's GPUs aggregated by Prometheus (large-fleet view)."""

    node: str
    gpus: int  # devices (MIG instances count one each)
    util_mean: float | None
    util_max: float | None
    mem_used_mib: float | None
    mem_total_mib: float | None
    power_w: float | None  # sum over physical GPUs
    temp_max_c: float | None
    at: float  # oldest sample time on the node
    stale: bool


@dataclass(slots=True)
class NodeReading:
    nodes: list[NodeSummary] = field(default_factory=list)
    at: float = 0.0
    stale: bool = False
    status: SourceStatus = field(default_factory=lambda: SourceStatus(False, "not read yet"))


@dataclass(slots=True)
class FleetReading:
    """`fleet()`: per-GPU samples for small fleets, per-node summaries for large ones."""

    gpus: GpuReading | None = None
    nodes: NodeReading | None = None


@dataclass(slots=True)
class HistoryReading:
    """Utilization over time: key → [(t, %)], key = (node, gpu) or (node, "") per node."""

    series: dict[tuple[str, str], list[tuple[float, float | None]]] = field(default_factory=dict)
    start: float = 0.0
    end: float = 0.0
    step: float = 0.0
    stale: bool = False
    status: SourceStatus = field(default_factory=lambda: SourceStatus(False, "not read yet"))


@dataclass(slots=True)
class DistributionReading:
    """Heatmap data: `counts[b][k]` GPUs in bucket `buckets[b]` (lower edge, %) at `times[k]`."""

    times: list[float] = field(default_factory=list)
    buckets: list[int] = field(default_factory=list)
    counts: list[list[int]] = field(default_factory=list)
    step: float = 0.0
    stale: bool = False
    status: SourceStatus = field(default_factory=lambda: SourceStatus(False, "not read yet"))


# ---------------------------------------------------------------------------------- PromQL


def _tag(expr: str, tag: str) -> str:
    return f'label_replace({expr}, "{FIELD_LABEL}", "{tag}", "", "")'


def _or(parts: Iterable[str]) -> str:
    return " or ".join(parts)


def _duration(seconds: float) -> str:
    return f"{max(1, round(seconds * 1000))}ms"


class _Q:
    """PromQL builders; `selector` is added to every metric selector."""

    def __init__(self, selector: str) -> None:
        self.sel = selector.strip().strip("{}").strip()

    def m(self, metric: str, extra: str = "") -> str:
        inner = ",".join(x for x in (self.sel, extra) if x)
        return f"{metric}{{{inner}}}" if inner else metric

    def gpus(self) -> str:
        parts = [_tag(self.m(metric), tag) for tag, metric in _GPU_FIELDS]
        parts.append(_tag(f"timestamp({self.m(FB_USED)})", "ts"))  # real sample time (§4.3)
        return _or(parts)

    def util(self, window: str | None = None) -> str:
        """Per-device utilization %, MIG-aware, deduplicated over sharing pods (§4.4 #1)."""
        if window:
            gr = f"100 * avg_over_time({self.m(GR_ENGINE_ACTIVE)}[{window}])"
            du = f"avg_over_time({self.m(GPU_UTIL, _WHOLE_GPU)}[{window}])"
        else:
            gr = f"100 * {self.m(GR_ENGINE_ACTIVE)}"
            du = self.m(GPU_UTIL, _WHOLE_GPU)
        # GR first, as dcgm.build_samples does: both views must agree on a GPU's number.
        return f"(max by ({DEVICE_KEY}) ({gr}) or max by ({DEVICE_KEY}) ({du}))"

    def nodes(self) -> str:
        u = self.util()
        dev = f"max by ({DEVICE_KEY})"
        phys = "max by (Hostname, hostname, UUID)"  # MIG instances share board power/temp (§1.5)
        return _or([
            _tag(f"avg by ({NODE_KEY}) ({u})", "util_mean"),
            _tag(f"max by ({NODE_KEY}) ({u})", "util_max"),
            _tag(f"count by ({NODE_KEY}) ({dev} ({self.m(FB_USED)}))", "gpus"),
            _tag(f"sum by ({NODE_KEY}) ({dev} ({self.m(FB_USED)}))", "fb_used"),
            _tag(f"sum by ({NODE_KEY}) ({dev} ({self.m(FB_FREE)}))", "fb_free"),
            _tag(f"sum by ({NODE_KEY}) ({dev} ({self.m(FB_RESERVED)}))", "fb_reserved"),
            _tag(f"sum by ({NODE_KEY}) ({dev} ({self.m(FB_TOTAL)}))", "fb_total"),
            _tag(f"sum by ({NODE_KEY}) ({phys} ({self.m(POWER_USAGE)}))", "power"),
            _tag(f"max by ({NODE_KEY}) ({self.m(GPU_TEMP)})", "temp"),
            _tag(f"min by ({NODE_KEY}) (timestamp({self.m(FB_USED)}))", "ts"),
        ])

    def count(self) -> str:
        return f"count(max by ({DEVICE_KEY}) ({self.m(FB_USED)}))"

    def distribution(self, window: str, width: int) -> str:
        u = self.util(window)
        top = 100 - 0.1  # 100 % falls in the top bucket, not a bucket of its own
        return f'count_values("bucket", {width} * floor(clamp({u}, 0, {top}) / {width}))'


# ---------------------------------------------------------------------------------- errors


def _describe(exc: BaseException, timeout: float) -> str:
    """A one-line reason without URLs' credentials, headers or tokens."""
    if isinstance(exc, requests.exceptions.ConnectTimeout | requests.exceptions.ReadTimeout):
        return f"timed out after {timeout:g}s"
    if isinstance(exc, requests.exceptions.SSLError):
        return "TLS error (certificate not trusted?)"
    if isinstance(exc, requests.exceptions.ConnectionError):
        text = str(exc)
        if "refused" in text.lower():
            return "connection refused"
        if "Name or service not known" in text or "nodename nor servname" in text:
            return "host not found"
        return "cannot connect"
    if isinstance(exc, requests.exceptions.RetryError):
        return "server error after retries"
    if isinstance(exc, PrometheusApiClientException):
        return _describe_http(str(exc))
    if isinstance(exc, ValueError | KeyError | TypeError):
        return f"unexpected response ({type(exc).__name__})"
    return f"error: {type(exc).__name__}"


_HTTP_RE = re.compile(r"HTTP Status Code (\d+) \((.*)\)\Z", re.S)


def _describe_http(message: str) -> str:
    """`PrometheusApiClientException("HTTP Status Code 400 (b'{json}')")` → "HTTP 400 bad_data: …"."""
    m = _HTTP_RE.match(message)
    if m is None:
        return "HTTP error"
    code, body = m.group(1), m.group(2)
    detail = ""
    try:
        raw = body[2:-1] if body[:2] in ("b'", 'b"') else body
        raw = raw.encode().decode("unicode_escape")
        data = json.loads(raw)
        detail = f" {data.get('errorType', '')}: {data.get('error', '')}".rstrip(": ")
    except (ValueError, UnicodeError, AttributeError):
        detail = ""
    hint = {"401": " unauthorized (token?)", "403": " forbidden", "404": " not found (URL path?)"}.get(code, "")
    return f"HTTP {code}{hint}{detail}"[:300]


def _ago(seconds: float) -> str:
    s = int(seconds)
    return f"{s}s" if s < 120 else f"{s // 60}m" if s < 7200 else f"{s // 3600}h"


# ---------------------------------------------------------------------------------- source


class PrometheusSource:
    """DCGM GPU data from one Prometheus-compatible endpoint; every method is safe to call from a
    refresh loop (never raises). Calls are serialized: one `requests.Session` is not thread-safe."""

    def __init__(self, config: PromConfig | str, *, clock: Callable[[], float] = time.time,
                 session: requests.Session | None = None) -> None:
        self.config = config if isinstance(config, PromConfig) else PromConfig(url=config)
        self._clock = clock
        self._lock = threading.Lock()
        self._q = _Q(self.config.selector)
        self._host = urlsplit(self.config.url).hostname or self.config.url
        self._last: dict[str, Any] = {}  # view → last good reading
        self._last_success: float | None = None
        self._seen: dict[tuple[str, str], GpuSample] = {}  # for series that vanish (§4.3)
        self._gpu_count: int | None = None
        self.status = SourceStatus(False, "not connected yet")
        self._prom = self._connect(session)

    def _connect(self, session: requests.Session | None) -> PrometheusConnect:
        c = self.config
        headers = dict(c.headers)
        if c.token:
            headers["Authorization"] = f"Bearer {c.token}"
        s = session or requests.Session()
        self._session = s  # closed by close(): PrometheusConnect.close() exists only from 0.7.1
        s.verify = c.ca_file if (c.verify and c.ca_file) else c.verify
        if c.client_cert:
            s.cert = c.client_cert
        return PrometheusConnect(url=c.url.rstrip("/"), headers=headers, retry=Retry(total=0, redirect=3),
                                 session=s, timeout=(min(5.0, c.timeout), c.timeout), method=c.method)

    def set_token(self, token: str) -> None:
        """Swap the bearer token (GMP OAuth tokens last about an hour)."""
        with self._lock:
            headers = dict(self._prom.headers or {})
            headers["Authorization"] = f"Bearer {token}"
            self._prom.headers = headers

    def close(self) -> None:
        self._session.close()

    # -------------------------------------------------------------------- plumbing

    def _run(self, view: str, fn: Callable[[float], T], stale_copy: Callable[[T, SourceStatus], T],
             empty: Callable[[SourceStatus], T]) -> T:
        with self._lock:
            now = self._clock()
            try:
                result = fn(now)
            except Exception as exc:  # never into the caller's loop (ARCHITECTURE §6)
                reason = _describe(exc, self.config.timeout)
                last = self._last.get(view)
                since = f" — showing data from {_ago(now - self._last_success)} ago" \
                    if self._last_success is not None and last is not None else " — no data yet"
                self.status = SourceStatus(False, f"prometheus {self._host}: {reason}{since}",
                                           self._last_success, now)
                return empty(self.status) if last is None else stale_copy(last, self.status)
            self._last_success = now
            self.status = SourceStatus(True, "ok", now, now)
            self._last[view] = result
            return result

    def _query(self, q: str) -> list[dict]:
        data = self._prom.custom_query(q)
        if not isinstance(data, list):
            raise TypeError("instant query did not return a vector")
        return data

    def _range(self, q: str, start: float, end: float, step: float) -> list[dict]:
        data = self._prom.custom_query_range(q, datetime.fromtimestamp(start, UTC),
                                             datetime.fromtimestamp(end, UTC), step=f"{step:g}")
        if not isinstance(data, list):
            raise TypeError("range query did not return a matrix")
        return data

    # -------------------------------------------------------------------- per GPU

    def gpus(self) -> GpuReading:
        """Every GPU of the fleet from one instant query."""

        def fetch(now: float) -> GpuReading:
            rows = self._query(self._q.gpus())
            reading = build_samples(self._points(rows), now=now, stale_after=self.config.stale_after)
            self._remember(reading, now)
            reading.status = SourceStatus(True, "ok", now, now)
            self._gpu_count = len(reading.samples)
            return reading

        def stale(last: GpuReading, st: SourceStatus) -> GpuReading:
            return GpuReading([dataclasses.replace(s, stale=True) for s in last.samples], dict(last.sharers),
                              last.at, True, st, last.skipped)

        return self._run("gpus", fetch, stale, lambda st: GpuReading(stale=True, status=st))

    @staticmethod
    def _points(rows: list[dict]) -> Iterable[Point]:
        for row in rows:
            metric = row.get("metric") or {}
            value = row.get("value") or ()
            if not isinstance(metric, dict) or len(value) != 2:
                continue
            tag = metric.get(FIELD_LABEL, "")
            labels = {k: v for k, v in metric.items() if k not in (FIELD_LABEL, "__name__")}
            v = float(value[1])
            if tag == "ts":
                yield Point(SAMPLE_TIME, labels, v)
            elif tag in _TAG_TO_METRIC:
                yield Point(_TAG_TO_METRIC[tag], labels, v)

    def _remember(self, reading: GpuReading, now: float) -> None:
        """Re-emit GPUs whose series vanished (Prometheus staleness markers) as stale, for a while."""
        present = {s.key for s in reading.samples}
        for key, old in list(self._seen.items()):
            if key in present:
                continue
            if now - old.at > self.config.forget_after:
                del self._seen[key]
            else:
                reading.samples.append(dataclasses.replace(old, stale=True))
        for s in reading.samples:
            if not s.stale or s.key not in self._seen:
                self._seen[s.key] = s
        reading.samples.sort(key=lambda s: s.key)

    # -------------------------------------------------------------------- per node

    def nodes(self) -> NodeReading:
        """Per-node aggregates computed by Prometheus (one query, one row per node)."""

        def fetch(now: float) -> NodeReading:
            rows = self._query(self._q.nodes())
            by_node: dict[str, dict[str, float | None]] = {}
            for row in rows:
                metric, value = row.get("metric") or {}, row.get("value") or ()
                if len(value) != 2:
                    continue
                node = node_of(metric)
                if node:
                    by_node.setdefault(node, {})[metric.get(FIELD_LABEL, "")] = clean_value(float(value[1]))
            out = []
            for node in sorted(by_node):
                f = by_node[node]
                used, free, res = f.get("fb_used"), f.get("fb_free"), f.get("fb_reserved")
                total = used + free + (res or 0.0) if used is not None and free is not None else f.get("fb_total")
                ts = f.get("ts")
                at = ts if ts is not None else now
                out.append(NodeSummary(node, int(f.get("gpus") or 0), f.get("util_mean"), f.get("util_max"),
                                       used, total, f.get("power"), f.get("temp"), at,
                                       now - at > self.config.stale_after))
            self._gpu_count = sum(n.gpus for n in out)
            return NodeReading(out, now, False, SourceStatus(True, "ok", now, now))

        def stale(last: NodeReading, st: SourceStatus) -> NodeReading:
            return NodeReading([dataclasses.replace(n, stale=True) for n in last.nodes], last.at, True, st)

        return self._run("nodes", fetch, stale, lambda st: NodeReading(stale=True, status=st))

    def fleet(self) -> FleetReading:
        """Per-GPU data up to `aggregate_above` GPUs, per-node aggregates above (decided from the
        last known count; the first call asks Prometheus for the count)."""
        if self._gpu_count is None:
            def count(now: float) -> int:
                rows = self._query(self._q.count())
                return int(float(rows[0]["value"][1])) if rows else 0

            n = self._run("count", count, lambda last, st: last, lambda st: -1)
            if n < 0:
                return FleetReading(gpus=self.gpus())  # unreachable: the per-GPU view explains
            self._gpu_count = n
        if self._gpu_count > self.config.aggregate_above:
            return FleetReading(nodes=self.nodes())
        return FleetReading(gpus=self.gpus())

    # -------------------------------------------------------------------- history

    def _window(self, window: float, step: float | None, end: float | None, now: float) -> tuple[float, float, float]:
        end = now if end is None else end
        window = max(1.0, window)
        step = step if step and step > 0 else max(1.0, window / 240)
        step = max(step, window / _MAX_POINTS)  # §4.2: ≤ 11,000 points per series
        return end - window, end, step

    def _avg_window(self, step: float) -> str:
        # A window shorter than two scrapes can hold no sample, leaving holes in the history.
        return _duration(max(step, 2 * self.config.scrape_interval))

    def util_history(self, window: float, *, step: float | None = None, per: Literal["gpu", "node"] = "gpu",
                     end: float | None = None) -> HistoryReading:
        """Utilization % over the last `window` seconds, per GPU or per node (mean of its GPUs)."""

        def fetch(now: float) -> HistoryReading:
            start, stop, st = self._window(window, step, end, now)
            q = self._q.util(self._avg_window(st))
            if per == "node":
                q = f"avg by ({NODE_KEY}) ({q})"
            series: dict[tuple[str, str], list[tuple[float, float | None]]] = {}
            for row in self._range(q, start, stop, st):
                metric = row.get("metric") or {}
                node = node_of(metric)
                if not node:
                    continue
                key = (node, "" if per == "node" else device_id(metric))
                pts = [(float(t), clean_value(float(v))) for t, v in row.get("values") or ()]
                series.setdefault(key, []).extend(pts)
            for pts in series.values():
                pts.sort(key=lambda p: p[0])
            return HistoryReading(series, start, stop, st, False, SourceStatus(True, "ok", now, now))

        def stale(last: HistoryReading, st: SourceStatus) -> HistoryReading:
            return dataclasses.replace(last, stale=True, status=st)

        return self._run(f"history:{per}:{window}", fetch, stale,
                         lambda st: HistoryReading(stale=True, status=st))

    def util_distribution(self, window: float, *, step: float | None = None, bucket: int = 10,
                          end: float | None = None) -> DistributionReading:
        """How many GPUs sat in each `bucket`-% utilization band at each step (heatmap rows)."""
        width = bucket if bucket in (1, 2, 5, 10, 20, 25, 50) else 10

        def fetch(now: float) -> DistributionReading:
            start, stop, st = self._window(window, step, end, now)
            rows = self._range(self._q.distribution(self._avg_window(st), width), start, stop, st)
            # Steps are start + k*step (§4.2); Prometheus omits steps with no data, align here.
            n = math.floor((stop - round(start)) / st + 1e-9) + 1
            times = [round(start) + k * st for k in range(n)]
            buckets = list(range(0, 100, width))
            counts = [[0] * n for _ in buckets]
            for row in rows:
                try:
                    b = int(float((row.get("metric") or {}).get("bucket", "")))
                except ValueError:
                    continue
                if b not in buckets:
                    continue
                for t, v in row.get("values") or ():
                    k = round((float(t) - times[0]) / st)
                    if 0 <= k < n:
                        counts[buckets.index(b)][k] = int(float(v))
            return DistributionReading(times, buckets, counts, st, False, SourceStatus(True, "ok", now, now))

        def stale(last: DistributionReading, st: SourceStatus) -> DistributionReading:
            return dataclasses.replace(last, stale=True, status=st)

        return self._run(f"distribution:{window}:{width}", fetch, stale,
                         lambda st: DistributionReading(stale=True, status=st))
