"""DCGM series → `GpuSample`s: the label rules of reference/gpu-telemetry.md, shared by the
Prometheus source and the direct scrape.

Both sources reduce what they read to `Point`s (DCGM metric name, labels, value, sample time)
and hand them to `build_samples`, so a rule is written once:

* node = `Hostname` (exporter ≤ 4.8.2) or `hostname` (≥ 4.8.3) (§1.0); the caller may pass a
  fallback (the exporter pod's node, §3 "Joining telemetry to nodes") for `--no-hostname`.
* workload pod = `exported_pod`/`exported_namespace`/`exported_container` when present (a
  Prometheus scrape with honor_labels=false renamed them), else `pod`/`namespace`/`container`,
  unless `pod` names the exporter itself (DaemonSet prefix) — then the GPU is unassigned (§1.3).
  1.x compatibility mode's `pod_name`/`pod_namespace`/`container_name` come last (§1.2).
* device = (node, `gpu`) for a whole GPU, (node, `gpu/GPU_I_ID`) for a MIG instance (§1.5).
* utilization = `DCGM_FI_PROF_GR_ENGINE_ACTIVE` × 100 when present (the metric that works for MIG
  and measures the same thing on whole GPUs), else `DCGM_FI_DEV_GPU_UTIL`; a GPU_UTIL on a MIG
  instance is ignored (some exporters emit 0 there, issue #216, §4.4).
* values ≥ 9.0e18 are DCGM's "blank" sentinels → None (N/A, never a number) (§1.1), as are NaN/Inf.
* memory total = FB_USED + FB_FREE (+ FB_RESERVED when exported), or FB_TOTAL (GKE managed, §2.1).
* shared GPUs (time-slicing/MPS: one series per pod on one device) → one sample per device,
  max of each value; all pods holding the device are kept in `GpuReading.sharers` (§1.2).
* a device whose newest sample is older than `stale_after` is `stale=True`: drawn as stale, not 0 %.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from kueuetop.kueue.gpu import GpuSample
from kueuetop.sources.exposition import ParseStats, parse_exposition

__all__ = [
    "EXPORTER_POD_PREFIXES",
    "FB_FREE",
    "FB_RESERVED",
    "FB_TOTAL",
    "FB_USED",
    "GPU_TEMP",
    "GPU_UTIL",
    "GR_ENGINE_ACTIVE",
    "METRICS",
    "POWER_USAGE",
    "SAMPLE_TIME",
    "SENTINEL_MIN",
    "GpuReading",
    "PodRef",
    "Point",
    "SourceStatus",
    "build_samples",
    "clean_value",
    "device_id",
    "node_of",
    "points_from_exposition",
    "read_exposition",
    "workload_of",
]

GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
FB_USED = "DCGM_FI_DEV_FB_USED"
FB_FREE = "DCGM_FI_DEV_FB_FREE"
FB_RESERVED = "DCGM_FI_DEV_FB_RESERVED"
FB_TOTAL = "DCGM_FI_DEV_FB_TOTAL"
GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"
POWER_USAGE = "DCGM_FI_DEV_POWER_USAGE"
# Fault fields of dcgm-exporter's default counters: the last XID error's code (0: none), and
# double-bit ECC errors since the driver loaded (a family the exporter omits on GPUs without ECC).
XID_ERRORS = "DCGM_FI_DEV_XID_ERRORS"
ECC_DBE = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
# Pseudo-metric a source uses to pass a device's real sample time (e.g. PromQL `timestamp()`),
# since an instant query stamps every value with the evaluation time, not the scrape time.
SAMPLE_TIME = "kueuetop:sample_time"

# The families a GPU view needs; everything else an exporter serves is ignored.
METRICS: tuple[str, ...] = (GPU_UTIL, GR_ENGINE_ACTIVE, FB_USED, FB_FREE, FB_RESERVED, FB_TOTAL,
                            GPU_TEMP, POWER_USAGE, XID_ERRORS, ECC_DBE)
# dcgm-exporter 4.9.0 renamed field 150 (§1.0); the only new name confirmed so far.
ALIASES: dict[str, str] = {"DCGM_FI_DEV_GPU_TEMP_CELSIUS": GPU_TEMP}
# DaemonSet names of the exporter (GPU Operator, Helm chart, GKE managed) (§1.3, §2.1).
EXPORTER_POD_PREFIXES: tuple[str, ...] = ("nvidia-dcgm-exporter", "dcgm-exporter", "gke-managed-dcgm-exporter")
# DCGM blank values are huge integers (e.g. 9223372036854775794); treat ≥ 9.0e18 as N/A (§1.1).
SENTINEL_MIN = 9.0e18


class Point(NamedTuple):
    """One value of one series: metric name, labels, value, sample time (None = read time)."""

    name: str
    labels: Mapping[str, str]
    value: float
    at: float | None = None


@dataclass(frozen=True, slots=True)
class PodRef:
    namespace: str
    pod: str
    container: str = ""


@dataclass(frozen=True, slots=True)
class SourceStatus:
    """What the status bar shows for a source: connection state and data age."""

    ok: bool
    message: str  # one line, no secrets: "ok", "connection refused (…) — showing data from 12s ago"
    last_success: float | None = None  # epoch seconds of the last good read
    checked_at: float = 0.0

    def age(self, now: float | None = None) -> float | None:
        if self.last_success is None:
            return None
        return max(0.0, (time.time() if now is None else now) - self.last_success)


@dataclass(slots=True)
class GpuReading:
    """The GPUs one read produced (or the last good read, marked stale, after an error)."""

    samples: list[GpuSample] = field(default_factory=list)
    # Devices held by more than one pod (time-slicing / MPS): every holder, sorted. The sample
    # itself names the first holder; the join attributes the device to all of them.
    sharers: dict[tuple[str, str], tuple[PodRef, ...]] = field(default_factory=dict)
    at: float = 0.0  # when the read was made
    stale: bool = False  # the source failed: these are the last good data
    status: SourceStatus = field(default_factory=lambda: SourceStatus(False, "not read yet"))
    skipped: int = 0  # series ignored (no node label and no fallback, malformed labels)


def clean_value(value: float) -> float | None:
    """None for DCGM's blank sentinels and non-finite values (reference §1.1)."""
    if not math.isfinite(value) or value >= SENTINEL_MIN:
        return None
    return value


def node_of(labels: Mapping[str, str], default: str = "") -> str:
    # Hostname until exporter 4.8.2, hostname from 4.8.3 (PR #655) (§1.0).
    return labels.get("Hostname") or labels.get("hostname") or default


def _is_exporter_pod(pod: str) -> bool:
    return any(pod.startswith(p) for p in EXPORTER_POD_PREFIXES)


def workload_of(labels: Mapping[str, str]) -> PodRef | None:
    """The pod holding the GPU, or None when the GPU is unassigned (§1.3)."""
    pod = labels.get("exported_pod")
    if pod:
        return PodRef(labels.get("exported_namespace", ""), pod, labels.get("exported_container", ""))
    pod = labels.get("pod")
    if pod:
        # honor_labels=false without exported_pod: `pod` is the exporter's own pod, the GPU is free.
        if _is_exporter_pod(pod):
            return None
        return PodRef(labels.get("namespace", ""), pod, labels.get("container", ""))
    pod = labels.get("pod_name")  # --use-old-namespace (1.x compatibility) (§1.2)
    if pod and not _is_exporter_pod(pod):
        return PodRef(labels.get("pod_namespace", ""), pod, labels.get("container_name", ""))
    return None


def device_id(labels: Mapping[str, str]) -> str:
    """"3" for a whole GPU, "0/11" for MIG instance 11 of GPU 0 (GpuSample.gpu)."""
    gpu = labels.get("gpu") or labels.get("UUID") or labels.get("uuid") or "?"
    gi = labels.get("GPU_I_ID")
    return f"{gpu}/{gi}" if gi else gpu


class _Acc:
    """Everything seen for one device in one read."""

    __slots__ = ("at", "holders", "labels", "mig", "sample_time", "values")

    def __init__(self, labels: Mapping[str, str], mig: bool) -> None:
        self.labels = labels
        self.mig = mig
        self.values: dict[str, float | None] = {}
        self.holders: set[PodRef] = set()
        self.at: float | None = None  # newest point time (read time when a point has none)
        self.sample_time: float | None = None  # newest SAMPLE_TIME: wins over `at` when given

    def put(self, name: str, value: float | None) -> None:
        if name not in self.values:
            self.values[name] = value
            return
        old = self.values[name]
        # Shared GPU: one series per pod with the same device value; keep the max (§1.2).
        if value is not None and (old is None or value > old):
            self.values[name] = value

    def sample(self, node: str, gpu: str, at: float, stale: bool) -> GpuSample:
        v = self.values
        gr = v.get(GR_ENGINE_ACTIVE)
        if gr is not None:
            util: float | None = gr * 100.0  # DCP ratio 0..1 → % (§1.1)
        elif not self.mig:
            util = v.get(GPU_UTIL)  # GPU_UTIL is not valid for MIG instances (§1.5)
        else:
            util = None
        used, free, reserved = v.get(FB_USED), v.get(FB_FREE), v.get(FB_RESERVED)
        total: float | None = None
        if used is not None and free is not None:
            total = used + free + (reserved or 0.0)  # nvidia-smi "Total" (§4.4 #2)
        elif v.get(FB_TOTAL) is not None:
            total = v.get(FB_TOTAL)  # GKE managed exports FB_TOTAL (§2.1)
        holders = sorted(self.holders, key=lambda h: (h.namespace, h.pod, h.container))
        first = holders[0] if holders else PodRef("", "", "")
        xid = v.get(XID_ERRORS)
        lb = self.labels
        return GpuSample(
            node=node, gpu=gpu, uuid=lb.get("UUID") or lb.get("uuid") or "",
            model=lb.get("modelName") or lb.get("model_name") or "",
            util=util, mem_used_mib=used, mem_total_mib=total, temp_c=v.get(GPU_TEMP),
            power_w=v.get(POWER_USAGE), namespace=first.namespace, pod=first.pod,
            container=first.container, mig_profile=lb.get("GPU_I_PROFILE", "") if self.mig else "",
            at=at, stale=stale, xid=int(xid) if xid else None, ecc_dbe=v.get(ECC_DBE),
        )


def build_samples(points: Iterable[Point], *, now: float, stale_after: float = 90.0,
                  default_node: str = "", metrics: Iterable[str] = METRICS) -> GpuReading:
    """Group `points` by device and apply the label rules above.

    `now` is the read time, used for points without a sample time and to judge staleness
    (`stale_after` seconds: about 3 scrape intervals, reference §4.3). `default_node` names the
    node when the series carry no hostname label (direct scrape of one exporter)."""
    wanted = set(metrics) | {SAMPLE_TIME}
    accs: dict[tuple[str, str], _Acc] = {}
    skipped = 0
    for name, labels, value, at in points:
        name = ALIASES.get(name, name)
        if name not in wanted:
            continue
        node = node_of(labels, default_node)
        if not node:
            skipped += 1
            continue
        key = (node, device_id(labels))
        acc = accs.get(key)
        if acc is None:
            acc = accs[key] = _Acc(labels, bool(labels.get("GPU_I_ID")))
        if name == SAMPLE_TIME:
            if math.isfinite(value) and (acc.sample_time is None or value > acc.sample_time):
                acc.sample_time = value
            continue
        acc.put(name, clean_value(value))
        holder = workload_of(labels)
        if holder is not None:
            acc.holders.add(holder)
        t = now if at is None else at
        if acc.at is None or t > acc.at:
            acc.at = t
    reading = GpuReading(at=now, skipped=skipped)
    for key in sorted(accs):
        acc = accs[key]
        at = acc.sample_time if acc.sample_time is not None else acc.at if acc.at is not None else now
        reading.samples.append(acc.sample(key[0], key[1], at, now - at > stale_after))
        if len(acc.holders) > 1:
            reading.sharers[key] = tuple(sorted(acc.holders, key=lambda h: (h.namespace, h.pod, h.container)))
    return reading


def points_from_exposition(text: str, stats: ParseStats | None = None) -> Iterator[Point]:
    """The points of a dcgm-exporter `/metrics` text; malformed lines are counted in `stats`."""
    for s in parse_exposition(text, stats):
        yield Point(s.name, s.labels, s.value, None if s.timestamp_ms is None else s.timestamp_ms / 1000.0)


def read_exposition(text: str, *, now: float, stale_after: float = 90.0,
                    default_node: str = "") -> tuple[GpuReading, ParseStats]:
    """`build_samples` over one exposition text, plus what the parser had to skip."""
    stats = ParseStats()
    reading = build_samples(points_from_exposition(text, stats), now=now, stale_after=stale_after,
                            default_node=default_node)
    return reading, stats
