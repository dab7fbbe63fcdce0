"""Cohort (hierarchical cohorts; an implicit cohort is one that only ClusterQueues name)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kueuetop.kueue.api_versions import to_v1beta2
from kueuetop.kueue.fields import object_fields
from kueuetop.kueue.meta import Meta, parse_meta
from kueuetop.kueue.quota import ResourceGroup, parse_fair_weight, parse_resource_groups

if TYPE_CHECKING:
    from kueuetop.kueue.parse_cache import ParseCache


@dataclass(frozen=True, slots=True)
class Cohort:
    meta: Meta
    parent: str = ""
    resource_groups: tuple[ResourceGroup, ...] = ()
    fair_weight: float = 1.0
    weighted_share: int | None = None

    @property
    def name(self) -> str:
        return self.meta.name


def parse_cohort(data: Mapping, cache: ParseCache | None = None) -> Cohort:
    f, _, _ = object_fields(to_v1beta2(data), "Cohort", cache)
    spec = f.sub("spec")
    return Cohort(
        meta=parse_meta(f),
        parent=spec.str("parentName"),
        resource_groups=parse_resource_groups(spec),
        fair_weight=parse_fair_weight(spec),
        weighted_share=f.sub("status").sub("fairSharing").opt_int("weightedShare"),
    )
