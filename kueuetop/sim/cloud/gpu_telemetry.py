"""The simulated dcgm-exporter: the text a real exporter serves on `:9400/metrics`.

Output follows dcgm-exporter 4.5.x (`default-counters.csv` of that release, DCP fields on),
Kubernetes mode (reference/gpu-telemetry.md §1): one family per CSV line in CSV order, each
`# HELP` / `# TYPE` then one series per GPU (or per MIG instance) with the exporter's label
order — `gpu, UUID, pci_bus_id, device, modelName, [GPU_I_PROFILE, GPU_I_ID], Hostname`, the
`DCGM_FI_DRIVER_VERSION` label, then the sorted attributes `container, [err_code, err_msg],
namespace, pod` — and values printed as the exporter prints them (integers as `%d`, DCGM
doubles as `%f`). Fields a board does not support (memory temperature on GDDR boards, NVLink
on PCIe-only boards) are absent, as the exporter drops blank values; GPU_UTIL and
MEM_COPY_UTIL are absent for MIG instances.

Everything is a pure function of the Node and Pod dicts, simulated time and a seed; no global
random state. GPU → pod mapping mirrors the kubelet pod-resources API: running pods that
request `nvidia.com/gpu` (or `nvidia.com/mig-<profile>`) get the lowest free devices, in
start order, per container. Utilization comes from the pod annotation
`kueuetop.io/gpu-util` ("85" = mean %, "idle" ≈ 0-2 %, default 70 %) with smooth,
deterministic variation; memory, power, temperature and clocks follow from it and the model.

A scenario can inject GPU faults with the Node annotation `kueuetop.io/gpu-xid: "3=79"`: GPU 3
then reports XID 79 (comma-separated for several GPUs).

Rendering 5,000 nodes × 8 GPUs (1 M lines, ~260 MB) stays around a second: per-node label
strings are cached, and lines are assembled column-wise in C (see `_render_rows`).
"""

from __future__ import annotations

import gc
import hashlib
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import compress
from typing import Any

__all__ = [
    "DEFAULT_DRIVER_VERSION",
    "GPU_UTIL_ANNOTATION",
    "GpuDevice",
    "GpuModel",
    "Holder",
    "gpu_assignments",
    "gpu_model_for_node",
    "iter_dcgm_fleet",
    "node_gpu_devices",
    "render_dcgm",
    "render_dcgm_fleet",
]

GPU_UTIL_ANNOTATION = "kueuetop.io/gpu-util"
GPU_XID_ANNOTATION = "kueuetop.io/gpu-xid"
# "0=2": GPU 0 has had 2 double-bit ECC errors. Nodes carrying it export the ECC counter (as
# an exporter whose counters CSV enables DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, commented out in
# dcgm-exporter's default-counters.csv); other nodes print no such family.
GPU_ECC_DBE_ANNOTATION = "kueuetop.io/gpu-ecc-dbe"
GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
DEFAULT_DRIVER_VERSION = "550.90.07"
DEFAULT_UTIL = 70.0
# DCGM's collect interval (dcgm-exporter `-c`, default 30000 ms): values change at most this often.
DEFAULT_COLLECT_INTERVAL = 30.0


@dataclass(frozen=True, slots=True)
class GpuModel:
    """Board figures the exporter would report (nvidia-smi totals, TDP, clocks)."""

    name: str  # NVML name, the `modelName` label
    fb_total_mib: int  # nvidia-smi "Total" = used + free + reserved
    fb_reserved_mib: int
    idle_w: float
    max_w: float
    sm_clock_idle: int
    sm_clock_max: int
    mem_clock_idle: int
    mem_clock: int
    temp_idle: int
    temp_max: int
    hbm: bool  # memory temperature is reported only for HBM boards
    nvlink: bool
    pci_bus_ids: tuple[str, ...] = ()


# PCI addresses of an a3-highgpu-8g (H100) and of GCE's PCIe slots (G2, A2).
_A3_BUS = ("00000000:04:00.0", "00000000:05:00.0", "00000000:0A:00.0", "00000000:0B:00.0",
           "00000000:84:00.0", "00000000:85:00.0", "00000000:8A:00.0", "00000000:8B:00.0")
_GCE_BUS = tuple(f"00000000:00:{0x04 + i:02X}.0" for i in range(16))

MODELS: dict[str, GpuModel] = {
    "t4": GpuModel("Tesla T4", 15360, 257, 9.0, 70.0, 300, 1590, 405, 5000, 33, 72, False, False, _GCE_BUS),
    "l4": GpuModel("NVIDIA L4", 23034, 434, 16.0, 72.0, 210, 2040, 405, 6250, 34, 76, False, False, _GCE_BUS),
    "l40s": GpuModel("NVIDIA L40S", 46068, 593, 34.0, 350.0, 210, 2520, 405, 9001, 32, 80, False, False,
                     _GCE_BUS),
    "a100-40": GpuModel("NVIDIA A100-SXM4-40GB", 40960, 551, 55.0, 400.0, 210, 1410, 1215, 1215, 31, 75,
                        True, True, _GCE_BUS),
    "a100-80": GpuModel("NVIDIA A100-SXM4-80GB", 81920, 617, 62.0, 400.0, 210, 1410, 1593, 1593, 32, 76,
                        True, True, _GCE_BUS),
    "h100": GpuModel("NVIDIA H100 80GB HBM3", 81559, 590, 70.0, 700.0, 345, 1980, 2619, 2619, 30, 78,
                     True, True, _A3_BUS),
    "h200": GpuModel("NVIDIA H200", 143771, 655, 78.0, 700.0, 345, 1980, 3201, 3201, 30, 78, True, True,
                     _A3_BUS),
}

_HELP_AND_TYPE: tuple[tuple[str, str, str], ...] = (
    # (field, Prometheus type, help) — etc/default-counters.csv, in file order.
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB)."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter",
     "Total number of NVLink bandwidth counters for all lanes."),
    ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status"),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors"),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
     "Ratio of cycles the device memory interface is active sending or receiving data."),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
     "The rate of data transmitted over the PCIe bus - including both protocol headers and data "
     "payloads - in bytes per second."),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
     "The rate of data received over the PCIe bus - including both protocol headers and data "
     "payloads - in bytes per second."),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."),
)
_ALL_FIELDS: tuple[str, ...] = tuple(f for f, _, _ in _HELP_AND_TYPE)
# The families of default-counters.csv; the ECC counter is the one opt-in family after them.
OPTIONAL_FIELDS: tuple[str, ...] = ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",)
FIELDS: tuple[str, ...] = tuple(f for f in _ALL_FIELDS if f not in OPTIONAL_FIELDS)
_F = {name: i for i, name in enumerate(_ALL_FIELDS)}
_XID_INDEX = _F["DCGM_FI_DEV_XID_ERRORS"]
_HEADERS = tuple(f"# HELP {f} {h}\n# TYPE {f} {t}\n" for f, t, h in _HELP_AND_TYPE)
_XID_TEXT = {
    0: "No Error", 13: "Graphics Engine Exception", 31: "GPU memory page fault", 43: "GPU stopped processing",
    48: "Double Bit ECC Error", 63: "ECC page retirement or row remapping recording event",
    64: "ECC page retirement or row remapper recording failure", 74: "NVLINK Error",
    79: "GPU has fallen off the bus", 92: "High single-bit ECC error rate", 94: "Contained ECC error",
    95: "Uncontained ECC error", 119: "GSP RPC Timeout", 120: "GSP Error",
}

# MIG: GPU-instance ids NVML hands out per profile size (A100/H100 placements), first free wins.
_MIG_GI_IDS = {7: (0,), 4: (1,), 3: (1, 2), 2: (3, 4, 5), 1: (7, 8, 9, 10, 11, 12, 13, 14)}
_MIG_PROFILE_RE = re.compile(r"^(\d)g\.(\d+)gb")


# --------------------------------------------------------------------------------------------
# Node inventory


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, str]:
    meta = obj.get("metadata")
    ann = meta.get("annotations") if isinstance(meta, Mapping) else None
    return ann if isinstance(ann, Mapping) else {}


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) else ""


def _allocatable(node: Mapping[str, Any]) -> Mapping[str, Any]:
    status = node.get("status")
    if not isinstance(status, Mapping):
        return {}
    alloc = status.get("allocatable") or status.get("capacity")
    return alloc if isinstance(alloc, Mapping) else {}


def _count(value: Any) -> int:
    """A device count from a quantity string ("8"); anything odd counts as 0."""
    try:
        n = int(str(value).strip())
    except (TypeError, ValueError):
        return 0
    return max(0, min(n, 4096))


def gpu_model_for_node(node: Mapping[str, Any]) -> GpuModel:
    """The board a node carries, from GFD's `nvidia.com/gpu.product` or GKE's accelerator label."""
    labels = _labels(node)
    product = str(labels.get("nvidia.com/gpu.product") or "")
    accel = str(labels.get("cloud.google.com/gke-accelerator") or "")
    key = (product or accel).lower().replace("_", "-")
    if "-mig-" in key:
        key = key.split("-mig-", 1)[0]
    if "h200" in key:
        return MODELS["h200"]
    if "h100" in key:
        return MODELS["h100"]
    if "a100" in key:
        return MODELS["a100-80"] if "80" in key else MODELS["a100-40"]
    if "l40s" in key:
        return MODELS["l40s"]
    if re.search(r"(^|-)l4($|-)", key):
        return MODELS["l4"]
    if re.search(r"(^|-)t4($|-)", key):
        return MODELS["t4"]
    # Unknown board: keep its name, size it from GFD's memory label, L4-like otherwise.
    name = product.replace("-", " ") if product else (accel or "NVIDIA GPU")
    try:
        mem = int(str(labels.get("nvidia.com/gpu.memory") or "16384"))
    except ValueError:
        mem = 16384
    mem = mem if 0 < mem < 10**7 else 16384
    base = MODELS["l4"]
    return GpuModel(name, mem, max(256, mem // 50), base.idle_w, base.max_w, base.sm_clock_idle,
                    base.sm_clock_max, base.mem_clock_idle, base.mem_clock, base.temp_idle, base.temp_max,
                    False, False, _GCE_BUS)


@dataclass(frozen=True, slots=True)
class GpuDevice:
    """One series entity: a whole GPU, or one MIG instance of GPU `index`."""

    index: int
    uuid: str
    pci_bus_id: str
    mig_profile: str = ""
    gi_id: int = -1
    fb_total_mib: int = 0
    slices: int = 7  # compute slices of 7 (whole GPU = 7)
    resource: str = GPU_RESOURCE  # what a pod requests to get it (MIG mixed: nvidia.com/mig-<profile>)


def _gpu_uuid(node_name: str, index: int) -> str:
    h = hashlib.sha1(f"{node_name}/gpu/{index}".encode()).hexdigest()
    return f"GPU-{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _mig_layout(labels: Mapping[str, str], allocatable: Mapping[str, Any]) -> tuple[int, list[tuple[str, int]], bool]:
    """(whole GPUs, [(profile, count)], single strategy) from MIG mixed resources or the single strategy."""
    whole = _count(allocatable.get(GPU_RESOURCE))
    profiles = [(k[len(MIG_RESOURCE_PREFIX):], _count(v)) for k, v in allocatable.items()
                if isinstance(k, str) and k.startswith(MIG_RESOURCE_PREFIX) and _count(v) > 0]
    profiles = [(p, n) for p, n in profiles if _MIG_PROFILE_RE.match(p)]
    product = str(labels.get("nvidia.com/gpu.product") or "")
    if not profiles and labels.get("nvidia.com/mig.strategy") == "single" and "-MIG-" in product:
        profile = product.split("-MIG-", 1)[1]
        if _MIG_PROFILE_RE.match(profile) and whole:
            return 0, [(profile, whole)], True
    return whole, sorted(profiles), False


def node_gpu_devices(node: Mapping[str, Any]) -> list[GpuDevice]:
    """The devices the exporter on this node reports, in output order."""
    name = _name(node)
    labels = _labels(node)
    allocatable = _allocatable(node)
    model = gpu_model_for_node(node)
    whole, profiles, single = _mig_layout(labels, allocatable)
    bus = model.pci_bus_ids

    def pci(i: int) -> str:
        return bus[i] if i < len(bus) else f"00000000:{0x10 + i:02X}:00.0"

    devices = [GpuDevice(i, _gpu_uuid(name, i), pci(i), fb_total_mib=model.fb_total_mib) for i in range(whole)]
    if not profiles:
        return devices
    # Pack instances (largest first) into MIG-enabled GPUs of 7 compute slices each.
    free: list[int] = []
    used_ids: list[set[int]] = []
    placed: list[list[tuple[str, int, int]]] = []
    for profile, count in sorted(profiles, key=lambda pc: -int(pc[0][0])):
        m = _MIG_PROFILE_RE.match(profile)
        assert m is not None
        slices, gb = int(m.group(1)), int(m.group(2))
        for _ in range(count):
            gpu = next((g for g, f in enumerate(free) if f >= slices), None)
            if gpu is None:
                free.append(7)
                used_ids.append(set())
                placed.append([])
                gpu = len(free) - 1
            free[gpu] -= slices
            ids = _MIG_GI_IDS.get(slices, ())
            gi = next((i for i in ids if i not in used_ids[gpu]), max(used_ids[gpu] | {14}) + 1)
            used_ids[gpu].add(gi)
            placed[gpu].append((profile, gi, int(gb * 1024 * 0.95)))
    for g, instances in enumerate(placed):
        index = whole + g
        uuid = _gpu_uuid(name, index)
        for profile, gi, mib in sorted(instances, key=lambda x: x[1]):
            m = _MIG_PROFILE_RE.match(profile)
            # Single strategy advertises the instances as plain nvidia.com/gpu.
            resource = GPU_RESOURCE if single else MIG_RESOURCE_PREFIX + profile
            devices.append(GpuDevice(index, uuid, pci(index), profile, gi, mib, int(m.group(1)) if m else 1,
                                     resource))
    return devices


# --------------------------------------------------------------------------------------------
# Which pod holds which device


@dataclass(frozen=True, slots=True)
class Holder:
    namespace: str
    pod: str
    container: str
    util_hint: str  # the pod's kueuetop.io/gpu-util annotation ("" when absent)
    uid: str


def _container_devices(container: Mapping[str, Any]) -> dict[str, int]:
    res = container.get("resources")
    if not isinstance(res, Mapping):
        return {}
    out: dict[str, int] = {}
    for part in ("requests", "limits"):  # extended resources: limits == requests when both set
        values = res.get(part)
        if not isinstance(values, Mapping):
            continue
        for k, v in values.items():
            if isinstance(k, str) and (k == GPU_RESOURCE or k.startswith(MIG_RESOURCE_PREFIX)):
                out[k] = max(out.get(k, 0), _count(v))
    return out


def _pod_order(item: tuple[Mapping[str, Any], Mapping[str, Any]]) -> tuple[str, str, str]:
    pod, meta = item
    started = str(pod["status"].get("startTime") or meta.get("creationTimestamp") or "")
    return (started, str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def gpu_assignments(node: Mapping[str, Any], pods_on_node: Iterable[Mapping[str, Any]], *,
                    devices: Sequence[GpuDevice] | None = None,
                    exporter_pod: str | None = None) -> list[Holder | None]:
    """For each device of `node_gpu_devices(node)`, the container holding it (None = free).

    Running pods only, in start order; each GPU-requesting container takes the lowest free
    devices of the resource it asks for, as the device plugin hands them out. The exporter's
    own pod (`exporter_pod`) never holds a device.
    """
    devs = list(devices) if devices is not None else node_gpu_devices(node)
    holders: list[Holder | None] = [None] * len(devs)
    free: dict[str, list[int]] = {}
    for i, d in enumerate(devs):
        free.setdefault(d.resource, []).append(i)
    if not free:
        return holders
    candidates = []
    for pod in pods_on_node:
        if not isinstance(pod, Mapping):
            continue
        status = pod.get("status") or {}
        meta = pod.get("metadata") or {}
        if not isinstance(status, Mapping) or status.get("phase") != "Running" or not isinstance(meta, Mapping):
            continue
        if exporter_pod is not None and meta.get("name") == exporter_pod:
            continue
        candidates.append((pod, meta))
    candidates.sort(key=_pod_order)
    for pod, meta in candidates:
        spec = pod.get("spec") or {}
        containers = spec.get("containers") if isinstance(spec, Mapping) else None
        if not isinstance(containers, list):
            continue
        ann = _annotations(pod)
        hint = str(ann.get(GPU_UTIL_ANNOTATION) or "")
        for c in containers:
            if not isinstance(c, Mapping):
                continue
            for resource, n in _container_devices(c).items():
                pool = free.get(resource)
                if not pool or n <= 0:
                    continue
                take, free[resource] = pool[:n], pool[n:]
                holder = Holder(str(meta.get("namespace") or ""), str(meta.get("name") or ""),
                                str(c.get("name") or ""), hint, str(meta.get("uid") or ""))
                for i in take:
                    holders[i] = holder
    return holders


# --------------------------------------------------------------------------------------------
# Values


def _escape(value: str) -> str:
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value


def _unit(h: int, shift: int) -> float:
    """A deterministic number in [0, 1) from bits of a hash."""
    return ((h >> shift) & 0xFFFF) / 65536.0


def _mean_util(hint: str) -> float | None:
    """Mean busy % from the annotation; None = idle."""
    if hint == "idle":
        return None
    try:
        v = float(hint.strip().rstrip("%")) if hint else DEFAULT_UTIL
    except ValueError:
        return DEFAULT_UTIL
    return min(100.0, max(0.0, v)) if math.isfinite(v) else DEFAULT_UTIL


_TAU = 2.0 * math.pi


def _wave(t: float, h: int) -> float:
    """Smooth deterministic variation in [-1, 1]: three incommensurate sines, phases from `h`."""
    return (0.55 * math.sin(_TAU * (t / 611.0 + _unit(h, 0)))
            + 0.30 * math.sin(_TAU * (t / 173.0 + _unit(h, 16)))
            + 0.15 * math.sin(_TAU * (t / 47.0 + _unit(h, 32))))


@dataclass(frozen=True, slots=True)
class _DeviceConst:
    """Per-device figures that never change: board-to-board spread and counter origins."""

    sm_busy: str  # boost clock this board settles at under load
    temp_off: float
    jitter: float  # fixed util offset in [-1, 1] so GPUs of one pod are not identical
    phase: float
    energy0: float  # mJ at t = 0 (time since boot before the simulation started)
    nvlink_rate: float  # counter increments per second; 0 = no NVLink


@dataclass(slots=True)
class _NodeStatic:
    """Per-node strings and constants that do not change between scrapes."""

    fingerprint: tuple
    model: GpuModel
    devices: list[GpuDevice]
    prefixes: list[str]  # 'gpu=…,Hostname=…,DCGM_FI_DRIVER_VERSION="…"' per device
    consts: list[_DeviceConst]
    xid: dict[int, int]
    ecc_dbe: dict[int, int] | None  # None: the node's exporter has no ECC counter


_STATIC_CACHE: dict[str, _NodeStatic] = {}
_STATIC_CACHE_MAX = 200_000


def _driver_version(labels: Mapping[str, str]) -> str:
    full = labels.get("nvidia.com/cuda.driver-version.full")
    if full:
        return str(full)
    parts = [labels.get(f"nvidia.com/cuda.driver.{k}") for k in ("major", "minor", "rev")]
    if all(parts):
        return ".".join(str(p) for p in parts)
    return DEFAULT_DRIVER_VERSION


def _parse_xid(text: str) -> dict[int, int]:
    out: dict[int, int] = {}
    for part in str(text).split(","):
        gpu, _, code = part.partition("=")
        try:
            out[int(gpu)] = int(code)
        except ValueError:
            continue
    return out


def _hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def _node_static(node: Mapping[str, Any], hostname_label: str) -> _NodeStatic:
    name = _name(node)
    labels = _labels(node)
    alloc = _allocatable(node)
    gpu_items = tuple(sorted((k, str(v)) for k, v in alloc.items()
                             if isinstance(k, str) and (k == GPU_RESOURCE or k.startswith(MIG_RESOURCE_PREFIX))))
    fingerprint = (
        gpu_items, labels.get("nvidia.com/gpu.product"), labels.get("cloud.google.com/gke-accelerator"),
        labels.get("nvidia.com/mig.strategy"), labels.get("nvidia.com/gpu.memory"), _driver_version(labels),
        hostname_label, _annotations(node).get(GPU_XID_ANNOTATION), _annotations(node).get(GPU_ECC_DBE_ANNOTATION),
    )
    cached = _STATIC_CACHE.get(name)
    if cached is not None and cached.fingerprint == fingerprint:
        return cached
    model = gpu_model_for_node(node)
    devices = node_gpu_devices(node)
    host = f',{hostname_label}="{_escape(name)}"' if hostname_label and name else ""
    driver = f',DCGM_FI_DRIVER_VERSION="{_escape(_driver_version(labels))}"'
    mname = _escape(model.name)
    prefixes, consts = [], []
    for d in devices:
        mig = f',GPU_I_PROFILE="{_escape(d.mig_profile)}",GPU_I_ID="{d.gi_id}"' if d.mig_profile else ""
        prefixes.append(f'gpu="{d.index}",UUID="{d.uuid}",pci_bus_id="{d.pci_bus_id}",device="nvidia{d.index}",'
                        f'modelName="{mname}"{mig}{host}{driver}')
        h = _hash64(d.uuid)  # per physical GPU: MIG instances share the board's figures
        consts.append(_DeviceConst(
            sm_busy=str(model.sm_clock_max - 15 * int(3 * _unit(h, 0))),
            temp_off=4.0 * (_unit(h, 16) - 0.5),
            jitter=2.0 * _unit(_hash64(f"{d.uuid}/{d.gi_id}"), 0) - 1.0,
            phase=_unit(h, 32),
            energy0=_unit(h, 48) * 4e10,
            nvlink_rate=2.5e5 * (1.0 + _unit(h, 8)) if model.nvlink else 0.0,
        ))
    ecc = _annotations(node).get(GPU_ECC_DBE_ANNOTATION)
    static = _NodeStatic(fingerprint, model, devices, prefixes, consts,
                         _parse_xid(_annotations(node).get(GPU_XID_ANNOTATION) or ""),
                         _parse_xid(ecc) if ecc is not None else None)
    if len(_STATIC_CACHE) >= _STATIC_CACHE_MAX:
        _STATIC_CACHE.clear()
    _STATIC_CACHE[name] = static
    return static


@dataclass(frozen=True, slots=True)
class _PodState:
    """What a pod's workload is doing at one instant (shared by all its GPUs)."""

    mean: float | None  # None = idle
    wave: float
    mem_frac: float
    dram_f: float
    tensor_f: float
    pcie_f: float


def _pod_state(holder: Holder, t: float, seed_mix: int) -> _PodState:
    ph = _hash64(holder.uid or f"{holder.namespace}/{holder.pod}") ^ seed_mix
    mean = _mean_util(holder.util_hint)
    w = _wave(t, ph)
    if mean is None:
        mem = 0.02 + 0.10 * _unit(ph, 48)
    else:
        mem = min(0.97, 0.55 + 0.35 * _unit(ph, 48) + 0.02 * w)
    return _PodState(mean, w, mem, 0.40 + 0.30 * _unit(ph, 4), 0.35 + 0.30 * _unit(ph, 20),
                     0.5 + _unit(ph, 36))


def _xid_attrs(xid: int) -> str:
    return f',err_code="{xid}",err_msg="{_XID_TEXT.get(xid, "Unknown Error")}"'


def _device_rows(static: _NodeStatic, holders: Sequence[Holder | None], t: float,
                 seed_mix: int, pod_cache: dict[Holder, _PodState]) -> list[tuple[str, str, list[str | None]]]:
    """(label block, XID label block, 26 values each ending in a newline, or None) per device."""
    model = static.model
    span_w = model.max_w - model.idle_w
    # Per device: (util %, GR engine ratio, DRAM ratio, memory fraction, pod state)
    per_dev: list[tuple[float, float, float, float, _PodState | None]] = []
    activity: dict[int, float] = {}  # physical GPU → load, summed over its MIG instances
    for k, d in enumerate(static.devices):
        holder = holders[k]
        if holder is None:
            per_dev.append((0.0, 0.0, 0.0, 0.0, None))
            continue
        st = pod_cache.get(holder)
        if st is None:
            st = pod_cache[holder] = _pod_state(holder, t, seed_mix)
        if st.mean is None:
            util = 1.0 + st.wave  # idle: 0-2 %
        else:
            amp = min(12.0, 0.25 * st.mean + 1.0, 0.5 * (100.0 - st.mean) + 4.0)
            util = min(100.0, max(0.0, st.mean + amp * st.wave + static.consts[k].jitter))
        gr = util * 0.0098
        dram = gr * st.dram_f
        per_dev.append((util, gr, dram, st.mem_frac, st))
        activity[d.index] = activity.get(d.index, 0.0) + (0.85 * gr + 0.10 * dram) * d.slices / 7.0
    rows: list[tuple[str, str, list[str | None]]] = []
    nvlink_none = None if not model.nvlink else ""
    for k, d in enumerate(static.devices):
        util, gr, dram, mem_frac, st = per_dev[k]
        c = static.consts[k]
        act = min(1.0, activity.get(d.index, 0.0))
        power = model.idle_w * (1.0 + 0.02 * math.sin(t / 97.0 + _TAU * c.phase)) + span_w * act
        temp = model.temp_idle + (model.temp_max - model.temp_idle) * act + c.temp_off
        busy = act > 0.005
        # The energy counter integrates a fixed mid-range power so it never runs backwards.
        energy = int(c.energy0 + t * (model.idle_w + 0.5 * span_w) * 1000.0)
        total = d.fb_total_mib
        reserved = 0 if d.mig_profile else model.fb_reserved_mib
        used = int((total - reserved) * mem_frac)
        xid = static.xid.get(d.index, 0)
        mig = bool(d.mig_profile)
        if st is None:
            tensor, tx, rx = 0.0, 20_000, 30_000
        else:
            tensor = gr * st.tensor_f
            tx = int(2e4 + gr * 1.2e9 * st.pcie_f)
            rx = int(3e4 + gr * 1.6e9 * st.pcie_f)
        vals: list[str | None] = [
            (c.sm_busy if busy else str(model.sm_clock_idle)) + "\n",
            f"{model.mem_clock if busy or model.hbm else model.mem_clock_idle}\n",
            f"{int(temp + 4 + 3 * act)}\n" if model.hbm else None,
            f"{int(temp)}\n",
            f"{power:f}\n",
            f"{energy}\n",
            "0\n",
            None if mig else f"{round(util)}\n",
            None if mig else f"{round(dram * 90)}\n",
            "0\n",
            "0\n",
            f"{xid}\n",
            f"{total - reserved - used}\n",
            f"{used}\n",
            f"{reserved}\n",
            nvlink_none if nvlink_none is None else f"{int(t * c.nvlink_rate)}\n",
            "0\n",
            "0\n",
            "0\n",
            "0\n",
            f"{gr:f}\n",
            f"{tensor:f}\n",
            f"{dram:f}\n",
            f"{tx}\n",
            f"{rx}\n",
            None if static.ecc_dbe is None else f"{static.ecc_dbe.get(d.index, 0)}\n",
        ]
        holder = holders[k]
        prefix = static.prefixes[k]
        if holder is None:
            rows.append((f"{{{prefix}}} ", f"{{{prefix}{_xid_attrs(xid)}}} ", vals))
        else:
            cn, ns, p = _escape(holder.container), _escape(holder.namespace), _escape(holder.pod)
            rows.append((f'{{{prefix},container="{cn}",namespace="{ns}",pod="{p}"}} ',
                         f'{{{prefix},container="{cn}"{_xid_attrs(xid)},namespace="{ns}",pod="{p}"}} ', vals))
    return rows


def _quantize(now: float, interval: float) -> float:
    if not math.isfinite(now):
        return 0.0
    return math.floor(now / interval) * interval if interval > 0 else now


def _family_pieces(rows: list[tuple[str, str, list[str | None]]]) -> Iterator[list[str]]:
    """Per family: its header, then (name, label block, value) pieces for every line."""
    # Lines are interleaved from columns by slice assignment, so the per-line work happens in C
    # (no string or tuple per line): ~3x faster than formatting lines, at 1 M lines for xl.
    if not rows:
        return
    lbls, xlbls, vals = zip(*rows, strict=True)
    cols = list(zip(*vals, strict=True))
    for f, field in enumerate(_ALL_FIELDS):
        col = cols[f]
        labels = xlbls if f == _XID_INDEX else lbls
        if None in col:
            keep = [v is not None for v in col]
            labels, col = tuple(compress(labels, keep)), tuple(compress(col, keep))
            if not col:
                continue  # the exporter prints no header for a family without series
        seg = [field] * (3 * len(col) + 1)
        seg[0] = _HEADERS[f]
        seg[2::3] = labels
        seg[3::3] = col
        yield seg


def _render_rows(rows: list[tuple[str, str, list[str | None]]]) -> str:
    out: list[str] = []
    for seg in _family_pieces(rows):
        out += seg
    return "".join(out)  # one join: the whole text is copied once


@contextmanager
def _gc_paused() -> Iterator[None]:
    # A render allocates ~100 k containers; letting the cyclic GC walk the whole simulator heap
    # several times meanwhile costs more than the render itself.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _seed_mix(seed: int) -> int:
    return (seed * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF


def render_dcgm(node: Mapping[str, Any], pods_on_node: Iterable[Mapping[str, Any]], now: float, *,
                exporter_pod: str | None = None, seed: int = 0, hostname_label: str = "Hostname",
                collect_interval: float = DEFAULT_COLLECT_INTERVAL) -> str:
    """The exporter's `/metrics` on `node` at simulated time `now` (seconds).

    `exporter_pod` is the exporter's own pod name (never mapped to a GPU). `hostname_label` is
    "Hostname" (exporter ≤ 4.8.2, the default) or "hostname" (≥ 4.8.3); "" omits it as
    `--no-hostname` does. Values change once per `collect_interval`, as DCGM samples.
    """
    static = _node_static(node, hostname_label)
    holders = gpu_assignments(node, pods_on_node, devices=static.devices, exporter_pod=exporter_pod)
    t = _quantize(now, collect_interval)
    with _gc_paused():
        return _render_rows(_device_rows(static, holders, t, _seed_mix(seed), {}))


def _fleet_rows(nodes: Iterable[Mapping[str, Any]], pods_by_node: Mapping[str, Iterable[Mapping[str, Any]]],
                now: float, seed: int, hostname_label: str,
                collect_interval: float) -> list[tuple[str, str, list[str | None]]]:
    t = _quantize(now, collect_interval)
    mix = _seed_mix(seed)
    pod_cache: dict[Holder, _PodState] = {}
    rows: list[tuple[str, str, list[str | None]]] = []
    for node in nodes:
        if not isinstance(node, Mapping):
            continue
        static = _node_static(node, hostname_label)
        if not static.devices:
            continue
        holders = gpu_assignments(node, pods_by_node.get(_name(node), ()), devices=static.devices)
        rows.extend(_device_rows(static, holders, t, mix, pod_cache))
    return rows


def render_dcgm_fleet(nodes: Iterable[Mapping[str, Any]],
                      pods_by_node: Mapping[str, Iterable[Mapping[str, Any]]], now: float, *,
                      seed: int = 0, hostname_label: str = "Hostname",
                      collect_interval: float = DEFAULT_COLLECT_INTERVAL) -> str:
    """One exposition covering every GPU node: each family once, each node's series under its
    own hostname label (the single plain endpoint of the simulated fleet). `pods_by_node` maps
    node name → pods on it; other arguments as for `render_dcgm`."""
    with _gc_paused():
        return _render_rows(_fleet_rows(nodes, pods_by_node, now, seed, hostname_label, collect_interval))


def iter_dcgm_fleet(nodes: Iterable[Mapping[str, Any]],
                    pods_by_node: Mapping[str, Iterable[Mapping[str, Any]]], now: float, *,
                    seed: int = 0, hostname_label: str = "Hostname",
                    collect_interval: float = DEFAULT_COLLECT_INTERVAL) -> Iterator[str]:
    """`render_dcgm_fleet` as one chunk per metric family, for a chunked HTTP response: the
    server never holds the whole (xl: ~260 MB) text at once."""
    with _gc_paused():
        rows = _fleet_rows(nodes, pods_by_node, now, seed, hostname_label, collect_interval)
    for seg in _family_pieces(rows):
        yield "".join(seg)
