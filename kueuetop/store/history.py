"""Bounded metric history: fixed-size rings of (time, value) points."""

from __future__ import annotations

import math
from array import array
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

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


class _ArrayRing:
    """The last `size` points in flat arrays allocated whole at the first point, so memory is
    flat from then on rather than creeping up while the ring fills (the store keeps thousands)."""

    __slots__ = ("_at", "_n", "_next")

    def __init__(self, size: int) -> None:
        self._at = array("d", bytes(8 * max(1, size)))
        self._n = 0  # points held
        self._next = 0  # where the next point goes (the oldest point once full)

    def _slot(self, at: float) -> int:
        i = self._next
        self._at[i] = at
        self._next = (i + 1) % len(self._at)
        if self._n < len(self._at):
            self._n += 1
        return i

    def _order(self) -> list[int]:
        size = len(self._at)
        first = (self._next - self._n) % size
        return [(first + k) % size for k in range(self._n)]

    def _last(self) -> int | None:
        return (self._next - 1) % len(self._at) if self._n else None

    def __len__(self) -> int:
        return self._n


class FloatRing(_ArrayRing):
    """A float series (None kept as NaN): 12 bytes a point against about 110 as a (float, float)
    tuple in a deque; the store keeps one per GPU, 8,000 on a 1,000-node cluster."""

    __slots__ = ("_values",)

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self._values = array("f", bytes(4 * len(self._at)))

    def append(self, at: float, value: float | None) -> None:
        self._values[self._slot(at)] = math.nan if value is None else value

    def _point(self, i: int) -> tuple[float, float | None]:
        v = self._values[i]
        return self._at[i], None if v != v else v  # NaN: None

    def points(self, since: float | None = None) -> list[tuple[float, float | None]]:
        pts = [self._point(i) for i in self._order()]
        return pts if since is None else [p for p in pts if p[0] >= since]

    def last(self) -> tuple[float, float | None] | None:
        i = self._last()
        return None if i is None else self._point(i)

    def __iter__(self) -> Iterator[tuple[float, float | None]]:
        return iter(self.points())


@dataclass(frozen=True, slots=True)
class QueueCounts:
    pending: int
    admitted: int
    reserved: int = 0


class CountsRing(_ArrayRing):
    """QueueCounts points: 20 bytes each against about 140 as tuples of objects; the store keeps
    one per ClusterQueue, a point every 5 s for an hour."""

    __slots__ = ("_admitted", "_pending", "_reserved")

    def __init__(self, size: int) -> None:
        super().__init__(size)
        n = len(self._at)
        self._pending, self._admitted, self._reserved = (array("i", bytes(4 * n)) for _ in range(3))

    def append(self, at: float, value: QueueCounts) -> None:
        i = self._slot(at)
        self._pending[i], self._admitted[i], self._reserved[i] = value.pending, value.admitted, value.reserved

    def _point(self, i: int) -> tuple[float, QueueCounts]:
        return self._at[i], QueueCounts(self._pending[i], self._admitted[i], self._reserved[i])

    def points(self, since: float | None = None) -> list[tuple[float, QueueCounts]]:
        pts = [self._point(i) for i in self._order()]
        return pts if since is None else [p for p in pts if p[0] >= since]

    def last(self) -> tuple[float, QueueCounts] | None:
        i = self._last()
        return None if i is None else self._point(i)

    def __iter__(self) -> Iterator[tuple[float, QueueCounts]]:
        return iter(self.points())


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
    """Rings by key, at most `max_keys` of them (GPUs come and go with spot nodes); `ring`
    makes one (FloatRing for float series: a tenth of the memory)."""

    def __init__(self, size: int, max_keys: int = 100_000, ring: Callable[[int], Any] = Ring) -> None:
        self.size = size
        self.max_keys = max_keys
        self._ring = ring
        self._rings: dict[K, Any] = {}

    def append(self, key: K, at: float, value: V) -> None:
        ring = self._rings.get(key)
        if ring is None:
            if len(self._rings) >= self.max_keys:
                # Drop the ring that was updated longest ago.
                oldest = min(self._rings, key=lambda k: (self._rings[k].last() or (0.0,))[0])
                del self._rings[oldest]
            ring = self._rings[key] = self._ring(self.size)
        ring.append(at, value)

    def get(self, key: K) -> list[tuple[float, V]]:
        ring = self._rings.get(key)
        return ring.points() if ring else []

    def keys(self) -> list[K]:
        return list(self._rings)

    def last(self, key: K) -> tuple[float, V] | None:
        """The newest point of a key (without copying its ring)."""
        ring = self._rings.get(key)
        return ring.last() if ring else None

    def __len__(self) -> int:
        return len(self._rings)

    def clear(self) -> None:
        self._rings.clear()
