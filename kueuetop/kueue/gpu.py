"""One GPU's telemetry at one moment, however it was read (Prometheus, direct scrape)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GpuSample:
    node: str  # Kubernetes node name (from the Hostname / hostname label)
    gpu: str  # device index as the exporter labels it ("0".."7"); MIG: "<gpu>/<instance>"
    uuid: str = ""
    model: str = ""  # modelName
    util: float | None = None  # %, DCGM_FI_DEV_GPU_UTIL or, for MIG, GR_ENGINE_ACTIVE × 100
    mem_used_mib: float | None = None  # DCGM_FI_DEV_FB_USED
    mem_total_mib: float | None = None  # FB_USED + FB_FREE (+ FB_RESERVED when exported)
    temp_c: float | None = None  # DCGM_FI_DEV_GPU_TEMP
    power_w: float | None = None  # DCGM_FI_DEV_POWER_USAGE
    namespace: str = ""  # pod the GPU is allocated to (exported_namespace before namespace)
    pod: str = ""  # exported_pod before pod
    container: str = ""
    mig_profile: str = ""  # GPU_I_PROFILE, e.g. "1g.10gb"
    xid: int | None = None  # DCGM_FI_DEV_XID_ERRORS: the last XID error (0 or None: none)
    ecc_dbe: float | None = None  # DCGM_FI_DEV_ECC_DBE_VOL_TOTAL: double-bit ECC errors since boot
    at: float = 0.0  # sample time, epoch seconds
    stale: bool = False  # older than the source's staleness window: drawn as stale, never as 0 %

    @property
    def key(self) -> tuple[str, str]:
        return (self.node, self.gpu)

    @property
    def allocated(self) -> bool:
        return bool(self.pod)

    @property
    def faulty(self) -> bool:
        """DCGM reports an XID error or double-bit ECC errors: the GPU needs attention."""
        return bool(self.xid) or bool(self.ecc_dbe)
