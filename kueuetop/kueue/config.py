"""The parts of Kueue's Configuration (config.kueue.x-k8s.io) the admission engine honours."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kueuetop.kueue.errors import KueueParseError
from kueuetop.kueue.fields import Fields

LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"


@dataclass(frozen=True, slots=True)
class WaitForPodsReady:
    # Defaults of the v1beta2 Configuration API (reference/kueue.md §6.8).
    timeout_seconds: float = 1800.0
    recovery_timeout_seconds: float | None = None  # None = same as timeout; 0 disables
    block_admission: bool = False
    requeuing_timestamp: str = "Eviction"  # or "Creation"
    backoff_limit_count: int | None = None  # None = requeue forever
    backoff_base_seconds: int = 60
    backoff_max_seconds: int = 3600

    @property
    def recovery_timeout(self) -> float:
        return self.timeout_seconds if self.recovery_timeout_seconds is None else self.recovery_timeout_seconds


@dataclass(frozen=True, slots=True)
class FairSharing:
    preemption_strategies: tuple[str, ...] = (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE)


@dataclass(frozen=True, slots=True)
class KueueConfig:
    fair_sharing: FairSharing | None = None
    wait_for_pods_ready: WaitForPodsReady | None = None
    # Feature gates whose defaults matter to admission (all on by default in Kueue 0.19).
    partial_admission: bool = True
    priority_sorting_within_cohort: bool = True
    flavor_fungibility: bool = True
    feature_gates: Mapping[str, bool] = field(default_factory=dict)


def _duration(f: Fields, key: str, default: float | None) -> float | None:
    from kueuetop.kueue.durations import parse_duration

    raw = f.raw(key)
    if raw is None:
        return default
    if not isinstance(raw, str):
        raise f.error(key, f"expected a duration string like \"5m\", got {raw!r}")
    try:
        return parse_duration(raw)
    except ValueError as exc:
        raise f.error(key, str(exc)) from None


# Where a cluster keeps Kueue's Configuration: Kueue's manifests generate the ConfigMap
# `kueue-manager-config` (configMapGenerator `manager-config`, name prefix `kueue-`) in
# `kueue-system`, mounted as the manager's --config from the key below.
MANAGER_CONFIG_NAMESPACE = "kueue-system"
MANAGER_CONFIG_NAME = "kueue-manager-config"
MANAGER_CONFIG_KEY = "controller_manager_config.yaml"


def parse_kueue_config(data: Mapping[str, Any] | None) -> KueueConfig:
    """From a Kueue Configuration document (v1beta1 or v1beta2) or a fragment of one."""
    if not data:
        return KueueConfig()
    if not isinstance(data, Mapping):
        raise KueueParseError("Configuration", "", "expected a mapping")
    f = Fields(data, "Configuration")
    fair = None
    if f.has("fairSharing"):
        fs = f.sub("fairSharing")
        # v1beta1 had fairSharing.enable; v1beta2 enables it by the section's presence.
        if fs.bool("enable", True):
            strategies = fs.str_list("preemptionStrategies") or FairSharing().preemption_strategies
            for s in strategies:
                if s not in (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE):
                    raise fs.error("preemptionStrategies", f"unsupported strategy {s!r}")
            fair = FairSharing(tuple(strategies))
    wfpr = None
    if f.has("waitForPodsReady"):
        w = f.sub("waitForPodsReady")
        if w.bool("enable", True):
            rs = w.sub("requeuingStrategy")
            wfpr = WaitForPodsReady(
                timeout_seconds=_duration(w, "timeout", 1800.0) or 0.0,
                recovery_timeout_seconds=_duration(w, "recoveryTimeout", None),
                block_admission=w.bool("blockAdmission", False),
                requeuing_timestamp=rs.enum("timestamp", ("Eviction", "Creation"), "Eviction"),
                backoff_limit_count=rs.opt_int("backoffLimitCount", minimum=0),
                backoff_base_seconds=rs.int("backoffBaseSeconds", 60, minimum=0),
                backoff_max_seconds=rs.int("backoffMaxSeconds", 3600, minimum=0),
            )
    gates_raw = f.raw("featureGates", {})
    if not isinstance(gates_raw, Mapping) or not all(isinstance(v, bool) for v in gates_raw.values()):
        raise f.error("featureGates", "expected a map of gate name to true/false")
    gates = dict(gates_raw)
    return KueueConfig(
        fair_sharing=fair,
        wait_for_pods_ready=wfpr,
        partial_admission=gates.get("PartialAdmission", True),
        priority_sorting_within_cohort=gates.get("PrioritySortingWithinCohort", True),
        flavor_fungibility=gates.get("FlavorFungibility", True),
        feature_gates=gates,
    )
