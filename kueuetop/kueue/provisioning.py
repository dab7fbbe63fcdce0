"""ProvisioningRequestConfig (kueue) and ProvisioningRequest (autoscaling.x-k8s.io/v1)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kueuetop.kueue.api_versions import to_v1beta2
from kueuetop.kueue.fields import object_fields
from kueuetop.kueue.meta import Condition, Meta, parse_conditions, parse_meta

if TYPE_CHECKING:
    from kueuetop.kueue.parse_cache import ParseCache

CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"
QUEUED_PROVISIONING = "queued-provisioning.gke.io"


@dataclass(frozen=True, slots=True)
class RetryStrategy:
    # Defaults from Kueue's ProvisioningRequestConfig API.
    backoff_limit_count: int = 3
    backoff_base_seconds: int = 60
    backoff_max_seconds: int = 1800


@dataclass(frozen=True, slots=True)
class ProvisioningRequestConfig:
    meta: Meta
    provisioning_class: str
    parameters: Mapping[str, str] = field(default_factory=dict)
    managed_resources: tuple[str, ...] = ()
    retry: RetryStrategy = field(default_factory=RetryStrategy)

    @property
    def name(self) -> str:
        return self.meta.name


def parse_provisioning_request_config(data: Mapping, cache: ParseCache | None = None) -> ProvisioningRequestConfig:
    f, _, _ = object_fields(to_v1beta2(data), "ProvisioningRequestConfig", cache)
    spec = f.sub("spec")
    rs = spec.sub("retryStrategy")
    return ProvisioningRequestConfig(
        meta=parse_meta(f),
        provisioning_class=spec.str("provisioningClassName", required=True),
        parameters=spec.str_map("parameters"),
        managed_resources=spec.str_list("managedResources"),
        retry=RetryStrategy(
            backoff_limit_count=rs.int("backoffLimitCount", 3, minimum=0),
            backoff_base_seconds=rs.int("backoffBaseSeconds", 60, minimum=0),
            backoff_max_seconds=rs.int("backoffMaxSeconds", 1800, minimum=0),
        ),
    )


@dataclass(frozen=True, slots=True)
class ProvisioningRequest:
    meta: Meta
    provisioning_class: str
    pod_sets: tuple[tuple[str, int], ...] = ()  # (podTemplateRef.name, count)
    parameters: Mapping[str, str] = field(default_factory=dict)
    conditions: tuple[Condition, ...] = ()

    @property
    def name(self) -> str:
        return self.meta.name


def parse_provisioning_request(data: Mapping, cache: ParseCache | None = None) -> ProvisioningRequest:
    f, _, _ = object_fields(data, "ProvisioningRequest", cache)
    spec = f.sub("spec")
    return ProvisioningRequest(
        meta=parse_meta(f),
        provisioning_class=spec.str("provisioningClassName"),
        pod_sets=tuple((p.sub("podTemplateRef").str("name"), p.int("count", 0)) for p in spec.items("podSets")),
        parameters=spec.str_map("parameters"),
        conditions=parse_conditions(f.sub("status")),
    )
