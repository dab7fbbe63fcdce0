"""Parsed parts shared between the objects a caller parses, owned by that caller.

A cluster's objects repeat themselves: a Workload's conditions mostly carry over from one
version to the next, the many Workloads one job template stamps out hold the same pod sets, and
a few quantity strings ("8", "64Gi") are read again and again. A `ParseCache` keeps each
parsed once (only successful parses: an error always names its own object) and hands out the
same frozen value, which also lets the engine's shortcuts compare pod sets by identity.

The caller that parses a stream of objects owns one (the console's informers, the simulator's
Kueue controller, a what-if run) and passes it to `parse_object(data, cache)`; without one,
every object is parsed on its own. Dict reads and writes are atomic, so informer threads of one
console may share theirs; the entries are bounded (cleared when full).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kueuetop.kueue.quantity import parse_resource_value

__all__ = ["ParseCache"]


@dataclass(eq=False)
class ParseCache:
    # (type, status, reason, message, lastTransitionTime, observedGeneration, its type) → Condition
    conditions: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    # repr of spec.podSets → tuple[PodSet, ...]
    pod_sets: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    # (resource, quantity string) → Kueue resource value
    resource_values: dict[tuple[str, str], int] = field(default_factory=dict)
    max_conditions: int = 65536
    max_pod_sets: int = 4096
    max_resource_values: int = 4096

    def resource_value(self, resource: str, value: object) -> int:
        """`parse_resource_value`, kept for quantity strings (the exact arithmetic is not cheap)."""
        if type(value) is not str:
            return parse_resource_value(resource, value)
        key = (resource, value)
        got = self.resource_values.get(key)
        if got is None:
            got = parse_resource_value(resource, value)  # errors are raised, not kept
            if len(self.resource_values) >= self.max_resource_values:
                self.resource_values.clear()
            self.resource_values[key] = got
        return got

    def keep_condition(self, key: tuple[Any, ...], condition: Any) -> None:
        if len(self.conditions) >= self.max_conditions:
            self.conditions.clear()
        self.conditions[key] = condition

    def keep_pod_sets(self, key: str, pod_sets: tuple[Any, ...]) -> None:
        if len(self.pod_sets) >= self.max_pod_sets:
            self.pod_sets.clear()
        self.pod_sets[key] = pod_sets
