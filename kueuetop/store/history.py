"""Bounded metric history: fixed-size rings of (time, value) points."""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

V = TypeVar("V")
K = TypeVar("K", bound=Hashable)


class Ring(Generic[V]):
    """The last `size` points; older points fall off (memory stays bounded)."""

    __slots__ = ("_points",)

    def __init__(self, size: int) -> None:
        self._points: deque[tuple[float, V]] = deque(maxlen=size)

    def append(self, at: float, value: V) -> None:
        self._points.append((at, value))

    def points(self, since: float | None = None) -> list[tuple[float, V]]:
        if since is None:
            return list(self._points)
        return [p for p in self._points if p[0] >= since]

    def last(self) -> tuple[float, V] | None:
        return self._points[-1] if self._points else None

    def __len__(self) -> int:
        return len(self._points)

    def __iter__(self) -> Iterator[tuple[float, V]]:
        return iter(list(self._points))


@dataclass(frozen=True, slots=True)
class QueueCounts:
    pending: int
    admitted: int
    reserved: int = 0


UTIL_BUCKETS = 10  # 0–10 %, …, 90–100 %: the GPU dashboard's utilization distribution rows


@dataclass(frozen=True, slots=True)
class UtilFrame:
    """How many GPUs were in each utilization bucket at one time (n/a: stale or no value)."""
    counts: tuple[int, ...]
    na: int = 0


def util_buckets(values: Iterable[float | None], buckets: int = UTIL_BUCKETS) -> UtilFrame:
    """Counts per equal-width 0–100 % bucket (100 % goes in the top one), and the n/a count."""
    counts = [0] * buckets
    na = 0
    for v in values:
        if v is None or v != v:
            na += 1
            continue
        i = int(v * buckets / 100.0)
        counts[0 if i < 0 else buckets - 1 if i >= buckets else i] += 1
    return UtilFrame(tuple(counts), na)


class Series(Generic[K, V]):
    """Rings by key, at most `max_keys` of them (GPUs come and go with spot nodes)."""

    def __init__(self, size: int, max_keys: int = 100_000) -> None:
        self.size = size
        self.max_keys = max_keys
        self._rings: dict[K, Ring[V]] = {}

    def append(self, key: K, at: float, value: V) -> None:
        ring = self._rings.get(key)
        if ring is None:
            if len(self._rings) >= self.max_keys:
                # Drop the ring that was updated longest ago.
                oldest = min(self._rings, key=lambda k: (self._rings[k].last() or (0.0,))[0])
                del self._rings[oldest]
            ring = self._rings[key] = Ring(self.size)
        ring.append(at, value)

    def get(self, key: K) -> list[tuple[float, V]]:
        ring = self._rings.get(key)
        return ring.points() if ring else []

    def keys(self) -> list[K]:
        return list(self._rings)

    def clear(self) -> None:
        self._rings.clear()
