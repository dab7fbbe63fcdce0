"""Resource groups and quotas as ClusterQueues and Cohorts declare them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kueuetop.kueue.fields import Fields


@dataclass(frozen=True, slots=True)
class ResourceQuota:
    nominal: int
    borrowing_limit: int | None = None  # None = unlimited
    lending_limit: int | None = None  # None = everything unused is lendable


@dataclass(frozen=True, slots=True)
class FlavorQuotas:
    name: str
    resources: Mapping[str, ResourceQuota] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    covered: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


def parse_resource_groups(spec: Fields) -> tuple[ResourceGroup, ...]:
    groups = []
    seen_resources: set[str] = set()
    for g in spec.items("resourceGroups"):
        covered = g.str_list("coveredResources")
        for r in covered:
            if r in seen_resources:
                raise g.error("coveredResources", f"resource {r} is covered by more than one group")
            seen_resources.add(r)
        flavors = []
        for fq in g.items("flavors"):
            name = fq.str("name", required=True)
            res: dict[str, ResourceQuota] = {}
            for rq in fq.items("resources"):
                rname = rq.str("name", required=True)
                res[rname] = ResourceQuota(
                    nominal=rq.quantity("nominalQuota", rname) or 0,
                    borrowing_limit=rq.quantity("borrowingLimit", rname),
                    lending_limit=rq.quantity("lendingLimit", rname),
                )
            missing = [r for r in covered if r not in res]
            if missing:
                raise fq.error("resources", f"flavor {name} must list every covered resource; missing {missing}")
            flavors.append(FlavorQuotas(name, res))
        groups.append(ResourceGroup(tuple(covered), tuple(flavors)))
    return tuple(groups)


def parse_fair_weight(spec: Fields) -> float:
    """spec.fairSharing.weight (a Quantity; default 1)."""
    fs = spec.sub("fairSharing")
    if not fs.has("weight"):
        return 1.0
    milli = fs.quantity("weight", "cpu")  # milli-value parse keeps fractions like 0.5
    return (milli or 0) / 1000.0
