"""Partial admission: the largest pod counts between minCount and count that can be admitted
(Kueue: pkg/scheduler/flavorassigner/podset_reducer.go PodSetReducer, gate PartialAdmission)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from kueuetop.kueue.workload import PodSet

R = TypeVar("R")


def can_be_partially_admitted(pod_sets: Sequence[PodSet]) -> bool:
    """Kueue: pkg/workload/workload.go CanBePartiallyAdmitted."""
    return any(ps.min_count is not None and ps.min_count < ps.count for ps in pod_sets)


def reduce_counts(pod_sets: Sequence[PodSet], fits: Callable[[list[int]], R | None]) -> R | None:
    """Binary-search the smallest reduction that fits. Reducing by `k` of the total slack removes
    ceil(slack_i * k / total_slack) pods from each pod set, so all shrink proportionally
    (Kueue: pkg/scheduler/flavorassigner/podset_reducer.go PodSetReducer.Search)."""
    full = [ps.count for ps in pod_sets]
    deltas = [ps.count - ps.min_count if ps.min_count is not None else 0 for ps in pod_sets]
    total = sum(deltas)
    if total <= 0:
        return None

    def counts_for(down_by: int) -> list[int]:
        return [c - (dl * down_by + total - 1) // total for c, dl in zip(full, deltas, strict=True)]

    lo, hi = 0, total + 1  # sort.Search over [0, total]
    best: R | None = None
    best_at = -1
    while lo < hi:
        mid = (lo + hi) // 2
        r = fits(counts_for(mid))
        if r is not None:
            best, best_at = r, mid
            hi = mid
        else:
            lo = mid + 1
    return best if best_at == lo else None
