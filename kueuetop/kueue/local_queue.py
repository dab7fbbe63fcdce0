"""LocalQueue: the namespaced entry point that feeds one ClusterQueue."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kueuetop.kueue.api_versions import to_v1beta2
from kueuetop.kueue.cluster_queue import HOLD, HOLD_AND_DRAIN, STOP_NONE, FlavorUsage, parse_flavor_usage
from kueuetop.kueue.fields import object_fields
from kueuetop.kueue.meta import Condition, Meta, parse_conditions, parse_meta
from kueuetop.kueue.quota import parse_fair_weight

if TYPE_CHECKING:
    from kueuetop.kueue.parse_cache import ParseCache


@dataclass(frozen=True, slots=True)
class LocalQueue:
    meta: Meta
    cluster_queue: str
    stop_policy: str = STOP_NONE
    fair_weight: float = 1.0
    conditions: tuple[Condition, ...] = ()
    pending_workloads: int = 0
    reserving_workloads: int = 0
    admitted_workloads: int = 0
    flavors_reservation: tuple[FlavorUsage, ...] = ()
    flavors_usage: tuple[FlavorUsage, ...] = ()

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def namespace(self) -> str:
        return self.meta.namespace

    @property
    def key(self) -> tuple[str, str]:
        return (self.meta.namespace, self.meta.name)


def parse_local_queue(data: Mapping, cache: ParseCache | None = None) -> LocalQueue:
    f, _, _ = object_fields(to_v1beta2(data), "LocalQueue", cache)
    spec = f.sub("spec")
    status = f.sub("status")
    return LocalQueue(
        meta=parse_meta(f),
        cluster_queue=spec.str("clusterQueue", required=True),
        stop_policy=spec.enum("stopPolicy", (STOP_NONE, HOLD, HOLD_AND_DRAIN), STOP_NONE),
        fair_weight=parse_fair_weight(spec),
        conditions=parse_conditions(status),
        pending_workloads=status.int("pendingWorkloads"),
        reserving_workloads=status.int("reservingWorkloads"),
        admitted_workloads=status.int("admittedWorkloads"),
        flavors_reservation=parse_flavor_usage(status, "flavorsReservation"),
        flavors_usage=parse_flavor_usage(status, "flavorsUsage"),
    )
