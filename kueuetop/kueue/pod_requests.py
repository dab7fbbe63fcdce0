"""What Kueue needs from a pod template: per-pod requests and placement constraints.

Per-pod requests follow k8s.io/component-helpers resource.PodRequests as Kueue calls it
(pkg/workload/resources.go): limits stand in for missing requests; the sum of regular
containers; init containers in order, where a restartable (sidecar) init container adds to the
running total and to every later init container's peak; the result is max(containers, peak of
init containers); then the pod overhead is added.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kueuetop.kueue.fields import Fields
from kueuetop.kueue.scheduling_terms import (
    NodeSelectorTerm,
    Toleration,
    parse_required_affinity,
    parse_tolerations,
)


@dataclass(frozen=True, slots=True)
class PodShape:
    requests: Mapping[str, int] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_affinity: tuple[NodeSelectorTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    priority_class_name: str = ""


def _add(into: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def _max_into(into: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        if v > into.get(k, 0):
            into[k] = v


def _container_requests(c: Fields) -> dict[str, int]:
    res = c.sub("resources")
    reqs = res.resources("requests")
    for name, value in res.resources("limits").items():
        reqs.setdefault(name, value)  # limits as missing requests
    return reqs


def pod_requests(spec: Fields) -> dict[str, int]:
    total: dict[str, int] = {}
    for c in spec.items("containers"):
        _add(total, _container_requests(c))
    init_peak: dict[str, int] = {}
    sidecars: dict[str, int] = {}
    for c in spec.items("initContainers"):
        reqs = _container_requests(c)
        if c.str("restartPolicy") == "Always":
            _add(total, reqs)
            _add(sidecars, reqs)
            current = dict(sidecars)
        else:
            current = dict(reqs)
            _add(current, sidecars)
        _max_into(init_peak, current)
    _max_into(total, init_peak)
    _add(total, spec.resources("overhead"))
    return {k: v for k, v in total.items() if v}


def parse_pod_shape(spec: Fields) -> PodShape:
    """From a PodSpec view (e.g. `spec.podSets[0].template.spec`)."""
    return PodShape(
        requests=pod_requests(spec),
        node_selector=spec.str_map("nodeSelector"),
        required_affinity=parse_required_affinity(spec),
        tolerations=parse_tolerations(spec),
        priority_class_name=spec.str("priorityClassName"),
    )
