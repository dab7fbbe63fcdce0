"""ResourceFlavor and the rule that decides whether a pod set may use it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kueuetop.kueue.fields import object_fields
from kueuetop.kueue.meta import Meta, parse_meta
from kueuetop.kueue.pod_requests import PodShape
from kueuetop.kueue.scheduling_terms import Taint, Toleration, parse_taints, parse_tolerations, tolerated

if TYPE_CHECKING:
    from kueuetop.kueue.parse_cache import ParseCache


@dataclass(frozen=True, slots=True)
class ResourceFlavor:
    meta: Meta
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    topology_name: str = ""

    @property
    def name(self) -> str:
        return self.meta.name


def parse_resource_flavor(data: Mapping, cache: ParseCache | None = None) -> ResourceFlavor:
    f, _, _ = object_fields(data, "ResourceFlavor", cache)
    spec = f.sub("spec")
    return ResourceFlavor(
        meta=parse_meta(f),
        node_labels=spec.str_map("nodeLabels"),
        node_taints=parse_taints(spec, "nodeTaints"),
        tolerations=parse_tolerations(spec),
        topology_name=spec.str("topologyName"),
    )


def flavor_mismatch(flavor: ResourceFlavor, shape: PodShape, group_label_keys: frozenset[str]) -> str | None:
    """Why a pod set can't use this flavor, or None if it can.

    Kueue's flavorassigner (flavorSelector + FindMatchingUntoleratedTaint): the pod's tolerations
    plus the flavor's own must tolerate every NoSchedule/NoExecute nodeTaint; the pod's
    nodeSelector and required node affinity, restricted to the label keys that the flavors of
    this resource group define (`group_label_keys`), must match this flavor's nodeLabels. An
    affinity term left empty by that restriction matches any flavor (terms are ORed).
    """
    tolerations = shape.tolerations + flavor.tolerations
    for taint in flavor.node_taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not tolerated(taint, tolerations):
            return f"untolerated taint {{{taint.key}: {taint.value}}} in flavor {flavor.name}"
    labels = flavor.node_labels
    for key, value in shape.node_selector.items():
        if key in group_label_keys and labels.get(key) != value:
            return f"flavor {flavor.name} doesn't match node selector {key}={value}"
    if shape.required_affinity:
        terms = []
        for term in shape.required_affinity:
            kept = [r for r in term.expressions if r.key in group_label_keys]
            if not kept:
                terms = []
                break
            terms.append(kept)
        if terms and not any(all(r.matches(labels) for r in t) for t in terms):
            return f"flavor {flavor.name} doesn't match node affinity"
    return None
